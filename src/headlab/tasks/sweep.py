"""``headlab retrieval sweep``: decoders over layers x depth x curriculum x seeds; the success map.

Each cell trains into ``OUT/L{layers}-D{depth}-{curriculum}-s{seed}/`` (a finished cell, with its
``summary.json``, is not trained again, so an interrupted sweep continues where it stopped). Outputs:
``sweep.json`` (every run's summary and the success rate per cell), ``success_map.png`` (success rate per
layers x depth for each curriculum, with the bound layers = log_3(2D)) and ``learning_curves.png``
(full-depth held-out accuracy against steps, one line per run).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from ..errors import HeadlabError
from ..io import read_jsonl
from ..plotting import pyplot
from ..result import Result
from .training import RetrievalTask, train_retrieval


def cell_name(layers: int, depth: int, curriculum: str, seed: int) -> str:
    return f"L{layers}-D{depth}-{curriculum}-s{seed}"


DEFAULT_GRID: dict[str, Any] = {"layers": (1, 2), "depths": (2, 3), "curricula": ("none", "mixed", "chain"),
                                "seeds": (0, 1, 2)}


@dataclass
class SweepResult(Result):
    """``sweep.json``: the grid, per-cell success counts, per-curriculum totals and every run's own result."""

    KIND = "sweep.json"
    grid: dict[str, Any]
    trained_now: int
    wall_s_this_call: float
    success_rule: str
    cells: dict[str, Any]
    by_curriculum: dict[str, Any]
    runs: list[dict[str, Any]]


def sweep(out: str | Path, *, layers: Sequence[int] = DEFAULT_GRID["layers"],
          depths: Sequence[int] = DEFAULT_GRID["depths"], curricula: Sequence[str] = DEFAULT_GRID["curricula"],
          seeds: Sequence[int] = DEFAULT_GRID["seeds"], steps: int = 2500, d_model: int = 64, n_heads: int = 4,
          batch_size: int = 64, lr: float = 1e-3, n_distractors: int = 2, eval_every: int = 100,
          checkpoint_every: int = 50, progress: bool = True, jobs: int = 2) -> SweepResult:
    """Train every cell (``jobs`` at a time, one torch thread each) and aggregate; see the module docstring.

    The default grid (36 runs, about 25 minutes on 2 cores) compares the three curricula at depths 2 and 3
    with 1 and 2 layers (the bound log_3(2D) is 1.26 and 1.63 layers there); checkpoints every 50 steps are
    what ``headlab retrieval analyze`` orders head emergence by."""
    import shutil
    import sys
    import time
    from concurrent.futures import ProcessPoolExecutor

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    cells = [(l, d, c, s) for l in layers for d in depths for c in curricula for s in seeds]
    todo = []
    for l, d, c, s in cells:
        run = out / cell_name(l, d, c, s)
        if (run / "summary.json").exists():
            old = json.loads((run / "summary.json").read_text())
            want = {"steps": steps, "d_model": d_model, "n_heads": n_heads, "lr": lr, "batch_size": batch_size}
            if any(old.get(k) != v for k, v in want.items()) or old["task"]["n_distractors"] != n_distractors:
                raise HeadlabError(f"{run} was trained with other settings ({ {k: old.get(k) for k in want} }); "
                                   "use another --out")
        else:
            if run.exists():  # an interrupted cell starts over: its batches are seeded, nothing is lost
                shutil.rmtree(run)
            todo.append(dict(task=RetrievalTask(d, c, n_distractors=n_distractors), run=run, n_layers=l,
                             n_heads=n_heads, d_model=d_model, steps=steps, batch_size=batch_size, lr=lr, seed=s,
                             eval_every=eval_every, checkpoint_every=checkpoint_every, progress=False))
    t0 = time.perf_counter()
    if progress and todo:
        print(f"headlab: sweep: {len(todo)} of {len(cells)} runs to train, {jobs} at a time", file=sys.stderr)
    if jobs > 1 and len(todo) > 1:
        import multiprocessing

        with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
            futures = [pool.submit(_train_cell, kw) for kw in todo]
            for i, f in enumerate(futures):
                name = f.result()
                if progress:
                    print(f"headlab: sweep run {i + 1}/{len(todo)} done: {name}", file=sys.stderr, flush=True)
    else:
        for i, kw in enumerate(todo):
            name = _train_cell(kw)
            if progress:
                print(f"headlab: sweep run {i + 1}/{len(todo)} done: {name}", file=sys.stderr, flush=True)
    runs = [json.loads((out / cell_name(*c) / "summary.json").read_text()) for c in cells]
    for r in runs:
        r.setdefault("run", cell_name(r["n_layers"], r["task"]["depth"], r["task"]["curriculum"], r["seed"]))
    table: dict[str, Any] = {}
    for l in layers:
        for d in depths:
            for c in curricula:
                cell = [r for r in runs if r["n_layers"] == l and r["task"]["depth"] == d
                        and r["task"]["curriculum"] == c]
                table[f"L{l}-D{d}-{c}"] = {"layers": l, "depth": d, "curriculum": c, "seeds": len(cell),
                                           "successes": sum(r["success"] for r in cell),
                                           "bound_layers": math.log(2 * d, 3)}
    by_curriculum = {c: {"runs": sum(v["seeds"] for v in table.values() if v["curriculum"] == c),
                         "successes": sum(v["successes"] for v in table.values() if v["curriculum"] == c)}
                     for c in curricula}
    result = SweepResult(
        grid={"layers": list(layers), "depths": list(depths), "curricula": list(curricula), "seeds": list(seeds),
              "steps": steps, "d_model": d_model, "n_heads": n_heads, "batch_size": batch_size, "lr": lr,
              "n_distractors": n_distractors, "eval_every": eval_every, "checkpoint_every": checkpoint_every},
        trained_now=len(todo), wall_s_this_call=round(time.perf_counter() - t0, 1),
        success_rule="held-out full-depth accuracy >= 0.99 at an evaluation step",
        cells=table, by_curriculum=by_curriculum, runs=runs)
    result.write(out / "sweep.json")
    plot_sweep(result, out)
    return result


