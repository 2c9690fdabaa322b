"""The reliability contract: hostile inputs and faults, one row each.

A row runs one ``headlab`` command line and states the exit code (0 ok, 1 internal error = a bug, 2 bad input,
130/143 interrupted with partial results), a phrase the last line of stderr must contain, and the files that
must be untouched. Rows are checked before the work starts wherever the input alone shows the mistake, so
most take milliseconds; the few that need a model use minilm-l6 (integration-marked, skipped when it is not
installed).
"""

from __future__ import annotations

import errno
import glob
import json
import os
import re
import shutil
import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest

from headlab.cli import main
from headlab.models import NAMED_MODELS
from tests.support import says

from ..support import leaves, need
from .procs import TINY, headlab_proc, scan_proc, tiny_config, wait_for_progress


@dataclass
class Row:
    name: str
    argv: list[str]                       # "{tmp}" is replaced by the test's folder
    rc: int
    phrase: str                           # must appear in the last stderr line (case-insensitive)
    setup: Callable[[Path], None] | None = None
    untouched: list[str] = field(default_factory=list)  # files (under tmp) that must keep their bytes
    absent: list[str] = field(default_factory=list)     # files (under tmp) that must not be created
    model: str = ""                       # a named model the row needs (skipped when not installed)
    env: dict[str, str] = field(default_factory=dict)   # environment ("{tmp}" replaced)


def _remote_code_folder(tmp: Path) -> None:
    """A model folder whose config names Python of its own (auto_map); importing it would write ran.txt."""
    d = tmp / "evil"
    d.mkdir()
    (d / "config.json").write_text(json.dumps({
        "model_type": "headlab-evil", "architectures": ["EvilModel"],
        "auto_map": {"AutoConfig": "evil.EvilConfig", "AutoModel": "evil.EvilModel"}}))
    (d / "evil.py").write_text(f"open({str(tmp / 'ran.txt')!r}, 'w').write('ran')\n"
                               "from transformers import PretrainedConfig\n"
                               "class EvilConfig(PretrainedConfig):\n    model_type = 'headlab-evil'\n")


def _file(name: str, text: str = "x") -> Callable[[Path], None]:
    def make(tmp: Path) -> None:
        p = tmp / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return make


RANGE = [  # (command line, the option that must be named)
    ("scan minilm-l6 --consecutive 0", "--consecutive"), ("scan minilm-l6 --threshold 1.5", "--threshold"),
    ("scan minilm-l6 --threshold nan", "--threshold"), ("scan minilm-l6 --max-samples -5", "--max-samples"),
    ("scan minilm-l6 --batch-size 0", "--batch-size"), ("scan minilm-l6 --max-length 1", "--max-length"),
    ("scan minilm-l6 --chunk-mb 0", "--chunk-mb"), ("scan minilm-l6 --stride 0", "--stride"),
    ("scan minilm-l6 --checkpoint-every -1", "--checkpoint-every"), ("top {tmp}/r.parquet --head 0.1 --k 0", "--k"),
    ("monitor fit minilm-l6 --fpr 0.9 --out {tmp}/p", "--fpr"), ("monitor fit minilm-l6 --max-samples 5 --out {tmp}/p",
                                                                 "--max-samples"),
    ("monitor fit minilm-l6 --max-samples 40 --out {tmp}/p", "--max-samples"),
    ("monitor evaluate minilm-l6 --kinds poetry --out {tmp}/e", "--kinds"),
    ("scan minilm-l6 --max-offset -1", "--max-offset"), ("scan minilm-l6 --top 0", "--top"),
    ("scan minilm-l6 --route flash", "--route"), ("scan minilm-l6 --max-samples 2.5", "--max-samples"),
    ("retrieval generate --form minimal --depth 2 --n -3 --out {tmp}/g.jsonl", "--n"),
    ("retrieval generate --form minimal --depth 2 --n 1e20 --out {tmp}/g.jsonl", "--n"),
    ("retrieval generate --form minimal --depth 2 --n 100000000000000000000 --out {tmp}/g.jsonl", "--n"),
    ("retrieval generate --form minimal --depth 0 --out {tmp}/g.jsonl", "--depth"),
    ("retrieval generate --form minimal --depth 2 --distractors -1 --out {tmp}/g.jsonl", "--distractors"),
    ("retrieval train --depth 2 --lr -1 --out {tmp}/r", "--lr"),
    ("retrieval train --depth 2 --steps 2.5 --out {tmp}/r", "--steps"),
    ("retrieval sweep --steps -5 --out {tmp}/s", "--steps"), ("retrieval sweep --jobs 0 --out {tmp}/s", "--jobs"),
    ("retrieval sweep --checkpoint-every 0 --out {tmp}/s", "--checkpoint-every"),
    ("retrieval analyze {tmp}/run --draws 0", "--draws"),
    ("retrieval analyze {tmp}/r --n 0", "--n"), ("retrieval analyze {tmp}/r --min-mass 2", "--min-mass"),
    ("retrieval analyze {tmp}/r --min-lift 2", "--min-lift"),
    ("retrieval train --depth 2 --init xavier --out {tmp}/r", "--init"),
    ("retrieval train --depth 2 --min-depth 3 --out {tmp}/r", "--min-depth"),
    ("retrieval train --depth 2 --min-depth 0 --out {tmp}/r", "--min-depth"),
    ("retrieval train --task khop --depth 2 --min-depth 1 --out {tmp}/r", "--min-depth"),
    ("retrieval sweep --depths 2,6 --min-depth 3 --out {tmp}/s", "--min-depth"),
    ("retrieval depth-law {tmp}/a {tmp}/b", "--out"),
    ("retrieval eval-llm smollm2-135m --n 0", "--n"), ("retrieval eval-llm smollm2-135m --shots -1", "--shots"),
    ("retrieval eval-llm smollm2-135m --continuation -1", "--continuation"),
    ("retrieval sweep --eval-n 0 --out {tmp}/s", "--eval-n"),
    ("retrieval train --depth 2 --warmup-steps -1 --out {tmp}/r", "--warmup-steps"),
    ("retrieval train --depth 2 --positions alibi --out {tmp}/r", "--positions"),
    ("ablate minilm-l6 --heads 0.1 --draws 0", "--draws"), ("ablate minilm-l6 --heads 0.1 --samples 1", "--samples"),
    ("ablate minilm-l6 --heads 0.1 --window 0", "--window"), ("importance minilm-l6 --samples 0", "--samples"),
    ("ablate minilm-l6 --heads 0.1 --stop-after 0", "--stop-after"),
    # counts whose items cannot all be held: each was accepted and ran on, growing toward the allocator
    ("ablate minilm-l6 --heads 0.1 --draws 1000000000000", "--draws"),
    ("characterize minilm-l6 --n 1000000000000", "--n"), ("stimuli slash --n 1000000000000 --out {tmp}/s.jsonl", "--n"),
    ("retrieval eval-llm smollm2-135m --n 1000000000000 --depths 1", "--n"),
    ("monitor evaluate minilm-l6 --kind-samples 1000000000000 --out {tmp}/e", "--kind-samples"),
    ("importance minilm-l6 --samples 1000000000000", "--samples"),
    ("prune minilm-l6 --window 2", "--window"), ("characterize minilm-l6 --n 1", "--n"),
    ("characterize minilm-l6 --kappa 3", "--kappa"), ("claims minilm-l6 --scan-samples 0", "--scan-samples"),
    ("claims minilm-l6 --ablate -1", "--ablate"), ("compare {tmp}/a --kappa -1", "--kappa"),
    ("track {tmp}/run --n 0", "--n"), ("predict {tmp}/run --early 0", "--early"),
    ("train configs/smoke.toml --out {tmp}/t --seed -1", "--seed"), ("stimuli slash --n 0 --out {tmp}/s.jsonl", "--n"),
    ("claims minilm-l6 --filter without-target", "--filter"), ("languages minilm-l6 --languages xx", "--languages"),
    ("languages minilm-l6 --n 2", "--n"),
    *((f"{cmd} --dtype float64", "--dtype") for cmd in (
        "scan minilm-l6", "characterize minilm-l6", "ablate minilm-l6 --heads 0.1", "importance minilm-l6",
        "prune minilm-l6", "monitor fit minilm-l6 --out {tmp}/p", "monitor evaluate minilm-l6 --out {tmp}/e",
        "view minilm-l6", "retrieval eval-llm smollm2-135m", "languages minilm-l6")),
]

ROWS: list[Row] = [Row(f"range: {cmd.split()[0]} {opt}", cmd.split(), 2, opt,
                       absent=["g.jsonl", "r", "s", "t", "s.jsonl"]) for cmd, opt in RANGE]

RESULTS = [  # (command line, the result file an earlier run left in --out)
    ("scan minilm-l6 --out {tmp}/out", "scan.json"), ("characterize minilm-l6 --out {tmp}/out", "characterize.json"),
    ("claims minilm-l6 --out {tmp}/out", "claims.json"),
    ("ablate minilm-l6 --heads 0.1 --out {tmp}/out", "ablate.json"),
    ("importance minilm-l6 --out {tmp}/out", "importance.json"), ("prune minilm-l6 --out {tmp}/out", "prune.json"),
    ("report {tmp} --out {tmp}/out", "report.md"), ("track {tmp} --out {tmp}/out", "track.json"),
    ("languages minilm-l6 --out {tmp}/out", "languages.md"),
    ("compare {tmp} --out {tmp}/out", "compare.md"),
    ("retrieval eval-llm smollm2-135m --n 2 --depths 1 --out {tmp}/out", "eval_llm.json"),
    ("retrieval analyze {tmp} --out {tmp}/out", "analyze.json"),
    ("monitor fit minilm-l6 --out {tmp}/out", "profile.json"),
    ("monitor evaluate minilm-l6 --out {tmp}/out", "evaluate.json"),
    ("induce configs/smoke.toml --out {tmp}/out", "induce.json"),
    ("scale results/quickstart/scan --out {tmp}/out", "scale.json"),
    ("retrieval depth-law {tmp} --out {tmp}/out", "depth_law.json"),
    # these three replaced the file silently: no --overwrite existed
    ("predict {tmp} --out {tmp}/out", "predict.json"), ("retrieval emergence {tmp} --out {tmp}/out", "emergence.json"),
    ("retrieval sweep --steps 2 --layers 1 --depths 2 --seeds 0 --out {tmp}/out", "sweep.json"),
]
def _command(cmd: str) -> str:
    """The command a command line runs ("retrieval eval-llm"), its words before the first argument."""
    words = cmd.split()
    return " ".join(words[:2]) if words[0] in ("retrieval", "monitor", "models") else words[0]


