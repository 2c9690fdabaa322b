"""The per-model parts of ``headlab claims``: the heads claim 8 ablates, and reuse of saved parts on resume.

A saved part (``MODEL/scan.json``, ``characterize.json``, ``ablate.json`` of an earlier, interrupted run) is
reused only when it is this model's (its recorded name) and the settings that shape it are the ones asked for
now; otherwise it is measured again.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np

from headlab.ablation.result import AblateResult
from headlab.census.result import ScanResult
from headlab.corpus import DEFAULT_CORPUS
from headlab.head import Head
from headlab.head import name as head_name
from headlab.study.characterize import CharacterizeResult


def ablation_heads(heads: Sequence[str], mass: np.ndarray, n_heads: int) -> tuple[list[str], list[str]]:
    """The claim heads claim 8 ablates, and those left out: by `/` mass (``mass`` (L, H)), at most half of a
    layer's heads, so that a layer-matched random control of the same size exists in every layer."""
    ranked = sorted(heads, key=lambda h: -float(np.nan_to_num(mass[Head.parse(h).layer, Head.parse(h).head],
                                                               nan=-1.0)))
    per_layer: dict[int, int] = {}
    kept, dropped = [], []
    for h in ranked:
        layer = Head.parse(h).layer
        if per_layer.get(layer, 0) < n_heads // 2:
            per_layer[layer] = per_layer.get(layer, 0) + 1
            kept.append(h)
        else:
            dropped.append(h)
    order = lambda hs: [head_name(*Head.parse(h)) for h in sorted(hs, key=Head.parse)]  # noqa: E731
    return order(kept), order(dropped)


def _same(saved: dict[str, Any], wanted: dict[str, Any]) -> bool:
    return all(saved.get(k) == v for k, v in wanted.items())


def saved_scan(folder: Path, model: str, corpus: Sequence[str] | None, scan_samples: int, seed: int,
               target_filter: str, dtype: str) -> Any:
    f = folder / ScanResult.KIND
    if not f.exists():
        return None
    sc = ScanResult.read(f)
    wanted = {"corpus": list(corpus or DEFAULT_CORPUS), "max_samples": scan_samples, "seed": seed,
              "filter": target_filter}
    same = _same(sc.settings, wanted) and sc.settings.get("dtype", "float32") == dtype  # older files: float32
    return sc if sc.model == model and same and not sc.interrupted else None


def saved_characterization(folder: Path, model: str, n: int, seed: int, kappa: float, dtype: str) -> Any:
    f = folder / CharacterizeResult.KIND
    if not f.exists():
        return None
    ch = CharacterizeResult.read(f)
    same = _same(ch.settings, {"n": n, "seed": seed, "kappa": kappa}) and ch.settings.get("dtype", "float32") == dtype
    return ch if ch.model == model and same and ch.placebo is not None else None


def saved_ablation(folder: Path, model: str, heads: Sequence[str], draws: int, samples: int) -> Any:
    f = folder / AblateResult.KIND
    if not f.exists():
        return None
    ab = AblateResult.read(f)
    # more control sets than asked only add power: a saved ablation with at least ``draws`` of them is reused
    same = ab.model == model and [str(h) for h in ab["heads"]] == list(heads) and ab["control"]["draws"] >= draws
    return ab if same and ab["n_samples"] == samples else None
