"""Run samples through a model once and score every head with every detector, streaming.

This is the path every analysis shares: samples → padded batches → one forward on a capture route
(:mod:`headlab.attention.routes`: fused, chunked or eager) → each detector reduces each layer to ``(B, H[, C])`` scores
at once → per-sample score blocks, returned in the samples' seeded order chunk by chunk. Only scores survive.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterable, Iterator, Sequence

import numpy as np
import torch

from headlab.attention.hooks import capture, capture_kernel
from headlab.attention.padding import pad_right
from headlab.attention.routes import AUTO, DEFAULT_BLOCK_MB, ROUTES, Choice, LayerScorer, choose
from headlab.attention.routes.spec import AttentionSpec
from headlab.census.calibration import RoutePicker
from headlab.census.settings import DEFAULTS
from headlab.corpus import Sample
from headlab.detectors import Batch, Detector, bind_to, prepare_batch
from headlab.errors import HeadlabError
from headlab.models import LoadedModel
from headlab.models.loaded import device_of

#: a chunk holds this many batches; samples are sorted by length inside a chunk (less padding) and the
#: scores put back in seeded order, so results do not depend on the batch size.
CHUNK_BATCHES = 16


def collate(samples: Sequence[Sample], pad_id: int, causal: bool, device: torch.device) -> Batch:
    """Right-pad samples into a :class:`Batch`. (Right padding keeps decoder position ids 0..n-1.)"""
    ids, mask = pad_right([s.input_ids for s in samples], pad_id)
    marked = torch.zeros(ids.shape, dtype=torch.float32)
    for i, s in enumerate(samples):
        if s.targets:
            marked[i, list(s.targets)] = 1.0
    batch = Batch(ids.to(device), mask.to(device), causal)
    batch.cache["marked"] = marked.to(device)  # (B, T): marked target positions of constructed stimuli
    batch.links = _links(samples, device)
    return batch


def _links(samples: Sequence[Sample], device: torch.device) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """The samples' links by label: (n, 3) rows (sample in the batch, query, key) and (n,) weights."""
    rows: dict[str, list[tuple[int, int, int]]] = {}
    weights: dict[str, list[float]] = {}
    for b, s in enumerate(samples):
        for label, i, j, w in s.links:
            if not (0 <= i < len(s.input_ids) and 0 <= j < len(s.input_ids)):
                raise HeadlabError(f"sample {s.index}: link {label!r} ({i} → {j}) lies outside its "
                                   f"{len(s.input_ids)} tokens")
            rows.setdefault(label, []).append((b, i, j))
            weights.setdefault(label, []).append(w)
    return {label: (torch.tensor(r, dtype=torch.long, device=device),
                    torch.tensor(weights[label], dtype=torch.float32, device=device)) for label, r in rows.items()}


def forward(loaded: LoadedModel, batch: Batch) -> None:
    kwargs: dict[str, Any] = {"input_ids": batch.input_ids, "attention_mask": batch.attention_mask.long()}
    if loaded.facts.causal:
        kwargs["use_cache"] = False
    out = loaded.model(**kwargs)
    # scores of a pattern with NaN in it would be averaged and written as numbers; the last layer's output carries
    # any non-finite attention forward, so one look at it guards every layer
    if not _finite(out, batch):
        raise HeadlabError(_where_not_finite(loaded, kwargs, batch))


def _finite(out: Any, batch: Batch) -> bool:
    hidden = out if isinstance(out, torch.Tensor) else getattr(out, "last_hidden_state", None)
    if hidden is None:
        hidden = out.logits if hasattr(out, "logits") else out[0]
    return bool(torch.isfinite(hidden).all(-1)[batch.attention_mask.bool()].all())  # (B, T) on real tokens


def _where_not_finite(loaded: LoadedModel, kwargs: dict[str, Any], batch: Batch) -> str:
    """The sentence for a forward whose output is not finite, naming the first layer whose output is not."""
    try:
        states = loaded.model(**kwargs, output_hidden_states=True).hidden_states  # embeddings, then each layer's
        layer = next(i - 1 for i, h in enumerate(states) if not _finite(h, batch))
        where = "in the embeddings" if layer < 0 else f"first at layer {layer}"
    except (TypeError, AttributeError, StopIteration):  # a model that cannot return its layers' states
        where = "in its output"
    return (f"{loaded.name}: the forward produced NaN or infinite values {where} ({loaded.dtype} weights); no "
            "score of a pattern holding them means anything. In float16 or bfloat16 this is usually an overflow: "
            "load the model in float32")


