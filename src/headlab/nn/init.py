"""Initialization schemes of :class:`headlab.nn.Transformer` (``[model] init`` in a training config).

Every scheme starts from the default (every linear and embedding weight N(0, 0.02²), biases 0, as GPT-2 and
nanoGPT do) and changes only what its row says:

``default``      nothing more.
``small-qk``     query and key projections N(0, (0.02/10)²): attention starts exactly uniform-like, and the
                 logits grow only as training asks (in the spirit of μP's zero-initialized queries, Yang et al.
                 2021, "Tensor Programs V", section on attention).
``gpt2-scaled``  every residual-branch output projection (attention ``o_proj``, the MLP's second linear) N(0,
                 (0.02/√(2·n_layers))²), the scaled init of Radford et al. 2019 ("Language Models are
                 Unsupervised Multitask Learners", section 2.3).
``fan-in``       every linear weight N(0, 1/fan_in) (LeCun's normal init; PyTorch's own default is a uniform
                 of about this width): at d = 128, 4.4x GPT-2's 0.02, so q·k logits start larger and an
                 induction step (a previous-token head composed with a matching head) leaves its plateau in
                 hundreds of steps, where N(0, 0.02²) holds a 2-layer decoder at chance on one lookup for
                 thousands (``results/retrieval/init``). Embeddings keep N(0, 0.02²).
``mimetic``      each layer's W_q·W_kᵀ ≈ α·Z + β·I with Z ~ N(0, 1/D) and (α, β) = (0.7, 0.7) (ours, from the
                 paper's ViT setting), split across heads through an SVD, so every head starts attending a
                 little more to tokens like the query (Trockman & Kolter 2023, "Mimetic Initialization of
                 Self-Attention Layers", ICML). The value/output half of the paper (W_v·W_o ≈ −I) is left out:
                 the question here is where attention goes, not signal propagation.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import torch
from torch import nn

STD = 0.02


def _default(model: Any) -> None:
    del model


def _small_qk(model: Any) -> None:
    for block in model.layers:
        for p in (block.attn.q_proj, block.attn.k_proj):
            nn.init.normal_(p.weight, std=STD / 10)


def _gpt2_scaled(model: Any) -> None:
    std = STD / math.sqrt(2 * model.cfg.n_layers)
    for block in model.layers:
        nn.init.normal_(block.attn.o_proj.weight, std=std)
        nn.init.normal_(block.mlp[2].weight, std=std)


def _fan_in(model: Any) -> None:
    for m in model.modules():
        if isinstance(m, nn.Linear) and m.weight is not getattr(model, "embed", nn.Embedding(1, 1)).weight:
            nn.init.normal_(m.weight, std=m.in_features ** -0.5)


def _mimetic(model: Any, alpha: float = 0.7, beta: float = 0.7) -> None:
    D = model.cfg.d_model
    for block in model.layers:
        M = alpha * torch.randn(D, D) / math.sqrt(D) + beta * torch.eye(D)  # the target of W_q^T W_k  (D, D)
        U, S, Vh = torch.linalg.svd(M)
        root = S.sqrt()
        with torch.no_grad():  # q = x W_q^T, k = x W_k^T: q·k = x (W_q^T W_k) x^T, summed over the heads
            block.attn.q_proj.weight.copy_((U * root).T)
            block.attn.k_proj.weight.copy_((Vh.T * root).T)


INITS: dict[str, Callable[[Any], None]] = {"default": _default, "small-qk": _small_qk,
                                           "gpt2-scaled": _gpt2_scaled, "fan-in": _fan_in, "mimetic": _mimetic}


def _base(m: nn.Module) -> None:
    if isinstance(m, (nn.Linear, nn.Embedding)):
        nn.init.normal_(m.weight, std=STD)
        bias = getattr(m, "bias", None)
        if bias is not None:
            nn.init.zeros_(bias)


def apply_init(model: Any) -> None:
    """The default init of every weight (in ``Module.apply`` order, so a seed gives the same weights as it always
    has), then the config's scheme on top."""
    model.apply(_base)
    INITS[model.cfg.init](model)
