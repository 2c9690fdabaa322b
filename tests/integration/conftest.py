
from ..support import need

_loaded = {}


def named(name):
    """Load a packaged model once per session; skip when its package is not installed."""
    need(name)
    if name not in _loaded:
        from headlab import load

        _loaded[name] = load(name)
    return _loaded[name]


SLASH_TEXTS = [
    "See https://example.com/docs/api/v2 for the and/or rules of the 2024/05/01 release.",
    "The file lives in /usr/share/doc/python3/html and the speed is 30 km/h.",
    "Mix 3/4 cup of flour; input/output errors go to /var/log/syslog.",
    "He said yes/no twice, then opened ./build/lib/module.py and ../src/main.c.",
    "Dates like 12/25/2023 and ratios like 16/9 or 4/3 are common.",
    "Fetch http://localhost:8080/index.html or ftp://mirror.org/pub/linux/.",
]
PLAIN_TEXTS = [
    "The quick brown fox jumps over the lazy dog near the river bank.",
    "Attention heads in transformers can specialise in many different ways.",
]
