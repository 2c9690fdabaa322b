"""Run samples through a model once and score every head with every detector, streaming.

This is the path every analysis shares: samples → padded batches → one forward with :func:`capture` →
each detector reduces each layer's ``(B, H, T, T)`` probabilities to ``(B, H[, C])`` scores at once →
per-sample score blocks, returned in the samples' seeded order chunk by chunk. Only scores survive.
"""

from __future__ import annotations

import contextlib
from typing import Iterable, Iterator, Sequence

import numpy as np
import torch

from .capture import capture
from .corpus import Sample
from .detectors import Batch, Detector, prepare_batch, score_layer
from .errors import HeadlabError
from .models import LoadedModel
from .models.loaded import device_of

#: a chunk holds this many batches; samples are sorted by length inside a chunk (less padding) and the
#: scores put back in seeded order, so results do not depend on the batch size.
CHUNK_BATCHES = 16


def collate(samples: Sequence[Sample], pad_id: int, causal: bool, device: torch.device) -> Batch:
    """Right-pad samples into a :class:`Batch`. (Right padding keeps decoder position ids 0..n-1.)"""
    T = max(len(s.input_ids) for s in samples)
    ids = torch.full((len(samples), T), pad_id, dtype=torch.long)
    mask = torch.zeros((len(samples), T), dtype=torch.bool)
    marked = torch.zeros((len(samples), T), dtype=torch.float32)
    for i, s in enumerate(samples):
        ids[i, : len(s.input_ids)] = torch.tensor(s.input_ids, dtype=torch.long)
        mask[i, : len(s.input_ids)] = True
        if s.targets:
            marked[i, list(s.targets)] = 1.0
    batch = Batch(ids.to(device), mask.to(device), causal)
    batch.cache["marked"] = marked.to(device)  # (B, T): marked target positions of constructed stimuli
    return batch


def forward(loaded: LoadedModel, batch: Batch) -> None:
    kwargs = {"input_ids": batch.input_ids, "attention_mask": batch.attention_mask.long()}
    if loaded.facts.causal:
        kwargs["use_cache"] = False
    loaded.model(**kwargs)


def score_batches(loaded: LoadedModel, detectors: Sequence[Detector], batches: Iterable[Batch]
                  ) -> Iterator[dict[str, np.ndarray]]:
    """Scores of each batch: ``{detector: (B, L, H) or (B, L, H, C)}`` float32.

    Capture is installed once for all the given batches (and removed before this returns, or raises).
    Consume the iterator fully or close it; :func:`score_chunk` does.
    """
    L = loaded.facts.n_layers
    current: dict[str, object] = {}

    def on_layer(layer: int, attn: torch.Tensor) -> None:
        per_layer = current["per_layer"]
        for name, s in score_layer(detectors, attn, current["batch"]).items():  # type: ignore[arg-type]
            per_layer[name][layer] = s.float().cpu()  # type: ignore[index]

    with torch.inference_mode(), capture(loaded.model, on_layer) as session:
        for batch in batches:
            prepare_batch(list(detectors), batch)
            current["batch"] = batch
            current["per_layer"] = {d.name: [None] * L for d in detectors}
            before = session.calls
            forward(loaded, batch)
            if session.calls - before != L:
                raise HeadlabError(f"captured {session.calls - before} attention layers, expected {L}: "
                                   "unsupported architecture")
            yield {name: torch.stack(layers, dim=1).numpy()  # type: ignore[arg-type]
                   for name, layers in current["per_layer"].items()}  # type: ignore[union-attr]


def score_samples(loaded: LoadedModel, detectors: Sequence[Detector], samples: Iterable[Sample],
                  batch_size: int = 8, progress: "object | None" = None
                  ) -> Iterator[tuple[list[Sample], dict[str, np.ndarray]]]:
    """Yield ``(samples, {detector: (N, L, H[, C])})`` chunk by chunk, samples in seeded order.

    Nothing is installed in the model between yields: capture lives only while a chunk is computed.
    """
    if batch_size < 1:
        raise HeadlabError("batch size must be at least 1")
    for d in detectors:
        d.bind(loaded)
    chunk: list[Sample] = []
    for s in samples:
        if len(s.input_ids) > loaded.facts.max_length:
            raise HeadlabError(f"sample of {len(s.input_ids)} tokens exceeds {loaded.name}'s window "
                               f"({loaded.facts.max_length}); use a smaller --max-length")
        chunk.append(s)
        if len(chunk) == batch_size * CHUNK_BATCHES:
            yield chunk, score_chunk(loaded, detectors, chunk, batch_size, progress)
            chunk = []
    if chunk:
        yield chunk, score_chunk(loaded, detectors, chunk, batch_size, progress)


def score_chunk(loaded: LoadedModel, detectors: Sequence[Detector], chunk: Sequence[Sample], batch_size: int,
                progress: "object | None" = None) -> dict[str, np.ndarray]:
    """Scores of ``chunk`` in its own order (batched by length, then put back)."""
    order = sorted(range(len(chunk)), key=lambda i: -len(chunk[i].input_ids))
    groups = [order[i:i + batch_size] for i in range(0, len(order), batch_size)]
    device = device_of(loaded.model)
    batches = (collate([chunk[i] for i in idx], loaded.pad_id, loaded.facts.causal, device) for idx in groups)
    out: dict[str, np.ndarray] = {}
    with contextlib.closing(score_batches(loaded, detectors, batches)) as results:
        for idx, scores in zip(groups, results):
            for name, block in scores.items():
                if name not in out:
                    out[name] = np.full((len(chunk),) + block.shape[1:], np.nan, dtype=np.float32)
                out[name][idx] = block
            if progress is not None:
                progress.update(len(idx))  # type: ignore[attr-defined]
    return out
