"""The head monitor on a real model and real text: a profile of prose, checked on prose and on code."""

import json
from pathlib import Path

import numpy as np
import pytest

import headlab
from headlab.cli import main
from headlab.errors import HeadlabError
from headlab.monitor import Profile

from ..support import free_port, need

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def profile(tmp_path_factory: pytest.TempPathFactory):
    need("minilm-l6")
    out = tmp_path_factory.mktemp("monitor") / "profile"
    assert main(["monitor", "fit", "minilm-l6", "--corpus", "wiki", "--max-samples", "300", "--out", str(out),
                 "--no-progress"]) == 0
    return out


def test_profile_is_calibrated_and_round_trips(profile) -> None:
    prof = Profile.read(profile / "profile.json")
    # the top 8 heads of each of the 6 census detectors, and every head's entropy (6 layers x 12 heads)
    assert prof.n_calibration >= 10 and len(prof.features) == 6 * 8 + 6 * 12
    assert prof.settings["detectors"][-1] == "entropy"
    assert prof.calibration_flag_rate <= 0.05  # the 1% quantile of the held-out reference, a few documents
    assert Profile.from_json(json.loads((profile / "profile.json").read_text())) == prof


def test_code_is_flagged_more_often_than_prose_and_explained(profile, tmp_path, capsys) -> None:
    assert main(["monitor", "check", str(profile), "--corpus", "pydoc", "--max-samples", "120", "--out",
                 str(tmp_path / "code"), "--no-progress"]) == 0
    code = json.loads((tmp_path / "code" / "check.json").read_text())
    rows = [json.loads(x) for x in (tmp_path / "code" / "monitor.jsonl").read_text().splitlines()]
    assert code["n_documents"] == len(rows) > 10
    import pandas as pd

    table = pd.read_parquet(tmp_path / "code" / "monitor.parquet")
    assert list(table["doc"]) == [r["doc"] for r in rows] and list(table["flag"]) == [r["flag"] for r in rows]
    top = rows[0]["deviations"][0]
    assert table.loc[0, "z/" + top["feature"]] == pytest.approx(top["z"], rel=1e-5)
    prof = Profile.read(profile / "profile.json")
    # measured (seeded): code departs from the prose profile more than held-out prose does (median score 1.45x
    # the held-out reference's under the spread floor; whether heads beat cheap baselines is the evaluation's
    # question, not this test's)
    assert np.median([r["score"] for r in rows]) > 1.3 * np.median(prof.calibration_scores)
    assert code["flag_rate"] >= prof.fpr
    flagged = [r for r in rows if r["flag"]]
    assert flagged and "spreads above reference" in flagged[0]["deviations"][0]["explanation"]
    assert "![scores](scores.png)" in (tmp_path / "code" / "monitor.md").read_text()
    assert (tmp_path / "code" / "scores.png").stat().st_size > 0
    assert main(["monitor", "check", str(tmp_path), "--corpus", "pydoc", "--out", str(tmp_path / "x")]) == 2
    assert "profile.json" in capsys.readouterr().err


