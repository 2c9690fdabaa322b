"""``sink``: attention mass on the first position (BOS / [CLS]) and on separator tokens.

Keys counted: position 0 of every sample, plus every token that is the tokenizer's sep, cls, bos or eos
token. Per sample: mean over real queries of each query's mass on those keys. High values mark attention
sinks (Xiao et al. 2023) and BERT's [SEP] "no-op" heads (Clark et al. 2019).
"""

from __future__ import annotations

from typing import Any

import torch

from headlab.detectors.base import MASS, Batch, Detector, register


@register
class SinkDetector(Detector):
    name = "sink"
    bounds = MASS
    summary = "mass on position 0 and separator tokens ([CLS]/[SEP]/BOS/EOS)"
    label = "sink (first token)"
    meaning = "attention parked on the first token"
    hint = "text the heads find nothing specific to attend to in"
    threshold = 0.5  # ours, as the tracker's

    def __init__(self) -> None:
        self.separator_ids: frozenset[int] = frozenset()

    def bind(self, loaded: Any) -> None:
        tok = loaded.tokenizer
        ids = (tok.sep_token_id, tok.cls_token_id, tok.bos_token_id, tok.eos_token_id)
        self.separator_ids = frozenset(int(i) for i in ids if i is not None)

    def settings(self) -> dict[str, Any]:
        return {"separator_ids": sorted(self.separator_ids)}

    def prepare(self, batch: Batch) -> None:
        keys = batch.id_mask("sink-separators", self.separator_ids).clone()
        keys[:, 0] = batch.query_mask[:, 0]
        batch.key_mass("sink", batch.query_mask, keys)

    def score(self, batch: Batch) -> torch.Tensor:
        n = batch.query_mask.sum(-1)
        return batch.pair_mass("sink") / n.clamp_min(1)[:, None]
