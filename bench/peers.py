"""headlab against its peers on the same job: score every head of a model (smollm2-135m; ``--model minilm-l6``: the
encoder, windows up to its 512 positions) for previous-token, duplicate-token
and induction over the same token windows, with headlab's census (default route), transformers'
``output_attentions=True`` scored in numpy, TransformerLens 4.3 (``TransformerBridge`` + its ``head_detector``
patterns) and nnsight 0.8 (the eager attention probabilities saved in a trace, scored in numpy). Each peer runs in
its own virtual environment under ``.peers/`` (``make bench-peers`` builds them from the package registry; none is
a dependency of headlab), each cell in a fresh process, the repeats interleaved across tools.

Per cell (tool, window T, batch B): wall time of the scoring (median of the repeats, the model's load excluded),
peak resident memory above the loaded model, and per detector the scores' largest difference from headlab's and
their Spearman correlation; where a tool cannot run a cell, the reason instead (its attention maps would not fit
in ``--memory-gb``, or it ran past ``--timeout``). Writes ``OUT/peers.json`` and ``OUT/peers.md``.

    .venv/bin/python bench/peers.py [--windows 128 512 2048 8192] [--repeats 3] [--out results/peers]
    .venv/bin/python bench/peers.py --model minilm-l6 --windows 128 512 --out results/peers/minilm-l6
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "runs" / "peers"
TOOLS = {"headlab": ROOT / ".venv", "transformers": ROOT / ".venv", "transformerlens": ROOT / ".peers" / "tl",
         "nnsight": ROOT / ".peers" / "nnsight"}
#: peak bytes above the model per attention probability (layers x batch x heads x T x T), measured here at T = 512,
#: batch 8: transformers 6.9, nnsight 7.7, TransformerLens 22.7 (its cache holds scores and patterns, its detection
#: patterns are (T, T) int64 arrays); headlab keeps no (T, T) map
KEPT = {"headlab": 0, "transformers": 8, "transformerlens": 24, "nnsight": 8}
DETECTORS = ("previous-token", "duplicate-token", "induction")


def prepare(model: str, windows: list[int], n: int, n_long: int) -> tuple[Path, dict[int, Path], int, int]:
    """The model as a Hugging Face folder and, per window length, ``n`` windows of token ids (``n_long`` at 8192
    and beyond) cut from the default corpus's texts joined, each starting with the BOS token (an encoder's
    [CLS])."""
    from transformers import AutoTokenizer  # deferred: transformers takes ~0.9 s to import

    from headlab.corpus import documents
    from headlab.models import load

    model_dir = WORK / model
    if not (model_dir / "config.json").exists():
        lm = load(model, lm_head=True)
        lm.model.save_pretrained(model_dir)
        lm.tokenizer.save_pretrained(model_dir)
    tok = AutoTokenizer.from_pretrained(model_dir)
    texts: list[str] = []
    for d in documents(None):
        texts += d.load()
        if sum(map(len, texts)) > 8 * max(windows) * 6:
            break
    ids = tok("\n\n".join(texts), add_special_tokens=False)["input_ids"]
    files = {}
    for T in windows:
        body, count = T - 1, n if T < 8192 else n_long
        if len(ids) < count * body:
            raise SystemExit(f"the corpus gives {len(ids)} tokens, fewer than {count} windows of {T}")
        files[T] = WORK / f"ids-{model}-{T}.json"
        first = tok.bos_token_id if tok.bos_token_id is not None else tok.cls_token_id
        files[T].write_text(json.dumps([[first] + ids[i * body:(i + 1) * body] for i in range(count)]))
    cfg = json.loads((model_dir / "config.json").read_text())
    return model_dir, files, cfg["num_hidden_layers"], cfg["num_attention_heads"]


def run_cell(tool: str, model_dir: Path, ids: Path, batch: int, timeout: float) -> dict:
    python = TOOLS[tool] / "bin" / "python"
    if not python.exists():
        return {"skipped": f"no {TOOLS[tool].relative_to(ROOT)} (make bench-peers builds it)"}
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT / "src")}
    try:
        done = subprocess.run([str(python), str(ROOT / "bench" / "peers_worker.py"), tool, str(model_dir), str(ids),
                               str(batch)], capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"skipped": f"time limit ({timeout:.0f} s)"}
    if done.returncode != 0:
        return {"skipped": "failed: " + (done.stderr.strip().splitlines() or ["?"])[-1][:200]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def compare(cell: dict, ref: dict) -> dict:
    out = {}
    for d in DETECTORS:
        a, b = np.asarray(cell["scores"][d]).ravel(), np.asarray(ref["scores"][d]).ravel()
        out[d] = {"max_abs_diff": float(np.abs(a - b).max()), "spearman": float(spearmanr(a, b).statistic)}
    return out


def table(cells: list[dict]) -> str:
    lines = ["| window | batch | tool | wall, s (median) | × headlab | peak memory above the model, MB | "
             "largest |Δ| from headlab (prev / dup / ind) | Spearman with headlab (prev / dup / ind) |",
             "|---|---|---|---|---|---|---|---|"]
    for c in cells:
        head = f"| {c['T']} | {c['B']} | {c['tool']} |"
        if "skipped" in c:
            lines.append(f"{head} {c['skipped']} | | | | |")
            continue
        ratio = f"{c['ratio']:.2f}" if c.get("ratio") else "-"
        diff = " / ".join(f"{c['agreement'][d]['max_abs_diff']:.1e}" for d in DETECTORS) if "agreement" in c else "-"
        rho = " / ".join(f"{c['agreement'][d]['spearman']:.4f}" for d in DETECTORS) if "agreement" in c else "-"
        lines.append(f"{head} {c['wall_median']:.2f} | {ratio} | {c['peak_rss_mb']:.0f} | {diff} | {rho} |")
    return "\n".join(lines) + "\n"


def summary(cells: list[dict], model: str, at: int = 2048) -> str:
    """One sentence: the ratios at ``at`` tokens (the longest window run, if shorter), batch 1."""
    at = min(at, max(c["T"] for c in cells))
    row = {c["tool"]: c for c in cells if c["T"] == at and c["B"] == 1}
    said = [f"{tool} {row[tool]['ratio']:.1f}x headlab's time" if "ratio" in row.get(tool, {}) else
            f"{tool}: {row.get(tool, {}).get('skipped', 'not run')}" for tool in TOOLS if tool != "headlab"]
    return (f"At {at} tokens ({model}, batch 1, every head, three detectors), the same scores take "
            f"{'; '.join(said)}.")


def write(record: dict, out: Path, L: int, H: int) -> str:
    """``OUT/peers.json`` and its table ``OUT/peers.md``; returns the table's text."""
    cells = record["cells"]
    md = (f"# headlab and its peers on the same job\n\nCommand: `{record['command']}` ({record['date']}, "
          f"{record['wall_s']:.0f} s in all; {record['threads']} threads each; the scores' columns are per head, "
          f"every head of {L} layers × {H}).\n\n{table(cells)}\n{summary(cells, record['model'].split()[0])}\n")
    out.mkdir(parents=True, exist_ok=True)
    (out / "peers.json").write_text(json.dumps(record, indent=1) + "\n")
    (out / "peers.md").write_text(md)
    return md


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2-135m", help="a named model (its Hugging Face folder is written once)")
    ap.add_argument("--windows", type=int, nargs="+", default=[128, 512, 2048, 8192])
    ap.add_argument("--batches", type=int, nargs="+", default=[1, 8])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--n", type=int, default=8, help="windows per cell (below 8192 tokens)")
    ap.add_argument("--n-long", type=int, default=2, help="windows per cell at 8192 tokens and beyond (batch 1)")
    ap.add_argument("--memory-gb", type=float, default=10.0, help="refuse a cell whose kept attention maps exceed it")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds a cell may run (load included)")
    ap.add_argument("--tools", nargs="+", default=list(TOOLS), choices=list(TOOLS))
    ap.add_argument("--out", default=str(ROOT / "results" / "peers"))
    ap.add_argument("--overwrite", action="store_true")
    ap.add_argument("--render", action="store_true", help="only write OUT/peers.md again from OUT/peers.json")
    a = ap.parse_args(argv)
    out = Path(a.out)
    if a.render:
        record = json.loads((out / "peers.json").read_text())
        shape = np.asarray(next(c for c in record["cells"] if "scores" in c)["scores"]["induction"]).shape
        print(write(record, out, *shape))
        return 0
    if (out / "peers.json").exists() and not a.overwrite:
        print(f"{out}/peers.json exists; pass --overwrite to replace it", file=sys.stderr)
        return 2
    WORK.mkdir(parents=True, exist_ok=True)
    t_start = time.perf_counter()
    model_dir, files, L, H = prepare(a.model, a.windows, a.n, a.n_long)
    shapes = [(T, B) for T in a.windows for B in a.batches if T < 8192 or B == 1]
    runs: dict[tuple[int, int, str], list[dict]] = {}
    for r in range(a.repeats):
        for T, B in shapes:
            for tool in a.tools:
                key = (T, B, tool)
                if runs.get(key) and "skipped" in runs[key][0]:
                    continue  # a cell that could not run once is not tried again
                n = len(json.loads(files[T].read_text()))
                need = KEPT[tool] * L * H * B * T * T / 2**30
                got = ({"skipped": f"out of memory: its attention maps need ~{need:.0f} GB (limit {a.memory_gb:g})"}
                       if need > a.memory_gb else run_cell(tool, model_dir, files[T], min(B, n), a.timeout))
                runs.setdefault(key, []).append(got)
                said = got.get("skipped") or f"{got['wall_s']:.2f} s"
                print(f"repeat {r + 1}/{a.repeats} T={T} B={B} {tool}: {said}", file=sys.stderr, flush=True)
    cells = []
    for (T, B, tool), got in runs.items():
        if "skipped" in got[0]:
            cells.append({"tool": tool, "T": T, "B": B, "skipped": got[0]["skipped"]})
            continue
        done = [g for g in got if "skipped" not in g]
        cells.append({"tool": tool, "T": T, "B": B, "n": done[0]["n"], "wall_s": [g["wall_s"] for g in done],
                      "wall_median": statistics.median(g["wall_s"] for g in done),
                      "peak_rss_mb": statistics.median(g["peak_rss_mb"] for g in done), "scores": done[0]["scores"]})
    for c in cells:
        ref = next((x for x in cells if x["tool"] == "headlab" and (x["T"], x["B"]) == (c["T"], c["B"])), None)
        if ref is not None and "skipped" not in c and "skipped" not in ref:
            c["ratio"] = c["wall_median"] / ref["wall_median"]
            if c["tool"] != "headlab":
                c["agreement"] = compare(c, ref)
    wall = time.perf_counter() - t_start
    command = "python bench/peers.py " + " ".join(argv)
    record = {"command": command.strip(), "date": datetime.date.today().isoformat(), "wall_s": round(wall),
              "model": f"{a.model} (runs/peers/{a.model}, written from the packaged weights, fp32)",
              "threads": int(os.environ.get("PEERS_THREADS", "2")), "cells": cells}
    print(write(record, out, L, H))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
