"""Where each attention head enters the residual stream, and interventions there.

A head's contribution is ``z_h @ W_O[:, h]``: its slice of the *input* of the attention output projection
(which module that is, per family, is the ``out_proj`` of :mod:`headlab.attention.adapters`). headlab intervenes
with a forward pre-hook on that projection, so the projection's bias and the other heads are untouched.
(Zeroing a slice of the projection's *output*, a common hand-made ablation, removes part of every head's
contribution instead; see the tests.)

Modes: ``zero`` (z_h = 0), ``mean`` (z_h = its mean over a reference set, global ``(d,)`` or per position
``(T, d)``), ``resample`` (z_h from another input, recorded with :func:`record_head_inputs`).
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator, Mapping, Sequence

import torch
from torch import nn

from headlab.attention.adapters import parts
from headlab.attention.interventions import Intervention, Mean, Record, Resample, Zero, intervene
from headlab.errors import HeadlabError
from headlab.head import Head
from headlab.notices import say

HeadSet = Mapping[int, Sequence[int]]  # layer -> heads


#: how an ablated head's output is replaced: by zeros, its mean over the corpus, another sample's output
MODES = ("zero", "mean", "resample")
#: the mode an ablation uses unless told otherwise: a head's output set to zero
ZERO = MODES[0]

def output_projections(model: nn.Module, n_layers: int) -> list[nn.Module]:
    """The attention output projection of each layer, in layer order (the family's adapter names it)."""
    return parts(model, n_layers).out_proj


def parse_heads(spec: str | Sequence[str], n_layers: int, n_heads: int) -> dict[int, list[int]]:
    """``"3.1,5.0"`` or ``["3.1", "5.0"]`` → ``{3: [1], 5: [0]}``, checked against the model's shape."""
    items = spec.split(",") if isinstance(spec, str) else list(spec)
    out: dict[int, list[int]] = {}
    for item in (i.strip() if isinstance(i, str) else i for i in items):
        if item == "":
            continue
        layer, head = Head.parse(item).check(n_layers, n_heads)
        if head in out.get(layer, []):
            say(f"head {layer}.{head} is listed more than once; it counts once")
            continue
        out.setdefault(layer, []).append(head)
    return out


@contextlib.contextmanager
def ablated(
    model: nn.Module,
    n_layers: int,
    n_heads: int,
    heads: HeadSet,
    mode: str = ZERO,
    values: Mapping[int, torch.Tensor] | None = None,
) -> Iterator[None]:
    """Ablate ``heads`` for the duration of the block (:func:`headlab.attention.interventions.intervene` at site ``z``);
    hooks are removed on exit, exceptions included.

    ``values[layer]`` supplies the replacement for ``mean`` ((H, d) or (T, H, d)) and ``resample``
    ((B, T, H, d)) modes.
    """
    if mode not in MODES:
        raise HeadlabError(f"unknown ablation mode {mode!r} ({', '.join(MODES)})")
    if mode != "zero" and values is None:
        raise HeadlabError(f"mode {mode!r} needs replacement values")
    output_projections(model, n_layers)  # the adapter's check, before anything is installed
    make: dict[str, Callable[[int, list[int]], Intervention]] = {
        "zero": lambda _l, hs: Zero(hs),
        "mean": lambda l, hs: Mean(hs, values[l]),  # type: ignore[index]
        "resample": lambda l, hs: Resample(hs, values[l]),  # type: ignore[index]
    }
    with intervene(model, {layer: [make[mode](layer, list(hs))] for layer, hs in heads.items() if hs}):
        yield


@contextlib.contextmanager
def replay_below(blocks: nn.ModuleList, layer: int, output: Any) -> Iterator[None]:
    """Blocks ``0..layer-1`` return ``output`` (the plain output of block ``layer-1``) without computing.

    Embeddings, masks and position tables are still built by the model's own forward (cheap), which keeps this
    generic: no per-architecture re-implementation of a block's call signature."""
    own = [(block, block.__dict__.get("forward")) for block in list(blocks)[:layer]]  # another library's wrapper
    try:
        for block, _ in own:
            block.forward = lambda *_a, **_k: output  # type: ignore[method-assign]
        yield
    finally:
        for block, forward in own:
            if forward is None:
                block.__dict__.pop("forward", None)
            else:
                block.forward = forward  # type: ignore[method-assign]


@contextlib.contextmanager
def shared_blocks(model: nn.Module, n_layers: int, first: int, cache: list[Any], i: int) -> Iterator[None]:
    """The blocks below ``first`` on batch ``i``, computed once: an intervention only in blocks ``first`` and
    above leaves everything below unchanged, so the first forward (``cache[i]`` None) records what block
    ``first - 1`` returned, and every later one replays it (:func:`replay_below`). The logits are the full
    forward's, exactly (the parity test compares them), at ``first / n_layers`` of the blocks' cost saved."""
    blocks = parts(model, n_layers).blocks
    if first <= 0:
        yield
    elif cache[i] is None:
        handle = blocks[first - 1].register_forward_hook(lambda _m, _a, out: cache.__setitem__(i, out))
        try:
            yield
        finally:
            handle.remove()
    else:
        with replay_below(blocks, first, cache[i]):
            yield


@contextlib.contextmanager
def record_head_inputs(model: nn.Module, n_layers: int, n_heads: int, into: dict[int, torch.Tensor]) -> Iterator[None]:
    """Record each layer's per-head inputs to the output projection, ``into[layer] = (B, T, H, d)``."""
    plan = {layer: [Record(lambda x, _l=layer: into.__setitem__(_l, x))] for layer in range(n_layers)}
    with intervene(model, plan):
        yield
