"""Benchmark: retrieval decoders trained one at a time vs stacked in one ensemble (``headlab.training.ensemble``).

Measured in one run, at one shape (default: the sweep's, 2 layers, d = 64, 4 heads, depth 3, chain curriculum,
batch 64), every route trains for ``--steps`` steps with its held-out evaluation off and no checkpoints between
(the route's own step cost: batches, forward, backward, clipping, AdamW):
  solo:        one model by ``Trainer`` (what ``headlab retrieval sweep --jobs 1`` runs per cell);
  ensemble E:  E models of different seeds by ``Ensemble``, for each E of ``--sizes``;
  vmap E:      the same E by ``torch.func.vmap`` over ``functional_call`` (the alternative design), forward and
               backward only, for the first two sizes.
Prints seconds per step, models/hour at ``--budget`` steps, and the ratio to solo. Target: ensemble >= 4x solo.

    .venv/bin/python bench/ensemble.py [--sizes 1 4 16 64] [--steps 20] [--depth 3] [--layers 2] [--threads 1]
"""

from __future__ import annotations

import argparse
import copy
import shutil
import sys
import tempfile
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from headlab.retrieval.training import RetrievalSource, RetrievalTask, retrieval_config
from headlab.training.ensemble import Ensemble, Member
from headlab.training.trainer import Trainer


def solo(task: RetrievalTask, args: argparse.Namespace, folder: Path) -> float:
    cfg = retrieval_config(task, n_layers=args.layers, d_model=args.d_model, steps=args.steps,
                           batch_size=args.batch, checkpoint_every=10**9, threads=args.threads)
    trainer = Trainer(cfg, folder / "solo", progress=False, source=RetrievalSource(task))
    t = time.perf_counter()
    trainer.fit()
    return (time.perf_counter() - t) / args.steps


def ensemble(task: RetrievalTask, args: argparse.Namespace, folder: Path, E: int) -> float:
    members = [Member(retrieval_config(task, n_layers=args.layers, d_model=args.d_model, steps=args.steps,
                                       batch_size=args.batch, seed=s, checkpoint_every=10**9),
                      folder / f"e{E}-{s}", RetrievalSource(task)) for s in range(E)]
    ens = Ensemble(members, progress=False, threads=args.threads)
    t = time.perf_counter()
    ens.fit()
    return (time.perf_counter() - t) / args.steps


def vmapped(task: RetrievalTask, args: argparse.Namespace, E: int) -> float:
    """Forward and backward of E models by vmap(functional_call) on the same batches (no optimizer)."""
    from torch.func import functional_call, stack_module_state, vmap

    from headlab.nn.transformer import Transformer

    cfg = retrieval_config(task, n_layers=args.layers, d_model=args.d_model).model
    src = RetrievalSource(task)
    cfg.vocab_size = src.vocab_size
    models = [Transformer(cfg) for _ in range(E)]
    params, buffers = stack_module_state(models)
    base = copy.deepcopy(models[0])
    ids, _, labels = src.batch(0, args.batch, 0)
    ids, labels = ids.expand(E, -1, -1), labels.expand(E, -1, -1)

    def loss(p, b, x, y):
        logits = functional_call(base, (p, b), (x,)).logits[:, :-1]
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1), reduction="sum")

    n = max(2, args.steps // 4)
    t = time.perf_counter()
    for _ in range(n):
        vmap(loss)(params, buffers, ids, labels).sum().backward()
    return (time.perf_counter() - t) / n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1, 4, 16, 64])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--budget", type=int, default=2500, help="steps per model for models/hour")
    ap.add_argument("--depth", type=int, default=3)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--d-model", type=int, default=64)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    task = RetrievalTask(args.depth, "chain")
    folder = Path(tempfile.mkdtemp(prefix="headlab-bench-ensemble-"))
    print(f"shape: {args.layers} layers, d={args.d_model}, depth {args.depth} (T={task.max_length}), batch "
          f"{args.batch}, {args.threads} thread(s), {args.steps} steps per route; torch {torch.__version__}")
    try:
        base = solo(task, args, folder)
        hour = lambda s, E: 3600 * E / (s * args.budget)  # noqa: E731
        print(f"{'route':<14} {'s/step':>8} {'models/h':>9} {'vs solo':>8}")
        print(f"{'solo':<14} {base:8.4f} {hour(base, 1):9.1f} {1.0:8.2f}")
        for E in args.sizes:
            s = ensemble(task, args, folder, E)
            print(f"{'ensemble ' + str(E):<14} {s:8.4f} {hour(s, E):9.1f} {base * E / s:8.2f}", flush=True)
        for E in args.sizes[:2]:
            s = vmapped(task, args, E)
            print(f"{'vmap ' + str(E) + ' (f+b)':<14} {s:8.4f} {hour(s, E):9.1f} {base * E / s:8.2f}", flush=True)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
