"""The work of ``headlab monitor check`` behind its Python twin: the scan folder kept for ``--resume``, the scan
(sharded under torchrun like ``headlab scan``), the fingerprints on rank 0, and the rows and files."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Sequence

from headlab.errors import HeadlabError
from headlab.head import Head
from headlab.integrity import say_unsealed
from headlab.models import LoadedModel, resolve
from headlab.monitor.fingerprint import MONITOR_DETECTORS, scanned
from headlab.monitor.profile import Profile
from headlab.monitor.scoring import Verdicts, score_check
from headlab.monitor.screening import CheckResult
from headlab.notices import recorded, say

CHECK_FILES = CheckResult.files()


def claim_work(work: Path, resume: bool, overwrite: bool, remove: bool = True) -> Path:
    """The check's scan folder: refused when ``resume`` finds no checkpoint there, or when an interrupted
    check's is there and neither ``resume`` nor ``overwrite`` says what to do with it (``remove``: clear it
    for ``overwrite``; off for the read-only check every rank makes first)."""
    interrupted = (work / "scan.checkpoint.json").exists()
    if resume and not interrupted:
        raise HeadlabError(f"--resume: {work.parent} holds no interrupted check to continue; run without --resume")
    if not resume and work.exists():
        if not overwrite:
            raise HeadlabError(f"{work.parent} holds an interrupted check ({work.name}); pass --resume to finish "
                               "it, or --overwrite to start again")
        if remove:
            shutil.rmtree(work)
    return work


def _profile(profile: Profile | str | Path, model: Any) -> Profile:
    if not isinstance(profile, Profile):
        say_unsealed([Path(profile) / Profile.KIND], "monitor check")
    prof = profile if isinstance(profile, Profile) else Profile.read(Path(profile) / Profile.KIND)
    given = None if model is None else str(getattr(model, "name", model))
    if given is not None and given != prof.model:  # another model's heads would be flagged for being other heads
        raise HeadlabError(f"the profile was fitted on {prof.model}, not {given}: check with the profile's own model "
                           "(leave model= out) or fit a profile for this one")
    want = prof.settings.get("dtype", "float32")
    weights = model.dtype if isinstance(model, LoadedModel) else None
    if weights is not None and weights != want:  # every head's numbers would move with the rounding
        raise HeadlabError(f"the profile was fitted in {want}, the model given is {weights}: give the model in {want} "
                           "or leave model= out")
    return prof


def _fitted_model(prof: Profile, loaded: LoadedModel) -> LoadedModel:
    """``loaded`` when it is the model the profile was fitted on, by identity, not by name: a folder whose
    contents were replaced, or a profile whose ``model`` was edited, would flag documents for being another
    model's."""
    if prof.model_identity is None:
        say(f"the profile records no identity of the model it was fitted on (fitted by an earlier headlab): that "
            f"{loaded.name} is that model is not checked; fit the profile again to have it checked")
    elif loaded.identity != prof.model_identity:
        raise HeadlabError(f"{loaded.name} is not the model the profile was fitted on: its weights, config or "
                           f"tokenizer differ (identity {loaded.identity}, the profile's {prof.model_identity}); "
                           "check with the fitted model, or fit a profile for this one with headlab monitor fit")
    return loaded


def features_fit(features: Sequence[str], n_layers: int, n_heads: int, model: str) -> None:
    """Refused before any scan when a profile's feature (``DETECTOR/L.H``) names a head the model does not have:
    the profile was fitted on another shape (or edited), and the scan would be spent before its scoring failed."""
    for f in features:
        det, _, at = f.partition("/")
        if not at:
            continue
        try:
            head = Head.parse(at)
        except (HeadlabError, ValueError):
            raise HeadlabError(f"the profile's feature {f!r} names no head (DETECTOR/L.H); fit the profile again "
                               "with headlab monitor fit") from None
        if head.layer >= n_layers or head.head >= n_heads:
            raise HeadlabError(f"the profile's feature {f} names head {head}, which {model} ({n_layers} layers x "
                               f"{n_heads} heads) does not have: the profile is not this model's; fit one for it "
                               "with headlab monitor fit")


def run_check(profile: Profile | str | Path, corpus: Sequence[str], out: Path | None, model: Any,
              how: tuple[int, int, int, tuple[str | None, str], dict[str, int]], progress: bool, device: str,
              kept: tuple[Path | None, bool, int, bool], w: Any
              ) -> tuple[CheckResult, list[dict[str, Any]], Verdicts | None]:
    """Scan, fingerprint and score; under torchrun every rank scans its share, rank 0 (which holds the merged
    per-sample rows) scores and writes, and the other ranks return its summary with no rows and no verdicts."""
    max_samples, seed, batch_size, (id_field, text_field), rank = how
    work, resume, every, keep_rows = kept
    prof = _profile(profile, model)
    detectors = prof.settings.get("detectors", MONITOR_DETECTORS)
    dtype = prof.settings.get("dtype", "float32")
    with recorded() as said:
        loaded = _fitted_model(prof, resolve(model or prof.model, device=device, dtype=dtype))
        features_fit(prof.settings.get("input_features", prof.features), loaded.facts.n_layers,
                     loaded.facts.n_heads, loaded.name)
        with scanned(loaded, corpus, max_samples, seed, batch_size, prof.settings["max_length"], progress, device,
                     detectors, id_field, work=work, resume=resume, checkpoint_every=every,
                     dtype=dtype, text_field=text_field) as (path, _):
            scored = score_check(prof, path, rank, list(corpus), out, work, keep_rows, said,
                                 capped=max_samples > 0) if w.main else None
    if scored is None:
        return w.all_gather(None)[0], [], None
    if w.size > 1:
        w.all_gather(scored[0])
    return scored
