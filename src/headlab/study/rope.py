"""The slash-pattern (diagonal) analysis of Cheng et al. (2026) for RoPE models.

For every head, streaming over natural-text samples:
* SlashScore(Δ), Δ = 0..K, on natural text and on prompts of uniformly random vocabulary tokens (their
  out-of-distribution test); (κ, Δ)-slash-dominant heads are those with SlashScore(Δ) ≥ κ;
* the rank-one share σ1² / Σσ² of the head's pre-RoPE queries and keys (the token × head_dim matrix over all
  real tokens), from a streamed Gram matrix Σ q qᵀ — its eigenvalues are the squared singular values;
* the share of the query/key energy in each RoPE frequency band: rotate_half pairs dimension i with i + d/2
  at frequency θ_i = base^(−2i/d), so band energy = Σ over its pairs of (q_i² + q_{i+d/2}²); the d/2 pairs are
  split into thirds: ``high`` (fastest rotation, i small), ``medium``, ``low``.
"Pre-RoPE" is the q/k site of the family's adapter: the output of ``q_norm``/``k_norm`` where the model has them
(Gemma3, Qwen3, OLMo2), else of the q/k projections (or their part of a fused projection).
κ is ours to choose (the paper's values were not found); the default 0.5 is labelled as ours in the output.
"""

from __future__ import annotations

import contextlib
import random
from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np
import torch
from torch import nn

from headlab.attention.adapters import parts
from headlab.attention.interventions import Record, intervene
from headlab.census.engine import collate, score_batches
from headlab.census.settings import DEFAULT_MAX_OFFSET
from headlab.corpus import Sample, Sampler, documents, special_tokens
from headlab.detectors import make
from headlab.errors import HeadlabError
from headlab.head import name as head_name
from headlab.models import LoadedModel
from headlab.models.loaded import device_of
from headlab.result import per_head

BANDS = ("high", "medium", "low")


@contextlib.contextmanager
def capture_qk(model: nn.Module, head_dim: int, on_qk: Any) -> Iterator[None]:
    """Call ``on_qk(layer, "q"|"k", x (B, T, heads, d))`` with pre-RoPE queries and keys (the adapter's q/k
    sites, read with :class:`headlab.attention.interventions.Record`); hooks always removed."""
    n_layers = len(parts(model).blocks)
    with intervene(model, {l: [Record(lambda x, _l=l: on_qk(_l, "q", x))] for l in range(n_layers)}, site="q"), \
            intervene(model, {l: [Record(lambda x, _l=l: on_qk(_l, "k", x))] for l in range(n_layers)}, site="k"):
        yield