def test_evaluate_separates_path_text_and_checks_its_calibration(tmp_path) -> None:
    """On a reference given as a JSONL whose records keep their text in another field (``--text-field``)."""
    from headlab.corpus import documents

    need("minilm-l6")
    out, reference = tmp_path / "eval", tmp_path / "wiki.jsonl"
    reference.write_text("".join(json.dumps({"title": d.doc_id, "content": "\n\n".join(d.load())}) + "\n"
                                 for d in documents(["wiki"])), encoding="utf-8")
    assert main(["monitor", "evaluate", "minilm-l6", "--reference", str(reference), "--id-field", "title",
                 "--text-field", "content", "--max-samples", "200", "--kind-samples", "30", "--kinds", "paths",
                 "--out", str(out), "--no-progress"]) == 0
    r = json.loads((out / "evaluate.json").read_text())
    assert r["baselines"] == ["characters", "gopher", "c4", "ngram"]  # an encoder has no next-token loss
    row = r["kinds"]["paths"]
    # measured (seeded): the `/`-mass heads separate path-dense prose almost perfectly (AUROC 1.00 at 3000 samples)
    # the outcome: a kind whose every AUROC is 1.00 has the statistics of committed kinds, which read exploratory
    assert row["auroc"]["heads"][0] > 0.9 and row["verdict"].split(" · ")[-1] in {"heads better", "tie"}
    assert set(row["auroc"]) == {"heads", "heads-forest", *r["baselines"]}
    assert row["best_baseline"] in r["baselines"] and set(row["dropped"]) == set(r["fresh_dropped"]) == {"gopher", "c4"}
    # a paired gain is the combination's AUROC less the best baseline's, to rounding
    assert row["gain_over_best"][0] == pytest.approx(row["combined"][0] - row["auroc"][row["best_baseline"]][0])
    # every signal combined (each record's rarest signal), recomputed by a naive loop from the scores kept
    from sklearn.metrics import roc_auc_score

    kept = np.load(out / "scores.npz")
    e = row["every_signal"]
    assert e["signals"] == ["heads", *r["baselines"]] and set(e["gain_over"]) == set(e["signals"])

    def rarest(part: str) -> np.ndarray:  # -log p, continued past the calibration's largest score
        out = []
        for d in range(len(kept[f"{part}/heads"])):
            rare = []
            for m in e["signals"]:
                c, x = kept[f"calibration/{m}"], kept[f"{part}/{m}"][d]
                tail = (c.max() - np.quantile(c, 0.9)) or 1.0
                rare.append(-np.log((1 + (c >= x).sum()) / (len(c) + 1)) + max(0.0, (x - c.max()) / tail))
            out.append(max(rare))
        return np.array(out)

    neg, pos = rarest("fresh"), rarest("paths")
    y = np.r_[np.zeros(len(neg)), np.ones(len(pos))]
    assert e["auroc"][0] == pytest.approx(roc_auc_score(y, np.r_[neg, pos]), abs=1e-12)
    # at 1% of a few dozen fresh documents the cut is their largest score, so whether any path document passes it
    # turns on one document (seen both ways across machines): the share is checked against the loop, not against 0
    flagged = pos > np.quantile(neg, 0.99)
    assert e["flagged"] == pytest.approx(flagged.mean()) and 0 <= e["flagged"] <= 1
    assert sum(e["flagged_by"].values()) == pytest.approx(1.0 if flagged.any() else 0.0)
    c = r["calibration"]
    assert c["documents"] == r["fresh_documents"] > 20 and len(c["curve"]) == 5
    assert r["fitted_documents"] + r["calibration_documents"] + r["fresh_documents"] == r["reference_documents"]
    assert (out / "calibration.png").stat().st_size > 0 and "Calibration on" in (out / "evaluate.md").read_text()


def test_a_profile_refuses_another_model(profile, tmp_path) -> None:
    import headlab
    from headlab.errors import HeadlabError

    with pytest.raises(HeadlabError, match="fitted on minilm-l6, not mpnet-base"):
        headlab.monitor.check(profile, corpus=["pydoc"], model="mpnet-base", out=tmp_path / "c")
    assert not (tmp_path / "c" / "check.json").exists()


def test_a_profile_refuses_a_model_that_is_not_the_one_it_was_fitted_on(profile, tmp_path) -> None:
    """By identity, not name: the fitted model's folder with its contents replaced, a profile whose ``model`` was
    edited, and a loaded model of the same name with other weights are refused before the scan."""
    import shutil

    from safetensors.torch import load_file, save_file

    fitted = headlab.load("minilm-l6")
    prof = json.loads((profile / "profile.json").read_text())
    assert prof["model_identity"] == fitted.identity
    folder = tmp_path / "m"
    shutil.copytree(fitted.source, folder)
    weights = load_file(folder / "model.safetensors")
    weights["encoder.layer.2.attention.self.key.weight"] *= 1.01  # a model one step of fine-tuning away
    save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})

    def edited(model: str) -> Path:  # the fitted profile, its "model" pointing elsewhere
        (tmp_path / model.replace("/", "_")).mkdir()
        path = tmp_path / model.replace("/", "_") / "profile.json"
        path.write_text(json.dumps({k: v for k, v in {**prof, "model": model}.items() if k != "content_sha256"}))
        return path.parent

    need("smollm2-135m")
    renamed = headlab.load(folder)
    renamed.name = "minilm-l6"
    for p, given in [(edited(str(folder)), None), (profile, renamed), (edited("smollm2-135m"), None)]:
        with pytest.raises(HeadlabError, match="is not the model the profile was fitted on"):
            headlab.monitor.check(p, corpus=["pydoc"], model=given, out=tmp_path / "c", progress=False)
        assert not (tmp_path / "c" / "check.json").exists()


