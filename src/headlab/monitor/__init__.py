"""The head monitor: a reference profile of a model's head activity, and flags on documents that depart from it
(``headlab monitor fit`` / ``check`` / ``evaluate``; the functions of the same names here are their Python
twins). Fingerprints: :mod:`.fingerprint`; the profile: :mod:`.profile`; checking: :mod:`.checking`, its rows
and explanations: :mod:`.screening`, writing back into a dataset: :mod:`.dataset`; the evaluation:
:mod:`.evaluation` (filters :mod:`.rules`, :mod:`.ngram`, anomalies :mod:`.anomalies`, statistics
:mod:`.comparison`)."""

from __future__ import annotations

import shutil
from contextlib import nullcontext
from pathlib import Path
from typing import Any, Sequence

from headlab.distributed import device_for, world
from headlab.errors import HeadlabError, in_callers_words
from headlab.io import claim_file, keep_apart, saving, writing_files
from headlab.models import LoadedModel, resolve
from headlab.monitor import evaluation
from headlab.monitor.checking import CHECK_FILES, claim_work, run_check
from headlab.monitor.comparison import EvaluationResult
from headlab.monitor.dataset import dataset_files, write_back
from headlab.monitor.evaluation import installed_kinds
from headlab.monitor.fingerprint import (
    check_corpus,
    choose_features,
    column_means,
    fingerprints,
    scanned,
)
from headlab.monitor.profile import Profile, fit_profile
from headlab.monitor.screening import CheckResult
from headlab.monitor.settings import (
    CHECK,
    EVALUATE,
    KINDS,
    MONITOR,
    WORK,
    CheckSettings,
    EvaluateSettings,
    MonitorSettings,
)
from headlab.rulebook.registration import judged_as_produced
from headlab.settings import takes
from headlab.values import listed


@in_callers_words
@listed("corpus")
@takes(MonitorSettings)
def fit(model: str | LoadedModel, settings: MonitorSettings = MONITOR, *, device: str, progress: bool,
        out: str | Path | None, overwrite: bool) -> Profile:
    """Scan the reference ``corpus`` (up to ``max_samples`` windows), choose the features (each census
    detector's top ``per_detector`` heads and every head's entropy), fit the profile and calibrate its threshold
    to flag ``fpr`` of held-out reference documents. With ``out``, writes ``profile.json`` there.

    Example:

        prof = headlab.monitor.fit("minilm-l6", corpus=["wiki"], max_samples=400)
        res, rows = headlab.monitor.check(prof, corpus=["pydoc"], max_samples=200)
    """

    check_corpus(settings.corpus, settings.id_field, settings.text_field)
    with saving(out, [Profile.KIND], overwrite) as folder:
        prof = _fit(model, settings, progress, device)
        if folder is not None:
            prof.write(folder)
    return prof


def _fit(model: Any, st: MonitorSettings, progress: bool, device: str) -> Profile:
    loaded = resolve(model, device=device, dtype=st.dtype)
    with scanned(loaded, st.corpus, st.max_samples, st.seed, st.batch_size, st.max_length, progress,
                 device, st.detectors, id_field=st.id_field, checkpoint_every=None, dtype=st.dtype,
                 text_field=st.text_field) as (path, r):
        features = choose_features(column_means(path), st.per_detector)
        X, docs, _ = fingerprints(path, features)
    record = {k: v for k, v in st.record().items() if k not in ("corpus", "fpr")}
    return fit_profile(X, docs, features, st.fpr, model=r.model, model_identity=loaded.identity, corpus=list(st.corpus),
                       settings={**record, "n_reference_samples": r.n_samples})