ROWS += [Row(f"no silent overwrite: {_command(cmd)}", cmd.split(), 2, "--overwrite", _file(f"out/{f}", "earlier"),
             untouched=[f"out/{f}"]) for cmd, f in RESULTS]
ROWS += [
    Row("no silent overwrite: retrieval train onto a finished run's folder (it trained and replaced summary.json)",
        "retrieval train --depth 2 --steps 2 --out {tmp}/out".split(), 2, "--resume",
        _file("out/summary.json", "earlier"), untouched=["out/summary.json"]),
    Row("no silent overwrite: train onto a finished run's folder", "train configs/smoke.toml --out {tmp}/out".split(),
        2, "already holds final.safetensors", _file("out/final.safetensors", "earlier"),
        untouched=["out/final.safetensors"]),
    Row("no silent overwrite: stimuli (it replaced the file)", "stimuli slash --out {tmp}/s.jsonl".split(), 2,
        "--overwrite", _file("s.jsonl", "earlier"), untouched=["s.jsonl"]),
    Row("stimuli --out a folder (an internal IsADirectoryError)", "stimuli slash --out {tmp}/s.jsonl".split(), 2,
        "is a folder", lambda t: (t / "s.jsonl").mkdir()),
    Row("no silent overwrite: retrieval generate",
        "retrieval generate --form minimal --depth 2 --out {tmp}/g.jsonl".split(), 2, "--overwrite",
        _file("g.jsonl", "earlier"), untouched=["g.jsonl"]),
    Row("--out a dangling symbolic link", "scan minilm-l6 --out {tmp}/link".split(), 2, "symbolic link to nothing",
        lambda tmp: (tmp / "link").symlink_to(tmp / "nowhere")),
    Row("--out a dangling symbolic link: a file",
        "retrieval generate --form minimal --depth 2 --out {tmp}/link".split(), 2, "symbolic link to nothing",
        lambda tmp: (tmp / "link").symlink_to(tmp / "nowhere")),
    Row("retrieval train with heads that do not divide the width",
        "retrieval train --depth 2 --n-heads 3 --d-model 16 --out {tmp}/r".split(), 2, "not divisible by n_heads",
        absent=["r"]),
    Row("top of a file that is not Parquet", "top {tmp}/r.parquet --head 0.1".split(), 2, "not a readable Parquet",
        _file("r.parquet", "PAR1 torn")),
    Row("models check of a missing path", "models check {tmp}/nope".split(), 2, "does not exist"),
    Row("retrieval generate --out a folder", "retrieval generate --form minimal --depth 2 --out {tmp}".split(), 2,
        "is a folder"),
    Row("no silent overwrite: view", "view minilm-l6 --out {tmp}/v.html".split(), 2, "--overwrite",
        _file("v.html", "earlier"), untouched=["v.html"]),
    Row("--out is an existing file", "scan minilm-l6 --out {tmp}/f".split(), 2, "existing file", _file("f", "keep"),
        untouched=["f"]),
    Row("--out is an existing file: characterize", "characterize minilm-l6 --out {tmp}/f".split(), 2,
        "existing file", _file("f", "keep"), untouched=["f"]),
    Row("--out below a file", "scan minilm-l6 --out {tmp}/f/sub".split(), 2, "cannot write", _file("f", "keep"),
        untouched=["f"]),
    Row("view --out is a folder", "view minilm-l6 --out {tmp}".split(), 2, "is a folder"),
    Row("no silent overwrite: pattern", "pattern minilm-l6 --head 0.1 --text a/b --out {tmp}/p.png".split(), 2,
        "--overwrite", _file("p.png", "earlier"), untouched=["p.png"]),
    Row("pattern --out not a PNG", "pattern minilm-l6 --head 0.1 --text a/b --out {tmp}/p.jpg".split(), 2,
        "ending in .png", absent=["p.jpg"]),
    Row("unknown model name", "scan no-such-model-xyz --out {tmp}/o".split(), 2, "unknown model", absent=["o"]),
    Row("a named model mistyped (it waited half a minute on the hub)", "scan minilm-l7 --out {tmp}/o".split(), 2,
        "did you mean minilm-l6?", absent=["o"]),
    Row("model path that does not exist", "scan ./no/such/dir --out {tmp}/o".split(), 2, "does not exist"),
    # with the hub reachable in principle (offline mode off), a name that can only be a local path is refused at
    # once instead of asked of the hub five times: under a folder that exists here, or a model file's name
    Row("mistyped path under an existing folder", "scan tests/no-such-model --out {tmp}/o".split(), 2,
        "does not exist", env={"HF_HUB_OFFLINE": "0"}, absent=["o"]),
    Row("stimuli beside a corpus", "scan minilm-l6 --stimuli repeat --corpus wiki --out {tmp}/o".split(), 2,
        "replaces the corpus", model="minilm-l6", absent=["o"]),
    Row("stimuli without a count", "scan minilm-l6 --stimuli repeat --max-samples 0 --out {tmp}/o".split(), 2,
        "--max-samples", absent=["o"]),
    Row("missing .gguf file", "scan no-such-model.gguf --out {tmp}/o".split(), 2, "does not exist",
        env={"HF_HUB_OFFLINE": "0"}, absent=["o"]),
    Row("folder without config.json", "scan {tmp} --out {tmp}/o".split(), 2, "config.json"),
    Row("unknown detector", "scan minilm-l6 --detectors slashiness".split(), 2, "--detectors"),
    Row("unknown corpus source", "scan minilm-l6 --corpus no-such-source --out {tmp}/o".split(), 2,
        "neither a named source", model="minilm-l6", absent=["o/scan.json"]),
    Row("corpus of another file type", "scan minilm-l6 --corpus {tmp}/c.csv --out {tmp}/o".split(), 2, ".jsonl",
        _file("c.csv", "a,b"), model="minilm-l6"),
    Row("a JSONL dataset whose records share an id", "scan minilm-l6 --corpus {tmp}/d.jsonl --out {tmp}/o".split(),
        2, "share the id", _file("d.jsonl", '{"id": "a", "text": "one a/b"}\n{"id": "b", "text": "two"}\n'
                                            '{"id": "a", "text": "three c/d"}\n'), absent=["o"], model="minilm-l6"),
    Row("an empty JSONL dataset", "monitor check {tmp}/p --corpus {tmp}/e.jsonl --out {tmp}/o".split(), 2, "empty",
        lambda t: (_file("e.jsonl", "")(t), _file("p/profile.json", "{}")(t)), absent=["o/monitor.jsonl"]),
    Row("monitor check of a dataset whose records share an id",
        "monitor check {tmp}/p --corpus {tmp}/d.jsonl --out {tmp}/o".split(), 2, "share the id",
        lambda t: (_file("d.jsonl", '{"id": "a", "text": "x"}\n{"id": "a", "text": "y"}\n')(t),
                   _file("p/profile.json", "{}")(t)), absent=["o"]),
    Row("monitor check --resume with no interrupted check in --out",
        "monitor check {tmp}/p --corpus {tmp}/d.jsonl --out {tmp}/o --resume".split(), 2, "no interrupted check",
        lambda t: (_file("d.jsonl", '{"id": "a", "text": "x"}\n')(t), _file("p/profile.json", "{}")(t)),
        absent=["o/monitor.jsonl"]),
    Row("monitor check over an interrupted check, without --resume",
        "monitor check {tmp}/p --corpus {tmp}/d.jsonl --out {tmp}/o".split(), 2, "pass --resume",
        lambda t: (_file("d.jsonl", '{"id": "a", "text": "x"}\n')(t), _file("p/profile.json", "{}")(t),
                   _file("o/.check-scan/scan.checkpoint.json", "{}")(t)),
        untouched=["o/.check-scan/scan.checkpoint.json"]),
    Row("a JSONL dataset of records without text", "scan minilm-l6 --corpus {tmp}/n.jsonl --out {tmp}/o".split(), 2,
        "empty", _file("n.jsonl", '{"id": 1, "text": 5}\n{"id": 2, "text": null}\n'), absent=["o"],
        model="minilm-l6"),
    Row("binary corpus", "scan minilm-l6 --corpus {tmp}/b.txt --out {tmp}/o".split(), 2, "empty",
        lambda t: (t / "b.txt").write_bytes(b"\x00\x01\x02"), model="minilm-l6"),
    Row("fused route with a rows detector", "scan minilm-l6 --detectors entropy --route fused --out {tmp}/o".split(),
        2, "whole rows", model="minilm-l6"),
    Row("stride larger than the window", "scan minilm-l6 --max-length 16 --stride 40 --out {tmp}/o".split(), 2,
        "stride", model="minilm-l6"),
    Row("heads outside the model", "ablate minilm-l6 --heads 9.0 --out {tmp}/o".split(), 2, "outside the model",
        model="minilm-l6"),
    Row("prune --keep names a head outside the model", "prune minilm-l6 --keep 9.9 --out {tmp}/o".split(), 2,
        "outside the model", model="minilm-l6", absent=["o/prune.json"]),
    Row("head not of the form L.H", "ablate minilm-l6 --heads x --out {tmp}/o".split(), 2, "L.H", model="minilm-l6"),
    Row("every corpus sample has '/'", "ablate minilm-l6 --heads 0.1 --corpus {tmp}/s.txt --samples 4 --draws 1 "
        "--out {tmp}/o".split(), 2, "every sample", _file("s.txt", "a/b c/d e/f g/h " * 40), model="minilm-l6"),
    Row("ablate --positions marked without a suite", "ablate minilm-l6 --heads 0.1 --positions marked "
        "--out {tmp}/o".split(), 2, "--suites", model="minilm-l6", absent=["o/ablate.json"]),
    Row("ablate with an empty --symbol", ["ablate", "minilm-l6", "--heads", "0.1", "--symbol", "", "--out",
                                          "{tmp}/o"], 2, "--symbol", model="minilm-l6"),
    Row("ablate --within 0", "ablate minilm-l6 --heads 0.1 --within 0 --out {tmp}/o".split(), 2, "--within",
        model="minilm-l6"),
    Row("training config file missing", "train {tmp}/none.toml --out {tmp}/t".split(), 2, "none.toml"),
    Row("training config of the wrong type", "train {tmp}/bad.toml --out {tmp}/t".split(), 2, "steps",
        _file("bad.toml", "[optim]\nsteps = 'many'\n")),
    Row("unknown training config key", "train {tmp}/bad.toml --out {tmp}/t".split(), 2, "unknown",
        _file("bad.toml", "[optim]\nstepz = 3\n")),
    Row("report of a folder without results", "report {tmp}/empty --out {tmp}/r".split(), 2, "",
        lambda t: (t / "empty").mkdir()),
    Row("compare of nothing", "compare {tmp}/nothing --out {tmp}/c".split(), 2, ""),
    Row("compare --out naming a file", "compare {tmp}/r --out {tmp}/f.md".split(), 2, "",
        lambda t: (_file("f.md")(t), (t / "r").mkdir()), untouched=["f.md"]),
    Row("compare --out inside a run it reads", "compare {tmp}/r --out {tmp}/r/cmp".split(), 2, "inside the input",
        lambda t: (t / "r").mkdir(), absent=["r/cmp"]),
    Row("track of a folder that is no run", "track {tmp}/norun".split(), 2, "", lambda t: (t / "norun").mkdir()),
    Row("view of a folder that holds no run", "view {tmp}/empty --out {tmp}/v.html".split(), 2, "holds no run",
        lambda t: (t / "empty").mkdir(), absent=["v.html"]),
    Row("monitor check writing its kept records over the input corpus, with --overwrite",
        "monitor check {tmp}/p --corpus {tmp}/d.jsonl --out {tmp}/o --write-filtered {tmp}/d.jsonl --overwrite"
        .split(), 2,
        "never replaces an input", lambda t: (_file("d.jsonl", '{"id": "a", "text": "x"}\n')(t),
                                              _file("p/profile.json", "{}")(t)), untouched=["d.jsonl"]),
    Row("monitor check writing its kept records over its own per-record rows",
        "monitor check {tmp}/p --corpus {tmp}/d.jsonl --out {tmp}/o --write-filtered {tmp}/o/monitor.jsonl".split(),
        2, "inside --out", lambda t: (_file("d.jsonl", '{"id": "a", "text": "x"}\n')(t),
                                      _file("p/profile.json", "{}")(t)), absent=["o"]),
    Row("monitor check --write-filtered and --write-scores naming one file",
        "monitor check {tmp}/p --corpus {tmp}/d.jsonl --out {tmp}/o --write-filtered {tmp}/w.jsonl --write-scores "
        "{tmp}/w.jsonl".split(), 2, "its own place", lambda t: (_file("d.jsonl", '{"id": "a", "text": "x"}\n')(t),
                                                 _file("p/profile.json", "{}")(t)), absent=["w.jsonl"]),
    Row("monitor check --out inside the corpus folder",
        "monitor check {tmp}/p --corpus {tmp}/c --out {tmp}/c/out".split(), 2, "inside the input",
        lambda t: (_file("c/d.jsonl", '{"id": "a", "text": "x"}\n')(t), _file("p/profile.json", "{}")(t)),
        absent=["c/out"]),
    Row("a model folder that asks to run its own code", "scan {tmp}/evil".split(), 2, "never runs code",
        _remote_code_folder, absent=["ran.txt"]),
    Row("models check of a folder that asks to run its own code", "models check {tmp}/evil".split(), 2,
        "never runs code", _remote_code_folder, absent=["ran.txt"]),
    Row("khop with a hop count no sequence holds", "retrieval train --task khop --depth 100000 --out {tmp}/r".split(),
        2, "hop counts 1..99", absent=["r"]),
    *(Row(f"khop with the minimal task's {opt}", f"retrieval train --task khop --depth 4 {opt} --out {{tmp}}/r"
          .split(), 2, "minimal task", absent=["r"])
      for opt in ("--curriculum dense", "--distractors 2", "--separator")),
    # pooled evidence: the same run, seed, model or language given twice (by value, by another name, as a copy)
    Row("predict given one run twice", "predict {tmp}/r {tmp}/r".split(), 2, "given twice", _file("r/config.toml")),
    Row("predict given a run and a symbolic link to it", "predict {tmp}/r {tmp}/link".split(), 2, "by another name",
        lambda t: (_file("r/config.toml")(t), (t / "link").symlink_to(t / "r"))),
    Row("predict given a run and a copy of it", "predict {tmp}/r {tmp}/copy".split(), 2, "a copy of",
        lambda t: (_file("r/config.toml", "same")(t), _file("copy/config.toml", "same")(t))),
    Row("induce given one seed four times", "induce smoke --seeds 0,0,0,0 --arms plain,aux --draws 0 --out {tmp}/i"
        .split(), 2, "given twice", absent=["i"]),
    Row("claims given one model twice", "claims minilm-l6 minilm-l6 --out {tmp}/c".split(), 2, "given twice",
        absent=["c"]),
    Row("languages given one language twice", "languages minilm-l6 --languages en,en --out {tmp}/l".split(), 2,
        "given twice", absent=["l"]),
    Row("retrieval emergence given one run twice", "retrieval emergence {tmp}/r {tmp}/r".split(), 2, "given twice",
        _file("r/summary.json", "{}")),
    Row("retrieval sweep given one seed twice", "retrieval sweep --seeds 0,0 --out {tmp}/s".split(), 2,
        "given twice", absent=["s"]),
    Row("retrieval depth-law over a truncated summary.json", "retrieval depth-law {tmp}/sw".split(), 2,
        "summary.json", _file("sw/L2-D2-chain-s0/summary.json", '{"task": {"depth": 2, "curr')),
    *(Row(f"monitor check with a profile {what}", "monitor check {tmp}/p --corpus {tmp}/d.jsonl --out {tmp}/o".split(),
          2, said, lambda t, changed=changed: _profile(t, **changed), absent=["o/check.json"], model=model)
      for what, changed, said, model in (
          ("whose threshold is null", {"threshold": None}, "profile.json", ""),
          ("fitted on another model (its identity differs)",
           {"settings": {"max_length": 32}, "model_identity": "sha256:" + "0" * 32},
           "is not the model the profile was fitted on", "minilm-l6"),
          ("whose threshold was raised by hand (its calibration line would be false)",
           {"threshold": 1e9, "n_calibration": 3, "calibration_scores": [0.0, 1.0, 2.0]},
           "is not the 99% quantile of the profile's own calibration scores", ""))),
    Row("verdicts of a folder that does not exist", "verdicts {tmp}/nothing".split(), 2, "is not a folder"),
    Row("verdicts of a folder that holds no judged result (it said 0 moved)", "verdicts {tmp}/empty".split(), 2,
        "holds no result that keeps verdicts", lambda t: (t / "empty").mkdir()),
    Row("verdicts recorded with a reason that forges a section", ["verdicts", "{tmp}/res", "--record",
                                                                  "fix\n\n## Version 42"], 2, "line break",
        lambda t: (t / "res").mkdir(), absent=["res/verdict_changes.md", "res/verdict_changes.json"]),
    Row("verdicts recorded without a reason", ["verdicts", "{tmp}/res", "--record", " "], 2, "empty reason",
        lambda t: (t / "res").mkdir(), absent=["res/verdict_changes.md", "res/verdict_changes.json"]),
    Row("verdicts recorded over an older Markdown-only ledger", ["verdicts", "{tmp}/res", "--record", "why"], 2,
        "older headlab", _file("res/verdict_changes.md", "# Verdict changes\n"), untouched=["res/verdict_changes.md"],
        absent=["res/verdict_changes.json"]),
    Row("claims checks every model before the first", "claims minilm-l6 ./no/such/model --out {tmp}/c".split(),
        2, "does not exist", absent=["c/claims.json", "c/minilm-l6"], model="minilm-l6"),
    Row("negative learning rate in a training config", "train {tmp}/bad.toml --out {tmp}/t".split(), 2, "lr",
        _file("bad.toml", "[optim]\nlr = -0.1\n"), absent=["t/data.safetensors"]),
    Row("float step count in a training config", "train {tmp}/bad.toml --out {tmp}/t".split(), 2, "integer",
        _file("bad.toml", "[optim]\nsteps = 2.5\n"), absent=["t/data.safetensors"]),
    Row("retrieval train into a run folder without --resume (it deleted the run's eval.jsonl first)",
        "retrieval train --depth 1 --steps 20 --out {tmp}/rt".split(), 2, "pass --resume",
        lambda t: _retrieval_run(t / "rt"), untouched=["rt/eval.jsonl", "rt/task.json"]),
    Row("characterize with '/' among the controls (it compared '/' with itself)",
        "characterize minilm-l6 --symbols / --out {tmp}/c".split(), 2, "the target itself", absent=["c"]),
    Row("characterize with no placebo symbols (the strict rule's null was empty)",
        ["characterize", "minilm-l6", "--placebos", "", "--out", "{tmp}/c"], 2, "single visible characters",
        absent=["c"]),
    Row("characterize with a control of two characters", "characterize minilm-l6 --symbols ab --out {tmp}/c".split(),
        2, "single visible characters", absent=["c"]),
    *[Row(f"a 300-character output name: {cmd.split()[0]}", [*cmd.split(), "{tmp}/" + "a" * 300 + ext], 2,
          "longer than the 255 file systems take") for cmd, ext in [
        ("scan minilm-l6 --out", ""), ("view minilm-l6 --out", ".html"), ("train smoke --out", ""),
        ("scan minilm-l6 --out {tmp}/o --per-sample", ".parquet")]],
    *[Row(f"a training config with {what}", "train {tmp}/bad.toml --out {tmp}/t".split(), 2, phrase,
          _file("bad.toml", toml), absent=["t/data.safetensors"]) for what, toml, phrase in [
        ("0 heads (ZeroDivisionError)", "[model]\nn_heads = 0\n", "n_heads must be at least 1"),
        ("0 layers (an error from grad())", "[model]\nn_layers = 0\n", "n_layers must be at least 1"),
        ("a width no machine holds (MemoryError)", "[model]\nd_model = 100000000\n", "optimizer state) needs"),
        ("a batch whose activations no machine holds", "[optim]\nbatch_size = 1000000000\n", "(activations) needs"),
        ("a pool of windows no machine holds", "[data]\nn_windows = 1000000000000\n", "pool of 1,000,000,000,000"),
        ("steps whose checkpoint plan fills memory", "[optim]\nsteps = 100000000000\n", "checkpoints, more than"),
        ("a BPE of a billion tokens (a 70 GB allocation, a Rust backtrace, exit 134)",
         "[data]\ntokenizer = \"bpe:1000000000\"\n", "takes 259 to 1,048,576 tokens, not 1,000,000,000"),
        ("a BPE size that is not a number", "[data]\ntokenizer = \"bpe:lots\"\n", "expected bpe:N")]],
    Row("retrieval train with a batch no machine holds (it was accepted and ran on)",
        "retrieval train --depth 2 --batch-size 1000000000000 --out {tmp}/r".split(), 2,
        "(activations) needs about", absent=["r"]),
    Row("retrieval sweep with a batch no machine holds",
        "retrieval sweep --batch-size 1000000000000 --out {tmp}/s".split(), 2, "(activations) needs about",
        absent=["s"]),
    Row("negative warmup in a training config", "train {tmp}/bad.toml --out {tmp}/t".split(), 2,
        "optim.warmup_steps must be at least 0, not -10", _file("bad.toml", "[optim]\nwarmup_steps = -10\n"),
        absent=["t/data.safetensors"]),
    Row("checkpoint interval of zero in a training config", "train {tmp}/bad.toml --out {tmp}/t".split(), 2,
        "checkpoints.every must be at least 1", _file("bad.toml", "[checkpoints]\nevery = 0\n"),
        absent=["t/data.safetensors"]),
    Row("negative head-monitor interval", "train {tmp}/bad.toml --out {tmp}/t".split(), 2, "monitor.every",
        _file("bad.toml", "[monitor]\nevery = -5\n"), absent=["t/data.safetensors"]),
    Row("auxiliary `/` loss naming no heads", "train {tmp}/bad.toml --out {tmp}/t".split(), 2, "names no heads",
        _file("bad.toml", "[induce]\nweight = 1.0\n"), absent=["t/data.safetensors"]),
    Row("auxiliary `/` loss on a head outside the model", "train {tmp}/bad.toml --out {tmp}/t".split(), 2,
        "outside the model", _file("bad.toml", "[induce]\nheads = [\"9.0\"]\nweight = 1.0\n"),
        absent=["t/data.safetensors"]),
    Row("induce with a missing base config", "induce {tmp}/none.toml --out {tmp}/i".split(), 2, "none.toml",
        absent=["i/induce.json"]),
    Row("induce on a head outside the model", "induce configs/seeds.toml --out {tmp}/i --heads 9.0".split(), 2,
        "outside the model", absent=["i/runs"]),
    Row("induce with an unknown arm", "induce {tmp}/none.toml --out {tmp}/i --arms louder".split(), 2, "louder"),
    Row("unknown initialization scheme", "train {tmp}/bad.toml --out {tmp}/t".split(), 2, "init must be one of",
        _file("bad.toml", "[model]\ninit = \"xavier\"\n"), absent=["t/data.safetensors"]),
    Row("head-monitor share outside (0, 1)", "train {tmp}/bad.toml --out {tmp}/t".split(), 2, "monitor.sink",
        _file("bad.toml", "[monitor]\nsink = 1.5\n"), absent=["t/data.safetensors"]),
    Row("unwritable $HEADLAB_CACHE, refused before dequantizing", "scan smollm2-135m --out {tmp}/o".split(), 2,
        "HEADLAB_CACHE", _file("f"), env={"HEADLAB_CACHE": "{tmp}/f/cache"}, model="smollm2-135m", absent=["o"]),
    Row("a user's model directory with a truncated model.safetensors", "scan {tmp}/m --out {tmp}/o".split(), 2,
        "model.safetensors is truncated", lambda t: _truncated_model(t / "m"), absent=["o"]),
    *[Row(f"a user's model directory whose weights are damaged: {damage}", "scan {tmp}/m --out {tmp}/o".split(), 2,
          phrase, lambda t, d=damage: _damaged_model(t / "m", d), absent=["o"])
      for damage, phrase in [("config claims more layers", "lack 16 tensor(s) the config needs"),
                             ("config claims fewer layers", "the config claims fewer layers"),
                             ("a key tensor missing", "lack 1 tensor(s)"),
                             ("a NaN weight", "NaN or infinite"),
                             ("config gives another width", "the weights do not fit its config"),
                             # transformers built an empty tokenizer of 5 tokens: every word read as unknown
                             ("no tokenizer files", "lacks its tokenizer files"),
                             # the config fails transformers' own validation
                             ("heads that do not divide the width", "not a multiple of the number of attention")]],
    Row("--max-offset beyond the window (it asked the allocator for 276 GB)",
        "scan minilm-l6 --max-offset 10000000 --out {tmp}/o".split(), 2, "give at most 128", absent=["o"]),
    Row("--tokenizer from a folder that does not exist",
        "scan minilm-l6 --tokenizer {tmp}/no-tok --out {tmp}/o".split(), 2, "does not exist", absent=["o"]),
    Row("--max-memory without --device-map", "scan minilm-l6 --max-memory cpu=1GB --out {tmp}/o".split(), 2,
        "give --device-map auto as well", absent=["o"]),
    Row("--max-memory not DEVICE=SIZE", "scan minilm-l6 --device-map auto --max-memory lots --out {tmp}/o".split(), 2,
        "is not DEVICE=SIZE", absent=["o"]),
    Row("--device and --device-map together", "scan minilm-l6 --device cuda --device-map auto --out {tmp}/o".split(),
        2, "not both", absent=["o"]),
    Row("--tokenizer of another vocabulary (BERT's word pieces fed to a Llama model, said nothing)",
        "scan smollm2-135m --tokenizer minilm-l6 --out {tmp}/o".split(), 2, "keep their ids in the model's own",
        absent=["o"], model="smollm2-135m"),  # and minilm-l6's tokenizer, installed with it by make
    Row("--threads beyond the machine's cores (4096 crashed torch)",
        "scan minilm-l6 --threads 4096 --out {tmp}/o".split(), 2, "core(s); give 1 to", absent=["o"]),
    Row("--threads of a million (torch ran out of memory)", "scan minilm-l6 --threads 1000000 --out {tmp}/o".split(),
        2, "1000000: this process may use", absent=["o"]),
    Row("eval-llm --shots beyond any context", "retrieval eval-llm smollm2-135m --shots 1000000 --out {tmp}/e".split(),
        2, "reads at most", absent=["e/eval_llm.json"], model="smollm2-135m"),
    Row("eval-llm --shots whose prompts outgrow the context",
        "retrieval eval-llm smollm2-135m --shots 400 --out {tmp}/e".split(), 2, "shots fit",
        absent=["e/eval_llm.json"], model="smollm2-135m"),
    Row("--resume without a checkpoint", "scan minilm-l6 --resume --out {tmp}/o".split(), 2, "no scan checkpoint",
        absent=["o/scan.json"]),
    Row("--resume together with --overwrite", "scan minilm-l6 --resume --overwrite --out {tmp}/o".split(), 2,
        "pass one of them"),
    Row("a folder holding an unfinished scan's checkpoint", "scan minilm-l6 --out {tmp}/o".split(), 2, "--resume",
        _file("o/scan.checkpoint.json", "{}"), untouched=["o/scan.checkpoint.json"]),
    Row("--per-sample that is not a .parquet file", "scan minilm-l6 --per-sample {tmp}/rows.csv --out {tmp}/o".split(),
        2, ".parquet", absent=["rows.csv"]),
    Row("top of a folder without a scan", "top {tmp}/empty --head 0.1".split(), 2, "scan.json",
        lambda t: (t / "empty").mkdir()),
    Row("top --head not of the form L.H", "top {tmp}/r.parquet --head x".split(), 2, "L.H", _file("r.parquet")),
    Row("monitor fit on the parser's old minimum, refused after its scan", "monitor fit minilm-l6 --max-samples 50 "
        "--out {tmp}/p".split(), 2, "100", absent=["p/profile.json"]),
    Row("monitor check of a folder without a profile", "monitor check {tmp} --corpus pydoc --out {tmp}/c".split(),
        2, "profile.json", absent=["c/check.json"]),
    Row("view text file missing", "view minilm-l6 --texts-file {tmp}/none.txt --out {tmp}/v.html".split(), 2,
        "none.txt"),
    Row("view --out onto its own --texts-file", "view minilm-l6 --texts-file {tmp}/t.html --out {tmp}/t.html "
        "--overwrite".split(), 2, "never replaces an input", _file("t.html", "a text with a / in it\n"),
        untouched=["t.html"]),
    Row("claims on a corpus path that does not exist", "claims minilm-l6 --corpus {tmp}/none --out {tmp}/c".split(),
        2, "none", absent=["c/claims.json"], model="minilm-l6"),  # the models are checked first
    Row("a training run folder without final weights", "scan {tmp}/run --out {tmp}/o".split(), 2,
        "no final.safetensors", _file("run/config.toml", "[model]\n"), absent=["o"]),
    Row("scale of a folder without scans", "scale {tmp}/empty --out {tmp}/s".split(), 2, "no scan.json",
        lambda t: (t / "empty").mkdir(), absent=["s"]),
    Row("scale of scans made with other windows", "scale {tmp}/a {tmp}/b --out {tmp}/s".split(), 2,
        "rescan so the models are measured alike", lambda t: _two_scans(t), absent=["s/scale.json"],
        model="minilm-l6"),
    Row("compare of scans made with other windows (scale refused them)",
        "compare {tmp}/a {tmp}/b --out {tmp}/c".split(),
        2, "rescan so the models are measured alike", lambda t: _two_scans(t), absent=["c/compare.json"],
        model="minilm-l6"),
    Row("verdicts on a declared depth-law table edited by hand", "verdicts {tmp}/res".split(), 2,
        "depth_law.json was changed after headlab wrote it", lambda t: _edited_law(t / "res"),
        absent=["res/retrieval/verdicts.json"]),
    Row("scale of a scan and a folder holding its copy (three rows of one scan)",
        "scale {tmp}/base {tmp}/par --out {tmp}/s".split(), 2, "is a copy of", lambda t: _scan_and_copies(t, False),
        absent=["s/scale.json"]),
    Row("scale of a scan and a folder holding a link to it", "scale {tmp}/base {tmp}/par --out {tmp}/s".split(), 2,
        "is a link to a folder", lambda t: _scan_and_copies(t, True), absent=["s/scale.json"]),
    Row("retrieval depth-law given one sweep twice, by a link", "retrieval depth-law {tmp}/sw1 {tmp}/sw1link --out "
        "{tmp}/o".split(), 2, "given twice", lambda t: _sweep_and_link(t), absent=["o/depth_law.json"]),
    Row("retrieval depth-law given a sweep and its copy", "retrieval depth-law {tmp}/sw1 {tmp}/sw1copy --out "
        "{tmp}/o".split(), 2, "is a copy of", lambda t: _sweep_and_link(t), absent=["o/depth_law.json"]),
    Row("compare of an interrupted scan", "compare {tmp}/a --out {tmp}/c".split(), 2, "holds an interrupted scan",
        lambda t: (_two_scans(t), _interrupted(t / "a")), absent=["c/compare.json"], model="minilm-l6"),
    Row("repeat share outside [0, 1]", "train {tmp}/bad.toml --out {tmp}/t".split(), 2, "repeat_share",
        _file("bad.toml", "[data]\nrepeat_share = 1.5\n"), absent=["t/data.safetensors"]),
]
#: every reader of a scan, given one whose score was edited by hand, refuses it before it writes anything
ROWS += [Row(f"{cmd.split()[0]} of a scan whose score was edited by hand", cmd.split(), 2, "a/scan.json was changed "
             "after headlab wrote it", lambda t: (_two_scans(t), _edited(t / "a")), absent=[out], model="minilm-l6")
         for cmd, out in (("report {tmp}/a --out {tmp}/r", "r/report.md"),
                          ("compare {tmp}/a {tmp}/b --out {tmp}/c", "c/compare.json"),
                          ("view {tmp}/a --out {tmp}/v.html", "v.html"),
                          ("scale {tmp}/a {tmp}/b --out {tmp}/s", "s/scale.json"))]