def test_a_jsonl_dataset_is_checked_record_by_record_in_its_own_order(profile, tmp_path, monkeypatch) -> None:
    """The unit of a dataset is the record: N records give N rows, named by their id, in input order, scored
    bucket by bucket (here 4 records a bucket); the Python twin returns the rows the command wrote."""
    import pandas as pd

    from headlab.monitor import fingerprint

    from .conftest import PLAIN_TEXTS, SLASH_TEXTS

    monkeypatch.setattr(fingerprint, "BUCKET_DOCS", 4)

    texts = (SLASH_TEXTS + PLAIN_TEXTS) * 10
    records = [{"id": f"rec-{29 - i:02d}", "text": t} for i, t in enumerate(texts[:30])]  # ids against file order
    data = tmp_path / "new.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert main(["monitor", "check", str(profile), "--corpus", str(data), "--out", str(tmp_path / "c"),
                 "--no-progress"]) == 0
    rows = [json.loads(x) for x in (tmp_path / "c" / "monitor.jsonl").read_text().splitlines()]
    assert [r["doc"] for r in rows] == [f"{data}#{r['id']}" for r in records]
    assert all(r["windows"] == 1 for r in rows)
    assert max(abs(d["z"]) for r in rows for d in r["deviations"]) < 1000  # the spread floor holds
    table = pd.read_parquet(tmp_path / "c" / "monitor.parquet")
    assert table["doc"].tolist() == [r["doc"] for r in rows] and table["score"].tolist() == [r["score"] for r in rows]
    res, returned = headlab.monitor.check(profile, corpus=[str(data)], progress=False)
    assert returned == rows and res.n_documents == 30
    with pytest.raises(HeadlabError, match="rows=False keeps no row"):
        headlab.monitor.check(profile, corpus=[str(data)], rows=False, progress=False)
    assert main(["monitor", "check", str(profile), "--corpus", str(data), "--id-field", "", "--out",
                 str(tmp_path / "lines"), "--no-progress"]) == 0
    rows = [json.loads(x) for x in (tmp_path / "lines" / "monitor.jsonl").read_text().splitlines()]
    assert [r["doc"] for r in rows] == [f"{data}:{n}" for n in range(1, 31)]


def test_the_filtered_dataset_keeps_the_records_not_flagged_byte_for_byte(profile, tmp_path) -> None:
    from .conftest import PLAIN_TEXTS, SLASH_TEXTS

    texts = SLASH_TEXTS + PLAIN_TEXTS
    # spacing, key order and escapes a re-serialization would change; a path list the profile should flag
    lines = [f'{{ "text": {json.dumps(t, ensure_ascii=True)},  "id" : "r{i}", "meta": {{"x": 1.50}} }}\n'
             for i, t in enumerate(texts)]
    lines.append(json.dumps({"id": "paths", "text": " ".join(f"/usr/lib/x{i}/y/z.so" for i in range(60))}) + "\n")
    data = tmp_path / "d.jsonl"
    data.write_bytes("".join(lines).encode())
    kept, scored = tmp_path / "kept.jsonl", tmp_path / "scored.jsonl"
    assert main(["monitor", "check", str(profile), "--corpus", str(data), "--out", str(tmp_path / "c"),
                 "--write-filtered", str(kept), "--write-scores", str(scored), "--no-progress"]) == 0
    rows = [json.loads(x) for x in (tmp_path / "c" / "monitor.jsonl").read_text().splitlines()]
    assert len(rows) == len(lines) and any(r["flag"] for r in rows)
    want = [line for line, r in zip(lines, rows) if not r["flag"]]
    assert kept.read_bytes() == "".join(want).encode()  # unchanged bytes, input order
    back = [json.loads(x) for x in scored.read_text().splitlines()]
    assert [b["headlab_flag"] for b in back] == [r["flag"] for r in rows] and back[0]["meta"] == {"x": 1.5}
    assert main(["monitor", "check", str(profile), "--corpus", "pydoc", "--out", str(tmp_path / "p"),
                 "--write-filtered", str(tmp_path / "k2.jsonl"), "--no-progress"]) == 2  # no records to write


