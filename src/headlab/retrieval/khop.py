"""The k-hop induction task of Sanford, Hsu & Telgarsky (ICML 2024, "Transformers, parallel computation, and
logarithmic depth"; code ``chsanford/hop-induction-heads``, ``InductionHopsFullSequenceTask``), an external
check of headlab's trainer against a published depth threshold.

A sequence of ``seq_len`` characters over ``n_chars`` letters, no letter twice in a row. hop_0 at position i is
the character there; hop_{j+1} follows the *induction* step from where hop_j landed: find the most recent
earlier occurrence of the character there and move one to the right (no occurrence: the "none" token). The
hop count k (0..``max_hops``, drawn per sequence) is the first token; every character position is supervised
with its own hop_k, as in their layout: input ``[k] + chars[:-2]``, target ``[blank] + hop_k[:-2]``. The error
of a hop count is over the positions whose target is a character (theirs). Their published per-hop errors
(100k steps of 32, d = 128, 4 heads, GPT-2 blocks, lr 1e-4) are in :data:`PUBLISHED`.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import torch

from headlab.io import read_jsonl
from headlab.retrieval.record import RunSummary, RunTask
from headlab.retrieval.task import KHopTask
from headlab.retrieval.training import retrieval_config
from headlab.training.trainer import Trainer

#: their ``local/errors.json`` for d = 128, 4 heads, unlimited samples: layers -> the largest k with every
#: hop count 0..k below 5% error (e.g. 3 layers: k = 3; 5 layers: k = 8)
PUBLISHED = {2: 1, 3: 3, 4: 5, 5: 8, 6: 15}
SOLVED_ERROR = 0.05


def hops(chars: list[int], k: int) -> list[int | None]:
    """hop_k of every position (character index into ``chars``, None where a hop finds no earlier copy)."""
    last: dict[int, int] = {}
    step: list[int | None] = []  # where one hop from each position lands
    for p, c in enumerate(chars):
        step.append(last[c] + 1 if c in last else None)
        last[c] = p
    at: list[int | None] = list(range(len(chars)))
    for _ in range(k):
        at = [None if p is None else step[p] for p in at]
    return [None if p is None else chars[p] for p in at]


def example(task: KHopTask, rng: random.Random, k: int | None = None) -> dict[str, Any]:
    chars = [rng.randrange(task.n_chars)]
    while len(chars) < task.seq_len:
        chars.append(rng.choice([c for c in range(task.n_chars) if c != chars[-1]]))
    k = rng.randint(0, task.max_hops) if k is None else k
    target = hops(chars, k)
    ids = [k] + [task.char(c) for c in chars[:-2]]
    labels = [task.blank] + [task.none if t is None else task.char(t) for t in target[:-2]]
    return {"hops": k, "ids": ids, "labels": labels}


class KHopSource:
    """A :class:`headlab.training.trainer.BatchSource`: batches as a function of (seed, step)."""

    def __init__(self, task: KHopTask):
        self.task, self.vocab_size, self.pad_id = task, task.vocab_size, task.blank

    def batch(self, step: int, batch_size: int, seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        rng = random.Random(f"khop:{seed}:{step}")
        rows = [example(self.task, rng) for _ in range(batch_size)]
        # the trainer pairs position t with labels[t] over T-1 positions: one filler token closes each row
        ids = torch.tensor([r["ids"] + [self.task.blank] for r in rows])
        return ids, torch.ones_like(ids, dtype=torch.bool), torch.tensor([r["labels"] for r in rows])


@torch.no_grad()
def errors(model: torch.nn.Module, task: KHopTask, sets: dict[int, list[dict[str, Any]]]) -> dict[str, float]:
    """Per hop count, the share of character-target positions predicted wrong."""
    was = model.training
    model.eval()
    out = {}
    try:
        for k, rows in sets.items():
            ids = torch.tensor([r["ids"] for r in rows])
            labels = torch.tensor([r["labels"] for r in rows])
            pred = model(ids).logits.argmax(-1)  # (B, T)
            real = labels < task.none
            out[str(k)] = float((pred[real] != labels[real]).float().mean())
    finally:
        model.train(was)
    return out


def solved(errs: dict[str, float], limit: float = SOLVED_ERROR) -> int:
    """The largest k with every hop count 0..k below ``limit`` error (-1: not even k = 0)."""
    k = -1
    while str(k + 1) in errs and errs[str(k + 1)] < limit:
        k += 1
    return k


class KHopEval:
    """Trainer callback: per-hop error on held-out sequences (100 per hop count, their size) to eval.jsonl."""

    def __init__(self, run: Path, task: KHopTask, every: int, per_hop: int = 100, seed: int = 10**6):
        rng = random.Random(f"khop-eval:{seed}")
        self.task, self.every, self.path = task, every, Path(run) / "eval.jsonl"
        self.sets = {k: [example(task, rng, k) for _ in range(per_hop)] for k in range(task.max_hops + 1)}

    def on_step(self, trainer: Any, step: int, loss: float) -> None:
        if step % self.every and step != trainer.cfg.optim.steps:
            return
        errs = errors(trainer.model, self.task, self.sets)
        with open(self.path, "a") as fh:
            fh.write(json.dumps({"step": step, "loss": loss, "errors": errs, "solved": solved(errs)}) + "\n")


def train_khop(task: KHopTask, run: str | Path, *, eval_every: int = 500, progress: bool,
               resume: bool = False, **shape: Any) -> RunSummary:
    """Train one decoder on ``task`` into ``run`` (``shape``: the keywords of
    :func:`~headlab.retrieval.training.retrieval_config`); returns and writes ``summary.json``: per-hop error,
    the largest hop count solved (every k up to it below 5% error) and the published value for its depth."""

    run = Path(run)
    cfg = retrieval_config(task, **shape)  # type: ignore[arg-type]
    # the trainer refuses a folder with checkpoints but no --resume before anything in it is touched
    trainer = Trainer(cfg, run, resume=resume, progress=progress, device="cpu", source=KHopSource(task),
                      callbacks=[KHopEval(run, task, eval_every)])
    RunTask(task).write(run)
    if not resume and (run / "eval.jsonl").exists():
        (run / "eval.jsonl").unlink()
    trainer.fit()
    rows = read_jsonl(run / "eval.jsonl")
    m, o = cfg.model, cfg.optim
    summary = RunSummary(
        task=task.to_json(), n_layers=m.n_layers, n_heads=m.n_heads, d_model=m.d_model, positions=m.positions,
        init=m.init, untied=not m.tie_embeddings, steps=o.steps, batch_size=o.batch_size, lr=o.lr,
        warmup_steps=o.warmup_steps, seed=o.seed, final_errors=rows[-1]["errors"] if rows else {},
        solved=rows[-1]["solved"] if rows else -1, published_solved=PUBLISHED.get(m.n_layers),
        curve=[{"step": r["step"], "solved": r["solved"]} for r in rows])
    summary.write(run)
    return summary
