"""Benchmark: tokens/s of headlab's Trainer against a minimal plain PyTorch loop, and the cost of tracking.

Measured in one run, on the same model config, the same window pool and the same batches:
  plain:     a bare loop — batch, forward, cross-entropy, backward, clip, AdamW step (same schedule);
  headlab:   ``Trainer.fit`` with its checkpoints (config schedule) and metrics, tracking off;
  tracking:  ``headlab.training.train`` with the gradient-signal callback every ``--grad-every`` steps.
The three alternate over ``--repeats`` rounds; the best time of each is compared.
Targets: headlab ≥ 0.95x the plain loop's tokens/s; tracking overhead ≤ 10%.

    .venv/bin/python bench/train_throughput.py [--config configs/study.toml] [--steps 300] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from headlab.formation.training_run import tracked_training as train  # noqa: E402
from headlab.nn import Transformer  # noqa: E402
from headlab.training import load_config, lr_at  # noqa: E402
from headlab.training.data import build_pool, save_pool  # noqa: E402
from headlab.training.trainer import Trainer  # noqa: E402


def plain_loop(cfg, pool) -> tuple[float, int]:
    torch.manual_seed(cfg.optim.seed)
    model = Transformer(cfg.model)
    model.train()
    o = cfg.optim
    decay = [p for p in model.parameters() if p.ndim >= 2]
    rest = [p for p in model.parameters() if p.ndim < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": o.weight_decay}, {"params": rest, "weight_decay": 0.0}],
                            lr=o.lr, betas=(o.beta1, o.beta2))
    tokens = 0
    t0 = time.perf_counter()
    for step in range(o.steps):
        for g in opt.param_groups:
            g["lr"] = lr_at(step, cfg)
        rows = pool.batch_indices(step, o.batch_size, o.seed)
        ids, mask = pool.ids[rows], pool.mask[rows]
        labels = ids[:, 1:].masked_fill(~mask[:, 1:], -100)
        logits = model(ids, mask).logits[:, :-1]
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), labels.reshape(-1), ignore_index=-100)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), o.grad_clip)
        opt.step()
        float(loss.detach())  # the trainer reads the loss every step too
        tokens += int(mask.sum())
    return time.perf_counter() - t0, tokens


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", default="configs/study.toml")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--grad-every", type=int, default=None, help="default: the config's track.grad_every")
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    cfg = load_config(a.config)
    cfg.optim.steps = a.steps
    grad_every = a.grad_every if a.grad_every is not None else cfg.track.grad_every
    work = Path(tempfile.mkdtemp(prefix="headlab-bench-"))
    try:
        pool, tok = build_pool(cfg.data, cfg.optim.seed, progress=False)
        seed_run = work / "data"
        seed_run.mkdir()
        save_pool(pool, tok, seed_run)
        cfg.model.vocab_size = max(cfg.model.vocab_size, len(tok))
        n_ckpt = len([s for s in __import__("headlab.training.checkpoint", fromlist=["schedule"]).schedule(
            a.steps, cfg.checkpoints.early_points, cfg.checkpoints.early_fraction, cfg.checkpoints.every)])
        print(f"config {a.config}: {cfg.model.kind} {cfg.model.n_layers}x{cfg.model.n_heads} d={cfg.model.d_model}, "
              f"{a.steps} steps of {cfg.optim.batch_size}x{cfg.data.window} tokens, {n_ckpt} checkpoints, "
              f"gradient signals every {grad_every} steps; torch threads {torch.get_num_threads()}")

        def fresh(name: str) -> Path:
            run = work / name
            shutil.rmtree(run, ignore_errors=True)
            shutil.copytree(seed_run, run)
            return run

        times: dict[str, list[float]] = {"plain": [], "headlab": [], "tracking": []}
        tokens = 0
        for r in range(a.repeats):
            t, tokens = plain_loop(cfg, pool)
            times["plain"].append(t)
            cfg.track.grad_every = 0
            t0 = time.perf_counter()
            Trainer(cfg, fresh("headlab"), progress=False).fit()
            times["headlab"].append(time.perf_counter() - t0)
            cfg.track.grad_every = grad_every
            t0 = time.perf_counter()
            train(cfg, fresh("tracking"), progress=False)
            times["tracking"].append(time.perf_counter() - t0)
            print(f"  round {r + 1}: " + "  ".join(f"{k} {v[-1]:.2f} s" for k, v in times.items()))
        best = {k: min(v) for k, v in times.items()}
        for k, v in best.items():
            print(f"  {k:<9} {v:7.2f} s  {tokens / v:9.0f} tokens/s (best of {a.repeats})")
        print(f"  ratio headlab/plain tokens/s: {best['plain'] / best['headlab']:.3f}  (target >= 0.95)")
        print(f"  tracking overhead: {100 * (best['tracking'] / best['headlab'] - 1):+.1f}%  (target <= 10%)")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
