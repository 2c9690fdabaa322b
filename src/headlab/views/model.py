"""A pretrained model's view, and a scan folder's: maps on texts, scores from one :class:`ScanResult`.

A scan folder's page reads the scores its ``scan.json`` holds and shows windows of the corpus that scan read; a
model given alone is scanned on the texts shown (there is no result to read).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np

from headlab.census.result import ScanResult
from headlab.census.scanner import scan
from headlab.census.stats import SDH
from headlab.corpus import DEFAULT_CORPUS, TEXT_FIELD, Sampler, documents
from headlab.errors import HeadlabError
from headlab.models import resolve
from headlab.models.loaded import LoadedModel
from headlab.probes import make_suite
from headlab.progress import bar as progress_bar
from headlab.result import found_in
from headlab.views.data import ViewData, store_maps, text_sample
from headlab.views.sources import FolderSource, Shown, register_source

#: scan.json entries the viewer does not colour heads by: a spread, a run length and an index, not scores
NOT_SHOWN = ("token_std", "token_max_run", "offset_delta")


def default_texts(loaded: Any, seed: int, n_stimuli: int = 3, n_windows: int = 3) -> list[tuple[str, str]]:
    """(name, text): ``n_windows`` windows of the default corpus that contain '/', then ``n_stimuli`` slash
    stimuli."""

    out: list[tuple[str, str]] = []
    try:
        sampler = Sampler(loaded.tokenizer, min(96, loaded.facts.max_length), seed=seed,
                          target_ids=loaded.ids_containing("/"), target_filter="with-target")
        for k, s in enumerate(sampler.samples(documents(list(DEFAULT_CORPUS)), n_windows)):
            out.append((f"corpus window {k} with '/'", loaded.tokenizer.decode(s.input_ids, skip_special_tokens=True)))
    except HeadlabError:
        pass  # no default corpus installed: the stimuli still show the '/' tokens
    for k, st in enumerate(make_suite("slash", n_stimuli, seed)):
        out.append((f"slash stimulus {k} ({st.meta.get('category', st.template)})", st.text))
    return out


def scanned_texts(loaded: Any, scanned: ScanResult, n_windows: int = 3) -> list[tuple[str, str]]:
    """(name, text): the first ``n_windows`` windows the scan drew from its own corpus (its seed, filter, target
    and record fields), so the page shows what was scanned; none where the scan read no corpus it names (given
    texts, stimuli) or its corpus cannot be read here."""
    st = scanned.settings
    if not isinstance(st.get("corpus"), list):
        return []
    rule = st.get("sdh_rule") or {}
    targets = loaded.ids_containing(rule["target"]) if rule.get("target") else frozenset()
    try:
        sampler = Sampler(loaded.tokenizer, min(96, loaded.facts.max_length), seed=st.get("seed", 0),
                          target_ids=targets, target_filter=st.get("filter", "any"))
        docs = documents(st["corpus"], st.get("id_field"), st.get("text_field") or TEXT_FIELD)
        return [(f"scanned corpus window {k}", loaded.tokenizer.decode(w.input_ids, skip_special_tokens=True))
                for k, w in enumerate(sampler.samples(docs, n_windows))]
    except HeadlabError:
        return []


def scan_scores(heads: list[dict[str, Any]], L: int, H: int) -> dict[str, np.ndarray]:
    """Every per-head score a scan holds as an (L, H) array: every detector it ran, built in or registered."""
    out = {}
    for k, v in heads[0]["scores"].items():
        if k not in NOT_SHOWN and (v is None or isinstance(v, (int, float))):
            a = np.full((L, H), np.nan)
            for h in heads:
                v = h["scores"].get(k)
                a[h["layer"], h["head"]] = np.nan if v is None else v
            out[k] = a
    return out


def from_model(source: str | LoadedModel, texts: Sequence[tuple[str, str]] | None, scanned: ScanResult | None,
               device: str, progress: bool, scale: str, dtype: str) -> ViewData:
    """A pretrained model (loaded in ``dtype`` when given by name): maps on ``texts`` (default:
    :func:`default_texts`), scores from ``scanned`` when given (a corpus scan), else from a scan of the shown
    texts themselves; either way read from one :class:`ScanResult`."""

    loaded = resolve(source, device=device, dtype=dtype)
    texts = list(texts or (scanned_texts(loaded, scanned) if scanned is not None else [])
                 or default_texts(loaded, seed=0))
    samples = [text_sample(loaded, t, name) for name, t in texts]
    L, H = loaded.facts.n_layers, loaded.facts.n_heads
    if scanned is not None:
        r, note = scanned, (f"Scores: corpus scan of {scanned.n_samples} samples ({scanned.n_samples_with_target} "
                            "with '/'); SDH = the strict rule of that scan.")
    else:  # the strict rule's k, or every shown text where fewer are shown
        k = min(SDH.consecutive, len(texts))
        r = scan(loaded, texts=[t for _, t in texts], max_samples=None, progress=False, device=device,
                 max_length=loaded.facts.max_length, consecutive=k)
        note = (f"Scores: the {len(texts)} shown texts only (pass a scan folder for corpus scores); "
                f"SDH rule with {k} consecutive samples.")
    data = ViewData(title=f"headlab · {loaded.name}", subtitle=f"{L} layers × {H} heads, {loaded.facts.kind}",
                    kind="scan" if scanned is not None else "model", n_layers=L, n_heads=H,
                    causal=loaded.facts.causal, samples=samples, steps=[None], scores=[scan_scores(r.heads(), L, H)],
                    sdh=r.sdh, notes=[note], scale=scale)
    bar = progress_bar(1, f"view {loaded.name}: attention maps", "model", progress)
    store_maps(data, loaded, 0)
    if bar is not None:
        bar.update(1)
        bar.close()
    return data


def from_scan(folder: Path, shown: Shown) -> ViewData:
    """A scan folder: the scores of its ``scan.json``, maps on windows of the corpus it scanned (in the dtype its
    scores were measured in)."""
    scanned = ScanResult.read(folder)
    return from_model(scanned.model, shown.texts, scanned, shown.device, shown.progress, shown.scale,
                      scanned.settings.get("dtype", "float32"))


register_source(FolderSource("scan", "a scan folder (scan.json)", lambda p: ScanResult in found_in(p), from_scan,
                             rank=2))