#: a scan edited by hand and sealed again, as headlab's own code would seal it: its numbers are still checked
ROWS += [Row(f"report of a scan forged and sealed again: {what}", "report {tmp}/a --out {tmp}/r".split(), 2, said,
             lambda t, change=change: _forged(t / "a", change), absent=["r/report.md"])
         for what, change, said in (
             ("a previous-token score of 5.0", ("scores", "previous-token", 5.0), "is outside [0, 1]"),
             ("a token score of 1.7", ("scores", "token", 1.7), "is outside [0, 1]"),
             ("an SDH mark on a head with no run above the threshold", ("sdh", None, True), "the strict rule needs 3"))]


def _two_scans(tmp: Path) -> None:
    from headlab import load, scan

    lm = load("minilm-l6")
    scan(lm, ["a / b / c " * 8], max_samples=None, max_length=16, progress=False).write(tmp / "a")
    scan(lm, ["a / b / c " * 8], max_samples=None, max_length=12, progress=False).write(tmp / "b")


def _scan_and_copies(tmp: Path, link: bool) -> None:
    """A committed scan, and a folder holding a copy of it (and a link to it)."""
    shutil.copytree(Path(__file__).resolve().parents[2] / "results/quickstart/scan", tmp / "base")
    shutil.copytree(tmp / "base", tmp / "par" / "copy")
    if link:
        (tmp / "par" / "link").symlink_to(tmp / "base")


