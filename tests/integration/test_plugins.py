"""A detector installed as a distribution (a ``*.dist-info`` with ``entry_points.txt`` on ``sys.path``, as pip
leaves it) reaches every command from the command line without an import by the user: ``scan --detectors NAME``,
``report``, ``view`` and the monitor's ``fit`` and ``check``; ``module:Class`` loads one without packaging; a
broken plugin is left out with one line and the built-in detectors still work."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support import need

PLUGIN = '''
import torch
from headlab.detectors import Batch, Detector


class Punctuation(Detector):
    name = "punctuation"
    summary = "attention mass on punctuation tokens"
    label = "punctuation mass"
    meaning = "attention on punctuation"
    hint = "text dense in punctuation (code, lists, markup)"

    def __init__(self):
        self.ids = frozenset()

    def bind(self, loaded):
        vocab = loaded.tokenizer.convert_ids_to_tokens(list(range(len(loaded.tokenizer))))
        self.ids = frozenset(i for i, t in enumerate(vocab) if t and t.strip("\u0120\u2581#")
                             and not any(c.isalnum() for c in t.strip("\u0120\u2581#")))

    def prepare(self, batch: Batch):
        batch.key_mass("punctuation", batch.query_mask, batch.id_mask("punctuation", self.ids))

    def score(self, batch: Batch):
        return batch.pair_mass("punctuation") / batch.query_mask.sum(-1).clamp_min(1)[:, None]
'''

#: the commands, run in one process (one torch import) as the CLI runs them; each prints its exit status
DRIVER = '''
import sys
from headlab.cli import main
for args in {commands!r}:
    print("rc", main(args), flush=True)
'''


def install(root: Path, entry_points: str) -> Path:
    """A distribution ``hlpunct`` as pip installs one: its package and its ``dist-info`` side by side."""
    (root / "hlpunct").mkdir(parents=True)
    (root / "hlpunct" / "__init__.py").write_text(PLUGIN)
    info = root / "hlpunct-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: hlpunct\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(entry_points)
    return root


def run(path: Path, commands: list[list[str]]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": os.pathsep.join([str(path), os.getcwd()])}
    return subprocess.run([sys.executable, "-c", DRIVER.format(commands=commands)], env=env, capture_output=True,
                          text=True, timeout=600)


def test_an_installed_plugin_reaches_every_command(tmp_path: Path) -> None:
    need("minilm-l6")
    site = install(tmp_path / "site", "[headlab.detectors]\npunctuation = hlpunct:Punctuation\n")
    scan, profile, check = tmp_path / "scan", tmp_path / "profile", tmp_path / "check"
    r = run(site, [
        ["scan", "minilm-l6", "--corpus", "pysrc", "--detectors", "punctuation,previous-token", "--max-samples", "8",
         "--out", str(scan), "--no-progress"],
        ["report", str(scan)],
        ["view", str(scan), "--out", str(tmp_path / "view.html"), "--no-progress"],
        ["monitor", "fit", "minilm-l6", "--detectors", "punctuation,entropy", "--max-samples", "100", "--out",
         str(profile), "--no-progress"],
        ["monitor", "check", str(profile), "--corpus", "pysrc", "--max-samples", "24", "--out", str(check),
         "--no-progress"]])
    assert [x for x in r.stdout.splitlines() if x.startswith("rc ")] == ["rc 0"] * 5, r.stdout + r.stderr
    assert (scan / "heads.csv").read_text().splitlines()[0] == "layer,head,punctuation,previous-token"
    assert "punctuation mass" in (scan / "report" / "report.md").read_text()  # the plugin's label
    assert "attention on punctuation" in (tmp_path / "view.html").read_text()  # its meaning
    features = json.loads((profile / "profile.json").read_text())["features"]
    assert any(f.startswith("punctuation/") for f in features) and not any(f.startswith("induction/")
                                                                            for f in features)
    assert "punctuation/" in (check / "monitor.jsonl").read_text()


def test_module_class_spec_and_a_broken_plugin(tmp_path: Path) -> None:
    need("minilm-l6")
    site = install(tmp_path / "site", "[headlab.detectors]\nbroken = hlpunct.missing:Nothing\n")
    r = run(site, [
        ["scan", "minilm-l6", "--corpus", "pysrc", "--detectors", "hlpunct:Punctuation", "--max-samples", "4",
         "--out", str(tmp_path / "scan"), "--no-progress"],
        ["scan", "minilm-l6", "--detectors", "broken", "--out", str(tmp_path / "never")],
        ["scan", "minilm-l6", "--detectors", "hlpunct:Nothing", "--out", str(tmp_path / "never")]])
    assert [x for x in r.stdout.splitlines() if x.startswith("rc ")] == ["rc 0", "rc 2", "rc 2"], r.stdout + r.stderr
    assert "plugin detector 'broken' left out: entry point broken = hlpunct.missing:Nothing of hlpunct failed to " \
           "load" in r.stderr
    assert "detector broken: the plugin entry point" in r.stderr  # asking for it repeats why
    assert "cannot load Nothing from hlpunct" in r.stderr and "module:Class" in r.stderr
    assert not (tmp_path / "never").exists()
    assert json.loads((tmp_path / "scan" / "scan.json").read_text())["settings"]["detectors"] == {"punctuation": {}}


def test_a_spec_that_is_not_a_detector_is_refused() -> None:
    from headlab.detectors.plugins import load
    from headlab.errors import HeadlabError

    for spec, said in (("os:path", "is not a Detector subclass"), ("no_such_module_x:Y", "cannot load Y"),
                       ("headlab.detectors.offset:", "give --detectors module:Class")):
        try:
            load(spec)
        except HeadlabError as exc:
            assert said in str(exc), (spec, str(exc))
        else:
            raise AssertionError(f"{spec} was loaded")


BROKEN = '''
import torch
from headlab.detectors import Batch, Detector


class _Previous(Detector):
    summary = meaning = "a detector that breaks its contract"

    def prepare(self, batch: Batch):
        batch.diagonal_mass("previous:" + self.name, 1, batch.query_mask)


class Short(_Previous):
    name = "short-heads"

    def score(self, batch: Batch):
        return batch.pair_mass("previous:" + self.name)[:, :-1]


class Flat(_Previous):
    name = "flat-score"

    def score(self, batch: Batch):
        return batch.pair_mass("previous:" + self.name).reshape(-1)


class Infinite(_Previous):
    name = "infinite-score"

    def score(self, batch: Batch):
        return batch.pair_mass("previous:" + self.name) * float("inf") + 1
'''


def test_a_detector_that_breaks_its_contract_is_named_before_the_work(tmp_path: Path) -> None:
    """A score of another shape, flat, or infinite: one line naming the detector, before any sample is scanned."""
    need("minilm-l6")
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "brokenheads.py").write_text(BROKEN)
    r = run(tmp_path / "site", [["scan", "minilm-l6", "--corpus", "pysrc", "--detectors", f"brokenheads:{cls}",
                                 "--max-samples", "4", "--out", str(tmp_path / cls), "--no-progress"]
                                for cls in ("Short", "Flat", "Infinite")])
    assert [x for x in r.stdout.splitlines() if x.startswith("rc ")] == ["rc 2"] * 3, r.stdout + r.stderr
    for said in ("detector 'short-heads' fails on a probe text", "detector 'flat-score' fails on a probe text",
                 "detector 'infinite-score' gives an infinite score at layer 0"):
        assert said in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and not any((tmp_path / c).exists() for c in ("Short", "Flat", "Infinite"))
