"""The independent check: torch's own nn.TransformerEncoderLayer (pre-norm, causal mask, 2 layers, d = 128,
4 heads, its default init; embeddings N(0, 1), untied output) trained in the same plain loop on headlab's
dense examples. Usage: python torch_layers.py DEPTH DISTRACTORS STEPS."""
import random, sys, time, torch, torch.nn as nn
from headlab.retrieval.training import RetrievalTask, RetrievalSource, eval_set, score_hops
torch.manual_seed(0); torch.set_num_threads(1)
D, dist, steps = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
task = RetrievalTask(depth=D, curriculum="dense", n_distractors=dist)
src = RetrievalSource(task)
V, T, d = task.vocab.size, task.max_length, 128
class M(nn.Module):
    def __init__(s):
        super().__init__(); s.emb = nn.Embedding(V, d); s.pos = nn.Embedding(T + 4, d)
        s.layers = nn.ModuleList([nn.TransformerEncoderLayer(d, 4, 4 * d, dropout=0.0, batch_first=True, norm_first=True) for _ in range(2)])
        s.out = nn.Linear(d, V)
    def forward(s, ids):
        t = ids.shape[1]; x = s.emb(ids) + s.pos(torch.arange(t))
        mask = nn.Transformer.generate_square_subsequent_mask(t)
        for l in s.layers: x = l(x, src_mask=mask, is_causal=True)
        return s.out(x)
m = M(); opt = torch.optim.AdamW(m.parameters(), lr=1e-3, weight_decay=0.01)
ev = eval_set(task, 256, 10**6, D)
t0 = time.time()
for step in range(1, steps + 1):
    ids, mask, labels = src.batch(step, 32, 0)
    logits = m(ids)[:, :-1]
    loss = nn.functional.cross_entropy(logits.reshape(-1, V), labels.reshape(-1), ignore_index=-100)
    opt.zero_grad(); loss.backward(); opt.step()
    if step % 500 == 0:
        with torch.no_grad():
            m.eval(); preds = [r for r in m(torch.tensor([e["tokens"] for e in ev])).argmax(-1)]; m.train()
        print(step, round(loss.item(), 3), score_hops(ev, preds), round(time.time() - t0), flush=True)
