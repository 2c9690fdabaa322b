"""E decoders of one shape as one: the :class:`~headlab.nn.transformer.Transformer` forward over stacked weights.

Every weight of E models is stacked along a leading dimension (``embed.weight`` (E, V, D), ``layers.0.attn.q_proj
.weight`` (E, D, D), ...) and one forward runs all E at once: linear layers as batched matmuls over E, attention
as one fused kernel over the E·B folded batch. Written out rather than ``torch.func.vmap(functional_call(...))``
because vmap has no batching rule for the fused attention kernel on CPU and falls back to a loop over E (measured
in ``bench/ensemble.py``: 1.4x at E = 4 and slower than one at a time at E = 64, against this file's 4-10x).

Same arithmetic as ``Transformer.forward`` for decoders without dropout, checked member by member in
``tests/test_ensemble.py``. Shapes: E models, B batch, T tokens, D width, H heads, d head width.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from headlab.nn.transformer import ModelConfig, Transformer, _rope_tables, _rotate, sinusoidal_table

Stack = dict[str, torch.Tensor]


def stack_weights(models: list[Transformer]) -> Stack:
    """Each parameter name (tied weights once, as ``named_parameters`` lists them) -> (E, ...) copy."""
    names = [n for n, _ in models[0].named_parameters()]
    return {n: torch.stack([dict(m.named_parameters())[n].detach() for m in models]) for n in names}


def check_config(cfg: ModelConfig) -> None:
    if cfg.kind != "decoder" or cfg.dropout:
        raise ValueError("stacked training runs decoders without dropout only")


def _linear(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None = None) -> torch.Tensor:
    """x (E, N, i) @ w (E, o, i)^T [+ b (E, o)] -> (E, N, o)."""
    if b is None:
        return torch.bmm(x, w.transpose(1, 2))
    return torch.baddbmm(b[:, None], x, w.transpose(1, 2))


def _norm(x: torch.Tensor, P: Stack, name: str) -> torch.Tensor:
    y = F.layer_norm(x, x.shape[-1:])  # (E, N, D)
    return torch.addcmul(P[name + ".bias"][:, None], y, P[name + ".weight"][:, None])


def forward(cfg: ModelConfig, P: Stack, input_ids: torch.Tensor) -> torch.Tensor:
    """input_ids (E, B, T) -> logits (E, B, T, V); causal, no padding mask (right padding needs none)."""
    E, B, T = input_ids.shape
    D, H, d = cfg.d_model, cfg.n_heads, cfg.head_dim
    if T > cfg.max_length:
        raise ValueError(f"input of {T} tokens is longer than the model's window ({cfg.max_length})")
    members = torch.arange(E, device=input_ids.device)[:, None, None]
    x = P["embed.weight"][members, input_ids]  # (E, B, T, D)
    rope = None
    if cfg.positions == "learned":
        x = x + P["pos.weight"][:, None, :T]
    elif cfg.positions == "sinusoidal":
        x = x + sinusoidal_table(cfg.max_length, D)[:T].to(x)
    else:
        rope = _rope_tables(T, d, cfg.rope_theta, x.device)
    x = x.reshape(E, B * T, D)
    for i in range(cfg.n_layers):
        pre = f"layers.{i}."
        h = _norm(x, P, pre + "ln1")
        # (E·B, H, T, d) each: the E models' batches folded into one for the fused kernel
        q, k, v = (_linear(h, P[pre + f"attn.{p}_proj.weight"]).view(E * B, T, H, d).transpose(1, 2)
                   for p in "qkv")
        if rope is not None:
            q, k = _rotate(q, *rope), _rotate(k, *rope)
        z = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (E·B, H, T, d)
        z = z.transpose(1, 2).reshape(E, B * T, D)
        x = x + _linear(z, P[pre + "attn.o_proj.weight"])
        h = _norm(x, P, pre + "ln2")
        h = F.gelu(_linear(h, P[pre + "mlp.0.weight"], P[pre + "mlp.0.bias"]))  # (E, B·T, 4D)
        x = x + _linear(h, P[pre + "mlp.2.weight"], P[pre + "mlp.2.bias"])
    h = _norm(x, P, "norm")
    head = P["embed.weight"] if cfg.tie_embeddings else P["lm_head.weight"]
    return _linear(h, head).view(E, B, T, -1)  # (E, B, T, V)

