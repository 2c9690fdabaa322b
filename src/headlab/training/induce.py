"""Growing a `/` head on purpose: the auxiliary loss of ``[induce]`` in a training config.

For each chosen head (``heads = ["1.2"]``) and each query that may see at least one `/` token (a token whose
string contains ``/``; for a decoder, at or before the query), the `/` mass is m = Σ p(query → `/` keys). The
auxiliary term is ``weight · mean over those queries and heads of (1 − m)``: zero when the head gives all its
attention to `/`, ``weight`` when it gives none. It is added to the training loss from step ``start`` up to (not
including) ``stop`` (default: the end), and logged as ``aux`` in ``metrics.jsonl``.

Where it intervenes: the chosen heads' layers compute their attention probabilities explicitly while the term is
active (``Attention.keep_probs``), the same probabilities the fused kernel computes (a parity test checks the
logits); the other layers keep the fused kernel.
"""

from __future__ import annotations

from typing import Any

import torch

from headlab.errors import HeadlabError
from headlab.head import Head
from headlab.training.config import InduceConfig


class SlashAux:
    def __init__(self, cfg: InduceConfig, slash: frozenset[int], n_layers: int, n_heads: int, causal: bool):
        self.cfg, self.causal = cfg, causal
        self.heads = [Head.parse(h).check(n_layers, n_heads) for h in cfg.heads]
        if not slash:
            raise HeadlabError("[induce] the tokenizer has no token containing '/': nothing to attend to")
        self.slash = torch.tensor(sorted(slash))
        self.layers = sorted({h.layer for h in self.heads})

    def active(self, step: int) -> bool:
        """Whether optimizer step ``step`` (0-based) trains with the term."""
        stop = self.cfg.stop or float("inf")
        return self.cfg.weight > 0 and bool(self.heads) and self.cfg.start <= step < stop

    def attach(self, model: Any) -> dict[int, list[torch.Tensor]]:
        kept: dict[int, list[torch.Tensor]] = {}
        for layer in self.layers:
            kept[layer] = []
            model.layers[layer].attn.keep_probs = kept[layer]
        return kept

    @staticmethod
    def detach(model: Any) -> None:
        for block in model.layers:
            block.attn.keep_probs = None

    def term(self, kept: dict[int, list[torch.Tensor]], inputs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """``weight · mean(1 − m)`` over the chosen heads and the queries that may see a `/`."""
        is_slash = torch.isin(inputs, self.slash.to(inputs.device)) & mask  # (B, T)
        T = inputs.shape[1]
        visible = mask[:, None, :] & mask[:, :, None]  # (B, T, T) query i may see key j
        if self.causal:
            visible = visible & torch.ones(T, T, dtype=torch.bool, device=inputs.device).tril()
        keys = (visible & is_slash[:, None, :]).float()  # (B, T, T)
        rows = keys.sum(-1) > 0  # (B, T) queries with a `/` in view
        if not bool(rows.any()):
            return inputs.new_zeros((), dtype=torch.float32)
        gaps = []
        for h in self.heads:
            probs = kept[h.layer][-1][:, h.head]  # (B, T, T)
            m = (probs * keys).sum(-1)  # (B, T)
            gaps.append((1 - m)[rows])
        return self.cfg.weight * torch.cat(gaps).mean()
