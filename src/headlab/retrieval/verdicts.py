"""The retrieval document's claims judged from a folder of committed retrieval results by the rule book's
retrieval rules (``headlab.rulebook.retrieval``): this module gathers each rule's statistics from the files
(depth laws, run summaries, analyses) and renders the table; it decides nothing itself."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from headlab.io import write_text_atomic
from headlab.result import Result, read_json
from headlab.retrieval.edge import FOLDER, edge_stats
from headlab.retrieval.order import order_cells
from headlab.retrieval.record import RunSummary, finished_runs
from headlab.rulebook import BOOK, VERSION, label, registration
from headlab.rulebook.multiplicity import holm, stated
from headlab.rulebook.registration import file_digest

#: (row, rule, sweeps whose depth laws it reads) for the depth law, on the document's task and on k-hop
LAWS = (
    ("the document's task, dense, default init", ("dense_pilot",)),
    ("the document's task, dense, --init fan-in --untied",
     ("init/dense-d3", "init/dense", "depth_law", "depth_law_long", "depth_law_d8")),
    ("Sanford et al.'s k-hop task (outside check; ours: d = 128, 4 heads, hop counts 0..4 or 0..8, lr 1e-3, "
     "12k steps; theirs: hop counts 0..16, lr 1e-4, 100k steps; their d = 128, 4-head curves read with our 5% "
     "error cut)", ("khop", "khop/k8")),
)
FAN_IN = ("init/d1", "init/dense", "init/dense-d3", "init/min-depth", "depth_law", "depth_law_long", "depth_law_d8")
DENSE_ANALYZED = ("init/dense-d3", "depth_law", "depth_law_long", "depth_law_d8")


def _summaries(folder: Path) -> list[dict[str, Any]]:
    return [s.to_json() for s in finished_runs(folder)]


def law_cells(root: Path, sweeps: tuple[str, ...]) -> tuple[list[dict[str, Any]], list[str]]:
    """Per layer count, the cell of the sweep where its median D_max is largest (the deeper trained depth on a
    tie: a shallower one may cap it); answer-only cells are the curriculum row's. Returns the cells and the
    files read."""
    files = [root / s / "depth_law.json" for s in sweeps if (root / s / "depth_law.json").exists()]
    by_layers: dict[int, dict[str, Any]] = {}
    for law in sorted((read_json(f) for f in files), key=lambda w: w["trained_depth"]):
        for c in law["cells"]:
            if c.get("curriculum") in ("none", "mixed", "chain"):
                continue
            if c["median"] >= by_layers.get(c["layers"], {"median": -1})["median"]:
                by_layers[c["layers"]] = {"layers": c["layers"], "d_max": list(c["d_max"]), "median": c["median"],
                                          "bound": c["log3_bound"], "trained_depth": law["trained_depth"],
                                          "steps": law["steps"], "published": c.get("published")}
    return [by_layers[k] for k in sorted(by_layers)], [str(f.relative_to(root.parent.parent)) for f in files]


def _law_text(task: str, cells: list[dict[str, Any]], files: list[str]) -> str:
    per = "; ".join(f"L{c['layers']}: D_max {', '.join(map(str, c['d_max']))} of {c['trained_depth']} trained "
                    f"({len(c['d_max'])} seed{'s' if len(c['d_max']) != 1 else ''}, 3^L/2 = {c['bound']:g}"
                    + (f", theirs under our cut: {c['published']}"
                       if c.get("published") is not None else "") + ")" for c in cells)
    steps = " / ".join(f"{s:,}" for s in sorted({c["steps"] for c in cells}))
    return f"{task}, {steps} steps: {per} ({', '.join(f'`{f}`' for f in files)})"


def solves_hop_2(s: dict[str, Any]) -> bool | None:
    """The hop-wise criterion: hop 2 at accuracy 0.95 (the lookups' own cut), whatever the final answer's; None
    for a run whose summary predates per-hop accuracies (left out, not counted as a failure)."""
    hops = s.get("final_hops")
    return None if not hops else hops.get("2", 0) >= 0.95


def curriculum_stats(root: Path, learned: Callable[[dict[str, Any]], bool | None] = lambda s: bool(s["success"]),
                     what: str = "D ≥ 2 learned") -> tuple[dict[str, Any], str]:
    """Depth ≥ 2 ``learned`` (by default the run's success: answer accuracy at its cut), implicit curriculum
    against answer-only, in the matched fan-in recipe; the default init's counts beside (not matched: its
    successes are all `chain` runs, which differ in supervision too). A run ``learned`` cannot judge is left
    out."""
    counts: Counter = Counter()
    for init, folders in (("default", ("map", "d1", "dense_pilot")), ("fan-in", FAN_IN)):
        for s in (s for f in folders for s in _summaries(root / f)):
            if s["task"]["depth"] < 2:
                continue
            kind = "implicit" if s["task"]["curriculum"] in ("chain", "dense") else "answer-only"
            got = learned(s)
            if got is None:
                continue
            counts[init, kind, "n"] += 1
            counts[init, kind, "k"] += got
    pair = lambda init, kind: [counts[init, kind, "k"], counts[init, kind, "n"]]  # noqa: E731
    stats = {"implicit": pair("fan-in", "implicit"), "answer_only": pair("fan-in", "answer-only")}
    d = pair("default", "implicit"), pair("default", "answer-only")
    text = (f"{what} with --init fan-in --untied: implicit curriculum {stats['implicit'][0]} of "
            f"{stats['implicit'][1]}, answer-only {stats['answer_only'][0]} of {stats['answer_only'][1]}; beside, not "
            f"matched (default init): {d[0][0]} of {d[0][1]} against {d[1][0]} of "
            f"{d[1][1]} (`results/retrieval/map`, `d1`, `dense_pilot`, `init`, `depth_law*`)")
    return stats, text


def _hop_roles(hops: dict[str, Any]) -> tuple[str, ...]:
    """A dense run's hop-label roles (layer and label) in the order their first head emerges."""
    first: dict[str, int] = {}
    for head, step in hops["emergence"]["emerged_at"].items():
        if step is not None:
            layer, h = map(int, head.split("."))
            role = f"layer {layer} {hops['labels'][layer][h]}"
            first[role] = min(step, first.get(role, step))
    return tuple(role for _, role in sorted((s, r) for r, s in first.items()))


def dense_order_stats(root: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """From the dense runs that solve a lookup (hop 2 at 0.95): whether each solves its hops in order, and per
    cell how many runs share the most common order of hop-label roles. A run that solves two hops or fewer is in
    order trivially (hop 1 is solved at the first evaluation in every run) and a run with two hops solved at the
    same evaluation orders nothing: neither counts, and ``excluded`` says how many were left out and why."""
    cells: dict[str, list[tuple[str, ...]]] = {}
    in_order = runs = 0
    excluded = Counter()
    for f in (f for s in DENSE_ANALYZED for f in sorted((root / s).glob("*/analyze/analyze.json"))):
        run = f.parent.parent
        summary = RunSummary.read(run).to_json()
        hops = read_json(f).get("hops")
        if not hops or summary["final_hops"].get("2", 0) < 0.95:
            continue
        cells.setdefault(f"{run.parent.name}/{run.name.rsplit('-s', 1)[0]}", []).append(_hop_roles(hops))
        at = [hops["emergence"]["hop_solved_at"].get(str(k)) for k in range(1, summary["task"]["depth"] + 1)]
        solved = [s for s in at if s is not None]
        if len(solved) <= 2:
            excluded["two hops or fewer solved"] += 1
            continue
        if len(set(solved)) < len(solved):
            excluded["a tie"] += 1
            continue
        runs += 1
        in_order += at[: len(solved)] == solved and solved == sorted(solved)
    tops = {name: [Counter(o).most_common(1)[0][1], len(o)] for name, o in cells.items()}
    return {"in_order": in_order, "runs": runs, "excluded": dict(sorted(excluded.items()))}, {"cells": tops}


def map_order_stats(root: Path) -> dict[str, Any]:
    cells = {}
    for f in sorted((root / "map" / "emergence").glob("*.json")):
        runs = read_json(f)["runs"]
        if runs:
            cells[f.stem] = [Counter(tuple(r["types"]) for r in runs).most_common(1)[0][1], len(runs)]
    return {"cells": cells}


def rows(root: Path) -> list[dict[str, Any]]:
    """Every retrieval verdict row: the claim, the rule, its statistics and the rule book's judgement."""
    out: list[dict[str, Any]] = []
    for task, sweeps in LAWS:
        cells, files = law_cells(root, sweeps)
        stats = {"cells": cells}
        for rule in ("retrieval.depth-bound", "retrieval.depth-rate"):
            out.append({"row": f"{BOOK[rule].claim}: {task}", "rule": rule, "stats": stats,
                        "measured": _law_text(task, cells, files)})
    stats, text = curriculum_stats(root)
    out.append({"row": BOOK["retrieval.curriculum"].claim, "rule": "retrieval.curriculum", "stats": stats,
                "measured": text})
    stats, text = curriculum_stats(root, solves_hop_2, "hop 2 solved (0.95)")
    out.append({"row": BOOK["retrieval.curriculum-hops"].claim, "rule": "retrieval.curriculum-hops",
                "stats": stats, "measured": text})
    hop, heads = dense_order_stats(root)
    left_out = ", ".join(f"{n} ({why})" for why, n in hop["excluded"].items()) or "none"
    src = "(`*/analyze` of `results/retrieval/depth_law`, `depth_law_long`, `depth_law_d8`, `init/dense-d3`)"
    out.append({"row": BOOK["retrieval.hop-order"].claim + ": dense runs that solve a lookup",
                "rule": "retrieval.hop-order", "stats": hop,
                "measured": f"{hop['in_order']} of {hop['runs']} runs that order three hops or more solve hop k "
                            f"before hop k + 1; left out: {left_out} {src}"})
    out.append({"row": BOOK["retrieval.head-order"].claim + ": dense runs' hop labels", "rule": "retrieval.head-order",
                "stats": heads, "measured": f"hop-label roles by first emergence {src}"})
    out.append({"row": BOOK["retrieval.head-order"].claim + ": the depth map's chain runs",
                "rule": "retrieval.head-order", "stats": map_order_stats(root),
                "measured": "head roles from `headlab retrieval analyze` (`results/retrieval/map/emergence`)"})
    for r in out:
        r.update(BOOK[r["rule"]].judge(r["stats"], _evidence(root, BOOK[r["rule"]].data)).to_json())
    return holm(out)


def edge_rows(root: Path) -> list[dict[str, Any]]:
    """The depth law where it can fail (:mod:`headlab.retrieval.edge`), judged: not measured until the study's runs
    exist. Its own function beside :func:`rows`, whose code the other rules' fingerprints cover."""
    stats, files = edge_stats(root)
    where = f"`{(root / FOLDER).relative_to(root.parent.parent)}`"
    text = (f"{len(files) // 2} dense runs in {len({Path(f).parent.parent for f in files})} cells ({where})" if stats
            else "no finished run yet (the study: `results/retrieval/depth_edge.sh`)")
    rule = BOOK["retrieval.depth-edge"]
    row = {"row": rule.claim + ": the cells the bound decides", "rule": rule.id, "stats": stats, "measured": text,
           **rule.judge(stats, _evidence(root, rule.data)).to_json()}
    return holm([row])


def order_rows(root: Path) -> list[dict[str, Any]]:
    """The order claim pairwise (:mod:`headlab.retrieval.order`) on the order study's new seeds, judged."""
    cells, files = order_cells(root)
    rule = BOOK["retrieval.pair-order"]
    text = (f"{len(files)} analyzed runs in {len(cells)} cells (`results/retrieval/order`)" if files
            else "no analyzed run yet (the study: `results/retrieval/order.sh`)")
    row = {"row": rule.claim + ": new seeds, two recipes", "rule": rule.id, "stats": {"cells": cells},
           "measured": text, **rule.judge({"cells": cells}, _evidence(root, rule.data)).to_json()}
    return holm([row])


def _evidence(root: Path, globs: tuple[str, ...]) -> list[str]:
    """The sha256 of the result files a rule reads (its globs are under results/, ``root``'s parent)."""
    return [file_digest(f) for f in sorted({f for g in globs for f in root.parent.glob(g) if f.is_file()})]


@dataclass
class RetrievalVerdictsResult(Result):
    """``verdicts.json``: the retrieval document's claims judged from the committed retrieval results, one row per
    claim and task (its rule, statistics, what was measured and the verdict), by rule-book version ``rulebook``."""

    KIND = "verdicts.json"
    COMPANIONS = ("verdicts.md",)
    rulebook: int
    rows: list[dict[str, Any]]

    def markdown(self) -> str:
        lines = ["| claim | rule | verdict | measured | power |", "|---|---|---|---|---|"]
        lines += [f"| {r['row']} | `{r['rule']}` | **{label(r)}** | {r['measured']} | {r['power']} |"
                  for r in self.rows]
        lines += ["", f"Rules: the rule book, version {self.rulebook} (`headlab.rulebook.retrieval`, rendered in "
                  "docs/rules.md). Written by `headlab verdicts`.", "", stated(self.rows)]
        return "\n".join(lines) + "\n"

    def write_companions(self, folder: Path) -> None:
        write_text_atomic(folder / "verdicts.md", self.markdown())

    def verdicts(self) -> dict[str, tuple[str, str, str]]:
        """Each row's verdict by its claim: its rule, label and power statement."""
        return {r["row"]: (r["rule"], label(r), r["power"]) for r in self.rows}


def run_identities(root: Path) -> dict[str, frozenset[str]]:
    """Per retrieval rule, the identities (recipe and seed) of the runs whose files its data globs match under
    ``root``: a rerun of a run that existed when the rule was declared is the same data, whatever its bytes."""
    results, memo = root.resolve().parent, {}
    return {rid: registration.identities_of_files(results, (f for g in rule.data for f in results.glob(g)),
                                                  RunSummary.KIND, memo)
            for rid, rule in BOOK.items() if rid.startswith("retrieval.")}


def judge(root: Path) -> RetrievalVerdictsResult:
    """The retrieval verdicts of the results under ``root`` (``results/retrieval``) by the current rule book. The
    files a row names are named from the results root (``results/...``), whatever that folder is called: a copy
    judged elsewhere writes the same text. (Renamed here, after the rows: the functions that compute the rows are
    part of their rules' fingerprints.)"""
    with registration.produced_from(run_identities(root)):
        found = rows(root) + edge_rows(root) + order_rows(root)
    mine = f"`{root.resolve().parent.name}/"
    for r in found:
        r["measured"] = r["measured"].replace(mine, "`results/")
    return RetrievalVerdictsResult(VERSION, found)
