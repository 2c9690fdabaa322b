"""Streaming attention capture: the only code that reaches into attention internals.

During :func:`capture`, every attention layer hands its post-softmax probabilities ``(B, H, T, T)`` to a
callback the moment it computes them; the tensor is then dropped, so at most one layer's probabilities
exist at a time and nothing is kept unless the callback keeps it.

How the probabilities are reached, per model (its architecture adapter, :mod:`headlab.attention.adapters`, names
the route and the modules):

* ``interface`` — models whose attention goes through Hugging Face's ``AttentionInterface`` (BERT, Llama,
  Gemma3, Qwen, ... in transformers v5). headlab registers one attention function, ``"headlab"``, that runs
  the model's *own* ``eager_attention_forward`` (so scaling, soft-capping, GQA and sliding windows are the
  model's), passes the probabilities to the callback and returns no weights. The model is switched to it
  for the duration of the context and switched back on exit, exceptions included.
* ``native`` — headlab's own :class:`headlab.nn.Transformer`: each attention module has a ``probs_hook``
  attribute that, when set, makes it compute the probabilities explicitly instead of the fused kernel.
* ``dropout-hook`` — older modules that compute ``softmax`` inline and pass the probabilities through an
  ``nn.Dropout`` (MPNet): a forward hook on that dropout sees them. Hooks are removed on exit.

:func:`capture_kernel` is the other half: instead of letting the model compute attention and reading the
probabilities, it hands each layer's queries, keys, values and rules (:class:`AttentionSpec`) to a handler
that returns the layer's output, so the fused and chunked routes can compute attention without a (T, T)
tensor. It serves the ``interface`` models (an attention function ``"headlab-kernel"`` whose mask function
passes only the 2D padding mask) and the ``native`` model (``kernel_hook``); inline-softmax models have no
such seam.
"""

from __future__ import annotations

import contextlib
import sys
from contextvars import ContextVar
from typing import Any, Callable, Iterator

import torch
from torch import nn

from headlab.attention.adapters import parts
from headlab.attention.routes.spec import AttentionSpec
from headlab.attention.rules import kernel_supported, route
from headlab.errors import HeadlabError

LayerCallback = Callable[[int, torch.Tensor], None]  # (layer, probs (B, H, T, T))
#: (layer, q (B, H, T, d), k (B, Hkv, T, d), v (B, Hkv, T, dv), spec) -> output (B, H, T, dv)
KernelHandler = Callable[[int, torch.Tensor, torch.Tensor, torch.Tensor, AttentionSpec], torch.Tensor]

_ACTIVE: ContextVar["_Session | None"] = ContextVar("headlab_capture", default=None)
_registered = False
IMPL_NAME = "headlab"
KERNEL_IMPL = "headlab-kernel"


class _Session:
    def __init__(self, callback: LayerCallback | None, layer_of: dict[int, int], kernel: KernelHandler | None = None):
        self.callback = callback
        self.kernel = kernel
        self.layer_of = layer_of  # id(attention module) -> layer index
        self.calls = 0

    def layer(self, module: nn.Module) -> int:
        layer = self.layer_of.get(id(module))
        if layer is None:
            raise HeadlabError(f"attention module {type(module).__name__} has no known layer index")
        return layer

    def emit(self, module: nn.Module, probs: torch.Tensor) -> None:
        self.emit_layer(self.layer(module), probs)

    def emit_layer(self, layer: int, probs: torch.Tensor) -> None:
        self.calls += 1
        self.callback(layer, probs)  # type: ignore[misc]

    def attend(
        self, layer: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, spec: AttentionSpec
    ) -> torch.Tensor:
        self.calls += 1
        return self.kernel(layer, q, k, v, spec)  # type: ignore[misc]


def _eager_for(module: nn.Module) -> Callable[..., Any]:
    """The model's own eager attention function (each modeling file defines one)."""
    fn = getattr(sys.modules[type(module).__module__], "eager_attention_forward", None)
    if fn is None:
        raise HeadlabError(f"{type(module).__module__} defines no eager_attention_forward; capture unsupported")
    return fn


def _headlab_attention(
    module: nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    **kwargs: Any,
) -> tuple[torch.Tensor, None]:
    out, probs = _eager_for(module)(module, query, key, value, attention_mask, **kwargs)
    session = _ACTIVE.get()
    if session is not None:
        session.emit(module, probs)
    return out, None


def _kernel_attention(
    module: nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    scaling: float | None = None,
    sliding_window: int | None = None,
    softcap: float | None = None,
    **kwargs: Any,
) -> tuple[torch.Tensor, None]:
    session = _ACTIVE.get()
    if session is None or session.kernel is None:
        raise HeadlabError("the headlab-kernel attention runs only inside headlab.capture_kernel")
    if attention_mask is not None and attention_mask.ndim != 2:
        raise HeadlabError(
            f"{type(module).__name__} built its own {attention_mask.ndim}-D attention mask, which "
            "the fused and chunked routes cannot read; use --route eager"
        )
    if getattr(module, "sinks", None) is not None or kwargs.get("s_aux") is not None:
        raise HeadlabError(f"{type(module).__name__} has learned attention-sink logits; use --route eager")
    T = key.shape[2]
    key_mask = None
    if attention_mask is not None:
        key_mask = attention_mask[:, -T:].to(torch.bool)
        key_mask = None if bool(key_mask.all()) else key_mask
    causal = bool(kwargs.get("is_causal", getattr(module, "is_causal", False)))
    scale = scaling if scaling is not None else query.shape[-1] ** -0.5
    spec = AttentionSpec(causal=causal, key_mask=key_mask, scale=float(scale), window=sliding_window, softcap=softcap)
    out = session.attend(session.layer(module), query, key, value, spec)  # (B, H, T, dv)
    return out.transpose(1, 2).contiguous(), None


