"""The rows of the claims table: each claim's statistics from a model's scan, characterization, ablation and
monitor evaluation, judged by the rule book (:mod:`headlab.rulebook.slash`); the table itself is
:mod:`headlab.study.claims`."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from headlab.census.result import ScanResult
from headlab.census.stats import SDH, Interval, wilson
from headlab.display import count
from headlab.head import name as head_name
from headlab.rulebook import BOOK, Verdict
from headlab.rulebook.slash import NON_SDH_TAIL, judge_kinds, kind_stats, reveal_kind, revealed_kinds
from headlab.study.characterize import DEPTH_BINS, CharacterizeResult


def _median_cell(t: dict[str, np.ndarray], heads: Sequence[tuple[int, int]]) -> Interval:
    if not heads:
        return (math.nan, math.nan, math.nan)
    pick = lambda a: float(np.nanmedian([a[l, h] for l, h in heads]))  # noqa: E731
    return (pick(t["value"]), pick(t["lo"]), pick(t["hi"]))


def context_distance(t: dict[str, np.ndarray], heads: Sequence[tuple[int, int]]) -> Interval:
    """Claim 5's statistic: the median over ``heads`` of each head's distance of its random/natural mass ratio
    from 1, |log r|, with the medians of its interval's ends (an interval of r holding 1 has distance 0 at its low
    end). Distances before the median: heads at r = 1.5 and 1/1.5 are both far from 1, where their median ratio
    is not."""
    if not heads:
        return (math.nan, math.nan, math.nan)
    r = np.array([[t["value"][l, h], t["lo"][l, h], t["hi"][l, h]] for l, h in heads], dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        v, a, b = np.abs(np.log(r)).T
    low = np.where((r[:, 1] <= 1) & (r[:, 2] >= 1), 0.0, np.minimum(a, b))
    return float(np.nanmedian(v)), float(np.nanmedian(low)), float(np.nanmedian(np.maximum(a, b)))


def _others(values: np.ndarray, sdhs: Sequence[tuple[int, int]], q: float) -> tuple[float, int]:
    """The ``q`` quantile of a per-head statistic over the heads that are not SDHs (and how many there are)."""
    mask = np.ones(values.shape, dtype=bool)
    for l, h in sdhs:
        mask[l, h] = False
    rest = values[mask]
    rest = rest[np.isfinite(rest)]
    return (float(np.quantile(rest, q)) if len(rest) else math.nan), int(len(rest))


@dataclass
class ModelClaims:
    model: str
    kind: str
    rows: dict[int, dict[str, Any]]


def judged(rule: str, stats: dict[str, Any] | None, **shown: Any) -> dict[str, Any]:
    """A claims row: what the table shows (``value`` or ``interval``, ``detail``) and the rule book's verdict on
    ``stats`` (the statistics are kept in the row, so a changed rule re-judges the row without a rerun)."""
    j = BOOK[rule].judge(stats)
    return {**shown, **j.to_json(), "rule": rule, "stats": stats}


def ablation_row(ablation: Any, sdhs: bool, causal: bool) -> dict[str, Any]:
    """Claim 8 from an ``ablate.json`` record: the signed change of next-token accuracy on slash text when the
    heads are cut, in points, with its interval (negative: accuracy fell; the same convention as ``ablate.json``),
    judged with its matched random controls."""
    if not causal:
        return judged("slash.8", {"causal": False}, value="n/a",
                      detail="encoder without a language-model head: no accuracy to lose")
    if ablation is None:
        return judged("slash.8", None, value="not measured", detail="run with --ablate")
    acc = ablation["scored"]["accuracy"]
    lo, hi = acc["interval_points"]
    change = (acc["delta_points"], lo, hi)
    c = ablation["control"]
    away = ablation["rest"]["accuracy"]["delta_points"]
    detail = (f"heads {', '.join(ablation['heads'])}: accuracy after `/` {moved(change[0])}; on text without `/` "
              f"{moved(away)} (specificity); {c['draws']} matched random sets: "
              f"{moved(100 * acc['control_delta_mean'])} after `/`; loss change target minus controls "
              f"{c['difference']:+.3f} nats, p = {c['p_value']:.3f}")
    stats = {"causal": True, "effect": list(change), "draws": c["draws"], "p": c["p_value"],
             "no_target_effect": away, "control_effect": 100 * acc["control_delta_mean"], "sdhs": int(sdhs)}
    return judged("slash.8", stats, interval=change, detail=detail)


def moved(points: float) -> str:
    """A signed change of accuracy in words: "fell 2.46 points", "rose 0.32 points"."""
    return f"{'fell' if points < 0 else 'rose'} {abs(points):.2f} points"


NOT_EVALUATED = "run headlab monitor evaluate, then claims --monitor-evaluations"


def monitor_row(evaluation: dict[str, Any] | None) -> dict[str, Any]:
    """Claim 9 from an ``evaluate.json`` record: the kinds whose heads' AUROC against fresh reference documents is
    apart from chance (the rule book's ``slash.9``)."""
    if evaluation is None:
        return judged("slash.9", None, value="not measured", detail=NOT_EVALUATED)
    kinds = {k: kind_stats(r) for k, r in evaluation["kinds"].items()}
    revealed = revealed_kinds(kinds)
    by_kind = {k: reveal_kind(v).reason.split(":")[0] for k, v in kinds.items()}
    lost = [k for k, r in by_kind.items() if r == "revealed" and k not in revealed]
    by = {"revealed after the correction over the kinds": revealed, "apart from chance before it only": lost,
          "at chance": [k for k, r in by_kind.items() if r == "at chance"]}
    detail = "; ".join(f"{v}: {', '.join(ks) or 'none'}" for v, ks in by.items())
    detail += f" (heads' AUROC against {evaluation['fresh_documents']} fresh reference documents)"
    return judged("slash.9", {"kinds": kinds}, value=f"{len(revealed)} of {len(kinds)} kinds", detail=detail)


def beats_row(evaluation: dict[str, Any] | None) -> dict[str, Any]:
    """Claim 9 as a data-quality signal (ours) from an ``evaluate.json`` record: each kind judged by the rule
    book's ``monitor.kind`` (a margin in AUROC over the best attention-free baseline), then counted."""
    if evaluation is None:
        return judged("monitor.beats", None, value="not measured", detail=NOT_EVALUATED)
    kinds = {k: kind_stats(r) for k, r in evaluation["kinds"].items()}
    by_kind = {k: j.reason.split(" (")[0] for k, j in judge_kinds(kinds).items()}
    by = {v: [k for k, r in by_kind.items() if r == v] for v in ("heads better", "baseline better", "tie")}
    detail = "; ".join(f"{v}: {', '.join(ks) or 'none'}" for v, ks in by.items())
    detail += (f" (AUROC vs {' and '.join(evaluation['baselines'])}, {evaluation['fresh_documents']} fresh reference "
               "documents as negatives)")
    return judged("monitor.beats", {"kinds": kinds}, value=f"{len(by['heads better'])} of {len(kinds)} kinds",
                  detail=detail)


def measure(sc: ScanResult, ch: CharacterizeResult, kind: str, kappa: float,
            ablation: Any = None, evaluation: dict[str, Any] | None = None) -> ModelClaims:
    """The rows for one model from its scan (corpus), characterization (stimuli) and, optionally, the
    ablation of its SDHs (or top heads)."""
    L, H = sc.n_layers, sc.n_heads
    sdh_corpus = {(int(l), int(h)) for l, h in zip(*np.nonzero(sc.sdh))}
    sdh_stim = {(int(l), int(h)) for l, h in zip(*np.nonzero(ch.sdh))}
    sdhs = sorted(sdh_corpus | sdh_stim)
    heads = sdhs or ch.top
    basis = count(len(sdhs), "SDH") if sdhs else f"no SDH; top {len(ch.top)} heads by `/` mass"
    rows = {1: _exist_row(sc, ch, (len(sdh_corpus), len(sdh_stim), len(sdhs)), kappa)}
    rows[2] = judged("slash.2", {"count": len(sdh_corpus), "heads": L * H}, interval=wilson(len(sdh_corpus), L * H),
                     detail=f"{len(sdh_corpus)} of {L * H} heads on the corpus (Wilson 95%)")
    n_sdh = len(sdhs)
    spec = _median_cell(ch.specificity["pooled"], heads)
    rows[3] = judged("slash.3", {"interval": list(spec), "sdhs": n_sdh}, interval=spec,
                     detail=f"median over heads of the pooled ratio; {basis}")
    pos = _median_cell(ch.position_cv, heads)
    cut, others = _others(ch.position_cv["value"], sdhs, NON_SDH_TAIL)
    rows[4] = judged("slash.4", {"interval": list(pos), "sdhs": n_sdh, "null": cut, "null_heads": others},
                     interval=pos, detail=f"median position CV; cutoff {cut:.3g}: the {NON_SDH_TAIL:.0%} quantile "
                     f"of {others} non-SDH heads; {basis}")
    ctx = context_distance(ch.context["random"], heads)
    with np.errstate(divide="ignore", invalid="ignore"):
        far = np.abs(np.log(ch.context["random"]["value"]))  # the ratio's distance from 1
    cut, others = _others(far, sdhs, NON_SDH_TAIL)
    rows[5] = judged("slash.5", {"distance": list(ctx), "sdhs": n_sdh, "null": cut, "null_heads": others},
                     interval=ctx, detail=f"median over heads of |log random/natural ratio|; cutoff {cut:.3g}: the "
                     f"{NON_SDH_TAIL:.0%} quantile of {others} non-SDH heads; {basis}")
    rel = (np.arange(L) + 0.5) / L
    middle = [(l, h) for l, h in heads if DEPTH_BINS[1][1] <= rel[l] < DEPTH_BINS[1][2]]
    mid_layers = float(((rel >= DEPTH_BINS[1][1]) & (rel < DEPTH_BINS[1][2])).mean())
    rows[6] = judged("slash.6", {"middle": len(middle), "heads": len(heads), "layer_share": mid_layers,
                                 "sdhs": n_sdh}, interval=wilson(len(middle), len(heads)),
                     detail=f"{len(middle)} of {len(heads)} in the middle third (which holds {mid_layers:.0%} of "
                     f"layers); {basis}")
    rows[8] = ablation_row(ablation, bool(sdhs), kind == "decoder")
    if "interval" in rows[8]:
        rows[8]["detail"] += f"; {basis}"
    rows[9], rows[10] = monitor_row(evaluation), beats_row(evaluation)
    return ModelClaims(sc.model, kind, about_real_sdhs(rows))


ABOUT_SDHS = (3, 4, 5, 6, 8)  # the claims that describe SDHs


def about_real_sdhs(rows: dict[int, dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """Claims 3-6 and 8 describe SDHs: heads that pass the strict rule count as SDHs only where claim 1's count
    beats its placebo null (its statistic's plain outcome, "supported"); otherwise those rows are judged as "no
    SDH beyond the placebo null". Marks each such row's statistics and judges it again."""
    one = rows.get(1, {})
    real = "stats" in one and one["stats"] is not None and \
        BOOK["slash.1"].decide(one["stats"]).verdict == Verdict.SUPPORTED
    out = dict(rows)
    for cid in ABOUT_SDHS:
        row = rows.get(cid)
        if row is None or not row.get("stats") or "sdhs" not in row["stats"]:
            continue
        stats = {**row["stats"], "beyond_null": real}
        row = {k: v for k, v in row.items() if k != "exploratory"}
        out[cid] = {**row, **BOOK[row["rule"]].judge(stats).to_json(), "stats": stats}
    return out


def _exist_row(sc: ScanResult, ch: CharacterizeResult, counts: tuple[int, int, int], kappa: float
               ) -> dict[str, Any]:
    """Claim 1: the strict rule's count on the corpus and on the slash suite, the suite's against its placebo
    null (the same rule with placebo symbols in the `/` slots)."""
    corpus, suite, either = counts
    rule = sc.settings.get("sdh_rule", {})
    placebo = sorted(ch.placebo.values()) if ch.placebo is not None else None
    stats = {"consecutive": int(rule.get("consecutive", SDH.consecutive)),
             "populations": {"corpus": {"count": corpus, "samples": sc.n_samples_with_target, "placebo": None},
                             "slash suite": {"count": suite, "samples": int(ch.settings["n"]), "placebo": placebo}}}
    offset = sc.means.get("offset")
    n_diag = int((np.nan_to_num(offset, nan=-1).max(-1) >= kappa).sum()) if offset is not None else 0
    null = (f"; placebo null on the slash suite: {', '.join(f'`{k}` {v}' for k, v in ch.placebo.items())}"
            if ch.placebo is not None else "; no placebo null measured")
    top = f", placebo max {max(placebo)}" if placebo else ""
    return judged("slash.1", stats, value=f"{either} (corpus {corpus}, slash suite {suite}{top})",
                  detail=f"token meaning: {corpus} on the corpus ({sc.n_samples_with_target} samples with `/`), "
                  f"{suite} on the slash suite{null}; slash-pattern meaning: {n_diag} heads with SlashScore(Δ) ≥ "
                  f"κ={kappa} (ours) on the corpus")


def claim_heads(sc: ScanResult, ch: CharacterizeResult) -> list[str]:
    """The heads claims 3-6 and 8 are measured on: the SDHs, or the top heads by `/` mass."""
    sdh = {(int(l), int(h)) for a in (sc.sdh, ch.sdh) for l, h in zip(*np.nonzero(a))}
    return [head_name(l, h) for l, h in sorted(sdh or {(int(l), int(h)) for l, h in ch.top})]


def cross_model(models: Sequence[ModelClaims]) -> dict[str, Any]:
    kinds = {m.kind for m in models}
    found = {m.model: str(m.rows[1]["verdict"]) for m in models}
    stats = {"models": {m.model: {"kind": m.kind, "verdict": found[m.model]} for m in models}}
    return judged("slash.7", stats, value=sum(v == "supported" for v in found.values()),
                  detail=f"claim 1 per model ({', '.join(f'{k}: {v}' for k, v in found.items())}); kinds measured: "
                  f"{sorted(kinds)}")
