"""Python twins of the cross-model study: ``headlab claims``, ``compare``, ``scale`` and ``languages``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Sequence

from headlab.calibration import TABLE_FOLDER, CalibrationResult, declarable
from headlab.errors import HeadlabError, in_callers_words
from headlab.integrity import say_unsealed
from headlab.io import FolderLock, claim_out, keep_apart, saving, write_text_atomic
from headlab.models import LoadedModel
from headlab.models.loader import check_source
from headlab.notices import say
from headlab.reporting.ledger import VerdictChangesResult, open_ledger
from headlab.reporting.ledger import record as verdict_record
from headlab.reporting.verdicts import Change, check_declared, declare_rules, merged, refuse_missing, rejudge_all
from headlab.result import found_in
from headlab.rulebook import fingerprints
from headlab.settings import takes, takes_run
from headlab.study import claims as claim_study
from headlab.study import compare as comparison
from headlab.study import scale as scaling
from headlab.study.claims import CLAIMS_SETTINGS, ClaimsResult, ClaimsSettings, folder_names
from headlab.study.compare import COMPARE, CompareResult, CompareSettings
from headlab.study.languages import LANGUAGES_SETTINGS, LanguagesResult, LanguagesSettings, by_language
from headlab.study.scale import ScaleResult, scan_files
from headlab.values import listed


@in_callers_words
@listed("models", "corpus")
@takes(ClaimsSettings)
def claims(models: Sequence[str | LoadedModel], settings: ClaimsSettings = CLAIMS_SETTINGS, *, device: str,
           progress: bool, out: str | Path = "runs/claims", overwrite: bool,
           resume: bool = False) -> ClaimsResult:
    """Measure each claim of the slash-dominance write-up on every model: one row per claim, the measured value
    with its 95% interval and a verdict by the printed rule. Scans ``scan_samples`` windows of ``corpus``
    (``target_filter="with-target"``: only windows holding ``/``), characterizes with ``n`` items per suite;
    ``ablate`` > 0 measures claim 8 on decoders against that many matched random sets; claim 9 is read from
    ``monitor_evaluations`` (folders of ``headlab monitor evaluate``). Writes ``claims.md``, ``claims.json``
    and each model's scan and characterization under ``out`` (``resume`` reuses those with the same settings).

    Example:

        r = headlab.claims(["minilm-l6"], n=12, scan_samples=64, out="runs/claims-demo")
        r.to_pandas()[["claim", "model", "value", "lower", "upper", "verdict"]]
    """
    if out is None:
        raise HeadlabError("claims keeps each model's scan and characterization in its folder: give out=")
    with saving(out, ClaimsResult.files(), overwrite) as folder:
        r = claim_study.claims(models, settings, progress=progress, device=device, out=folder, resume=resume,
                               on_model=lambda m: print(f"measuring {m}", file=sys.stderr))
        r.write(folder)  # type: ignore[arg-type]
    return r


@in_callers_words
@listed("runs")
@takes(CompareSettings)
def compare(runs: Sequence[str | Path], settings: CompareSettings = COMPARE, *, out: str | Path = "runs/compare",
            overwrite: bool) -> CompareResult:
    """Compare scans and characterizations of different models (folders holding ``scan.json`` and/or
    ``characterize.json``): a table and ``compare.png``; ``kappa`` is the SlashScore threshold of the
    slash-pattern share; an earlier comparison in ``out`` is replaced only with ``overwrite``. ``records()``: one
    row per run; ``figure()``: the per-layer maxima against depth.

    Example:

        c = headlab.compare(["runs/claims/minilm-l6", "runs/claims/smollm2-135m"])
        c.to_pandas(); c.figure()
    """
    keep_apart({"--out": out}, {f"run {r}": r for r in runs})
    say_unsealed([Path(r) / kind.KIND for r in runs for kind in found_in(r)], "compare")
    with saving(out, CompareResult.files(), overwrite) as folder:
        return comparison.compare(runs, str(folder), settings.kappa)


@in_callers_words
@listed("runs")
@takes_run
def scale(runs: Sequence[str | Path], *, out: str | Path = "runs/scale", overwrite: bool) -> ScaleResult:
    """Specialization against parameter count, one point per scanned model (scan folders, or folders of them):
    share of heads per kind, highest mass on ``/`` and top SlashScore. Writes ``scale.md``, ``scale.json`` and
    ``scale.png``; ``records()``: one row per model; ``figure()``: the three panels.

    Example:

        s = headlab.scale(["runs/study-full/claims", "runs/study-full/trained"], out="runs/scale")
        s.to_pandas()[["model", "n_params", "max_slash_mass"]]
    """
    say_unsealed(scan_files(runs), "scale")  # every folder is checked before the output folder is claimed
    with saving(out, ScaleResult.files(), overwrite) as folder:
        return scaling.scale(runs, folder)  # type: ignore[arg-type]


@in_callers_words
@listed("models", "languages")
@takes(LanguagesSettings)
def languages(models: Sequence[str | LoadedModel], settings: LanguagesSettings = LANGUAGES_SETTINGS, *,
              device: str, out: str | Path | None = "runs/languages",
              overwrite: bool) -> list[LanguagesResult]:
    """Per model and language (the first is the reference): every head's mass on ``/`` in the slash stimulus
    suite with its interval, the strict rule's SDHs, and whether the reference's top head stays on top. With
    ``out``, writes ``languages.md`` and ``MODEL/languages.json`` (finished models are kept if one fails).

    Example:

        [r] = headlab.languages(["smollm2-135m"], languages=["en", "de"], n=20, out=None)
        r.to_pandas()[["language", "sdh", "reference_top_rank", "spearman"]]
    """
    if out is not None:  # an earlier result is refused whether or not the models are installed
        claim_out(out, ["languages.md"], overwrite)
    for m in models:  # every model is checked before the first is measured
        if not isinstance(m, LoadedModel):
            check_source(m)
    results = []
    with saving(out, ["languages.md"], overwrite) as folder:
        parts = ["# `/` heads across languages (slash stimulus suite)", ""]
        for m, name in zip(models, folder_names(models)):
            print(f"measuring {m if isinstance(m, str) else m.name}", file=sys.stderr)
            r = by_language(m, settings, device=device)
            results.append(r)
            parts.append(r.markdown())
            if folder is not None:
                r.write(folder / name)
                write_text_atomic(folder / "languages.md", "\n".join(parts))
    return results


def refuse_uncalibrated(base: Path) -> None:
    """A rule is declared only where its calibration (``RESULTS/rulebook/calibration``, of the rule as it is now)
    shows that it can reach supported in its family; a results folder without the table (a copy of a part) is told
    that nothing was checked."""
    folder = base / TABLE_FOLDER
    if not (folder / CalibrationResult.KIND).exists():
        say(f"verdicts --record: {folder} holds no calibration table: whether each rule can reach supported was not "
            "checked (python bench/studies/rulebook_calibration.py)")
        return
    why = declarable(CalibrationResult.read(folder), fingerprints())
    if why:
        more = f" (and {len(why) - 1} more)" if len(why) > 1 else ""
        raise HeadlabError(f"verdicts --record: {why[0]}{more}; recalibrate with python "
                           "bench/studies/rulebook_calibration.py --only RULE, then record")


@in_callers_words
def verdicts(results: str | Path = "results", *, record: str | None = None) -> list[Change]:
    """Re-judge every committed verdict under ``results`` with the current rule book (the claims tables, the
    formation claims, the induction study and the monitor evaluations from the statistics they keep; the retrieval
    table from its files) and rewrite them; returns the verdicts
    that moved. ``record`` (why the rules changed) appends them, with the book's version and fingerprints, to
    ``results/verdict_changes.json`` (and its ``.md``): a rule's own commit does this.

    Example:

        changes = headlab.verdicts("results")
        [(c.row, c.old, c.new) for c in changes]
    """
    base = Path(results)
    if not base.is_dir():
        raise HeadlabError(f"verdicts: {base} is not a folder; give the results folder (default results)")
    if record is not None and not record.strip():
        raise HeadlabError("verdicts --record: an empty reason; say why the rules changed")
    if record is not None and not record.isprintable():
        raise HeadlabError(f"verdicts --record {record[:40]!r}: the reason holds a line break or a control "
                           "character, which would write a section of its own into verdict_changes.md; say why "
                           "in one line")
    if record is None:
        check_declared()  # a rule whose code moved is judged only in its own commit, which records it
        return rejudge_all(base)
    # one rule commit at a time: a second --record is refused before it judges anything
    with FolderLock(base, file=VerdictChangesResult.KIND):
        open_ledger(base)  # refused before any table is rewritten
        refuse_missing(base.resolve())
        refuse_uncalibrated(base)
        changes = rejudge_all(base)
        # the rule's own commit: declare the changed rules on the data as it stands (statistics recomputed from
        # existing data are existing data), then judge again so that verdicts on that data read exploratory
        declare_rules(base)
        changes = merged(changes, rejudge_all(base))
        verdict_record(base, changes, record)
    return changes
