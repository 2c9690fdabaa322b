"""LoadedModel: a model in eval mode, its tokenizer, and the architecture facts analyses need."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from functools import cached_property
from typing import Any, Literal

import torch

from headlab.attention.adapters import Adapter
from headlab.detectors.token import TOKEN
from headlab.errors import HeadlabError

#: weight values per tensor that enter :attr:`LoadedModel.identity`
IDENTITY_SAMPLE = 64

PositionEncoding = Literal["learned", "sinusoidal", "rope", "relative", "alibi", "none", "unknown"]


@dataclass(frozen=True)
class ModelFacts:
    """Architecture facts read from the config and modules.

    ``max_length`` is the longest window (tokens, special tokens included) the model accepts.
    ``causal`` is True for decoders: a query at position i sees keys 0..i only.
    """

    model_type: str
    n_layers: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    causal: bool
    position_encoding: PositionEncoding
    max_length: int
    vocab_size: int
    n_params: int

    @property
    def kind(self) -> str:
        return "decoder" if self.causal else "encoder"

    @property
    def n_total_heads(self) -> int:
        return self.n_layers * self.n_heads


@dataclass
class LoadedModel:
    """What :func:`headlab.load` returns."""

    name: str
    model: Any  # transformers.PreTrainedModel, eval mode, eager attention
    tokenizer: Any
    facts: ModelFacts
    source: str
    adapter: Adapter | None = None  # the family's architecture adapter (load() resolves it)
    # keyed by the tokenizer too: dataclasses.replace(lm, tokenizer=other) shares this dict with lm
    _ids_cache: dict[tuple[int, str, bool], frozenset[int]] = field(default_factory=dict, repr=False)
    _vocabulary_checked: Any = field(default=None, repr=False, compare=False)

    @cached_property
    def _vocab_tokens(self) -> list[str]:
        n = len(self.tokenizer)
        return [t if isinstance(t, str) else "" for t in self.tokenizer.convert_ids_to_tokens(list(range(n)))]

    @property
    def dtype(self) -> str:
        """The weights' dtype by name (``float32``, ``bfloat16``, ...), as results record it."""
        return str(next(self.model.parameters()).dtype).removeprefix("torch.")

    @cached_property
    def special_ids(self) -> frozenset[int]:
        return frozenset(int(i) for i in self.tokenizer.all_special_ids if i is not None)

    def check_vocabulary(self) -> None:
        """Refuse a tokenizer whose ids the model cannot embed (a bigger vocabulary would die inside torch, or
        score other tokens than it names)."""
        if self._vocabulary_checked is self.tokenizer:  # the engine asks per chunk; one look per tokenizer
            return
        n = len(self.tokenizer) if self.tokenizer is not None and hasattr(self.tokenizer, "__len__") else 0
        if n > self.facts.vocab_size:
            raise HeadlabError(f"{self.name}: its tokenizer has {n} tokens but the model embeds "
                               f"{self.facts.vocab_size}; give the model its own tokenizer")
        self._vocabulary_checked = self.tokenizer

    def ids_containing(self, char: str, bare: bool = TOKEN.bare) -> frozenset[int]:
        """Vocabulary ids whose token string contains ``char`` (special tokens such as ``</s>`` excluded).

        With ``bare=True`` only tokens that are ``char`` alone, optionally after a word-boundary marker
        (``Ġ``, ``▁``, ``##`` or a space), count: BPE merges like ``://`` or ``</`` are left out.
        """
        key = (id(self.tokenizer), char, bare)
        if key not in self._ids_cache:
            hits = set()
            for i, tok in enumerate(self._vocab_tokens):
                if i in self.special_ids or char not in tok:
                    continue
                if bare and _strip_marker(tok) != char:
                    continue
                hits.add(i)
            self._ids_cache[key] = frozenset(hits)
        return self._ids_cache[key]

    @cached_property
    def identity(self) -> str:
        """A fingerprint of this model: its facts, every weight's name and shape with a strided sample of its
        values, and its tokenizer's vocabulary. Another checkpoint in the same folder, another dtype or another
        tokenizer gives another identity."""
        h = hashlib.sha256(json.dumps(asdict(self.facts), sort_keys=True).encode())
        for name, p in sorted(self.model.named_parameters()):
            flat = p.detach().reshape(-1)
            # a strided sample, not every value: hashing 135M weights costs seconds at every check, and a
            # fine-tune or another checkpoint moves all of a tensor, so 64 values of each tell them apart
            sample = flat[:: max(1, flat.numel() // IDENTITY_SAMPLE)][:IDENTITY_SAMPLE].float().cpu()
            h.update(f"{name}\0{tuple(p.shape)}\0{p.dtype}\0".encode() + sample.numpy().tobytes())
        vocab = getattr(self.tokenizer, "get_vocab", None)
        if callable(vocab):
            h.update(json.dumps(sorted(vocab().items())).encode())
        return "sha256:" + h.hexdigest()[:32]

    @property
    def pad_id(self) -> int:
        # a model trained on token ids (the retrieval task) has no tokenizer: pad with 0, which no key reads
        tok = self.tokenizer
        for cand in (getattr(tok, "pad_token_id", None), getattr(tok, "eos_token_id", None), 0):
            if cand is not None:
                return int(cand)
        return 0

    def __repr__(self) -> str:
        f = self.facts
        return (f"LoadedModel({self.name!r}, {f.model_type} {f.kind}, {f.n_layers}x{f.n_heads} heads "
                f"({f.n_kv_heads} kv), {f.position_encoding} positions, max_length={f.max_length})")


def _strip_marker(tok: str) -> str:
    for marker in ("Ġ", "▁", "##", " "):
        if tok.startswith(marker):
            return tok[len(marker):]
    return tok


def read_facts(model: Any, tokenizer: Any = None) -> ModelFacts:
    """Derive :class:`ModelFacts` from a loaded transformers model (and its tokenizer's length limit)."""
    cfg = model.config
    cfg = getattr(cfg, "text_config", None) or cfg
    n_layers = int(_first(cfg, "num_hidden_layers", "n_layer", "num_layers"))
    n_heads = int(_first(cfg, "num_attention_heads", "n_head", "num_heads"))
    n_kv = int(_first(cfg, "num_key_value_heads", default=n_heads) or n_heads)
    hidden = int(_first(cfg, "hidden_size", "n_embd", "d_model"))
    head_dim = int(_first(cfg, "head_dim", default=hidden // n_heads) or hidden // n_heads)
    causal = any(bool(getattr(m, "is_causal", False)) for m in model.modules()) or bool(
        getattr(cfg, "is_decoder", False)
    ) or any(a.endswith(("ForCausalLM", "LMHeadModel")) for a in (getattr(cfg, "architectures", None) or []))
    max_len = int(_first(cfg, "max_position_embeddings", "n_positions", "n_ctx", default=0) or 0)
    tok_max = getattr(tokenizer, "model_max_length", None)
    if isinstance(tok_max, int) and 0 < tok_max < 10**7:
        # RoBERTa-style models reserve padding_idx+1 positions; the tokenizer's limit is the usable one.
        max_len = min(max_len, tok_max) if max_len else tok_max
    return ModelFacts(
        model_type=str(getattr(cfg, "model_type", "unknown")),
        n_layers=n_layers,
        n_heads=n_heads,
        n_kv_heads=n_kv,
        head_dim=head_dim,
        causal=causal,
        position_encoding=_position_encoding(cfg),
        max_length=max_len or 512,
        vocab_size=int(_first(cfg, "vocab_size", default=0) or 0),
        n_params=sum(p.numel() for p in model.parameters()),
    )


def _position_encoding(cfg: Any) -> PositionEncoding:
    mt = getattr(cfg, "model_type", "")
    if getattr(cfg, "rope_parameters", None) or getattr(cfg, "rope_theta", None) or getattr(cfg, "rotary_dim", None):
        return "rope"
    if mt in {"mpnet", "t5", "deberta", "deberta-v2"}:
        return "relative"
    if mt in {"bloom", "mpt"}:
        return "alibi"
    pet = getattr(cfg, "position_embedding_type", None)
    if pet == "absolute" or getattr(cfg, "max_position_embeddings", None) or getattr(cfg, "n_positions", None):
        return "learned"
    return "unknown"


def _first(cfg: Any, *names: str, default: Any = None) -> Any:
    for n in names:
        v = getattr(cfg, n, None)
        if v is not None:
            return v
    if default is None and names:
        raise ValueError(f"config has none of {names}")
    return default


def device_of(model: Any) -> torch.device:
    return next(model.parameters()).device
