"""The claims table (``headlab claims``): each claim of the slash-dominance write-up, measured per model.

The claims are hypotheses. Each row holds the claim's own number (the only place it appears in code), the
measured value with its 95% interval, and a verdict from a rule printed with the table:

the claims themselves and the rules are in :mod:`headlab.study.claim_rules`.
Claims 3-6 and 8 describe SDHs; a model without SDHs gets ``inconclusive`` (reason: no SDH), with values measured on its
top heads by mass on `/` shown for information. Claim 8 is measured only on request (``ablation_draws``), by
:func:`headlab.ablation.ablate_experiment` (zero ablation, matched random controls), as the signed change of
next-token accuracy on targets within 3 tokens after a `/`; encoders have no accuracy, so it is ``n/a`` for them.
Claim 9 is read from a head-monitor evaluation (``headlab monitor evaluate``, ``monitor_dir/MODEL/evaluate.json``):
``supported`` when the heads beat the best attention-free baseline on at least one kind of structure and lose on
none, ``not supported`` when they beat it on none, else ``inconclusive`` (mixed).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from headlab.census.result import ScanResult
from headlab.census.scanner import scan
from headlab.census.stats import Interval, wilson
from headlab.display import count
from headlab.errors import HeadlabError
from headlab.head import name as head_name
from headlab.io import write_text_atomic
from headlab.models import LoadedModel, resolve
from headlab.result import Result
from headlab.study.characterize import CHARACTERIZE, DEPTH_BINS, CharacterizeResult, characterize
from headlab.study.claim_rules import BY_ID, CLAIMS, CONVENTIONS, NO_SDH, RULES, Verdict, verdict_bound, verdict_range
from headlab.study.claims_parts import ablation_heads, saved_ablation, saved_characterization, saved_scan


def _median_cell(t: dict[str, np.ndarray], heads: Sequence[tuple[int, int]]) -> Interval:
    if not heads:
        return (math.nan, math.nan, math.nan)
    pick = lambda a: float(np.nanmedian([a[l, h] for l, h in heads]))  # noqa: E731
    return (pick(t["value"]), pick(t["lo"]), pick(t["hi"]))


@dataclass
class ModelClaims:
    model: str
    kind: str
    rows: dict[int, dict[str, Any]]


def ablation_row(ablation: Any, sdhs: bool, causal: bool) -> dict[str, Any]:
    """Claim 8 from an ``ablate.json`` record: the signed change of next-token accuracy on slash text when the
    heads are cut, in points, with its interval (negative: accuracy fell; the same convention as ``ablate.json``)."""
    if not causal:
        return {"value": "n/a", "detail": "encoder without a language-model head: no accuracy to lose",
                "verdict": Verdict.NA, "reason": "encoder"}
    if ablation is None:
        return {"value": "not measured", "detail": "run with --ablate", "verdict": Verdict.NA,
                "reason": "not measured"}
    acc = ablation["slash"]["accuracy"]
    lo, hi = acc["interval_points"]
    change = (acc["delta_points"], lo, hi)
    c = ablation["control"]
    detail = (f"heads {', '.join(ablation['heads'])}: accuracy after `/` {moved(change[0])}; on text without `/` "
              f"{moved(ablation['no_slash']['accuracy']['delta_points'])}; {c['draws']} matched random sets: "
              f"{moved(100 * acc['control_delta_mean'])} after `/`; loss change target minus controls "
              f"{c['difference']:+.3f} nats, p = {c['p_value']:.3f}")
    return {"interval": change, "detail": detail,
            **_unless_no_sdh(verdict_range(change, *BY_ID[8].bounds), sdhs)}  # type: ignore[misc]


def moved(points: float) -> str:
    """A signed change of accuracy in words: "fell 2.46 points", "rose 0.32 points"."""
    return f"{'fell' if points < 0 else 'rose'} {abs(points):.2f} points"


def monitor_row(evaluation: dict[str, Any] | None) -> dict[str, Any]:
    """Claim 9 from an ``evaluate.json`` record: on how many kinds of structure the heads beat the best baseline."""
    if evaluation is None:
        return {"value": "not measured", "detail": "run headlab monitor evaluate, then claims --monitor-evaluations",
                "verdict": Verdict.NA, "reason": "not measured"}
    kinds = evaluation["kinds"]
    by = {v: [k for k, r in kinds.items() if r["verdict"] == v] for v in ("heads better", "baseline better", "tie")}
    better, worse = by["heads better"], by["baseline better"]
    verdict = Verdict.NOT_SUPPORTED if not better else Verdict.INCONCLUSIVE if worse else Verdict.SUPPORTED
    detail = "; ".join(f"{v}: {', '.join(ks) or 'none'}" for v, ks in by.items())
    detail += (f" (AUROC vs {' and '.join(evaluation['baselines'])}, {evaluation['fresh_documents']} fresh reference "
               "documents as negatives)")
    return {"value": f"{len(better)} of {len(kinds)} kinds", "detail": detail, "verdict": verdict,
            "reason": "mixed" if better and worse else ""}


def measure(sc: ScanResult, ch: CharacterizeResult, kind: str, kappa: float,
            ablation: Any = None, evaluation: dict[str, Any] | None = None) -> ModelClaims:
    """The rows for one model from its scan (corpus), characterization (stimuli) and, optionally, the
    ablation of its SDHs (or top heads)."""
    L, H = sc.n_layers, sc.n_heads
    sdh_corpus = {(int(l), int(h)) for l, h in zip(*np.nonzero(sc.sdh))}
    sdh_stim = {(int(l), int(h)) for l, h in zip(*np.nonzero(ch.sdh))}
    sdhs = sorted(sdh_corpus | sdh_stim)
    offset = sc.means.get("offset")
    n_diag = int((np.nan_to_num(offset, nan=-1).max(-1) >= kappa).sum()) if offset is not None else 0
    heads = sdhs or ch.top
    basis = count(len(sdhs), "SDH") if sdhs else f"no SDH; top {len(ch.top)} heads by `/` mass"
    rows: dict[int, dict[str, Any]] = {}
    where = f"corpus {len(sdh_corpus)}, slash suite {len(sdh_stim)}"  # the populations, said in the cell
    rows[1] = {"value": f"{len(sdhs)} ({where})", "detail": f"token meaning: {len(sdh_corpus)} on the corpus "
               f"({sc.n_samples_with_target} samples with `/`), {len(sdh_stim)} on the slash suite; slash-pattern "
               f"meaning: {n_diag} heads with SlashScore(Δ) ≥ κ={kappa} (ours) on the corpus",
               "verdict": Verdict.SUPPORTED if sdhs else Verdict.NOT_SUPPORTED, "reason": ""}
    share = wilson(len(sdh_corpus), L * H)
    rows[2] = {"interval": share, "detail": f"{len(sdh_corpus)} of {L * H} heads on the corpus (Wilson 95%)",
               "verdict": verdict_range(share, *BY_ID[2].bounds), "reason": ""}  # type: ignore[misc]
    spec = _median_cell(ch.specificity["pooled"], heads)
    pos = _median_cell(ch.position_cv, heads)
    ctx = _median_cell(ch.context["random"], heads)
    rel = (np.arange(L) + 0.5) / L
    middle = [(l, h) for l, h in heads if DEPTH_BINS[1][1] <= rel[l] < DEPTH_BINS[1][2]]
    mid_share = wilson(len(middle), len(heads))
    mid_layers = float(((rel >= DEPTH_BINS[1][1]) & (rel < DEPTH_BINS[1][2])).mean())
    for cid, iv, verdict, detail in (
        (3, spec, verdict_range(spec, *BY_ID[3].bounds), "median over heads of the pooled ratio"),  # type: ignore[misc]
        (4, pos, verdict_bound(pos, BY_ID[4].bounds, at_least=False), "median position CV"),  # type: ignore[arg-type]
        (5, ctx, verdict_bound(ctx, BY_ID[5].bounds, at_least=True), "median random/natural ratio"),  # type: ignore[arg-type]
        (6, mid_share, verdict_bound(mid_share, mid_layers, at_least=True),
         f"{len(middle)} of {len(heads)} in the middle third (which holds {mid_layers:.0%} of layers)"),
    ):
        rows[cid] = {"interval": iv, "detail": f"{detail}; {basis}", **_unless_no_sdh(verdict, bool(sdhs))}
    rows[8] = ablation_row(ablation, bool(sdhs), kind == "decoder")
    if "interval" in rows[8]:
        rows[8]["detail"] += f"; {basis}"
    rows[9] = monitor_row(evaluation)
    return ModelClaims(sc.model, kind, rows)


def _unless_no_sdh(verdict: Verdict, sdhs: bool) -> dict[str, Any]:
    """The rule's verdict, or inconclusive for want of SDHs (claims about SDHs on a model without any)."""
    return {"verdict": verdict, "reason": ""} if sdhs else {"verdict": Verdict.INCONCLUSIVE, "reason": NO_SDH}