def _sweep_and_link(tmp: Path) -> None:
    """A committed sweep, a link to it and a copy of it."""
    shutil.copytree(Path(__file__).resolve().parents[2] / "results/retrieval/depth_law_long", tmp / "sw1")
    (tmp / "sw1link").symlink_to(tmp / "sw1")
    shutil.copytree(tmp / "sw1", tmp / "sw1copy")


def _interrupted(folder: Path) -> None:
    """A scan stopped before its end, as headlab writes one (sealed)."""
    import dataclasses

    from headlab.census.result import ScanResult

    dataclasses.replace(ScanResult.read(folder), interrupted=True).write(folder)


def _edited(folder: Path) -> None:
    """One head's previous-token score raised to 5.0 by hand in a scan headlab wrote."""
    scan = json.loads((folder / "scan.json").read_text())
    scan["heads"][0]["scores"]["previous-token"] = 5.0
    (folder / "scan.json").write_text(json.dumps(scan))


def _forged(folder: Path, change: tuple[str, str | None, object]) -> None:
    """The committed quickstart scan with one value of its first head changed, then sealed again."""
    from headlab.io import sealed

    shutil.copytree(Path(__file__).resolve().parents[2] / "results/quickstart/scan", folder)
    scan = json.loads((folder / "scan.json").read_text())
    key, name, value = change
    if name is None:
        scan["heads"][0][key] = value
    else:
        scan["heads"][0][key][name] = value
    (folder / "scan.json").write_text(json.dumps(sealed(scan)))


