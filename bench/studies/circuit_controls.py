"""Controls for every committed retrieval circuit: each analyzed run trained again from its own record, its committed
circuit ablated there against control sets (``analyze/controls.json`` beside the committed ``analyze.json``).

The committed runs kept no weights (their checkpoints were not committed), and their analyses had no control
where a layer had fewer unlabelled heads than labelled ones. A replica trains the run's recipe again (its
summary's shape, budget, seed and task) into a scratch folder, in the same ensemble as the committed run
(:func:`group_of`): trained alone, a member's arithmetic differs from its ensemble's in the last bits, which the
short chain runs absorbed (every evaluation equal) and the long dense runs did not (few evaluations equal): another
model, whose heads need not be the committed ones. Its evaluation log is compared with the committed one,
evaluation by evaluation; the committed labels are then ablated in the replica on the analysis's own test
set (``headlab.retrieval.controls.circuit_ablation``, the code ``headlab retrieval analyze`` runs), with 100 control
draws (an analysis's default is 10; a replica's evaluations are cheap beside its training, and 100 sets let the
permutation p reach 1/101 where that many exist). A replica keeps its final weights in the scratch folder
(git-ignored), so its controls can be measured again without training. Nothing committed is rewritten; a run
with a ``controls.json`` is kept; cheapest runs first; an analysis with no labelled head (no circuit) or whose
circuit is every head of the model (no other set of its size exists) is said and not replicated.

    OMP_NUM_THREADS=1 .venv/bin/python bench/studies/circuit_controls.py [--jobs 2] [--scratch DIR] [RESULTS]
    .venv/bin/python bench/studies/circuit_controls.py --table results/retrieval/controls.md
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from headlab.io import write_text_atomic

ROOT = Path(__file__).resolve().parents[2]
DRAWS = 100  # control sets where that many exist: the smallest permutation p is then 1/101


def _cost(run: Path) -> float:
    s = json.loads((run / "summary.json").read_text())
    return s["steps"] * s["n_layers"] * s["d_model"] ** 2


def _agreement(committed: Path, replica: Path) -> dict[str, Any]:
    a = [json.loads(x) for x in committed.read_text().splitlines() if x.strip()]
    b = [json.loads(x) for x in replica.read_text().splitlines() if x.strip()]
    same_steps = [x["step"] for x in a] == [x["step"] for x in b]
    diffs = [abs(x["accuracy"][k] - y["accuracy"][k]) for x, y in zip(a, b) for k in x["accuracy"]]
    equal = sum(x["accuracy"] == y["accuracy"] for x, y in zip(a, b))
    worst = max(diffs, default=float("nan"))
    return {"evaluations": len(a), "same_steps": same_steps, "equal_evaluations": equal,
            "max_accuracy_difference": worst,
            "agreement": (f"{equal} of {len(a)} evaluations give the committed accuracies at every depth; the largest "
                          f"difference {worst:.3f}")}


def group_of(run: Path) -> list[Path]:
    """The runs ``run`` was trained with, in the order their ensemble held them (one model, where it was trained
    alone): the ensemble's arithmetic depends on its members, and over a long dense run a last-bit difference
    grows into another model, so a replica trains the same ensemble again. Members share their folder, shape,
    depth and ensemble wall time; their order is the sweep's (curricula as its grid lists them, then seeds)."""
    s = json.loads((run / "summary.json").read_text())
    n = int(str(s.get("trained_with", "ensemble of 1")).rsplit(" ", 1)[-1])
    key = (s["n_layers"], s["task"]["depth"], s.get("ensemble_wall_s"), s.get("trained_with"))
    found = []
    for other in sorted(run.parent.glob("*/summary.json")):
        o = json.loads(other.read_text())
        if (o["n_layers"], o["task"]["depth"], o.get("ensemble_wall_s"), o.get("trained_with")) == key:
            found.append((other.parent, o))
    sweep = run.parent / "sweep.json"
    curricula = json.loads(sweep.read_text())["grid"]["curricula"] if sweep.exists() else []
    rank = {c: i for i, c in enumerate(curricula)}
    found.sort(key=lambda x: (rank.get(x[1]["task"]["curriculum"], len(rank)), x[1]["seed"]))
    return [p for p, _ in found] if len(found) == n else [run]


