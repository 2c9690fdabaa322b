"""Every result kind, with one number edited by hand, is refused by every way a result is read: generated over the
registry of result kinds, from a committed file of the kind where results/ has one and from a written instance
where it does not, so a kind added later is covered (or fails here) without a test of its own."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import typing
from pathlib import Path
from typing import Any

import pytest

from headlab.catalog import complete
from headlab.errors import HeadlabError
from headlab.integrity import Manifest, verified
from headlab.io import SEAL, sealed, write_json_atomic
from headlab.result import RESULTS, Result

ROOT = Path(__file__).resolve().parents[2]
complete()


def _committed(kind: str) -> Path | None:
    """The first committed file of ``kind`` that carries a seal."""
    for path in sorted((ROOT / "results").glob(f"**/{kind}")):
        if SEAL in json.loads(path.read_text()):
            return path
    return None


def _value(hint: Any) -> Any:
    """A plain value of a field's type (a number wherever a number may be)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint in (int, float) or float in args or int in args:
        return 3
    if hint is str or str in args:
        return "x"
    if hint is bool:
        return True
    if origin is dict:
        return {"a": 0.25}
    if origin in (list, tuple):
        return [0.5]
    return None


def _examples() -> dict[str, Result]:
    """Instances of the kinds whose fields a plain value cannot fill (their own checks, per-row records)."""
    from headlab.ablation.prune import PruneResult
    from headlab.head import Head
    from headlab.monitor.profile import Profile
    from headlab.study.languages import LanguageRow, LanguagesResult

    row = LanguageRow("en", 12, ["0.1"], [("0.1", 0.6, 0.5, 0.7)], 0.6, 1, 0.9)
    return {r.KIND: r for r in (
        PruneResult(model="m", metric="loss", fractions=[0.0, 0.5], curves={"exact": [1.0, 2.0]}, kept=[Head(0, 1)],
                    n_heads=2, importance={}),
        LanguagesResult("m", {"languages": ["en"], "reference": "en"}, [row]),
        Profile(model="m", corpus=["c"], features=["0.1"], median=[0.5], scale=[1.0], covariance=[[1.0]],
                threshold=3.25, fpr=0.25, n_fit=8, n_calibration=4, calibration_flag_rate=0.25,
                calibration_scores=[1.0, 2.0, 3.0, 4.0], settings={}))}


def _written(cls: type[Result], tmp: Path) -> Path:
    """A file of ``cls`` sealed as :meth:`Result.write` seals it, from an instance whose fields hold plain values
    (numbers included; the companion files, which need real values, are left out)."""
    example = _examples().get(cls.KIND)
    if example is None:
        hints = typing.get_type_hints(cls)
        example = cls.from_json({f.name: _value(hints[f.name]) for f in dataclasses.fields(cls)})
    return write_json_atomic(tmp / cls.KIND, sealed(example.to_json()))


