"""The plain training loop of the init-plateau study (results/retrieval/init/loop): AdamW 1e-3, no warm-up or
decay, batches of 32 of headlab's dense retrieval examples, held-out per-hop accuracy every 500 steps. Shared by
init_loop_headlab_model.py and init_loop_torch_layers.py, so the two models see the same loop."""

from __future__ import annotations

import time
from typing import Callable

import torch
import torch.nn as nn

from headlab.retrieval.training import RetrievalSource, RetrievalTask, eval_set, score_hops


def train_loop(model: nn.Module, logits_of: Callable[[torch.Tensor], torch.Tensor], task: RetrievalTask,
               steps: int, depth: int) -> None:
    """Print step, loss, per-hop held-out accuracy and seconds every 500 steps."""
    src, vocab = RetrievalSource(task), task.vocab.size
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    held_out = eval_set(task, 256, 10**6, depth)
    t0 = time.time()
    for step in range(1, steps + 1):
        ids, _, labels = src.batch(step, 32, 0)
        logits = logits_of(ids)[:, :-1]  # (B, T-1, V)
        loss = nn.functional.cross_entropy(logits.reshape(-1, vocab), labels.reshape(-1), ignore_index=-100)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 500 == 0:
            with torch.no_grad():
                model.eval()
                preds = list(logits_of(torch.tensor([e["tokens"] for e in held_out])).argmax(-1))
                model.train()
            print(step, round(loss.item(), 3), score_hops(held_out, preds), round(time.time() - t0), flush=True)
