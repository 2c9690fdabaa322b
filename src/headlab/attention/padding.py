"""Right padding, the one way headlab batches token sequences (it keeps a decoder's positions 0..n-1)."""

from __future__ import annotations

from typing import Sequence

import torch


def pad_right(rows: Sequence[Sequence[int]], pad_id: int,
              length: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """``ids`` (N, T) int64 with ``pad_id`` after each row, and ``mask`` (N, T) bool, True on real tokens.
    ``T`` is ``length`` or the longest row."""
    T = max((len(r) for r in rows), default=0) if length is None else length
    ids = torch.full((len(rows), T), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), T), dtype=torch.bool)
    for i, r in enumerate(rows):
        ids[i, : len(r)] = torch.as_tensor(list(r), dtype=torch.long)
        mask[i, : len(r)] = True
    return ids, mask
