"""The depth law read from a sweep's run summaries: D_max per run, the medians, the bounds and the refusals."""

import json
from pathlib import Path

import pytest

from headlab.cli import main
from headlab.retrieval.law import d_max, depth_law


def _run(folder: Path, name: str, layers: int, curriculum: str, by_hop: dict[str, float], depth: int = 4,
         steps: int = 100) -> None:
    (folder / name).mkdir(parents=True)
    key = "final_hops" if curriculum == "dense" else "final_accuracy"
    summary = {"task": {"depth": depth, "curriculum": curriculum}, "n_layers": layers, "steps": steps,
               "batch_size": 64, "d_model": 64, "n_heads": 4, "lr": 1e-3, "positions": "rope", "seed": 0,
               "warmup_steps": 10, "final_accuracy": {}, "final_hops": {}, key: by_hop}
    (folder / name / "summary.json").write_text(json.dumps(summary))


def test_d_max_is_the_solved_prefix() -> None:
    assert d_max({"1": 1.0, "2": 0.96, "3": 0.5, "4": 0.99}) == 2  # hop 4 does not count past a failed hop 3
    assert d_max({"1": 0.9}) == 0 and d_max({}) == 0


def test_depth_law_tabulates_every_seed_and_writes_its_files(tmp_path: Path, capsys) -> None:
    sweep = tmp_path / "sweep"
    _run(sweep, "L1-D4-dense-s0", 1, "dense", {"1": 1.0, "2": 0.4})
    _run(sweep, "L1-D4-dense-s1", 1, "dense", {"1": 1.0, "2": 0.97, "3": 0.2})
    _run(sweep, "L2-D4-dense-s0", 2, "dense", {"1": 1.0, "2": 1.0, "3": 0.99, "4": 0.1})
    _run(sweep, "L1-D4-mixed-s0", 1, "mixed", {"1": 0.5, "2": 0.5})
    law = depth_law(sweep)
    cells = {(c["layers"], c["curriculum"]): c for c in law.cells}
    assert cells[(1, "dense")]["d_max"] == [1, 2] and cells[(1, "dense")]["median"] == 1.5
    assert cells[(2, "dense")]["d_max"] == [3] and cells[(2, "dense")]["log3_bound"] == 4.5
    assert cells[(1, "mixed")]["d_max"] == [0] and cells[(2, "dense")]["doubling"] == 4
    assert main(["retrieval", "depth-law", str(sweep)]) == 0
    assert "| 2 | dense | 1 | 3 | 3 | 4.5 | 4 |" in (sweep / "depth_law.md").read_text()
    assert (sweep / "depth_law.png").stat().st_size > 0
    assert main(["retrieval", "depth-law", str(sweep)]) == 2  # an earlier depth law is not overwritten silently
    assert "--overwrite" in capsys.readouterr().err


def test_depth_law_refuses_an_empty_folder_and_mixed_budgets(tmp_path: Path) -> None:
    from headlab.errors import HeadlabError

    with pytest.raises(HeadlabError, match="no finished run"):
        depth_law(tmp_path)
    _run(tmp_path, "a", 1, "dense", {"1": 1.0}, steps=100)
    _run(tmp_path, "b", 1, "dense", {"1": 1.0}, steps=200)
    with pytest.raises(HeadlabError, match="mixes"):
        depth_law(tmp_path)


def test_depth_law_reads_khop_runs_beside_the_published_threshold(tmp_path: Path) -> None:
    from headlab.retrieval.khop import PUBLISHED

    for layers, errors in ((2, {"0": 0.0, "1": 0.001, "2": 0.04, "3": 0.06, "4": 0.3}),
                           (3, {"0": 0.0, "1": 0.0, "2": 0.01, "3": 0.02, "4": 0.049})):
        (tmp_path / f"L{layers}").mkdir()
        summary = {"task": {"task": "khop", "max_hops": 4, "seq_len": 100, "n_chars": 4}, "n_layers": layers,
                   "steps": 100, "batch_size": 32, "d_model": 128, "n_heads": 4, "lr": 1e-3, "positions": "learned",
                   "seed": 0, "warmup_steps": 10,
                   "final_errors": errors, "solved": -99}  # read from the errors, not the run's own count
        (tmp_path / f"L{layers}" / "summary.json").write_text(json.dumps(summary))
    law = depth_law(tmp_path)
    cells = {c["layers"]: c for c in law.cells}
    assert cells[2]["d_max"] == [2] and cells[3]["d_max"] == [4] and law.trained_depth == 4
    assert cells[2]["curriculum"] == "khop" and cells[2]["published"] == PUBLISHED[2]
    assert f"| 3 | khop | 1 | 4 | 4 | 13.5 | 8 | {PUBLISHED[3]} |" in law.markdown()


def test_several_sweeps_read_side_by_side_each_row_naming_its_setting(tmp_path: Path, capsys) -> None:
    d4, d8 = tmp_path / "d4", tmp_path / "d8"
    _run(d4, "L3-D4-dense-s0", 3, "dense", {"1": 1.0, "2": 1.0, "3": 1.0, "4": 0.99})
    _run(d8, "L3-D8-dense-s0", 3, "dense", {"1": 1.0, "2": 0.99, "3": 0.5}, depth=8, steps=300)
    law = depth_law([d4, d8])
    assert [(c["trained_depth"], c["steps"], c["d_max"]) for c in law.cells] == [(4, 100, [4]), (8, 300, [2])]
    assert law.trained_depth == 8 and law.settings == [(4, 100), (8, 300)]
    assert "| 3 | dense | 8 | 300 | 1 | 2 | 2 | 13.5 | 8 | — |" in law.markdown()
    assert main(["retrieval", "depth-law", str(d4), str(d8)]) == 2  # where would one law of two go?
    assert "--out" in capsys.readouterr().err
    assert main(["retrieval", "depth-law", str(d4), str(d8), "--out", str(tmp_path / "law")]) == 0
    assert (tmp_path / "law" / "depth_law.png").stat().st_size > 0
    single = depth_law(d4)  # one sweep: the table keeps its one-setting form
    assert "trained on depth 4, 100 steps" in single.markdown() and "| 3 | dense | 1 | 4 | 4 |" in single.markdown()


def test_one_runs_folder_is_a_depth_law_of_that_run(tmp_path: Path, capsys) -> None:
    """A run's own folder (not only a sweep's) is read as a sweep of that one run, from the command line too."""
    run = Path(__file__).resolve().parents[2] / "results/retrieval/depth_edge/L1-D2/L1-D2-dense-s1"
    (cell,) = depth_law(run).cells
    assert (cell["layers"], cell["d_max"], cell["trained_depth"]) == (1, [2], 2)
    assert main(["retrieval", "depth-law", str(run), "--out", str(tmp_path)]) == 0
    assert "| 1 | dense | 1 | 2 |" in capsys.readouterr().out
