"""The reliability contract, faults of the machine and of running processes: a full disk, a damaged model
cache, a damaged checkpoint or result among good ones, kill -9 at a random moment, a second writer.

Each test is one case of the contract (``test_contract_size`` counts them)."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from headlab.cli import main
from tests.support import says

from ..support import need
from .procs import TINY, headlab_proc, scan_proc, small_disk, tiny_config, wait_for_progress


def test_a_full_disk_is_refused_before_the_work(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with small_disk(tmp_path, "64k") as disk:
        (disk / "fill").write_bytes(b"\0" * 56 * 1024)
        assert main(["scan", "minilm-l6", "--out", str(disk / "scan"), "--no-progress"]) == 2
        assert "full" in capsys.readouterr().err.strip().splitlines()[-1]
        assert not (disk / "scan").exists()


def test_a_disk_that_fills_while_training_writes_is_one_line_naming_the_file(tmp_path: Path,
                                                                              capsys: pytest.CaptureFixture[str]
                                                                              ) -> None:
    """The pre-check passes (more than 1 MiB free), then the first checkpoint's weights fill the disk:
    safetensors' own error (SafetensorError ... os error 28) is said as the full disk it is, not an internal
    error. Retrieval runs write through the same trainer."""
    with small_disk(tmp_path, "1200k") as disk:
        big = {**TINY, "model": {**TINY["model"], "n_layers": 4, "d_model": 256}}  # ~13 MB of weights
        assert main(["train", str(tiny_config(tmp_path, big)), "--out", str(disk / "run"), "--no-progress"]) == 2
        last = capsys.readouterr().err.strip().splitlines()[-1]
        assert "No space left on device while writing" in last and "free space" in last, last
        assert ".safetensors" in last and "internal error" not in last


#: one command for each way results reach the disk: JSON and Markdown (write_text_atomic), figures
#: (save_figure), Parquet parts and their join (per-sample rows, the monitor's rows), a JSONL stream, weights
#: (safetensors), a single-file page, a report's figures, a sweep's runs
FILLED = [
    "scan minilm-l6 --max-samples 2 --per-sample {disk}/rows.parquet --out {disk}/scan",
    "characterize minilm-l6 --n 4 --out {disk}/out",
    "ablate minilm-l6 --heads 0.1 --samples 2 --draws 1 --out {disk}/out",
    "predict results/formation/sdh/dense/s0 results/formation/sdh/dense/s1 --out {disk}/out",
    "retrieval emergence results/retrieval/depth_law/L1-D4-dense-s0 results/retrieval/depth_law/L1-D4-dense-s1 "
    "--out {disk}/out", "report results/quickstart/scan --out {disk}/out",
    "scale results/quickstart/scan --out {disk}/out", "view minilm-l6 --out {disk}/v.html",
    "retrieval train --depth 2 --steps 2 --out {disk}/out",
    "retrieval sweep --steps 2 --layers 1 --depths 2 --seeds 0 --curricula none --out {disk}/out",
    "monitor fit minilm-l6 --max-samples 100 --out {disk}/out",
    "monitor check {tmp}/profile --corpus wiki --max-samples 8 --out {disk}/out",
]


@pytest.mark.parametrize("cmd", FILLED)
def test_a_disk_that_fills_during_the_work_is_one_line_naming_the_file(cmd: str, tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str],
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The disk passes the check before the work, then fills the moment the output folder is locked (another
    process took the space): every writer's failure is the one line of a full disk naming the file it could not
    write (pyarrow's and safetensors' own messages and a write's missing file name included), never an internal
    error, and no temporary file is left."""
    import headlab.io

    if cmd.startswith("monitor check"):
        assert main(["monitor", "fit", "minilm-l6", "--max-samples", "100", "--out", str(tmp_path / "profile"),
                     "--no-progress"]) == 0
    with small_disk(tmp_path, "2m") as disk:
        acquire = headlab.io.FolderLock.acquire

        def fill_after(lock: headlab.io.FolderLock) -> headlab.io.FolderLock:
            held = acquire(lock)
            with open(disk / "fill", "ab", buffering=0) as fh, pytest.raises(OSError):
                while True:
                    fh.write(b"\0" * 4096)
            return held

        monkeypatch.setattr(headlab.io.FolderLock, "acquire", fill_after)
        monkeypatch.setattr(headlab.io, "_probe", lambda *_a: None)  # full after the door, as in life
        argv = cmd.format(disk=disk, tmp=tmp_path).split()
        capsys.readouterr()
        assert main(argv + ["--no-progress"] * (argv[0] in ("scan", "characterize", "ablate", "view", "retrieval",
                                                             "monitor") and argv[1] != "emergence")) == 2
        last = capsys.readouterr().err.strip().splitlines()[-1]
        assert last.startswith(f"headlab: error: No space left on device while writing {disk}/"), last
        assert last.endswith("free space or choose another --out"), last
        assert not [p for p in disk.rglob("*") if ".tmp" in p.name], list(disk.rglob("*"))


