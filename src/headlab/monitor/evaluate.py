"""Does the monitor work? (``headlab monitor evaluate``): AUROC of the head monitor against an attention-free
baseline, per kind of special structure, on held-out reference documents as negatives.

Kinds (real text or derived from it): ``code`` (pydoc), ``python-doc`` (reST documentation), ``man`` (man
pages), where Debian installed them; derived from held-out reference prose: ``shuffled`` (words shuffled in each
document), ``boilerplate`` (one sentence repeated), ``paths`` (every fourth word replaced by a file path or URL
built from the document's own words), ``random-tokens`` (uniformly random vocabulary tokens, decoded).

Baseline: character-class statistics of each window's text (shares of letters, digits, whitespace, punctuation,
upper case, non-ASCII, and the mean word length), averaged per document and scored exactly like the heads (robust
z, Ledoit-Wolf distance, the same held-out documents). AUROC intervals: percentile bootstrap over documents.
Verdict per kind: ``heads better`` / ``baseline better`` when the AUROC intervals do not overlap, else ``tie``.
"""

from __future__ import annotations

import random
import tempfile
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from .fingerprint import choose_features, fingerprints, scan_rows
from .profile import fit_profile, held_out

#: real kinds and the named corpus each one reads; derived kinds are built from held-out reference prose
REAL = {"code": "pydoc", "python-doc": "python-doc", "man": "man", "linux-doc": "linux-doc"}
DERIVED = ("shuffled", "boilerplate", "paths", "random-tokens")
KINDS = (*REAL, *DERIVED)


def char_features(text: str) -> list[float]:
    n = max(1, len(text))
    words = text.split()
    return [sum(c.isalpha() for c in text) / n, sum(c.isdigit() for c in text) / n,
            sum(c.isspace() for c in text) / n, sum((not c.isalnum()) and not c.isspace() for c in text) / n,
            sum(c.isupper() for c in text) / n, sum(ord(c) > 127 for c in text) / n,
            float(np.mean([len(w) for w in words])) if words else 0.0]


def _decoded(rows: Any, tokenizer: Any) -> list[str]:
    """The text of every window (decoded once, shared by the baseline and the derived kinds)."""
    return [tokenizer.decode(list(ids), skip_special_tokens=True) for ids in rows["ids"]]


def _char_matrix(rows: Any, texts: list[str]) -> tuple[np.ndarray, list[str]]:
    import pandas as pd

    df = pd.DataFrame([char_features(t) for t in texts], columns=[f"char/{i}" for i in range(7)])
    df["doc"] = rows["doc"].to_numpy()
    means = df.groupby("doc", sort=True).mean()
    return means.to_numpy(dtype=np.float64), [str(d) for d in means.index]


def _derived(prose: list[str], kind: str, rng: random.Random, vocab: list[str]) -> list[str]:
    out = []
    for text in prose:
        words = text.split()
        if kind == "shuffled":
            rng.shuffle(words)
            out.append(" ".join(words))
        elif kind == "boilerplate":
            out.append(" ".join([" ".join(words[:12])] * 8))
        elif kind == "paths":
            out.append(" ".join(w if i % 4 else rng.choice(["/usr/share/", "https://www.", "./src/", "C:/data/"])
                                + "/".join(words[i:i + 3]).lower().strip(".,") for i, w in enumerate(words)))
        else:  # random-tokens
            out.append(" ".join(rng.choice(vocab) for _ in range(max(20, len(words)))))
    return out


def _auroc(neg: np.ndarray, pos: np.ndarray, rng: np.random.Generator, n_boot: int = 500) -> list[float]:
    from sklearn.metrics import roc_auc_score

    y = np.r_[np.zeros(len(neg)), np.ones(len(pos))]
    s = np.r_[neg, pos]
    point = float(roc_auc_score(y, s))
    boots = []
    for _ in range(n_boot):
        a, b = rng.choice(neg, len(neg)), rng.choice(pos, len(pos))
        boots.append(roc_auc_score(np.r_[np.zeros(len(a)), np.ones(len(b))], np.r_[a, b]))
    lo, hi = np.percentile(boots, [2.5, 97.5])
    return [point, float(lo), float(hi)]