def claim_heads(sc: ScanResult, ch: CharacterizeResult) -> list[str]:
    """The heads claims 3-6 and 8 are measured on: the SDHs, or the top heads by `/` mass."""
    sdh = {(int(l), int(h)) for a in (sc.sdh, ch.sdh) for l, h in zip(*np.nonzero(a))}
    return [head_name(l, h) for l, h in sorted(sdh or {(int(l), int(h)) for l, h in ch.top})]


def cross_model(models: Sequence[ModelClaims]) -> dict[str, Any]:
    kinds = {m.kind for m in models}
    found = {m.model: m.rows[1]["verdict"] == Verdict.SUPPORTED for m in models}
    if len(kinds) < 2:
        verdict, reason = Verdict.INCONCLUSIVE, "one architecture kind measured"
    else:
        verdict, reason = (Verdict.SUPPORTED if all(found.values()) else Verdict.NOT_SUPPORTED), ""
    return {"value": sum(found.values()), "detail": f"SDHs found in {sum(found.values())} of {len(models)} models "
            f"({', '.join(f'{k}: {v}' for k, v in found.items())}); kinds measured: {sorted(kinds)}",
            "verdict": verdict, "reason": reason}


@dataclass
class ClaimsResult(Result):
    """The claims table; ``to_pandas()``: one row per (claim, model) with the value, its interval and the
    verdict (claim 7, across models, has model ``*``)."""

    models: list[ModelClaims]
    cross: dict[str, Any]
    settings: dict[str, Any]

    def records(self) -> list[dict[str, Any]]:
        rows = []
        for c in CLAIMS:
            cells = [("*", self.cross)] if c.id == 7 else [(m.model, m.rows.get(c.id)) for m in self.models]
            for model, row in cells:
                j = _json_row(row) or {}
                rows.append({"claim": c.id, "text": c.text, "claimed": c.claimed, "model": model,
                             "value": j.get("value"), "lower": j.get("lower"), "upper": j.get("upper"),
                             "verdict": j.get("verdict"), "detail": j.get("detail")})
        return rows

    KIND = "claims.json"
    COMPANIONS = ("claims.md",)
    KEYS = ("settings", "rules", "models", "claims")

    def to_json(self) -> dict[str, Any]:
        return {"settings": self.settings, "rules": RULES,
                "models": [{"model": m.model, "kind": m.kind} for m in self.models],
                "claims": [{"id": c.id, "claim": c.text, "claimed": c.claimed, "bound_source": c.bound_source,
                            "per_model": {m.model: _json_row(m.rows.get(c.id)) for m in self.models}
                            if c.id != 7 else None,
                            "cross_model": self.cross if c.id == 7 else None} for c in CLAIMS]}

    @classmethod
    def decode(cls, d: dict[str, Any]) -> "ClaimsResult":
        models = {m["model"]: ModelClaims(m["model"], m["kind"], {}) for m in d["models"]}
        cross: dict[str, Any] = {}
        for c in d["claims"]:
            if c["cross_model"] is not None:
                cross = _row_from_json(c["cross_model"])
            for name, row in (c["per_model"] or {}).items():
                if row is not None:
                    models[name].rows[c["id"]] = _row_from_json(row)
        return ClaimsResult(list(models.values()), cross, d["settings"])

    def markdown(self) -> str:
        names = [m.model for m in self.models]
        st = self.settings
        corpus = st.get("corpus", "wiki pydoc (default)")
        scans = (f"Scans: up to {st.get('scan_samples')} windows per model from {corpus}"
                 + (f", only windows {st['filter']}" if st.get("filter", "any") != "any" else "") + ".")
        lines = ["# Claims table", "", scans, "", CONVENTIONS, "", "| claim | claimed | " + " | ".join(names) + " |",
                 "|---|---|" + "---|" * len(names)]
        for c in CLAIMS:
            if c.id == 7:
                cells = [f"{m.kind}, SDHs {'found' if m.rows[1]['verdict'] == Verdict.SUPPORTED else 'none'}"
                         for m in self.models]
                label = f"{c.id}. {c.text}: **{_verdict(self.cross)}**"
            else:
                cells = [_cell(m.rows.get(c.id, monitor_row(None))) for m in self.models]
                label = f"{c.id}. {c.text}"
            lines.append(f"| {label} | {c.claimed} | " + " | ".join(cells) + " |")
        lines += ["", "Details:", ""]
        for c in CLAIMS:
            src = "" if c.bound_source == "the write-up" else f" (bound: {c.bound_source})"
            if c.id == 7:
                lines.append(f"- {c.id}{src}: {self.cross['detail']}")
            for m in self.models if c.id != 7 else []:
                lines.append(f"- {c.id} {m.model}{src}: {m.rows.get(c.id, monitor_row(None))['detail']}")
        lines += ["", "Rules: " + RULES]
        return "\n".join(lines) + "\n"

    def write_companions(self, folder: Path) -> None:
        write_text_atomic(folder / "claims.md", self.markdown())


