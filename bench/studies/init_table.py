"""init.md: the init plateau, from the committed logs and sweeps of this folder (python table.py > init.md)."""

import ast
import json
import statistics
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = ROOT / "results/retrieval/init"
RET = HERE.parent
LOOP = {  # log -> (model, init, output head, seed)
    "torch_layers-D2": ("torch TransformerEncoderLayer", "torch default, embeddings N(0, 1)", "own", 0),
    "headlab_model-tie-default": ("headlab Transformer", "default: N(0, 0.02^2)", "tied", 0),
    "headlab_model-untie-default": ("headlab Transformer", "default: N(0, 0.02^2)", "own", 0),
    "headlab_model-untie-emb": ("headlab Transformer", "default, embeddings N(0, 1)", "own", 0),
    "headlab_model-tie-fanin": ("headlab Transformer", "linears N(0, 1/fan_in)", "tied", 0),
    "headlab_model-tie-fanin-s1": ("headlab Transformer", "linears N(0, 1/fan_in)", "tied", 1),
    "headlab_model-untie-fanin": ("headlab Transformer", "linears N(0, 1/fan_in)", "own", 0),
    "headlab_model-untie-fanin-s1": ("headlab Transformer", "linears N(0, 1/fan_in)", "own", 1),
}
STEPS = (500, 1000, 1500, 2000)


def loop_table() -> list[str]:
    out = ["| model | init | output head | seed | hop-2 accuracy at step " + " / ".join(map(str, STEPS))
           + " | first step >= 0.95 |", "|---|---|---|---|---|---|"]
    for name, (model, init, head, seed) in LOOP.items():
        path = HERE / "loop" / f"{name}.log"
        if not path.exists():
            continue
        rows = [line.split(" ", 2) for line in path.read_text().splitlines()]
        hop2 = {int(r[0]): ast.literal_eval(r[2].rsplit(" ", 1)[0])["2"] for r in rows}
        cells = " / ".join(f"{hop2[s]:.2f}" if s in hop2 else "-" for s in STEPS)
        first = next((s for s in sorted(hop2) if hop2[s] >= 0.95), None)
        out.append(f"| {model} | {init} | {head} | {seed} | {cells} | {first or 'not by ' + str(max(hop2))} |")
    return out


def cells(sweep: Path) -> dict[str, list[dict]]:
    runs = json.loads((sweep / "sweep.json").read_text())["runs"]
    by: dict[str, list[dict]] = {}
    for r in runs:
        by.setdefault(f"L{r['n_layers']}-D{r['task']['depth']}-{r['task']['curriculum']}", []).append(r)
    return by


def d1_table() -> list[str]:
    old, new = cells(RET / "map"), cells(HERE / "d1")
    out = ["| cell | default init, tied head: learned / seeds (`map`) | fan-in, own head: learned / seeds "
           "| median step of success | final accuracy per seed |", "|---|---|---|---|---|"]
    for name in sorted(new):
        o, n = old.get(name, []), new[name]
        steps = [r["success_step"] for r in n if r["success"]]
        acc = ", ".join(f"{r['final_accuracy']['1']:.2f}" for r in sorted(n, key=lambda r: r["seed"]))
        out.append(f"| {name} | {sum(r['success'] for r in o)} / {len(o)} | {sum(r['success'] for r in n)} / "
                   f"{len(n)} | {statistics.median(steps) if steps else '-'} | {acc} |")
    return out


def dense_table() -> list[str]:
    runs = [(HERE / d, p.name) for d in ("dense-d3", "dense", "min-depth") for p in sorted((HERE / d).glob("L*-D*"))
            if (p / "summary.json").exists()]
    runs = [(RET / "dense_pilot", "L2-D8-dense-s0")] + runs
    out = ["| run | init, head | training chains' depth | steps | accuracy by hop 1..D (dense targets) "
           "| answer at full depth |", "|---|---|---|---|---|---|"]
    for folder, name in runs:
        s = json.loads((folder / name / "summary.json").read_text())
        hops = " / ".join(f"{v:.2f}" for _, v in sorted(s.get("final_hops", {}).items(), key=lambda kv: int(kv[0])))
        how = f"{s.get('init', 'default')}, {'own' if s.get('untied') else 'tied'}"
        depth, low = s["task"]["depth"], s["task"].get("min_depth")
        chains = f"{low}..{depth}, one per step" if low else f"{depth}"
        out.append(f"| {folder.name}/{name} | {how} | {chains} | {s['steps']} | {hops or '-'} | "
                   f"{s['final_accuracy'][str(depth)]:.2f} |")
    return out


if __name__ == "__main__":
    print("\n".join(["### One lookup in a plain loop (dense D = 2, `loop/`)", "", *loop_table(), "",
                     "### The depth map's D = 1 cells (`d1/`, 1000 steps of 64, d = 64)", "", *d1_table()]))
    if (HERE / "dense").exists():
        title = "### Dense targets at depth 3 (`dense-d3/`) and 8 (`dense/`, `min-depth/`), steps of 64, d = 128"
        print("\n".join(["", title, "", *dense_table()]))
    wall = HERE / "wall.log"
    walls = wall.read_text().strip().replace("\n", "; ") if wall.exists() else "running"
    print(f"\nCommands: `results/retrieval/init/run.sh` and `min-depth/run.sh` (sweeps; wall: {walls}), "
          "`bench/studies/init_loop_*.py` (the plain loops, one thread, beside other jobs; their logs end in seconds). "
          "Table: `python bench/studies/init_table.py`.")