@in_callers_words
@listed("corpus")
@takes(CheckSettings)
def check(profile: Profile | str | Path, settings: CheckSettings = CHECK, *, corpus: Sequence[str],
          model: str | LoadedModel | None = None, write_filtered: str | Path | None = None,
          write_scores: str | Path | None = None, resume: bool = False, device: str, rows: bool = True,
          progress: bool, out: str | Path | None,
          overwrite: bool) -> tuple[CheckResult, list[dict[str, Any]]]:
    """Score every document of ``corpus`` (or its first ``max_samples`` windows; 0: all) against the profile
    (a :class:`Profile` or the folder of ``monitor fit``; a model given by name is loaded in the profile's dtype);
    returns the summary and one record per document
    (score, flag, its most deviating features explained); a JSONL record is a document, named by ``id_field``,
    and the rows follow the input's order. With ``out``, writes ``monitor.md``, ``monitor.jsonl``,
    ``monitor.parquet``, ``check.json`` and ``scores.png`` there. ``write_filtered``: a JSONL file of the
    records not flagged, byte for byte; ``write_scores``: every scored record with ``headlab_score`` and
    ``headlab_flag`` added. With ``out``, the scan checkpoints every ``checkpoint_every`` windows into
    ``out/.check-scan``; an interrupted check is finished with ``resume`` (the folder goes once the result is
    written). The check's memory does not grow with the records but for the returned rows: ``rows=False``
    returns none (they are in ``out``'s ``monitor.jsonl``), for a dataset of millions.

    Example:

        res, rows = headlab.monitor.check("runs/monitor/profile", corpus=["pydoc"], max_samples=200)
        res                                    # flagged share, the features that moved most
        sorted(rows, key=lambda r: -r["score"])[0]["deviations"]
    """

    if not isinstance(profile, Profile) and not (Path(profile) / Profile.KIND).exists():
        raise HeadlabError(f"{profile} holds no profile.json; write one with headlab monitor fit")
    st = settings
    max_samples, seed, batch_size, id_field, checkpoint_every = (st.max_samples, st.seed, st.batch_size, st.id_field,
                                                                 st.checkpoint_every)
    rank = check_corpus(corpus, id_field, st.text_field)
    keep_apart({"--write-filtered": write_filtered, "--write-scores": write_scores, "--out": out},
               {**{f"--corpus {c}": c for c in corpus}, "profile": None if isinstance(profile, Profile) else profile})
    targets = [None if p is None else claim_file(p, overwrite, flag)
               for p, flag in ((write_filtered, "--write-filtered"), (write_scores, "--write-scores"))]
    if any(targets):
        dataset_files(corpus)  # records to write back, before the work
    if resume and out is None:
        raise HeadlabError("--resume needs the --out folder of the interrupted check")
    if not rows and out is None:
        raise HeadlabError("rows=False keeps no row: give out= for monitor.jsonl, or leave rows=True")
    if out is not None:  # on every rank, before the process group forms (reads only)
        claim_work(Path(out) / WORK, resume, overwrite, remove=False)
    w = world()
    # one writer per folder: under torchrun only rank 0 claims, locks and writes it
    held = saving(out, CHECK_FILES, overwrite) if w.main else nullcontext(None if out is None else Path(out))
    with held as folder, writing_files(targets if w.main else [], overwrite):  # one writer per written file
        # every rank checked the scan folder before the group formed; checking again here would race rank 0,
        # which may already have started its scan there
        work = None if folder is None else claim_work(folder / WORK, resume, overwrite) if w.main else folder / WORK
        res, kept, verdicts = run_check(profile, corpus, folder if w.main else None, model,
                                        (max_samples, seed, batch_size, (id_field, st.text_field), rank), progress,
                                        device_for(device, w), (work, resume, checkpoint_every, rows), w)
        if verdicts is not None and any(targets):
            write_back(corpus, id_field, verdicts, targets[0], targets[1], st.text_field)
        if w.main and work is not None:
            shutil.rmtree(work, ignore_errors=True)
        return res, kept


@in_callers_words
@listed("reference", "kinds")
@takes(EvaluateSettings)
def evaluate(model: str | LoadedModel, settings: EvaluateSettings = EVALUATE, *, device: str,
             progress: bool, out: str | Path = "runs/monitor-evaluate",
             overwrite: bool) -> EvaluationResult:
    """AUROC of the monitor against attention-free baselines (character classes, the Gopher and C4 rules, an
    n-gram perplexity of the reference and, for decoders, the model's own loss), per kind of structure (default:
    every kind whose corpus is installed), on documents held out in hash folds, and combined with the best
    baseline without labels;
    the calibration check at 0.5-10% targets. Writes ``evaluate.json``, ``evaluate.md`` and
    ``calibration.png``; returns the :class:`~headlab.monitor.comparison.EvaluationResult`.

    Example:

        ev = headlab.monitor.evaluate("minilm-l6", kinds=["code", "man"], out="runs/monitor-eval")
        {k: v["verdict"] for k, v in ev.kinds.items()}
    """

    chosen = installed_kinds(settings.kinds)
    with saving(out, EvaluationResult.files(), overwrite) as folder:
        assert folder is not None
        r = evaluation.evaluate(model, settings, chosen, progress=progress, device=device,
                                figure=folder / "calibration.png", scores=folder / "scores.npz")
        result = judged_as_produced(EvaluationResult.from_json({**r, "skipped_kinds": [k for k in KINDS
                                                                                     if k not in chosen]}))
        result.write(folder)  # the kinds not installed here were said on stderr
    return result


__all__ = ["CheckResult", "Profile", "check", "evaluate", "fit"]
