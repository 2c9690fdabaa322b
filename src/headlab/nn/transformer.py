"""A small Transformer to train from scratch, in one file you can read top to bottom.

Encoder (masked LM, bidirectional) or decoder (causal LM); pre-norm blocks of attention and an MLP; learned,
sinusoidal or rotary (RoPE) positions. Shapes: B batch, T tokens, D width, H heads, d = D / H head width.

Attention runs the fused kernel (``F.scaled_dot_product_attention``) unless a headlab capture session is
active: then it computes the probabilities explicitly and hands them to :mod:`headlab.capture` (or, under
``capture_kernel``, hands q, k, v to headlab's own fused or chunked attention), so the
detectors, the scan and the tracker see this model exactly as they see a pretrained one. ``expose_logits``
does the same for the pre-softmax logits and keeps them for a backward pass (the tracker's gradient signals).
Module names follow Hugging Face's (``layers.N.attn.o_proj``) so ablation finds the output projections.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Literal

import torch
import torch.nn.functional as F
from torch import nn

from headlab.nn.init import INITS, apply_init

Kind = Literal["decoder", "encoder"]
Positions = Literal["learned", "sinusoidal", "rope"]


@dataclass
class ModelConfig:
    """Architecture of a :class:`Transformer`. ``max_length``: the longest window in tokens."""

    kind: Kind = "decoder"
    vocab_size: int = 2048
    n_layers: int = 2
    n_heads: int = 4
    d_model: int = 128
    mlp_ratio: int = 4
    max_length: int = 128
    positions: Positions = "rope"
    rope_theta: float = 10000.0
    dropout: float = 0.0
    tie_embeddings: bool = True
    pad_id: int = 0
    mask_id: int = 1  # encoders: the [MASK] token of masked-LM training
    init: str = "default"  # initialization scheme, one of headlab.nn.init.INITS

    def __post_init__(self) -> None:
        for name, least in (("n_layers", 1), ("n_heads", 1), ("d_model", 1), ("mlp_ratio", 1), ("max_length", 2),
                            ("vocab_size", 2)):
            if getattr(self, name) < least:
                raise ValueError(f"{name} must be at least {least}, not {getattr(self, name)}")
        if not 0 <= self.dropout < 1:
            raise ValueError(f"dropout must be at least 0 and below 1, not {self.dropout}")
        if self.init not in INITS:
            raise ValueError(f"init must be one of {', '.join(INITS)}, not {self.init!r}")
        if self.kind not in ("decoder", "encoder"):
            raise ValueError(f"model kind must be decoder or encoder, not {self.kind!r}")
        if self.positions not in ("learned", "sinusoidal", "rope"):
            raise ValueError(f"positions must be learned, sinusoidal or rope, not {self.positions!r}")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model {self.d_model} is not divisible by n_heads {self.n_heads}")
        if self.positions == "rope" and (self.d_model // self.n_heads) % 2:
            raise ValueError("rope needs an even head width")

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Output:
    """What :meth:`Transformer.forward` returns (the two fields the analyses read)."""

    logits: torch.Tensor              # (B, T, V)
    last_hidden_state: torch.Tensor   # (B, T, D), after the final norm
    extras: dict[str, Any] = field(default_factory=dict)


# Set by headlab.capture while a session is active: (layer, probs (B, H, T, T)) -> None.
ProbsHook = Callable[[int, torch.Tensor], None]
# Set by headlab.capture_kernel: (layer, q, k, v (B, H, T, d), key_mask (B, T) or None, causal, scale) -> (B, H, T, d).
KernelHook = Callable[[int, torch.Tensor, torch.Tensor, torch.Tensor, "torch.Tensor | None", bool, float], torch.Tensor]


def _rope_tables(T: int, d: int, theta: float, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    inv = 1.0 / theta ** (torch.arange(0, d, 2, device=device, dtype=torch.float32) / d)  # (d/2,)
    ang = torch.arange(T, device=device, dtype=torch.float32)[:, None] * inv[None]  # (T, d/2)
    ang = torch.cat([ang, ang], -1)  # (T, d)
    return ang.cos(), ang.sin()


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    x1, x2 = x.chunk(2, -1)  # the float32 tables would promote a bf16/fp16 model's q and k: keep x's dtype
    return (x * cos + torch.cat([-x2, x1], -1) * sin).to(x.dtype)


def sinusoidal_table(T: int, D: int) -> torch.Tensor:
    pos = torch.arange(T, dtype=torch.float32)[:, None]
    div = torch.exp(torch.arange(0, D, 2, dtype=torch.float32) * (-math.log(10000.0) / D))
    pe = torch.zeros(T, D)
    pe[:, 0::2] = torch.sin(pos * div)
    pe[:, 1::2] = torch.cos(pos * div[: D // 2])
    return pe  # (T, D)


class Attention(nn.Module):
    def __init__(self, cfg: ModelConfig, layer: int):
        super().__init__()
        self.cfg, self.layer_idx = cfg, layer
        self.is_causal = cfg.kind == "decoder"
        D = cfg.d_model
        self.q_proj, self.k_proj, self.v_proj = (nn.Linear(D, D, bias=False) for _ in range(3))
        self.o_proj = nn.Linear(D, D, bias=False)
        self.probs_hook: ProbsHook | None = None    # set by headlab.capture
        self.kernel_hook: KernelHook | None = None  # set by headlab.capture_kernel
        self.logits_sink: list[torch.Tensor] | None = None  # set by expose_logits
        self.keep_probs: list[torch.Tensor] | None = None  # set by headlab.training.induce: probabilities, with grad

    def forward(self, x: torch.Tensor, key_mask: torch.Tensor | None,
                rope: tuple[torch.Tensor, torch.Tensor] | None) -> torch.Tensor:
        B, T, D = x.shape
        H, d = self.cfg.n_heads, self.cfg.head_dim
        # (B, H, T, d) each
        q, k, v = (p(x).view(B, T, H, d).transpose(1, 2) for p in (self.q_proj, self.k_proj, self.v_proj))
        if rope is not None:
            q, k = _rotate(q, *rope), _rotate(k, *rope)
        if self.kernel_hook is not None:  # headlab computes this layer's attention (fused or chunked route)
            z = self.kernel_hook(self.layer_idx, q, k, v, key_mask, self.is_causal, 1.0 / math.sqrt(d))
            return self.o_proj(z.transpose(1, 2).reshape(B, T, D))
        allowed = None  # (B, 1, T, T) bool: which keys each query may see
        if key_mask is not None:
            allowed = key_mask[:, None, None, :].expand(B, 1, T, T)
        if self.is_causal:
            tril = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
            allowed = tril[None, None] if allowed is None else allowed & tril
        p_drop = self.cfg.dropout if self.training else 0.0
        if self.probs_hook is None and self.logits_sink is None and self.keep_probs is None:
            # fused kernel; a fully padded query row would be NaN, so padded rows keep their own key
            mask = None if allowed is None else allowed | torch.eye(T, dtype=torch.bool, device=x.device)
            z = F.scaled_dot_product_attention(
                q, k, v, attn_mask=mask, dropout_p=p_drop, is_causal=self.is_causal and mask is None
            )
        else:
            logits = (q @ k.transpose(-2, -1)) / math.sqrt(d)  # (B, H, T, T)
            if self.logits_sink is not None:
                logits.retain_grad() if logits.requires_grad else None
                self.logits_sink.append(logits)
            if allowed is not None:
                logits = logits.masked_fill(~(allowed | torch.eye(T, dtype=torch.bool, device=x.device)), float("-inf"))
            probs = logits.softmax(-1)
            if self.keep_probs is not None:
                self.keep_probs.append(probs)
            if self.probs_hook is not None:
                self.probs_hook(self.layer_idx, probs)
            z = F.dropout(probs, p_drop, self.training) @ v
        z = z.transpose(1, 2).reshape(B, T, D)  # (B, T, H·d): the per-head slices the output projection mixes
        return self.o_proj(z)


class Block(nn.Module):
    def __init__(self, cfg: ModelConfig, layer: int):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(cfg.d_model), nn.LayerNorm(cfg.d_model)
        self.attn = Attention(cfg, layer)
        self.mlp = nn.Sequential(
            nn.Linear(cfg.d_model, cfg.mlp_ratio * cfg.d_model),
            nn.GELU(),
            nn.Linear(cfg.mlp_ratio * cfg.d_model, cfg.d_model),
        )
        self.drop = nn.Dropout(cfg.dropout)

    def forward(
        self, x: torch.Tensor, key_mask: torch.Tensor | None, rope: tuple[torch.Tensor, torch.Tensor] | None
    ) -> torch.Tensor:
        x = x + self.drop(self.attn(self.ln1(x), key_mask, rope))
        return x + self.drop(self.mlp(self.ln2(x)))


class Transformer(nn.Module):
    """``forward(input_ids (B, T), attention_mask (B, T) 1 = token) -> Output``."""

    headlab_native = True  # capture route: probabilities come from Attention.probs_hook

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        if cfg.positions == "learned":
            self.pos = nn.Embedding(cfg.max_length, cfg.d_model)
        elif cfg.positions == "sinusoidal":
            self.register_buffer("pos_table", sinusoidal_table(cfg.max_length, cfg.d_model), persistent=False)
        self.layers = nn.ModuleList(Block(cfg, i) for i in range(cfg.n_layers))
        self.norm = nn.LayerNorm(cfg.d_model)
        self.lm_head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        if cfg.tie_embeddings:
            self.lm_head.weight = self.embed.weight
        apply_init(self)  # headlab.nn.init: the default, then the config's scheme

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None, **_: Any) -> Output:
        B, T = input_ids.shape
        if T > self.cfg.max_length:
            raise ValueError(f"input of {T} tokens is longer than the model's window ({self.cfg.max_length})")
        x = self.embed(input_ids)  # (B, T, D)
        rope = None
        if self.cfg.positions == "learned":
            x = x + self.pos(torch.arange(T, device=x.device))[None]
        elif self.cfg.positions == "sinusoidal":
            x = x + self.pos_table[:T][None]  # type: ignore[index]
        else:
            rope = _rope_tables(T, self.cfg.head_dim, self.cfg.rope_theta, x.device)
        key_mask = None if attention_mask is None or bool(attention_mask.all()) else attention_mask.bool()
        for block in self.layers:
            x = block(x, key_mask, rope)
        h = self.norm(x)
        return Output(self.lm_head(h), h)

    def get_output_embeddings(self) -> nn.Module:
        return self.lm_head

    def n_params(self) -> int:
        return sum(p.numel() for p in self.parameters())
