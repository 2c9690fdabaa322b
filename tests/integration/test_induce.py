"""headlab induce end to end on a tiny config: two arms, one seed, a measured record per run, the summary,
and an interrupted study that picks up its finished runs (slow: trains)."""

import json

import numpy as np
import pytest

from headlab.cli import main
from headlab.formation.induce.measure import MeasureResult
from headlab.head import Head
from headlab.io import SEAL

from ..support import TINY_RUN

pytestmark = pytest.mark.slow


def _toml(raw: dict) -> str:
    out = []
    for section, kv in raw.items():
        out.append(f"[{section}]")
        out += [f"{k} = {json.dumps(v)}" for k, v in kv.items()]
    return "\n".join(out) + "\n"


def test_induce_runs_arms_measures_and_reuses_finished_runs(tmp_path, capsys):
    cfg = tmp_path / "tiny.toml"
    raw = {k: v for k, v in TINY_RUN.items() if k != "monitor"}
    cfg.write_text(_toml(dict(raw, track={"grad_every": 0})))
    args = ["induce", str(cfg), "--out", str(tmp_path / "study"), "--arms", "plain,aux", "--seeds", "0",
            "--weight", "5", "--draws", "2", "--no-progress"]
    assert main(args) == 0
    summary = json.loads((tmp_path / "study" / "induce.json").read_text())["summary"]
    assert list(summary) == ["plain", "aux"]
    assert summary["plain"]["loss_cost_vs_plain"]["mean"] == 0.0
    rec = json.loads((tmp_path / "study" / "runs" / "aux-s0" / "measure.json").read_text())
    assert rec["induced_heads"] == ["1.0"] and rec["aux_stop"] == 7  # 0.6 of 12 steps
    # two draws asked; the tiny model's layer may hold a single distinct matched set, run once
    assert len(rec["steps"]) == len(rec["mass"]) == len(rec["loss"]) and rec["ablation"]["draws"] in (1, 2)
    plain = json.loads((tmp_path / "study" / "runs" / "plain-s0" / "measure.json").read_text())
    typed = MeasureResult.read(tmp_path / "study" / "runs" / "aux-s0")  # the record is a registered result
    assert typed.induced_heads == [Head(1, 0)] and typed.arm == "aux"
    assert typed.to_json() == {k: v for k, v in rec.items() if k != SEAL}  # sealed as written
    # measured (seeded): head 1.0's `/` mass on the held-out probe windows ~doubles in 12 steps (7 with the term),
    # the heads of layer 0, upstream of the term only through the residual stream, barely move
    gain = np.array(rec["mass"][-1]) - np.array(plain["mass"][-1])
    assert gain[1, 0] > 0.5 * plain["mass"][-1][1][0] and np.abs(gain[0]).max() < 0.01
    rows = [json.loads(x) for x in (tmp_path / "study" / "runs" / "aux-s0" / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows if "aux" in r] == list(range(1, 8)) and 0 < rows[0]["aux"] <= 5.0
    assert "| aux |" in (tmp_path / "study" / "induce.md").read_text()
    runs = tmp_path / "study" / "runs"  # the aux arm trained on the plain arm's pool (same data settings, seed)
    assert (runs / "aux-s0" / "data.safetensors").read_bytes() == (runs / "plain-s0" / "data.safetensors").read_bytes()
    assert main(args) == 2 and "--overwrite" in capsys.readouterr().err  # a finished study is not replaced
    stamps = {p: p.stat().st_mtime_ns for p in runs.glob("*/*") if p.is_file()}
    (tmp_path / "study" / "induce.json").unlink()
    assert main(args + ["--overwrite"]) == 0  # the summary again, from the finished runs as they are
    assert stamps == {p: p.stat().st_mtime_ns for p in runs.glob("*/*") if p.is_file()}
    assert json.loads((tmp_path / "study" / "induce.json").read_text())["summary"] == summary
    cfg.write_text(cfg.read_text().replace("steps = 12", "steps = 13"))  # another study in the same folder
    assert main(args + ["--overwrite"]) == 2 and "trained from another config" in capsys.readouterr().err
