"""``headlab models check``: whether headlab supports a model, read from its config alone (no weights loaded)."""

from __future__ import annotations

import copy
from typing import Any

import torch

from headlab.attention.adapters import adapter_for, head_dims, parts
from headlab.attention.rules import fused_unsupported, route
from headlab.errors import HeadlabError
from headlab.models.cache import NO_REMOTE_CODE, remote_code_refusal
from headlab.models.registry import NAMED_MODELS


def skeleton(name_or_path: str) -> tuple[Any, int | None]:
    """The model built from its config on the meta device (its module tree, no memory for weights; at most
    :data:`SKELETON_LAYERS` layers of it), and the config's layer count."""
    # deferred: transformers takes ~0.9 s to import and only loading a model needs it
    from transformers import AutoConfig, AutoModel

    spec = NAMED_MODELS.get(name_or_path)
    source = str(spec.locate()) if spec is not None and spec.installed() else name_or_path
    try:
        config = AutoConfig.from_pretrained(source, **NO_REMOTE_CODE)
    except (OSError, ValueError, KeyError) as exc:
        if (refused := remote_code_refusal(exc, name_or_path)) is not None:
            raise refused from None
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise HeadlabError(f"cannot read a model config from {name_or_path}: {first}") from exc
    small, n_layers = _few_layers(config, name_or_path)
    with torch.device("meta"):
        try:
            model = AutoModel.from_config(small, attn_implementation="eager")
        except (ValueError, KeyError) as exc:
            raise HeadlabError(f"transformers cannot build {config.model_type} from {name_or_path}: {exc}") from exc
    return model, n_layers


#: the config keys that hold the layer count, by family
LAYER_KEYS = ("num_hidden_layers", "n_layer", "num_layers", "n_layers")
#: layers built for the check: every layer of a family is built alike, and 12 holds each family's repeating
#: pattern of layer kinds (gemma3 alternates 5 sliding-window layers and 1 global); a config of 10^9 layers is
#: checked in the time of 12
SKELETON_LAYERS = 12


def _few_layers(config: Any, source: str) -> tuple[Any, int | None]:
    """A copy of ``config`` with at most :data:`SKELETON_LAYERS` layers, and the real layer count."""
    key = next((k for k in LAYER_KEYS if isinstance(getattr(config, k, None), int)), None)
    if key is None:
        return config, None
    n = getattr(config, key)
    if n < 1:
        raise HeadlabError(f"{source}: the config's {key} is {n}; a model needs at least 1 layer")
    if n <= SKELETON_LAYERS:
        return config, n
    small = copy.deepcopy(config)
    setattr(small, key, SKELETON_LAYERS)
    if isinstance(getattr(small, "layer_types", None), list):
        small.layer_types = small.layer_types[:SKELETON_LAYERS]
    return small, n


def report(model: Any, n_layers: int | None = None) -> dict[str, Any]:
    """What headlab can do with ``model``: family, shape, capture route, census routes, intervention sites."""

    a = adapter_for(model)
    bound = parts(model)
    H, Hkv, d = head_dims(model)
    fused = fused_unsupported(model)
    return {
        "family": a.family, "model_type": model.config.model_type, "layers": n_layers or len(bound.blocks), "heads": H,
        "kv_heads": Hkv, "head_dim": d, "capture": route(model),
        "census": "fused" if fused is None else ("eager" if route(model) == "dropout-hook" else "chunked"),
        "census_reason": fused or "the fused kernel expresses every layer",
        "blocks": a.blocks, "ablation_site": f"input of {a.out_proj}",
        "qk_site": (f"{a.q} / {a.k} ({a.qk_layout})" if a.q else f"{a.qkv} ({a.qkv_layout})"),
    }