def replicate(group: list[Path], scratch: Path) -> list[str]:
    try:
        return _replicate(group, scratch)
    except Exception as exc:  # one failed replica is said; the others go on
        return [f"{group[0]}: FAILED {type(exc).__name__}: {exc}"]


def _train(group: list[Path], scratch: Path) -> list[Path]:
    """Each run of ``group`` trained again, together, into ``scratch`` (kept where a replica finished)."""
    from headlab.retrieval.task import RetrievalTask
    from headlab.retrieval.training_group import GroupMember, train_group

    copies = [scratch / run.relative_to(ROOT) for run in group]
    if all((c / "summary.json").exists() for c in copies):
        return copies
    for c in copies:
        if c.exists():
            shutil.rmtree(c)  # an unfinished replica starts over: its batches are seeded
    s = [json.loads((run / "summary.json").read_text()) for run in group]
    first = json.loads((group[0] / "eval.jsonl").read_text().splitlines()[0])["step"]
    members = [GroupMember(RetrievalTask(**x["task"]), c, seed=x["seed"], lr=x["lr"], warmup_steps=x["warmup_steps"])
               for x, c in zip(s, copies)]
    a = s[0]
    train_group(members, n_layers=a["n_layers"], n_heads=a["n_heads"], d_model=a["d_model"], steps=a["steps"],
                batch_size=a["batch_size"], positions=a["positions"], init=a.get("init", "default"),
                untied=a.get("untied", False), eval_every=first, eval_n=a.get("eval_n", 96),
                checkpoint_every=a["checkpoint_every"], progress=False)
    for c in copies:
        for old in sorted((c / "checkpoints").glob("step-*"))[:-1]:
            shutil.rmtree(old)  # a replica keeps its final weights (git-ignored), to be controlled again
    return copies


def _replicate(group: list[Path], scratch: Path) -> list[str]:
    from headlab.retrieval.analysis import PROBE_SEED as SEED
    from headlab.retrieval.analysis import AnalyzeResult
    from headlab.retrieval.controls import CircuitControls, circuit_ablation
    from headlab.retrieval.training import eval_set, load_run

    t0 = time.perf_counter()
    copies = _train(group, scratch)
    trained = round(time.perf_counter() - t0, 1)
    said = []
    for run, copy in zip(group, copies):
        analysis = run / "analyze" / "analyze.json"
        if not analysis.exists() or (analysis.parent / "controls.json").exists():
            continue
        committed = AnalyzeResult.read(analysis)
        model, task = load_run(copy)
        test = eval_set(task, 256, SEED + 3 * 10**6, task.depth)
        replica = _agreement(run / "eval.jsonl", copy / "eval.jsonl")
        replica.update(trained_s=trained, trained_with=f"ensemble of {len(group)}",
                       accuracy_base_committed=committed["ablation"]["accuracy_base"],
                       accuracy_labelled_ablated_committed=committed["ablation"]["accuracy_labelled_ablated"])
        ablation = circuit_ablation(model, task, committed["labels"], test, DRAWS, SEED)
        CircuitControls(str(run.relative_to(ROOT)), committed["labels"], replica, ablation).write(analysis.parent)
        c = ablation["control"]
        end = f"p {c['p_value']:.3g}, {c['draws']} sets" if c else ablation["control_note"]
        said.append(f"{run.relative_to(ROOT)}: {replica['agreement']}; {end} ({time.perf_counter() - t0:.0f} s)")
    return said