def evaluate(model: Any, reference: Sequence[str], kinds: Sequence[str], *, max_samples: int = 600,
             kind_samples: int = 200, per_detector: int = 8, fpr: float = 0.01, seed: int = 0,
             progress: bool = True, device: str = "cpu") -> dict[str, Any]:
    from ..models import load

    loaded = model if not isinstance(model, str) else load(model, device=device)
    rows, _ = scan_rows(loaded, reference, max_samples, seed, 8, 128, progress, device)
    features = choose_features(rows, per_detector)
    X, docs, _ = fingerprints(rows, features)
    heads = fit_profile(X, docs, features, fpr, model=loaded.name, corpus=list(reference), settings={})
    texts = _decoded(rows, loaded.tokenizer)
    C, cdocs = _char_matrix(rows, texts)
    chars = fit_profile(C, cdocs, [f"char/{i}" for i in range(7)], fpr, model="characters",
                        corpus=list(reference), settings={})
    neg_h, neg_c = np.array(heads.calibration_scores), np.array(chars.calibration_scores)
    prose = [t for d, t in _texts(rows, texts).items() if held_out(d)]
    rng, nrng = random.Random(seed), np.random.default_rng(seed)
    vocab = [t for t in loaded.tokenizer.convert_ids_to_tokens(list(range(len(loaded.tokenizer))))
             if isinstance(t, str) and t.isalpha()]
    table = {}
    with tempfile.TemporaryDirectory(prefix="headlab-eval-") as tmp:
        for kind in kinds:
            spec = REAL.get(kind, kind)
            if kind in DERIVED:  # one file per text: a document each
                folder = Path(tmp) / kind
                folder.mkdir()
                for i, text in enumerate(_derived(prose, kind, rng, vocab)):
                    (folder / f"{i:05d}.txt").write_text(text)
                spec = str(folder)
            krows, _ = scan_rows(loaded, [spec], kind_samples, seed, 8, 128, progress, device)
            KX, _, _ = fingerprints(krows, features)
            KC, _ = _char_matrix(krows, _decoded(krows, loaded.tokenizer))
            ph, pc = heads.scores(KX), chars.scores(KC)
            h, c = _auroc(neg_h, ph, nrng), _auroc(neg_c, pc, nrng)
            verdict = "heads better" if h[1] > c[2] else "baseline better" if c[1] > h[2] else "tie"
            table[kind] = {"documents": len(ph), "heads_auroc": h, "baseline_auroc": c,
                           "heads_recall_at_fpr": float((ph > heads.threshold).mean()),
                           "baseline_recall_at_fpr": float((pc > chars.threshold).mean()), "verdict": verdict}
    return {"model": loaded.name, "reference": list(reference), "fpr": fpr, "features": len(features),
            "held_out_reference_documents": len(neg_h), "calibration_flag_rate": heads.calibration_flag_rate,
            "baseline": "character-class statistics (7 features), scored like the heads", "kinds": table}


def _texts(rows: Any, texts: list[str]) -> dict[str, str]:
    """The text of each document (its windows joined)."""
    out: dict[str, list[str]] = {}
    for doc, text in zip(rows["doc"], texts):
        out.setdefault(str(doc), []).append(text)
    return {d: " ".join(t) for d, t in out.items()}


def markdown(r: dict[str, Any]) -> str:
    at = f"{100 * r['fpr']:.0f}% FPR"
    lines = [f"| kind | documents | heads AUROC [95%] | baseline AUROC [95%] | heads recall @ {at} | baseline recall "
             "| verdict |", "|---|---|---|---|---|---|---|"]
    for kind, v in r["kinds"].items():
        h, c = v["heads_auroc"], v["baseline_auroc"]
        lines.append(f"| {kind} | {v['documents']} | {h[0]:.2f} [{h[1]:.2f}, {h[2]:.2f}] | {c[0]:.2f} [{c[1]:.2f}, "
                     f"{c[2]:.2f}] | {v['heads_recall_at_fpr']:.2f} | {v['baseline_recall_at_fpr']:.2f} | "
                     f"{v['verdict']} |")
    return "\n".join(lines) + "\n"
