"""The Trainer: AdamW with warm-up and cosine decay, gradient clipping, checkpoints, callbacks, resume, DDP.

One run folder holds everything (see ``docs/training.md``). The same code runs in one process or under
``torchrun --nproc_per_node=N`` (DistributedDataParallel; gloo on CPU, nccl on GPU): every process takes
its rows of the global batch, and each process's loss is its share of the *global* token mean, so the
averaged gradients equal the one-process gradients of the same global batch.
"""

from __future__ import annotations

import json
import math
import time
import weakref
from pathlib import Path
from typing import Any, Protocol, Sequence

import torch
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

from headlab.distributed import device_for, world
from headlab.errors import HeadlabError
from headlab.interrupts import deferred
from headlab.io import FolderLock, write_text_atomic
from headlab.nn.transformer import Transformer
from headlab.notices import say
from headlab.progress import bar as progress_bar
from headlab.training import checkpoint as ckpt
from headlab.training.config import TrainConfig, load_config, same_but_vocab, to_toml
from headlab.training.data import WindowPool, build_pool, fingerprint, load_pool, pool_matches, save_pool, slash_ids
from headlab.training.induce import SlashAux

#: the run's per-step logs: a resumed run drops their rows after its checkpoint
LOGS = ("metrics.jsonl", "signals.jsonl", "monitor.jsonl")


class BatchSource(Protocol):
    """Training data other than a corpus window pool (e.g. a synthetic task): the global batch of a step."""

    vocab_size: int
    pad_id: int

    def batch(self, step: int, batch_size: int, seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(input_ids (B, T), attention_mask (B, T) bool, labels (B, T-1) next-token targets or -100)."""
        ...


class Callback(Protocol):
    """Called on the main process after each optimizer step (``step`` counts steps done, from 1)."""
    def on_step(self, trainer: "Trainer", step: int, loss: float) -> None: ...


def decays(p: torch.Tensor) -> bool:
    """Weight decay applies to matrices (embeddings, projections), not to norms and biases."""
    return p.ndim >= 2


def adamw(model: torch.nn.Module, cfg: TrainConfig, lr: float | None = None) -> torch.optim.AdamW:
    """The run's optimizer: AdamW with weight decay on the matrices only (:func:`decays`)."""
    o = cfg.optim
    params = list(model.parameters())
    return torch.optim.AdamW([{"params": [p for p in params if decays(p)], "weight_decay": o.weight_decay},
                              {"params": [p for p in params if not decays(p)], "weight_decay": 0.0}],
                             lr=o.lr if lr is None else lr, betas=(o.beta1, o.beta2))


def lr_at(step: int, cfg: TrainConfig) -> float:
    """Learning rate for optimizer step ``step`` (0-based): linear warm-up, then cosine to lr·min_lr_ratio."""
    o = cfg.optim
    if step < o.warmup_steps:
        return o.lr * (step + 1) / o.warmup_steps
    t = (step - o.warmup_steps) / max(1, o.steps - o.warmup_steps)
    return o.lr * (o.min_lr_ratio + (1 - o.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * min(1.0, t))))


#: what a finished run leaves besides checkpoints (``summary.json``: a retrieval run's); a run killed before its
#: first checkpoint leaves only logs, and a new run starts over there
RUN_FILES = ("final.safetensors", "summary.json")


