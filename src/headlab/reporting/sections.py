"""One report section per kind of result, found by the files a command writes. Registry, not if-chains:
each builder is registered with the file that identifies its kind and returns markdown plus the figures it drew.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable
from urllib.parse import quote

import numpy as np

from headlab.ablation.importance import ImportanceResult
from headlab.ablation.prune import PruneResult
from headlab.ablation.result import AblateResult
from headlab.census.result import ScanResult
from headlab.detectors import DETECTORS
from headlab.display import count
from headlab.formation.track_report import PhasesResult
from headlab.formation.tracking import TrackResult
from headlab.head import name as head_name
from headlab.monitor.comparison import EvaluationResult
from headlab.monitor.profile import Profile
from headlab.monitor.screening import CheckResult
from headlab.plotting import save_figure
from headlab.reporting import figures
from headlab.result import Result
from headlab.retrieval.analysis import AnalyzeResult
from headlab.retrieval.grid import SweepResult, markdown
from headlab.retrieval.llm_eval import EvalLLMResult
from headlab.study.characterize import CharacterizeResult
from headlab.study.claims import ClaimsResult


@dataclass
class Section:
    title: str
    markdown: str
    figures: list[Path] = field(default_factory=list)
    #: what the section found, in one line, for the report's opening summary ("" where a table says it better)
    finding: str = ""


Builder = Callable[[Path, Path, str], Section]
#: (kind, identifying file relative to a folder, builder); order = order in the report
SECTIONS: list[tuple[str, str, Builder]] = []


#: every result kind a section shows: its own, and those it shows as part of it (``parts``)
SHOWN: set[str] = set()


def section(kind: str, result: type[Result], under: str = "",
            parts: tuple[type[Result], ...] = ()) -> Callable[[Builder], Builder]:
    """Register the report section of a result kind; its folder holds the result's file (``under`` a
    sub-folder for results a command writes inside a run, e.g. ``track/``); ``parts``: kinds written beside it
    that the section shows too."""
    marker = f"{under}/{result.KIND}" if under else result.KIND
    if any(m == marker for _, m, _ in SECTIONS):
        raise ValueError(f"a report section for {marker} is already registered")

    def reg(fn: Builder) -> Builder:
        SECTIONS.append((kind, marker, fn))
        SHOWN.update([result.KIND, *(p.KIND for p in parts)])
        return fn
    return reg


def _own_markdown(result: type[Result], folder: Path, figdir: Path, tag: str, title: str) -> Section:
    """A section of the result's own Markdown (its top heading dropped, its sections one level down) and the
    figures written beside it."""
    text = result.read(folder).markdown()
    body = "\n".join(line for line in text.splitlines() if not line.startswith("# ") and "](" not in line)
    figs = [_copy(p, figdir, tag) for p in sorted(folder.glob("*.png"))]
    return Section(title, body.replace("\n## ", "\n### ") + "\n\n" + "\n\n".join(_img(f, figdir, f.stem)
                                                                                  for f in figs), figs)


def _img(path: Path, figdir: Path, alt: str) -> str:
    # a folder name with spaces, parentheses or quotes would end a Markdown link target early
    alt = alt.replace("[", "(").replace("]", ")")
    return f"![{alt}]({quote(figdir.name)}/{quote(path.name)})"


def _copy(src: Path, figdir: Path, tag: str) -> Path:
    dst = figdir / f"{tag}-{src.name}"
    shutil.copyfile(src, dst)
    return dst


def _f(v: Any, nd: int = 3) -> str:
    return "n/a" if v is None or (isinstance(v, float) and not np.isfinite(v)) else f"{v:.{nd}f}"


@section("scan", ScanResult)
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
    lines += [_img(fig, figdir, "head score heatmaps"), "", "| score | top heads (score) |", "|---|---|"]
    for k in keys:
        top = sorted(((arrays[k][l, h], head_name(l, h)) for l in range(L) for h in range(H)
                      if np.isfinite(arrays[k][l, h])), reverse=True)[:5]
        lines.append(f"| {names[k]} | " + ", ".join(f"{n} ({v:.3f})" for v, n in top) + " |")
    at = {k: divmod(int(np.nanargmax(arrays[k])), H) for k in keys if np.isfinite(arrays[k]).any()}
    best = [f"{names[k]} {head_name(*at[k])} ({np.nanmax(arrays[k]):.3f})" for k in at]
    finding = (f"{count(d['n_sdh'], 'SDH')} by the strict rule; " if slash else "") + "top heads: " + ", ".join(best)
    return Section(f"Scan — {d['model']}", "\n".join(lines), [fig], finding)


@section("characterize", CharacterizeResult)
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
    lines = [f"Model **{d['model']}**: {count(d['n_sdh'], 'SDH')} on the slash suite (share {_f(d.get('sdh_share'))}); "
             f"{d['settings']['n']} base items per suite, seed {d['settings']['seed']}. {d['intervals']}.", "",
             _img(f1, figdir, "top heads"), "", _img(f3, figdir, "specificity"), "",
             _img(f2, figdir, "position curves"), "",
             "| head | '/' mass | specificity (pooled) | position CV | random/natural | shuffled/natural |",
             "|---|---|---|---|---|---|"]
    for h in heads:
        c = h.get("context", {})
        lines.append(f"| {h['name']}{' (SDH)' if h['sdh'] else ''}{_unspecific(h)} | {_f(h['slash_mass'][0])} | "
                     f"{_f(h['specificity']['pooled'][0])} | {_f(h['position_cv'][0])} | "
                     f"{_f((c.get('random') or [None])[0])} | {_f((c.get('shuffled') or [None])[0])} |")
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


@section("claims", ClaimsResult)
def claims_section(folder: Path, figdir: Path, tag: str) -> Section:
    text = ClaimsResult.read(folder).markdown()
    body = "\n".join(line for line in text.splitlines() if not line.startswith("# "))
    return Section("Claims table", body.replace("\n## ", "\n### "))


@section("ablation", AblateResult)
def ablation_section(folder: Path, figdir: Path, tag: str) -> Section:
    d = AblateResult.read(folder)
    m = d["metric"]
    c = d["control"]
    plt = figures.pyplot()
    fig, ax = plt.subplots(figsize=(5.6, 3.6))
    scored, rest = d.part_names()
    bars: list[tuple[str, float, str, Any]] = [(scored, d["scored"][m]["delta"], "#e65100", None)]
    if d["rest"]:
        bars.append((rest, d["rest"][m]["delta"], "#607d8b", None))
    spread = np.percentile(c["per_set"], [2.5, 97.5]) if c.get("per_set") else None  # 95% of the random sets
    err = None if spread is None else [[c["delta_mean"] - spread[0]], [spread[1] - c["delta_mean"]]]
    bars.append((f"matched random\n({c['draws']} sets, on {scored})", c["delta_mean"], "#9e9e9e", err))
    for name, value, colour, yerr in bars:
        ax.bar(name, value, color=colour, yerr=yerr, capsize=4)
    ax.axhline(0, color="black", lw=0.6)
    lo, hi = c["interval"]
    ax.set_title(f"{d['model']}: ablating {', '.join(d['heads'])} ({d['mode']})\ntarget − random on {scored}: "
                 f"{_f(c['difference'])} [{_f(lo)}, {_f(hi)}] (95%)", fontsize=9)
    ax.set(ylabel=f"change in {m}", xlabel="tokens scored" + ("; whisker: 95% of the random sets" if err else ""))
    fig.tight_layout()
    path = figdir / f"{tag}-ablation.png"
    save_figure(fig, path)
    lines = [f"Heads {', '.join(d['heads'])} of **{d['model']}**, {d['mode']}-ablated; {d['n_samples']} samples, "
             f"{d['n_tokens']} tokens; scored tokens: {d['scored_definition']}.", "", _img(path, figdir, "ablation"),
             "", f"| metric | {scored}: base → ablated (Δ) | {rest}: base → ablated (Δ) |", "|---|---|---|"]
    cell = lambda v: f"{_f(v['base'])} → {_f(v['ablated'])} ({_f(v['delta'])})" if v else "-"  # noqa: E731
    for k in d["metrics"]:
        lines.append(f"| {k} | {cell(d['scored'][k])} | {cell(d['rest'].get(k))} |")
    lines += ["", f"Control ({c['matched']}): target Δ {_f(c['delta_target'])} vs mean of random sets "
              f"{_f(c['delta_mean'])}; difference {_f(c['difference'])}, interval "
              f"[{_f(c['interval'][0])}, {_f(c['interval'][1])}], p = {_f(c['p_value'])}."]
    finding = (f"ablating {', '.join(d['heads'])} changes {m} by {_f(c['delta_target'])} against "
               f"{_f(c['delta_mean'])} for matched random heads (difference {_f(c['difference'])}, "
               f"[{_f(c['interval'][0])}, {_f(c['interval'][1])}], p = {_f(c['p_value'])})")
    return Section(f"Ablation — {d['model']}", "\n".join(lines), [path], finding)


@section("importance", ImportanceResult)
def importance_section(folder: Path, figdir: Path, tag: str) -> Section:
    d = ImportanceResult.read(folder)
    L = 1 + max(h["layer"] for h in d["heads"])
    H = 1 + max(h["head"] for h in d["heads"])
    ex = np.full((L, H), np.nan)
    gr = np.full((L, H), np.nan)
    for h in d["heads"]:
        ex[h["layer"], h["head"]] = h["exact_delta"]
        if h["gradient"] is not None:
            gr[h["layer"], h["head"]] = h["gradient"]
    arrays = {"exact (single-head ablation)": ex}
    if np.isfinite(gr).any():
        arrays["gradient (|dL/dgate|)"] = gr
    path = figures.head_heatmaps(arrays, None, f"{d['model']}: head importance ({d['metric']})",
                                 figdir / f"{tag}-importance.png",
                                 units={"exact (single-head ablation)": f"change in {d['metric']}",
                                        "gradient (|dL/dgate|)": "normalised per layer"})
    top = sorted(d["heads"], key=lambda h: -h["exact_delta"])[:8]
    lines = [
        f"Model **{d['model']}**, metric {d['metric']} (base {_f(d['base'])}), {d['n_tokens']} tokens. "
        f"Spearman exact vs gradient: {_f(d['spearman_exact_vs_gradient'])}.",
        "",
        _img(path, figdir, "importance"),
        "",
        "Most important heads (exact): " + ", ".join(f"{h['name']} ({h['exact_delta']:+.4f})" for h in top) + ".",
    ]
    return Section(f"Head importance — {d['model']}", "\n".join(lines), [path])


@section("pruning", PruneResult)
def prune_section(folder: Path, figdir: Path, tag: str) -> Section:
    d = PruneResult.read(folder)
    figs = [_copy(folder / "prune.png", figdir, tag)] if (folder / "prune.png").exists() else []
    lines = [
        f"Model **{d['model']}**, metric {d['metric']}, {d['n_heads']} heads; curves: {', '.join(d['curves'])}; "
        f"heads never pruned: {', '.join(d['kept']) or 'none'}.",
        "",
    ] + [_img(f, figdir, "pruning") for f in figs]
    return Section(f"Pruning — {d['model']}", "\n".join(lines), figs)


@section("training", TrackResult, under="track", parts=(PhasesResult,))
def training_section(folder: Path, figdir: Path, tag: str) -> Section:
    text = (folder / "track" / TrackResult.REPORT).read_text()
    figs = [_copy(p, figdir, tag) for p in sorted((folder / "track").glob("*.png"))]
    body = "\n".join(line for line in text.splitlines() if not line.startswith("# ") and "](" not in line)
    return Section(
        f"Training and formation — {folder.name}",
        body.replace("\n## ", "\n### ") + "\n\n" + "\n\n".join(_img(f, figdir, f.stem) for f in figs),
        figs,
    )


@section("retrieval-sweep", SweepResult)
def sweep_section(folder: Path, figdir: Path, tag: str) -> Section:
    d = SweepResult.read(folder)
    g = d["grid"]
    figs = [_copy(folder / n, figdir, tag) for n in ("success_map.png", "learning_curves.png") if (folder / n).exists()]

    table = markdown(d).split("\n", 2)[2].replace("\n## ", "\n#### ")  # the title line is the section's
    lines = [
        f"Grid: layers {g['layers']} × depth {g['depths']} × curricula {g['curricula']} × seeds {g['seeds']}; "
        f"{g['steps']} steps of {g['batch_size']}, d_model {g['d_model']}, {g['n_heads']} heads, lr {g['lr']}, "
        f"{g['n_distractors']} distractor chain(s).",
        "",
        table,
        "",
        "By curriculum: " + ", ".join(f"{c} {v['successes']}/{v['runs']}" for c, v in d["by_curriculum"].items()) + ".",
        "",
    ] + [_img(f, figdir, f.stem) for f in figs]
    return Section(f"Retrieval sweep — {folder.name}", "\n".join(lines), figs)


@section("retrieval-analysis", AnalyzeResult, under="analyze")
def analyze_section(folder: Path, figdir: Path, tag: str) -> Section:
    text = (folder / "analyze" / "analyze.md").read_text()
    figs = (
        [_copy(folder / "analyze" / "circuit.png", figdir, tag)]
        if (folder / "analyze" / "circuit.png").exists()
        else []
    )
    body = "\n".join(line for line in text.splitlines() if not line.startswith("# "))
    return Section(
        f"Retrieval circuit — {folder.name}", body + "\n\n" + "\n".join(_img(f, figdir, "circuit") for f in figs), figs
    )


@section("eval-llm", EvalLLMResult)
def eval_llm_section(folder: Path, figdir: Path, tag: str) -> Section:
    d = EvalLLMResult.read(folder)
    figs = [_copy(folder / "eval_llm.png", figdir, tag)] if (folder / "eval_llm.png").exists() else []
    lines = [
        f"**{d['model']}**, {d['shots']}-shot, {d['n_distractors']} distractor chains. Scoring: {d['scoring']}",
        "",
        "| form | depth | first-token accuracy [95%] | continuation accuracy [95%] | distractor | hop | other name "
        "| format | n | chance |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in d["cells"]:
        k = c.get("continuation")
        shares = ["–"] * 4 if k is None else [f"{k['counts'][o] / c['n']:.2f}"
                                             for o in ("distractor", "hop", "other-name", "format")]
        cont = "–" if k is None else f"{k['accuracy']:.3f} [{k['interval'][0]:.3f}, {k['interval'][1]:.3f}]"
        lines.append(f"| {c['form']} | {c['depth']} | {c['accuracy']:.3f} [{c['interval'][0]:.3f}, "
                     f"{c['interval'][1]:.3f}] | {cont} | " + " | ".join(shares) + f" | {c['n']} | {c['chance']:.2f} |")
    return Section(
        f"Retrieval from a prompt — {d['model']}",
        "\n".join(lines + [""] + [_img(f, figdir, "eval") for f in figs]),
        figs,
    )


@section("monitor profile", Profile)
def profile_section(folder: Path, figdir: Path, tag: str) -> Section:
    return _own_markdown(Profile, folder, figdir, tag, f"Head monitor profile — {folder.name}")


@section("monitor check", CheckResult)
def check_section(folder: Path, figdir: Path, tag: str) -> Section:
    return _own_markdown(CheckResult, folder, figdir, tag, f"Head monitor check — {folder.name}")


@section("monitor evaluation", EvaluationResult)
def evaluation_section(folder: Path, figdir: Path, tag: str) -> Section:
    return _own_markdown(EvaluationResult, folder, figdir, tag, f"Head monitor evaluation — {folder.name}")