def _profile(tmp: Path, **changed: object) -> None:
    """A one-feature profile of minilm-l6 as written by hand (no seal), with ``changed`` fields, and a corpus."""
    _file("d.jsonl", '{"id": "a", "text": "x"}\n')(tmp)
    _file("p/profile.json", json.dumps({
        "model": "minilm-l6", "corpus": ["wiki"], "features": ["a"], "median": [0.0], "scale": [1.0],
        "covariance": [[1.0]], "threshold": 0.0, "fpr": 0.01, "n_fit": 1, "n_calibration": 1,
        "calibration_flag_rate": 0.0, "calibration_scores": [0.0], "settings": {}, **changed}))(tmp)


def _edited_law(root: Path) -> None:
    """A results folder holding a committed depth-law table with one run's D_max raised to 7 by hand."""
    law = root / "retrieval/depth_law/depth_law.json"
    law.parent.mkdir(parents=True)
    doc = json.loads((Path(__file__).resolve().parents[2] / "results/retrieval/depth_law/depth_law.json").read_text())
    doc["cells"][0]["d_max"][0] = 7
    law.write_text(json.dumps(doc))


def _truncated_model(folder: Path) -> None:
    from transformers import BertConfig, BertModel

    BertModel(BertConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                         num_attention_heads=2)).save_pretrained(folder)
    w = folder / "model.safetensors"
    w.write_bytes(w.read_bytes()[:-100])  # a copy that stopped short


def _damaged_model(folder: Path, damage: str) -> None:
    """A model folder whose config and weights disagree, whose weights hold NaN, or without its tokenizer:
    transformers alone would load it (filling or dropping tensors at random, or tokenizing every word as unknown),
    and every head score would be meaningless."""
    import json

    from safetensors.torch import load_file, save_file
    from transformers import BertConfig, BertModel

    layers = 2 if damage == "config claims fewer layers" else 1
    BertModel(BertConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=layers,
                         num_attention_heads=2)).save_pretrained(folder)
    config, weights = json.loads((folder / "config.json").read_text()), load_file(folder / "model.safetensors")
    if damage == "config claims more layers":
        config["num_hidden_layers"] = 2
    elif damage == "config claims fewer layers":
        config["num_hidden_layers"] = 1
    elif damage == "config gives another width":
        config["intermediate_size"] = 48
    elif damage == "a key tensor missing":
        del weights["encoder.layer.0.attention.self.key.weight"]
    elif damage == "heads that do not divide the width":
        config["num_attention_heads"] = 3
    elif damage == "no tokenizer files":
        pass  # sound weights; what is missing is every tokenizer file, as in each of these folders
    else:
        weights["encoder.layer.0.attention.self.query.weight"][0, 0] = float("nan")
    (folder / "config.json").write_text(json.dumps(config))
    save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})


def _retrieval_run(folder: Path) -> None:
    from headlab.cli import main

    assert main(["retrieval", "train", "--depth", "1", "--steps", "20", "--out", str(folder), "--no-progress"]) == 0


def _fmt(argv: list[str], tmp: Path) -> list[str]:
    return [a.replace("{tmp}", str(tmp)) for a in argv]


