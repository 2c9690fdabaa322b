"""Slash-context templates in English and Chinese, by category.

A template is a format string; ``{...}`` fields are filled from the word lists below with a seeded RNG.
Every ``/`` in the filled text is a target. A control copy swaps each target ``/`` for another symbol in the
same character slot, so the control differs from its original in exactly the target characters.
"""

from __future__ import annotations

HOSTS = ["example.com", "docs.python.org", "github.com", "wikipedia.org", "arxiv.org", "mirror.kernel.org"]
SEGMENTS = ["docs", "api", "v2", "user", "share", "lib", "src", "data", "images", "news", "blog", "wiki"]
FILES = ["index.html", "main.py", "notes.txt", "config.yaml", "report.pdf", "setup.cfg"]
NOUNS = ["input", "output", "read", "write", "client", "server", "true", "false", "yes", "no", "on", "off",
         "he", "she", "buy", "sell", "male", "female", "start", "stop"]
UNITS = ["km/h", "m/s", "mg/L", "kWh/day", "mi/h", "g/cm"]
NUMBERS = [str(n) for n in range(1, 13)]
VARS = ["a", "b", "x", "y", "total", "count", "width", "height"]
ZH_SUBJ = ["他", "她", "我们", "用户", "老师", "学生"]

TEMPLATES: dict[str, dict[str, list[str]]] = {
    "en": {
        "url": ["See https://{host}/{seg}/{seg} for the details.",
                "The page http://{host}/{seg}/{file} was moved yesterday.",
                "Download it from https://{host}/{seg} before Friday."],
        "path": ["The file lives in /usr/{seg}/{seg}/{file} on the server.",
                 "Open ./{seg}/{file} and then ../{seg}/{file} in the editor.",
                 "Logs are written to /var/log/{seg} every hour."],
        "date": ["The meeting moved to 2024/{month}/{day} at noon.",
                 "It was signed on {day}/{month}/2019 in Geneva.",
                 "Version 3 shipped on 2023/{month}/{day}."],
        "alternative": ["Choose {noun}/{noun} before you continue.",
                        "Every {noun}/{noun} pair is logged.",
                        "The switch has an {noun}/{noun} position."],
        "fraction": ["Add {num}/{num} cup of flour to the bowl.",
                     "About {num}/{num} of the votes were counted.",
                     "The screen ratio is {num}/{num} on this model."],
        "unit": ["The car drove at {num}0 {unit} on the highway.",
                 "The limit is {num} {unit} for this sample.",
                 "Readings above {num}5 {unit} trigger an alarm."],
        "code": ["Compute {var} / {var} and print the result.",
                 "ratio = {var} / {var}  // keep the integer part",
                 "Divide {var} by {var}: r = {var} / {var}."],
    },
    "zh": {
        "url": ["请访问 https://{host}/{seg}/{seg} 获取详细信息。", "网页 http://{host}/{seg}/{file} 昨天已经迁移。"],
        "path": ["文件位于 /usr/{seg}/{seg}/{file} 目录下。", "日志每小时写入 /var/log/{seg} 一次。"],
        "date": ["会议改到 2024/{month}/{day} 中午举行。", "合同于 2019/{month}/{day} 在日内瓦签署。"],
        "alternative": ["{subj}需要选择 是/否 之后再继续。", "请填写 男/女 一栏。"],
        "fraction": ["在碗里加入 {num}/{num} 杯面粉。", "大约 {num}/{num} 的选票已经清点。"],
        "unit": ["汽车以 {num}0 {unit} 的速度行驶。", "这个样品的上限是 {num} {unit}。"],
        "code": ["计算 {var} / {var} 并打印结果。", "ratio = {var} / {var}  // 只保留整数部分"],
    },
}

CONTROL_SYMBOLS = ("-", "|", "\\", ".", ":", "_", "+", ",")
