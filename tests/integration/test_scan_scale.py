"""The census at scale: two processes (torchrun, gloo) equal one; kill -9 and --resume equal an uninterrupted
scan; per-sample Parquet and ``headlab top`` (slow: several scans)."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from headlab.cli import main

from ..support import free_port, need
from .conftest import PLAIN_TEXTS, SLASH_TEXTS

pytestmark = pytest.mark.slow
# small rounds (batch 2 x 16 batches = 32 samples per process) so that 160 samples make several of them
ARGS = ["--max-samples", "160", "--batch-size", "2", "--threshold", "0.05", "--detectors", "token", "offset",
        "previous-token", "--no-progress"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    need("minilm-l6")
    p = tmp_path_factory.mktemp("corpus") / "c.jsonl"
    p.write_text("\n".join(json.dumps({"text": t}) for t in (SLASH_TEXTS + PLAIN_TEXTS) * 20))
    return p


@pytest.fixture(scope="module")
def whole(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("whole") / "scan"
    r = subprocess.run(_cmd(corpus, out, "--per-sample", str(out.parent / "rows.parquet")), env=_env(),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    return out


def _cmd(corpus: Path, out: Path, *extra: str, procs: int = 1) -> list[str]:
    head = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(procs),
            f"--master_port={free_port()}", "-m"] if procs > 1 else [sys.executable, "-m"]
    # one thread in every process, whatever the environment says: thread counts move float rounding
    # past these comparisons' tolerance when another test runs beside this one
    return [*head, "headlab", "scan", "minilm-l6", "--corpus", str(corpus), *ARGS, "--threads", "1", "--out", str(out),
            *extra]


def _env() -> dict[str, str]:
    return {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}


def _same(a: Path, b: Path, rel: float) -> None:
    ja, jb = json.loads((a / "scan.json").read_text()), json.loads((b / "scan.json").read_text())
    assert ja["n_samples"] == jb["n_samples"] and ja["n_samples_with_target"] == jb["n_samples_with_target"]
    assert ja["sdh_share"] == jb["sdh_share"] and ja["n_sdh"] == jb["n_sdh"] > 0
    for ha, hb in zip(ja["heads"], jb["heads"]):
        assert ha["sdh"] == hb["sdh"], ha["name"]
        for k, v in ha["scores"].items():
            x, y = np.asarray(v, dtype=float), np.asarray(hb["scores"][k], dtype=float)
            # a spread from sums of squares amplifies the ~1e-7 differences of samples batched with others
            tol = 10 * rel if k.endswith("_std") else rel
            np.testing.assert_allclose(y, x, rtol=tol, atol=1e-12, equal_nan=True, err_msg=f"{ha['name']} {k}")


def test_two_processes_equal_one(corpus: Path, whole: Path, tmp_path: Path) -> None:
    out = tmp_path / "two"
    r = subprocess.run(_cmd(corpus, out, "--per-sample", str(tmp_path / "rows.parquet"), procs=2), env=_env(),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    _same(whole, out, 1e-6)
    import pyarrow.parquet as pq

    one, two = pq.read_table(whole.parent / "rows.parquet"), pq.read_table(tmp_path / "rows.parquet")
    assert one.column("sample").to_pylist() == two.column("sample").to_pylist() == list(range(160))
    np.testing.assert_allclose(two.column("token/0.7").to_numpy(zero_copy_only=False).astype(float),
                               one.column("token/0.7").to_numpy(zero_copy_only=False).astype(float),
                               rtol=1e-5, equal_nan=True)


@pytest.mark.parametrize("procs", [1, 2])
def test_kill_9_then_resume_equals_an_uninterrupted_scan(corpus: Path, whole: Path, tmp_path: Path,
                                                         procs: int) -> None:
    out = tmp_path / "killed"
    cmd = _cmd(corpus, out, "--checkpoint-every", "32", "--per-sample", str(tmp_path / "rows.parquet"), procs=procs)
    p = subprocess.Popen(cmd, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True)
    t0, ckpt = time.time(), out / "scan.checkpoint.json"
    while time.time() - t0 < 240 and p.poll() is None and not ckpt.exists():
        time.sleep(0.05)
    os.killpg(p.pid, signal.SIGKILL)
    # torchrun starts its workers in sessions of their own: kill every process of this scan by its folder
    subprocess.run(["pkill", "-9", "-f", str(out)], check=False)
    p.wait()
    assert ckpt.exists() and not (out / "scan.json").exists(), "the scan ended before it could be killed"
    assert main(["scan", "minilm-l6", "--corpus", str(corpus), *ARGS, "--out", str(out)]) == 2  # not silently anew
    r = subprocess.run([*cmd, "--resume"], env=_env(), capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    if procs == 1:  # the same additions in the same order: the same file, byte for byte, but for the settings
        ja, jb = (json.loads((d / "scan.json").read_text()) for d in (whole, out))
        assert ja["heads"] == jb["heads"] and ja["n_sdh"] == jb["n_sdh"] > 0
    _same(whole, out, 1e-6)
    import pandas as pd

    rows = pd.read_parquet(tmp_path / "rows.parquet")
    assert list(rows["sample"]) == list(range(160)) and not (out.parent / "rows.parquet.parts").exists()
    assert {"doc", "window", "n_tokens", "has_target", "ids", "token/5.11", "offset/0.0", "offset_delta/0.0",
            "previous-token/3.2"} <= set(rows.columns)
    assert not (out / "scan.checkpoint.json").exists()  # a finished scan drops its checkpoint


def test_top_lists_the_samples_where_a_head_fires(whole: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import pandas as pd

    rows = pd.read_parquet(whole.parent / "rows.parquet")
    best = rows["token/0.7"].max()
    assert main(["top", str(whole), "--head", "0.7", "--k", "3"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 4 and f"{best:.4f}" in out[1] and "/" in out[1]
    # the Parquet file alone names its model: the same texts, not token counts
    assert main(["top", str(whole.parent / "rows.parquet"), "--head", "0.7", "--k", "3"]) == 0
    assert capsys.readouterr().out.splitlines()[1:] == out[1:]
    assert main(["top", str(whole), "--head", "0.7", "--detector", "nope"]) == 2
    assert "detectors in it" in capsys.readouterr().err


def test_every_rank_refuses_a_held_folder_before_the_process_group_forms(corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "held"
    out.mkdir()
    (out / "scan.json").write_text("{}")  # an earlier result, no --overwrite
    # each rank is started alone, as torchrun would start it but with no peer: a rank that waited for the group
    # before refusing would hang; under torchrun itself the launcher stops the slower rank once the first exits,
    # so whether the second got to say its line was a race
    cmd = [sys.executable, "-m", "headlab", "scan", "minilm-l6", "--corpus", str(corpus), *ARGS, "--out", str(out)]
    ranks = [{**_env(), "RANK": str(r), "LOCAL_RANK": str(r), "WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "2",
              "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port())} for r in range(2)]
    procs = [subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for env in ranks]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 2, err[-2000:]
        assert err.count("already holds scan.json") == 1, err[-2000:]  # each rank said it, in one line
    assert (out / "scan.json").read_text() == "{}"
