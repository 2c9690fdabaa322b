"""The retrieval document's three claims judged from the committed retrieval results, one row each.

    .venv/bin/python results/retrieval/verdicts.py > results/retrieval/verdicts.md

Rules (ours; the document states the claims, not how to test them):

* "the minimum number of layers grows logarithmically with depth" (t >= log3(2D), so a depth-L model resolves at
  most 3^L/2 hops): not supported when a run solves more hops than 3^L/2 allows; supported when the largest hop
  count solved (D_max, every hop 1..D at 0.95) rises with the layers over at least three layer counts, stays
  within 3^L/2, and is below the trained depth (not capped by the data; a layer count trained at several depths
  is read where its median D_max is largest, the deeper on a tie: a deeper chain that stays on the lookup
  plateau measures the optimization, not the layers); else inconclusive. Judged on the
  document's own task (the dense runs) and, as an outside check of the same kind of law, on Sanford et al.'s
  k-hop task (their theory: depth log2 k).
* "learning succeeds only under an implicit curriculum": not supported when an answer-only run (none, mixed)
  learns a depth D >= 2; supported when an implicit-curriculum run (chain, dense) learns a depth D >= 2 and no
  answer-only run at the same budget does; inconclusive when neither learns. D = 1 is one lookup, with nothing
  for a curriculum to order, and is reported beside the verdict; runs of the default init and of the fan-in init
  with an untied head (`results/retrieval/init`) are counted apart.
* "heads emerge in a fixed order": over the cells with two or more successful runs, supported when every such
  cell's runs share one emergence order of head roles, not supported when some cell's runs share none (no
  order common to two runs), else inconclusive. Judged on the depth map's runs (head roles from
  `headlab retrieval analyze`) and, apart, on the dense runs that solve a lookup (D_max >= 2): their roles are
  the hop labels per layer ("layer 1 ref→def-ref@2"), ordered by the first checkpoint at which a head of that
  role holds its lift; beside it, whether every such run solves its hops in order (hop k no later than k+1).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

HERE = Path(__file__).parent


def _summaries(folder: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(folder.glob("*/summary.json"))]


def depth_law_row(law_files: list[Path], task: str) -> tuple[str, str]:
    """One row from the depth laws of ``law_files``; a layer count measured at several trained depths is read
    where its median D_max is largest (the deeper on a tie: a shallower one may cap it)."""
    laws = [json.loads(f.read_text()) for f in law_files if f.exists()]
    by_layers: dict[int, dict] = {}
    for law in sorted(laws, key=lambda w: w["trained_depth"]):
        for c in law["cells"]:
            if c.get("curriculum") in ("none", "mixed", "chain"):  # answer-only cells beside: the curriculum row's
                continue
            if c["median"] >= by_layers.get(c["layers"], {"median": -1})["median"]:
                by_layers[c["layers"]] = {**c, "trained_depth": law["trained_depth"], "steps": law["steps"]}
    cells = [by_layers[k] for k in sorted(by_layers)]
    over = [c for c in cells if max(c["d_max"]) > c["log3_bound"]]
    medians = [c["median"] for c in cells]
    rising = len(cells) >= 3 and all(a < b for a, b in zip(medians, medians[1:]))
    capped = [c["layers"] for c in cells if c["median"] >= c["trained_depth"]]
    if over:
        verdict = "not supported"
    elif rising and not capped:
        verdict = "supported"
    else:
        verdict = "inconclusive"
    per = ", ".join(f"L{c['layers']}: {c['median']:g} of {c['trained_depth']} trained (3^L/2 = {c['log3_bound']:g}"
                    + (f", published {c['published']}" if c.get("published") is not None else "") + ")"
                    for c in cells)
    steps = sorted({c["steps"] for c in cells})
    why = [f"{task}, {' / '.join(f'{s:,}' for s in steps)} steps: D_max {per}"]
    if len(cells) < 3:
        why.append(f"only {len(cells)} layer count(s) measured")
    if capped:
        why.append(f"capped by the trained depth at L = {', '.join(map(str, capped))}")
    if not rising and len(cells) >= 3:
        why.append("D_max does not rise with every added layer")
    if rising:
        steps_up = ", ".join(f"+{b - a:g}" for a, b in zip(medians, medians[1:]))
        why.append(f"D_max rises {steps_up} per added layer, well within the bound (the rule tests the bound, "
                   "not the rate)")
    where = ", ".join(f"`{f.relative_to(HERE.parent.parent)}`" for f in law_files if f.exists())
    return verdict, "; ".join(why) + f" ({where})"


def curriculum_row() -> tuple[str, str]:
    default = _summaries(HERE / "map") + _summaries(HERE / "d1") + _summaries(HERE / "dense_pilot")
    fan_in = [s for d in ("d1", "dense", "dense-d3", "min-depth") for s in _summaries(HERE / "init" / d)]
    fan_in += [s for d in ("depth_law", "depth_law_long", "depth_law_d8") for s in _summaries(HERE / d)]
    learned: Counter = Counter()
    total: Counter = Counter()
    for init, runs in (("default", default), ("fan-in", fan_in)):
        for s in runs:
            kind = "implicit" if s["task"]["curriculum"] in ("chain", "dense") else "answer-only"
            deep = s["task"]["depth"] >= 2
            total[kind, deep, init] += 1
            learned[kind, deep, init] += bool(s["success"])
    if any(learned["answer-only", True, i] for i in ("default", "fan-in")):
        verdict = "not supported"
    elif any(learned["implicit", True, i] for i in ("default", "fan-in")):
        verdict = "supported (at this budget)"
    else:
        verdict = "inconclusive"

    def counts(deep: bool, init: str) -> str:
        return (f"implicit curriculum {learned['implicit', deep, init]} of {total['implicit', deep, init]}, "
                f"answer-only {learned['answer-only', deep, init]} of {total['answer-only', deep, init]}")

    return verdict, (f"runs learned, default init: D >= 2: {counts(True, 'default')}; D = 1: "
                     f"{counts(False, 'default')} (answer-only only at the larger batches); with --init fan-in "
                     f"--untied: D >= 2: {counts(True, 'fan-in')}; D = 1: {counts(False, 'fan-in')} "
                     "(`results/retrieval/map`, `d1`, `dense_pilot`, `init`, `depth_law*`)")


def order_row() -> tuple[str, str]:
    cells = []
    for f in sorted((HERE / "map" / "emergence").glob("*.json")):
        runs = json.loads(f.read_text())["runs"]
        if len(runs) >= 2:
            top = Counter(tuple(r["types"]) for r in runs).most_common(1)[0][1]
            cells.append((f.stem, top, len(runs)))
    if not cells:
        return "inconclusive", "no cell has two successful runs"
    if any(top < 2 for _, top, _ in cells):
        verdict = "not supported"
    elif all(top == n for _, top, n in cells):
        verdict = "supported"
    else:
        verdict = "inconclusive"
    per = ", ".join(f"{name}: {top} of {n} runs share the most common order" for name, top, n in cells)
    return verdict, per + " (`results/retrieval/map/emergence`, `results/retrieval/circuits.md`)"


def _hop_roles(hops: dict) -> tuple[str, ...]:
    """A dense run's hop-label roles (layer and label) in the order their first head emerges."""
    first: dict[str, int] = {}
    for head, step in hops["emergence"]["emerged_at"].items():
        if step is not None:
            layer, h = map(int, head.split("."))
            role = f"layer {layer} {hops['labels'][layer][h]}"
            first[role] = min(step, first.get(role, step))
    return tuple(role for _, role in sorted((s, r) for r, s in first.items()))


