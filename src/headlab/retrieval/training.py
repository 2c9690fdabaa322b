"""Training decoders on the minimal retrieval problem, with or without an implicit curriculum.

Curricula (ours; the paper's exact targets are not public):

* ``none``: every question at full depth D; the loss is on the final answer only;
* ``mixed``: the queried depth is drawn uniformly from 1..D for every example, so every batch mixes depths;
  the loss is on the answer only (an implicit curriculum over depths);
* ``chain``: full depth, and the target is the whole chain — after the query the model emits every
  intermediate variable and then the value, each supervised (teacher forcing). Reviewers describe the
  paper's implicit curriculum as targets made of "the concatenation of tokens forming the retrieval chain";
  ``chain`` is our reading of that, so it is the one we call paper-like.
* ``dense``: every variable is defined before it is used, and at every pair's reference the model is trained
  to emit the resolved value of the pair's variable (as in the divide-and-conquer variable-chain study): one
  example supervises every hop count from 1 to D, all inside one forward pass, plus the query's answer.
  Held-out rows add the accuracy per hop count (``hops``).

Batches are a function of (seed, step) only, like the corpus trainer's, so runs resume exactly. Held-out
evaluation uses a different seed stream: accuracy of the final answer at every depth 1..D (greedy decoding of
the whole chain under ``chain``). A run *succeeds* when its full-depth accuracy reaches ``success`` (0.99).
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

import numpy as np
import torch

from headlab.attention.padding import pad_right
from headlab.errors import HeadlabError
from headlab.integrity import Manifest
from headlab.io import read_jsonl
from headlab.nn import Transformer
from headlab.nn.transformer import ModelConfig
from headlab.notices import say
from headlab.result import found_in
from headlab.retrieval.record import RunSummary, RunTask
from headlab.retrieval.settings import TRAIN
from headlab.retrieval.task import RetrievalTask
from headlab.training import checkpoint as ckpt
from headlab.training.config import (
    CheckpointConfig,
    DataConfig,
    OptimConfig,
    TrackConfig,
    TrainConfig,
    check_sizes,
    load_config,
)
from headlab.training.trainer import Trainer

if TYPE_CHECKING:
    from headlab.nn import Transformer
    from headlab.training.config import TrainConfig

PAPER_LIKE = "chain"


def encode(task: RetrievalTask, ex: dict[str, Any]) -> tuple[list[int], list[int]]:
    """(sequence, labels): the prompt followed by its target tokens, and ``len(sequence) - 1`` next-token labels
    (``labels[t]`` = token t+1 where it is supervised, else -100)."""
    prompt = ex["tokens"]
    target = ex["chain"] if task.curriculum == "chain" else [ex["answer"]]
    seq = prompt + target
    labels = [-100] * (len(prompt) - 1) + target
    if task.curriculum == "dense":  # labels[t] is what position t emits: the resolved value at each reference
        for pos, value, _ in ex["dense"]:
            labels[pos] = value
    return seq, labels


class RetrievalSource:
    """A :class:`headlab.training.trainer.BatchSource` of minimal retrieval examples."""

    def __init__(self, task: RetrievalTask):
        self.task = task
        self.vocab_size = task.vocab.size
        self.pad_id = task.vocab.PAD

    def batch(self, step: int, batch_size: int, seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        rng = random.Random(f"train:{seed}:{step}")
        # One depth per step, not per row or per seed: rows of one length need no padding, so short chains cost
        # less, and the members of an ensemble (padded to their longest) stay equally short.
        depth = (self.task.depth if self.task.min_depth is None
                 else random.Random(f"depth:{step}").randint(self.task.min_depth, self.task.depth))
        rows = []
        for _ in range(batch_size):
            q = rng.randint(1, depth) if self.task.curriculum == "mixed" else None
            rows.append(encode(self.task, self.task.example(rng, q, depth)))
        ids, mask = pad_right([s for s, _ in rows], 0)
        labels = torch.full((batch_size, ids.shape[1] - 1), -100, dtype=torch.long)
        for i, (_, lab) in enumerate(rows):
            labels[i, : len(lab)] = torch.tensor(lab)
        return ids, mask, labels


def eval_set(task: RetrievalTask, n: int, seed: int, query_depth: int) -> list[dict[str, Any]]:
    rng = random.Random(f"eval:{seed}:{query_depth}")
    return [task.example(rng, query_depth) for _ in range(n)]


@torch.no_grad()
def accuracy(
    model: torch.nn.Module, task: RetrievalTask, examples: list[dict[str, Any]], batch_size: int = 256
) -> float:
    """Share of examples whose final answer is right (greedy over the chain under ``chain``)."""
    return float(correct(model, task, examples, batch_size).mean()) if examples else 0.0


def correct(
    model: torch.nn.Module, task: RetrievalTask, examples: list[dict[str, Any]], batch_size: int = 256
) -> np.ndarray:
    """(n,) bool: whether each example's final answer is right (greedy over the chain under ``chain``)."""
    was = model.training
    model.eval()
    right = []
    try:
        for i in range(0, len(examples), batch_size):
            chunk = examples[i : i + batch_size]
            steps = len(chunk[0]["chain"]) if task.curriculum == "chain" else 1
            ids = torch.tensor([ex["tokens"] for ex in chunk])  # same length within one depth
            for _ in range(steps):
                nxt = model(ids).logits[:, -1].argmax(-1)
                ids = torch.cat([ids, nxt[:, None]], 1)
            right.append((ids[:, -1] == torch.tensor([ex["answer"] for ex in chunk])).numpy())
    finally:
        model.train(was)
    return np.concatenate(right) if right else np.zeros(0, bool)


