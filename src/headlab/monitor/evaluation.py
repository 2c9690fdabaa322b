"""Does the monitor work? (``headlab monitor evaluate``): AUROC of the head monitor against attention-free
baselines, per kind of special structure, with fresh reference documents as negatives.

Reference documents fall in five folds by a hash of their id: folds 2-4 fit the profiles, fold 0 calibrates
their thresholds, fold 1 is *fresh*: never fitted nor calibrated on, it gives the negatives of every AUROC and
the calibration check (the share of fresh documents flagged at each target false-positive rate).

Kinds (real text, where installed): ``code`` (standard-library source, ``pysrc``), ``docstrings`` (``pydoc``),
``python-doc`` (reST), ``markup`` (HTML pages, ``python-html``), ``man``, ``linux-doc``, and text in another
language ``man-de``, ``man-fr``, ``man-ja``, ``man-zh`` (Debian's translated man pages). Derived from the fresh
reference prose: ``shuffled`` (words shuffled in each document), ``boilerplate`` (one sentence repeated),
``paths`` (every fourth word replaced by a file path or URL built from the document's own words),
``random-tokens`` (uniformly random vocabulary words).

Baselines (:mod:`.baselines`) are scored exactly like the heads (robust z, Ledoit-Wolf distance, the same folds).
The heads are also scored by an isolation forest on the same z-scores (``heads-forest``), the alternative to the
Ledoit-Wolf distance the profile uses. AUROC intervals: percentile bootstrap over documents. Verdict per kind, the
heads (Ledoit-Wolf) against the *best* baseline (highest AUROC): ``heads better`` / ``baseline better`` when the
intervals do not overlap, else ``tie``.
"""

from __future__ import annotations

import random
import tempfile
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from headlab.monitor.baselines import baselines, per_document
from headlab.monitor.calibration import calibration_curve
from headlab.monitor.fingerprint import (
    MONITOR_DETECTORS,
    choose_features,
    column_means,
    fingerprints,
    read_columns,
    scanned,
)
from headlab.monitor.profile import ForestScorer, fit_profile, fold
from headlab.monitor.settings import MONITOR

#: real kinds and the named corpus each one reads; derived kinds are built from fresh reference prose
REAL = {"code": "pysrc", "docstrings": "pydoc", "python-doc": "python-doc", "markup": "python-html", "man": "man",
        "linux-doc": "linux-doc", "man-de": "man-de", "man-fr": "man-fr", "man-ja": "man-ja", "man-zh": "man-zh"}
DERIVED = ("shuffled", "boilerplate", "paths", "random-tokens")
KINDS = (*REAL, *DERIVED)
FRESH = 1  # the fold kept out of fitting and calibration


def installed_kinds(kinds: Sequence[str] | None) -> list[str]:
    """``kinds`` checked before any work: a named kind whose corpus is missing is an error; ``None`` means
    every kind whose corpus is installed (the missing ones are named on stderr)."""
    import sys

    from headlab.corpus import documents
    from headlab.errors import HeadlabError

    out = []
    for kind in KINDS if kinds is None else kinds:
        try:
            if kind in REAL:
                documents([REAL[kind]])
            out.append(kind)
        except HeadlabError as exc:
            if kinds is not None:
                raise HeadlabError(f"--kinds {kind}: {exc}; or leave {kind} out") from None
            print(f"headlab: kind {kind} skipped: {exc}", file=sys.stderr)
    return out


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

    def auc(a: np.ndarray, b: np.ndarray) -> float:
        return float(roc_auc_score(np.r_[np.zeros(len(a)), np.ones(len(b))], np.r_[a, b]))

    boots = [auc(rng.choice(neg, len(neg)), rng.choice(pos, len(pos))) for _ in range(n_boot)]
    lo, hi = np.percentile(boots, [2.5, 97.5])
    return [auc(neg, pos), float(lo), float(hi)]


class _Scorer:
    """The heads' and each baseline's fingerprints of a scanned corpus, and their profiles' scores."""

    def __init__(self, loaded: Any, features: list[str]):
        self.loaded, self.features, self.base = loaded, features, baselines(loaded)

    def matrices(self, path: Path) -> tuple[dict[str, np.ndarray], list[str], dict[str, str]]:
        """{method: (documents x features)}, document ids, and each document's text (windows joined)."""
        X, docs, _ = fingerprints(path, self.features)
        rows = read_columns(path, ["doc", "ids"])
        texts = [self.loaded.tokenizer.decode(list(ids), skip_special_tokens=True) for ids in rows["ids"]]
        out = {"heads": X}
        for name, (_, values) in self.base.items():
            out[name], bdocs = per_document(rows, values(rows, texts))
            assert bdocs == docs, "baseline and head documents differ"
        joined: dict[str, list[str]] = {}
        for d, t in zip(rows["doc"], texts):
            joined.setdefault(str(d), []).append(t)
        return out, docs, {d: " ".join(t) for d, t in joined.items()}


