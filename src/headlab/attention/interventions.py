"""Interventions on attention heads: one primitive, installed in one place.

A *site* exposes one layer's per-head activations as ``(B, T, heads, d)``; the family's adapter
(:mod:`headlab.attention.adapters`) names the module behind it:

* ``"z"``: the input of the attention output projection, i.e. each head's result before ``W_O`` (a forward
  pre-hook: the projection's bias and the other heads are untouched);
* ``"q"`` / ``"k"``: queries (H heads) and keys (Hkv heads) before RoPE (a forward hook on the adapter's
  q/k source, or the q/k part of a fused projection).

An intervention is a callable ``x -> x`` on that view: :class:`Zero`, :class:`Mean`, :class:`Patch` (activation
patching from another input; :class:`Resample` is the same replacement drawn from another sample), :class:`Gate`
(Michel et al.'s head gate; gradients reach the gate tensor) and :class:`Record` (reads, changes nothing).
:func:`intervene` installs any set of them and removes every hook on exit, exceptions included.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping, Protocol, Sequence

import torch
from torch import nn

from headlab.attention.adapters import Parts, head_dims, parts
from headlab.errors import HeadlabError

SITES = ("z", "q", "k")


class Intervention(Protocol):
    def __call__(self, x: torch.Tensor) -> torch.Tensor: ...  # (B, T, heads, d) -> same shape


def _index(heads: Sequence[int]) -> torch.Tensor:
    return torch.tensor(sorted(set(heads)), dtype=torch.long)


@dataclass
class Zero:
    """``x[:, :, heads] = 0``."""

    heads: Sequence[int]

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        x = x.clone()
        x[:, :, _index(self.heads)] = 0.0
        return x


@dataclass
class Mean:
    """``x[:, :, heads]`` replaced by a mean: ``value`` is ``(heads, d)`` (global) or ``(T_max, heads, d)``
    (per position)."""

    heads: Sequence[int]
    value: torch.Tensor

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        B, T = x.shape[:2]
        v = self.value.to(x)
        rep = v[None, None] if v.ndim == 2 else v[None, :T]  # (1, 1|T, heads, d)
        idx = _index(self.heads)
        x = x.clone()
        x[:, :, idx] = rep.expand(B, T, -1, -1)[:, :, idx]
        return x


@dataclass
class Patch:
    """``x[:, :, heads]`` replaced by the same heads' activations ``source`` ``(B, T, heads, d)`` recorded on
    another input (activation patching)."""

    heads: Sequence[int]
    source: torch.Tensor

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        if self.source.shape[:2] != x.shape[:2]:
            raise HeadlabError(f"patch source has shape {tuple(self.source.shape[:2])}, input {tuple(x.shape[:2])}")
        idx = _index(self.heads)
        x = x.clone()
        x[:, :, idx] = self.source.to(x)[:, :, idx]
        return x


class Resample(Patch):
    """Resampling ablation: a :class:`Patch` whose source is another sample of the corpus."""


@dataclass
class Gate:
    """``x * gates`` per head: ``gates`` is ``(heads,)``, or ``(G, heads)`` for a batch stacked from ``G`` copies
    (copy ``i`` gated by row ``i``). A gate with ``requires_grad`` receives ∂loss/∂gate (Michel et al., 2019)."""

    gates: torch.Tensor

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        if self.gates.ndim == 1:
            return x * self.gates.to(x.dtype)[None, None, :, None]
        G = self.gates.shape[0]
        B, T, Hs, d = x.shape
        y = x.view(G, B // G, T, Hs, d) * self.gates.to(x.dtype)[:, None, None, :, None]
        return y.view(B, T, Hs, d)


@dataclass
class Record:
    """Hands a detached copy of the activations to ``sink`` and changes nothing."""

    sink: Callable[[torch.Tensor], None]

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        self.sink(x.detach().clone())
        return x


Plan = Mapping[int, Sequence[Intervention]]  # layer -> interventions, applied in order


@contextlib.contextmanager
def intervene(model: nn.Module, plan: Plan, site: str = "z") -> Iterator[None]:
    """Apply ``plan`` at ``site`` for the duration of the block; every hook is removed on exit."""
    if site not in SITES:
        raise HeadlabError(f"unknown intervention site {site!r} ({', '.join(SITES)})")
    bound = parts(model)
    H, Hkv, d = head_dims(model)
    handles = []
    try:
        for layer, ivs in plan.items():
            if not ivs:
                continue
            if not 0 <= layer < len(bound.blocks):
                raise HeadlabError(f"layer {layer} is outside the model ({len(bound.blocks)} layers)")
            if site == "z":
                handles.append(bound.out_proj[layer].register_forward_pre_hook(_z_hook(list(ivs), H)))
            else:
                module, hook = _qk_hook(bound, layer, site, list(ivs), H, Hkv, d)
                handles.append(module.register_forward_hook(hook))
        yield
    finally:
        for h in handles:
            h.remove()


def _apply(ivs: list[Intervention], x: torch.Tensor) -> torch.Tensor:
    for iv in ivs:
        x = iv(x)
    return x


def _z_hook(ivs: list[Intervention], n_heads: int) -> Any:
    def fn(_m: nn.Module, args: tuple[Any, ...]) -> tuple[Any, ...]:
        x = args[0]  # (B, T, H*d)
        B, T, D = x.shape
        z = _apply(ivs, x.view(B, T, n_heads, D // n_heads))
        return (z.reshape(B, T, D), *args[1:])
    return fn


def _qk_hook(bound: Parts, layer: int, site: str, ivs: list[Intervention], H: int, Hkv: int, d: int
             ) -> tuple[nn.Module, Any]:
    """The module of the q/k site and a forward hook that views its output as (B, T, heads, d)."""
    a, heads = bound.adapter, (H if site == "q" else Hkv)
    if bound.q:
        module = (bound.q if site == "q" else bound.k)[layer]

        def fn(_m: nn.Module, _inp: Any, out: torch.Tensor) -> torch.Tensor | None:
            if a.qk_layout == "bhtd":
                x = out.transpose(1, 2)
            else:
                x = out.reshape(out.shape[0], out.shape[1], heads, d)
            y = _apply(ivs, x)
            if y is x:
                return None
            return y.transpose(1, 2) if a.qk_layout == "bhtd" else y.reshape(out.shape)
        return module, fn
    if not bound.qkv:
        raise HeadlabError(f"the {a.family} adapter names no query/key projection")

    def part(out: torch.Tensor) -> torch.Tensor:
        B, T = out.shape[:2]
        if a.qkv_layout == "heads":  # per head [q k v] (GPT-NeoX)
            per = out.view(B, T, H, 3 * d)
            return per[..., :d] if site == "q" else per[..., d:2 * d]
        start = 0 if site == "q" else H * d
        return out[..., start:start + heads * d].view(B, T, heads, d)

    def fused(_m: nn.Module, _inp: Any, out: torch.Tensor) -> torch.Tensor | None:
        x = part(out)
        y = _apply(ivs, x)
        if y is x:
            return None
        out = out.clone()
        part(out).copy_(y)
        return out
    return bound.qkv[layer], fused
