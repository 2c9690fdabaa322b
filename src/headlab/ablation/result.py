"""The record of ``headlab ablate`` (``ablate.json``): the target set's effect on the scored tokens and on the
rest, against its matched random controls, and how the command line and a notebook show it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from headlab.display import number
from headlab.head import Head
from headlab.io import write_text_atomic
from headlab.result import Result


@dataclass
class AblateResult(Result):
    """``ablate.json``: the target set's effect and its matched random controls (schema: docs/ablation.md)."""

    KIND = "ablate.json"
    COMPANIONS = ("ablate.md",)
    model: str
    mode: str
    heads: list[Head]
    metric: str
    metrics: list[str]
    scored_definition: str
    #: per metric, the scored tokens' (``positions``) and the rest's base, ablated, change and controls' change
    scored: dict[str, Any]
    rest: dict[str, Any]
    control: dict[str, Any]
    suites: dict[str, Any]
    n_samples: int
    n_tokens: int
    positions: str = "after"
    symbol: str = "/"
    #: the same test on the rest (tokens not scored); None where there is no rest (``positions="all"``)
    rest_control: dict[str, Any] | None = None
    RENAMED = {"slash_definition": "scored_definition", "slash": "scored", "no_slash": "rest"}

    def part_names(self) -> tuple[str, str]:
        """What the ``scored`` and ``rest`` blocks hold, in words."""
        if self.positions == "all":
            return "all", "-"
        if self.positions == "marked":
            return "marked", "unmarked"
        if self.positions == "repeat":
            return "second copy", "first copy"
        if self.symbol == "/":
            return "slash", "no_slash"
        at = "after" if self.scored_definition.startswith("targets") else "at"
        return f"{at} '{self.symbol}'", f"without '{self.symbol}'"

    def write_companions(self, folder: Path) -> None:
        write_text_atomic(folder / "ablate.md", self.markdown())

    def markdown(self) -> str:
        """The effect per text part and metric, then the target against its matched controls with the
        interval and p-value."""
        c = self.control
        lines = [f"**{self.model}**: {self.mode}-ablating {', '.join(map(str, self.heads))}; {self.n_samples} "
                 f"samples, {self.n_tokens} tokens; scored: {self.scored_definition}", "",
                 "| part | metric | base | ablated | Δ | controls' mean Δ |", "|---|---|---|---|---|---|"]
        for r in self.records():
            lines.append(f"| {r['part']} | {r['metric']} | {r['base']:.4f} | {r['ablated']:.4f} | {r['delta']:+.4f} | "
                         f"{r['control_delta_mean']:+.4f} |")
        scored, rest = self.part_names()
        for name, ctl in ((scored, c), (rest, self.rest_control)):
            if ctl is not None:
                lines += ["", f"Target minus {ctl['draws']} matched random sets ({self.metric} on {name} tokens): "
                          f"**{ctl['difference']:+.4f}** [{ctl['interval'][0]:+.4f}, {ctl['interval'][1]:+.4f}] "
                          f"(95%), {p_said(ctl)}."]
        return "\n".join(lines) + "\n"

    def records(self) -> list[dict[str, Any]]:
        """One row per (text part, metric): base, ablated, the change and the controls' mean change."""
        scored, rest = self.part_names()
        parts = [(scored, self.scored), (rest, self.rest)]
        parts += [(f"suite {s}", v["near"]) for s, v in self.suites.items()]
        return [{"part": part, "metric": name, **{k: v for k, v in values.items() if not isinstance(v, list)}}
                for part, block in parts for name, values in block.items()]


def p_said(control: dict[str, Any]) -> str:
    """The permutation p-value as a reader needs it: one-sided, what it asks, its floor at these draws (or the
    sequential rule that stopped them), and the two-sided p where the file holds it."""
    n = control["draws"]
    seq = control.get("sequential") or {}
    if seq.get("stopped"):
        how = (f"sequential p = {control['p_value']:.3f} (Besag-Clifford: the draws stopped once {seq['stop_after']} "
               f"of {n} control sets changed the metric at least as much as the target)")
    else:
        how = (f"one-sided permutation p = {control['p_value']:.3f} (the share of the control sets whose change is "
               f"at least the target's: small when ablating the target raises the metric more than random heads do; "
               f"{n} draws reach p >= {1 / (1 + n):.3f} at best)")
    two = control.get("p_two_sided")
    return how if two is None else f"{how}; two-sided p = {two:.3f}"


def write_report(report: AblateResult, out_dir: str) -> None:

    report.write(Path(out_dir))


def format_report(r: AblateResult) -> str:
    m = r["metric"]
    lines = [f"{r['model']}: {r['mode']}-ablating {len(r['heads'])} heads ({', '.join(r['heads'])}); "
             f"{r['n_samples']} samples, {r['n_tokens']} tokens; scored: {r['scored_definition']}"]

    def cells(block: dict[str, Any]) -> str:
        out = []
        for name, v in block.items():
            extra = (f" ({v['delta_points']:+.2f} points [{v['interval_points'][0]:+.2f}, "
                     f"{v['interval_points'][1]:+.2f}])") if "delta_points" in v else ""
            out.append(f"{name} {number(v['base'])} -> {number(v['ablated'])} (Δ {number(v['delta'], signed=True)}"
                       f"{extra}; controls Δ {number(v['control_delta_mean'], signed=True)})")
        return "; ".join(out)

    for part, name in zip(("scored", "rest"), r.part_names()):
        if r[part]:
            lines.append(f"  {name:<9} " + cells(r[part]))
    for suite, v in r.suites.items():
        lines.append(f"  suite {suite} ({v['n_items']} items), near the symbol: " + cells(v["near"]))
    for name, c in zip(r.part_names(), (r.control, r.rest_control)):
        if c is not None:
            lines.append(f"  control   {c['draws']} matched random sets: Δ{m} on {name} tokens "
                         f"{number(c['delta_mean'], signed=True)}; target minus control "
                         f"{number(c['difference'], signed=True)} [{number(c['interval'][0], signed=True)}, "
                         f"{number(c['interval'][1], signed=True)}], {p_said(c)}")
    return "\n".join(lines)
