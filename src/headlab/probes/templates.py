"""Slash-context templates in English, Chinese, German, French and Japanese, by category.

A template is a format string; ``{...}`` fields are filled from the word lists below with a seeded RNG.
Every ``/`` in the filled text is a target. A control copy swaps each target ``/`` for another symbol in the
same character slot, so the control differs from its original in exactly the target characters.
The German, French and Japanese templates are ours (no native speaker's set was available): short and
structural, the same categories and slots as the English ones, with native words around the `/` of the
alternatives (ja/nein, oui/non, はい/いいえ) so that no English word sits next to a target.
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
    "de": {
        "url": ["Details finden Sie unter https://{host}/{seg}/{seg} im Netz.",
                "Die Seite http://{host}/{seg}/{file} wurde gestern verschoben."],
        "path": ["Die Datei liegt in /usr/{seg}/{seg}/{file} auf dem Server.",
                 "Die Protokolle werden stündlich nach /var/log/{seg} geschrieben."],
        "date": ["Die Sitzung wurde auf 2024/{month}/{day} verschoben.",
                 "Der Vertrag wurde am {day}/{month}/2019 in Genf unterzeichnet."],
        "alternative": ["Bitte ja/nein ankreuzen, bevor Sie fortfahren.", "Jedes Ein/Aus-Paar wird protokolliert."],
        "fraction": ["Geben Sie {num}/{num} Tasse Mehl in die Schüssel.", "Etwa {num}/{num} der Stimmen sind gezählt."],
        "unit": ["Das Auto fuhr mit {num}0 {unit} auf der Autobahn.", "Der Grenzwert liegt bei {num} {unit}."],
        "code": ["Berechnen Sie {var} / {var} und geben Sie das Ergebnis aus.",
                 "ratio = {var} / {var}  // nur den ganzzahligen Teil behalten"],
    },
    "fr": {
        "url": ["Voir https://{host}/{seg}/{seg} pour les détails.",
                "La page http://{host}/{seg}/{file} a été déplacée hier."],
        "path": ["Le fichier se trouve dans /usr/{seg}/{seg}/{file} sur le serveur.",
                 "Les journaux sont écrits dans /var/log/{seg} toutes les heures."],
        "date": ["La réunion est reportée au 2024/{month}/{day} à midi.",
                 "Le contrat a été signé le {day}/{month}/2019 à Genève."],
        "alternative": ["Cochez oui/non avant de continuer.", "Chaque paire entrée/sortie est enregistrée."],
        "fraction": ["Ajoutez {num}/{num} tasse de farine dans le bol.", "Environ {num}/{num} des votes sont comptés."],
        "unit": ["La voiture roulait à {num}0 {unit} sur l'autoroute.", "La limite est de {num} {unit} ici."],
        "code": ["Calculez {var} / {var} et affichez le résultat.",
                 "ratio = {var} / {var}  // garder la partie entière"],
    },
    "ja": {
        "url": ["詳細は https://{host}/{seg}/{seg} を参照してください。",
                "ページ http://{host}/{seg}/{file} は昨日移動しました。"],
        "path": ["ファイルはサーバーの /usr/{seg}/{seg}/{file} にあります。",
                 "ログは毎時 /var/log/{seg} に書き込まれます。"],
        "date": ["会議は 2024/{month}/{day} の正午に変更されました。",
                 "契約は 2019/{month}/{day} にジュネーブで署名されました。"],
        "alternative": ["続ける前に はい/いいえ を選んでください。", "入力/出力 の組はすべて記録されます。"],
        "fraction": ["ボウルに小麦粉を {num}/{num} カップ加えます。", "投票の約 {num}/{num} が集計されました。"],
        "unit": ["車は高速道路を {num}0 {unit} で走った。", "この試料の上限は {num} {unit} です。"],
        "code": ["{var} / {var} を計算して結果を表示します。", "ratio = {var} / {var}  // 整数部分だけを残す"],
    },
}

CONTROL_SYMBOLS = ("-", "|", "\\", ".", ":", "_", "+", ",")
#: the strict rule's placebo targets: the control symbols and eleven more, each put in the `/` slots of the same
#: stimuli (19, the fewest for which a count above every placebo has rank p <= 0.05)
PLACEBO_SYMBOLS = CONTROL_SYMBOLS + (";", "~", "#", "@", "%", "&", "!", "?", "^", "=", "*")