def _cell(row: dict[str, Any]) -> str:
    if "interval" in row:
        v, a, b = row["interval"]
        num = "n/a" if math.isnan(v) else (f"{v:.3g} [{a:.3g}, {b:.3g}]")
    else:
        num = str(row["value"])
    return f"{num}: {_verdict(row)}"


def _verdict(row: dict[str, Any]) -> str:
    return f"{row['verdict']}" + (f" ({row['reason']})" if row.get("reason") else "")


def _json_row(row: dict[str, Any] | None) -> Any:
    if row is None:
        return None
    out = dict(row, verdict=str(row["verdict"]))
    if "interval" in out:
        out["value"], out["lower"], out["upper"] = out.pop("interval")
    return out


def _row_from_json(row: dict[str, Any]) -> dict[str, Any]:
    out = dict(row, verdict=Verdict(row["verdict"]))
    if "lower" in out:
        out["interval"] = tuple(math.nan if out[k] is None else float(out[k]) for k in ("value", "lower", "upper"))
        for k in ("value", "lower", "upper"):
            del out[k]
    return out


def claims(models: Sequence[str | LoadedModel], *, n: int = 40, scan_samples: int = 512, kappa: float = 0.5,
           seed: int = 0, batch_size: int = 8, progress: bool = True, device: str = "cpu",
           on_model: Callable[[str], None] | None = None, save_dir: str | Path | None = None,
           ablation_draws: int = 0, ablation_samples: int = 48,
           monitor_dir: str | Path | None = None, corpus: Sequence[str] | None = None,
           target_filter: str = "any", resume: bool = False, dtype: str = "float32") -> ClaimsResult:
    """Measure every claim on every model: a corpus scan plus a characterization per model.

    With ``save_dir``, each model's scan and characterization are written to ``save_dir/MODEL/`` as they
    finish (so an interrupted multi-model run keeps the finished models, and ``headlab compare`` can read them).
    ``ablation_draws`` > 0 measures claim 8 on decoders (``ablation_samples`` corpus windows, that many control
    draws); it loads the model again with its language-model head. ``monitor_dir`` holds ``MODEL/evaluate.json``
    of ``headlab monitor evaluate`` for every model (claim 9). ``corpus`` (named sources or paths; default
    wiki + pydoc) feeds the scans and the ablation; ``target_filter`` ``with-target`` scans only windows holding
    `/`, which leaves the slash-dominance rule as it is (windows without `/` are not part of its sequence).
    ``resume`` reuses each model's scan, characterization and ablation saved in ``save_dir`` by an earlier run
    with the same settings (:mod:`headlab.study.claims_parts`). Claim 8 ablates at most half of a layer's
    heads (the ones with most `/` mass), so that every layer has a matched control; the rest are named."""
    from headlab.corpus import documents
    from headlab.models.loader import check_source, torch_dtype

    torch_dtype(dtype)
    for m in models:  # every name and the corpus are checked before the first model is measured
        if not isinstance(m, LoadedModel):
            check_source(m)
    if corpus:
        documents(list(corpus))
    if target_filter not in ("any", "with-target"):
        raise HeadlabError(f"claims scan filter {target_filter!r}: use any or with-target")
    evaluations = {folder_name(m): _evaluation(monitor_dir, m) for m in models} if monitor_dir else {}
    out = []
    for m, name in zip(models, folder_names(models)):
        lm = resolve(m, device=device, dtype=dtype)
        if on_model:
            on_model(lm.name)
        folder = Path(save_dir) / name if save_dir is not None else None
        sc = saved_scan(folder, lm.name, corpus, scan_samples, seed, target_filter, lm.dtype) \
            if resume and folder else None
        reused = sc is not None
        if sc is None:
            sc = scan(lm, corpus=corpus, max_samples=scan_samples, seed=seed, batch_size=batch_size,
                      progress=progress, target_filter=target_filter)
            sc.stop_if_interrupted("headlab claims")  # a claims table from a partial scan would look whole
        ch = saved_characterization(folder, lm.name, n, seed, kappa, lm.dtype) if resume and folder else None
        if ch is None:
            ch = characterize(lm, CHARACTERIZE.replace(n=n, seed=seed, batch_size=batch_size, kappa=kappa),
                              progress=progress)
        if folder is not None:
            sc.write(folder)
            ch.write(folder)
        ablation = left_out = None
        if ablation_draws > 0 and lm.facts.causal:
            from headlab.ablation import ablate_experiment
            from headlab.ablation.experiment import ABLATE, write_report

            heads, left_out = ablation_heads(claim_heads(sc, ch), ch.slash_mass["value"], lm.facts.n_heads)
            if reused and folder is not None:  # an ablation is only as current as the scan it rests on
                ablation = saved_ablation(folder, lm.name, heads, ablation_draws, ablation_samples)
            if ablation is None:
                ablation = ablate_experiment(m if isinstance(m, str) else lm, heads, ABLATE.replace(
                    draws=ablation_draws, samples=ablation_samples, corpus=corpus, seed=seed,
                    batch_size=batch_size), progress=progress, device=device, dtype=dtype)
            if folder is not None:
                write_report(ablation, str(folder))
        mc = measure(sc, ch, lm.facts.kind, kappa, ablation, evaluations.get(folder_name(m)))
        if left_out:
            mc.rows[8]["detail"] += (f"; left out of the ablation: {', '.join(left_out)} (more than half of their "
                                     "layer's heads: no layer-matched control)")
        out.append(mc)
    named = " ".join(corpus) if corpus else "wiki pydoc (default)"
    return ClaimsResult(out, cross_model(out), {"n": n, "scan_samples": scan_samples, "kappa": kappa,
                                                "seed": seed, "corpus": named,
                                                "filter": target_filter,
                                                "ablation_draws": ablation_draws,
                                                "monitor_dir": str(monitor_dir) if monitor_dir else None})


