"""Checkpoints: ``checkpoints/step-NNNNNNN/`` with ``model.safetensors``, ``optimizer.safetensors`` and
``state.json``.

``state.json`` holds the step, the optimizer's hyper-parameters, the RNG states (torch, numpy, python), the
data position (the step: batches are a function of seed and step) and the SHA-256 of both tensor files. A
checkpoint is written into ``step-NNNNNNN.tmp/`` and renamed when complete, so a killed process leaves either
a whole checkpoint or a ``.tmp`` folder that is ignored. On resume, a checkpoint whose files are missing,
truncated or do not match their digests is reported by name and skipped for the previous one.

Schedule: ``early_points`` log-spaced steps over the first ``early_fraction`` of training, then every
``every`` steps, and the last step.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import load_file

from headlab.errors import HeadlabError
from headlab.io import file_sha256, save_tensors
from headlab.notices import say


def schedule(steps: int, early_points: int, early_fraction: float, every: int) -> list[int]:
    """Checkpoint steps (1-based step counts: the state after that many optimizer steps)."""
    early_end = max(1, int(steps * early_fraction))
    pts = set(np.unique(np.round(np.geomspace(1, early_end, max(1, early_points))).astype(int)).tolist())
    pts |= set(range(every, steps + 1, every)) if every > 0 else set()
    pts.add(steps)
    return sorted(p for p in pts if 1 <= p <= steps)


def step_dir(run: Path, step: int) -> Path:
    return run / "checkpoints" / f"step-{step:07d}"


def _flatten_optimizer(opt: torch.optim.Optimizer) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    sd = opt.state_dict()
    tensors, scalars = {}, {}
    for pid, st in sd["state"].items():
        for k, v in st.items():
            if isinstance(v, torch.Tensor):
                tensors[f"{pid}.{k}"] = v.detach().clone().contiguous()
            else:
                scalars[f"{pid}.{k}"] = v
    return tensors, {"param_groups": sd["param_groups"], "scalars": scalars}


def _unflatten_optimizer(tensors: dict[str, torch.Tensor], meta: dict[str, Any]) -> dict[str, Any]:
    state: dict[int, dict[str, Any]] = {}
    for key, v in list(tensors.items()) + list(meta["scalars"].items()):
        pid, name = key.split(".", 1)
        state.setdefault(int(pid), {})[name] = v
    return {"state": state, "param_groups": meta["param_groups"]}


def save(run: Path, step: int, model: torch.nn.Module, opt: torch.optim.Optimizer, extra: dict[str, Any]) -> Path:
    """Write the checkpoint of ``step`` atomically; returns its folder."""
    final = step_dir(run, step)
    tmp = final.with_name(final.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    # tied weights share storage; safetensors refuses shared tensors, so store clones (restored by load_state_dict)
    save_tensors(
        {k: v.detach().clone().contiguous() for k, v in model.state_dict().items()}, str(tmp / "model.safetensors")
    )
    tensors, meta = _flatten_optimizer(opt)
    save_tensors(tensors, str(tmp / "optimizer.safetensors"))
    state = {
        "step": step,
        "optimizer": meta,
        **extra,
        "rng": {"torch": torch.get_rng_state().tolist(), "numpy": _np_state(), "python": _py_state()},
        "sha256": {f: file_sha256(tmp / f) for f in ("model.safetensors", "optimizer.safetensors")},
    }
    (tmp / "state.json").write_text(json.dumps(state))
    if final.exists():
        shutil.rmtree(final)
    tmp.replace(final)
    return final


def save_final(run: Path, model: torch.nn.Module) -> Path:
    """``run/final.safetensors``, written to a temporary name and renamed (tied weights stored as clones)."""
    tmp = run / "final.safetensors.tmp"
    save_tensors({k: v.detach().clone().contiguous() for k, v in model.state_dict().items()}, str(tmp))
    return tmp.replace(run / "final.safetensors")


def _np_state() -> list[Any]:
    name, keys, pos, has_gauss, cached = np.random.get_state(legacy=True)  # type: ignore[misc]
    return [name, keys.tolist(), int(pos), int(has_gauss), float(cached)]


def _py_state() -> list[Any]:
    v, internal, g = random.getstate()
    return [v, list(internal), g]


def restore_rng(rng: dict[str, Any]) -> None:
    torch.set_rng_state(torch.tensor(rng["torch"], dtype=torch.uint8))
    name, keys, pos, has_gauss, cached = rng["numpy"]
    np.random.set_state((name, np.asarray(keys, dtype=np.uint32), pos, has_gauss, cached))
    v, internal, g = rng["python"]
    random.setstate((v, tuple(internal), g))


def verify(folder: Path) -> dict[str, Any]:
    """The checkpoint's state, after checking its files against their digests; HeadlabError if damaged."""
    try:
        state = json.loads((folder / "state.json").read_text())
        for f, want in state["sha256"].items():
            if file_sha256(folder / f) != want:
                raise HeadlabError(f"{f} does not match its digest")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise HeadlabError(f"{type(exc).__name__}: {exc}") from None
    return state


