"""The claims table (``headlab claims``): each claim of the slash-dominance write-up, measured per model.

The claims are hypotheses. Each row holds the claim's own number (the only place it appears in code), the
measured value with its 95% interval, and a verdict from a rule printed with the table:

the claims themselves and the rules that judge them are in :mod:`headlab.rulebook`.
Claims 3-6 and 8 describe SDHs; a model without SDHs gets ``inconclusive`` (reason: no SDH), with values measured on its
top heads by mass on `/` shown for information. Claim 8 is measured only on request (``ablate``), by
:func:`headlab.ablation.ablate_experiment` (zero ablation, matched random controls), as the signed change of
next-token accuracy on targets within 3 tokens after a `/`; encoders have no accuracy, so it is ``n/a`` for them.
Claims 9 and 10 are read from a head-monitor evaluation (``headlab monitor evaluate``,
``monitor_evaluations/MODEL/evaluate.json``): claim 9, the document's, ``supported`` when the heads' AUROC is apart
from chance on at least one kind of structure (``slash.9``); row 10, ours, ``supported`` when the heads beat the best
attention-free baseline on at least one kind and lose on none, ``not supported`` when they beat it on none, else
``inconclusive`` (mixed) (``monitor.beats``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, ClassVar, Sequence

from headlab.ablation import ablate_experiment
from headlab.ablation.experiment import ABLATE
from headlab.ablation.result import write_report
from headlab.census.scanner import scan
from headlab.corpus import documents
from headlab.errors import HeadlabError
from headlab.io import write_text_atomic
from headlab.models import LoadedModel, resolve
from headlab.models.loader import check_source
from headlab.notices import say
from headlab.result import Result, read_json
from headlab.rulebook import BOOK, VERSION, Verdict, label
from headlab.rulebook.multiplicity import holm, stated
from headlab.rulebook.registration import judged_as_produced
from headlab.rulebook.slash import CLAIMS
from headlab.settings import Settings, dtype_setting, setting
from headlab.study.characterize import CHARACTERIZE, characterize
from headlab.study.claim_rows import (
    ModelClaims,
    about_real_sdhs,
    beats_row,
    claim_heads,
    cross_model,
    measure,
    monitor_row,
)
from headlab.study.claims_parts import ablation_heads, saved_ablation, saved_characterization, saved_scan
from headlab.study.rope import KAPPA
from headlab.values import ITEM_BYTES, Rule

CONVENTIONS = ("Claim 1 counts the heads that pass the strict rule on the corpus or on the constructed slash suite "
               "(each population in the cell), the slash suite's count beside the same rule's count with placebo "
               "symbols in the `/` slots; claim 2 counts the corpus only. Claim 8 is the signed change of "
               "next-token accuracy after `/` when the heads are cut, in points, with its 95% interval: negative "
               "means accuracy fell.")
RULES = (f"Verdicts: the rule book, version {VERSION} (`headlab.rulebook`, rendered in docs/rules.md), one rule per "
         "claim with its statistic, test, threshold and origin, null and minimum power; each row records its rule "
         "and the statistics it read. Claims 3-6 and 8 are about SDHs: without SDHs they are inconclusive "
         "(reason: no SDH), with values measured on the top heads by `/` mass. A negative or inconclusive detail "
         "says what the experiment could have detected (Power).")


def _judged_again(row: dict[str, Any]) -> dict[str, Any]:
    """A row's verdict, reason and power by the current rule book (none for a row that keeps no statistics)."""
    if row.get("rule") not in BOOK or "stats" not in row:
        return {}
    return BOOK[row["rule"]].judge(row["stats"]).to_json()


def corrected(models: list[ModelClaims], cross: dict[str, Any]) -> tuple[list[ModelClaims], dict[str, Any]]:
    """The table's verdicts as one family under Holm's correction (every model's judged rows and claim 7)."""
    keys = [(i, cid) for i, m in enumerate(models) for cid, row in m.rows.items() if "verdict" in row]
    rows = holm([models[i].rows[cid] for i, cid in keys] + [cross])
    out = [ModelClaims(m.model, m.kind, dict(m.rows)) for m in models]
    for (i, cid), row in zip(keys, rows):
        out[i].rows[cid] = row
    return out, rows[-1]


def _family(models: list[ModelClaims], cross: dict[str, Any]) -> str:
    return stated([row for m in models for row in m.rows.values() if "verdict" in row] + [cross])


