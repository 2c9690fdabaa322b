"""The head census: every head of a model scored by every detector over a corpus (``headlab scan``)."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from headlab.attention.routes import AUTO
from headlab.census.accumulator import Census
from headlab.census.calibration import RoutePicker
from headlab.census.engine import plan_route, score_chunk
from headlab.census.per_sample import PerSampleWriter
from headlab.census.result import ScanResult
from headlab.census.settings import DEFAULTS, ScanSettings
from headlab.census.stream import CKPT_JSON, fingerprint, load_checkpoint, merge_ranks, run
from headlab.corpus import DEFAULT_CORPUS, Document, Sample, Sampler, documents, repeat_probe
from headlab.detectors import Detector, bind_to, make
from headlab.detectors.base import options_for
from headlab.distributed import world
from headlab.errors import HeadlabError
from headlab.interrupts import Terminated
from headlab.models import LoadedModel, resolve
from headlab.notices import recorded, say
from headlab.progress import bar as progress_bar
from headlab.settings import RUN

__all__ = ["ScanResult", "ScanSettings", "scan"]



def scan(model: str | LoadedModel, texts: Sequence[str] | None = None, *, corpus: Sequence[str] | None = None,
         settings: ScanSettings = DEFAULTS, progress: bool = RUN.progress, device: str = RUN.device,
         checkpoint_dir: str | Path | None = None, resume: bool = False, per_sample: str | Path | None = None,
         rule_notes: bool = True, **options: Any) -> ScanResult:
    """Score every attention head of ``model`` over a corpus, streaming.

    Args:
        model: a name or path for :func:`headlab.load`, or a :class:`LoadedModel`.
        texts: texts to scan (Python API); otherwise ``corpus`` sources (named or paths; default wiki+pydoc).
        settings: what to measure and how (:class:`~headlab.census.settings.ScanSettings`); ``options`` are
            fields of it that replace those of ``settings`` (``scan(lm, max_samples=64)``).
        device: where a model given by name is loaded (``cpu``, ``cuda``, ``auto``).
        rule_notes: say when too few samples hold the target for the slash-dominance rule (False for a caller
            that reads the token detector's scores but not the rule: the head monitor).
        checkpoint_dir, resume: write the merged statistics every ``settings.checkpoint_every`` samples into
            ``checkpoint_dir`` (default: every 2048 samples for scans of more than 4096, else never; 0: never),
            and with ``resume`` continue from the checkpoint there (:mod:`headlab.census.stream`).
        per_sample: a ``.parquet`` file for one row of scores per sample (:mod:`headlab.census.per_sample`).

    Under ``torchrun`` the samples are shared among the processes (:mod:`headlab.distributed`); every process
    returns the merged result. A Ctrl-C (or SIGTERM, under the CLI) stops the scan early and returns the
    statistics of every batch that finished, marked ``interrupted``.
    """
    with recorded() as said:  # skipped inputs, repaired checkpoints, caveats: the result records them
        s = settings.replace(**options) if options else settings
        loaded = resolve(model, device=device, dtype=s.dtype)
        plan = _plan(loaded, s, texts, corpus, per_sample)
        w = world()
        census = Census((loaded.facts.n_layers, loaded.facts.n_heads), s.threshold, s.consecutive)
        folder = Path(checkpoint_dir) if checkpoint_dir is not None else None
        every = s.every(folder is not None)
        parts = _resume(folder, census, w, plan.fingerprint) if resume else 0
        writer = PerSampleWriter(per_sample, parts, loaded.name) if per_sample is not None and w.main else None
        # a few given texts make an unknown number of windows, never max_samples: no total to show until the end
        total = None if texts is not None else s.max_samples
        bar = progress_bar(total, f"scan {loaded.name}", "sample", progress and w.main)
        if bar is not None and census.position:
            bar.update(census.position)
        try:
            samples = (repeat_probe(loaded.tokenizer, s.max_samples or 0, plan.record["window"], s.seed)
                       if s.stimuli == "repeat" else plan.sampler.samples(plan.documents, s.max_samples))
            interrupted = run(loaded, plan.detectors, samples, census, w, settings=s, route=plan.route, bar=bar,
                              every=every, folder=folder, print_=plan.fingerprint, writer=writer,
                              rows=per_sample is not None)
        except KeyboardInterrupt as exc:  # Ctrl-C before the loop, or a sharded scan (its last checkpoint stands)
            interrupted = exc
            if w.size > 1:
                raise
        finally:
            if bar is not None:
                bar.total = bar.n  # what was scanned: a corpus that ran out before max_samples ends at n/n
                bar.refresh()
                bar.close()
        merge_ranks(census, w)
        if writer is not None and census.n_samples:
            writer.finish(keep_parts=interrupted is not None and folder is not None and every > 0)
        picked = plan.route.report() if isinstance(plan.route, RoutePicker) else None
        record = {**plan.record, "world_size": w.size, "checkpoint_every": every, "route_by_shape": picked,
                  "per_sample": str(Path(per_sample).resolve()) if per_sample is not None else None}
        result = _result(loaded, s, census, record, plan.has_token and rule_notes, interrupted)
    result.warnings = [*said, *(n for n in result.warnings if n not in said)]  # a note the summary says, not stderr
    return result


@dataclass(frozen=True)
class _Plan:
    """What a scan resolves before the first batch: detectors bound to the model, the sampler, the documents,
    the capture route, and the settings record (``scan.json``'s ``settings``) with its fingerprint."""

    detectors: list[Detector]
    sampler: Sampler
    documents: list[Document]
    route: "str | RoutePicker"
    record: dict[str, Any]
    fingerprint: str
    has_token: bool


def _plan(loaded: LoadedModel, s: ScanSettings, texts: Sequence[str] | None, corpus: Sequence[str] | None,
          per_sample: str | Path | None) -> _Plan:
    dets = [_make(d, s) for d in s.detectors]
    choice, route = plan_route(loaded, dets, s.route, s.chunk_mb)
    bind_to(loaded, dets)  # before the sampler (it needs the token's target ids) and the recorded settings
    _tried(loaded, [d for d in dets if not type(d).__module__.startswith("headlab.")],
           choice.candidates if choice.route == AUTO else (choice.route,))
    token = next((d for d in dets if d.name == "token"), None)
    if s.target_filter != "any" and token is None:
        raise HeadlabError("--filter needs the token detector (it defines the target)")
    if s.stimuli is not None and (texts is not None or corpus):
        raise HeadlabError(f"--stimuli {s.stimuli} replaces the corpus: give --stimuli or --corpus (texts=), not both")
    docs = [] if s.stimuli is not None else _documents(texts, corpus, s.id_field, s.text_field)
    targets = token.target_ids if token is not None else ()  # type: ignore[attr-defined]
    window = min(s.max_length, loaded.facts.max_length)
    if window < s.max_length:
        say(f"--max-length {s.max_length} is above {loaded.name}'s limit of {loaded.facts.max_length} tokens: "
            f"windows are {window} tokens")
    sampler = Sampler(loaded.tokenizer, window, s.stride, seed=s.seed, target_ids=targets,
                      target_filter=s.target_filter)  # type: ignore[arg-type]
    record = {
        "corpus": (f"stimuli: {s.stimuli}" if s.stimuli is not None else list(corpus or DEFAULT_CORPUS)
                   if texts is None else f"{len(texts)} texts (Python API)"),
        "detectors": {d.name: _recorded(d) for d in dets}, "sdh_rule": s.sdh_rule(), "max_samples": s.max_samples,
        "batch_size": s.batch_size, "window": window, "stride": sampler.stride,
        "special_tokens": sampler.special.count, "seed": s.seed, "filter": s.target_filter,
        "id_field": s.id_field or None, "text_field": s.text_field, "dtype": loaded.dtype,
        "capture": "streaming",
        **choice.settings(), "chunk_mb": s.chunk_mb, "model_facts": loaded.facts.__dict__,
    }
    rows = str(Path(per_sample).resolve()) if per_sample is not None else None  # a resume must add to these rows
    stamp = corpus_stamp(texts, corpus)  # a resume must read the same text the first samples came from
    return _Plan(dets, sampler, docs, route, record,
                 fingerprint({**record, "per_sample": rows, "corpus_files": stamp}), token is not None)


def corpus_stamp(texts: Sequence[str] | None, corpus: Sequence[str] | None) -> str:
    """What identifies the text a scan reads: the texts themselves, or every corpus file's path, size and
    modification time (named sources are installed packages, identified by their name)."""

    h = hashlib.sha256()
    if texts is not None:
        for t in texts:
            h.update(str(t).encode("utf-8", "replace") + b"\0")
        return h.hexdigest()
    for item in corpus or ():
        p = Path(str(item)).expanduser()
        files = sorted(f for f in p.rglob("*") if f.is_file()) if p.is_dir() else [p] if p.is_file() else []
        for f in files:
            st = os.stat(f)
            h.update(f"{f.resolve()}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def _resume(folder: Path | None, census: Census, w: Any, print_: str) -> int:
    """Load the checkpoint in ``folder`` into ``census``; its per-sample part count."""
    if folder is None:
        raise HeadlabError("resuming needs the folder that holds the checkpoint (--out)")
    found = load_checkpoint(folder, census, w, print_)
    if found is None and not (folder / CKPT_JSON).exists():
        raise HeadlabError(f"{folder} holds no scan checkpoint to resume; run without --resume")
    return found or 0


def _result(loaded: LoadedModel, s: ScanSettings, census: Census, record: dict[str, Any], has_token: bool,
            interrupted: KeyboardInterrupt | None) -> ScanResult:
    L, H = loaded.facts.n_layers, loaded.facts.n_heads
    n_with, moments = census.n_with, census.moments
    if census.n_samples == 0 and interrupted is not None:
        raise type(interrupted)("interrupted before the first batch finished: nothing to write")
    if census.n_samples == 0:
        if s.target_filter != "any":
            raise HeadlabError(f"no sample passes --filter {s.target_filter} (target {s.target!r})")
        raise HeadlabError("the corpus is empty: it produced no samples (empty, binary or unreadable files are "
                           "skipped)")
    notes = []
    if has_token and n_with == 0:  # text without the target: recorded, and the summary says it in one line
        notes.append(f"no sample contains {s.target!r}: token scores and the SDH rule are undefined")
    elif has_token and n_with < s.consecutive:
        notes.append(f"only {n_with} sample(s) contain {s.target!r}, fewer than the rule's k = {s.consecutive}: "
                     "the SDH share is undefined (use more samples, or keep only windows with the target: "
                     "--filter with-target, target_filter=\"with-target\" in Python)")
        say(notes[-1])
    for name, m in moments.items():  # the token detector's emptiness is said above, with its reason
        if name != "token" and not np.isfinite(np.asarray(m.mean, dtype=float)).any():
            notes.append(f"detector {name!r} scored nothing: its score is NaN (undefined) on every sample and head")
            say(notes[-1])
    token = "token" in moments
    return ScanResult(
        model=loaded.name, n_layers=L, n_heads=H, n_samples=census.n_samples, n_samples_with_target=n_with,
        n_tokens=census.n_tokens, settings=record, means={k: m.mean for k, m in moments.items()},
        stds={k: m.std for k, m in moments.items()},
        token_frac_above=moments["token"].frac_above if token else None,
        token_max_run=census.rule.best if token else None,
        sdh=census.rule.passed if token and n_with else np.zeros((L, H), dtype=bool),
        interrupted=interrupted is not None, warnings=notes,
        interrupted_by=None if interrupted is None else ("SIGTERM" if isinstance(interrupted, Terminated)
                                                         else "SIGINT"))


#: what a detector from outside the package is tried on before the work
PROBE_TEXT = "a / b / c / a / b / c"


def _tried(loaded: LoadedModel, detectors: Sequence[Detector], routes: Sequence[str]) -> None:
    """Each detector registered from outside the package, tried on a short probe on every route the scan may
    take, before the work: one that fails, or gives a score of another shape than ``(B, H)`` or ``(B, H, C)`` per
    layer, or an infinite one, is refused in one line naming it (and the layer), not a traceback mid-scan."""
    L, H = loaded.facts.n_layers, loaded.facts.n_heads
    ids = loaded.tokenizer(PROBE_TEXT, truncation=True, max_length=loaded.facts.max_length)["input_ids"]
    probe = Sample(0, "probe", 0, tuple(int(i) for i in ids))
    for det, route in ((d, r) for d in detectors for r in routes):
        try:
            out = score_chunk(loaded, [det], [probe], 1, None, route)[det.name]
        except (RuntimeError, IndexError, ValueError, TypeError) as exc:
            raise HeadlabError(f"detector {det.name!r} fails on a probe text ({route} route): {type(exc).__name__}: "
                               f"{str(exc).splitlines()[0]}; its score must be (B, H) or (B, H, C) for each "
                               "layer, treating the head axis as opaque (see headlab.detectors.base)") from None
        if out.shape[1:3] != (L, H) or out.ndim not in (3, 4):
            raise HeadlabError(f"detector {det.name!r} gives scores of shape {tuple(out.shape[1:])} over layers on "
                               f"a probe text ({route} route), not ({L}, {H}) or ({L}, {H}, C): its score must "
                               "be (B, H) or (B, H, C) for each layer")
        if np.isinf(out).any():
            raise HeadlabError(f"detector {det.name!r} gives an infinite score at layer "
                               f"{int(np.argwhere(np.isinf(out))[0][1])} on a probe text ({route} route): a score "
                               "is a finite number, or NaN where it is undefined for a sample")


def _recorded(d: Detector) -> dict[str, Any]:
    """A detector's settings in scan.json, with the names of its columns (heads.csv names its cells by them)."""
    return {**d.settings(), **({"columns": list(d.columns)} if d.columns else {})}


def _make(d: str | Detector, s: ScanSettings) -> Detector:
    if isinstance(d, Detector):
        return d
    key = d.replace("_", "-")
    return make(key, **options_for(key, s))


def _documents(texts: Sequence[str] | None, corpus: Sequence[str] | None, id_field: str | None,
               text_field: str) -> list[Document]:
    if texts is None:
        return documents(list(corpus) if corpus else None, id_field, text_field)
    if isinstance(texts, str):
        raise HeadlabError("texts must be a list of strings, not one string")
    docs = [Document(f"text:{i}", lambda t=t: [t]) for i, t in enumerate(texts) if isinstance(t, str) and t.strip()]
    if not docs:
        raise HeadlabError("no non-empty text to scan")
    return docs
