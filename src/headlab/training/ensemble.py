"""Many small decoders of one shape trained at once, each exactly as :class:`~headlab.training.trainer.Trainer`
would train it alone.

Contract:

* members share the model config and the optimizer's form (steps, batch size, betas, weight decay, clipping);
  each has its own seed (initial weights and batches), learning rate and warm-up, batch source, run folder and
  callbacks;
* every member's weights live in one stacked tensor per parameter (``headlab.nn.stacked``); the member's own
  :class:`~headlab.nn.transformer.Transformer` holds *views* into it, so callbacks, checkpoints and analyses
  see the current weights without copies;
* per member, per step: its batch (right-padded to the longest member's length with ignored labels: a causal
  decoder's real positions never see the padding), the same loss normalisation, gradient clipping by the
  member's own norm, and AdamW with the member's learning rate: the arithmetic of ``torch.optim.AdamW``
  written over the stacked tensors (``tests/test_ensemble.py`` checks losses and final weights against solo
  runs within 1e-5);
* each member's run folder is a solo run's: ``config.toml``, ``metrics.jsonl``, ``checkpoints/step-N`` (model
  and AdamW state in the solo format, so ``headlab train --resume`` can continue one member alone),
  ``final.safetensors``;
* a stopped ensemble resumes (``resume=True``) from the newest step at which every member holds a sound checkpoint:
  each member's weights and AdamW moments are loaded into the stacks and the per-step logs lose their later rows,
  so the resumed run is the uninterrupted one (batches are a function of seed and step).

Callbacks receive the ensemble: ``on_step(ensemble, step, losses)`` with one loss per member. A solo
:class:`~headlab.training.trainer.Callback` runs per member through :class:`PerMember`, which hands it a view with
the member's ``model``, ``cfg`` and ``run`` (what the solo callbacks read from the Trainer).
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, Sequence

import torch
import torch.nn.functional as F

from headlab.errors import HeadlabError
from headlab.io import FolderLock, write_text_atomic
from headlab.nn import stacked
from headlab.nn.transformer import Transformer
from headlab.notices import say
from headlab.progress import bar as progress_bar
from headlab.training import checkpoint as ckpt
from headlab.training.config import TrainConfig, load_config, same_but_vocab, to_toml
from headlab.training.trainer import LOGS, BatchSource, adamw, decays, lr_at, truncate_jsonl

#: optimizer fields members must share (the rest: seed, lr, warmup_steps, min_lr_ratio may differ)
SHARED_OPTIM = ("steps", "batch_size", "weight_decay", "beta1", "beta2", "grad_clip")
EPS = 1e-8  # torch.optim.AdamW's default


@dataclass
class Member:
    cfg: TrainConfig
    run: Path
    source: BatchSource
    model: Transformer | None = None  # built by the ensemble
    lock: Any = None


class EnsembleCallback(Protocol):
    def on_step(self, ensemble: "Ensemble", step: int, losses: list[float]) -> None: ...


@dataclass
class MemberView:
    """What a solo callback reads from its Trainer, for one member."""

    model: Transformer
    cfg: TrainConfig
    run: Path


class PerMember:
    """Ensemble callback running solo callbacks: ``callbacks[i]`` for member ``i``."""

    def __init__(self, callbacks: Sequence[Sequence[Any]]):
        self.callbacks = [list(c) for c in callbacks]

    def on_step(self, ensemble: "Ensemble", step: int, losses: list[float]) -> None:
        if len(self.callbacks) != ensemble.size:
            raise HeadlabError(f"{len(self.callbacks)} callback lists for {ensemble.size} members")
        for m, model, cbs, loss in zip(ensemble.members, ensemble.models, self.callbacks, losses):
            view = MemberView(model, m.cfg, m.run)
            for cb in cbs:
                cb.on_step(view, step, loss)


@dataclass
class _Moments:
    exp_avg: dict[str, torch.Tensor] = field(default_factory=dict)
    exp_avg_sq: dict[str, torch.Tensor] = field(default_factory=dict)


class Ensemble:
    def __init__(self, members: Sequence[Member], *, callbacks: Sequence[EnsembleCallback] = (),
                 progress: bool, threads: int | None = None, resume: bool = False, logs: Sequence[str] = ()):
        if not members:
            raise HeadlabError("an ensemble needs at least one member")
        self.members, self.callbacks, self.progress = list(members), list(callbacks), progress
        first = self.members[0].cfg
        for m in self.members:
            m.cfg.model.vocab_size, m.cfg.model.pad_id = m.source.vocab_size, m.source.pad_id
        for m in self.members[1:]:
            if m.cfg.model.to_dict() != first.model.to_dict():
                raise HeadlabError(f"{m.run}: every ensemble member needs the same model config as {members[0].run}")
            diff = [k for k in SHARED_OPTIM if getattr(m.cfg.optim, k) != getattr(first.optim, k)]
            if diff:
                raise HeadlabError(f"{m.run}: optim.{diff[0]} differs from {members[0].run}'s; members share "
                                   f"{', '.join(SHARED_OPTIM)}")
        stacked.check_config(first.model)
        if threads:
            torch.set_num_threads(threads)
        self.steps, self.batch_size = first.optim.steps, first.optim.batch_size
        runs = [m.run.resolve() for m in self.members]
        if len(set(runs)) < len(runs):
            shared = next(r for r in runs if runs.count(r) > 1)
            raise HeadlabError(f"two ensemble members share the run folder {shared}")
        for m in self.members:
            if ckpt.checkpoints(m.run) and not resume:
                raise HeadlabError(f"{m.run} already holds checkpoints; choose another folder")
        self._lock_all()
        self.models: list[Transformer] = []
        for m in self.members:
            torch.manual_seed(m.cfg.optim.seed)  # as Trainer: the member's initial weights are its solo run's
            m.model = Transformer(m.cfg.model)
            self.models.append(m.model)
        self.start, saved = self._resume_from([*LOGS, *logs]) if resume else (0, [])
        for m in self.members:
            write_text_atomic(m.run / "config.toml", to_toml(m.cfg))
        self.params = {n: p.requires_grad_() for n, p in stacked.stack_weights(self.models).items()}
        for i, model in enumerate(self.models):
            _bind_views(model, self.params, i)
        self.moments = _Moments({n: torch.zeros_like(p) for n, p in self.params.items()},
                                {n: torch.zeros_like(p) for n, p in self.params.items()})
        with torch.no_grad():
            for i, (avg, sq) in enumerate(saved):
                for n in self.params:
                    self.moments.exp_avg[n][i] = avg[n]
                    self.moments.exp_avg_sq[n][i] = sq[n]
        self.ckpt_steps = [set(ckpt.schedule(self.steps, m.cfg.checkpoints.early_points,
                                             m.cfg.checkpoints.early_fraction, m.cfg.checkpoints.every))
                           for m in self.members]

    def _resume_from(self, logs: Sequence[str]) -> tuple[int, list[tuple[dict[str, Any], dict[str, Any]]]]:
        """Load every member's checkpoint of the newest step all of them hold soundly into its model (before the
        stacking) and return that step with each member's AdamW moments by weight name; drop the logs' later rows.
        With no such step every member starts over, its logs afresh."""
        for m in self.members:
            if (m.run / "config.toml").exists() and not same_but_vocab(load_config(m.run / "config.toml"), m.cfg):
                raise HeadlabError(f"the config differs from {m.run}/config.toml; resume with the same one")
        sound = [dict(ckpt.sound_checkpoints(m.run)) if ckpt.checkpoints(m.run) else {} for m in self.members]
        common = set.intersection(*(set(s) for s in sound))
        step = max(common, default=0)
        moments = []
        for m, model, held in zip(self.members, self.models, sound):
            for name in logs:
                truncate_jsonl(m.run / name, step)
            if not step:
                continue
            folder = held[step]
            ckpt.load_weights(folder, model)
            opt = adamw(model, m.cfg)
            ckpt.load_optimizer(folder, opt, ckpt.verify(folder)["optimizer"])
            named = dict(model.named_parameters())
            moments.append(({n: opt.state[p]["exp_avg"] for n, p in named.items()},
                            {n: opt.state[p]["exp_avg_sq"] for n, p in named.items()}))
        say(f"{', '.join(str(m.run) for m in self.members)}: "
            + (f"resumed at step {step}" if step else "no step checkpointed by every member; started over"))
        return step, moments

    def _lock_all(self) -> None:
        """One writer per run folder; on a refused lock, the ones taken are given back."""
        try:
            for m in self.members:
                m.run.mkdir(parents=True, exist_ok=True)
                m.lock = FolderLock(m.run).acquire()
        except BaseException:
            for m in self.members:
                if m.lock is not None:
                    m.lock.release()
            raise

    @property
    def size(self) -> int:
        return len(self.members)

    # -- one step -------------------------------------------------------------------------------------------
    def batch(self, step: int) -> tuple[torch.Tensor, torch.Tensor, list[int]]:
        """(input_ids (E, B, T), labels (E, B, T-1), label count per member) of ``step``."""
        rows = [m.source.batch(step, self.batch_size, m.cfg.optim.seed) for m in self.members]
        for _, mask, _ in rows:
            if not bool((mask.long().diff(dim=1) <= 0).all()):
                raise HeadlabError("ensemble batches must be right-padded (each row's tokens first, then padding)")
        T = max(ids.shape[1] for ids, _, _ in rows)
        ids = torch.stack([F.pad(i, (0, T - i.shape[1]), value=m.source.pad_id)
                           for (i, _, _), m in zip(rows, self.members)])
        labels = torch.stack([F.pad(lab, (0, T - 1 - lab.shape[1]), value=-100) for _, _, lab in rows])
        return ids, labels, [int((lab != -100).sum()) for _, _, lab in rows]

    def losses(self, ids: torch.Tensor, labels: torch.Tensor, counts: list[int]) -> torch.Tensor:
        """(E,) each member's loss: its token-mean cross-entropy, as ``Trainer.loss`` computes it."""
        logits = stacked.forward(self.members[0].cfg.model, self.params, ids)[:, :, :-1]  # (E, B, T-1, V)
        E, V = logits.shape[0], logits.shape[-1]
        total = F.cross_entropy(logits.reshape(-1, V).float(), labels.reshape(-1), ignore_index=-100,
                                reduction="none").view(E, -1).sum(1)
        return total / torch.tensor([max(1, c) for c in counts], dtype=total.dtype)

    def _clip(self) -> torch.Tensor:
        """Scale each member's gradients to its own norm limit, as ``clip_grad_norm_``; returns the norms (E,)."""
        grads = [p.grad for p in self.params.values()]
        norms = torch.linalg.vector_norm(torch.stack([g.flatten(1).norm(dim=1) for g in grads]), dim=0)  # (E,)
        coef = (self.members[0].cfg.optim.grad_clip / (norms + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(coef.view(-1, *[1] * (g.ndim - 1)))
        return norms

    @torch.no_grad()
    def _adamw(self, step: int, lrs: torch.Tensor) -> None:
        """One AdamW update of every member (``step`` counts updates from 1), torch.optim.AdamW's arithmetic."""
        o = self.members[0].cfg.optim
        bc1, bc2_sqrt = 1 - o.beta1 ** step, math.sqrt(1 - o.beta2 ** step)
        for n, p in self.params.items():
            shape = (-1, *[1] * (p.ndim - 1))
            lr = lrs.view(shape)
            if decays(p[0]):  # as the solo optimizer
                p.mul_(1 - lr * o.weight_decay)
            m, v, g = self.moments.exp_avg[n], self.moments.exp_avg_sq[n], p.grad
            assert g is not None  # every stacked weight is used by the forward
            m.lerp_(g, 1 - o.beta1)
            v.mul_(o.beta2).addcmul_(g, g, value=1 - o.beta2)
            denom = (v.sqrt() / bc2_sqrt).add_(EPS)
            p.sub_(m / denom * (lr / bc1))

    def fit(self) -> None:
        bar = progress_bar(self.steps, f"train {self.size} models", "step", self.progress)
        logs = [open(m.run / "metrics.jsonl", "a") for m in self.members]
        t0 = time.perf_counter()
        if bar is not None:
            bar.update(self.start)
        try:
            for step in range(self.start, self.steps):
                lrs = torch.tensor([lr_at(step, m.cfg) for m in self.members])
                ids, labels, counts = self.batch(step)
                for p in self.params.values():
                    p.grad = None
                loss = self.losses(ids, labels, counts)  # (E,)
                loss.sum().backward()  # members share no weights: each gets its own gradient
                norms = self._clip()
                self._adamw(step + 1, lrs)
                values = loss.detach().tolist()
                bad = [m.run for m, v in zip(self.members, values) if not math.isfinite(v)]
                if bad:
                    raise HeadlabError(f"{bad[0]}: the loss became non-finite at step {step + 1}; lower its lr")
                for fh, v, lr, g in zip(logs, values, lrs.tolist(), norms.tolist()):
                    fh.write(json.dumps({"step": step + 1, "loss": v, "lr": lr, "grad_norm": g}) + "\n")
                for cb in self.callbacks:
                    cb.on_step(self, step + 1, values)
                for i, due in enumerate(self.ckpt_steps):
                    if step + 1 in due:
                        logs[i].flush()
                        self.save(i, step + 1)
                if bar is not None:
                    bar.update(1)
            for m, model in zip(self.members, self.models):
                ckpt.save_final(m.run, model)
        finally:
            if bar is not None:
                bar.close()
            for fh in logs:
                fh.close()
            for m in self.members:
                m.lock.release()
        self.wall_s = time.perf_counter() - t0

    def optimizer(self, i: int, step: int) -> torch.optim.AdamW:
        """Member ``i``'s AdamW as its solo run would hold it after ``step`` updates (for its checkpoint)."""
        m = self.members[i]
        named = list(self.models[i].named_parameters())
        opt = adamw(self.models[i], m.cfg, lr=lr_at(step - 1, m.cfg))
        for n, p in named:
            opt.state[p] = {"step": torch.tensor(float(step)), "exp_avg": self.moments.exp_avg[n][i].clone(),
                            "exp_avg_sq": self.moments.exp_avg_sq[n][i].clone()}
        return opt

    def save(self, i: int, step: int) -> None:
        m = self.members[i]
        ckpt.save(m.run, step, self.models[i], self.optimizer(i, step),
                  {"data_position": {"step": step, "seed": m.cfg.optim.seed}})


def _bind_views(model: Transformer, params: stacked.Stack, i: int) -> None:
    """Make ``model``'s parameters views of member ``i`` of the stacked tensors (ties kept)."""
    for name, full in params.items():
        owner, _, leaf = name.rpartition(".")
        module = model.get_submodule(owner)
        setattr(module, leaf, torch.nn.Parameter(full.data[i], requires_grad=False))
    if model.cfg.tie_embeddings:
        model.lm_head.weight = model.embed.weight
