"""Architecture adapters: where each model family keeps the parts headlab reads and intervenes on.

One row per family, written once and checked by ``tests/integration/test_families.py`` (capture against
``output_attentions``, zero-ablation against an independent pre-hook, the exact sweep against the naive one, on a
tiny random model of every family). Every module that touches a model's internals asks the adapter; nothing
searches module names or reads ``forward``'s source.

A row names, as dotted attribute paths (``blocks`` from the base model, the rest from one block):

* ``blocks``: the list of Transformer blocks, one per layer;
* ``attention``: the module that calls the attention function (what the capture routes see);
* ``out_proj``: the attention output projection, whose *input* ``(B, T, H*d)`` holds the per-head slices;
* ``q``/``k`` (with ``qk_layout``) or ``qkv`` (with ``qkv_layout``): queries and keys before RoPE;
* ``capture``: ``"interface"`` (the transformers attention-function seam) or ``"dropout"`` (softmax computed
  inline: a forward hook on the probability dropout ``probs_dropout`` sees it);
* ``softcap``/``sinks``: attributes of the attention module that the fused kernel cannot express.

Adding a family: one row here and one line in the family test (README, "Adding an architecture").
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from functools import reduce
from typing import Any, Literal

from torch import nn

from headlab.errors import HeadlabError

#: how a q/k source's output is laid out: flat ``(B, T, H*d)``, per head ``(B, T, H, d)``, or ``(B, H, T, d)``
QKLayout = Literal["flat", "bthd", "bhtd"]
#: a fused projection: ``concat`` = [q (H*d) | k (Hkv*d) | v (Hkv*d)]; ``heads`` = per head [q k v] (GPT-NeoX)
QKVLayout = Literal["concat", "heads"]


@dataclass(frozen=True)
class Adapter:
    family: str
    model_types: tuple[str, ...]
    blocks: str
    attention: str
    out_proj: str
    q: str | None = None
    k: str | None = None
    qk_layout: QKLayout = "flat"
    qkv: str | None = None
    qkv_layout: QKVLayout = "concat"
    capture: Literal["interface", "dropout", "native"] = "interface"
    probs_dropout: str | None = None
    softcap: str | None = None
    sinks: str | None = None

    def bind(self, model: nn.Module, n_layers: int) -> "Parts":
        """This family's parts in ``model``; one line naming the family and the missing part otherwise."""
        base = getattr(model, "base_model", model)
        blocks = _get(base, self.blocks)
        if not isinstance(blocks, nn.ModuleList) or len(blocks) != n_layers:
            raise HeadlabError(f"{self.family} adapter: {type(base).__name__}.{self.blocks} is not a list of "
                               f"{n_layers} blocks; this checkpoint differs from the family's layout")

        def each(path: str | None) -> list[Any]:
            if path is None:
                return []
            try:
                return [_get(b, path) for b in blocks]
            except AttributeError:
                raise HeadlabError(f"{self.family} adapter: the blocks of {type(base).__name__} have no "
                                   f"'{path}'") from None

        return Parts(self, blocks, each(self.attention), each(self.out_proj), each(self.q), each(self.k),
                     each(self.qkv), each(self.probs_dropout))


@dataclass
class Parts:
    """An adapter bound to one model instance: the modules, per layer."""

    adapter: Adapter
    blocks: nn.ModuleList
    attention: list[Any]  # family-specific modules: their attributes (layer_idx, scaling, hooks) vary
    out_proj: list[nn.Module]
    q: list[nn.Module]
    k: list[nn.Module]
    qkv: list[nn.Module]
    probs_dropout: list[nn.Module]

    def layer_of(self) -> dict[int, int]:
        """id(attention module) -> layer."""
        return {id(m): i for i, m in enumerate(self.attention)}


def _get(obj: Any, path: str) -> Any:
    return reduce(getattr, path.split("."), obj)


_BERT: dict[str, Any] = dict(blocks="encoder.layer", attention="attention.self", out_proj="attention.output.dense",
             q="attention.self.query", k="attention.self.key")
_LLAMA: dict[str, Any] = dict(blocks="layers", attention="self_attn", out_proj="self_attn.o_proj", q="self_attn.q_proj",
              k="self_attn.k_proj")

