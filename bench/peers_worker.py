"""One cell of the peers benchmark, run in the tool's own virtual environment (so it imports only that tool):
load the model folder, score every head for previous-token, duplicate-token and induction over the given token
windows (batches of B), and print one JSON line: wall time of the scoring (the load excluded), the peak resident
memory above the loaded model, and the (L, H) scores averaged over the windows.

    python bench/peers_worker.py TOOL MODEL_DIR IDS_JSON BATCH

TOOL: ``headlab`` (the census, default route), ``transformers`` (``output_attentions=True``, scored in numpy),
``transformerlens`` (``TransformerBridge.boot_transformers`` + ``run_with_cache``, scored with TransformerLens's
own detection patterns and ``compute_head_attention_similarity_score``, as ``detect_head`` does) or ``nnsight``
(the eager attention modules' probabilities saved inside ``model.trace``, scored in numpy). Every tool gets the
same token ids. Formulas (TransformerLens's "mul"): sum(A * P) / sum(A) per head and window, sum(A) being the
number of queries.

Each tool is called as its users call it: the peers once per batch (a forward is their unit of work), headlab once
for all the windows, batched by B, as ``headlab.scan`` does (the capture is installed once, not once a batch).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from typing import Any, Callable

import numpy as np
import torch

DETECTORS = ("previous-token", "duplicate-token", "induction")


class PeakRSS:
    """The largest resident set size seen while it runs, sampled every 5 ms (the kernel's high-water mark cannot
    be reset after the model's load)."""

    def __init__(self) -> None:
        self.base = self.peak = self.now()
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._watch, daemon=True)

    @staticmethod
    def now() -> int:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    def _watch(self) -> None:
        while not self.done.wait(0.005):
            self.peak = max(self.peak, self.now())

    def __enter__(self) -> "PeakRSS":
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.done.set()
        self.thread.join()
        self.peak = max(self.peak, self.now())


def patterns(tokens: np.ndarray) -> dict[str, np.ndarray]:
    """(T, T) 0/1 detection patterns of one window, TransformerLens's definitions written in numpy."""
    T = len(tokens)
    same = tokens[:, None] == tokens[None, :]
    earlier = np.tri(T, k=-1, dtype=bool)
    dup = same & earlier
    ind = np.zeros((T, T), dtype=bool)
    ind[:, 1:] = dup[:, :-1]  # key j reads token j - 1: the duplicate pattern shifted right
    prev = np.eye(T, k=-1, dtype=bool)
    return {"previous-token": prev, "duplicate-token": dup, "induction": ind & np.tri(T, dtype=bool)}


def score_probs(probs: list[np.ndarray], tokens: np.ndarray) -> dict[str, np.ndarray]:
    """Per detector (B, L, H) from each layer's (B, H, T, T) probabilities."""
    out: dict[str, list[np.ndarray]] = {d: [] for d in DETECTORS}
    for b, toks in enumerate(tokens):
        pats = patterns(toks)
        for d in DETECTORS:
            out[d].append(np.stack([np.einsum("hij,ij->h", p[b], pats[d]) / p.shape[-1] for p in probs]))
    return {d: np.stack(v) for d, v in out.items()}


Scorer = Callable[[np.ndarray, int], dict[str, np.ndarray]]  # (windows, batch size) -> per detector (N, L, H)


def per_batch(score: Callable[[np.ndarray], dict[str, np.ndarray]]) -> Scorer:
    """A peer's per-forward scorer run over every window in batches of B."""

    def run(ids: np.ndarray, batch: int) -> dict[str, np.ndarray]:
        parts = [score(ids[i:i + batch]) for i in range(0, len(ids), batch)]
        return {d: np.concatenate([p[d] for p in parts]) for d in DETECTORS}

    return run


def run_headlab(model_dir: str) -> Scorer:
    from headlab.census.engine import score_samples
    from headlab.corpus import Sample
    from headlab.detectors import make
    from headlab.models import load

    lm = load(model_dir)

    def score(tokens: np.ndarray, batch: int) -> dict[str, np.ndarray]:
        samples = [Sample(i, "peers", 0, tuple(int(x) for x in t)) for i, t in enumerate(tokens)]
        parts = [s for _, s in score_samples(lm, [make(d) for d in DETECTORS], samples, batch_size=batch)]
        return {d: np.concatenate([p[d] for p in parts]) for d in DETECTORS}

    return score


