"""The exact single-head ablation sweep, with reuse of work (``headlab importance``).

The naive sweep runs the whole model once per head: ``L·H`` full passes per batch. The effect of ablating a head
in layer ``l`` only depends on layers ``l..L-1``, and every head of a layer needs the same input to layer ``l``.
So, per batch, headlab

1. runs the plain model once and keeps each layer's output (a forward hook per layer);
2. for layer ``l``, stacks ``g`` copies of the batch along the batch axis (copy ``i`` ablates head ``i``) and
   runs the model on it with layers ``0..l-1`` *replayed*: their ``forward`` is temporarily replaced by one that
   returns the kept output of layer ``l-1`` (repeated ``g`` times), so nothing below ``l`` is recomputed.

Embeddings, masks and position tables are still built by the model's own forward (cheap), which is what keeps
this generic: no per-architecture re-implementation of a layer's call signature. The result equals the naive
sweep to float rounding (a test checks this on tiny Llama, BERT and MPNet models and on ``minilm-l6``).

Cost per batch in layer-passes: naive ``L·H·L``, reused ``H·Σ_l (L-l) = H·L(L+1)/2``, i.e. about half, plus
the larger batches' better use of the matrix kernels; the language-model head (a big share of a small decoder's
compute) is paid per head in both. ``bench/ablation_sweep.py`` measures both on the same data.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator

import numpy as np
import torch
from torch import nn

from headlab.ablation.heads import ablated, output_projections, replay_below
from headlab.attention.adapters import parts
from headlab.attention.interventions import Gate, intervene
from headlab.errors import HeadlabError
from headlab.models import LoadedModel
from headlab.progress import bar as progress_bar


def layer_stack(model: nn.Module, n_layers: int) -> nn.ModuleList:
    """The model's list of Transformer blocks (the family's adapter names it)."""
    return parts(model, n_layers).blocks


@contextlib.contextmanager
def _record_outputs(layers: nn.ModuleList, into: list[Any]) -> Iterator[None]:
    handles = [blk.register_forward_hook(lambda _m, _a, out: into.append(out)) for blk in layers]
    try:
        yield
    finally:
        for h in handles:
            h.remove()


def _repeat(out: Any, g: int) -> Any:
    """A block's recorded output (a tensor, or a tuple starting with one), with its batch repeated ``g`` times."""
    if isinstance(out, torch.Tensor):
        return out.repeat(g, *([1] * (out.ndim - 1)))
    if isinstance(out, tuple) and out and isinstance(out[0], torch.Tensor):
        return (_repeat(out[0], g), *out[1:])
    raise HeadlabError(f"unexpected Transformer block output {type(out).__name__}; cannot replay it")


def _per_copy_heads(model: nn.Module, n_layers: int, n_heads: int, layer: int, heads: list[int]) -> Any:
    """Copy ``i`` of a batch stacked ``len(heads)`` times has head ``heads[i]`` of ``layer`` zeroed."""
    output_projections(model, n_layers)
    gate = torch.ones(len(heads), n_heads)  # (g, H)
    for i, h in enumerate(heads):
        gate[i, h] = 0.0
    return intervene(model, {layer: [Gate(gate)]})


class _Stacked:
    """A batch stacked ``g`` times along the batch axis (the interface the metric functions read)."""

    def __init__(self, b: Any, g: int):
        self.input_ids = b.input_ids.repeat(g, 1)
        self.attention_mask = b.attention_mask.repeat(g, 1)


TokenMetric = Callable[[LoadedModel, Any, "torch.Tensor | None"], np.ndarray]


