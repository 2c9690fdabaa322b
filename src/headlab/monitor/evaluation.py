"""Does the monitor work? (``headlab monitor evaluate``): AUROC of the head monitor against attention-free
baselines, per kind of special structure, with fresh reference documents as negatives.

Reference documents fall in five folds by a hash of their id: folds 2-4 fit the profiles, fold 0 calibrates
their thresholds, fold 1 is *fresh*: never fitted nor calibrated on, it gives the negatives of every AUROC and
the calibration check (the share of fresh documents flagged at each target false-positive rate).

Kinds (real text, where installed): ``code`` (standard-library source, ``pysrc``), ``docstrings`` (``pydoc``),
``python-doc`` (reST), ``markup`` (HTML pages, ``python-html``), ``man``, ``linux-doc``, and text in another
language ``man-de``, ``man-fr``, ``man-ja``, ``man-zh`` (Debian's translated man pages). Derived from the fresh
reference prose: the record-level anomalies of :mod:`.anomalies` (shuffled words, boilerplate, paths, random
tokens, duplicated lines, navigation, mojibake, HTML leftovers, code in prose, truncated records, URL lists).

Window baselines (:mod:`.baselines`: characters, the model's own loss) are scored exactly like the heads (robust
z, Ledoit-Wolf distance, the same folds); document baselines (Gopher rules, C4 rules, a word-bigram perplexity in
the manner of CCNet's, which uses a 5-gram) score each record's own text, their thresholds calibrated on the same
held-out fold. The heads are also scored by an isolation forest on the same z-scores (``heads-forest``). AUROC
intervals: percentile bootstrap over documents. Verdict per kind, the heads (Ledoit-Wolf) against the *best*
baseline (highest AUROC), by the rule book's ``monitor.kind``: ``heads better`` / ``baseline better`` when the
AUROC difference is at least the rule's margin and its paired bootstrap interval (``heads_vs_best``) excludes
zero, else ``tie``. **heads + best**: the heads and the best baseline combined without any anomaly labels
(Fisher's method on each one's p-value against the held-out calibration documents); its gain over the best
baseline alone has a paired bootstrap interval, and the heads *add information* to that baseline where the
interval is above 0. **Every signal**: the heads and every baseline combined without labels and without choosing
one (each record's rarest signal: its smallest calibrated p-value, continued past the calibration's range;
Tippett's method), against each signal alone, with the signal that flags
each record; every document's score of every detector is kept in ``scores.npz``.
"""

from __future__ import annotations

import random
import tempfile
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from headlab.corpus import documents
from headlab.errors import HeadlabError
from headlab.models import resolve
from headlab.monitor import anomalies
from headlab.monitor.baselines import DOCUMENT_BASELINES, DROPS_AT, baselines, per_document
from headlab.monitor.calibration import calibration_curve
from headlab.monitor.comparison import judge_kinds_of, kind_row
from headlab.monitor.fingerprint import (
    MONITOR_DETECTORS,
    choose_features,
    column_means,
    fingerprints,
    read_columns,
    scanned,
)
from headlab.monitor.profile import ForestScorer, fit_profile, fold, held_out
from headlab.monitor.settings import DERIVED, KINDS, REAL, EvaluateSettings
from headlab.notices import say

FRESH = 1  # the fold kept out of fitting and calibration


def installed_kinds(kinds: Sequence[str] | None) -> list[str]:
    """``kinds`` checked before any work: a named kind whose corpus is missing is an error; ``None`` means
    every kind whose corpus is installed (the missing ones are named on stderr)."""

    out = []
    for kind in KINDS if kinds is None else kinds:
        if kind not in KINDS:
            raise HeadlabError(f"--kinds {kind!r}: not a kind; choose among {', '.join(KINDS)}")
        try:
            if kind in REAL:
                documents([REAL[kind]])
            out.append(kind)
        except HeadlabError as exc:
            if kinds is not None:
                raise HeadlabError(f"--kinds {kind}: {exc}; or leave {kind} out") from None
            say(f"kind {kind} skipped: {exc}")
    return out


class ColumnScorer:
    """A document baseline's score as its anomaly score, its threshold calibrated on the held-out fold."""

    def __init__(self, M: np.ndarray, docs: list[str], exclude: np.ndarray, fpr: float):
        cal = np.array([held_out(d) for d in docs], dtype=bool) & ~exclude
        self.calibration_scores = self.scores(M[cal])
        self.threshold = float(np.quantile(self.calibration_scores, 1.0 - fpr))

    def scores(self, M: np.ndarray) -> np.ndarray:
        return M[:, 0]


def raw_texts(specs: Sequence[str], docs: Sequence[str], id_field: str | None, text_field: str) -> dict[str, str]:
    """Each scanned document's own text (its texts joined by a blank line), as a data pipeline reads it."""

    want = set(docs)
    out = {d.doc_id: "\n\n".join(d.load()) for d in documents(list(specs), id_field, text_field)
           if d.doc_id in want}
    missing = want - set(out)
    assert not missing, f"scanned documents not in the corpus: {sorted(missing)[:3]}"
    return out