@dataclass
class RopeResult:
    """SlashScore means (L, H, K+1) on natural and random prompts; rank-one shares (L, heads); band shares
    (L, heads, 3) for q (query heads) and k (key/value heads)."""

    slash_natural: np.ndarray
    slash_random: np.ndarray
    rank1_q: np.ndarray
    rank1_k: np.ndarray
    bands_q: np.ndarray
    bands_k: np.ndarray
    kappa: float
    n_natural: int
    n_random: int

    def slash_dominant(self, which: str = "natural") -> np.ndarray:
        """(L, H, K+1) bool: SlashScore(Δ) ≥ κ."""
        return (self.slash_natural if which == "natural" else self.slash_random) >= self.kappa

    def to_json(self) -> dict[str, Any]:
        L, H, K1 = self.slash_natural.shape
        kv = self.rank1_k.shape[1]
        sd_nat, sd_rnd = self.slash_dominant("natural"), self.slash_dominant("random")
        return {
            "kappa": self.kappa, "kappa_source": "ours (the paper's values were not found)", "n_kv_heads": kv,
            "n_natural": self.n_natural, "n_random": self.n_random,
            "slash_dominant_per_delta": {str(d): {"natural": int(sd_nat[..., d].sum()),
                                                  "random": int(sd_rnd[..., d].sum())} for d in range(K1)},
            "heads": [{"layer": l, "head": h, "name": head_name(l, h),
                       "slash_natural": [float(x) for x in self.slash_natural[l, h]],
                       "slash_random": [float(x) for x in self.slash_random[l, h]],
                       "rank1_q": float(self.rank1_q[l, h]), "rank1_k": float(self.rank1_k[l, h * kv // H]),
                       "bands_q": dict(zip(BANDS, map(float, self.bands_q[l, h]))),
                       "bands_k": dict(zip(BANDS, map(float, self.bands_k[l, h * kv // H])))}
                      for l in range(L) for h in range(H)],
        }


def rope_from_json(d: dict[str, Any]) -> RopeResult:
    """The inverse of :meth:`RopeResult.to_json` (key/value-head arrays from the first query head of each group)."""
    heads = d["heads"]
    L, H, kv = heads[-1]["layer"] + 1, heads[-1]["head"] + 1, d["n_kv_heads"]
    firsts = [h * H // kv for h in range(kv)]

    def per_kv(get: Any) -> np.ndarray:
        return per_head(heads, L, H, get)[:, firsts]

    return RopeResult(
        slash_natural=per_head(heads, L, H, lambda h: h["slash_natural"]),
        slash_random=per_head(heads, L, H, lambda h: h["slash_random"]),
        rank1_q=per_head(heads, L, H, lambda h: h["rank1_q"]), rank1_k=per_kv(lambda h: h["rank1_k"]),
        bands_q=per_head(heads, L, H, lambda h: [h["bands_q"][b] for b in BANDS]),
        bands_k=per_kv(lambda h: [h["bands_k"][b] for b in BANDS]),
        kappa=d["kappa"], n_natural=d["n_natural"], n_random=d["n_random"])


#: the (κ, Δ)-slash-dominance threshold of SlashScore (our choice: the write-up names κ without a value)
KAPPA = 0.5


def random_token_samples(loaded: LoadedModel, n: int, length: int, seed: int) -> list[Sample]:
    """``n`` prompts of ``length`` uniformly random non-special vocabulary ids (with the model's specials)."""

    rng = random.Random(seed)
    sp = special_tokens(loaded.tokenizer)
    vocab = [i for i in range(len(loaded.tokenizer)) if i not in loaded.special_ids]
    body = length - sp.count
    return [Sample(i, f"random:{i}", 0, sp.prefix + tuple(rng.choice(vocab) for _ in range(body)) + sp.suffix)
            for i in range(n)]


def rope_analysis(loaded: LoadedModel, *, n: int, seed: int, batch_size: int, length: int = 64,
                  max_offset: int = DEFAULT_MAX_OFFSET, kappa: float = KAPPA, corpus: list[str] | None = None,
                  natural: list[Sample] | None = None, randoms: list[Sample] | None = None,
                  progress: Any = None) -> RopeResult:
    """Run the slash-pattern analysis on ``n`` natural windows of the corpus (default wiki+pydoc) and ``n``
    random-token prompts of ``length`` tokens (or on the given ``natural`` / ``randoms`` samples)."""
    f = loaded.facts
    if f.position_encoding != "rope":
        raise HeadlabError(f"{loaded.name} uses {f.position_encoding} positions: the RoPE analysis needs RoPE")
    d, L = f.head_dim, f.n_layers
    gram = {"q": np.zeros((L, f.n_heads, d, d)), "k": np.zeros((L, f.n_kv_heads, d, d))}
    current: dict[str, torch.Tensor] = {}

    def on_qk(layer: int, kind: str, x: torch.Tensor) -> None:
        m = current["mask"].to(x.dtype)[:, :, None, None]  # (B, T, 1, 1): real tokens only
        xm = (x * m).double()
        gram[kind][layer] += torch.einsum("bthi,bthj->hij", xm, xm).cpu().numpy()

    if natural is None:
        natural = list(Sampler(loaded.tokenizer, length, seed=seed).samples(documents(corpus), n))
    if randoms is None:
        randoms = random_token_samples(loaded, n, length, seed)
    det = make("offset", max_offset=max_offset)
    det.bind_once(loaded)
    means = {}
    device = device_of(loaded.model)
    for name, samples in (("natural", natural), ("random", randoms)):
        def batches(samples: list[Sample] = samples) -> Iterator[Any]:
            for i in range(0, len(samples), batch_size):
                b = collate(samples[i:i + batch_size], loaded.pad_id, f.causal, device)
                current["mask"] = b.attention_mask
                yield b
        ctx = capture_qk(loaded.model, d, on_qk) if name == "natural" else contextlib.nullcontext()
        blocks = []
        with ctx, contextlib.closing(score_batches(loaded, [det], batches())) as results:  # type: ignore[type-var]
            for r in results:
                blocks.append(r["offset"])
                if progress is not None:
                    progress.update(len(r["offset"]))
        with np.errstate(invalid="ignore"):
            means[name] = np.nanmean(np.concatenate(blocks).astype(np.float64), 0)
    rank1 = {k: _rank1(g) for k, g in gram.items()}
    bands = {k: _bands(g) for k, g in gram.items()}
    return RopeResult(means["natural"], means["random"], rank1["q"], rank1["k"], bands["q"], bands["k"],
                      kappa, len(natural), len(randoms))


def _rank1(gram: np.ndarray) -> np.ndarray:
    """σ1² / Σσ² from Gram matrices (..., d, d)."""
    ev = np.linalg.eigvalsh(gram)  # ascending
    with np.errstate(invalid="ignore", divide="ignore"):
        return ev[..., -1] / ev.sum(-1)


def _bands(gram: np.ndarray) -> np.ndarray:
    """Energy share of each RoPE frequency band (high, medium, low) from the Gram diagonals (..., d, d)."""
    diag = np.diagonal(gram, axis1=-2, axis2=-1)  # (..., d)
    half = diag.shape[-1] // 2
    pair = diag[..., :half] + diag[..., half:]  # rotate_half pairs i and i + d/2
    cuts = np.array_split(np.arange(half), 3)
    total = pair.sum(-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.stack([pair[..., c].sum(-1) for c in cuts], -1) / total
