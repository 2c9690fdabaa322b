"""The copy probe of results/formation/exploration.md: does a trained run copy, and by induction?

usage: .venv/bin/python results/formation/copy_probe.py RUN
64 windows of the run's pool, each cut to its first half and that half again (copy distance = half the
window); mean next-token loss on each half; the induction detector's top head on those windows and on the
tracker's random-token repeat probe (bos + r + r, the distance one token shorter), and the loss on its halves.
A head that copies by content scores on both; one that learned a fixed distance scores only on the first.
"""

import sys
from pathlib import Path

import numpy as np
import torch

from headlab.corpus import Sample, repeat_probe
from headlab.detectors import make
from headlab.probes.scoring import mean_scores
from headlab.training.data import load_pool
from headlab.training.run_model import load_checkpoint_model


def half_losses(model: torch.nn.Module, ids: torch.Tensor, half: int) -> tuple[float, float]:
    with torch.no_grad():
        logits = model(ids).logits
    lp = torch.log_softmax(logits[:, :-1].float(), -1).gather(-1, ids[:, 1:, None])[..., 0]
    return -lp[:, 1 : half - 1].mean().item(), -lp[:, half:].mean().item()


run = Path(sys.argv[1])
lm = load_checkpoint_model(run, None)
pool, _ = load_pool(run)
ids = pool.ids[:64]
T = ids.shape[1]
h = (T + 1) // 2
rep = torch.cat([ids[:, :h], ids[:, : T - h]], 1)
first, second = half_losses(lm.model, rep, h)
real = [Sample(i, "rep", 0, tuple(r.tolist())) for i, r in enumerate(rep)]
rand = repeat_probe(lm.tokenizer, 16, T, 0)
ind_real = np.nanmax(mean_scores(lm, [make("induction")], real)["induction"])
ind_rand = np.nanmax(mean_scores(lm, [make("induction")], rand)["induction"])
r_first, r_second = half_losses(lm.model, torch.tensor([s.input_ids for s in rand]), T // 2)
print(f"{run.name}: copied real windows: loss {first:.2f} -> {second:.2f}, top induction {ind_real:.2f}; "
      f"random-token repeats: loss {r_first:.2f} -> {r_second:.2f}, top induction {ind_rand:.2f}")
