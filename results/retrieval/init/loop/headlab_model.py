"""The dense D = 2 task (one distractor chain) in a plain training loop (AdamW 1e-3, no warm-up or decay, batch
32, 2000 steps) on headlab's Transformer (2 layers, d = 128, 4 heads, learned positions): which of its
initialization and tying choices hold the one-lookup hop at its plateau. Usage:
python headlab_model.py tie|untie INIT [emb|lin] SEED   (emb: embeddings and positions N(0, 1); lin: every linear
but the output head N(0, 1/fan_in)). Prints step, loss, per-hop held-out accuracy, seconds."""
import sys, time, torch, torch.nn as nn
from headlab.retrieval.training import RetrievalTask, RetrievalSource, eval_set, score_hops
from headlab.nn.transformer import ModelConfig, Transformer
torch.manual_seed(int(sys.argv[4]) if len(sys.argv) > 4 else 0); torch.set_num_threads(1)
tie = sys.argv[1] == "tie"; init = sys.argv[2] if len(sys.argv) > 2 else "default"
task = RetrievalTask(depth=2, curriculum="dense", n_distractors=1)
src = RetrievalSource(task); V = task.vocab.size
m = Transformer(ModelConfig(vocab_size=V, n_layers=2, n_heads=4, d_model=128, max_length=task.max_length, positions="learned", tie_embeddings=tie, init=init))
mode = sys.argv[3] if len(sys.argv) > 3 else ""
if "emb" in mode:
    nn.init.normal_(m.embed.weight, std=1.0); nn.init.normal_(m.pos.weight, std=1.0)
if "lin" in mode:
    for mod in m.modules():
        if isinstance(mod, nn.Linear) and mod is not m.lm_head: nn.init.normal_(mod.weight, std=mod.in_features ** -0.5)
opt = torch.optim.AdamW(m.parameters(), lr=1e-3, weight_decay=0.01)
ev = eval_set(task, 256, 10**6, 2); t0 = time.time()
for step in range(1, 2001):
    ids, mask, labels = src.batch(step, 32, 0)
    logits = m(ids).logits[:, :-1]
    loss = nn.functional.cross_entropy(logits.reshape(-1, V), labels.reshape(-1), ignore_index=-100)
    opt.zero_grad(); loss.backward(); opt.step()
    if step % 500 == 0:
        with torch.no_grad():
            m.eval(); preds = list(m(torch.tensor([e["tokens"] for e in ev])).logits.argmax(-1)); m.train()
        print(step, round(loss.item(), 3), score_hops(ev, preds), round(time.time() - t0), flush=True)
