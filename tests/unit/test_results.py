"""Typed results: the JSON round trip, strict keys, heads as L.H."""

import json

import pytest

from headlab.ablation.importance import ImportanceResult
from headlab.ablation.prune import PruneResult
from headlab.ablation.result import AblateResult
from headlab.errors import HeadlabError
from headlab.formation.emergence import EmergenceResult
from headlab.formation.predict import PredictResult
from headlab.head import Head
from headlab.io import _clean
from headlab.retrieval.analysis import AnalyzeResult
from headlab.retrieval.grid import SweepResult
from headlab.retrieval.llm_eval import EvalLLMResult


def round_trip(cls, record: dict) -> None:
    """``record`` (as written to disk) reads back and writes out unchanged."""
    on_disk = json.loads(json.dumps(_clean(record)))
    assert json.loads(json.dumps(_clean(cls.from_json(on_disk).to_json()))) == on_disk


def test_heads_are_typed_and_written_as_l_dot_h() -> None:
    r = PruneResult(model="m", metric="loss", fractions=[0.0, 0.5], curves={"exact": [1.0, None]},
                    kept=[Head(0, 3), Head(2, 1)], n_heads=8, importance={"spearman_exact_vs_gradient": None})
    j = r.to_json()
    assert j["kept"] == ["0.3", "2.1"] and r["kept"] == ["0.3", "2.1"]
    back = PruneResult.from_json(j)
    assert back.kept == [Head(0, 3), Head(2, 1)] and back == r
    round_trip(PruneResult, j)


def test_missing_and_unknown_keys_are_named() -> None:
    good = EvalLLMResult("m", 0, 2, 0, [], "rule").to_json()
    with pytest.raises(HeadlabError, match="eval_llm.json: missing scoring"):
        EvalLLMResult.from_json({k: v for k, v in good.items() if k != "scoring"})
    with pytest.raises(HeadlabError, match="unknown extra"):
        EvalLLMResult.from_json({**good, "extra": 1})
    with pytest.raises(HeadlabError, match="is not of the form L.H"):
        AblateResult.from_json({**AblateResult("m", "zero", [Head(0, 1)], "loss", ["loss"], "d", {}, {}, {}, {}, 1,
                                               2).to_json(), "heads": ["x"]})


def test_a_renamed_key_of_an_earlier_file_reads_into_its_field_and_is_written_by_its_new_name() -> None:
    r = AblateResult("m", "zero", [Head(0, 1)], "loss", ["loss"], "every token", {"loss": {"delta": 0.5}}, {}, {}, {},
                     1, 2, positions="all")
    new = r.to_json()
    assert {"scored_definition", "scored", "rest"} <= set(new) and not {"slash", "no_slash"} & set(new)
    back = {v: k for k, v in AblateResult.RENAMED.items()}
    old = {back.get(k, k): v for k, v in new.items()}  # the keys files written before the rename hold
    assert {"slash_definition", "slash", "no_slash"} <= set(old)
    assert AblateResult.from_json(old) == r
    with pytest.raises(HeadlabError, match="unknown slash"):  # both spellings at once is not an earlier file
        AblateResult.from_json({**new, "slash": {}})


def test_nested_results_round_trip() -> None:
    inner = EmergenceResult(runs=[{"run": "a", "order": ["L0:a→b@10"], "types": ["L0:a→b"]}],
                            most_common_order=["L0:a→b"], same_order=1, n_runs=1, pairwise=[])
    outer = EmergenceResult(runs=inner.runs, most_common_order=["L0:a→b"], same_order=1, n_runs=1, pairwise=[],
                            by_layer_and_key=inner)
    assert EmergenceResult.from_json(outer.to_json()) == outer
    round_trip(EmergenceResult, outer.to_json())


@pytest.mark.parametrize("cls", [ImportanceResult, PredictResult, SweepResult, AnalyzeResult])
def test_every_field_survives_the_round_trip(cls) -> None:
    import dataclasses
    import typing

    hints = typing.get_type_hints(cls)
    sample = {"str": "x", "int": 3, "float": 0.25, "dict": {"a": [1, None]}, "list": [{"a": 1}], "opt": None}

    def value(hint):
        origin = typing.get_origin(hint)
        if hint is str:
            return sample["str"]
        if hint is int:
            return sample["int"]
        if hint is float or (origin is not None and float in typing.get_args(hint)):
            return sample["float"]
        if origin is dict:
            return sample["dict"]
        if origin is list:
            return [["a"]] if typing.get_args(hint)[0] == list[str] else sample["list"]
        return sample["opt"]

    record = {f.name: value(hints[f.name]) for f in dataclasses.fields(cls)}
    round_trip(cls, record)


def test_one_registry_of_result_kinds_written_into_and_read_from_a_folder(tmp_path) -> None:
    import headlab  # noqa: F401  (every command's result kind is registered on import)
    from headlab.census.result import ScanResult
    from headlab.formation.tracking import TrackResult
    from headlab.result import RESULTS, Result, found_in
    from headlab.study.characterize import CharacterizeResult
    from headlab.study.claims import ClaimsResult
    from headlab.study.languages import LanguagesResult

    for cls in (ScanResult, CharacterizeResult, ClaimsResult, LanguagesResult, TrackResult, PruneResult,
                AblateResult, ImportanceResult, SweepResult, EvalLLMResult, AnalyzeResult, EmergenceResult,
                PredictResult):
        assert issubclass(cls, Result) and RESULTS[cls.KIND] is cls, cls
    r = PruneResult(model="m", metric="loss", fractions=[0.0], curves={"exact": [1.0]}, kept=[Head(0, 1)],
                    n_heads=2, importance={})
    assert r.write(tmp_path / "run") == tmp_path / "run" and found_in(tmp_path / "run") == [PruneResult]
    assert PruneResult.read(tmp_path / "run") == r == PruneResult.read(tmp_path / "run" / "prune.json")
    with pytest.raises(HeadlabError, match="into a folder"):
        r.write(tmp_path / "run" / "prune.json")
    with pytest.raises(ValueError, match="already registered"):
        type("Twin", (Result,), {"KIND": "prune.json", "__module__": "elsewhere"})