def _without_flag(row: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if k != "exploratory"}


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
    KEYS = ("settings", "rulebook", "rules", "models", "claims")

    @classmethod
    def _optional(cls) -> set[str]:
        return {"rulebook"}  # a table written before the rule book: its rows keep no statistics to re-judge

    def to_json(self) -> dict[str, Any]:
        return {"settings": self.settings, "rulebook": VERSION, "rules": RULES,
                "models": [{"model": m.model, "kind": m.kind} for m in self.models],
                "claims": [{"id": c.id, "claim": c.text, "claimed": c.claimed, "rule": c.rule,
                            "per_model": {m.model: _json_row(m.rows.get(c.id)) for m in self.models}
                            if c.id != 7 else None,
                            "cross_model": _json_row(self.cross) if c.id == 7 else None} for c in CLAIMS]}

    @classmethod
    def produced_from(cls, doc: dict[str, Any]) -> list[dict[str, Any]]:
        """One identity per model: the model and the table's settings (where its monitor evaluations were read
        from is a path, not an input)."""
        settings = {k: v for k, v in doc["settings"].items() if k != "monitor_dir"}
        return [{"model": m["model"], "settings": settings} for m in doc["models"]]

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

    def verdicts(self) -> dict[str, tuple[str, str, str]]:
        """Each row's verdict by name (``claim C on MODEL``): its rule, label and power statement."""
        cells = [(f"claim {cid} on {m.model}", row) for m in self.models for cid, row in m.rows.items()]
        return {name: (row.get("rule", ""), label(row), row.get("power", ""))
                for name, row in [*cells, ("claim 7 on *", self.cross)]}

    def rejudged(self) -> ClaimsResult:
        """The table with every row judged again by the current rule book from the statistics the row keeps
        (rows without statistics, written before the rule book, keep their verdict), and claim 7 recomputed."""
        models = [ModelClaims(m.model, m.kind, about_real_sdhs({cid: {**_without_flag(row), **_judged_again(row)}
                                                                for cid, row in m.rows.items()}))
                  for m in self.models]
        cross = cross_model(models) if all(1 in m.rows for m in models) else self.cross
        return ClaimsResult(*corrected(models, cross), self.settings)

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
                cells = [f"{m.kind}, claim 1 {m.rows[1]['verdict']}" for m in self.models]
                row_name = f"{c.id}. {c.text}: **{label(self.cross)}**"
            else:
                cells = [_cell(m.rows.get(c.id, _unread(c.id))) for m in self.models]
                row_name = f"{c.id}. {c.text}"
            lines.append(f"| {row_name} | {c.claimed} | " + " | ".join(cells) + " |")
        lines += ["", "Details:", ""]
        for c in CLAIMS:
            if c.id == 7:
                lines.append(f"- {c.id}: {_said(self.cross)}")
            for m in self.models if c.id != 7 else []:
                lines.append(f"- {c.id} {m.model}: {_said(m.rows.get(c.id, _unread(c.id)))}")
        lines += ["", RULES, "", _family(self.models, self.cross)]
        return "\n".join(lines) + "\n"

    def write_companions(self, folder: Path) -> None:
        write_text_atomic(folder / "claims.md", self.markdown())


def _unread(claim: int) -> dict[str, Any]:
    """The row of a claim a table has none for: a table older than the claim, read as not measured."""
    return beats_row(None) if claim == 10 else monitor_row(None)


def _cell(row: dict[str, Any]) -> str:
    if "interval" in row:
        v, a, b = row["interval"]
        num = "n/a" if math.isnan(v) else (f"{v:.3g} [{a:.3g}, {b:.3g}]")
    else:
        num = str(row["value"])
    return f"{num}: {label(row)}"


def _said(row: dict[str, Any]) -> str:
    """A row's detail line, with what the experiment could have detected where the verdict is not positive."""
    power = row.get("power") and str(row["verdict"]) != "supported"
    return row["detail"] + (f". Power: {row['power']}" if power else "")


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