class Trainer:
    def __init__(self, cfg: TrainConfig, run: str | Path, *, resume: bool = False, progress: bool,
                 callbacks: Sequence[Callback] = (), device: str, source: BatchSource | None = None):
        self.cfg, self.run, self.progress = cfg, Path(run), progress
        self.callbacks = list(callbacks)
        self._world = world()
        # one rule with the scan's: under torchrun each process takes its node's GPU (LOCAL_RANK); the global rank
        # names a GPU that does not exist on a second node
        self.device = torch.device(device if self.world == 1 or device == "cpu" else device_for(device, self._world))
        if cfg.optim.batch_size % self.world:
            raise HeadlabError(f"batch_size {cfg.optim.batch_size} is not divisible by {self.world} processes")
        if cfg.optim.threads:
            torch.set_num_threads(cfg.optim.threads)
        self.start = 0
        self._lock = FolderLock(self.run).acquire() if self.main else None  # one writer per run folder
        if self._lock is not None:
            weakref.finalize(self, self._lock.release)
        self._prepare_folder(resume)
        self.source = source
        if source is not None:
            if cfg.model.kind != "decoder":
                raise HeadlabError("a batch source trains decoders only")
            self.pool, self.tokenizer = None, None
            cfg.model.vocab_size, cfg.model.pad_id = source.vocab_size, source.pad_id
        else:
            self.pool, self.tokenizer = self._data()
            cfg.model.vocab_size = max(cfg.model.vocab_size, len(self.tokenizer))
            if self.tokenizer.pad_token_id is not None:
                cfg.model.pad_id = int(self.tokenizer.pad_token_id)
            if self.tokenizer.mask_token_id is not None:
                cfg.model.mask_id = int(self.tokenizer.mask_token_id)
        self.induce = self._induce()
        torch.manual_seed(cfg.optim.seed)
        self.model = Transformer(cfg.model).to(self.device)
        self.opt = self._optimizer()
        self.ckpt_steps = set(ckpt.schedule(cfg.optim.steps, cfg.checkpoints.early_points,
                                            cfg.checkpoints.early_fraction, cfg.checkpoints.every))
        if resume:
            self._resume()
        if self.main:
            write_text_atomic(self.run / "config.toml", to_toml(cfg))
        self.ddp = None
        if self.world > 1:

            self.ddp = DistributedDataParallel(self.model)

    @property
    def rank(self) -> int:
        return self._world.rank

    @property
    def world(self) -> int:
        return self._world.size

    @property
    def main(self) -> bool:
        return self._world.main

    # -- set-up -------------------------------------------------------------------------------------------
    def _prepare_folder(self, resume: bool) -> None:
        if self.main:
            self.run.mkdir(parents=True, exist_ok=True)
            # a finished run keeps no checkpoint it does not need, but its weights, log and summary are results:
            # a new run must not replace them unasked
            held = ["checkpoints"] if ckpt.checkpoints(self.run) else [f for f in RUN_FILES if (self.run / f).exists()]
            if not resume and held:
                raise HeadlabError(f"{self.run} already holds {held[0]} of an earlier run; pass --resume to continue "
                                   "it or choose another --out")
            if resume and (self.run / "config.toml").exists():
                if not same_but_vocab(load_config(self.run / "config.toml"), self.cfg):
                    raise HeadlabError(f"the config differs from {self.run}/config.toml; resume with the same one")
        self._barrier()

    def _barrier(self) -> None:
        self._world.barrier()

    def _data(self) -> tuple[WindowPool, Any]:
        print_ = fingerprint(self.cfg.data, self.cfg.optim.seed)
        if self.main:
            why = pool_matches(self.run, print_)
            if why is not None and why != "no pool":
                if ckpt.checkpoints(self.run):
                    raise HeadlabError(f"{self.run} holds checkpoints but its data pool cannot be used: {why}; "
                                       "start the run in a new folder")

                say(f"{self.run}: the data pool left there is not this run's ({why}); rebuilding it")
            if why is not None:
                pool, tok = build_pool(self.cfg.data, self.cfg.optim.seed, self.progress)
                save_pool(pool, tok, self.run, print_)
        self._barrier()
        return load_pool(self.run)

    def _induce(self) -> SlashAux | None:
        i = self.cfg.induce
        if i.weight <= 0:
            return None
        if self.tokenizer is None:
            raise HeadlabError("[induce] needs a corpus-trained run (a batch source has no `/` tokens)")
        m = self.cfg.model
        return SlashAux(i, slash_ids(self.tokenizer), m.n_layers, m.n_heads, m.kind == "decoder")

    def _optimizer(self) -> torch.optim.Optimizer:
        return adamw(self.model, self.cfg)

    def _resume(self) -> None:
        found = ckpt.latest_good(self.run)
        if found is None:
            if self.main:
                say(f"{self.run} has no usable checkpoint; starting from step 0 (and its logs afresh)")
                for name in LOGS:  # rows of the lost steps would be logged twice
                    (self.run / name).unlink(missing_ok=True)
            return
        folder, state = found
        ckpt.load_weights(folder, self.model)
        ckpt.load_optimizer(folder, self.opt, state["optimizer"])
        ckpt.restore_rng(state["rng"])
        self.start = int(state["step"])
        if self.main:
            for name in LOGS:
                truncate_jsonl(self.run / name, self.start)

    # -- one step -------------------------------------------------------------------------------------------
    def batch(self, step: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, int]:
        """This process's (input_ids, attention_mask, labels) of ``step``, and the global label count."""
        c = self.cfg
        if self.source is not None:
            inputs, mask, labels = self.source.batch(step, c.optim.batch_size, c.optim.seed)
            n_global = int((labels != -100).sum())
            sl = slice(self.rank, None, self.world)
            return inputs[sl].to(self.device), mask[sl].to(self.device), labels[sl].to(self.device), n_global
        rows = self.pool.batch_indices(step, c.optim.batch_size, c.optim.seed)
        ids, mask = self.pool.ids[rows], self.pool.mask[rows]
        if c.model.kind == "decoder":
            labels = ids[:, 1:].masked_fill(~mask[:, 1:], -100)
            inputs = ids
        else:  # masked LM: mask_prob of the real, non-special tokens, drawn from (seed, step)
            g = torch.Generator().manual_seed(c.optim.seed * 1_000_003 + step)
            special = torch.zeros_like(mask)
            for sid in self.tokenizer.all_special_ids:
                special |= ids == sid
            pick = (torch.rand(ids.shape, generator=g) < c.data.mask_prob) & mask & ~special
            labels = ids.masked_fill(~pick, -100)
            inputs = ids.masked_fill(pick, c.model.mask_id)
        n_global = int((labels != -100).sum())
        sl = slice(self.rank, None, self.world)
        return inputs[sl].to(self.device), mask[sl].to(self.device), labels[sl].to(self.device), n_global

    def loss(self, model: torch.nn.Module, inputs: torch.Tensor, mask: torch.Tensor, labels: torch.Tensor,
             n_global: int) -> torch.Tensor:
        logits = model(inputs, mask).logits  # (b, T, V)
        if self.cfg.model.kind == "decoder":
            logits = logits[:, :-1]
        total = F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), labels.reshape(-1),
                                ignore_index=-100, reduction="sum")
        return total * self.world / max(1, n_global)  # DDP averages over processes

    def losses(self, net: torch.nn.Module, step: int, inputs: torch.Tensor, mask: torch.Tensor, labels: torch.Tensor,
               n_global: int) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The language-model loss of step ``step`` and, while ``[induce]`` is active, its auxiliary term (this
        process's rows; DDP averages the gradients of both)."""
        if self.induce is None or not self.induce.active(step):
            return self.loss(net, inputs, mask, labels, n_global), None
        kept = self.induce.attach(self.model)
        try:
            loss = self.loss(net, inputs, mask, labels, n_global)
            return loss, self.induce.term(kept, inputs, mask)
        finally:
            self.induce.detach(self.model)

    def fit(self) -> Path:
        """Train from ``self.start`` to the configured steps; the run folder's lock is released at the end."""
        try:
            return self._fit()
        finally:
            self.ddp = None  # its gradient hooks must be gone before the process group is (distributed._leave)
            if self._lock is not None:
                self._lock.release()

    def _fit(self) -> Path:
        c = self.cfg
        net = self.ddp or self.model
        net.train()
        bar = progress_bar(c.optim.steps, f"train {c.model.kind}", "step", self.progress and self.main)
        if bar is not None:
            bar.update(self.start)
        metrics = open(self.run / "metrics.jsonl", "a") if self.main else None
        tokens, t0 = 0, time.perf_counter()
        completed = self.start  # optimizer steps applied to the weights
        try:
            for step in range(self.start, c.optim.steps):
                lr = lr_at(step, c)
                for g in self.opt.param_groups:
                    g["lr"] = lr
                inputs, mask, labels, n_global = self.batch(step)
                loss, aux = self.losses(net, step, inputs, mask, labels, n_global)
                self.opt.zero_grad(set_to_none=True)
                (loss if aux is None else loss + aux).backward()
                gnorm = float(torch.nn.utils.clip_grad_norm_(self.model.parameters(), c.optim.grad_clip))
                # the step applied, counted and logged, or none of it: an interrupt inside the optimizer's update
                # saved weights a step ahead of their count, and one before the row was written lost the row
                with deferred():
                    self.opt.step()
                    completed = step + 1
                    value = loss.detach() / self.world
                    if self.world > 1:
                        torch.distributed.all_reduce(value)
                    value_f = float(value)
                    if not math.isfinite(value_f):
                        raise HeadlabError(f"the loss became {value_f} at step {step + 1}; lower optim.lr")
                    tokens += int(mask.sum()) * self.world
                    if self.main:
                        row = {"step": step + 1, "loss": value_f, "lr": lr, "grad_norm": gnorm}
                        metrics.write(json.dumps(row if aux is None else dict(row, aux=float(aux.detach()))) + "\n")
                if self.main:
                    for cb in self.callbacks:
                        cb.on_step(self, step + 1, value_f)
                    if bar is not None:
                        bar.update(1)
                        if (step + 1) % c.optim.log_every == 0:
                            bar.set_postfix(loss=f"{value_f:.3f}",
                                            tok_s=f"{tokens / (time.perf_counter() - t0):.0f}")
                if step + 1 in self.ckpt_steps:
                    self.save(step + 1, metrics)
        except KeyboardInterrupt:
            if self.main and completed > self.start and not ckpt.step_dir(self.run, completed).exists():
                self.save(completed, metrics)
            raise
        finally:
            if bar is not None:
                bar.close()
            if metrics is not None:
                metrics.close()
        if self.main:
            ckpt.save_final(self.run, self.model)
        self._barrier()
        self.tokens_per_s = tokens / max(1e-9, time.perf_counter() - t0)
        return self.run

    def save(self, step: int, metrics: Any) -> None:
        if not self.main:
            return
        if metrics is not None:
            metrics.flush()  # survives a killed process; no fsync (it costs ~0.3 s a checkpoint on this VM)
        for cb in self.callbacks:
            flush = getattr(cb, "flush", None)
            if flush:
                flush()
        ckpt.save(self.run, step, self.model, self.opt, {"data_position": {"step": step, "seed": self.cfg.optim.seed}})


def truncate_jsonl(path: Path, step: int) -> None:
    """Drop rows written after ``step`` (they will be written again by the resumed run)."""
    if not path.exists():
        return
    keep = []
    for line in path.read_text().splitlines():
        try:
            if json.loads(line)["step"] <= step:
                keep.append(line)
        except (ValueError, KeyError):
            break  # a torn last line from a killed process
    write_text_atomic(path, "".join(x + "\n" for x in keep))
