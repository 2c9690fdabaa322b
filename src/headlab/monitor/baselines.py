"""Attention-free baselines the head monitor is judged against, computed on the very windows the heads saw.

* ``characters``: per window the shares of letters, digits, whitespace, punctuation, upper case and non-ASCII
  characters and the mean word length of its decoded text;
* ``loss`` (decoders): per window the model's own mean next-token cross-entropy (nats) over its real tokens,
  i.e. log-perplexity.

Both are averaged per document, as the heads' fingerprints are, and scored by the same profile machinery.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import torch

from headlab.padding import pad_right

CHAR_FEATURES = ("letters", "digits", "whitespace", "punctuation", "upper", "non-ascii", "word-length")


def char_features(text: str) -> list[float]:
    n = max(1, len(text))
    words = text.split()
    return [sum(c.isalpha() for c in text) / n, sum(c.isdigit() for c in text) / n,
            sum(c.isspace() for c in text) / n, sum((not c.isalnum()) and not c.isspace() for c in text) / n,
            sum(c.isupper() for c in text) / n, sum(ord(c) > 127 for c in text) / n,
            float(np.mean([len(w) for w in words])) if words else 0.0]


def window_losses(loaded: Any, ids: list[list[int]], batch_size: int = 8) -> np.ndarray:
    """Mean next-token cross-entropy (nats) of each window under the model (a decoder with its LM head)."""
    out = []
    dev = next(loaded.model.parameters()).device
    pad = loaded.tokenizer.pad_token_id if loaded.tokenizer.pad_token_id is not None else 0
    with torch.no_grad():
        for i in range(0, len(ids), batch_size):
            x, m = pad_right(ids[i:i + batch_size], int(pad))
            logits = loaded.model(input_ids=x.to(dev), attention_mask=m.long().to(dev), use_cache=False).logits
            nll = torch.nn.functional.cross_entropy(logits[:, :-1].float().transpose(1, 2), x[:, 1:].to(dev),
                                                    reduction="none")  # (B, T-1)
            valid = m[:, 1:].to(dev).float()
            out.append((nll * valid).sum(1) / valid.sum(1).clamp_min(1))
    return torch.cat(out).cpu().numpy().astype(np.float64) if out else np.zeros(0)


def per_document(rows: Any, values: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Mean of per-window ``values`` (windows x k) per document, documents sorted by id."""
    import pandas as pd

    df = pd.DataFrame(values.reshape(len(rows), -1))
    df["doc"] = rows["doc"].to_numpy()
    means = df.groupby("doc", sort=True).mean()
    return means.to_numpy(dtype=np.float64), [str(d) for d in means.index]


def baselines(loaded: Any) -> dict[str, tuple[tuple[str, ...], Callable[[Any, list[str]], np.ndarray]]]:
    """The baselines that apply to ``loaded``: name -> (feature names, per-window values from (rows, texts))."""
    out: dict[str, tuple[tuple[str, ...], Callable[[Any, list[str]], np.ndarray]]] = {
        "characters": (CHAR_FEATURES, lambda rows, texts: np.array([char_features(t) for t in texts]))}
    if loaded.facts.causal and loaded.model.get_output_embeddings() is not None:
        out["loss"] = (("loss",), lambda rows, texts: window_losses(loaded, [list(i) for i in rows["ids"]])[:, None])
    return out