def test_a_damaged_model_cache_is_rebuilt_with_a_warning_not_loaded(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    from transformers import BertConfig, BertModel

    from headlab.models.cache import damage, publish, usable

    staged, target = tmp_path / "staged", tmp_path / "models" / "tiny"
    BertModel(BertConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                         num_attention_heads=2)).save_pretrained(staged)
    target.parent.mkdir()
    publish(staged, target)
    assert usable(target) and damage(target, full=True) is None
    w = target / "model.safetensors"
    data = bytearray(w.read_bytes())
    data[-1] ^= 0xFF  # same size, one flipped byte: only the digest sees it
    w.write_bytes(bytes(data))
    assert usable(target)
    assert "digest" in damage(target, full=True)
    w.write_bytes(bytes(data[:-64]))  # truncated: every load sees it
    capsys.readouterr()
    assert not usable(target) and not target.exists()
    assert "damaged (model.safetensors is truncated" in capsys.readouterr().err


def test_two_processes_asking_for_one_cached_copy_build_it_once(tmp_path: Path) -> None:
    """Two test workers loaded gemma3-270m on a fresh cache at once: both dequantized into one temporary folder,
    and the first to publish removed the copy the other was loading ('no file named model.safetensors')."""
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")  # a process of its own, as a second command would be
    target = tmp_path / "cache" / "models" / "tiny"
    with ctx.Pool(2) as pool:
        built = pool.starmap(_build_slowly, [(str(target), str(tmp_path / f"log{i}")) for i in range(2)])
    from headlab.models.cache import damage

    assert built == [str(target)] * 2 and damage(target, full=True) is None
    assert (target / "weights.bin").read_bytes() == b"w" * 4096
    assert sum((tmp_path / f"log{i}").exists() for i in range(2)) == 1  # built by one, found by the other


def _build_slowly(target: str, log: str) -> str:
    import time

    from headlab.models.cache import cached

    def build(tmp: Path) -> Path:
        Path(log).write_text("built")
        (tmp / "config.json").write_text("{}")
        time.sleep(1.0)  # the other process asks meanwhile
        (tmp / "weights.bin").write_bytes(b"w" * 4096)
        return tmp

    return str(cached(Path(target), build))


def test_view_of_a_run_with_one_damaged_checkpoint_skips_it(tmp_path: Path) -> None:
    cfg, run = tiny_config(tmp_path), tmp_path / "run"
    assert main(["train", str(cfg), "--out", str(run), "--no-progress"]) == 0
    first = sorted((run / "checkpoints").iterdir())[0]
    (first / "model.safetensors").write_bytes(b"damaged")
    with says(f"{first.name} is damaged"):
        assert main(["view", str(run), "--out", str(tmp_path / "v.html"), "--no-progress"]) == 0
    assert (tmp_path / "v.html").stat().st_size > 1000


@pytest.mark.integration
def test_report_skips_one_corrupt_result_among_good_ones(tmp_path: Path) -> None:
    need("minilm-l6")
    runs = tmp_path / "runs"
    assert main(["scan", "minilm-l6", "--max-samples", "4", "--out", str(runs / "good"), "--no-progress"]) == 0
    (runs / "bad").mkdir()
    (runs / "bad" / "scan.json").write_text('{"model": "minilm-l6", "he')  # torn
    with says("bad/scan.json"):
        assert main(["report", str(runs), "--out", str(tmp_path / "rep")]) == 0
    md = (tmp_path / "rep" / "report.md").read_text()
    body, left_out = md.split("## Left out", 1)  # the damaged result has no section, and the report says so
    assert "good" in body and "bad" not in body and "bad/scan.json" in left_out


