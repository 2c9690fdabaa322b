"""The dense D = 2 task (one distractor chain) in a plain training loop (init_loop.py: AdamW 1e-3, batch 32, 2000
steps) on headlab's Transformer (2 layers, d = 128, 4 heads, learned positions): which of its initialization and
tying choices hold the one-lookup hop at its plateau.

    python bench/studies/init_loop_headlab_model.py tie|untie INIT [emb|lin] SEED

emb: embeddings and positions N(0, 1); lin: every linear but the output head N(0, 1/fan_in). Prints step, loss,
per-hop held-out accuracy and seconds (the logs in results/retrieval/init/loop).
"""

from __future__ import annotations

import sys

import torch
import torch.nn as nn
from init_loop import train_loop

from headlab.nn.transformer import ModelConfig, Transformer
from headlab.retrieval.training import RetrievalTask


def main(argv: list[str]) -> None:
    torch.manual_seed(int(argv[3]) if len(argv) > 3 else 0)
    torch.set_num_threads(1)
    tie, init, mode = argv[0] == "tie", argv[1] if len(argv) > 1 else "default", argv[2] if len(argv) > 2 else ""
    task = RetrievalTask(depth=2, curriculum="dense", n_distractors=1)
    m = Transformer(ModelConfig(vocab_size=task.vocab.size, n_layers=2, n_heads=4, d_model=128,
                                max_length=task.max_length, positions="learned", tie_embeddings=tie, init=init))
    if "emb" in mode:
        nn.init.normal_(m.embed.weight, std=1.0)
        nn.init.normal_(m.pos.weight, std=1.0)
    if "lin" in mode:
        for mod in m.modules():
            if isinstance(mod, nn.Linear) and mod is not m.lm_head:
                nn.init.normal_(mod.weight, std=mod.in_features ** -0.5)
    train_loop(m, lambda ids: m(ids).logits, task, 2000, 2)


if __name__ == "__main__":
    main(sys.argv[1:])
