"""What an ablation is measured by, per token and per sample.

* decoders with a language-model head: ``loss`` (next-token cross-entropy, nats) and ``accuracy`` (argmax hit,
  a share; reports add percentage points) of each predicted token;
* encoders without one (the packaged sentence encoders): ``cosine_distance`` 1 − cos between the ablated and
  the plain final hidden state of each token, and ``pooled_cosine_distance``, the same for the mean-pooled
  sentence embedding (the pooling of the packaged sentence-transformers models), one value per sample.

Token sets. A *symbol* position is a `/` token (corpus text) or a marked target (stimuli: the `/` or its control
symbol). ``near``: decoders, targets within ``k`` tokens after a symbol; encoders, the symbol positions.
``away``: corpus, every token of samples without the symbol; stimuli, the other tokens of the same sample.
A sample's value is the mean over its tokens in the set (the pooled metric: the sample's pooled value).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import torch

from headlab.attention.padding import pad_right
from headlab.census.engine import collate
from headlab.corpus import Sampler, documents
from headlab.errors import HeadlabError
from headlab.models import LoadedModel, load, resolve
from headlab.models.loaded import device_of
from headlab.models.loader import declares_causal_lm

DECODER_METRICS = ("loss", "accuracy")
ENCODER_METRICS = ("cosine_distance", "pooled_cosine_distance")


def metric_names(loaded: LoadedModel) -> tuple[str, ...]:
    return DECODER_METRICS if loaded.facts.causal else ENCODER_METRICS


def token_metrics(loaded: LoadedModel, batch: Any, base_hidden: torch.Tensor | None) -> tuple[np.ndarray, ...]:
    """Per-token values (B, T) of each of :func:`metric_names`; NaN where not scored.

    Encoders need ``base_hidden`` (the plain final hidden states (B, T, D)); without it the hidden states
    themselves are returned, as a one-tuple (that is how the reference is built)."""
    out = loaded.model(input_ids=batch.input_ids, attention_mask=batch.attention_mask.long(),
                       **({"use_cache": False} if loaded.facts.causal else {}))
    mask = batch.attention_mask
    if loaded.facts.causal:
        logits = out.logits[:, :-1].float()  # (B, T-1, V): predicts tokens 1..T-1
        tgt = batch.input_ids[:, 1:]
        # rows of the vocabulary, not (B, V, T): a reduction along contiguous memory, 2.3x faster on smollm2-135m
        loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), tgt.flatten(), reduction="none").view_as(tgt)
        acc = (logits.argmax(-1) == tgt).float()
        valid = mask[:, 1:]
        pad = lambda x: torch.cat([torch.full_like(x[:, :1], float("nan")), torch.where(valid, x, float("nan"))], 1)  # noqa: E731
        return pad(loss).numpy(), pad(acc).numpy()
    hidden = out.last_hidden_state.float()  # (B, T, D)
    if base_hidden is None:
        return (hidden.numpy(),)
    cos = torch.nn.functional.cosine_similarity(hidden, base_hidden, dim=-1)
    m = mask[..., None].float()
    pool = lambda h: (h * m).sum(1) / m.sum(1).clamp_min(1)  # noqa: E731  (B, D)
    pooled = 1 - torch.nn.functional.cosine_similarity(pool(hidden), pool(base_hidden), dim=-1)  # (B,)
    nan = torch.tensor(float("nan"))
    return (torch.where(mask, 1 - cos, nan).numpy(),
            torch.where(mask, pooled[:, None].expand_as(cos), nan).numpy())


def symbol_mask(batch: Any, symbol_ids: frozenset[int]) -> torch.Tensor:
    """(B, T) bool: marked stimulus targets if the batch has any, else the tokens in ``symbol_ids``."""
    marked = batch.cache.get("marked") if hasattr(batch, "cache") else None
    if marked is not None and bool(marked.any()):
        return (marked > 0) & batch.attention_mask
    is_sym = torch.zeros_like(batch.input_ids, dtype=torch.bool)
    for i in symbol_ids:
        is_sym |= batch.input_ids == i
    return is_sym & batch.attention_mask


def token_sets(batch: Any, symbol: torch.Tensor, causal: bool, k: int, stimuli: bool) -> tuple[np.ndarray, np.ndarray]:
    """(near, away) bool masks (B, T) as defined in the module docstring."""
    if causal:  # target t is within k tokens after a symbol at t-k..t-1
        near = torch.zeros_like(symbol)
        for s in range(1, k + 1):
            near[:, s:] |= symbol[:, :-s]
        near &= batch.attention_mask
    else:
        near = symbol
    if stimuli:
        away = batch.attention_mask & ~near & ~symbol
    else:
        away = ~symbol.any(-1, keepdim=True) & batch.attention_mask
    return near.numpy(), away.numpy()


def per_sample(values: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """(B,) mean of ``values`` over each sample's masked, non-NaN tokens; NaN for a sample with none."""
    ok = mask & ~np.isnan(values)
    n = ok.sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, np.where(ok, values, 0.0).sum(-1) / np.maximum(n, 1), np.nan)