def _train_cell(kw: dict[str, Any]) -> str:
    r = train_retrieval(**kw)
    return f"{Path(kw['run']).name}: success {r['success']} (step {r['success_step']})"


def plot_sweep(result: SweepResult, out: Path) -> None:
    plt = pyplot()
    import numpy as np

    g = result["grid"]
    L, D, C = g["layers"], g["depths"], g["curricula"]
    fig, axes = plt.subplots(1, len(C), figsize=(4.2 * len(C), 3.6), squeeze=False)
    for ax, c in zip(axes[0], C):
        rate = np.array(
            [
                [
                    result["cells"][f"L{l}-D{d}-{c}"]["successes"] / max(1, result["cells"][f"L{l}-D{d}-{c}"]["seeds"])
                    for d in D
                ]
                for l in L
            ]
        )
        im = ax.imshow(rate, origin="lower", vmin=0, vmax=1, cmap="Greens", aspect="auto")
        for i in range(len(L)):
            for j in range(len(D)):
                cell = result["cells"][f"L{L[i]}-D{D[j]}-{c}"]
                ax.text(
                    j,
                    i,
                    f"{cell['successes']}/{cell['seeds']}",
                    ha="center",
                    va="center",
                    fontsize=9,
                    color="white" if rate[i, j] > 0.5 else "black",
                )
        xs = np.linspace(0, len(D) - 1, 50)
        dd = np.interp(xs, range(len(D)), D)
        ax.plot(xs, np.interp(np.log(2 * dd) / np.log(3), L, range(len(L))), "r--", label="layers = log₃(2D)")
        ax.set_xticks(range(len(D)), [str(d) for d in D])
        ax.set_yticks(range(len(L)), [str(l) for l in L])
        ax.set(xlabel="chain depth D", ylabel="layers", title=f"success rate, curriculum {c}")
        ax.legend(fontsize=7, loc="upper left")
    fig.colorbar(im, ax=axes[0].tolist(), label="share of seeds with accuracy ≥ 99%")
    fig.savefig(out / "success_map.png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(7, 4))
    for r in result["runs"]:
        rows = read_jsonl(out / r["run"] / "eval.jsonl") if (out / r["run"] / "eval.jsonl").exists() else []
        d = str(r["task"]["depth"])
        ax.plot(
            [x["step"] for x in rows],
            [x["accuracy"][d] for x in rows],
            lw=0.8,
            ls="-" if r["task"]["curriculum"] != "none" else ":",
            label=r["run"],
        )
    ax.set(xlabel="step", ylabel="held-out accuracy at full depth", title="retrieval learning curves", ylim=(0, 1.02))
    ax.legend(fontsize=5, ncol=3)
    fig.tight_layout()
    fig.savefig(out / "learning_curves.png", dpi=110)
    plt.close(fig)
