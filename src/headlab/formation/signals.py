"""Gradient signals per head, logged during training (``signals.jsonl``).

Every ``grad_every`` steps, on the run's held-out probe windows (all contain `/`), one extra forward and
backward of the training loss with the attention logits kept (explicit attention, not the fused kernel), and
``torch.autograd.grad`` — so the training gradients are untouched. Per head h of layer l:

* ``w_q``, ``w_k``, ``w_v``, ``w_o``: the L2 norm of ∂L/∂W restricted to the head's slice (rows h·d..(h+1)·d
  of the query/key/value projections, columns of the output projection);
* ``logit_slash``: mean |∂L/∂a_ij| over (query i, key j) pairs the query may see where key j is a `/` token,
  a_ij being the pre-softmax attention logit; ``logit_other``: the same over the other visible keys.
Each row of ``signals.jsonl``: ``{"step", "signals": {name: [[L x H]]}}``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from headlab.attention.adapters import parts
from headlab.io import AppendLog

SIGNALS = ("w_q", "w_k", "w_v", "w_o", "logit_slash", "logit_other")


def head_signals(model: Any, ids: torch.Tensor, mask: torch.Tensor, is_slash: torch.Tensor,
                 labels: torch.Tensor) -> dict[str, list[list[float]]]:
    """The signals of :data:`SIGNALS` as (L, H) nested lists for one probe batch."""
    cfg = model.cfg
    H, d = cfg.n_heads, cfg.head_dim
    attns: list[Any] = parts(model).attention  # headlab.nn attention: q/k/v/o projections and a logits sink
    sinks: list[list[torch.Tensor]] = [[] for _ in attns]
    was_training = model.training
    model.eval()  # no dropout in the measurement
    try:
        for a, s in zip(attns, sinks):
            a.logits_sink = s
        logits = model(ids, mask).logits
        if cfg.kind == "decoder":
            logits = logits[:, :-1]
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), labels.reshape(-1), ignore_index=-100)
        weights = [p for a in attns for p in (a.q_proj.weight, a.k_proj.weight, a.v_proj.weight, a.o_proj.weight)]
        att_logits = [s[0] for s in sinks]
        grads = torch.autograd.grad(loss, weights + att_logits)
    finally:
        for a in attns:
            a.logits_sink = None
        model.train(was_training)
    L = len(attns)
    out: dict[str, list[list[float]]] = {k: [] for k in SIGNALS}
    T = ids.shape[1]
    visible = mask[:, None, :].expand(-1, T, -1).clone()  # (B, T, T) query may see key
    if cfg.kind == "decoder":
        visible &= torch.ones(T, T, dtype=torch.bool).tril()
    visible &= mask[:, :, None]
    slash_keys = visible & is_slash[:, None, :]
    other_keys = visible & ~is_slash[:, None, :]
    for layer in range(L):
        gq, gk, gv, go = grads[4 * layer: 4 * layer + 4]
        ga = grads[4 * L + layer].abs()  # (B, H, T, T)
        for name, g, rows in (("w_q", gq, True), ("w_k", gk, True), ("w_v", gv, True), ("w_o", go, False)):
            per = g.view(H, d, -1) if rows else g.view(-1, H, d).transpose(0, 1)
            out[name].append(per.flatten(1).norm(dim=1).tolist())
        for name, keys in (("logit_slash", slash_keys), ("logit_other", other_keys)):
            m = keys[:, None].float()  # (B, 1, T, T)
            out[name].append(((ga * m).sum((0, 2, 3)) / m.sum().clamp_min(1)).tolist())
    return out


class GradientSignals:
    """Trainer callback writing ``signals.jsonl`` every ``every`` steps (and at step 1)."""

    def __init__(self, run: Path, every: int, probe_ids: torch.Tensor, probe_mask: torch.Tensor,
                 slash: frozenset[int], kind: str, mask_id: int = 1, special: frozenset[int] = frozenset()):
        self.every = every
        self.path = Path(run) / "signals.jsonl"
        self.ids, self.mask = probe_ids, probe_mask
        self.is_slash = torch.zeros_like(probe_ids, dtype=torch.bool)
        for i in slash:
            self.is_slash |= probe_ids == i
        self.is_slash &= probe_mask
        if kind == "decoder":
            self.labels = probe_ids[:, 1:].masked_fill(~probe_mask[:, 1:], -100)
            self.inputs = probe_ids
        else:  # encoders: a fixed 15% of the other real tokens masked (seed 0), the `/` tokens left visible
            is_special = torch.zeros_like(self.is_slash)
            for i in special:
                is_special |= probe_ids == i
            pick = (torch.rand(probe_ids.shape, generator=torch.Generator().manual_seed(0)) < 0.15)
            pick &= probe_mask & ~self.is_slash & ~is_special
            self.labels = probe_ids.masked_fill(~pick, -100)
            self.inputs = probe_ids.masked_fill(pick, mask_id)
        self.log = AppendLog(self.path)

    def on_step(self, trainer: Any, step: int, loss: float) -> None:
        if self.every <= 0 or (step != 1 and step % self.every):
            return
        dev = next(trainer.model.parameters()).device
        sig = head_signals(trainer.model, self.inputs.to(dev), self.mask.to(dev), self.is_slash.to(dev),
                           self.labels.to(dev))
        self.log.write({"step": step, "signals": sig})

    def flush(self) -> None:
        self.log.flush()

    def close(self) -> None:
        self.log.close()