def _leaves(obj: Any, kind: type | tuple[type, ...], at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """The paths to every value of ``kind`` in a JSON document, outside its seal (booleans are not numbers)."""
    if isinstance(obj, dict):
        return [p for k, v in obj.items() if k != SEAL for p in _leaves(v, kind, (*at, k))]
    if isinstance(obj, list):
        return [p for i, v in enumerate(obj) for p in _leaves(v, kind, (*at, i))]
    return [at] if isinstance(obj, kind) and not isinstance(obj, bool) else []


def _flip(text: str) -> str:
    return ("1" if text[:1] == "0" else "0") + text[1:]


def _edit_one_number(path: Path) -> None:
    """One number raised by 1 (a digest changed by one digit, in a kind that holds no number)."""
    doc = json.loads(path.read_text())
    where = (_leaves(doc, (int, float)) or _leaves(doc, str))[0]
    node = doc
    for key in where[:-1]:
        node = node[key]
    node[where[-1]] = node[where[-1]] + 1 if not isinstance(node[where[-1]], str) else _flip(node[where[-1]])
    path.write_text(json.dumps(doc, indent=2))


@pytest.mark.parametrize("kind", sorted(RESULTS))
def test_one_number_edited_by_hand_in_any_result_kind_is_refused(kind: str, tmp_path: Path) -> None:
    cls = RESULTS[kind]
    source = _committed(kind)
    path = tmp_path / "copy" / kind
    path.parent.mkdir()
    shutil.copy(source if source is not None else _written(cls, tmp_path), path)
    assert cls.read(path.parent) is not None and verified(path)  # as written, it reads
    _edit_one_number(path)
    for read in (lambda: cls.read(path.parent), lambda: verified(path)):
        with pytest.raises(HeadlabError, match=f"{kind} was changed after headlab wrote it"):
            read()


def test_a_finished_runs_log_is_sealed_by_its_folders_manifest(tmp_path: Path) -> None:
    log = tmp_path / "eval.jsonl"
    log.write_text('{"step": 10, "loss": 1.5}\n')
    assert not verified(log)  # nothing seals it yet: read as it is
    Manifest.of(tmp_path, ["eval.jsonl", "absent.jsonl"]).write(tmp_path)
    assert Manifest.read(tmp_path).digests.keys() == {"eval.jsonl"} and verified(log)
    log.write_text('{"step": 10, "loss": 0.5}\n')
    with pytest.raises(HeadlabError, match="eval.jsonl was changed after headlab wrote it .*manifest.json"):
        verified(log)


def test_every_committed_finished_run_log_is_sealed() -> None:
    logs = [p for p in (ROOT / "results").glob("**/eval.jsonl") if (p.parent / "summary.json").is_file()]
    assert logs and all(verified(p) for p in logs)


@pytest.mark.parametrize("forge, said", [
    (lambda d: d.update(n_sdh=5), "n_sdh 5"),
    (lambda d: d.update(sdh_share=0.25), "sdh_share 0.25"),
    (lambda d: d["heads"][3]["scores"].update(offset_by_delta=[1.5] * 9), "offset score 1.5 of head 0.3"),
    (lambda d: d["heads"][1]["scores"].update(sink=-0.2), "sink score -0.2 of head 0.1 is outside [0, 1]"),
])
def test_a_scan_forged_and_sealed_again_is_refused_by_its_numbers(forge, said, tmp_path: Path) -> None:
    from headlab.census.result import ScanResult

    doc = json.loads((ROOT / "results/quickstart/scan/scan.json").read_text())
    assert ScanResult.from_json(dict(doc)) is not None  # as measured, it reads
    forge(doc)
    write_json_atomic(tmp_path / "scan.json", sealed(doc))
    with pytest.raises(HeadlabError, match=re.escape(said)):
        ScanResult.read(tmp_path)


@pytest.mark.parametrize("reader", ["report", "compare", "scale"])
def test_a_result_whose_seal_was_removed_is_said_by_its_reader(reader: str, tmp_path: Path, capsys) -> None:
    """A seal removed by hand (with an edit it would have shown) leaves nothing that shows the file is as headlab
    wrote it: each reader says so in one line on stderr, and reads it as it is."""
    import headlab

    shutil.copytree(ROOT / "results/quickstart/scan", tmp_path / "a", ignore=shutil.ignore_patterns("report"))
    doc = json.loads((tmp_path / "a/scan.json").read_text())
    doc.pop(SEAL)
    (tmp_path / "a/scan.json").write_text(json.dumps(doc))
    given = tmp_path / "a" if reader == "report" else [tmp_path / "a"]  # compare and scale take several
    getattr(headlab, reader)(given, out=tmp_path / "out", overwrite=False)
    said = capsys.readouterr().err
    assert f"{reader}: 1 result file(s) carry no seal" in said and "a/scan.json" in said, said


def _forge_verdicts(obj: Any) -> int:
    """Every stored verdict in a result's JSON set to "supported" (what a forger who seals the file again writes)."""
    if isinstance(obj, dict):
        # a claims row, a monitor evaluation's kind (a row that measured nothing: tests/consistency/test_ledger.py)
        hit = int("verdict" in obj and obj["verdict"] != "not measured")
        if hit:
            obj["verdict"] = "supported"
        return hit + sum(_forge_verdicts(v) for v in obj.values())
    return sum(_forge_verdicts(v) for v in obj) if isinstance(obj, list) else 0


@pytest.mark.parametrize("committed", ["results/study/claims/claims.json", "results/monitor/minilm-l6/evaluate.json"])
def test_a_report_shows_verdicts_judged_again_never_as_stored(committed: str, tmp_path: Path) -> None:
    """A stored verdict forged and sealed again does not reach the report: its sections judge the statistics."""
    import headlab

    doc = json.loads((ROOT / committed).read_text())
    (tmp_path / "r").mkdir()
    honest = headlab.report(_written_as(doc, tmp_path / "r"), out=tmp_path / "honest", overwrite=False)
    assert _forge_verdicts(doc) >= 2
    forged = headlab.report(_written_as(doc, tmp_path / "r"), out=tmp_path / "forged", overwrite=False)
    assert (forged.folder / "report.md").read_text() == (honest.folder / "report.md").read_text()


def _written_as(doc: dict, folder: Path) -> Path:
    kind = next(k for k, cls in RESULTS.items() if set(doc) - {SEAL} == set(cls.keys()))
    write_json_atomic(folder / kind, sealed(doc))
    return folder


@pytest.mark.parametrize("forge, said", [
    (lambda k: k["auroc"].update(heads=[1.7, 1.6, 1.8]), "the heads AUROC [1.7, 1.6, 1.8] is not a share"),
    (lambda k: k["auroc"].update(heads=[0.9, 0.95, 0.99]), "the heads AUROC [0.9, 0.95, 0.99] is not a share"),
    (lambda k: k["recall_at_fpr"].update(heads=-0.1), "the heads recall [-0.1] is not a share"),
])
def test_a_monitor_evaluation_forged_and_sealed_again_is_refused_by_its_numbers(forge, said, tmp_path) -> None:
    """Its kinds are judged from these numbers: an AUROC outside [0, 1], or outside its own interval, is refused."""
    from headlab.monitor.comparison import EvaluationResult

    doc = json.loads((ROOT / "results/monitor/minilm-l6/evaluate.json").read_text())
    forge(next(iter(doc["kinds"].values())))
    write_json_atomic(tmp_path / EvaluationResult.KIND, sealed(doc))
    with pytest.raises(HeadlabError, match=re.escape(said)):
        EvaluationResult.read(tmp_path)


def test_a_training_track_forged_and_sealed_again_is_refused_by_its_numbers(tmp_path: Path) -> None:
    """The formation rules judge a run's track: a share of attention above 1 is not a measured score."""
    from headlab.formation.tracking import TrackResult

    doc = json.loads((ROOT / "results/formation/long/encoder/s0/track/track.json").read_text())
    doc["scores"]["slash_mass"][-1][0][1] = 1.5
    write_json_atomic(tmp_path / TrackResult.KIND, sealed(doc))
    with pytest.raises(HeadlabError, match=re.escape(f"the slash_mass score 1.5 of head 0.1 at step "
                                                     f"{doc['steps'][-1]} is outside [0, 1]")):
        TrackResult.read(tmp_path)
    doc["scores"]["offset_delta"][-1][0][1] = 7  # a diagonal index, not a share
    doc["scores"]["slash_mass"][-1][0][1] = 0.5
    write_json_atomic(tmp_path / TrackResult.KIND, sealed(doc))
    assert TrackResult.read(tmp_path).scores["offset_delta"][-1, 0, 1] == 7