def score_batches(loaded: LoadedModel, detectors: Sequence[Detector], batches: Iterable[Batch],
                  route: str = "eager", block_mb: float = DEFAULT_BLOCK_MB) -> Iterator[dict[str, np.ndarray]]:
    """Scores of each batch: ``{detector: (B, L, H) or (B, L, H, C)}`` float32, on one capture ``route``
    (``fused``, ``chunked`` or ``eager``; :func:`headlab.attention.routes.choose` picks one).

    Capture is installed once for all the given batches (and removed before this returns, or raises).
    Consume the iterator fully or close it; :func:`score_chunk` does.
    """
    if route not in ROUTES:
        raise HeadlabError(f"unknown route {route!r}; choose {', '.join(ROUTES)}")
    loaded.check_vocabulary()
    bind_to(loaded, detectors)  # every census path passes here: none scores with an unbound detector
    L = loaded.facts.n_layers
    current: dict[str, object] = {}

    def sink(layer: int, scores: dict[str, torch.Tensor]) -> None:
        per_layer = current["per_layer"]
        for name, s in scores.items():
            per_layer[name][layer] = s.float().cpu()  # type: ignore[index]

    def on_probs(layer: int, attn: torch.Tensor) -> None:
        current["scorer"].from_probs(layer, attn)  # type: ignore[attr-defined]

    def on_kernel(layer: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, spec: AttentionSpec) -> torch.Tensor:
        return current["handler"](layer, q, k, v, spec)  # type: ignore[operator]

    installed = capture(loaded.model, on_probs) if route == "eager" else capture_kernel(loaded.model, on_kernel)
    with torch.inference_mode(), installed as session:
        for batch in batches:
            prepare_batch(list(detectors), batch)
            scorer = LayerScorer(detectors, batch, sink, block_mb)
            current.update(batch=batch, scorer=scorer, handler=scorer.kernel(route) if route != "eager" else None,
                           per_layer={d.name: [None] * L for d in detectors})
            before = session.calls
            forward(loaded, batch)
            scorer.flush()
            if session.calls - before != L:
                raise HeadlabError(f"captured {session.calls - before} attention layers, expected {L}: "
                                   "unsupported architecture")
            per_layer: dict[str, list[torch.Tensor]] = current["per_layer"]  # type: ignore[assignment]
            yield {name: torch.stack(layers, dim=1).numpy() for name, layers in per_layer.items()}


def plan_route(loaded: LoadedModel, detectors: Sequence[Detector], requested: str = AUTO,
               block_mb: float = DEFAULT_BLOCK_MB) -> tuple[Choice, "str | RoutePicker"]:
    """The route choice and what :func:`score_chunk` takes: a route, or the picker that times the candidates."""
    choice = choose(loaded.model, detectors, requested)
    if choice.route != "auto":
        return choice, choice.route
    return choice, RoutePicker(loaded, detectors, choice.candidates, block_mb)


def score_samples(loaded: LoadedModel, detectors: Sequence[Detector], samples: Iterable[Sample],
                  batch_size: int = DEFAULTS.batch_size, progress: "object | None" = None, route: str = AUTO,
                  block_mb: float = DEFAULT_BLOCK_MB) -> Iterator[tuple[list[Sample], dict[str, np.ndarray]]]:
    """Yield ``(samples, {detector: (N, L, H[, C])})`` chunk by chunk, samples in seeded order.

    Nothing is installed in the model between yields: capture lives only while a chunk is computed.
    ``route``: ``auto`` (default: :func:`headlab.attention.routes.choose`), ``fused``, ``chunked`` or ``eager``.
    """
    if batch_size < 1:
        raise HeadlabError("batch size must be at least 1")
    bind_to(loaded, detectors)
    _, picked = plan_route(loaded, detectors, route, block_mb)
    chunk: list[Sample] = []
    for s in samples:
        if len(s.input_ids) > loaded.facts.max_length:
            raise HeadlabError(f"sample of {len(s.input_ids)} tokens exceeds {loaded.name}'s window "
                               f"({loaded.facts.max_length}); use a smaller --max-length")
        chunk.append(s)
        if len(chunk) == batch_size * CHUNK_BATCHES:
            yield from _scored(loaded, detectors, chunk, batch_size, progress, picked, block_mb)
            chunk = []
    if chunk:
        yield from _scored(loaded, detectors, chunk, batch_size, progress, picked, block_mb)