def hop_order_row() -> tuple[str, str]:
    cells: dict[str, list[tuple[str, ...]]] = {}
    in_order = learned = 0
    for f in [f for pattern in ("init/dense-d3", "depth_law", "depth_law_long", "depth_law_d8")
              for f in sorted(HERE.glob(f"{pattern}/*/analyze/analyze.json"))]:
        run = f.parent.parent
        summary = json.loads((run / "summary.json").read_text())
        hops = json.loads(f.read_text()).get("hops")
        if not hops or summary["final_hops"].get("2", 0) < 0.95:
            continue
        learned += 1
        cells.setdefault(f"{run.parent.name}/{run.name.rsplit('-s', 1)[0]}", []).append(_hop_roles(hops))
        at = [hops["emergence"]["hop_solved_at"].get(str(k)) for k in range(1, summary["task"]["depth"] + 1)]
        solved = [s for s in at if s is not None]
        in_order += at[: len(solved)] == solved and solved == sorted(solved)
    multi = {name: orders for name, orders in cells.items() if len(orders) >= 2}
    if not multi:
        return "inconclusive", f"no dense cell has two runs that solve a lookup ({learned} run(s) do)"
    tops = {name: Counter(orders).most_common(1)[0][1] for name, orders in multi.items()}
    if any(top < 2 for top in tops.values()):
        verdict = "not supported"
    elif all(top == len(multi[name]) for name, top in tops.items()):
        verdict = "supported"
    else:
        verdict = "inconclusive"
    per = ", ".join(f"{name}: {tops[name]} of {len(multi[name])} runs share the most common order"
                    for name in sorted(multi))
    firsts = Counter(o[0] for orders in cells.values() for o in orders if o)
    if firsts:
        role, n = firsts.most_common(1)[0]
        per += f"; the first role to emerge is {role} in {n} of {learned} runs"
    return verdict, (f"{per}; hops solved in order (hop k no later than k + 1) in {in_order} of {learned} dense "
                     "runs that solve a lookup (`*/analyze` of `results/retrieval/depth_law`, `depth_law_long`, "
                     "`depth_law_d8`, `init/dense-d3`)")


def main() -> None:
    rows = [("the minimum number of layers grows logarithmically with depth (the document's task, dense)",
             *depth_law_row([HERE / "dense_pilot" / "depth_law.json"], "dense retrieval")),
            ("the same claim, dense task with --init fan-in --untied",
             *depth_law_row([HERE / "init" / "dense-d3" / "depth_law.json", HERE / "init" / "dense" / "depth_law.json",
                             HERE / "depth_law" / "depth_law.json", HERE / "depth_law_long" / "depth_law.json",
                             HERE / "depth_law_d8" / "depth_law.json"], "dense retrieval, fan-in init")),
            ("the same law on Sanford et al.'s k-hop task (outside check)",
             *depth_law_row([HERE / "khop" / "depth_law.json", HERE / "khop" / "k8" / "depth_law.json"], "k-hop")),
            ("learning succeeds only under an implicit curriculum", *curriculum_row()),
            ("heads emerge in a fixed order", *order_row()),
            ("the same claim on the dense runs' hop labels", *hop_order_row())]
    print("| claim | verdict | measured |")
    print("|---|---|---|")
    for claim, verdict, why in rows:
        print(f"| {claim} | **{verdict}** | {why} |")
    print("\nRules: the docstring of `results/retrieval/verdicts.py`.")


if __name__ == "__main__":
    main()