def load_for_metric(model: str | LoadedModel, device: str, dtype: str) -> LoadedModel:
    """Decoders need their language-model head for the loss; encoders are measured on hidden states. The config
    says which before any weight is read, so a decoder loads once; where it cannot, the model loads twice."""
    head = False if isinstance(model, LoadedModel) else bool(declares_causal_lm(model))
    loaded = resolve(model, device=device, dtype=dtype, lm_head=head)
    if not isinstance(model, LoadedModel) and loaded.facts.causal and not head:
        loaded = load(model, lm_head=True, device=device, dtype=dtype)
    if loaded.facts.causal and getattr(loaded.model, "get_output_embeddings", lambda: None)() is None:
        raise HeadlabError(f"{loaded.name}: decoder metrics need a model loaded with lm_head=True")
    return loaded


def metric_batches(loaded: LoadedModel, samples: int, window: int, seed: int, batch_size: int,
                   corpus: Sequence[str] | None) -> list[Any]:
    """Padded batches of ``samples`` seeded corpus windows, for the metrics of importance and pruning."""
    f = loaded.facts
    picked = list(Sampler(loaded.tokenizer, min(window, f.max_length), seed=seed).samples(
        documents(list(corpus) if corpus else None), samples))
    if not picked:
        raise HeadlabError("the corpus produced no samples")
    dev = device_of(loaded.model)
    return [collate(picked[i:i + batch_size], loaded.pad_id, f.causal, dev) for i in range(0, len(picked), batch_size)]


def reference_hidden(loaded: LoadedModel, batches: list[Any]) -> list[torch.Tensor] | None:
    """Plain final hidden states per batch (the reference of the encoder metrics); None for decoders."""
    if loaded.facts.causal:
        return None
    with torch.inference_mode():
        return [loaded.model(input_ids=b.input_ids, attention_mask=b.attention_mask.long()).last_hidden_state.float()
                for b in batches]


def window_losses(loaded: Any, ids: list[list[int]], batch_size: int) -> np.ndarray:
    """Mean next-token cross-entropy (nats) of each window under the model (a decoder with its LM head)."""
    out = []
    dev = next(loaded.model.parameters()).device
    pad = loaded.tokenizer.pad_token_id if loaded.tokenizer.pad_token_id is not None else 0
    with torch.no_grad():
        for i in range(0, len(ids), batch_size):
            x, m = pad_right(ids[i:i + batch_size], int(pad))
            logits = loaded.model(input_ids=x.to(dev), attention_mask=m.long().to(dev), use_cache=False).logits
            nll = torch.nn.functional.cross_entropy(logits[:, :-1].float().transpose(1, 2), x[:, 1:].to(dev),
                                                    reduction="none")  # (B, T-1)
            valid = m[:, 1:].to(dev).float()
            out.append((nll * valid).sum(1) / valid.sum(1).clamp_min(1))
    return torch.cat(out).cpu().numpy().astype(np.float64) if out else np.zeros(0)