def evaluate(model: Any, reference: Sequence[str], kinds: Sequence[str], *, max_samples: int = 3000,
             kind_samples: int = 200, per_detector: int = MONITOR.per_detector, fpr: float = MONITOR.fpr,
             seed: int = MONITOR.seed, batch_size: int = MONITOR.batch_size,
             progress: bool = True, device: str = "cpu", figure: Path | None = None,
             id_field: str | None = MONITOR.id_field) -> dict[str, Any]:
    from headlab.models import load

    loaded = model if not isinstance(model, str) else load(model, lm_head=True, device=device)
    scan_args = (seed, batch_size, 128, progress, device, MONITOR_DETECTORS, id_field)
    with scanned(loaded, reference, max_samples, *scan_args) as (path, _):
        scorer = _Scorer(loaded, choose_features(column_means(path), per_detector))
        mats, docs, texts = scorer.matrices(path)
    fresh = np.array([fold(d) == FRESH for d in docs])
    names = {"heads": scorer.features, **{k: list(v[0]) for k, v in scorer.base.items()}}
    profiles: dict[str, Any] = {m: fit_profile(M, docs, names[m], fpr, exclude=fresh, model=loaded.name,
                                                   corpus=list(reference), settings={}) for m, M in mats.items()}
    profiles["heads-forest"] = ForestScorer(profiles["heads"], mats["heads"], docs, fresh, seed)
    mats["heads-forest"] = mats["heads"]
    neg = {m: profiles[m].scores(M[fresh]) for m, M in mats.items()}
    prose = [texts[d] for d, f in zip(docs, fresh) if f]
    rng, nrng = random.Random(seed), np.random.default_rng(seed)
    vocab = [t for t in loaded._vocab_tokens if t.isalpha()]
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
            with scanned(loaded, [spec], kind_samples, *scan_args) as (kpath, _):
                kmats, _, _ = scorer.matrices(kpath)
            kmats["heads-forest"] = kmats["heads"]
            table[kind] = _kind_row(profiles, neg, kmats, list(scorer.base), nrng)
    calib = calibration_curve(profiles["heads"], neg["heads"], figure, loaded.name)
    return {"model": loaded.name, "reference": list(reference), "fpr": fpr, "features": len(scorer.features),
            "detectors": list(MONITOR_DETECTORS), "reference_documents": len(docs),
            "fitted_documents": profiles["heads"].n_fit, "calibration_documents": profiles["heads"].n_calibration,
            "fresh_documents": int(fresh.sum()), "calibration": calib,
            "baselines": {k: list(v[0]) for k, v in scorer.base.items()}, "kinds": table}


def _kind_row(profiles: dict[str, Any], neg: dict[str, np.ndarray], kmats: dict[str, np.ndarray],
              baseline_names: list[str], rng: np.random.Generator) -> dict[str, Any]:
    pos = {m: profiles[m].scores(M) for m, M in kmats.items()}
    auroc = {m: _auroc(neg[m], pos[m], rng) for m in pos}
    recall = {m: float((pos[m] > profiles[m].threshold).mean()) for m in pos}
    best = max(baseline_names, key=lambda m: auroc[m][0])
    h, b = auroc["heads"], auroc[best]
    verdict = "heads better" if h[1] > b[2] else "baseline better" if b[1] > h[2] else "tie"
    return {"documents": len(pos["heads"]), "auroc": auroc, "recall_at_fpr": recall, "best_baseline": best,
            "verdict": verdict}


def markdown(r: dict[str, Any]) -> str:
    at = f"{100 * r['fpr']:.0f}% FPR"
    methods = ["heads", "heads-forest", *r["baselines"]]
    head = " | ".join(f"{m} AUROC [95%]" for m in methods)
    lines = [f"| kind | documents | {head} | recall @ {at} ({', '.join(methods)}) | verdict: heads vs best baseline |",
             "|---|---|" + "---|" * len(methods) + "---|---|"]
    for kind, v in r["kinds"].items():
        cells = " | ".join(f"{a[0]:.2f} [{a[1]:.2f}, {a[2]:.2f}]" for a in (v["auroc"][m] for m in methods))
        recall = " / ".join(f"{v['recall_at_fpr'][m]:.2f}" for m in methods)
        lines.append(f"| {kind} | {v['documents']} | {cells} | {recall} | {v['verdict']} ({v['best_baseline']}) |")
    c = r["calibration"]
    lines += ["", f"Calibration on {r['fresh_documents']} fresh reference documents: at the {at} target "
              f"{100 * c['flag_rate_at_fpr']:.1f}% flagged [{100 * c['interval_at_fpr'][0]:.1f}, "
              f"{100 * c['interval_at_fpr'][1]:.1f}] (Wilson 95%); within [0.5%, 2%]: {c['within_band']}."]
    return "\n".join(lines) + "\n"