def _auto(model_dir: str) -> Any:
    """The model class a user of transformers would load: a causal LM, or the bare model of an encoder."""
    from transformers import AutoConfig, AutoModel, AutoModelForCausalLM

    archs = AutoConfig.from_pretrained(model_dir).architectures or []
    return AutoModelForCausalLM if any(a.endswith("ForCausalLM") for a in archs) else AutoModel


def run_transformers(model_dir: str) -> Scorer:
    model = _auto(model_dir).from_pretrained(model_dir, attn_implementation="eager").eval()

    def score(tokens: np.ndarray) -> dict[str, np.ndarray]:
        with torch.inference_mode():
            out = model(torch.from_numpy(tokens), output_attentions=True, use_cache=False)
        return score_probs([a.float().numpy() for a in out.attentions], tokens)

    return per_batch(score)


def run_transformerlens(model_dir: str) -> Scorer:
    from transformer_lens.head_detector import (
        compute_head_attention_similarity_score,
        get_duplicate_token_head_detection_pattern,
        get_induction_head_detection_pattern,
        get_previous_token_head_detection_pattern,
    )
    from transformer_lens.model_bridge import TransformerBridge

    bridge = TransformerBridge.boot_transformers(model_dir, device="cpu")
    makers = {"previous-token": get_previous_token_head_detection_pattern,
              "duplicate-token": get_duplicate_token_head_detection_pattern,
              "induction": get_induction_head_detection_pattern}
    L, H = bridge.cfg.n_layers, bridge.cfg.n_heads

    def score(tokens: np.ndarray) -> dict[str, np.ndarray]:
        with torch.inference_mode():
            _, cache = bridge.run_with_cache(torch.from_numpy(tokens))
        out = {d: np.zeros((len(tokens), L, H)) for d in DETECTORS}
        for b, toks in enumerate(tokens):
            pats = {d: make(torch.from_numpy(toks)[None]) for d, make in makers.items()}
            for layer in range(L):
                layer_pattern = cache["pattern", layer][b]  # (H, T, T)
                for head in range(H):
                    for d in DETECTORS:
                        out[d][b, layer, head] = compute_head_attention_similarity_score(
                            layer_pattern[head], detection_pattern=pats[d], exclude_bos=False,
                            exclude_current_token=False, error_measure="mul")
        return out

    return per_batch(score)


def run_nnsight(model_dir: str) -> Scorer:
    from nnsight import LanguageModel, NNsight

    auto = _auto(model_dir)
    if auto.__name__ == "AutoModel":  # an encoder: nnsight's wrapper of any torch module
        model = NNsight(auto.from_pretrained(model_dir, attn_implementation="eager").eval())
        attention = [layer.attention.self for layer in model.encoder.layer]
    else:
        model = LanguageModel(model_dir, attn_implementation="eager", dispatch=True)
        attention = [layer.self_attn for layer in model.model.layers]

    def score(tokens: np.ndarray) -> dict[str, np.ndarray]:
        saved = []
        with torch.inference_mode(), model.trace(torch.from_numpy(tokens)):
            for module in attention:
                saved.append(module.output[1].save())
        return score_probs([s.float().numpy() for s in saved], tokens)

    return per_batch(score)


TOOLS = {"headlab": run_headlab, "transformers": run_transformers, "transformerlens": run_transformerlens,
         "nnsight": run_nnsight}


def main(argv: list[str]) -> int:
    tool, model_dir, ids_file, batch = argv[0], argv[1], argv[2], int(argv[3])
    torch.set_num_threads(int(os.environ.get("PEERS_THREADS", "2")))
    ids = np.array(json.load(open(ids_file)), dtype=np.int64)  # (N, T)
    score = TOOLS[tool](model_dir)
    with PeakRSS() as rss:
        t0 = time.perf_counter()
        scores = score(ids, batch)
        wall = time.perf_counter() - t0
    means = {d: scores[d].mean(0).tolist() for d in DETECTORS}
    print(json.dumps({"tool": tool, "T": int(ids.shape[1]), "B": batch, "n": int(len(ids)), "wall_s": wall,
                      "peak_rss_mb": (rss.peak - rss.base) / 2**20, "scores": means}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