def _padding_mask(
    batch_size: int,
    q_length: int,
    kv_length: int,
    q_offset: int = 0,
    kv_offset: int = 0,
    mask_function: Any = None,
    attention_mask: torch.Tensor | None = None,
    **kwargs: Any,
) -> torch.Tensor | None:
    """The kernel routes' mask: the 2D padding mask alone (causality and windows are rules, not tensors)."""
    if attention_mask is None:
        return None
    return attention_mask[:, -kv_length:].to(torch.bool)


def _register() -> None:
    global _registered
    if _registered:
        return
    # deferred: transformers takes ~0.9 s to import and only loading a model needs it
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, eager_mask

    AttentionInterface.register(IMPL_NAME, _headlab_attention)
    # Mask creation dispatches on the same name; ours consumes eager (additive float) masks.
    AttentionMaskInterface.register(IMPL_NAME, eager_mask)
    AttentionInterface.register(KERNEL_IMPL, _kernel_attention)
    AttentionMaskInterface.register(KERNEL_IMPL, _padding_mask)
    _registered = True


@contextlib.contextmanager
def capture(model: nn.Module, callback: LayerCallback) -> Iterator[_Session]:
    """Install attention capture on ``model`` for the duration of the ``with`` block.

    ``callback(layer, probs)`` receives each layer's probabilities ``(B, H, T, T)`` (float, rows sum to 1 over
    unmasked keys). The callback must not keep ``probs`` if memory matters. Everything installed is removed
    on exit, also when the forward or the callback raises.
    """
    how = route(model)
    handles: list[Any] = []
    native: list[Any] = []  # headlab.nn attention modules, with their probs_hook attribute
    if how == "native":
        session = _Session(callback, {})
        native = parts(model).attention
        for m in native:
            m.probs_hook = session.emit_layer
    elif how == "interface":
        session = _interface_session(model, callback, None)
    else:
        session = _Session(callback, {})
        for i, drop in enumerate(parts(model).probs_dropout):
            handles.append(drop.register_forward_hook(lambda _m, _inp, out, _i=i: session.emit_layer(_i, out)))
    with _active(model, session, IMPL_NAME if how == "interface" else None, native, "probs_hook", handles):
        yield session


def _interface_session(model: nn.Module, callback: LayerCallback | None, handler: KernelHandler | None) -> _Session:
    _register()
    return _Session(callback, parts(model).layer_of(), handler)


@contextlib.contextmanager
def _active(
    model: nn.Module,
    session: _Session,
    impl: str | None,
    hooked: list[nn.Module],
    attr: str,
    handles: tuple[Any, ...] | list[Any] = (),
) -> Iterator[_Session]:
    """Make ``session`` the active one (and switch the model to attention function ``impl``) for the block;
    on exit, exceptions included, restore the implementation, clear ``attr`` on ``hooked`` and remove hooks."""
    token = _ACTIVE.set(session)
    hf: Any = model  # a transformers model when impl is set
    previous = hf.config._attn_implementation if impl is not None else None
    try:
        if impl is not None:
            hf.set_attn_implementation(impl)
        yield session
    finally:
        _ACTIVE.reset(token)
        for m in hooked:
            setattr(m, attr, None)
        for h in handles:
            h.remove()
        if previous is not None:
            hf.set_attn_implementation(previous)


@contextlib.contextmanager
def capture_kernel(model: nn.Module, handler: KernelHandler) -> Iterator[_Session]:
    """Let ``handler`` compute every attention layer of ``model`` for the duration of the ``with`` block.

    ``handler(layer, q, k, v, spec)`` gets the layer's queries (B, H, T, d), keys (B, Hkv, T, d) and values
    (B, Hkv, T, dv) after positional rotation and norms, and its rules (:class:`AttentionSpec`), and returns the
    attention output (B, H, T, dv) the model continues with. Removed on exit, exceptions included.
    """
    reason = kernel_supported(model)
    if reason is not None:
        raise HeadlabError(reason)
    how = route(model)
    native: list[Any] = []
    if how == "native":
        session = _Session(None, {}, handler)
        native = parts(model).attention

        def hook(
            layer: int,
            q: torch.Tensor,
            k: torch.Tensor,
            v: torch.Tensor,
            key_mask: torch.Tensor | None,
            causal: bool,
            scale: float,
        ) -> torch.Tensor:
            return session.attend(layer, q, k, v, AttentionSpec(causal=causal, key_mask=key_mask, scale=scale))

        for m in native:
            m.kernel_hook = hook
    else:
        session = _interface_session(model, None, handler)
    with _active(model, session, KERNEL_IMPL if how == "interface" else None, native, "kernel_hook"):
        yield session