def table(root: Path) -> str:
    """Every committed circuit and its controls (``controls.json``), or why it has none yet: a Markdown table."""
    from headlab.retrieval.controls import SHORT, WHOLE, CircuitControls

    rows, waiting, beats, weak, controlled, whole, diverged = [], [], 0, 0, 0, 0, 0
    for analysis in sorted(root.glob("**/analyze/analyze.json")):
        run = analysis.parents[1].relative_to(ROOT)
        labels = json.loads(analysis.read_text())["labels"]
        per_layer = "/".join(str(sum(x != "-" for x in row)) for row in labels)
        if not (analysis.parent / "controls.json").exists():
            if all(x != "-" for row in labels for x in row):  # not replicated: no set could be drawn
                whole += 1
                rows.append(f"| `{run}` | {per_layer} | not replicated | – | – | {WHOLE} | – | – | – |")
            elif any(x != "-" for row in labels for x in row):
                waiting.append(f"`{run}`")
            continue
        c = CircuitControls.read(analysis.parent)
        a, ctl, rep = c.ablation, c.ablation["control"], c.replica
        kind = "–" if ctl is None else SHORT.get(ctl["matched"], ctl["matched"])
        said = (a["control_note"] or "–") if ctl is None else (
            f"{kind}, {ctl['draws']} | {a['accuracy_control_mean']:.2f} | {ctl['difference']:+.2f} "
            f"[{ctl['interval'][0]:+.2f}, {ctl['interval'][1]:+.2f}] | {ctl['p_value']:.3f} "
            f"(≥ {1 / (ctl['draws'] + 1):.3f})")
        if ctl is None:
            said += " | – | – | –"
            whole += 1
        elif rep["equal_evaluations"] < rep["evaluations"]:  # another model: its heads need not be the circuit's
            said = f"diverged replica, not a control of the committed circuit ({said.split(' | ', 1)[0]}) | – | – | –"
            diverged += 1
        else:
            controlled += 1
            beats += ctl["p_value"] < 0.05 and ctl["interval"][1] < 0
            weak += 1 / (ctl["draws"] + 1) >= 0.05
        rows.append(f"| `{run}` | {per_layer} | {rep['equal_evaluations']}/{rep['evaluations']}, "
                    f"{rep['max_accuracy_difference']:.3f} | {rep['accuracy_base_committed']:.2f} → "
                    f"{a['accuracy_base']:.2f} | {rep['accuracy_labelled_ablated_committed']:.2f} → "
                    f"{a['accuracy_labelled_ablated']:.2f} | {said} |")
    head = ["| run | labelled heads per layer | replica: evaluations equal, largest difference | accuracy "
            "(committed → replica) | circuit ablated (committed → replica) | controls: how, sets | control mean "
            "| circuit − controls [95%] | permutation p (its smallest possible) |",
            "|---|---|---|---|---|---|---|---|---|"]
    tail = [f"\n{len(rows) + len(waiting)} circuits: {whole} are the whole model, with no control possible; "
            f"{diverged} replicas diverged from their runs; {controlled} controlled, {beats} of them cost more than "
            f"their controls (permutation p < 0.05 "
            f"and the interval below zero); {weak} have fewer than 19 control sets, too few for p < 0.05; "
            f"{len(waiting)} not yet replicated"
            + (": " + ", ".join(waiting) if waiting else "") + "."]
    return "\n".join(head + rows + tail) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("results", nargs="?", default=str(ROOT / "results/retrieval"))
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--scratch", default=str(ROOT / ".replicas"))
    ap.add_argument("--max-cost", type=float, default=float("inf"), help="skip runs costlier than this")
    ap.add_argument("--skip", nargs="*", default=[], metavar="GLOB",
                    help="leave out the runs whose path under the results folder matches (e.g. 'depth_law*/*')")
    ap.add_argument("--table", help="only write the table of every circuit's controls to this file")
    args = ap.parse_args()
    if args.table:
        write_text_atomic(Path(args.table), table(Path(args.results).resolve()))
        return 0
    todo = []
    for analysis in sorted(Path(args.results).resolve().glob("**/analyze/analyze.json")):
        if (analysis.parent / "controls.json").exists():
            continue
        labels = json.loads(analysis.read_text())["labels"]
        if not any(x != "-" for row in labels for x in row):
            print(f"{analysis.parents[1].relative_to(ROOT)}: no labelled head, no circuit to control", file=sys.stderr)
            continue
        if all(x != "-" for row in labels for x in row):
            print(f"{analysis.parents[1].relative_to(ROOT)}: the circuit is the whole model, no control can exist",
                  file=sys.stderr)
            continue
        if any(analysis.parents[1].relative_to(Path(args.results).resolve()).match(g) for g in args.skip):
            continue
        if _cost(analysis.parents[1]) <= args.max_cost:
            todo.append(analysis)
    groups: dict[tuple[Path, ...], None] = {}
    for analysis in todo:
        groups.setdefault(tuple(group_of(analysis.parents[1])), None)
    work = sorted(groups, key=lambda g: sum(map(_cost, g)))
    print(f"{len(todo)} circuits to control, in {len(work)} ensembles", file=sys.stderr, flush=True)
    with ProcessPoolExecutor(args.jobs) as pool:
        for lines in pool.map(replicate, [list(g) for g in work], [Path(args.scratch)] * len(work)):
            print("\n".join(lines), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
