"""The headlab cache: unpacked and dequantized model copies, so the second load takes seconds.

A cached copy is written to a temporary folder, sealed with a manifest (size and SHA-256 of every file) and
renamed into place. Every load compares the sizes and the safetensors headers against the files (cheap, and
it catches the truncation an interrupted copy or a full disk leaves); ``headlab models verify`` compares
the full digests. A damaged copy is rebuilt with a warning, never loaded.
"""

from __future__ import annotations

import fcntl
import json
import shutil
import struct
import sys
import tempfile
from pathlib import Path
from typing import Callable

from headlab.errors import HeadlabError
from headlab.io import cache_dir, file_sha256, write_json_atomic

MANIFEST = "headlab-manifest.json"


def writable_cache(sub: str = "models") -> Path:
    """The cache folder ``sub``, created and probed with a real write before any long conversion starts."""
    folder = cache_dir() / sub
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".probe-"):
            pass
    except OSError as exc:
        raise HeadlabError(f"cannot write the model cache {folder} ({exc.strerror or exc}); set HEADLAB_CACHE "
                           "to a writable folder") from exc
    return folder


def safetensors_damage(path: Path) -> str | None:
    """Why a ``.safetensors`` file cannot be whole (its size disagrees with its own header), or None."""
    size = path.stat().st_size
    try:
        with open(path, "rb") as fh:
            (n,) = struct.unpack("<Q", fh.read(8))
            if n > size:
                return f"{path.name} is truncated ({size} bytes, its header alone claims {n})"
            header = json.loads(fh.read(n))
    except (struct.error, ValueError, UnicodeDecodeError):
        return f"{path.name} has no readable safetensors header"
    end = max((t["data_offsets"][1] for k, t in header.items() if k != "__metadata__"), default=0)
    if size != 8 + n + end:
        return f"{path.name} is truncated or padded ({size} bytes, its header describes {8 + n + end})"
    return None


#: passed to every Hugging Face load: a model folder's own Python (its config's ``auto_map``) never runs, and
#: transformers never stops to ask on a terminal
NO_REMOTE_CODE: dict[str, bool] = {"trust_remote_code": False}


def remote_code_refusal(exc: BaseException, source: str) -> HeadlabError | None:
    """headlab's line for a load that transformers refused because the model needs its own code."""
    if "trust_remote_code" not in str(exc):
        return None
    return HeadlabError(f"{source} asks to run Python code of its own (auto_map in its config); headlab never runs "
                        "code from a model folder: use a model whose architecture transformers ships")


def check_model_dir(folder: Path) -> None:
    """Refuse a user's model directory whose weight files are visibly damaged, naming the file."""
    for f in sorted(folder.glob("*.safetensors")):
        why = safetensors_damage(f)
        if why:
            raise HeadlabError(f"{folder}: {why}; re-download or re-save the model")


def seal(folder: Path) -> None:
    """Write the manifest of ``folder``: every file's size and SHA-256."""

    files = {str(p.relative_to(folder)): {"bytes": p.stat().st_size, "sha256": file_sha256(p)}
             for p in sorted(folder.rglob("*")) if p.is_file() and p.name != MANIFEST}
    write_json_atomic(folder / MANIFEST, {"files": files})


def damage(folder: Path, *, full: bool = False) -> str | None:
    """Why the cached copy in ``folder`` cannot be used (None: it can). ``full`` also compares digests.

    A copy from before manifests existed is accepted when its safetensors headers agree with the files,
    and sealed then, so later loads compare against the manifest.
    """
    weights = [*folder.glob("*.safetensors"), *folder.glob("*.bin")]
    if not (folder / "config.json").exists() or not weights:
        return "it is incomplete"
    for f in sorted(folder.glob("*.safetensors")):
        why = safetensors_damage(f)
        if why:
            return why
    if not (folder / MANIFEST).exists():
        seal(folder)
        return None

    try:
        files = json.loads((folder / MANIFEST).read_text())["files"]
        items = [(str(rel), int(want["bytes"]), str(want["sha256"])) for rel, want in files.items()]
    except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError):
        return f"its {MANIFEST} is damaged"
    for rel, size, digest in items:
        p = folder / rel
        if not p.is_file():
            return f"{rel} is missing"
        if p.stat().st_size != size:
            return f"{rel} has {p.stat().st_size} bytes, {size} when written"
        if full and file_sha256(p) != digest:
            return f"{rel} does not match the digest recorded when it was written"
    return None


def usable(target: Path) -> bool:
    """True when ``target`` holds a sound cached copy; a damaged one is removed with a warning."""
    if not target.exists():
        return False
    why = damage(target)
    if why is None:
        return True
    print(f"headlab: warning: the cached copy in {target} is damaged ({why}); rebuilding it", file=sys.stderr)
    shutil.rmtree(target, ignore_errors=True)
    return False


def publish(tmp: Path, target: Path) -> Path:
    """Seal the finished copy in ``tmp`` and move it to ``target`` in one rename."""
    seal(tmp)
    shutil.rmtree(target, ignore_errors=True)
    tmp.rename(target)
    return target


def cached(target: Path, build: Callable[[Path], Path]) -> Path:
    """The sound copy in ``target``; when there is none, ``build(tmp)`` fills the empty folder ``tmp`` and returns
    the folder inside it to publish as ``target``.

    Two processes asking at once (test workers, two commands on a first use) build it once: the second waits on
    a lock beside the copy and then finds it sound. Without the lock both wrote one temporary folder, and the
    first to publish removed the copy the other was loading.
    """
    if usable(target):
        return target
    folder = writable_cache(target.parent.name)
    with open(folder / f".{target.name}.lock", "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"headlab: waiting for another headlab process building {target}", file=sys.stderr, flush=True)
            fcntl.flock(lock, fcntl.LOCK_EX)
        if usable(target):
            return target
        tmp = target.with_name(target.name + ".partial")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        try:
            publish(build(tmp), target)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return target


def gguf_to_safetensors(gguf: Path | Callable[[], Path], key: str) -> Path:
    """Dequantize a GGUF file once into fp32 safetensors under the cache and return that directory (``gguf``: the
    file, or what makes it, called only when the copy must be built).

    transformers refuses to save a model loaded from GGUF ("not serializable"); clearing the quantizer
    first gives a plain fp32 checkpoint. The copy is built in a temporary folder and renamed (:func:`cached`),
    so an interrupted conversion never leaves a half-written model behind.
    """
    target = cache_dir() / "models" / key

    def build(tmp: Path) -> Path:
        # deferred: transformers takes ~0.9 s to import and only loading a model needs it
        from transformers import AutoModelForCausalLM, AutoTokenizer

        path = gguf() if callable(gguf) else gguf
        print(f"headlab: dequantizing {path.name} once into {target} (this takes a minute)", flush=True)
        try:
            tok = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name, **NO_REMOTE_CODE)
            model = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, **NO_REMOTE_CODE)
        except (OSError, ValueError, ImportError) as exc:
            raise HeadlabError(f"cannot read GGUF file {path}: {str(exc).splitlines()[0]}") from exc
        setattr(model, "hf_quantizer", None)  # noqa: B010 - torch types module attributes as Tensor | Module
        model.config.__dict__.pop("quantization_config", None)
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        return tmp

    return cached(target, build)
