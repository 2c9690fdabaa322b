"""``headlab models check``: whether headlab supports a model, read from its config alone (no weights loaded)."""

from __future__ import annotations

from typing import Any

from headlab.attention.adapters import adapter_for, head_dims, parts
from headlab.errors import HeadlabError


def skeleton(name_or_path: str) -> Any:
    """The model built from its config on the meta device: its module tree, no memory for weights."""
    import torch
    from transformers import AutoConfig, AutoModel

    from headlab.models.registry import NAMED_MODELS

    spec = NAMED_MODELS.get(name_or_path)
    source = str(spec.locate()) if spec is not None and spec.installed() else name_or_path
    try:
        config = AutoConfig.from_pretrained(source)
    except (OSError, ValueError, KeyError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise HeadlabError(f"cannot read a model config from {name_or_path}: {first}") from exc
    with torch.device("meta"):
        try:
            return AutoModel.from_config(config, attn_implementation="eager")
        except (ValueError, KeyError) as exc:
            raise HeadlabError(f"transformers cannot build {config.model_type} from {name_or_path}: {exc}") from exc


def report(model: Any) -> dict[str, Any]:
    """What headlab can do with ``model``: family, shape, capture route, census routes, intervention sites."""
    from headlab.attention.rules import fused_unsupported, route

    a = adapter_for(model)
    bound = parts(model)
    H, Hkv, d = head_dims(model)
    fused = fused_unsupported(model)
    return {
        "family": a.family, "model_type": model.config.model_type, "layers": len(bound.blocks), "heads": H,
        "kv_heads": Hkv, "head_dim": d, "capture": route(model),
        "census": "fused" if fused is None else ("eager" if route(model) == "dropout-hook" else "chunked"),
        "census_reason": fused or "the fused kernel expresses every layer",
        "blocks": a.blocks, "ablation_site": f"input of {a.out_proj}",
        "qk_site": (f"{a.q} / {a.k} ({a.qk_layout})" if a.q else f"{a.qkv} ({a.qkv_layout})"),
    }