def score_hops(examples: list[dict[str, Any]], predictions: list[torch.Tensor]) -> dict[str, float]:
    """Per hop count, the share of references at which ``predictions[n]`` (the argmax token at every position of
    example n's prompt) is the resolved value: the dense targets' metric."""
    right: dict[int, int] = {}
    seen: dict[int, int] = {}
    for ex, pred in zip(examples, predictions):
        for pos, value, hop in ex["dense"]:
            seen[hop] = seen.get(hop, 0) + 1
            right[hop] = right.get(hop, 0) + int(pred[pos] == value)
    return {str(h): right.get(h, 0) / seen[h] for h in sorted(seen)}


@torch.no_grad()
def hop_accuracy(model: torch.nn.Module, examples: list[dict[str, Any]], batch_size: int = 256) -> dict[str, float]:
    """:func:`score_hops` of ``model`` (one forward of each prompt)."""
    was = model.training
    model.eval()
    try:
        chunks = (torch.tensor([ex["tokens"] for ex in examples[i : i + batch_size]])
                  for i in range(0, len(examples), batch_size))
        preds = [row for ids in chunks for row in model(ids).logits.argmax(-1)]  # (T,) each
    finally:
        model.train(was)
    return score_hops(examples, preds)


class RetrievalEval:
    """Trainer callback: held-out accuracy at every depth every ``every`` steps, to ``eval.jsonl``."""

    def __init__(self, run: Path, task: RetrievalTask, every: int, n: int = 256, seed: int = 10**6):
        self.task, self.every = task, every
        self.sets = {d: eval_set(task, n, seed, d) for d in range(1, task.depth + 1)}
        self.path = Path(run) / "eval.jsonl"
        self.rows: list[dict[str, Any]] = []

    def on_step(self, trainer: Any, step: int, loss: float) -> None:
        if step % self.every and step != trainer.cfg.optim.steps:
            return
        acc = {str(d): accuracy(trainer.model, self.task, s) for d, s in self.sets.items()}
        row: dict[str, Any] = {"step": step, "loss": loss, "accuracy": acc}
        if self.task.curriculum == "dense":
            row["hops"] = hop_accuracy(trainer.model, self.sets[self.task.depth])
        self.rows.append(row)
        with open(self.path, "a") as fh:
            fh.write(json.dumps(row) + "\n")


