"""Which capture routes a model's attention calls allow, as its family adapter says: the seam the capture hooks
(:mod:`headlab.attention.hooks`) and the route choice (:mod:`headlab.attention.routes`) both read."""

from __future__ import annotations

from torch import nn

from headlab.attention.adapters import adapter_for, parts


def kernel_supported(model: nn.Module) -> str | None:
    """None when :func:`capture_kernel` can serve ``model``, else the reason it cannot (one line)."""
    if route(model) == "dropout-hook":
        return (f"{type(model).__name__} computes softmax inline (no attention-function seam), so only the eager "
                "route can read it")
    return _has(model, parts(model).adapter.sinks, "has learned attention-sink logits")


def fused_unsupported(model: nn.Module) -> str | None:
    """Why the fused kernel cannot express some layer of ``model`` (soft-capped or sink logits), or None."""
    return kernel_supported(model) or _has(model, parts(model).adapter.softcap,
                                           "soft-caps its attention logits, which the fused kernel cannot apply")


def _has(model: nn.Module, attr: str | None, what: str) -> str | None:
    """``what``, said of the attention modules, when any of them sets the adapter's attribute ``attr``."""
    found = parts(model).attention
    if attr and any(getattr(m, attr, None) is not None for m in found):
        return f"{type(found[0]).__name__} {what}"
    return None


_ROUTES = {"native": "native", "interface": "interface", "dropout": "dropout-hook"}


def route(model: nn.Module) -> str:
    """Which capture route a model takes (its adapter says): ``"native"``, ``"interface"`` or ``"dropout-hook"``."""
    return _ROUTES[adapter_for(model).capture]
