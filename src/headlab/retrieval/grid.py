"""``headlab retrieval sweep``: decoders over layers x depth x curriculum x seeds; the success map.

Each cell trains into ``OUT/L{layers}-D{depth}-{curriculum}-s{seed}/`` (a finished cell, with its
``summary.json``, is not trained again, so an interrupted sweep continues where it stopped). Outputs:
``sweep.json`` (every run's summary and the success rate per cell), ``success_map.png`` (success rate per
layers x depth for each curriculum, with the bound layers = log_3(2D)) and ``learning_curves.png``
(full-depth held-out accuracy against steps, one line per run).
"""

from __future__ import annotations

import math
import multiprocessing
import shutil
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from headlab.errors import HeadlabError
from headlab.io import read_jsonl
from headlab.plotting import new_figure, pyplot, save_figure
from headlab.result import Result, found_in
from headlab.retrieval.record import RunSummary
from headlab.retrieval.settings import SWEEP, SweepSettings
from headlab.retrieval.training import RetrievalTask, retrieval_config
from headlab.retrieval.training_group import GroupMember, train_group
from headlab.training import checkpoint as ckpt


def cell_name(layers: int, depth: int, curriculum: str, seed: int) -> str:
    return f"L{layers}-D{depth}-{curriculum}-s{seed}"




@dataclass
class SweepResult(Result):
    """``sweep.json``: the grid, per-cell success counts, per-curriculum totals and every run's own result."""

    KIND = "sweep.json"
    COMPANIONS = ("sweep.md", "success_map.png", "learning_curves.png")
    grid: dict[str, Any]
    trained_now: int
    wall_s_this_call: float
    success_rule: str
    cells: dict[str, Any]
    by_curriculum: dict[str, Any]
    runs: list[dict[str, Any]]

    def markdown(self) -> str:
        return markdown(self)

    def records(self) -> list[dict[str, Any]]:
        """One row per cell (layers, depth, curriculum): seeds run, successes, the bound log_3(2D)."""
        return [{"cell": k, **{f: v for f, v in cell.items() if not isinstance(v, (list, dict))}}
                for k, cell in self.cells.items()]

    def figure(self) -> Any:
        """The success map (matplotlib figure)."""
        return success_figure(self)


def check(st: SweepSettings) -> None:
    """Every task of the grid is valid, and its largest ensemble fits, before anything trains or any folder is
    claimed (RetrievalTask and the training config's size check say what does not)."""
    for d in st.depths:
        task = RetrievalTask(d, "dense", n_distractors=st.distractors, separator=st.separator,
                             min_depth=st.min_depth)
        members = len(st.curricula) * len(st.seeds)  # one ensemble steps every member's batch at once
        retrieval_config(task, n_layers=max(st.layers), n_heads=st.n_heads, d_model=st.d_model, steps=st.steps,
                         batch_size=members * st.batch_size, checkpoint_every=st.checkpoint_every)


