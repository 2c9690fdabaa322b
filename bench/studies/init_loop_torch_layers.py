"""The independent check: torch's own nn.TransformerEncoderLayer (pre-norm, causal mask, 2 layers, d = 128,
4 heads, its default init; embeddings N(0, 1), untied output) trained in the same plain loop (init_loop.py) on
headlab's dense examples.

    python bench/studies/init_loop_torch_layers.py DEPTH DISTRACTORS STEPS
"""

from __future__ import annotations

import sys

import torch
import torch.nn as nn
from init_loop import train_loop

from headlab.retrieval.training import RetrievalTask


class TorchLayers(nn.Module):
    def __init__(self, vocab: int, length: int, d: int = 128) -> None:
        super().__init__()
        self.emb, self.pos = nn.Embedding(vocab, d), nn.Embedding(length + 4, d)
        self.layers = nn.ModuleList([nn.TransformerEncoderLayer(d, 4, 4 * d, dropout=0.0, batch_first=True,
                                                                norm_first=True) for _ in range(2)])
        self.out = nn.Linear(d, vocab)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        t = ids.shape[1]
        x = self.emb(ids) + self.pos(torch.arange(t))  # (B, T, d)
        mask = nn.Transformer.generate_square_subsequent_mask(t)
        for layer in self.layers:
            x = layer(x, src_mask=mask, is_causal=True)
        return self.out(x)  # (B, T, V)


def main(argv: list[str]) -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    depth, distractors, steps = int(argv[0]), int(argv[1]), int(argv[2])
    task = RetrievalTask(depth=depth, curriculum="dense", n_distractors=distractors)
    m = TorchLayers(task.vocab.size, task.max_length)
    train_loop(m, m, task, steps, depth)


if __name__ == "__main__":
    main(sys.argv[1:])
