"""The order study's figure: each head role's first emergence step in every analyzed run of each cell
(results/retrieval/order/<cell>/<run>/analyze/analyze.json, read through headlab.retrieval.order.role_steps, the
pair-order rule's own reading), one row per role, one marker per run. Roles every run of the cell has are drawn in
black: they are the only ones the pairwise rule can compare. Written to results/retrieval/order/emergence.png.

    python bench/studies/order_figure.py
"""

from __future__ import annotations

import sys
from pathlib import Path

from headlab.plotting import pyplot, save_figure
from headlab.retrieval.analysis import AnalyzeResult
from headlab.retrieval.order import role_steps, shared_roles

ROOT = Path(__file__).resolve().parents[2]
ORDER = ROOT / "results" / "retrieval" / "order"


def cells() -> dict[str, dict[str, dict[str, int]]]:
    """cell -> run -> role -> first emergence step."""
    out: dict[str, dict[str, dict[str, int]]] = {}
    for f in sorted(ORDER.glob(f"*/*/analyze/{AnalyzeResult.KIND}")):
        run = f.parents[1]
        out.setdefault(run.parent.name, {})[run.name] = role_steps(AnalyzeResult.read(f).to_json())
    return out


def main() -> int:
    found = cells()
    if not found:
        print(f"no analyzed run under {ORDER}", file=sys.stderr)
        return 2
    plt = pyplot()
    fig, axes = plt.subplots(1, len(found), figsize=(6 * len(found), 4.2), squeeze=False)
    for ax, (cell, runs) in zip(axes[0], found.items()):
        roles = sorted({r for steps in runs.values() for r in steps})
        shared = set(shared_roles(list(runs.values())))
        for k, (name, steps) in enumerate(runs.items()):
            ys = [roles.index(r) + (k - len(runs) / 2) * 0.06 for r in steps]
            ax.scatter(list(steps.values()), ys, s=22, label=name.rsplit("-", 1)[-1])
        ax.set_yticks(range(len(roles)), roles, fontsize=7)
        for tick, role in zip(ax.get_yticklabels(), roles):
            tick.set_color("black" if role in shared else "#999999")
        ax.set(title=f"{cell}: {len(runs)} runs, {len(shared)} role(s) in every run (black)",
               xlabel="first emergence step (training step)", ylabel="head role (layer:label)")
        ax.legend(fontsize=7, title="seed", title_fontsize=7)
    fig.suptitle("Head roles' emergence steps per run (the pair-order rule compares only roles every run has)")
    fig.tight_layout()
    save_figure(fig, ORDER / "emergence.png")
    print(f"wrote {ORDER / 'emergence.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