def _train_proc(cfg: Path, run: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "headlab", "train", str(cfg), "--out", str(run), "--no-progress",
                             *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


TINY_LONG = {**TINY, "optim": {**TINY["optim"], "steps": 60},
             "checkpoints": {"early_points": 1, "early_fraction": 0.1, "every": 10}}


@pytest.fixture(scope="module")
def whole_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The config and an uninterrupted run of it, shared by the interrupted runs below."""
    tmp = tmp_path_factory.mktemp("whole")
    cfg = tiny_config(tmp, TINY_LONG)
    assert main(["train", str(cfg), "--out", str(tmp / "run"), "--no-progress"]) == 0
    return cfg, tmp / "run"


# Ctrl-C takes SIGTERM's path (headlab.interrupts) and is the signal of the monitor's and the scan's tests
@pytest.mark.parametrize("sig,code", [(signal.SIGKILL, -9), (signal.SIGTERM, 143)])
def test_training_stopped_at_a_random_moment_resumes_to_the_same_weights(tmp_path: Path, whole_run: tuple[Path, Path],
                                                                         sig: int, code: int) -> None:
    from safetensors.torch import load_file

    cfg, whole = whole_run
    killed = tmp_path / "killed"
    at = random.Random(os.getpid() + sig).randint(12, 50)  # a step between checkpoints, new on every run
    p = _train_proc(cfg, killed)
    t0 = time.time()
    while time.time() - t0 < 120 and p.poll() is None:
        log = killed / "metrics.jsonl"
        if log.exists() and log.read_text().count("\n") >= at:
            break
        time.sleep(0.01)
    p.send_signal(sig)
    p.wait()
    assert p.returncode == code, p.stderr.read()  # type: ignore[union-attr]
    assert not (killed / "final.safetensors").exists(), "the run finished before it could be stopped"
    assert main(["train", str(cfg), "--out", str(killed), "--resume", "--no-progress"]) == 0
    a, b = load_file(str(whole / "final.safetensors")), load_file(str(killed / "final.safetensors"))
    assert a.keys() == b.keys() and all((a[k] == b[k]).all() for k in a), f"stopped near step {at}"
    steps = [json.loads(x)["step"] for x in (killed / "metrics.jsonl").read_text().splitlines()]
    assert steps == list(range(1, 61))


@pytest.mark.integration
def test_a_scan_killed_with_sigkill_leaves_no_partial_file_and_no_stale_lock(tmp_path: Path) -> None:
    need("minilm-l6")
    out = tmp_path / "scan"
    p = scan_proc(out)
    try:
        wait_for_progress(p, random.Random(os.getpid()).randint(1, 6))
        p.send_signal(signal.SIGKILL)
        p.wait()
    finally:
        if p.poll() is None:
            p.kill()
    assert not [f.name for f in out.iterdir() if not f.name.startswith(".")]  # no scan.json, no temp file
    assert main(["scan", "minilm-l6", "--max-samples", "2", "--out", str(out), "--no-progress"]) == 0


COMMANDS = ["scan minilm-l6", "characterize minilm-l6", "claims minilm-l6", "ablate minilm-l6 --heads 0.1",
            "importance minilm-l6", "prune minilm-l6"]


@pytest.mark.parametrize("cmd", COMMANDS)
def test_a_second_writer_of_any_result_folder_is_refused(tmp_path: Path, cmd: str,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    from headlab.io import FolderLock

    out = tmp_path / "out"
    with FolderLock(out):  # the first writer, still at work
        assert main([*cmd.split(), "--out", str(out), "--no-progress"]) == 2
    assert "being written" in capsys.readouterr().err.strip().splitlines()[-1]
    assert not out.exists()  # nothing written; the folder the first writer made is removed with its lock


def test_a_second_check_writing_the_same_scores_file_is_refused(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """Two checks given one --write-scores file: the second is refused before its work, and the first's file
    (and its folder's other files) are left alone."""
    from headlab.io import FolderLock

    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "profile.json").write_text("{}")  # refused before the profile is read
    (tmp_path / "d.jsonl").write_text('{"id": "a", "text": "x/y"}\n')
    (tmp_path / "other.txt").write_text("not ours")
    with FolderLock(tmp_path, "s.jsonl"):  # the first check, still at work
        assert main(["monitor", "check", str(tmp_path / "p"), "--corpus", str(tmp_path / "d.jsonl"),
                     "--write-scores", str(tmp_path / "s.jsonl"), "--out", str(tmp_path / "o"),
                     "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "s.jsonl is being written" in err[0]
    assert sorted(f.name for f in tmp_path.iterdir()) == ["d.jsonl", "other.txt", "p"]  # no --out left either


def test_tracking_and_reporting_into_a_held_folder_is_refused(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    from headlab.io import FolderLock

    cfg, run = tiny_config(tmp_path), tmp_path / "run"
    assert main(["train", str(cfg), "--out", str(run), "--no-progress"]) == 0
    for argv in (["track", str(run), "--no-progress"], ["report", str(run)]):
        with FolderLock(run / argv[0]):  # the default --out of both is RUN/<command>
            assert main(argv) == 2
        assert "being written" in capsys.readouterr().err.strip().splitlines()[-1]
    shutil.rmtree(run / "track", ignore_errors=True)


def _safetensors(header: dict, payload: bytes = b"\0" * 8) -> bytes:
    import json
    import struct

    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + payload


def test_a_run_whose_weights_have_a_bad_header_or_shape_is_one_line(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    import torch
    from safetensors.torch import load_file, save_file

    cfg, run = tiny_config(tmp_path), tmp_path / "run"
    assert main(["train", str(cfg), "--out", str(run), "--no-progress"]) == 0
    final = run / "final.safetensors"
    good = {k: v.clone() for k, v in load_file(str(final)).items()}  # not a view of the file we rewrite
    name = next(iter(good))
    cases = {
        "a shape that is not a number": _safetensors({name: {"dtype": "F32", "shape": ["a"], "data_offsets": [0, 4]}}),
        "an absurd shape": _safetensors({name: {"dtype": "F32", "shape": [10**15, 10**15], "data_offsets": [0, 8]}}),
    }
    for what, data in cases.items():
        final.write_bytes(data)
        capsys.readouterr()
        assert main(["scan", str(run), "--max-samples", "2", "--out", str(tmp_path / "o"), "--no-progress"]) == 2, what
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "final.safetensors" in err[0] and "internal error" not in err[0], (what, err)
    save_file({**good, name: torch.zeros(3, 5)}, str(final))  # a weight of another shape
    assert main(["scan", str(run), "--max-samples", "2", "--out", str(tmp_path / "o"), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert "does not fit the model" in err[-1] and "internal error" not in err[-1]


def test_models_verify_reports_a_torn_manifest_and_leaves_a_linked_copy(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str],
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from transformers import BertConfig, BertModel

    from headlab.models.cache import MANIFEST, publish

    monkeypatch.setenv("HEADLAB_CACHE", str(tmp_path / "cache"))
    models = tmp_path / "cache" / "models"
    models.mkdir(parents=True)
    for name in ("torn", "elsewhere"):
        BertModel(BertConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                             num_attention_heads=2)).save_pretrained(tmp_path / f"staged-{name}")
    publish(tmp_path / "staged-torn", models / "torn")
    (models / "torn" / MANIFEST).write_text('{"files": {"config.json": {"by')  # torn mid-write
    (tmp_path / "disk").mkdir()
    publish(tmp_path / "staged-elsewhere", tmp_path / "disk" / "elsewhere")
    (models / "elsewhere").symlink_to(tmp_path / "disk" / "elsewhere")
    (tmp_path / "disk" / "elsewhere" / "config.json").write_text("{}")  # not the size it was written with
    assert main(["models", "verify"]) == 2
    out = capsys.readouterr().out
    assert f"its {MANIFEST} is damaged" in out and "(removed" in out and not (models / "torn").exists()
    assert "left in place" in out and (tmp_path / "disk" / "elsewhere" / "model.safetensors").exists()


@pytest.mark.integration
# SIGTERM here, Ctrl-C in the contract's signal test of the same scan: one path (headlab.interrupts), both signals
@pytest.mark.parametrize("sig", [signal.SIGTERM])
def test_a_scan_stopped_gracefully_after_a_checkpoint_resumes_to_the_uninterrupted_numbers(tmp_path: Path,
                                                                                           sig: int) -> None:
    """SIGTERM or Ctrl-C after the first checkpoint: the interrupted result and its checkpoint stay, and --resume
    finishes to the numbers of a scan that was never stopped (a kill already did; a graceful stop was refused)."""
    import numpy as np

    need("minilm-l6")
    args = ("--max-samples", "48", "--checkpoint-every", "16", "--batch-size", "1")
    whole, stopped = tmp_path / "whole", tmp_path / "stopped"
    rows = {d: ("--per-sample", str(tmp_path / f"{d.name}.parquet")) for d in (whole, stopped)}
    assert main(["scan", "minilm-l6", *args, *rows[whole], "--out", str(whole), "--no-progress"]) == 0
    p = headlab_proc("scan", "minilm-l6", *args, *rows[stopped], "--out", str(stopped))
    try:
        wait_for_progress(p, 20)  # past the first checkpoint at 16
        p.send_signal(sig)
        p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert json.loads((stopped / "scan.json").read_text())["interrupted"] is True
    assert main(["scan", "minilm-l6", *args, *rows[stopped], "--out", str(stopped), "--resume", "--no-progress"]) == 0
    a, b = (json.loads((d / "scan.json").read_text()) for d in (whole, stopped))
    import pyarrow.parquet as pq  # the per-sample rows continue from the checkpoint: none lost, none twice

    ra, rb = (pq.read_table(rows[d][1], columns=["sample", "doc"]).to_pylist() for d in (whole, stopped))
    assert rb == ra and len(ra) == 48
    assert b["interrupted"] is False and a["n_samples"] == b["n_samples"] == 48
    assert len(a["heads"]) == len(b["heads"]) == 72
    for ha, hb in zip(a["heads"], b["heads"]):
        sa, sb = ha["scores"], hb["scores"]
        nums = [k for k, v in sa.items() if isinstance(v, float)]
        assert nums and ha["sdh"] == hb["sdh"]
        np.testing.assert_allclose([sb[k] for k in nums], [sa[k] for k in nums], rtol=1e-6, atol=1e-7)
