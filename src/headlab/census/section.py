"""The scan's report section: a heatmap of every head's scores with the SDHs boxed, and each detector's top
heads."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from headlab.census.result import ScanResult
from headlab.detectors import DETECTORS
from headlab.display import count
from headlab.head import name as head_name
from headlab.presenting import figures
from headlab.presenting.sections import Section, img, section


@section("scan", ScanResult, 10)
def scan_section(folder: Path, figdir: Path, tag: str) -> Section:
    d = ScanResult.read(folder).to_json()
    L, H = d["n_layers"], d["n_heads"]
    scores = d["heads"][0]["scores"]
    keys = [k for k in d["settings"].get("detectors", scores) if isinstance(scores.get(k), (int, float))
            and k != "entropy"]  # entropy is in nats, not a share of attention: it has no place on this scale
    arrays = {k: np.full((L, H), np.nan) for k in keys}
    sdh = np.zeros((L, H), bool)
    for h in d["heads"]:
        sdh[h["layer"], h["head"]] = h["sdh"]
        for k in keys:
            v = h["scores"].get(k)
            arrays[k][h["layer"], h["head"]] = np.nan if v is None else v
    names = {k: DETECTORS[k].shown_as() if k in DETECTORS else k for k in keys}
    fig = figures.head_heatmaps({names[k]: arrays[k] for k in keys}, sdh, f"{d['model']}: head scores, "
                                f"{d['n_samples']} corpus samples", figdir / f"{tag}-scan_heatmaps.png",
                                units={names["token"]: "mean attention share (0-1)"} if "token" in names else {})
    rule = d["settings"]["sdh_rule"]
    share = d.get("sdh_share")
    partial = (f"**Interrupted** (by {d['interrupted_by'] or 'a signal'}): these statistics cover the "
               f"{d['n_samples']} samples that finished, not the scan asked for.\n\n" if d["interrupted"] else "")
    slash = "token" in keys  # the slash-dominance rule reads the token detector; a scan without it has no SDHs
    target = f" ({d['n_samples_with_target']} with `{rule['target']}`)" if slash else ""
    lines = [f"{partial}Model **{d['model']}**, {L} layers × {H} heads; {d['n_samples']} samples{target}, "
             f"{d['n_tokens']} tokens.", ""]
    if slash:
        lines += [f"Slash-dominance rule: share on `{rule['target']}` > {rule['threshold']} in "
                  f"{rule['consecutive']} consecutive corpus samples → **{count(d['n_sdh'], 'SDH')} on the corpus** ("
                  + ("undefined: no sample with the target" if share is None else f"{100 * share:.1f}% of heads")
                  + ").", ""]
    lines += [img(fig, figdir, "head score heatmaps"), "", "| score | top heads (score) |", "|---|---|"]
    for k in keys:
        top = sorted(((arrays[k][l, h], head_name(l, h)) for l in range(L) for h in range(H)
                      if np.isfinite(arrays[k][l, h])), reverse=True)[:5]
        lines.append(f"| {names[k]} | " + ", ".join(f"{n} ({v:.3f})" for v, n in top) + " |")
    at = {k: divmod(int(np.nanargmax(arrays[k])), H) for k in keys if np.isfinite(arrays[k]).any()}
    best = [f"{names[k]} {head_name(*at[k])} ({np.nanmax(arrays[k]):.3f})" for k in at]
    finding = (f"{count(d['n_sdh'], 'SDH')} by the strict rule; " if slash else "") + "top heads: " + ", ".join(best)
    return Section(f"Scan — {d['model']}", "\n".join(lines), [fig], finding)
