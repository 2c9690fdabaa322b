"""The headlab cache: unpacked and dequantized model copies, so the second load takes seconds."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from ..errors import HeadlabError


def cache_dir() -> Path:
    """``$HEADLAB_CACHE``, default ``~/.cache/headlab``."""
    return Path(os.environ.get("HEADLAB_CACHE", Path.home() / ".cache" / "headlab")).expanduser()


def gguf_to_safetensors(gguf: Path, key: str) -> Path:
    """Dequantize a GGUF file once into fp32 safetensors under the cache and return that directory.

    transformers refuses to save a model loaded from GGUF ("not serializable"); clearing the quantizer
    first gives a plain fp32 checkpoint. The copy is written to a temporary folder and renamed, so an
    interrupted conversion never leaves a half-written model behind.
    """
    target = cache_dir() / "models" / key
    if (target / "config.json").exists() and any(target.glob("*.safetensors")):
        return target
    from transformers import AutoModelForCausalLM, AutoTokenizer

    print(f"headlab: dequantizing {gguf.name} once into {target} (this takes a minute)", flush=True)
    try:
        tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name)
    except (OSError, ValueError, ImportError) as exc:
        raise HeadlabError(f"cannot read GGUF file {gguf}: {str(exc).splitlines()[0]}") from exc
    model.hf_quantizer = None
    model.config.__dict__.pop("quantization_config", None)
    tmp = target.with_name(target.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp)
    tok.save_pretrained(tmp)
    shutil.rmtree(target, ignore_errors=True)
    tmp.rename(target)
    return target