ADAPTERS: list[Adapter] = [
    # encoders
    Adapter("bert", ("bert", "roberta", "electra", "xlm-roberta", "camembert"), **_BERT),
    Adapter("distilbert", ("distilbert",), blocks="transformer.layer", attention="attention",
            out_proj="attention.out_lin", q="attention.q_lin", k="attention.k_lin"),
    Adapter("mpnet", ("mpnet",), blocks="encoder.layer", attention="attention.attn", out_proj="attention.attn.o",
            q="attention.attn.q", k="attention.attn.k", capture="dropout", probs_dropout="attention.attn.dropout"),
    # decoders
    Adapter("gpt2", ("gpt2", "gpt_bigcode"), blocks="h", attention="attn", out_proj="attn.c_proj", qkv="attn.c_attn"),
    Adapter("gpt-neox", ("gpt_neox",), blocks="layers", attention="attention", out_proj="attention.dense",
            qkv="attention.query_key_value", qkv_layout="heads"),
    Adapter("llama", ("llama", "mistral", "qwen2", "granite", "cohere", "stablelm", "smollm3"), **_LLAMA),
    Adapter("qwen3", ("qwen3",), **{**_LLAMA, "q": "self_attn.q_norm", "k": "self_attn.k_norm"},
            qk_layout="bthd"),
    Adapter("olmo2", ("olmo2",), **{**_LLAMA, "q": "self_attn.q_norm", "k": "self_attn.k_norm"}),
    Adapter("gemma2", ("gemma2",), **_LLAMA, softcap="attn_logit_softcapping"),
    Adapter("gemma3", ("gemma3_text",), **{**_LLAMA, "q": "self_attn.q_norm", "k": "self_attn.k_norm"},
            qk_layout="bhtd", softcap="attn_logit_softcapping"),
    Adapter("phi3", ("phi3",), blocks="layers", attention="self_attn", out_proj="self_attn.o_proj",
            qkv="self_attn.qkv_proj"),
    Adapter("phi", ("phi",), blocks="layers", attention="self_attn", out_proj="self_attn.dense",
            q="self_attn.q_proj", k="self_attn.k_proj"),
    Adapter("opt", ("opt",), blocks="decoder.layers", attention="self_attn", out_proj="self_attn.out_proj",
            q="self_attn.q_proj", k="self_attn.k_proj"),
    Adapter("gpt-oss", ("gpt_oss",), **_LLAMA, sinks="sinks"),
    # headlab's own small Transformer (headlab.nn): hooks built into its attention
    Adapter("headlab-nn", ("headlab",), blocks="layers", attention="attn", out_proj="attn.o_proj", q="attn.q_proj",
            k="attn.k_proj", capture="native"),
]

_BY_TYPE: dict[str, Adapter] = {}
for _a in ADAPTERS:
    for _t in _a.model_types:
        if _t in _BY_TYPE:
            raise RuntimeError(f"model type {_t!r} is claimed by adapters {_BY_TYPE[_t].family} and {_a.family}")
        _BY_TYPE[_t] = _a


def model_type(model: nn.Module) -> str:
    if getattr(model, "headlab_native", False):
        return "headlab"
    # the model's own type, not its text_config's: a multimodal wrapper nests its blocks differently
    return str(getattr(getattr(model, "config", None), "model_type", type(model).__name__))


def adapter_for(model: nn.Module) -> Adapter:
    """The adapter of ``model``'s family; one line naming the family and the supported ones otherwise."""
    mt = model_type(model)
    found = _BY_TYPE.get(mt)
    if found is None:
        raise HeadlabError(f"no headlab adapter for model family '{mt}' ({type(model).__name__}); supported: "
                           f"{', '.join(sorted(_BY_TYPE))}. Add a row to headlab/attention/adapters.py "
                           "(README: Adding an architecture)")
    return found


#: each model's bound parts: a scan of one-window batches binds them several times a batch, ~1 ms a call on
#: minilm-l6 (the dict holds no model alive)
_BOUND: "weakref.WeakKeyDictionary[nn.Module, dict[int, Parts]]" = weakref.WeakKeyDictionary()


def parts(model: nn.Module, n_layers: int | None = None) -> Parts:
    """The parts of ``model``, bound by its family's adapter once per model and layer count."""
    L = _n_layers(model) if n_layers is None else n_layers
    held = _BOUND.setdefault(model, {})
    if L not in held:
        held[L] = adapter_for(model).bind(model, L)
    return held[L]


def _n_layers(model: nn.Module) -> int:
    if getattr(model, "headlab_native", False):
        native: Any = model
        return int(native.cfg.n_layers)
    cfg = model.config  # type: ignore[union-attr]
    cfg = getattr(cfg, "text_config", None) or cfg
    return int(_attr(cfg, "num_hidden_layers", "n_layer", "num_layers", "n_layers"))


def head_dims(model: nn.Module) -> tuple[int, int, int]:
    """(query heads, key/value heads, head dim) of ``model``."""
    if getattr(model, "headlab_native", False):
        c: Any = model.cfg
        return int(c.n_heads), int(c.n_heads), int(c.head_dim)
    cfg = model.config  # type: ignore[union-attr]
    cfg = getattr(cfg, "text_config", None) or cfg
    H = int(_attr(cfg, "num_attention_heads", "n_head", "num_heads", "n_heads"))
    kv = 1 if getattr(cfg, "multi_query", False) else int(getattr(cfg, "num_key_value_heads", None) or H)
    hidden = int(_attr(cfg, "hidden_size", "n_embd", "d_model", "dim"))
    return H, kv, int(getattr(cfg, "head_dim", None) or hidden // H)


def _attr(cfg: Any, *names: str) -> Any:
    for name in names:
        if getattr(cfg, name, None) is not None:
            return getattr(cfg, name)
    raise HeadlabError(f"{type(cfg).__name__} names none of {', '.join(names)}")


def families_table() -> str:
    """The supported families as a Markdown table (the README's copy is checked against it)."""
    routes = {"interface": "attention interface", "dropout": "dropout hook (inline softmax)",
              "native": "built-in hooks"}
    rows = ["| family | model types | capture | head output (ablation site) | pre-RoPE q/k |", "|---|---|---|---|---|"]
    for a in ADAPTERS:
        qk = f"`{a.q}`, `{a.k}`" if a.q else f"`{a.qkv}` ({a.qkv_layout})"
        rows.append(f"| {a.family} | {', '.join(a.model_types)} | {routes[a.capture]} | `{a.out_proj}` | {qk} |")
    return "\n".join(rows)