def _picked(loaded: LoadedModel, detectors: Sequence[Detector], picker: RoutePicker, B: int, T: int,
            make: Callable[[], Batch], block_mb: float, n_batches: int) -> str:
    def run(route: str, batch: Batch) -> None:
        for _ in score_batches(loaded, detectors, [batch], route, block_mb):
            pass

    return picker.pick(B, T, make, run, n_batches)


class ChunkInterrupted(KeyboardInterrupt):
    """An interrupt inside a chunk, carrying the scores of the batches that finished before it."""

    def __init__(self, done: list[int], scores: dict[str, np.ndarray], cause: KeyboardInterrupt):
        super().__init__(str(cause))
        self.done, self.scores, self.cause = done, scores, cause


def _scored(loaded: LoadedModel, detectors: Sequence[Detector], chunk: list[Sample], batch_size: int,
            progress: "object | None", route: "str | RoutePicker", block_mb: float
            ) -> Iterator[tuple[list[Sample], dict[str, np.ndarray]]]:
    """One chunk's scores; on an interrupt, first the samples whose batches finished, then the interrupt."""
    try:
        scores = score_chunk(loaded, detectors, chunk, batch_size, progress, route, block_mb)
    except ChunkInterrupted as stop:
        done = sorted(stop.done)  # back in seeded order
        if done:
            yield [chunk[i] for i in done], {name: block[done] for name, block in stop.scores.items()}
        raise stop.cause from None
    yield chunk, scores


def score_chunk(loaded: LoadedModel, detectors: Sequence[Detector], chunk: Sequence[Sample], batch_size: int,
                progress: "object | None" = None, route: "str | RoutePicker" = "eager",
                block_mb: float = DEFAULT_BLOCK_MB) -> dict[str, np.ndarray]:
    """Scores of ``chunk`` in its own order (batched by length, then put back), on ``route`` or on the route a
    :class:`RoutePicker` picks for the chunk's longest batch. An interrupt is re-raised as
    :class:`ChunkInterrupted` with the scores of the batches that finished."""
    order = sorted(range(len(chunk)), key=lambda i: -len(chunk[i].input_ids))
    groups = [order[i:i + batch_size] for i in range(0, len(order), batch_size)]
    device = device_of(loaded.model)

    def make(idx: list[int]) -> Batch:
        return collate([chunk[i] for i in idx], loaded.pad_id, loaded.facts.causal, device)

    out: dict[str, np.ndarray] = {}
    done: list[int] = []
    try:
        if isinstance(route, RoutePicker):
            # the shape from the samples (sorted longest first): a known shape builds no extra batch
            first = groups[0] if groups else []
            route = _picked(loaded, detectors, route, len(first), len(chunk[first[0]].input_ids),
                            lambda: make(first), block_mb, len(groups)) if first else "eager"
        batches = (make(idx) for idx in groups)
        with contextlib.closing(score_batches(loaded, detectors, batches, route, block_mb)) as results:  # type: ignore[type-var]
            for idx, scores in zip(groups, results):
                for name, block in scores.items():
                    if name not in out:
                        out[name] = np.full((len(chunk),) + block.shape[1:], np.nan, dtype=np.float32)
                    out[name][idx] = block
                done.extend(idx)
                if progress is not None:
                    progress.update(len(idx))  # type: ignore[attr-defined]
    except ChunkInterrupted:
        raise
    except KeyboardInterrupt as exc:
        raise ChunkInterrupted(done, out, exc) from None
    return out
