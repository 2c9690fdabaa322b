"""Shared pieces of the contract tests: a tiny training config, a scan subprocess and its progress reader."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest

from ..support import SMALL_CORPUS

TINY = {
    "model": {"n_layers": 1, "n_heads": 2, "d_model": 16, "max_length": 16},
    "data": {"corpus": [SMALL_CORPUS], "tokenizer": "bpe:280", "tokenizer_chars": 30000, "window": 16,
             "n_windows": 40, "slash_share": 0.25, "probe_windows": 2},
    "optim": {"steps": 4, "batch_size": 4, "warmup_steps": 1, "threads": 1},
    "checkpoints": {"early_points": 1, "early_fraction": 0.5, "every": 2},
    "track": {"grad_every": 0},
}


def tiny_config(tmp: Path, settings: dict | None = None) -> Path:
    lines = []
    for section, kv in (settings or TINY).items():
        lines.append(f"[{section}]")
        lines += [f"{k} = {json.dumps(v)}" for k, v in kv.items()]
    p = tmp / "tiny.toml"
    p.write_text("\n".join(lines) + "\n")
    return p


def scan_proc(out: Path, *extra: str) -> subprocess.Popen:
    return headlab_proc("scan", "minilm-l6", "--max-samples", "0", "--batch-size", "1", "--out", str(out), *extra)


def headlab_proc(*args: str) -> subprocess.Popen:
    """``headlab ARGS`` as a child process whose stderr (the progress bars) the test reads."""
    cmd = [sys.executable, "-m", "headlab", *args]
    # A shell without job control starts background jobs with SIGINT ignored, and Python then never turns
    # SIGINT into KeyboardInterrupt: give the child the default disposition, as a terminal would.
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "HF_HUB_OFFLINE": "1"},
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def wait_for_progress(p: subprocess.Popen, n: int = 3, timeout: float = 120) -> int:
    """Read the progress bar ("scan minilm-l6: 7sample [...") until ``n`` samples are done; return the count."""
    buf, t0 = "", time.time()
    while time.time() - t0 < timeout:
        ch = p.stderr.read(1)  # type: ignore[union-attr]
        if not ch:
            break
        buf += ch
        if ch == "[":
            done = [int(x) for x in re.findall(r"(\d+)(?:sample|/\d+) \[", buf)]  # without or with a total
            if done and done[-1] >= n:
                return done[-1]
    raise AssertionError(f"no progress seen: {buf[-300:]}")


@contextlib.contextmanager
def small_disk(tmp: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` (mount's syntax, e.g. 64k) mounted at tmp/disk for the block, unmounted after it; the
    calling test is skipped where mounting needs a root the suite does not have."""
    disk = tmp / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(disk)],
                      capture_output=True).returncode != 0:
        pytest.skip("mounting a small tmpfs needs root (CAP_SYS_ADMIN)")
    try:
        yield disk
    finally:
        subprocess.run(["umount", str(disk)], check=False)
