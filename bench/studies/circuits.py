"""Circuits and emergence order for every successful run of a sweep (default results/retrieval/map).

For each run whose summary says success: ``headlab retrieval analyze`` (64 probes, 10 matched-control draws;
kept if already there), then per cell (layers x depth x curriculum) ``circuit_emergence`` over its successful
seeds, written to OUT/emergence/<cell>.json. Prints a markdown table: per cell the labels found (count of
each layer:label over seeds), the ablation check (full-depth accuracy, with the labelled heads zero-ablated,
with as many matched random heads; and each head alone, averaged over labelled and over unlabelled heads), and
the most common emergence order. Where a run's analysis had no matched control, the control column reads its
replica's (``analyze/controls.json``, bench/studies/circuit_controls.py: random sets of the circuit's size;
results/retrieval/controls.md says how they were drawn).

    OMP_NUM_THREADS=1 .venv/bin/python bench/studies/circuits.py [SWEEP_FOLDER] > results/retrieval/circuits.md
"""

import json
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

from headlab.io import sealed, write_json_atomic
from headlab.retrieval.analysis import AnalyzeResult, analyze, circuit_emergence, write_analysis
from headlab.retrieval.controls import CircuitControls
from headlab.retrieval.settings import AnalyzeSettings

root = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[2] / "results/retrieval/map")
t0 = time.perf_counter()
cells: dict[str, list[AnalyzeResult]] = {}
analyzed = 0
for summary in sorted(root.glob("*/summary.json")):
    s = json.loads(summary.read_text())
    if not s["success"]:
        continue
    run = summary.parent
    out = run / "analyze"
    if not (out / "analyze.json").exists():
        write_analysis(analyze(run, AnalyzeSettings(n=64, draws=10)), out)
        analyzed += 1
    cell = run.name.rsplit("-s", 1)[0]
    cells.setdefault(cell, []).append(AnalyzeResult.read(out / "analyze.json"))


def fmt(x):
    return "–" if x is None else f"{x:.2f}"


n_runs = sum(map(len, cells.values()))
shown = root.relative_to(Path.cwd()) if root.is_relative_to(Path.cwd()) else root
print(f"Circuits of the successful runs in `{shown}` "
      f"({n_runs} runs; {analyzed} analyzed now in {time.perf_counter() - t0:.0f} s, {n_runs - analyzed} analyzed "
      "before).\n")
print("| cell | runs | labels over seeds (layer:label ×count) | accuracy: full → labelled ablated → matched random |"
      " one head ablated: labelled / unlabelled (mean accuracy) | most common emergence order (runs sharing it) |")
print("|---|---|---|---|---|---|")
(root / "emergence").mkdir(exist_ok=True)
for cell, runs in sorted(cells.items()):
    labels = Counter(f"{li}:{lab}" for r in runs for li, row in enumerate(r["labels"]) for lab in row if lab != "-")
    ab = [r["ablation"] for r in runs]
    base = statistics.mean(a["accuracy_base"] for a in ab)
    abl = statistics.mean(a["accuracy_labelled_ablated"] for a in ab)
    # the controls of the committed circuit, measured in a replica (bench/studies/circuit_controls.py) where the
    # analysis had none
    ctl = []
    for r in runs:
        here = Path(__file__).resolve().parents[2] / r["run"] / "analyze" / "controls.json"
        a = CircuitControls.read(here).ablation if here.exists() else r["ablation"]
        if a["accuracy_control_mean"] is not None:
            ctl.append(a["accuracy_control_mean"])
    one = {True: [], False: []}
    for r in runs:
        for k, v in r["ablation"]["single_head"].items():
            li, h = map(int, k.split("."))
            one[r["labels"][li][h] != "-"].append(v)
    em = circuit_emergence(runs)
    write_json_atomic(root / "emergence" / f"{cell}.json", sealed(em.to_json()))  # one file per cell, not a folder
    order = " → ".join(em["most_common_order"]) or "none"
    if em["same_order"] == 1 and em["n_runs"] > 1:
        order = "no order shared by two runs; e.g. " + order
    lab = ", ".join(f"{k} ×{v}" for k, v in sorted(labels.items()))
    print(f"| {cell} | {len(runs)} | {lab} | {fmt(base)} → {fmt(abl)} → "
          f"{fmt(statistics.mean(ctl)) if ctl else '– (no control)'} ({len(ctl)}/{len(ab)} with control) | "
          f"{fmt(statistics.mean(one[True]) if one[True] else None)} / "
          f"{fmt(statistics.mean(one[False]) if one[False] else None)} | "
          f"{order} ({em['same_order']}/{em['n_runs']}) |")
