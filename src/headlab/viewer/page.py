"""Write a :class:`ViewData` as one self-contained HTML file.

Everything is inlined: the script and style (``assets/``), the metadata as JSON, and every stored attention map
as its own ``<script type="text/plain" id="m-CK-S-L-H">`` element holding base64 of a deflated 8-bit map. The
page decodes a map only when its head is clicked, so opening costs the metadata and the grid, not the maps.

The maps are encoded by :mod:`headlab.views.codec`.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
from importlib import resources
from pathlib import Path

from headlab.io import write_text_atomic
from headlab.views.data import ViewData


def _asset(name: str) -> str:
    return resources.files("headlab.viewer").joinpath("assets", name).read_text(encoding="utf-8")


_JSON_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def safe_json(obj: object) -> str:
    """JSON to embed in a ``<script>`` element: ``<``, ``>`` and ``&`` as ``\\u`` escapes, so no ``</script>``,
    ``<!--`` or ``<script`` from data (a model folder's name, a record id) can end the element or switch the
    parser's state and blank the page; U+2028/9 escaped for older JavaScript parsers."""
    text = json.dumps(obj, separators=(",", ":"), allow_nan=False)
    return re.sub("[<>&\u2028\u2029]", lambda m: _JSON_ESCAPES[m.group(0)], text)


TEMPLATE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src '{script_hash}'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'">
<title>{title}</title><style>{css}</style></head>
<body>
<header><h1 id="title"></h1><span class="sub" id="subtitle"></span></header>
<main>
<section><h2>Heads (layer × head)</h2>
<div class="controls"><label>colour by <select id="metric"></select></label>
<label><input type="checkbox" id="fixed"> fixed 0–1 scale</label>
<span class="cbar"><span id="cblo"></span><span id="cbar" class="cbar-ramp"></span><span id="cbhi"></span></span>
<span id="scale" class="muted"></span></div>
<div class="controls" id="ckbox"><label>checkpoint <input type="range" id="checkpoint" min="0" value="0" style="width:220px"></label>
<span id="steplabel"></span></div>
<div id="grid"></div>
<div class="legend muted" style="margin-top:6px"><span id="sdhlegend"><span class="swatch" style="border:2px solid #e65100"></span>slash-dominance head</span>
<span>hover: scores · click: attention map</span></div>
<div id="trajectory" style="margin-top:8px"></div>
<div id="circuitbox" style="margin-top:8px"><h2>Labelled circuit</h2><div id="circuit"></div></div>
</section>
<section><h2 id="maptitle">Click a head</h2>
<div class="controls"><label>sample <select id="sample"></select></label></div>
<div id="mapwrap"><canvas id="map" width="240" height="240"></canvas></div>
<div id="readout"></div><div id="status" class="muted"></div>
</section>
<section><h2>Token view</h2><div id="tokens"></div></section>
</main>
<div id="tip"></div>
<footer class="muted" style="padding:0 14px 10px" id="notes"></footer>
<script type="application/json" id="hl-meta">{meta}</script>
{maps}
<script>{js}</script>
</body></html>
"""


def render(data: ViewData) -> str:
    maps = "\n".join(f'<script type="text/plain" id="m-{c}-{s}-{l}-{h}">{base64.b64encode(blob).decode()}</script>'
                     for (c, s, l, h), blob in sorted(data.maps.items()))
    js = _asset("viewer.js")
    # only this script may run: a hash policy, so markup smuggled into data can never execute
    script_hash = "sha256-" + base64.b64encode(hashlib.sha256(js.encode("utf-8")).digest()).decode()
    return TEMPLATE.format(title=html.escape(data.title), css=_asset("viewer.css"), js=js, script_hash=script_hash,
                           meta=safe_json(data.meta()), maps=maps)


def write_html(data: ViewData, out: str | Path) -> Path:
    out = Path(out)
    write_text_atomic(out, render(data))
    return out