@dataclass(frozen=True)
class ClaimsSettings(Settings):
    """What ``headlab claims`` measures on every model: a scan of ``scan_samples`` windows of ``corpus``
    (``target_filter``), a characterization with ``n`` items per suite, SlashScore's ``kappa``, claim 8's ablation
    (``ablate`` matched control sets on ``ablate_samples`` windows; 0: not measured) and claim 9 from
    ``monitor_evaluations``; ``seed``, ``batch_size`` and the weights' ``dtype``."""

    FAMILY: ClassVar[str] = "claims"
    LISTS: ClassVar[tuple[str, ...]] = ("corpus",)

    n: int = setting(CHARACTERIZE.n, "base items per stimulus suite (at least 2)",
                         rule=Rule("whole", 2, each=ITEM_BYTES))
    scan_samples: int = setting(512, "corpus samples scanned per model")
    corpus: tuple[str, ...] | None = setting(None, "the scans' and the ablation's corpus: named sources or paths "
                                             "(default wiki pydoc)", metavar="SRC", paths=True,
                                             annotation="Sequence[str] | None")
    target_filter: str = setting("any", "with-target: scan only windows that hold '/' (the slash-dominance rule skips "
                                 "the others anyway)", flag="filter", choices=("any", "with-target"))
    kappa: float = setting(KAPPA, "(κ, Δ)-slash-dominance threshold (ours)")
    ablate: int = setting(0, "measure claim 8 on decoders: ablate the SDHs (or top heads) against DRAWS matched "
                          "random sets (0: not measured)", metavar="DRAWS")
    ablate_samples: int = setting(ABLATE.samples, "corpus windows of claim 8's ablation",
                                  rule=Rule("whole", 2, each=ITEM_BYTES))
    monitor_evaluations: str | None = setting(
        None, "claim 9 from DIR/MODEL/evaluate.json, written by headlab monitor evaluate (default: not measured)",
        metavar="DIR", annotation="str | Path | None")
    seed: int = setting(0, "random seed (sample order, draws)")
    batch_size: int = setting(8, "samples per forward pass")
    dtype: str = dtype_setting()


#: claims given no options
CLAIMS_SETTINGS = ClaimsSettings()


def claims(models: Sequence[str | LoadedModel], settings: ClaimsSettings = CLAIMS_SETTINGS, *,
           progress: bool, device: str, on_model: Callable[[str], None] | None = None,
           out: str | Path | None = None, resume: bool = False) -> ClaimsResult:
    """Measure every claim on every model: a corpus scan plus a characterization per model.

    With ``out``, each model's scan and characterization are written to ``out/MODEL/`` as they
    finish (so an interrupted multi-model run keeps the finished models, and ``headlab compare`` can read them).
    ``settings.ablate`` > 0 measures claim 8 on decoders (``ablate_samples`` corpus windows, that many control
    draws); it loads the model again with its language-model head. ``monitor_evaluations`` holds ``MODEL/evaluate.json``
    of ``headlab monitor evaluate`` for every model (claim 9). ``corpus`` (named sources or paths; default
    wiki + pydoc) feeds the scans and the ablation; ``target_filter`` ``with-target`` scans only windows holding
    `/`, which leaves the slash-dominance rule as it is (windows without `/` are not part of its sequence).
    ``resume`` reuses each model's scan, characterization and ablation saved in ``out`` by an earlier run
    with the same settings (an ablation with at least ``ablate`` control sets; each row names its own
    count) (:mod:`headlab.study.claims_parts`). Claim 8 ablates at most half of a layer's
    heads (the ones with most `/` mass), so that every layer has a matched control; the rest are named."""
    st = settings
    n, scan_samples, kappa, seed, corpus = st.n, st.scan_samples, st.kappa, st.seed, st.corpus
    batch_size = st.batch_size
    target_filter, dtype, monitor_dir = st.target_filter, st.dtype, st.monitor_evaluations
    for m in models:  # every name and the corpus are checked before the first model is measured
        if not isinstance(m, LoadedModel):
            check_source(m)
    if corpus:
        documents(list(corpus))
    evaluations = {folder_name(m): _evaluation(monitor_dir, m) for m in models} if monitor_dir else {}
    found = []
    for m, name in zip(models, folder_names(models)):
        lm = resolve(m, device=device, dtype=dtype)
        if on_model:
            on_model(lm.name)
        folder = Path(out) / name if out is not None else None
        sc = saved_scan(folder, lm.name, corpus, scan_samples, seed, target_filter, lm.dtype) \
            if resume and folder else None
        reused = sc is not None
        if sc is None:
            sc = scan(lm, corpus=corpus, max_samples=scan_samples, seed=seed, batch_size=batch_size,
                      progress=progress, device=device, target_filter=target_filter)
            sc.stop_if_interrupted("headlab claims")  # a claims table from a partial scan would look whole
        ch = saved_characterization(folder, lm.name, n, seed, kappa, lm.dtype) if resume and folder else None
        if ch is None:
            ch = characterize(lm, CHARACTERIZE.replace(n=n, seed=seed, batch_size=batch_size, kappa=kappa),
                              progress=progress, device=device, dtype=lm.dtype)
        if folder is not None:
            sc.write(folder)
            ch.write(folder)
        ablation = left_out = None
        if st.ablate > 0 and lm.facts.causal:
            heads, left_out = ablation_heads(claim_heads(sc, ch), ch.slash_mass["value"], lm.facts.n_heads)
            if reused and folder is not None:  # an ablation is only as current as the scan it rests on
                ablation = saved_ablation(folder, lm.name, heads, st.ablate, st.ablate_samples)
            if ablation is None:
                ablation = ablate_experiment(m if isinstance(m, str) else lm, heads, ABLATE.replace(
                    draws=st.ablate, samples=st.ablate_samples, corpus=corpus, seed=seed,
                    batch_size=batch_size), progress=progress, device=device, dtype=dtype)
            if folder is not None:
                write_report(ablation, str(folder))
        found.append(said_left_out(measure(sc, ch, lm.facts.kind, kappa, ablation, evaluations.get(folder_name(m))),
                                   left_out))
    named = " ".join(corpus) if corpus else "wiki pydoc (default)"
    table = ClaimsResult(*corrected(found, cross_model(found)), {
        "n": n, "scan_samples": scan_samples, "kappa": kappa, "seed": seed, "corpus": named, "filter": target_filter,
        "ablation_draws": st.ablate, "monitor_dir": shown_path(monitor_dir) if monitor_dir else None})
    return judged_as_produced(table)  # a rerun of declared data reads exploratory however its bytes differ