@pytest.fixture(scope="module")
def whole_check(profile, tmp_path_factory: pytest.TempPathFactory):
    """A dataset of 96 records, the check's arguments, and the folder of its uninterrupted check."""
    from .conftest import PLAIN_TEXTS, SLASH_TEXTS

    tmp = tmp_path_factory.mktemp("whole-check")
    texts = (SLASH_TEXTS + PLAIN_TEXTS) * 16
    data = tmp / "d.jsonl"
    data.write_text("".join(json.dumps({"id": f"r{i}", "text": t}) + "\n" for i, t in enumerate(texts[:96])))
    args = ["monitor", "check", str(profile), "--corpus", str(data), "--max-samples", "0", "--batch-size", "2",
            "--checkpoint-every", "16", "--no-progress"]
    assert main([*args, "--out", str(tmp / "whole")]) == 0
    return data, args, tmp / "whole"


# SIGTERM takes Ctrl-C's path (headlab.interrupts); it is the signal of the scan's and the training's graceful-stop
# tests, so each path is run once in the suite's time
@pytest.mark.parametrize("sig", ["SIGKILL", "SIGINT"])
def test_a_check_stopped_mid_dataset_resumes_to_the_same_rows(whole_check, tmp_path, sig) -> None:
    """kill -9 or Ctrl-C during a check (at a random point past its first checkpoint) keeps its
    checkpoint; a rerun without --resume is refused, --resume finishes it with every row an uninterrupted check
    writes, and the scan folder goes once the result is written."""
    import os
    import random
    import signal
    import subprocess
    import sys
    import time

    data, args, whole_dir = whole_check
    out = tmp_path / "stopped"
    cmd = [sys.executable, "-m", "headlab", *args, "--out", str(out)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}

    def child() -> None:  # its own group, and Ctrl-C's default disposition as a terminal gives it
        os.setsid()
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                         preexec_fn=child)
    t0, ckpt = time.time(), out / ".check-scan" / "scan.checkpoint.json"
    while time.time() - t0 < 240 and p.poll() is None and not ckpt.exists():
        time.sleep(0.05)
    time.sleep(random.Random(os.getpid()).uniform(0, 0.5))  # past the first checkpoint, somewhere in the next
    os.killpg(p.pid, getattr(signal, sig))
    err = p.communicate(timeout=120)[1]
    assert p.returncode == {"SIGKILL": -9, "SIGTERM": 143, "SIGINT": 130}[sig], err[-2000:]
    assert ckpt.exists() and not (out / "monitor.jsonl").exists(), "the check ended before it could be stopped"
    assert main([*args, "--out", str(out)]) == 2  # an interrupted check is not silently restarted
    assert main([*args, "--out", str(tmp_path / "fresh"), "--resume"]) == 2  # nothing there to resume
    r = subprocess.run([*cmd, "--resume"], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "past --max-samples" not in r.stderr
    whole, resumed = ([json.loads(x) for x in (d / "monitor.jsonl").read_text().splitlines()]
                      for d in (whole_dir, out))
    assert [r["doc"] for r in resumed] == [r["doc"] for r in whole] == [f"{data}#r{i}" for i in range(96)]
    np.testing.assert_allclose([r["score"] for r in resumed], [r["score"] for r in whole], rtol=1e-4)
    assert not (out / ".check-scan").exists() and not (whole_dir / ".check-scan").exists()


def test_a_check_sharded_over_two_processes_equals_one(profile, tmp_path) -> None:
    """Under torchrun every rank scans its share of the windows and rank 0 scores the merged rows: the same
    records, in input order, with the same scores as one process, and one set of files."""
    import os
    import subprocess
    import sys

    from .conftest import PLAIN_TEXTS, SLASH_TEXTS

    data = tmp_path / "d.jsonl"
    texts = (SLASH_TEXTS + PLAIN_TEXTS) * 8
    data.write_text("".join(json.dumps({"id": f"r{i}", "text": t}) + "\n" for i, t in enumerate(texts[:48])))
    args = ["monitor", "check", str(profile), "--corpus", str(data), "--batch-size", "2", "--no-progress"]
    assert main([*args, "--out", str(tmp_path / "one")]) == 0
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    r = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
                        f"--master_port={free_port()}", "-m", "headlab",
                        *args, "--out", str(tmp_path / "two")], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    one, two = ([json.loads(x) for x in (tmp_path / d / "monitor.jsonl").read_text().splitlines()]
                for d in ("one", "two"))
    assert [x["doc"] for x in two] == [x["doc"] for x in one] == [f"{data}#r{i}" for i in range(48)]
    np.testing.assert_allclose([x["score"] for x in two], [x["score"] for x in one], rtol=1e-4)
    assert not (tmp_path / "two" / ".headlab.lock").exists()