def retrieval_config(task: RetrievalTask, *, n_layers: int = TRAIN.n_layers, n_heads: int = TRAIN.n_heads,
                     d_model: int = TRAIN.d_model, steps: int = TRAIN.steps, batch_size: int = TRAIN.batch_size,
                     lr: float = TRAIN.lr, seed: int = TRAIN.seed, positions: str = TRAIN.positions,
                     init: str = TRAIN.init, untied: bool = TRAIN.untied, threads: int = 1,
                     checkpoint_every: int | None = None, warmup_steps: int | None = TRAIN.warmup_steps
                     ) -> "TrainConfig":
    """The :class:`~headlab.training.config.TrainConfig` of one retrieval decoder (solo or ensemble member)."""

    try:
        model = ModelConfig(kind="decoder", n_layers=n_layers, n_heads=n_heads, d_model=d_model,
                            max_length=task.max_length, positions=positions, init=init,  # type: ignore[arg-type]
                            tie_embeddings=not untied)
    except ValueError as exc:  # the model's own rule, in the options' words
        raise HeadlabError(f"--d-model {d_model} / --n-heads {n_heads} / --positions {positions} / --init {init}: "
                           f"{exc}") from None
    cfg = TrainConfig(
        model=model,
        data=DataConfig(corpus=[], tokenizer="retrieval-minimal", window=task.max_length, n_windows=0,
                        probe_windows=0),  # unused: the task generates its own batches
        optim=OptimConfig(steps=steps, batch_size=batch_size, lr=lr,
                          warmup_steps=min(100, steps // 10) if warmup_steps is None else warmup_steps,
                          seed=seed, weight_decay=0.01, log_every=50, threads=threads),
        checkpoints=CheckpointConfig(early_points=6, early_fraction=0.1,
                                     every=max(1, checkpoint_every or steps // 10)),
        track=TrackConfig(grad_every=0),
    )
    check_sizes(cfg, "retrieval train", FLAGS)
    return cfg


#: how the retrieval commands spell the settings a size check names
FLAGS = {"model.d_model": "--d-model", "model.n_layers": "--n-layers", "model.vocab_size": "the task's vocabulary",
         "optim.batch_size": "--batch-size", "data.window": "the task's depth", "optim.steps": "--steps",
         "checkpoints.every": "--checkpoint-every"}


def summarize(run: Path, task: RetrievalTask, cfg: "TrainConfig", success: float, **extra: Any) -> RunSummary:
    """A finished run's ``summary.json`` (written, and returned) from its ``eval.jsonl``."""

    rows = read_jsonl(run / "eval.jsonl")
    full = str(task.depth)
    hit = next((r["step"] for r in rows if r["accuracy"][full] >= success), None)
    m, o = cfg.model, cfg.optim
    summary = RunSummary(
        task=task.to_json(), n_layers=m.n_layers, n_heads=m.n_heads, d_model=m.d_model, positions=m.positions,
        init=m.init, untied=not m.tie_embeddings, steps=o.steps, seed=o.seed, lr=o.lr, warmup_steps=o.warmup_steps,
        batch_size=o.batch_size, checkpoint_every=cfg.checkpoints.every, success_threshold=success,
        success=hit is not None, success_step=hit,
        final_accuracy=rows[-1]["accuracy"] if rows else {}, final_loss=rows[-1]["loss"] if rows else None,
        final_hops=rows[-1].get("hops", {}) if rows else {}, **extra)
    summary.write(run)
    Manifest.of(run, ["eval.jsonl"]).write(run)  # the log has no seal of its own; the finished run seals it
    return summary


def train_retrieval(
    task: RetrievalTask,
    run: str | Path,
    *,
    success: float = 0.99,
    eval_every: int,
    progress: bool,
    resume: bool = False,
    **shape: Any,
) -> RunSummary:
    """Train one decoder on ``task`` into ``run``; returns its summary (also written to ``summary.json``).

    ``shape``: :func:`retrieval_config`'s keywords (layers, width, steps, lr, seed, ...); ``threads`` defaults
    to 1: these models are too small to gain from more, and a sweep can then run one cell per core."""

    run = Path(run)
    cfg = retrieval_config(task, **shape)
    ev = RetrievalEval(run, task, eval_every)
    # the trainer refuses a folder with checkpoints but no --resume before anything in it is touched
    trainer = Trainer(cfg, run, resume=resume, progress=progress, device="cpu", source=RetrievalSource(task),
                      callbacks=[ev])
    RunTask(task).write(run)
    if not resume and (run / "eval.jsonl").exists():
        (run / "eval.jsonl").unlink()
    trainer.fit()
    return summarize(run, task, cfg, success)


def checkpoint_models(run: Path) -> Iterator[tuple[int, "Transformer"]]:
    """(step, model) of every readable checkpoint of a run, in step order: the emergence analyses read a run
    over its checkpoints, and one that cannot be loaded leaves a gap in the curve rather than ending it."""

    for step, folder in ckpt.sound_checkpoints(run):  # a damaged one is said there
        try:
            model = load_run(run, folder)[0]
        except HeadlabError as exc:
            say(f"{run.name}: checkpoint {folder.name} does not load ({exc}); left out of the emergence curve")
            continue
        yield step, model


def load_run(run: Path, folder: Path | None = None) -> tuple["Transformer", RetrievalTask]:
    """A run's model (its final weights, or a checkpoint ``folder``'s) in eval mode, and its task."""

    if RunTask not in found_in(run):
        raise HeadlabError(f"{run} is not a retrieval run (no task.json)")
    task = RunTask.read(run).task
    if not isinstance(task, RetrievalTask):
        raise HeadlabError(f"{run} is a k-hop run: its heads are not read as retrieval roles")
    model = Transformer(load_config(run / "config.toml").model)
    if folder is None:
        ckpt.load_weights_file(run / "final.safetensors", model, f"{run.name} final weights")
    else:
        ckpt.load_weights(folder, model)
    return model.eval(), task