def checkpoints(run: Path) -> list[tuple[int, Path]]:
    """Complete-looking checkpoint folders, by step."""
    out = []
    for p in (run / "checkpoints").glob("step-*"):
        if p.is_dir() and not p.name.endswith(".tmp"):
            try:
                out.append((int(p.name.split("-", 1)[1]), p))
            except ValueError:
                continue
    return sorted(out)


def sound_checkpoints(run: Path) -> list[tuple[int, Path]]:
    """:func:`checkpoints` that verify; each damaged one is named in a warning and left out."""
    out = []
    for step, folder in checkpoints(run):
        try:
            verify(folder)
        except HeadlabError as exc:
            say(f"checkpoint {folder.name} is damaged ({exc}); skipped")
            continue
        out.append((step, folder))
    return out


def usable_checkpoints(run: Path) -> list[tuple[int, Path]]:
    """:func:`sound_checkpoints`, refused in one line where the run has none or every one is damaged."""
    if not checkpoints(run):
        raise HeadlabError(f"{run} has no checkpoints")
    found = sound_checkpoints(run)
    if not found:
        raise HeadlabError(f"every checkpoint of {run} is damaged")
    return found


def latest_good(run: Path) -> tuple[Path, dict[str, Any]] | None:
    """The newest checkpoint that verifies; damaged ones are reported (warning) and skipped."""
    for _step, folder in reversed(checkpoints(run)):
        try:
            return folder, verify(folder)
        except HeadlabError as exc:
            say(f"checkpoint {folder.name} is damaged ({exc}); trying the previous one")
    return None


def load_weights(folder: Path, model: torch.nn.Module) -> None:
    """A checkpoint's weights into ``model`` (every weight must fit; see :func:`load_weights_file`)."""
    load_weights_file(folder / "model.safetensors", model, f"checkpoint {folder.name}")


def load_weights_file(path: Path, model: torch.nn.Module, label: str) -> None:
    """The weights in ``path`` into ``model``: a missing or unexpected weight is an error naming ``label``; only
    the language-model head may be absent, being tied to the embedding."""
    try:
        sd = load_file(str(path))
    except Exception as exc:  # noqa: BLE001 - safetensors raises several types for a damaged file
        raise HeadlabError(f"{label}: {path.name} cannot be read ({exc})") from None
    try:
        missing, unexpected = model.load_state_dict(sd, strict=False)
    except RuntimeError as exc:  # a weight of another shape
        first = str(exc).strip().splitlines()
        raise HeadlabError(f"{label} does not fit the model: {first[-1].strip() if first else exc}") from None
    real_missing = [k for k in missing if not k.endswith("lm_head.weight")]
    if real_missing or unexpected:
        raise HeadlabError(f"{label} does not fit the model (missing {real_missing[:3]}, unexpected {unexpected[:3]})")


def load_optimizer(folder: Path, opt: torch.optim.Optimizer, meta: dict[str, Any]) -> None:
    path = folder / "optimizer.safetensors"
    try:
        opt.load_state_dict(_unflatten_optimizer(load_file(str(path)), meta))
    except Exception as exc:  # noqa: BLE001 - a damaged file or state of another shape: one line, not a trace
        raise HeadlabError(f"checkpoint {folder.name}: {path.name} cannot be read ({type(exc).__name__}: "
                           f"{str(exc).strip().splitlines()[0] if str(exc).strip() else ''})") from None