class _Scorer:
    """The heads' and each baseline's fingerprints of a scanned corpus, and their profiles' scores."""

    def __init__(self, loaded: Any, features: list[str], id_field: str | None, text_field: str, batch_size: int):
        self.loaded, self.features, self.base = loaded, features, baselines(loaded, batch_size)
        self.id_field, self.text_field = id_field, text_field
        self.document: dict[str, Any] = {}

    def learn(self, reference: list[str]) -> None:
        """The document baselines, from the reference texts the profiles are fitted on."""
        self.document = {name: make(reference) for name, make in DOCUMENT_BASELINES.items()}

    def matrices(self, path: Path, specs: Sequence[str]) -> tuple[dict[str, np.ndarray], list[str], dict[str, str]]:
        """{method: (documents x features)}, document ids, and each document's own text."""
        X, docs, _ = fingerprints(path, self.features)
        rows = read_columns(path, ["doc", "ids"])
        texts = [self.loaded.tokenizer.decode(list(ids), skip_special_tokens=True) for ids in rows["ids"]]
        out = {"heads": X}
        for name, (_, values) in self.base.items():
            out[name], bdocs = per_document(rows, values(rows, texts))
            assert bdocs == docs, "baseline and head documents differ"
        raw = raw_texts(specs, docs, self.id_field, self.text_field)
        return {**out, **self.document_columns(raw, docs)}, docs, raw

    def document_columns(self, raw: dict[str, str], docs: list[str]) -> dict[str, np.ndarray]:
        """Each learned document baseline's (documents x 1) scores of the records' own texts."""
        return {name: np.array([[score(raw[d])] for d in docs]) for name, score in self.document.items()}


def _context(seed: int, loaded: Any) -> anomalies.Context:
    files = documents(["pysrc"])
    picked = random.Random(seed).sample(files, min(50, len(files)))
    return anomalies.Context(vocab=[t for t in loaded._vocab_tokens if t.isalpha()],
                             code=["\n".join(d.load()) for d in picked])


def evaluate(model: Any, settings: EvaluateSettings, kinds: Sequence[str], *, progress: bool,
             device: str, figure: Path | None = None, scores: Path | None = None) -> dict[str, Any]:
    """The evaluation record of ``model`` on the installed ``kinds`` (``settings.kinds`` resolved); with
    ``scores``, every detector's score of every document there (``fresh/METHOD``, ``calibration/METHOD``,
    ``KIND/METHOD`` arrays of an ``.npz``), so a combination can be judged again without a model."""
    st = settings
    reference, max_samples, kind_samples, per_detector, fpr = (st.reference, st.max_samples, st.kind_samples,
                                                               st.per_detector, st.fpr)
    seed, batch_size, id_field, dtype = st.seed, st.batch_size, st.id_field, st.dtype

    loaded = resolve(model, device=device, dtype=dtype, lm_head=True)
    scan_args = (seed, batch_size, 128, progress, device, MONITOR_DETECTORS, id_field)
    with scanned(loaded, reference, max_samples, *scan_args, checkpoint_every=None, dtype=dtype,
                 text_field=st.text_field) as (path, _):
        scorer = _Scorer(loaded, choose_features(column_means(path), per_detector), id_field, st.text_field,
                         batch_size)
        mats, docs, raw = scorer.matrices(path, reference)
    fresh = np.array([fold(d) == FRESH for d in docs])
    scorer.learn([raw[d] for d, f in zip(docs, fresh) if not f and not held_out(d)])
    mats.update(scorer.document_columns(raw, docs))
    names = {"heads": scorer.features, **{k: list(v[0]) for k, v in scorer.base.items()}}
    scorers: dict[str, Any] = {m: fit_profile(mats[m], docs, names[m], fpr, exclude=fresh, model=loaded.name,
                                              corpus=list(reference), settings={}) for m in names}
    scorers.update({m: ColumnScorer(mats[m], docs, fresh, fpr) for m in scorer.document})
    scorers["heads-forest"] = ForestScorer(scorers["heads"], mats["heads"], docs, fresh, seed)
    mats["heads-forest"] = mats["heads"]
    neg = {m: scorers[m].scores(M[fresh]) for m, M in mats.items()}
    prose = [raw[d] for d, f in zip(docs, fresh) if f]
    rng, nrng, ctx = random.Random(seed), np.random.default_rng(seed), _context(seed, loaded)
    erng = np.random.default_rng([seed, 1])
    kept = {f"fresh/{m}": v for m, v in neg.items()}
    kept.update({f"calibration/{m}": np.asarray(s.calibration_scores) for m, s in scorers.items()})
    baseline_names = [*scorer.base, *scorer.document]
    table = {}
    with tempfile.TemporaryDirectory(prefix="headlab-eval-") as tmp:
        for kind in kinds:
            spec = REAL.get(kind, kind)
            if kind in DERIVED:  # one file per text: a document each
                folder = Path(tmp) / kind
                folder.mkdir()
                for i, text in enumerate(anomalies.derive(prose, kind, rng, ctx)):
                    (folder / f"{i:05d}.txt").write_text(text, encoding="utf-8")
                spec = str(folder)
            with scanned(loaded, [spec], kind_samples, *scan_args, checkpoint_every=None,
                         dtype=dtype) as (kpath, _):
                kmats, _, _ = scorer.matrices(kpath, [spec])
            kmats["heads-forest"] = kmats["heads"]
            pos = {m: scorers[m].scores(M) for m, M in kmats.items()}
            kept.update({f"{kind}/{m}": v for m, v in pos.items()})
            table[kind] = kind_row(scorers, neg, pos, baseline_names, fpr, nrng, erng)
    table = judge_kinds_of(table)  # the kinds are one family: judged together
    if scores is not None:
        np.savez_compressed(scores, **kept)
    calib = calibration_curve(scorers["heads"], neg["heads"], figure, loaded.name)
    return {"model": loaded.name, "dtype": loaded.dtype,
            "reference": list(reference), "fpr": fpr, "features": len(scorer.features),
            "detectors": list(MONITOR_DETECTORS), "reference_documents": len(docs),
            "fitted_documents": scorers["heads"].n_fit, "calibration_documents": scorers["heads"].n_calibration,
            "fresh_documents": int(fresh.sum()), "calibration": calib, "baselines": baseline_names,
            "fresh_dropped": {m: float((neg[m] >= at).mean()) for m, at in DROPS_AT.items() if m in neg},
            "kinds": table}
