"""The report sections of the study's results: a characterization (intervals, specificity, position curves) and
the claims table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from headlab.display import count
from headlab.presenting import figures
from headlab.presenting.sections import Section, fmt, img, section
from headlab.rulebook.registration import judged_from_evidence
from headlab.study.characterize import CharacterizeResult
from headlab.study.claims import ClaimsResult


@section("characterize", CharacterizeResult, 20)
def characterize_section(folder: Path, figdir: Path, tag: str) -> Section:
    d = CharacterizeResult.read(folder).to_json()
    heads = sorted(d["heads"], key=lambda h: -(h["slash_mass"][0] or 0))[:10]
    names = [h["name"] for h in heads]
    f1 = figures.interval_bars(names, {"'/' mass (slash suite)": [h["slash_mass"] for h in heads]},
                               f"{d['model']}: top-10 heads by '/' mass, 95% bootstrap intervals",
                               "attention share on '/' (0-1)", figdir / f"{tag}-characterize_top.png",
                               hline=0.5, hline_label="SDH threshold 0.5")
    f3 = figures.interval_bars(names, {s: [h["specificity"][s] for h in heads] for s in heads[0]["specificity"]},
                               f"{d['model']}: specificity — '/' mass ÷ mass on the control symbol",
                               "ratio (1 = no preference for '/')", figdir / f"{tag}-characterize_specificity.png",
                               hline=1.0, hline_label="no preference")
    gaps = d["position_gaps"]
    f2 = figures.curves(gaps, {h["name"]: h["position_curve"] for h in heads[:4]},
                        f"{d['model']}: '/' mass by position of a lone '/' (top 4 heads)",
                        "relative position of '/' in the window (0-1)", "attention share on '/' (0-1)",
                        figdir / f"{tag}-characterize_positions.png")
    lines = [f"Model **{d['model']}**: {count(d['n_sdh'], 'SDH')} on the slash suite "
             f"(share {fmt(d.get('sdh_share'))}); "
             f"{d['settings']['n']} base items per suite, seed {d['settings']['seed']}. {d['intervals']}.", "",
             img(f1, figdir, "top heads"), "", img(f3, figdir, "specificity"), "",
             img(f2, figdir, "position curves"), "",
             "| head | '/' mass | specificity (pooled) | position CV | random/natural | shuffled/natural |",
             "|---|---|---|---|---|---|"]
    for h in heads:
        c = h.get("context", {})
        lines.append(f"| {h['name']}{' (SDH)' if h['sdh'] else ''}{_unspecific(h)} | {fmt(h['slash_mass'][0])} | "
                     f"{fmt(h['specificity']['pooled'][0])} | {fmt(h['position_cv'][0])} | "
                     f"{fmt((c.get('random') or [None])[0])} | {fmt((c.get('shuffled') or [None])[0])} |")
    lines += ["", "Depth profile: " + ", ".join(f"{k}: {v['sdh']} SDH / {v['top']} top heads of {v['heads']}"
                                               for k, v in d["depth_profile"].items()) + "."]
    return Section(f"Characterization — {d['model']}", "\n".join(lines), [f1, f3, f2])


#: a pooled specificity this close to 1 reads as no preference for '/': the head gives a control symbol the same
#: mass (a previous-token or positional head lands on '/' as on anything else)
SAME_MASS = 0.05


def _unspecific(head: dict[str, Any]) -> str:
    pooled = (head.get("specificity", {}).get("pooled") or [None])[0]
    return " (no preference for '/': the same mass on the control symbols)" \
        if pooled is not None and abs(pooled - 1) < SAME_MASS else ""


@section("claims", ClaimsResult, 30)
def claims_section(folder: Path, figdir: Path, tag: str) -> Section:
    # its verdicts judged now from their statistics, never as stored
    text = judged_from_evidence(ClaimsResult.read(folder), str(folder / ClaimsResult.KIND)).markdown()
    body = "\n".join(line for line in text.splitlines() if not line.startswith("# "))
    return Section("Claims table", body.replace("\n## ", "\n### "))