@pytest.mark.parametrize("row", ROWS, ids=[r.name for r in ROWS])
def test_row(row: Row, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    if row.model:
        need(row.model)
    for k, v in row.env.items():
        monkeypatch.setenv(k, v.replace("{tmp}", str(tmp_path)))
    if row.setup:
        row.setup(tmp_path)
    before = {f: (tmp_path / f).read_bytes() for f in row.untouched}
    rc = _run(_fmt(row.argv, tmp_path) + ["--no-progress"] * _takes_no_progress(row.argv))
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == row.rc, err
    assert err, "no message"
    assert row.phrase.lower() in err[-1].lower(), err[-1]
    assert "internal error" not in err[-1]
    for f, data in before.items():
        assert (tmp_path / f).read_bytes() == data, f"{f} was changed"
    for f in row.absent:
        assert not (tmp_path / f).exists(), f"{f} was created"


def _run(argv: list[str]) -> int:
    """The CLI's exit code, whether it returns it or argparse exits with it."""
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)


def _takes_no_progress(argv: list[str]) -> int:
    return int(argv[0] in {"scan", "characterize", "claims", "ablate", "importance", "prune", "track", "view"})


def _python_call(argv: list[str]) -> tuple[Callable[..., object], dict[str, object]]:
    """A range row's command line as a Python user writes it: the command's twin and its keywords, a value
    given as the Python type it reads as (``2.5`` a float, ``1e20`` a float, ``-1`` an int; a list option's
    value a list; an option the CLI takes as text stays text)."""
    from headlab.cli import build_parser

    def literal(v: str) -> object:
        for kind in (int, float):
            try:
                return kind(v)
            except ValueError:
                pass
        return v

    commands = leaves(build_parser())
    n = 2 if " ".join(argv[:2]) in commands else 1
    p, rest = commands[" ".join(argv[:n])], argv[n:]
    positional = [a for a in p._actions if not a.option_strings]
    flags = {s: a for a in p._actions for s in a.option_strings}
    kw: dict[str, object] = {}
    while rest:
        word = rest.pop(0)
        if word not in flags:
            act = positional[0]
            if act.nargs in ("+", "*"):
                kw.setdefault(act.dest, []).append(literal(word))  # type: ignore[union-attr]
            else:
                kw[act.dest] = literal(word)
                positional.pop(0)
            continue
        act = flags[word]
        if act.nargs == 0:
            kw[act.dest] = True
            continue
        raw = rest.pop(0)
        text = act.type is None or act.dest in ("head", "heads", "keep")
        value = (lambda x: x) if text else literal
        listed = act.nargs in ("+", "*") or isinstance(p.get_default(act.dest), (list, tuple)) \
            or act.dest in ("heads", "keep")
        kw[act.dest] = [value(x) for x in raw.split(",")] if listed else value(raw)
    return p.get_default("api"), kw


#: rows a twin cannot take: options that only shape what the CLI prints after the work, and the process settings
#: --threads (from Python: headlab.distributed.use_threads, tested beside it), --tokenizer (from Python:
#: headlab.load(..., tokenizer=...), tests/unit/test_models.py) and --device-map (headlab.load(..., device_map=...),
#: tests/integration/test_device_map.py)
CLI_ONLY = {"range: scan --top", "--threads beyond the machine's cores (4096 crashed torch)",
            "--threads of a million (torch ran out of memory)", "--tokenizer from a folder that does not exist",
            "--tokenizer of another vocabulary (BERT's word pieces fed to a Llama model, said nothing)",
            "--max-memory without --device-map", "--max-memory not DEVICE=SIZE", "--device and --device-map together"}
REFUSED = [r for r in ROWS if r.rc == 2 and r.name not in CLI_ONLY]


