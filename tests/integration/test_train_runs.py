"""headlab train runs: exact resume after an interruption, damaged checkpoints, DDP, tracking (slow: trains)."""

import json

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from headlab.errors import HeadlabError
from headlab.formation.training_run import tracked_training as train
from headlab.training import from_dict
from tests.support import says

from ..support import SMALL_CORPUS, TINY_RUN, free_port

TINY = TINY_RUN
pytestmark = pytest.mark.slow

def _cfg(**over):
    raw = json.loads(json.dumps(TINY))
    for section, kv in over.items():
        raw.setdefault(section, {}).update(kv)
    return from_dict(raw)


def _losses(run):
    return [json.loads(x)["loss"] for x in (run / "metrics.jsonl").read_text().splitlines()]


class StopAt:
    def __init__(self, step):
        self.step = step

    def on_step(self, trainer, step, loss):
        if step == self.step:
            raise KeyboardInterrupt


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    run = tmp_path_factory.mktemp("full")
    train(_cfg(), run, progress=False)
    return run


def test_resume_after_interrupt_reproduces_the_run_exactly(uninterrupted, tmp_path):
    run = tmp_path / "cut"
    with pytest.raises(KeyboardInterrupt):
        train(_cfg(), run, progress=False, callbacks=[StopAt(6)])
    assert (run / "checkpoints" / "step-0000006").is_dir()  # the interrupted step's work is kept
    with pytest.raises(HeadlabError, match="already holds checkpoints"):
        train(_cfg(), run, progress=False)
    train(_cfg(), run, resume=True, progress=False)
    assert _losses(run) == _losses(uninterrupted)
    a, b = load_file(str(run / "final.safetensors")), load_file(str(uninterrupted / "final.safetensors"))
    assert all(torch.equal(a[k], b[k]) for k in a)
    sig = [json.loads(x)["step"] for x in (run / "signals.jsonl").read_text().splitlines()]
    assert sig == [1, 4, 8, 12]
    mon = [(tmp_path / "cut"), uninterrupted]  # the monitor's rows are the uninterrupted run's, none twice
    a_rows, b_rows = ([json.loads(x) for x in (r / "monitor.jsonl").read_text().splitlines()] for r in mon)
    assert [r["step"] for r in a_rows] == [1, 4, 8, 12] and a_rows == b_rows
    assert _losses(run)[-1] < _losses(run)[0]  # it learned something


def test_damaged_checkpoint_is_named_and_skipped(uninterrupted, tmp_path):
    import shutil

    run = tmp_path / "dmg"
    shutil.copytree(uninterrupted, run)
    shutil.rmtree(run / "checkpoints" / "step-0000012")
    f = run / "checkpoints" / "step-0000008" / "model.safetensors"
    f.write_bytes(f.read_bytes()[:100])  # truncated
    with says("step-0000008 is damaged"):
        train(_cfg(), run, resume=True, progress=False)
    assert _losses(run) == _losses(uninterrupted)


def test_two_process_ddp_matches_one_process(uninterrupted, tmp_path):
    """torchrun --nproc_per_node=2 (gloo, CPU) with the same global batch gives the 1-process losses."""
    import os
    import subprocess
    import sys

    cfg = tmp_path / "tiny.toml"
    from headlab.training.config import to_toml

    cfg.write_text(to_toml(_cfg()))
    run = tmp_path / "ddp"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    r = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2",
                        f"--master_port={free_port()}", "-m", "headlab.cli", "train", str(cfg), "--out", str(run),
                        "--no-progress"],
                       env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    one, two = _losses(uninterrupted), _losses(run)
    assert len(two) == len(one) == 12
    # same data and gradients up to the order of float summation across two processes
    assert max(abs(a - b) / abs(a) for a, b in zip(one, two)) < 1e-4


def test_track_scores_every_checkpoint_through_the_detectors(uninterrupted, tmp_path):
    import shutil

    from headlab.cli import main
    from headlab.formation.tracking import METRICS, TrackResult

    run = tmp_path / "tracked"
    shutil.copytree(uninterrupted, run)
    (run / "checkpoints" / "step-0000004" / "state.json").write_text("{not json")
    with says("step-0000004 is damaged"):
        assert main(["track", str(run), "--n", "6", "--no-progress"]) == 0
    t = TrackResult.from_json(json.loads((run / "track" / "track.json").read_text()))
    assert t.steps == [1, 3, 8, 12] and set(t.scores) == set(METRICS)
    assert all(a.shape == (4, 2, 2) for a in t.scores.values())
    pt = t.scores["previous-token"]
    assert np.all((pt >= 0) & (pt <= 1)) and np.ptp(pt) > 0  # scores move over training
    ph = json.loads((run / "track" / "phases.json").read_text())
    assert set(ph["scores"]["induction"]) == {"0.0", "0.1", "1.0", "1.1"}
    for f in ("track.md", "track.csv", "loss.png", "heatmap_slash_mass.png", "trajectories_induction.png",
              "monitor.png"):
        assert (run / "track" / f).stat().st_size > 0
    assert "## Head monitor" in (run / "track" / "track.md").read_text()
    from headlab.formation.track_report import specialization_table

    table = specialization_table({"tiny": [run, run]})  # the same run as two seeds: every count appears twice
    row = table.splitlines()[2].split(" | ")
    emerged = [v for v in ph["scores"]["previous-token"].values() if v["emerged_at"] is not None]
    rose = [v for v in ph["scores"]["previous-token"].values() if v["rise"] is not None]
    assert row[:4] == ["| tiny", "previous-token (≥ 0.4)", f"{len(emerged)}, {len(emerged)}",
                       f"{len(rose)}, {len(rose)}"]
    assert len(table.splitlines()) == 2 + 4  # one row per metric
    with pytest.raises(HeadlabError, match="run headlab track"):
        specialization_table({"x": [tmp_path / "nothing"]})
    assert main(["predict", str(run)]) == 2  # one seed is not enough: one-line error
    assert main(["track", str(tmp_path / "nothing")]) == 2


