"""The depth law of the retrieval problem: per number of layers, the largest hop count a trained decoder solves,
against the log₃(2D) bound (a depth-L model can resolve at most 3^L / 2 hops) and the 2^L of plain doubling.

A run's D_max is the largest D such that every hop count 1..D is solved at ``solved`` accuracy (0.95): under
``dense`` from its per-hop accuracy at the references (:func:`~headlab.retrieval.training.hop_accuracy`), under
an answer-only curriculum (``mixed``) from its held-out answer accuracy per queried depth. Both are read from
the last held-out row of each run of a sweep (``headlab retrieval sweep``), so the two curricula are compared
at the same steps and examples. A folder of k-hop runs (``--task khop``, Sanford et al.'s task) reads the same
way, from each run's final error per hop count, beside the threshold they published for that layer count.
``headlab retrieval depth-law SWEEP`` writes ``depth_law.json``, ``.md`` and ``depth_law.png``.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from headlab.errors import HeadlabError
from headlab.io import write_text_atomic
from headlab.plotting import new_figure, save_figure
from headlab.result import Result
from headlab.retrieval.khop import PUBLISHED
from headlab.retrieval.record import RunSummary, finished_runs

SOLVED = 0.95


def d_max(accuracy: dict[str, float], solved: float = SOLVED) -> int:
    """The largest D with every hop count 1..D at ``solved`` accuracy or more (0: not even one hop)."""
    d = 0
    while accuracy.get(str(d + 1), 0.0) >= solved:
        d += 1
    return d


def _khop_accuracy(summary: dict[str, Any]) -> dict[str, float]:
    return {k: 1.0 - e for k, e in summary["final_errors"].items()}


def _retrieval_accuracy(summary: dict[str, Any]) -> dict[str, float]:
    return summary.get("final_hops") or summary["final_accuracy"]


@dataclass(frozen=True)
class TaskReading:
    """How a task's run summary gives its per-hop accuracy, its trained depth and its curriculum label."""

    accuracy: Callable[[dict[str, Any]], dict[str, float]]
    depth: Callable[[dict[str, Any]], int]
    curriculum: Callable[[dict[str, Any]], str]


# keyed by the summary's task["task"]; a retrieval summary names no task
READINGS: dict[str, TaskReading] = {
    "retrieval": TaskReading(_retrieval_accuracy, lambda s: s["task"]["depth"], lambda s: s["task"]["curriculum"]),
    "khop": TaskReading(_khop_accuracy, lambda s: s["task"]["max_hops"], lambda s: "khop"),
}


def reading(summary: dict[str, Any]) -> TaskReading:
    return READINGS[summary["task"].get("task", "retrieval")]


def run_d_max(summary: dict[str, Any], solved: float = SOLVED) -> int:
    return d_max(reading(summary).accuracy(summary), solved)


