"""Retrieval decoders of one shape trained together (:class:`headlab.training.ensemble.Ensemble`).

A group shares layers, width, heads, positions, init, depth and distractors (so the model config is one); its
members differ in curriculum, seed, learning rate and warm-up. Each member's folder is exactly a solo
``headlab retrieval train`` run's (``task.json``, ``eval.jsonl``, ``summary.json``, checkpoints), so
``analyze``, ``emergence`` and the sweep read it unchanged. Held-out accuracy is computed for all members in
one stacked forward per decoding step (the same greedy decoding as :func:`~.training.accuracy`, checked
against it in ``tests/test_ensemble.py``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import torch

from headlab.errors import HeadlabError
from headlab.nn import stacked
from headlab.retrieval.record import RunSummary, RunTask
from headlab.retrieval.settings import SWEEP, TRAIN
from headlab.retrieval.training import (
    RetrievalSource,
    RetrievalTask,
    eval_set,
    retrieval_config,
    score_hops,
    summarize,
)
from headlab.training.ensemble import Ensemble, Member


@dataclass
class GroupMember:
    """One decoder of a group: its task (curriculum), seed, learning rate and run folder."""

    task: RetrievalTask
    run: Path
    seed: int = 0
    lr: float = TRAIN.lr
    warmup_steps: int | None = None


@torch.no_grad()
def stacked_accuracy(ensemble: Ensemble, tasks: Sequence[RetrievalTask], examples: list[dict[str, Any]],
                     batch_size: int = 256) -> list[float]:
    """Every member's share of ``examples`` (one query depth) answered right; greedy over the chain for
    ``chain`` members, the next token for the others."""
    cfg = ensemble.members[0].cfg.model
    E = ensemble.size
    steps = [len(examples[0]["chain"]) if t.curriculum == "chain" else 1 for t in tasks]
    right = torch.zeros(E, dtype=torch.long)
    for i in range(0, len(examples), batch_size):
        chunk = examples[i : i + batch_size]
        ids = torch.tensor([ex["tokens"] for ex in chunk])[None].expand(E, -1, -1)  # (E, N, T)
        answers = torch.tensor([ex["answer"] for ex in chunk])
        picked = torch.zeros(E, len(chunk), dtype=torch.long)
        for s in range(1, max(steps) + 1):
            nxt = stacked.forward(cfg, ensemble.params, ids)[:, :, -1].argmax(-1)  # (E, N)
            ids = torch.cat([ids, nxt[..., None]], -1)
            for e in range(E):
                if steps[e] == s:
                    picked[e] = nxt[e]
        right += (picked == answers).sum(1)
    return [r / max(1, len(examples)) for r in right.tolist()]


@torch.no_grad()
def stacked_hops(ensemble: Ensemble, examples: list[dict[str, Any]], batch_size: int = 256) -> list[dict[str, float]]:
    """Every member's :func:`~.training.score_hops` on definitions-first ``examples``, in one stacked forward."""
    cfg = ensemble.members[0].cfg.model
    preds: list[list[torch.Tensor]] = [[] for _ in range(ensemble.size)]
    for i in range(0, len(examples), batch_size):
        ids = torch.tensor([ex["tokens"] for ex in examples[i : i + batch_size]])[None].expand(ensemble.size, -1, -1)
        for e, rows in enumerate(stacked.forward(cfg, ensemble.params, ids).argmax(-1)):  # (E, N, T)
            preds[e].extend(rows)
    return [score_hops(examples, p) for p in preds]


class StackedRetrievalEval:
    """Ensemble callback: every member's held-out accuracy at every depth, to its ``eval.jsonl``; ``dense``
    members are asked on definitions-first prompts (their layout) and also scored per hop count."""

    def __init__(self, members: Sequence[GroupMember], every: int, steps: int, n: int = 256, seed: int = 10**6):
        self.tasks = [m.task for m in members]
        self.paths = [Path(m.run) / "eval.jsonl" for m in members]
        self.every, self.steps = every, steps
        self.dense = [t.curriculum == "dense" for t in self.tasks]
        layouts = {d: next(t for t, x in zip(self.tasks, self.dense) if x == d) for d in set(self.dense)}
        self.sets = {d: {k: eval_set(t, n, seed, k) for k in range(1, t.depth + 1)} for d, t in layouts.items()}

    def on_step(self, ensemble: Ensemble, step: int, losses: list[float]) -> None:
        if step % self.every and step != self.steps:
            return
        by_depth = {d: {k: stacked_accuracy(ensemble, self.tasks, s) for k, s in sets.items()}
                    for d, sets in self.sets.items()}
        hops = stacked_hops(ensemble, self.sets[True][self.tasks[0].depth]) if True in self.sets else None
        for e, path in enumerate(self.paths):
            mine = by_depth[self.dense[e]]
            row: dict[str, Any] = {"step": step, "loss": losses[e],
                                   "accuracy": {str(k): acc[e] for k, acc in mine.items()}}
            if self.dense[e] and hops is not None:
                row["hops"] = hops[e]
            with open(path, "a") as fh:
                fh.write(json.dumps(row) + "\n")


def train_group(members: Sequence[GroupMember], *, n_layers: int = TRAIN.n_layers, n_heads: int = TRAIN.n_heads,
                d_model: int = TRAIN.d_model, steps: int = TRAIN.steps, batch_size: int = TRAIN.batch_size,
                positions: str = TRAIN.positions, init: str = TRAIN.init, untied: bool = TRAIN.untied,
                eval_every: int = TRAIN.eval_every, eval_n: int = SWEEP.eval_n, checkpoint_every: int | None = None,
                success: float = 0.99, resume: bool = False,
                progress: bool, threads: int = 1) -> list[RunSummary]:
    """Train every member into its folder at once; returns their summaries (also each ``summary.json``).
    ``resume``: continue members stopped together from the newest step all of them checkpointed."""
    first = members[0].task
    for m in members:
        if (m.task.depth, m.task.n_distractors, m.task.n_vars, m.task.n_values) != (
                first.depth, first.n_distractors, first.n_vars, first.n_values):
            raise HeadlabError(f"{m.run}: a group's members share depth, distractors and vocabulary")
        if (Path(m.run) / "eval.jsonl").exists() and not resume:
            raise HeadlabError(f"{m.run} already holds a run; choose another folder")
    cfgs = [retrieval_config(m.task, n_layers=n_layers, n_heads=n_heads, d_model=d_model, steps=steps,
                             batch_size=batch_size, lr=m.lr, seed=m.seed, positions=positions, init=init,
                             untied=untied, threads=threads, checkpoint_every=checkpoint_every,
                             warmup_steps=m.warmup_steps)
            for m in members]
    for m in members:
        Path(m.run).mkdir(parents=True, exist_ok=True)
        RunTask(m.task).write(m.run)
    ens = Ensemble([Member(c, Path(m.run), RetrievalSource(m.task)) for c, m in zip(cfgs, members)],
                   callbacks=[StackedRetrievalEval(members, eval_every, steps, n=eval_n)], progress=progress,
                   threads=threads, resume=resume, logs=("eval.jsonl",))
    ens.fit()
    extra = {"trained_with": f"ensemble of {len(members)}", "ensemble_wall_s": round(ens.wall_s, 1),
             "eval_n": eval_n}
    return [summarize(Path(m.run), m.task, c, success, **extra) for c, m in zip(cfgs, members)]