def test_head_monitor_on_the_smoke_config(tmp_path):
    """The callback on configs/smoke.toml: a row every 10 steps with every head's scores, the collapse rules
    said once when they start to hold, the state rebuilt on resume."""
    from headlab.formation.head_monitor import METRICS as MONITORED
    from headlab.formation.head_monitor import read_monitor
    from headlab.training import load_config

    cfg = load_config("configs/smoke.toml")
    cfg.monitor.sink = 0.01  # every head holds more first-token mass than this: the all-sink rule must fire
    cfg.data.corpus = [SMALL_CORPUS]  # the smoke shape on a corpus whose pool fills in seconds, not half a minute
    train(cfg, tmp_path / "run", progress=False)
    steps, series, said = read_monitor(tmp_path / "run")
    assert steps == [1, 10, 20, 30, 40, 50, 60] and set(series) == set(MONITORED)
    assert all(a.shape == (7, 2, 4) for a in series.values())
    ent = series["entropy"]
    assert np.all((ent > 0) & (ent <= 1.0 + 1e-6))  # normalized by uniform attention over the same keys
    assert [w["step"] for w in said if w["rule"] == "all-sink"] == [20]  # after the warm-up, said once
    rows = [json.loads(x) for x in (tmp_path / "run" / "monitor.jsonl").read_text().splitlines()]
    assert all("all-sink" in r["holding"] for r in rows[2:]) and not rows[1]["holding"]



def test_a_run_carried_across_sittings_without_its_folder_ends_with_the_uninterrupted_scores(uninterrupted,
                                                                                                tmp_path):
    """The slash-dense study's carry (bench/studies/sdh_carry.py): a run stopped mid-way is packed (its
    checkpoints' scores and what a resume needs), its folder is lost, it is made again, resumed, stopped and packed
    a second time (which must keep the first carry's scores), lost again, resumed and finished, and its joined
    scores are the uninterrupted run's at every checkpoint."""
    import importlib.util
    import shutil
    from pathlib import Path

    import headlab
    from headlab.formation.induce.measure import MeasureResult, measure_run
    from headlab.formation.tracking import TrackResult

    spec = importlib.util.spec_from_file_location(
        "sdh_carry", Path(__file__).resolve().parents[2] / "bench" / "studies" / "sdh_carry.py")
    carry = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(carry)
    run, dest = tmp_path / "formation-sdh-all" / "s0", tmp_path / "carry" / "s0"
    with pytest.raises(KeyboardInterrupt):
        train(_cfg(), run, progress=False, callbacks=[StopAt(6)])
    carry.pack(run, dest)
    shutil.rmtree(run)  # a new checkout: runs/ is gone
    carry.unpack(dest, run)
    with pytest.raises(KeyboardInterrupt):
        train(_cfg(), run, resume=True, progress=False, callbacks=[StopAt(10)])
    carry.pack(run, dest)  # the second sitting's pack holds only checkpoints 6.. on disk
    shutil.rmtree(run)
    carry.unpack(dest, run)
    train(_cfg(), run, resume=True, progress=False)
    carry.finish(run, dest)
    whole = headlab.track(uninterrupted, progress=False, out=tmp_path / "whole", overwrite=True)
    joined = TrackResult.read(run / "track")
    assert joined.steps == sorted([*whole.steps, 6, 10])  # and the checkpoints the stops wrote
    same = [joined.steps.index(s) for s in whole.steps]
    assert all(np.allclose(joined.scores[m][same], whole.scores[m], equal_nan=True, atol=1e-6) for m in whole.scores)
    a, b = MeasureResult.read(run / MeasureResult.KIND), measure_run(uninterrupted, "all", draws=0, seed=0)
    assert [a.steps[i] for i in same] == b.steps and np.allclose([a.mass[i] for i in same], b.mass, atol=1e-6)
    assert [a.passed[i] for i in same] == b.passed
    assert (run / "track" / "phases.json").exists() and (run / "track" / "track.md").exists()