@dataclass
class DepthLawResult(Result):
    """``depth_law.json``: per (layers, curriculum) the D_max of every seed, their median, and the bounds. Read from
    several sweeps, every cell also names its ``sweep``, ``trained_depth`` and ``steps``; the top-level
    ``trained_depth`` and ``steps`` are then the largest of them."""

    KIND = "depth_law.json"
    COMPANIONS = ("depth_law.md", "depth_law.png")
    sweep: str
    solved: float
    trained_depth: int
    steps: int
    cells: list[dict[str, Any]]

    @property
    def settings(self) -> list[tuple[int, int]]:
        """(trained depth, steps) of every sweep read, in order."""
        seen = [(c.get("trained_depth", self.trained_depth), c.get("steps", self.steps)) for c in self.cells]
        return list(dict.fromkeys(seen))

    @property
    def several(self) -> bool:
        """Read from more than one sweep: rows and series then name their setting."""
        return len({c.get("sweep", self.sweep) for c in self.cells}) > 1

    def markdown(self) -> str:
        several = self.several
        trained = ("trained depth and steps per row" if several
                   else f"trained on depth {self.trained_depth}, {self.steps} steps")
        lines = [f"D_max: the largest hop count with every hop 1..D solved at accuracy >= {self.solved} "
                 f"({trained}; `{self.sweep}`).", "",
                 "| layers | curriculum | " + ("trained depth | steps | " if several else "")
                 + "seeds | D_max per seed | median | 3^L/2 (log3 bound) | 2^L | Sanford et al.'s curves, our 5% cut |",
                 "|---" * (10 if several else 8) + "|"]
        for c in self.cells:
            published = "—" if c.get("published") is None else c["published"]
            setting = f"{c['trained_depth']} | {c['steps']:,} | " if several else ""
            lines.append(f"| {c['layers']} | {c['curriculum']} | {setting}{len(c['d_max'])} | "
                         f"{', '.join(map(str, c['d_max']))} | {c['median']:g} | {c['log3_bound']:g} | "
                         f"{c['doubling']} | {published} |")
        return "\n".join(lines) + "\n"

    def figure(self) -> Any:
        several = self.several
        fig = new_figure(figsize=(7.4 if several else 5.2, 3.6))
        ax = fig.add_subplot()
        layers = sorted({c["layers"] for c in self.cells})
        ax.plot(layers, [3 ** l / 2 for l in layers], "k--", lw=1, label="3^L/2 (log3(2D) bound)")
        ax.plot(layers, [2 ** l for l in layers], "k:", lw=1, label="2^L")
        series: dict[tuple[str, int, int, str], list[dict[str, Any]]] = {}
        for c in self.cells:
            key = (c["curriculum"], c.get("trained_depth", self.trained_depth), c.get("steps", self.steps),
                   c.get("sweep", self.sweep))
            series.setdefault(key, []).append(c)
        for (cur, depth, steps, _), cells in sorted(series.items()):
            name = f"{cur}, depth {depth}, {steps:,} steps" if several else cur
            line, = ax.plot([c["layers"] for c in cells], [c["median"] for c in cells], "o-", label=f"{name} (median)")
            for c in cells:
                ax.scatter([c["layers"]] * len(c["d_max"]), c["d_max"], s=14, alpha=0.5, color=line.get_color())
            published = [(c["layers"], c["published"]) for c in cells if c.get("published") is not None]
            if published:
                ax.plot(*zip(*published), "s", mfc="none", color="grey",
                        label=f"{cur}: Sanford et al.'s curves read with our 5% cut")
        depths = sorted({d for d, _ in self.settings})
        for depth in depths:
            ax.axhline(depth, color="grey", lw=0.8, alpha=0.6)
            ax.text(layers[0], depth, f" trained depth {depth}" if several else " trained depth", fontsize=7,
                    va="bottom", color="grey")
        top = max(max(depths), 3 ** max(layers) / 2) * 1.2
        ax.set(xlabel="layers L", ylabel="largest hop count solved", yscale="symlog", xticks=layers, ylim=(0, top),
               yticks=[0] + [2 ** i for i in range(int(top).bit_length()) if 2 ** i <= top])
        ax.set_yticklabels([str(int(t)) for t in ax.get_yticks()])
        if several:  # one series per setting: the legend beside the axes, not over the points
            ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
        else:
            ax.legend(fontsize=7)
        fig.tight_layout()
        return fig

    def write_companions(self, folder: Path) -> None:
        write_text_atomic(folder / "depth_law.md", self.markdown())
        save_figure(self.figure(), folder / "depth_law.png")


def _sweep_cells(folder: Path, solved: float) -> list[dict[str, Any]]:
    """The cells of one sweep folder (one depth and budget), each naming its folder, trained depth and steps."""

    # one run's folder is read as a sweep of that run
    summaries = [s.to_json() for s in ([RunSummary.read(folder)] if (folder / RunSummary.KIND).is_file()
                                       else finished_runs(folder))]
    if not summaries:
        raise HeadlabError(f"{folder} holds no finished run (no summary.json in it or in */); give a run or a sweep's "
                           "folder (headlab retrieval train or sweep writes them)")
    budget = ("steps", "batch_size", "d_model", "n_heads", "lr")
    kinds = {(reading(s).depth(s), *(s.get(k) for k in budget)) for s in summaries}
    if len(kinds) > 1:
        raise HeadlabError(f"{folder} mixes runs of other depths or budgets (depth, {', '.join(budget)}: "
                           f"{sorted(kinds, key=str)}): a depth law compares seeds of one setting; give one sweep's "
                           "folder per setting")
    depth, steps = next(iter(kinds))[:2]
    groups: dict[tuple[int, str], list[int]] = {}
    for s in summaries:
        groups.setdefault((s["n_layers"], reading(s).curriculum(s)), []).append(run_d_max(s, solved))
    return [{"layers": l, "curriculum": c, "d_max": v, "median": statistics.median(v), "log3_bound": 3 ** l / 2,
             "doubling": 2 ** l, "published": PUBLISHED.get(l) if c == "khop" else None, "sweep": str(folder),
             "trained_depth": depth, "steps": steps}
            for (l, c), v in sorted(groups.items())]


def depth_law(sweep_dirs: str | Path | Sequence[str | Path], solved: float = SOLVED) -> DepthLawResult:
    """Read every finished run of one sweep folder, or of several (one setting each, read side by side), and
    tabulate D_max per (layers, curriculum) of each."""
    folders = [Path(sweep_dirs)] if isinstance(sweep_dirs, (str, Path)) else [Path(f) for f in sweep_dirs]
    if not folders:
        raise HeadlabError("depth-law: no sweep folder given")
    cells = [c for f in folders for c in _sweep_cells(f, solved)]
    return DepthLawResult(sweep=", ".join(map(str, folders)), solved=solved,
                          trained_depth=max(c["trained_depth"] for c in cells), steps=max(c["steps"] for c in cells),
                          cells=cells)