def sweep(out: str | Path, settings: SweepSettings = SWEEP, *, progress: bool) -> SweepResult:
    """Train every cell and aggregate; see the module docstring.

    The cells of one (layers, depth) train together as one ensemble (``headlab.training.ensemble``: curricula x
    seeds stacked, each member exactly its solo run), ``jobs`` ensembles at a time with one torch thread each.
    The default grid (36 runs, about 25 minutes on 2 cores) compares the three curricula at depths 2 and 3
    with 1 and 2 layers (the bound log_3(2D) is 1.26 and 1.63 layers there); checkpoints every 50 steps are
    what ``headlab retrieval analyze`` orders head emergence by. ``no_train`` only aggregates the finished
    cells: the others show as not run (0 seeds), for a time-boxed sweep."""

    st = settings
    check(st)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    cells = [(l, d, c, s) for l in st.layers for d in st.depths for c in st.curricula for s in st.seeds]
    warmup = min(100, st.steps // 10) if st.warmup_steps is None else st.warmup_steps
    shape = {"steps": st.steps, "d_model": st.d_model, "n_heads": st.n_heads, "lr": st.lr,
             "batch_size": st.batch_size, "positions": st.positions, "init": st.init, "untied": st.untied,
             "warmup_steps": warmup}
    todo: dict[tuple[int, int], list[tuple[str, int]]] = {}
    for l, d, c, s in cells:
        run = out / cell_name(l, d, c, s)
        if RunSummary in found_in(run):
            _check_settings(run, shape, {"n_distractors": st.distractors, "separator": st.separator,
                                         "min_depth": st.min_depth})
        else:
            todo.setdefault((l, d), []).append((c, s))
    groups = [_Group(str(out), l, d, tuple(m), st) for (l, d), m in todo.items()] if not st.no_train else []
    # cheapest first (layers x sequence length): an interrupted or time-boxed sweep keeps the most cells
    groups.sort(key=lambda g: g.layers * RetrievalTask(g.depth, "chain", n_distractors=st.distractors,
                                                       separator=st.separator).max_length)
    t0 = time.perf_counter()
    n_todo = sum(len(g.members) for g in groups)
    if progress and groups:
        print(f"headlab: sweep: {n_todo} of {len(cells)} runs to train in {len(groups)} ensembles, {st.jobs} at a "
              "time", file=sys.stderr)
    for i, name in enumerate(_run_groups(groups, st.jobs)):
        if progress:
            print(f"headlab: sweep ensemble {i + 1}/{len(groups)} done: {name}", file=sys.stderr, flush=True)
    runs = [RunSummary.read(out / cell_name(*c)).to_json() for c in cells
            if RunSummary in found_in(out / cell_name(*c))]
    for r in runs:
        r.setdefault("run", cell_name(r["n_layers"], r["task"]["depth"], r["task"]["curriculum"], r["seed"]))
    table = _cell_table(runs, st.layers, st.depths, st.curricula)
    by_curriculum = {c: {"runs": sum(v["seeds"] for v in table.values() if v["curriculum"] == c),
                         "successes": sum(v["successes"] for v in table.values() if v["curriculum"] == c)}
                     for c in st.curricula}
    grid = {"layers": list(st.layers), "depths": list(st.depths), "curricula": list(st.curricula),
            "seeds": list(st.seeds), "steps": st.steps, "d_model": st.d_model, "n_heads": st.n_heads,
            "batch_size": st.batch_size, "lr": st.lr, "n_distractors": st.distractors, "eval_every": st.eval_every,
            "checkpoint_every": st.checkpoint_every, "positions": st.positions, "init": st.init,
            "untied": st.untied, "separator": st.separator, "min_depth": st.min_depth,
            "warmup_steps": st.warmup_steps, "eval_n": st.eval_n, "not_run": len(cells) - len(runs)}
    result = SweepResult(grid=grid, trained_now=n_todo, wall_s_this_call=round(time.perf_counter() - t0, 1),
                         success_rule="held-out full-depth accuracy >= 0.99 at an evaluation step",
                         cells=table, by_curriculum=by_curriculum, runs=runs)
    result.write(out)
    plot_sweep(result, out)
    (out / "sweep.md").write_text(markdown(result))
    return result


def _cell_table(runs: list[dict[str, Any]], layers: Sequence[int], depths: Sequence[int],
                curricula: Sequence[str]) -> dict[str, Any]:
    """Per grid cell (``L2-D3-chain``): its seeds run, their successes and the bound log_3(2D)."""
    table: dict[str, Any] = {}
    for l in layers:
        for d in depths:
            for c in curricula:
                cell = [r for r in runs if r["n_layers"] == l and r["task"]["depth"] == d
                        and r["task"]["curriculum"] == c]
                table[f"L{l}-D{d}-{c}"] = {"layers": l, "depth": d, "curriculum": c, "seeds": len(cell),
                                           "successes": sum(r["success"] for r in cell),
                                           "bound_layers": math.log(2 * d, 3)}
    return table


def _check_settings(run: Path, settings: dict[str, Any], task: dict[str, Any]) -> None:
    """Refuse a sweep folder whose finished cell ``run`` was trained with other model/optimizer ``settings`` or
    other ``task`` fields (a missing task field reads as its default: files written before it existed)."""
    old = RunSummary.read(run).to_json()  # fields recorded later read as the defaults of the runs before them
    defaults = {f.name: f.default for f in fields(RetrievalTask)}
    if (any(old.get(k) != v for k, v in settings.items())
            or any(old["task"].get(k, defaults[k]) != v for k, v in task.items())):
        was = {**{k: old.get(k) for k in settings}, **{k: old["task"].get(k, defaults[k]) for k in task}}
        raise HeadlabError(f"{run} was trained with other settings ({was}); use another --out")


def _run_groups(groups: list["_Group"], jobs: int) -> Any:
    """Train the groups, ``jobs`` processes at a time; yields a line per finished group."""
    if jobs > 1 and len(groups) > 1:

        with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
            for f in as_completed([pool.submit(_train_group, g) for g in groups]):
                yield f.result()
    else:
        for g in groups:
            yield _train_group(g)


@dataclass(frozen=True)
class _Group:
    """The cells of one (layers, depth) that train together as one ensemble: (curriculum, seed) members."""

    out: str
    layers: int
    depth: int
    members: tuple[tuple[str, int], ...]
    settings: SweepSettings


def _train_group(g: _Group) -> str:
    st, out, members = g.settings, Path(g.out), []
    runs = [out / cell_name(g.layers, g.depth, c, s) for c, s in g.members]
    # an interrupted ensemble resumes from the newest step all its members checkpointed; one whose members were
    # not stopped together starts over (its batches are seeded: nothing is lost but time)
    resume = all(ckpt.checkpoints(r) for r in runs if r.exists()) and all(r.exists() for r in runs)
    for (c, s), run in zip(g.members, runs):
        if run.exists() and not resume:
            shutil.rmtree(run)
        task = RetrievalTask(g.depth, c, n_distractors=st.distractors, separator=st.separator,
                             min_depth=st.min_depth)
        members.append(GroupMember(task, run, seed=s, lr=st.lr, warmup_steps=st.warmup_steps))
    done = train_group(members, n_layers=g.layers, n_heads=st.n_heads, d_model=st.d_model, steps=st.steps,
                       batch_size=st.batch_size, positions=st.positions, init=st.init, untied=st.untied,
                       eval_every=st.eval_every, eval_n=st.eval_n, checkpoint_every=st.checkpoint_every,
                       resume=resume, progress=False)
    wins = sum(bool(r.success) for r in done)
    return f"L{g.layers}-D{g.depth}: {wins}/{len(done)} runs succeeded ({done[0].ensemble_wall_s} s)"


def markdown(result: SweepResult) -> str:
    """Per curriculum, a layers x depth table: successes/seeds, the median step of success, and the mean final
    held-out accuracy at full depth; the bound log_3(2D) per depth."""

    g = result["grid"]
    lines = [f"# Retrieval sweep: {g['steps']} steps of {g['batch_size']}, d={g['d_model']}, {g['n_heads']} heads, "
             f"{g['n_distractors']} distractor chain(s), lr {g['lr']}", "",
             "Cell: successes/seeds (median step of success) · mean final full-depth accuracy. Success: "
             + result["success_rule"] + ".", ""]
    depths = g["depths"]
    bound = " | ".join(f"{math.log(2 * d, 3):.2f}" for d in depths)
    for c in g["curricula"]:
        lines += [f"## {c}", "", "| layers | " + " | ".join(f"D={d}" for d in depths) + " |",
                  "|---" * (len(depths) + 1) + "|", f"| bound log₃(2D) | {bound} |"]
        for l in g["layers"]:
            row = []
            for d in depths:
                runs = [r for r in result["runs"] if r["n_layers"] == l and r["task"]["depth"] == d
                        and r["task"]["curriculum"] == c]
                wins = [r["success_step"] for r in runs if r["success"]]
                acc = statistics.mean(r["final_accuracy"].get(str(d), 0.0) for r in runs) if runs else float("nan")
                med = f" ({statistics.median(wins):.0f})" if wins else ""
                row.append(f"{len(wins)}/{len(runs)}{med} · {acc:.2f}" if runs else "not run")
            lines.append(f"| {l} | " + " | ".join(row) + " |")
        lines.append("")
    return "\n".join(lines)


def plot_sweep(result: SweepResult, out: Path) -> None:
    plt = pyplot()
    save_figure(success_figure(result), out / "success_map.png")
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
    save_figure(fig, out / "learning_curves.png")


def success_figure(result: SweepResult) -> Any:
    """Per curriculum, the layers x depth success rate with the bound log_3(2D) (matplotlib figure)."""

    g = result["grid"]
    L, D, C = g["layers"], g["depths"], g["curricula"]
    fig = new_figure(figsize=(4.2 * len(C), 3.6))
    axes = fig.subplots(1, len(C), squeeze=False)
    for ax, c in zip(axes[0], C):
        rate = np.array(
            [
                [
                    result["cells"][f"L{l}-D{d}-{c}"]["successes"] / result["cells"][f"L{l}-D{d}-{c}"]["seeds"]
                    if result["cells"][f"L{l}-D{d}-{c}"]["seeds"] else np.nan  # not run
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
                    f"{cell['successes']}/{cell['seeds']}" if cell["seeds"] else "not run",
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
    return fig