def _sum_count(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    ok = ~np.isnan(values)
    return np.where(ok, values, 0.0).sum(-1), ok.sum(-1)


def exact_sweep(loaded: LoadedModel, batches: list[Any], base_hidden: list[torch.Tensor] | None,
                token_metric: TokenMetric, *, group_tokens: int | None = None, progress: bool) -> np.ndarray:
    """(L, H) mean per-token metric with each head alone zero-ablated (:func:`sample_sweep`, pooled)."""
    sums, counts = sample_sweep(loaded, batches, base_hidden, token_metric, group_tokens=group_tokens,
                                progress=progress)
    return sums.sum(0) / np.maximum(counts.sum(0), 1)


def sample_sweep(loaded: LoadedModel, batches: list[Any], base_hidden: list[torch.Tensor] | None,
                 token_metric: TokenMetric, *, group_tokens: int | None = None, progress: bool
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Per sample (N, L, H): the sum and count of the per-token metric with each head alone zero-ablated, reusing
    the plain pass below each layer (per sample, so intervals can be drawn over samples).

    ``token_metric(loaded, batch, base_hidden)`` returns per-token values (B, T), NaN where not scored.
    ``group_tokens`` bounds the stacked batch (copies × batch tokens). Default: 4096 tokens, and for a model with
    a language-model head at most 64 MB of float32 logits per pass (a 49k vocabulary allows ~340 tokens): the
    logits and their log-softmax are memory-bound, so bigger stacks run slower per token, not faster.
    """
    f = loaded.facts
    L, H = f.n_layers, f.n_heads
    layers = layer_stack(loaded.model, L)
    if group_tokens is None:
        head = getattr(loaded.model, "get_output_embeddings", lambda: None)() if f.causal else None
        vocab = int(head.weight.shape[0]) if head is not None else 0
        group_tokens = min(4096, (64 << 20) // (4 * vocab)) if vocab else 4096
    N = sum(len(b.input_ids) for b in batches)
    sums, counts = np.zeros((N, L, H)), np.zeros((N, L, H))
    first = 0  # the batch's first sample
    bar = progress_bar(len(batches) * L * H, f"importance {loaded.name}", "head", progress)
    with torch.inference_mode():
        for bi, b in enumerate(batches):
            outs: list[Any] = []
            with _record_outputs(layers, outs):
                loaded.model(input_ids=b.input_ids, attention_mask=b.attention_mask.long(),
                             **({"use_cache": False} if f.causal else {}))
            B, T = b.input_ids.shape
            g_max = max(1, group_tokens // (B * T))
            for layer in range(L):
                for start in range(0, H, g_max):
                    heads = list(range(start, min(H, start + g_max)))
                    g = len(heads)
                    ref = None if base_hidden is None else base_hidden[bi].repeat(g, 1, 1)
                    replay = (replay_below(layers, layer, _repeat(outs[layer - 1], g)) if layer
                              else contextlib.nullcontext())
                    with replay, _per_copy_heads(loaded.model, L, H, layer, heads):
                        vals = token_metric(loaded, _Stacked(b, g), ref)  # (g·B, T)
                    s, n = _sum_count(vals.reshape(g, B, T))  # (g, B)
                    sums[first:first + B, layer, heads] += s.T
                    counts[first:first + B, layer, heads] += n.T
                    if bar is not None:
                        bar.update(g)
            first += B
    if bar is not None:
        bar.close()
    return sums, counts


def naive_sweep(
    loaded: LoadedModel,
    batches: list[Any],
    base_hidden: list[torch.Tensor] | None,
    token_metric: TokenMetric,
    *,
    progress: bool,
) -> np.ndarray:
    """(L, H) the same quantity as :func:`exact_sweep`, by one full pass per head and batch (the baseline)."""
    f = loaded.facts
    out = np.zeros((f.n_layers, f.n_heads))
    bar = progress_bar(f.n_layers * f.n_heads, f"naive sweep {loaded.name}", "head", progress)
    with torch.inference_mode():
        for layer in range(f.n_layers):
            for head in range(f.n_heads):
                s = n = 0.0
                with ablated(loaded.model, f.n_layers, f.n_heads, {layer: [head]}):
                    for i, b in enumerate(batches):
                        vals = token_metric(loaded, b, None if base_hidden is None else base_hidden[i])
                        ds, dn = _sum_count(vals.reshape(1, -1))
                        s, n = s + float(ds[0]), n + float(dn[0])
                out[layer, head] = s / max(n, 1)
                if bar is not None:
                    bar.update(1)
    if bar is not None:
        bar.close()
    return out
