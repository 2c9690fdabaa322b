"""How far ``headlab view`` walks through the package, per kind of source: the headlab modules whose code runs while
its page data is built, the calls that cross from one module into another, and whether it measures (runs a scan,
a probe or a profile) or reads what a result holds.

    .venv/bin/python bench/viewer_walk.py --out results/viewer_walk/walk.json

Builds a tiny training run (tracked and untracked), a tiny retrieval run (analyzed) and a scan folder of minilm-l6
in a temporary folder, then profiles ``headlab.viewer.build`` on each (and on the model alone, with one text).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: functions that measure heads: a view that calls one ran a scan, a probe or a profile instead of reading one
MEASURES = ("headlab.census.scanner:scan", "headlab.probes.scoring:score_probes",
            "headlab.retrieval.analysis:head_profile", "headlab.retrieval.hops:hop_profile")


def walk(fn: Callable[[], Any]) -> dict[str, Any]:
    """Profile ``fn``: the headlab modules entered, the module-to-module calls, the measuring functions called."""
    modules: set[str] = set()
    crossings: set[tuple[str, str]] = set()
    measured: set[str] = set()
    stack: list[str] = []

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            mod = frame.f_globals.get("__name__", "")
            if not mod.startswith("headlab"):
                stack.append("")
                return
            modules.add(mod)
            caller = next((m for m in reversed(stack) if m), None)
            if caller and caller != mod:
                crossings.add((caller, mod))
            if f"{mod}:{frame.f_code.co_name}" in MEASURES:
                measured.add(f"{mod}:{frame.f_code.co_name}")
            stack.append(mod)
        elif event == "return" and stack:
            stack.pop()

    start = time.perf_counter()
    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return {"modules": len(modules), "crossings": len(crossings), "measures": sorted(measured),
            "seconds": round(time.perf_counter() - start, 2), "module_list": sorted(modules)}


def headlab_imports(paths: list[Path]) -> dict[str, int]:
    """Distinct headlab modules each file imports (``from headlab.x import``, ``import headlab.x``)."""
    import ast

    out = {}
    for p in paths:
        names = set()
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("headlab"):
                names.add(node.module)
            elif isinstance(node, ast.Import):
                names.update(a.name for a in node.names if a.name.startswith("headlab"))
        out[str(p.relative_to(ROOT))] = len(names)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--files", nargs="*", default=[], help="view source files whose headlab imports are counted")
    a = ap.parse_args()
    from headlab.cli import main as cli
    from headlab.formation.training_run import tracked_training
    from headlab.training import from_dict
    from headlab.viewer import build
    from tests.support import TINY_RUN

    tmp = Path(tempfile.mkdtemp(prefix="headlab-walk-"))
    try:
        run = tmp / "train"
        tracked_training(from_dict(json.loads(json.dumps(TINY_RUN))), run, progress=False)
        untracked = tmp / "untracked"
        shutil.copytree(run, untracked)
        assert cli(["track", str(run), "--n", "6", "--no-progress"]) == 0
        assert cli(["retrieval", "sweep", "--layers", "2", "--depths", "2", "--curricula", "chain", "--seeds", "0",
                    "--steps", "40", "--batch-size", "16", "--eval-every", "20", "--checkpoint-every", "20",
                    "--d-model", "32", "--no-progress", "--jobs", "1", "--out", str(tmp / "sweep")]) == 0
        ret = tmp / "sweep" / "L2-D2-chain-s0"
        assert cli(["retrieval", "analyze", str(ret), "--n", "8", "--draws", "2"]) == 0
        scan = tmp / "scan"
        assert cli(["scan", "minilm-l6", "--corpus", "wiki", "--max-samples", "8", "--no-progress",
                    "--out", str(scan)]) == 0
        text = [("a text", "See /usr/lib and https://example.org/a/b for 1/2 of it.")]
        cases = {"model with one text": lambda: build("minilm-l6", text, progress=False),
                 "scan folder": lambda: build(scan, progress=False),
                 "training run, tracked": lambda: build(run, progress=False),
                 "training run, untracked": lambda: build(untracked, progress=False),
                 "retrieval run, analyzed": lambda: build(ret, progress=False)}
        rows = {name: walk(fn) for name, fn in cases.items()}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout
    out = {"commit": commit.strip(), "command": "bench/viewer_walk.py " + " ".join(sys.argv[1:]), "walks": rows,
           "imports": headlab_imports([ROOT / f for f in a.files])}
    for name, r in rows.items():
        print(f"{name:28} {r['modules']:3} modules, {r['crossings']:3} crossings, measures: "
              f"{', '.join(r['measures']) or 'nothing'} ({r['seconds']} s)")
    for f, n in out["imports"].items():
        print(f"{f}: imports {n} headlab modules")
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