@pytest.mark.parametrize("row", REFUSED, ids=[r.name for r in REFUSED])
def test_row_from_python(row: Row, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every refused row again, given to the command's Python twin: refused in one line that names the keyword
    where the CLI names the flag, before a model loads (unless the row needs the model to see the mistake), with
    the same files untouched and absent (the twins and the CLI share one validation, not two)."""
    import importlib
    import inspect

    from headlab.errors import HeadlabError

    def no_model(*_a: object, **_k: object) -> None:
        raise AssertionError("the model was loaded before the value was checked")

    if row.model:
        need(row.model)
    elif row.name.startswith("range:"):  # a value's mistake shows without the model
        for where in ("headlab.models", "headlab.models.loader", "headlab.ablation.metrics"):
            monkeypatch.setattr(importlib.import_module(where), "load", no_model)
    for k, v in row.env.items():
        monkeypatch.setenv(k, v.replace("{tmp}", str(tmp_path)))
    if row.setup:
        row.setup(tmp_path)
    before = {f: (tmp_path / f).read_bytes() for f in row.untouched}
    api, kw = _python_call(_fmt(row.argv, tmp_path))
    if "progress" in inspect.signature(api).parameters:
        kw["progress"] = False
    with pytest.raises(HeadlabError) as info:
        api(**kw)
    said = str(info.value)
    phrase = re.sub(r"--([a-z][a-z-]*)", lambda m: m[1].replace("-", "_"), row.phrase)  # --max-samples: max_samples
    assert phrase.lower() in said.lower() and "\n" not in said, said
    for f, data in before.items():
        assert (tmp_path / f).read_bytes() == data, f"{f} was changed"
    for f in row.absent:
        assert not (tmp_path / f).exists(), f"{f} was created"


def test_rows_without_a_model_need_none(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    """Every row that names no model keeps its outcome on a machine where no model package is installed (a row
    that needs one says so and is skipped there, instead of failing)."""
    import headlab.models.registry as registry

    monkeypatch.setattr(registry, "_dist_installed", lambda _package: False)
    _keep_outcomes([r for r in ROWS if not r.model], monkeypatch, tmp_path, capsys)


def test_rows_without_a_corpus_package_need_none(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """Every row whose model is installed keeps its outcome on a machine without the Debian corpus packages
    (linux-doc, man pages, python3-doc, foldoc): the refusals come before any corpus is read."""
    import headlab.corpus.sources as sources

    monkeypatch.setattr(sources.glob, "glob", lambda pattern, *a, **k: [] if pattern.startswith("/usr/share")
                        else glob.glob(pattern, *a, **k))
    _keep_outcomes([r for r in ROWS if r.argv[0] not in READ_NO_TEXT
                    and (not r.model or NAMED_MODELS[r.model].installed())], monkeypatch, tmp_path, capsys)


#: commands that read results or build their own tasks, never a corpus: their rows cannot meet a missing package
READ_NO_TEXT = {"report", "compare", "scale", "verdicts", "retrieval", "models", "pattern"}


def _keep_outcomes(rows: list[Row], monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                   capsys: pytest.CaptureFixture[str]) -> None:
    """Run every row and assert its exit code and the phrase of its last stderr line."""
    for i, row in enumerate(rows):
        tmp = tmp_path / str(i)
        tmp.mkdir()
        with monkeypatch.context() as m:
            for k, v in row.env.items():
                m.setenv(k, v.replace("{tmp}", str(tmp)))
            if row.setup:
                row.setup(tmp)
            rc = _run(_fmt(row.argv, tmp) + ["--no-progress"] * _takes_no_progress(row.argv))
        err = capsys.readouterr().err.strip().splitlines()
        assert rc == row.rc and err and row.phrase.lower() in err[-1].lower(), (row.name, rc, err[-1:])


def test_contract_size() -> None:
    """At least 80 hostile cases: the table above plus the process-level tests below and in test_faults.py
    (one case each, the signal test two)."""
    import re

    here = Path(__file__).parent
    process_cases = sum(len(re.findall(r"^def test_", f.read_text(), re.M)) for f in here.glob("test_*.py")) - 2 + 1
    assert len(ROWS) + process_cases >= 80


# --- faults of running processes: signals, concurrent writers, torn logs, damaged pools ---------------------
@pytest.mark.integration
# Ctrl-C here, SIGTERM in the faults' graceful-stop test of the same scan: one path (headlab.interrupts)
@pytest.mark.parametrize("sig,code", [(signal.SIGINT, 130)])
def test_signal_during_a_scan_keeps_the_finished_batches(tmp_path: Path, sig: int, code: int) -> None:
    need("minilm-l6")
    out = tmp_path / "scan"
    p = scan_proc(out)
    try:
        seen = wait_for_progress(p, 3)  # well before the first chunk of 16 batches completes
        p.send_signal(sig)
        _, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == code, err
    j = json.loads((out / "scan.json").read_text())
    assert j["interrupted"] is True and j["interrupted_by"] == ("SIGTERM" if code == 143 else "SIGINT")
    assert seen <= j["n_samples"] < 16, (seen, j["n_samples"])
    assert "interrupted" in err.strip().splitlines()[-1]


@pytest.mark.integration
def test_sigterm_during_a_monitor_fit_exits_143_without_a_profile(tmp_path: Path) -> None:
    need("minilm-l6")
    out = tmp_path / "profile"
    p = headlab_proc("monitor", "fit", "minilm-l6", "--max-samples", "2000", "--batch-size", "1", "--out", str(out))
    try:
        wait_for_progress(p, 2)
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 143, err
    assert "interrupted (SIGTERM)" in err.strip().splitlines()[-1]
    assert not (out / "profile.json").exists()


@pytest.mark.integration
def test_second_scan_into_a_locked_folder_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    need("minilm-l6")
    out = tmp_path / "scan"
    p = scan_proc(out)
    try:
        wait_for_progress(p, 1)
        assert main(["scan", "minilm-l6", "--out", str(out), "--no-progress"]) == 2
        assert "being written" in capsys.readouterr().err
    finally:
        p.kill()
        p.wait()


def test_second_training_run_into_a_locked_folder_is_refused(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    from headlab.io import FolderLock

    run = tmp_path / "run"
    with FolderLock(run):  # a first writer holds the run folder
        assert main(["train", str(tiny_config(tmp_path)), "--out", str(run), "--no-progress"]) == 2
    assert "being written" in capsys.readouterr().err.strip().splitlines()[-1]
    assert not (run / "data.safetensors").exists()


def test_a_data_pool_left_by_other_settings_is_rebuilt_not_reused(tmp_path: Path) -> None:
    from headlab.training import load_config
    from headlab.training.data import fingerprint

    cfg, run = tiny_config(tmp_path), tmp_path / "run"
    assert main(["train", str(cfg), "--out", str(run), "--no-progress"]) == 0
    for d in (run / "checkpoints").iterdir():  # as if killed before its first checkpoint
        __import__("shutil").rmtree(d)
    (run / "final.safetensors").unlink()
    with says("not this run's"):
        assert main(["train", str(cfg), "--out", str(run), "--seed", "7", "--no-progress"]) == 0
    meta = json.loads((run / "data.json").read_text())
    assert meta["fingerprint"] == fingerprint(load_config(cfg).data, 7)


def test_resume_with_every_checkpoint_damaged_starts_the_logs_afresh(tmp_path: Path) -> None:
    cfg, run = tiny_config(tmp_path), tmp_path / "run"
    assert main(["train", str(cfg), "--out", str(run), "--no-progress"]) == 0
    for d in (run / "checkpoints").iterdir():
        (d / "model.safetensors").write_bytes(b"damaged")
    with says("no usable checkpoint"):
        assert main(["train", str(cfg), "--out", str(run), "--resume", "--no-progress"]) == 0
    steps = [json.loads(x)["step"] for x in (run / "metrics.jsonl").read_text().splitlines()]
    assert steps == sorted(set(steps)) == list(range(1, TINY["optim"]["steps"] + 1))


def test_a_torn_last_log_line_is_dropped_with_a_warning_and_a_torn_middle_is_an_error(tmp_path: Path) -> None:
    from headlab.errors import HeadlabError
    from headlab.io import read_jsonl

    log = tmp_path / "metrics.jsonl"
    log.write_text('{"step": 1}\n{"step": 2}\n{"st')
    with says("incomplete"):
        assert [r["step"] for r in read_jsonl(log)] == [1, 2]
    log.write_text('{"step": 1}\n{"st\n{"step": 3}\n')
    with pytest.raises(HeadlabError, match="metrics.jsonl:2"):
        read_jsonl(log)


def test_duplicate_heads_count_once_with_a_warning() -> None:
    from headlab.ablation.heads import parse_heads

    with says("more than once"):
        assert parse_heads("0.7,0.7,1.2", 2, 9) == {0: [7], 1: [2]}


@pytest.mark.integration
def test_fewer_samples_with_the_target_than_k_leave_the_share_undefined() -> None:
    need("minilm-l6")
    from headlab import scan

    with says("fewer than the rule's k"):
        r = scan("minilm-l6", ["a/b and c/d", "plain words only", "more plain words"], progress=False)
    assert r.n_samples_with_target == 1 and r.sdh_share is None and r.to_json()["sdh_share"] is None
    assert "undefined" in r.table()


def test_jsonl_records_without_text_are_named(tmp_path: Path) -> None:
    from headlab.corpus.files import file_documents

    f = tmp_path / "c.jsonl"
    f.write_text('{"text": "fine"}\n{"title": "no text"}\n{"text": 3}\n{"id": 7, "text": "named"}\n')
    # the skipped record's own text field is named: a file that calls its text 'title' is told so
    with says(r"2 record\(s\) without a string 'text' field skipped \(line 2, 3; the first holds the string "
              r"field\(s\) 'title'\)"):
        with says(r"1 record\(s\) without a string or integer 'id' field, named by their line number"):
            docs = list(file_documents(str(f)))
    assert [d.doc_id for d in docs] == [f"{f}:1", f"{f}#7"]  # a record is a document, in file order
    assert [d.load() for d in docs] == [["fine"], ["named"]]
    with says("name the field that holds the text with --text-field"):
        list(file_documents(str(f)))


def test_a_jsonl_whose_text_is_in_another_field_is_scanned_with_text_field(tmp_path: Path) -> None:
    """A corpus that calls its text 'content' was skipped record by record; --text-field reads it, the scan
    records the field, and an empty name is refused."""
    from headlab.cli import main

    need("minilm-l6")
    f = tmp_path / "c.jsonl"
    f.write_text("".join(json.dumps({"id": i, "content": f"record {i} with a/b and c/d"}) + "\n" for i in range(4)))
    out = tmp_path / "o"
    assert main(["scan", "minilm-l6", "--corpus", str(f), "--text-field", "content", "--no-progress",
                 "--out", str(out)]) == 0
    r = json.loads((out / "scan.json").read_text())
    assert r["n_samples"] == 4 and r["settings"]["text_field"] == "content"
    assert main(["scan", "minilm-l6", "--corpus", str(f), "--text-field", "", "--out", str(tmp_path / "e")]) == 2


def test_the_monitor_fits_and_checks_records_whose_text_is_in_another_field(tmp_path: Path) -> None:
    """monitor fit and check read the field --text-field names, and the write-back keeps every record it scored
    byte for byte (its index of records reads the same field)."""
    from headlab.cli import main

    need("minilm-l6")
    f = tmp_path / "c.jsonl"
    words = "the river runs past the old mill and under the stone bridge".split()
    f.write_text("".join(json.dumps({"id": i, "content": " ".join(words[i % 5:] + words[:i % 5])}) + "\n"
                         for i in range(250)))
    prof = tmp_path / "p"
    assert main(["monitor", "fit", "minilm-l6", "--corpus", str(f), "--text-field", "content", "--max-samples", "250",
                 "--no-progress", "--out", str(prof)]) == 0
    assert json.loads((prof / "profile.json").read_text())["settings"]["text_field"] == "content"
    kept = tmp_path / "kept.jsonl"
    assert main(["monitor", "check", str(prof), "--corpus", str(f), "--text-field", "content", "--no-progress",
                 "--write-filtered", str(kept), "--out", str(tmp_path / "c")]) == 0
    lines = kept.read_text().splitlines()
    assert 200 <= len(lines) <= 250 and set(lines) <= set(f.read_text().splitlines())
    assert main(["monitor", "check", str(prof), "--corpus", str(f), "--text-field", "", "--out",
                 str(tmp_path / "d")]) == 2


def test_files_are_written_with_the_users_umask(tmp_path: Path) -> None:
    from headlab.io import write_text_atomic

    mask = os.umask(0)
    os.umask(mask)
    p = write_text_atomic(tmp_path / "r.json", "{}")
    assert (p.stat().st_mode & 0o777) == 0o666 & ~mask  # not tempfile's 0600


@pytest.mark.integration
def test_viewer_tokens_show_whole_characters_not_replacement_marks() -> None:
    need("smollm2-135m")
    from headlab import load
    from headlab.views.data import PARTIAL, byte_hints, display_tokens

    tok = load("smollm2-135m").tokenizer
    text = "路径 a/b 是 🙂 ok"
    ids = tok(text, add_special_tokens=False)["input_ids"]
    shown = display_tokens(tok, ids)
    assert len(shown) == len(ids) and not any("\ufffd" in s for s in shown)
    assert "".join(s for s in shown if s != PARTIAL).replace("␣", " ").replace(" ", "") == text.replace(" ", "")
    hints = byte_hints(tok, ids, shown)  # the raw bytes behind each merged character, shown on hover
    split = bytes.fromhex(" ".join(h for h in hints if h)).decode("utf-8")
    assert split.strip() and all(c in text for c in split)


# --- the same refusals from Python: one line naming the value and the fix, before any work -------------------
def _api_cases(tmp: Path) -> list[tuple[str, Callable[[], object], str]]:
    import headlab

    (tmp / "held").mkdir()
    (tmp / "held" / "characterize.json").write_text("earlier")
    (tmp / "page.html").write_text("earlier")
    (tmp / "untracked").mkdir()
    (tmp / "prof").mkdir()
    (tmp / "prof" / "profile.json").write_text("{}")
    return [
        ("scan resume without a folder", lambda: headlab.scan("minilm-l6", resume=True), "pass out="),
        ("scan with a mistyped keyword (a raw TypeError)", lambda: headlab.scan("minilm-l6", maxsamples=3),
         "did you mean max_samples="),
        ("scan on a device that does not exist", lambda: headlab.scan("minilm-l6", device="nonsense"),
         "unknown device 'nonsense'"),
        ("scan with a settings field of the wrong type (a raw AttributeError)",
         lambda: headlab.scan("minilm-l6", detectors=True), "detectors=(True,): give"),
        ("eval-llm with no depths (a raw TypeError)", lambda: headlab.retrieval.eval_llm("smollm2-135m", depths=None),
         "depths=None: give"),
        *((f"scan texts holding a {type(bad).__name__}", lambda bad=bad: headlab.scan("minilm-l6", ["ok", bad]),
           "texts[1] is") for bad in (b"bytes", 5, None, ["nested"])),
        ("scan texts as an iterator of numbers", lambda: headlab.scan("minilm-l6", iter([1, 2])), "texts[0] is"),
        ("retrieval train with no layers", lambda: headlab.retrieval.train(depth=2, n_layers=0, out=tmp / "r0"),
         "n_layers"),
        ("retrieval train with a negative learning rate",
         lambda: headlab.retrieval.train(depth=2, lr=-1.0, out=tmp / "r1"), "lr"),
        ("retrieval train with a truthy string for a flag",
         lambda: headlab.retrieval.train(depth=2, untied="no", out=tmp / "r2"), "True or False"),  # type: ignore
        ("ablate on one window", lambda: headlab.ablate("smollm2-135m", heads=["0.1"], samples=1), "at least 2"),
        ("top with a negative k", lambda: headlab.top(tmp / "untracked", head="0.1", k=-1), "k"),
        ("scan corpus holding None", lambda: headlab.scan("minilm-l6", corpus=[None]), "corpus[0] is NoneType"),
        ("scan out as a number", lambda: headlab.scan("minilm-l6", out=5), "out=5"),
        ("view text as a number", lambda: headlab.view("minilm-l6", text=5), "text=5"),
        ("ablate with heads None", lambda: headlab.ablate("smollm2-135m", heads=None), "heads=None"),
        ("monitor check of no profile", lambda: headlab.monitor.check(None, corpus=["wiki"]), "profile=None"),
        ("depth law of no sweep", lambda: headlab.retrieval.depth_law([]), "give at least one"),
        ("report of None", lambda: headlab.report(None), "run=None"),
        ("scale of no run", lambda: headlab.scale([]), "give at least one"),
        ("languages with no items", lambda: headlab.languages(["minilm-l6"], n=0), "n"),
        ("top of None", lambda: headlab.top(None, head="0.1"), "source=None"),
        ("track of None", lambda: headlab.track(None), "run=None"),
        ("scan per-sample not parquet", lambda: headlab.scan("minilm-l6", per_sample=str(tmp / "s.csv")),
         "give a .parquet file path"),
        ("characterize into a held folder", lambda: headlab.characterize("minilm-l6", out=tmp / "held"),
         "overwrite=True"),
        ("view onto an existing page", lambda: headlab.view("minilm-l6", out=tmp / "page.html"), "overwrite=True"),
        ("view onto its own texts file", lambda: headlab.view("minilm-l6", texts_file=tmp / "page.html",
                                                               out=tmp / "page.html", overwrite=True),
         "never replaces an input"),
        ("top of a missing file", lambda: headlab.top(tmp / "none.parquet", head="0.1"), "does not exist"),
        ("check without a profile", lambda: headlab.monitor.check(tmp / "untracked", corpus=["wiki"]),
         "holds no profile.json"),
        ("check rows=False with nowhere to write them",
         lambda: headlab.monitor.check(tmp / "prof", corpus=["wiki"], rows=False), "rows=False keeps no row"),
        ("predict an untracked run", lambda: headlab.predict([tmp / "untracked"]), "has not been tracked"),
        ("induce a missing config", lambda: headlab.induce(tmp / "none.toml", out=tmp / "ind"), "does not exist"),
        ("claims without a folder", lambda: headlab.claims(["minilm-l6"], out=None), "out=None"),  # type: ignore
        # the Python twins refuse what the CLI refuses, with the same rule and the option named
        ("scan threshold -1", lambda: headlab.scan("minilm-l6", threshold=-1), "threshold="),
        ("scan threshold nan", lambda: headlab.scan("minilm-l6", threshold=float("nan")), "threshold="),
        ("scan max_samples as text", lambda: headlab.scan("minilm-l6", max_samples="8"), "max_samples="),  # type: ignore
        ("scan max_length None", lambda: headlab.scan("minilm-l6", max_length=None), "max_length="),  # type: ignore
        ("scan batch_size 0", lambda: headlab.scan("minilm-l6", batch_size=0), "batch_size="),
        ("scan consecutive 0", lambda: headlab.scan("minilm-l6", consecutive=0), "consecutive="),
        ("scan dtype float8", lambda: headlab.scan("minilm-l6", dtype="float8"), "dtype="),
        ("characterize n as text", lambda: headlab.characterize("minilm-l6", n="40"), "n="),  # type: ignore
        ("characterize threshold 2", lambda: headlab.characterize("minilm-l6", threshold=2), "threshold="),
        ("characterize dtype float8", lambda: headlab.characterize("minilm-l6", dtype="float8"), "dtype="),
        ("ablate dtype int8", lambda: headlab.ablate("smollm2-135m", ["0.1"], dtype="int8"), "dtype="),
        ("ablate heads as tuples", lambda: headlab.ablate("smollm2-135m", heads=[(0, 1)]), "L.H"),  # type: ignore
        ("ablate heads as a number", lambda: headlab.ablate("smollm2-135m", heads=7), "L.H"),  # type: ignore
        ("ablate draws -1", lambda: headlab.ablate("smollm2-135m", ["0.1"], draws=-1), "draws="),
        ("ablate mode half", lambda: headlab.ablate("smollm2-135m", ["0.1"], mode="half"), "mode="),
        ("monitor fit fpr 2", lambda: headlab.monitor.fit("minilm-l6", fpr=2), "fpr="),
        ("monitor fit 50 windows", lambda: headlab.monitor.fit("minilm-l6", max_samples=50), "max_samples="),
        ("importance of no model", lambda: headlab.importance(None), "model=None"),  # an alias's members
        ("monitor fit of no model", lambda: headlab.monitor.fit(None), "model=None"),
        ("monitor evaluate of a number", lambda: headlab.monitor.evaluate(5), "model=5"),
        ("train with a negative seed", lambda: headlab.train("smoke", out=tmp / "t", seed=-1), "seed"),
        ("sweep checkpointing at 0", lambda: headlab.retrieval.sweep(checkpoint_every=0, out=tmp / "s"),
         "checkpoint_every"),
    ]


def test_python_api_refuses_before_the_work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from headlab.errors import HeadlabError

    def no_model(*_a: object, **_k: object) -> None:
        raise AssertionError("the model was loaded before the input was checked")

    import importlib

    # every place a twin's model is loaded from (models.resolve calls models.loader.load)
    for where in ("headlab.models", "headlab.models.loader", "headlab.ablation.metrics"):
        monkeypatch.setattr(importlib.import_module(where), "load", no_model)
    for name, run, phrase in _api_cases(tmp_path):
        with pytest.raises(HeadlabError) as info:
            run()
        assert phrase in str(info.value) and "\n" not in str(info.value), name
        # a Python caller is told the keyword, not the command line's flag
        assert not re.search(r"--(threshold|max-samples|max-length|batch-size|consecutive|draws|mode|fpr|n)\b",
                             str(info.value)), (name, str(info.value))
    assert (tmp_path / "held" / "characterize.json").read_text() == "earlier"
    assert (tmp_path / "page.html").read_text() == "earlier"


def test_models_check_reads_a_config_of_a_billion_layers_from_the_config_alone(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from transformers import AutoConfig

    AutoConfig.for_model("gpt2", n_layer=10**9, n_embd=64, n_head=4).save_pretrained(tmp_path / "huge")
    assert main(["models", "check", str(tmp_path / "huge")]) == 0  # built as 12 layers, reported as the config's
    assert re.search(r"layers\s+1000000000\b", capsys.readouterr().out)
    (tmp_path / "none").mkdir()
    AutoConfig.for_model("gpt2", n_layer=0, n_embd=64, n_head=4).save_pretrained(tmp_path / "none")
    assert main(["models", "check", str(tmp_path / "none")]) == 2
    assert "at least 1 layer" in capsys.readouterr().err


@pytest.mark.parametrize("code, fix", [(errno.EROFS, "choose a writable --out"), (errno.EACCES, "choose a writable"),
                                       (errno.ENOSPC, "free space")])
def test_a_place_that_cannot_be_written_is_named_as_such(code: int, fix: str, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    import headlab.census.scanner

    def unwritable(*_a: object, **_k: object) -> None:
        raise OSError(code, os.strerror(code), "/ro/scan/scan.json")

    monkeypatch.setattr(headlab.census.scanner, "scan", unwritable)
    assert main(["scan", "minilm-l6", "--max-samples", "2", "--out", str(tmp_path / "out")]) == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert fix in last and "/ro/scan/scan.json" in last
    assert ("free space" in last) == (code == errno.ENOSPC)


def test_a_model_folders_code_never_runs_on_a_terminal_either(tmp_path: Path) -> None:
    """On a terminal transformers would ask "Do you wish to run the custom code? [y/N]"; headlab passes
    trust_remote_code=False, so nothing asks, a "y" typed ahead changes nothing, and nothing of the folder runs."""
    import os
    import subprocess
    import sys

    _remote_code_folder(tmp_path)
    leader, follower = os.openpty()
    os.write(leader, b"y\n")
    proc = subprocess.run([sys.executable, "-m", "headlab", "scan", str(tmp_path / "evil"), "--no-progress"],
                          stdin=follower, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})
    os.close(leader)
    os.close(follower)
    assert proc.returncode == 2, proc.stderr.decode()[-500:]
    assert "never runs code" in proc.stderr.decode().strip().splitlines()[-1]
    assert "custom code" not in proc.stdout.decode() + proc.stderr.decode()
    assert not (tmp_path / "ran.txt").exists()


def test_every_command_that_writes_a_result_has_a_no_overwrite_row() -> None:
    """Generated from the registry of outputs, not a list: each command whose Python twin takes ``out`` and returns
    a registered result kind must have a "no silent overwrite" row."""
    import inspect
    import typing

    from headlab.cli import build_parser
    from headlab.result import Result
    from tests.support import leaves

    writers = set()
    for cmd, p in leaves(build_parser()).items():
        fn = p.get_default("api")
        ret = typing.get_type_hints(fn).get("return") if fn is not None else None
        if isinstance(ret, type) and issubclass(ret, Result) and ret.KIND and "out" in inspect.signature(fn).parameters:
            writers.add(cmd)
    names = [r.name for r in ROWS]
    covered = {cmd for cmd in writers if any(n == f"no silent overwrite: {cmd}" or
                                             n.startswith(f"no silent overwrite: {cmd} ") for n in names)}
    assert len(writers) >= 19 and not writers - covered, sorted(writers - covered)


def test_a_summary_asked_for_more_heads_than_the_model_has_shows_every_head(tmp_path: Path, capsys) -> None:
    """`scan --top 1000000000` printed nothing and refused after writing its result (the size guard of a list of a
    billion heads, naming --n): a summary of more heads than the model has is every head's."""
    from headlab.cli.entry import main

    args = ["scan", "minilm-l6", "--max-samples", "2", "--threads", "1", "--no-progress"]
    assert main([*args, "--top", "1000000000", "--out", str(tmp_path / "a")]) == 0
    many = capsys.readouterr().out
    assert main([*args, "--top", "72", "--out", str(tmp_path / "b")]) == 0
    every = capsys.readouterr().out
    assert many.replace(str(tmp_path / "a"), "X") == every.replace(str(tmp_path / "b"), "X")