def said_left_out(mc: ModelClaims, left_out: Sequence[str] | None) -> ModelClaims:
    """Claim 8's detail names the claim heads its ablation left out (:func:`ablation_heads`)."""
    if left_out:
        mc.rows[8]["detail"] += (f"; left out of the ablation: {', '.join(left_out)} (more than half of their "
                                 "layer's heads: no layer-matched control)")
    return mc


def shown_path(path: str | Path) -> str:
    """A path as a result records it: relative to the working folder when inside it (a result names paths of
    the repository, not of the machine it ran on), else as given."""
    p = Path(path).resolve()
    try:
        return str(p.relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def folder_name(model: str | LoadedModel) -> str:
    """A model's result folder name: a named model's name, or the last part of a path (of the path resolved,
    where it ends in ``.`` or ``..``, so that no result lands outside its folder)."""
    spec = str(model.name if isinstance(model, LoadedModel) else model).rstrip("/") or "/"
    name = Path(spec).name
    if name in ("", ".", ".."):
        name = Path(spec).expanduser().resolve().name or "root"
    return name


def folder_names(models: Sequence[str | LoadedModel]) -> list[str]:
    """One result folder per model, never shared: models whose paths end alike (``a/mm``, ``b/mm``) get their
    parent folder in the name (``a-mm``, ``b-mm``), and a name still shared gets its position."""
    specs = [str(m.name if isinstance(m, LoadedModel) else m).rstrip("/") for m in models]
    names = [folder_name(s) for s in specs]
    names = [f"{Path(s).parent.name}-{n}" if names.count(n) > 1 and Path(s).parent.name not in ("", ".", "..")
             else n for s, n in zip(specs, names)]
    return [f"{n}-{i}" if names.count(n) > 1 else n for i, n in enumerate(names)]


def _evaluation(monitor_dir: str | Path, model: str | LoadedModel) -> dict[str, Any]:
    path = Path(monitor_dir) / folder_name(model) / "evaluate.json"
    if not path.exists():
        raise HeadlabError(f"--monitor-evaluations: {path} does not exist; write it with headlab monitor evaluate "
                           f"{folder_name(model)} --out {path.parent}")
    return read_json(path)


def reread_monitor(result: ClaimsResult, monitor_dir: str | Path) -> ClaimsResult:
    """``result`` with claim 9 of every model read again from ``monitor_evaluations/MODEL/evaluate.json`` by the rule
    :func:`claims` uses (a model without an evaluation there stays not measured, and is named on stderr): a
    monitor evaluation rerun does not need the scans, characterizations and ablations measured again."""

    for m in result.models:
        try:
            evaluation = _evaluation(monitor_dir, m.model)
            m.rows[9], m.rows[10] = monitor_row(evaluation), beats_row(evaluation)
        except HeadlabError:
            say(f"claim 9 of {m.model}: no {Path(monitor_dir) / folder_name(m.model) / 'evaluate.json'}; "
                "left not measured")
            m.rows[9], m.rows[10] = monitor_row(None), beats_row(None)
    result.settings = {**result.settings, "monitor_dir": shown_path(monitor_dir)}
    return result