def folder_name(model: str | LoadedModel) -> str:
    """A model's result folder name: a named model's name, or the last part of a path."""
    return Path(str(model.name if isinstance(model, LoadedModel) else model).rstrip("/")).name


def folder_names(models: Sequence[str | LoadedModel]) -> list[str]:
    """One result folder per model, never shared: models whose paths end alike (``a/mm``, ``b/mm``) get their
    parent folder in the name (``a-mm``, ``b-mm``), and a name still shared gets its position."""
    specs = [str(m.name if isinstance(m, LoadedModel) else m).rstrip("/") for m in models]
    names = [folder_name(s) for s in specs]
    names = [f"{Path(s).parent.name}-{n}" if names.count(n) > 1 and Path(s).parent.name else n
             for s, n in zip(specs, names)]
    return [f"{n}-{i}" if names.count(n) > 1 else n for i, n in enumerate(names)]


def _evaluation(monitor_dir: str | Path, model: str | LoadedModel) -> dict[str, Any]:
    from headlab.result import read_json

    path = Path(monitor_dir) / folder_name(model) / "evaluate.json"
    if not path.exists():
        raise HeadlabError(f"--monitor-evaluations: {path} does not exist; write it with headlab monitor evaluate "
                           f"{folder_name(model)} --out {path.parent}")
    return read_json(path)


def reread_monitor(result: ClaimsResult, monitor_dir: str | Path) -> ClaimsResult:
    """``result`` with claim 9 of every model read again from ``monitor_dir/MODEL/evaluate.json`` by the rule
    :func:`claims` uses (a model without an evaluation there stays not measured, and is named on stderr): a
    monitor evaluation rerun does not need the scans, characterizations and ablations measured again."""
    from headlab.notices import say

    for m in result.models:
        try:
            m.rows[9] = monitor_row(_evaluation(monitor_dir, m.model))
        except HeadlabError:
            say(f"claim 9 of {m.model}: no {Path(monitor_dir) / folder_name(m.model) / 'evaluate.json'}; "
                "left not measured")
            m.rows[9] = monitor_row(None)
    result.settings = {**result.settings, "monitor_dir": str(monitor_dir)}
    return result
