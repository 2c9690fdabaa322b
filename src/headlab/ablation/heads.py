"""Where each attention head enters the residual stream, and interventions there.

A head's contribution is ``z_h @ W_O[:, h]``: its slice of the *input* of the attention output projection
(``o_proj`` in Llama/Gemma, ``attention.output.dense`` in BERT, ``o`` in MPNet, ``out_proj``/``c_proj``
elsewhere). headlab intervenes with a forward pre-hook on that projection, so the projection's bias and the
other heads are untouched. (Zeroing a slice of the projection's *output* — a common hand-made ablation —
removes part of every head's contribution instead; see the tests.)

Modes: ``zero`` (z_h = 0), ``mean`` (z_h = its mean over a reference set, global ``(d,)`` or per position
``(T, d)``), ``resample`` (z_h from another input, recorded with :func:`record_head_inputs`).
"""

from __future__ import annotations

import contextlib
import re
import warnings
from typing import Any, Iterator, Mapping, Sequence

import torch
from torch import nn

from ..errors import HeadlabError

_OUT_PROJ = re.compile(r"(self_attn|attention|attn)\.(o_proj|out_proj|c_proj|o|output\.dense)$")

HeadSet = Mapping[int, Sequence[int]]  # layer -> heads


def output_projections(model: nn.Module, n_layers: int) -> list[nn.Module]:
    """The attention output projection of each layer, in layer order."""
    found = [m for name, m in model.named_modules() if _OUT_PROJ.search(name) and hasattr(m, "weight")]
    if len(found) != n_layers:
        raise HeadlabError(f"found {len(found)} attention output projections for {n_layers} layers; "
                           "this architecture needs an adapter in headlab/ablation/heads.py")
    return found


def parse_heads(spec: str | Sequence[str], n_layers: int, n_heads: int) -> dict[int, list[int]]:
    """``"3.1,5.0"`` or ``["3.1", "5.0"]`` → ``{3: [1], 5: [0]}``, checked against the model's shape."""
    items = spec.split(",") if isinstance(spec, str) else list(spec)
    out: dict[int, list[int]] = {}
    for item in (i.strip() for i in items if i.strip()):
        try:
            layer, head = (int(x) for x in item.split("."))
        except ValueError:
            raise HeadlabError(f"head {item!r} is not of the form L.H") from None
        if not (0 <= layer < n_layers and 0 <= head < n_heads):
            raise HeadlabError(f"head {item} is outside the model ({n_layers} layers x {n_heads} heads)")
        if head in out.get(layer, []):
            warnings.warn(f"head {layer}.{head} is listed more than once; it counts once", stacklevel=2)
            continue
        out.setdefault(layer, []).append(head)
    return out


def _split(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    B, T, D = x.shape
    return x.view(B, T, n_heads, D // n_heads)  # (B, T, H, d)


@contextlib.contextmanager
def ablate(model: nn.Module, n_layers: int, n_heads: int, heads: HeadSet, mode: str = "zero",
           values: Mapping[int, torch.Tensor] | None = None) -> Iterator[None]:
    """Ablate ``heads`` for the duration of the block; hooks are removed on exit, exceptions included.

    ``values[layer]`` supplies the replacement for ``mean`` ((H, d) or (T, H, d)) and ``resample``
    ((B, T, H, d)) modes.
    """
    if mode not in ("zero", "mean", "resample"):
        raise HeadlabError(f"unknown ablation mode {mode!r} (zero, mean, resample)")
    if mode != "zero" and values is None:
        raise HeadlabError(f"mode {mode!r} needs replacement values")
    projs = output_projections(model, n_layers)
    handles = []

    def pre_hook(layer: int, hs: list[int]) -> Any:
        idx = torch.tensor(hs, dtype=torch.long)

        def fn(_m: nn.Module, args: tuple[Any, ...]) -> tuple[Any, ...]:
            x = args[0]
            z = _split(x, n_heads).clone()  # (B, T, H, d)
            if mode == "zero":
                z[:, :, idx] = 0.0
            else:
                v = values[layer].to(z.dtype)  # type: ignore[index]
                T = z.shape[1]
                if mode == "mean":
                    rep = v[None, None] if v.ndim == 2 else v[None, :T]  # (1, 1|T, H, d)
                    z[:, :, idx] = rep.expand(z.shape[0], T, -1, -1)[:, :, idx]
                else:
                    if v.shape[:2] != z.shape[:2]:
                        raise HeadlabError(f"resample source has shape {tuple(v.shape[:2])}, input {tuple(z.shape[:2])}")
                    z[:, :, idx] = v[:, :, idx]
            return (z.reshape(x.shape), *args[1:])
        return fn

    try:
        for layer, hs in heads.items():
            if hs:
                handles.append(projs[layer].register_forward_pre_hook(pre_hook(layer, sorted(set(hs)))))
        yield
    finally:
        for h in handles:
            h.remove()


@contextlib.contextmanager
def record_head_inputs(model: nn.Module, n_layers: int, n_heads: int,
                       into: dict[int, torch.Tensor]) -> Iterator[None]:
    """Record each layer's per-head inputs to the output projection, ``into[layer] = (B, T, H, d)``."""
    projs = output_projections(model, n_layers)
    handles = [p.register_forward_pre_hook(
        lambda _m, args, _l=layer: into.__setitem__(_l, _split(args[0], n_heads).detach().clone()))
        for layer, p in enumerate(projs)]
    try:
        yield
    finally:
        for h in handles:
            h.remove()