def test_a_committed_scan_reads_strictly() -> None:
    from pathlib import Path

    from headlab.census.result import ScanResult

    folder = Path(__file__).parents[2] / "results/study/claims/minilm-l6"
    d = json.loads((folder / "scan.json").read_text())
    assert ScanResult.read(folder).n_samples == d["n_samples"]
    with pytest.raises(HeadlabError, match="scan.json: unknown extra"):
        ScanResult.from_json({**d, "extra": 1})
    with pytest.raises(HeadlabError, match="scan.json: missing heads"):
        ScanResult.from_json({k: v for k, v in d.items() if k != "heads"})


def test_a_score_is_named_by_its_detector_and_the_old_spelling_still_reads(tmp_path) -> None:
    """One name per score (``previous-token`` in scan.json, heads.csv, ``to_pandas()`` and ``means``); a
    committed scan.json written with ``previous_token`` reads to the same numbers."""
    from pathlib import Path

    import numpy as np

    from headlab.census.result import ScanResult

    folder = Path(__file__).parents[2] / "results/study/claims/minilm-l6"
    old = json.loads((folder / "scan.json").read_text())
    assert "previous_token" in old["heads"][0]["scores"]
    r = ScanResult.read(folder)
    assert [h["scores"]["previous_token"] for h in old["heads"]] == list(r.means["previous-token"].ravel())
    new = r.to_json()["heads"][0]["scores"]
    assert {"previous-token", "duplicate-token"} <= set(new) and not {"previous_token", "duplicate_token"} & set(new)
    r.write(tmp_path / "again")
    header = (tmp_path / "again" / "heads.csv").read_text().splitlines()[0].split(",")
    assert "previous-token" in header and "previous-token" in r.to_pandas().columns
    again = ScanResult.read(tmp_path / "again")
    np.testing.assert_array_equal(again.means["previous-token"], r.means["previous-token"])


def test_an_interrupted_scan_stops_its_consumers(tmp_path) -> None:
    from pathlib import Path

    from headlab.census.result import ScanResult
    from headlab.interrupts import Terminated, exit_code
    from headlab.study.scale import scale

    sc = ScanResult.read(Path(__file__).parents[2] / "results/quickstart/scan")
    sc.stop_if_interrupted("claims")  # a whole scan passes
    sc.interrupted, sc.interrupted_by = True, "SIGTERM"
    with pytest.raises(Terminated) as info:
        sc.stop_if_interrupted("headlab claims")
    assert exit_code(info.value) == 143 and "after 64 samples" in str(info.value)
    sc.write(tmp_path / "cut")
    with pytest.raises(HeadlabError, match="interrupted scan .*--resume"):
        scale([tmp_path / "cut"], tmp_path / "scale")


def test_a_finished_folder_keeps_no_lock_file_and_a_held_one_refuses(tmp_path) -> None:
    from headlab.io import FolderLock, writing

    with writing(tmp_path / "out", ["a.json"], False) as folder:
        (folder / "a.json").write_text("{}")
        assert (folder / ".headlab.lock").exists()
        with pytest.raises(HeadlabError, match="being written by headlab pid"):
            FolderLock(folder).acquire()
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["a.json"]
    with FolderLock(tmp_path / "out"):  # the next writer locks afresh
        pass
    with FolderLock(tmp_path / "empty"):
        pass
    assert not (tmp_path / "empty").exists()


def test_counts_take_the_right_number() -> None:
    from headlab.display import count

    assert (count(1, "SDH"), count(2, "SDH"), count(0, "head")) == ("1 SDH", "2 SDHs", "0 heads")
    assert count(1, "query", "queries") == "1 query" and count(3, "query", "queries") == "3 queries"


def test_top_heads_refuse_a_count_that_would_slice():
    """top(n=-1) read as a slice returned every head but the last; a count below 1 is refused."""
    from pathlib import Path

    import pytest

    from headlab.census.result import ScanResult
    from headlab.errors import HeadlabError

    r = ScanResult.read(Path(__file__).resolve().parents[2] / "results" / "study" / "claims" / "minilm-l6")
    assert len(r.top("token", 3)) == 3
    for bad in (-1, 0, 2.5, True):
        with pytest.raises(HeadlabError):
            r.top("token", bad)


def test_a_result_prints_its_summary_and_reprs_in_one_short_line() -> None:
    import numpy as np

    from headlab.api.pattern import Pattern

    p = Pattern("m", Head(0, 1), ["t"] * 2000, np.zeros((2000, 2000), np.float32))
    assert repr(p) == ("Pattern(model='m', head=Head(layer=0, head=1), tokens=<list of 2000>, "
                       "probs=<array (2000, 2000) float32>)")
    assert str(p) == p.markdown() and len(str(p)) < 2000
    r = PruneResult(model="m", metric="loss", fractions=[0.0], curves={"exact": [1.0]}, kept=[Head(0, 1)] * 500,
                    n_heads=2, importance={})
    assert "kept=<list of 500>" in repr(r) and len(repr(r)) < 300


def test_every_committed_phases_file_reads_as_its_result() -> None:
    from pathlib import Path

    from headlab.formation.track_report import PhasesResult

    found = sorted((Path(__file__).resolve().parents[2] / "results").rglob("phases.json"))
    assert found and all(PhasesResult.read(p).scores for p in found)