def test_a_profile_keeps_the_dtype_it_was_fitted_in(tmp_path) -> None:
    """A bf16 profile checks in bf16: a model given in float32 is refused, and a check that loads the model
    itself gives the rows of one given the bf16 model (the heads' numbers move with the rounding)."""
    import headlab
    from headlab.errors import HeadlabError

    out = tmp_path / "half"
    # 48-token windows: bf16 matmuls run at a third of float32's speed on a CPU without bf16 units, and the
    # fit still draws about a hundred documents
    prof = headlab.monitor.fit("minilm-l6", corpus=["wiki"], max_samples=120, max_length=48, dtype="bfloat16",
                               progress=False, out=out)
    assert prof.settings["dtype"] == "bfloat16"
    # pysrc: whole files fill the sampler's shuffle buffer from a few documents, where pydoc parses hundreds
    with pytest.raises(HeadlabError, match="fitted in bfloat16, the model given is float32"):
        headlab.monitor.check(out, corpus=["pysrc"], model=headlab.load("minilm-l6"), max_samples=8, progress=False)
    _, own = headlab.monitor.check(out, corpus=["pysrc"], max_samples=8, progress=False)
    _, given = headlab.monitor.check(out, corpus=["pysrc"], model=headlab.load("minilm-l6", dtype="bfloat16"),
                                     max_samples=8, progress=False)
    assert [r["score"] for r in own] == [r["score"] for r in given] and len(own) > 0


def test_every_skipped_record_is_recorded_in_the_result_not_only_said(profile, tmp_path, capsys) -> None:
    """Lines that are not objects, texts that are null, numbers, lists, empty or blank, and ids of another type
    are said on stderr and kept in check.json and monitor.md; a byte-order mark does not cost the first record."""
    from .conftest import PLAIN_TEXTS

    texts = PLAIN_TEXTS * 4
    good = [json.dumps({"id": f"r{i}", "text": t}) for i, t in enumerate(texts[:3])]
    lines = ["\ufeff" + good[0], good[1], "[1, 2]", json.dumps({"id": "n", "text": None}),
             json.dumps({"id": "x", "text": 5}), json.dumps({"id": "l", "text": ["a"]}),
             json.dumps({"id": "e", "text": ""}), json.dumps({"id": "b", "text": "   "}),
             json.dumps({"id": {"a": 1}, "text": texts[3]}), good[2],
             json.dumps({"id": "z", "text": "\u200b\u200b"}), json.dumps({"id": "c", "text": "\u0001\u0002"})]
    data = tmp_path / "mixed.jsonl"
    data.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["monitor", "check", str(profile), "--corpus", str(data), "--out", str(tmp_path / "c"),
                 "--no-progress"]) == 0
    rows = [json.loads(x)["doc"] for x in (tmp_path / "c" / "monitor.jsonl").read_text().splitlines()]
    assert f"{data}#r0" in rows and len(rows) == 4  # the BOM-prefixed first record is kept; the odd id by line
    check = json.loads((tmp_path / "c" / "check.json").read_text())
    said = " ".join(check["notices"])
    assert "without a string 'text' field skipped" in said and "empty or blank text skipped" in said
    assert "named by their line number" in said
    assert "no window" in said and "past --max-samples" not in said  # zero-width and control-character texts
    assert "Skipped or repaired" in (tmp_path / "c" / "monitor.md").read_text()
    assert "empty or blank" in capsys.readouterr().err
