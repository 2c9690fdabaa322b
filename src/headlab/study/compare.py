"""Cross-model comparison (``headlab compare``): relative measures of several runs side by side.

Reads run folders holding ``scan.json`` and/or ``characterize.json`` and compares what is comparable across
models of different sizes: shares of heads and relative depth (layer + 0.5) / n_layers.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Sequence

import numpy as np

from headlab.census.result import ScanResult
from headlab.errors import HeadlabError
from headlab.io import write_text_atomic
from headlab.plotting import new_figure, save_figure
from headlab.result import Result, found_in
from headlab.settings import Settings, setting
from headlab.study.characterize import CharacterizeResult
from headlab.study.rope import KAPPA
from headlab.study.scale import measured_alike


@dataclass
class ComparedModel:
    path: str
    model: str
    n_layers: int
    n_heads: int
    measures: dict[str, float | None]
    depth: np.ndarray          # (L,) relative depth of each layer
    token_by_layer: np.ndarray | None   # (L,) max mean `/` mass over the layer's heads (scan)
    offset_by_layer: np.ndarray | None  # (L,) max best SlashScore over the layer's heads (scan)
    marked_by_layer: np.ndarray | None  # (L,) max `/` mass on the slash suite (characterize)


def _grid(heads: list[dict[str, Any]], L: int, H: int, get: Any) -> np.ndarray:
    g = np.full((L, H), np.nan)
    for h in heads:
        v = get(h)
        g[h["layer"], h["head"]] = np.nan if v is None else v
    return g


def _layer_max(g: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return np.where(np.isnan(g).all(1), np.nan, np.nanmax(np.where(np.isnan(g), -np.inf, g), 1))


def summarize(run: str | Path, kappa: float = KAPPA) -> ComparedModel:
    p = Path(run)
    kinds = found_in(p)
    if ScanResult not in kinds and CharacterizeResult not in kinds:
        raise HeadlabError(f"{p} holds neither {ScanResult.KIND} nor {CharacterizeResult.KIND}")
    try:
        sc = ScanResult.read(p).to_json() if ScanResult in kinds else None
        ch = CharacterizeResult.read(p).to_json() if CharacterizeResult in kinds else None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise HeadlabError(f"cannot read run {p}: {exc}") from exc
    base = sc or ch
    L, H = int(base["n_layers"]), int(base["n_heads"])  # type: ignore[index]
    m: dict[str, float | None] = {}
    tok = off = marked = None
    if sc:
        tok = _layer_max(_grid(sc["heads"], L, H, lambda h: h["scores"].get("token")))
        offg = _grid(sc["heads"], L, H, lambda h: h["scores"].get("offset"))
        off = _layer_max(offg)
        m["sdh_share_corpus"] = sc.get("sdh_share")
        m[f"slash_pattern_share_k{kappa}"] = float(np.nanmean(offg >= kappa)) if not np.isnan(offg).all() else None
    if ch:
        marked = _layer_max(_grid(ch["heads"], L, H, lambda h: h["slash_mass"][0]))
        m["sdh_share_stimuli"] = ch.get("sdh_share")
        top = [h for h in ch["heads"] if h["name"] in set(ch.get("top", []))]
        rel = [(h["layer"] + 0.5) / L for h in top]
        m["top_heads_mean_relative_depth"] = float(np.mean(rel)) if rel else None
        m["top_heads_median_specificity"] = (
            float(np.median([h["specificity"]["pooled"][0] for h in top])) if top else None
        )
    return ComparedModel(str(p), str(base["model"]), L, H, m, (np.arange(L) + 0.5) / L, tok, off, marked)  # type: ignore[index]


@dataclass
class CompareResult(Result):
    """``compare.json``: one row per run folder (its model, shape, the measures of :func:`summarize` and the
    per-layer maxima the figure draws)."""

    KIND: ClassVar[str] = "compare.json"
    COMPANIONS: ClassVar[tuple[str, ...]] = ("compare.md", "compare.png")

    runs: list[dict[str, Any]]

    def summaries(self) -> list[ComparedModel]:
        def arr(v: Any) -> np.ndarray | None:
            return None if v is None else np.array([np.nan if x is None else x for x in v], dtype=float)
        return [ComparedModel(r["run"], r["model"], r["n_layers"], r["n_heads"], r["measures"],
                           (np.arange(r["n_layers"]) + 0.5) / r["n_layers"], arr(r["token_by_layer"]),
                           arr(r["offset_by_layer"]), arr(r["marked_by_layer"])) for r in self.runs]

    def markdown(self) -> str:
        sums = self.summaries()
        lines = ["# Cross-model comparison", "", "| measure | " + " | ".join(s.model for s in sums) + " |",
                 "|---|" + "---|" * len(sums), "| heads (layers x heads) | "
                 + " | ".join(f"{s.n_layers * s.n_heads} ({s.n_layers}x{s.n_heads})" for s in sums) + " |"]
        for k in sorted({k for s in sums for k in s.measures}):
            cells = ["" if s.measures.get(k) is None else f"{s.measures[k]:.3f}" for s in sums]
            lines.append(f"| {k} | " + " | ".join(cells) + " |")
        return "\n".join(lines) + "\n"

    def records(self) -> list[dict[str, Any]]:
        return [{"run": r["run"], "model": r["model"], "n_layers": r["n_layers"], "n_heads": r["n_heads"],
                 **r["measures"]} for r in self.runs]

    def figure(self) -> Any:
        """Per-layer maxima of the `/` scores against relative depth, one colour per run."""
        return compare_figure(self.summaries())

    def write_companions(self, folder: Path) -> None:
        write_text_atomic(folder / "compare.md", self.markdown())
        save_figure(self.figure(), folder / "compare.png")


def _listed(a: np.ndarray | None) -> list[float | None] | None:
    return None if a is None else [None if np.isnan(x) else float(x) for x in a]


@dataclass(frozen=True)
class CompareSettings(Settings):
    """The one setting of a comparison: ``kappa``, the SlashScore threshold of the slash-pattern share."""

    FAMILY: ClassVar[str] = "compare"

    kappa: float = setting(KAPPA, "SlashScore threshold for the slash-pattern share")


COMPARE = CompareSettings()


def compare(runs: Sequence[str | Path], out_dir: str | Path, kappa: float = KAPPA) -> CompareResult:
    """Write ``compare.json``, ``compare.md`` and ``compare.png`` for the given run folders."""
    if not runs:
        raise HeadlabError("compare needs at least one run folder")
    measured_alike([Path(r) / ScanResult.KIND for r in runs if ScanResult in found_in(Path(r))])
    sums = [summarize(r, kappa) for r in runs]
    r = CompareResult([{"run": s.path, "model": s.model, "n_layers": s.n_layers, "n_heads": s.n_heads,
                        "measures": s.measures, "token_by_layer": _listed(s.token_by_layer),
                        "offset_by_layer": _listed(s.offset_by_layer), "marked_by_layer": _listed(s.marked_by_layer)}
                       for s in sums])
    r.write(out_dir)
    return r


def compare_figure(sums: Sequence[ComparedModel]) -> Any:
    """Per-layer maxima of the `/` scores against relative depth, one colour per run (matplotlib figure)."""
    panels = [
        ("token_by_layer", "max mean mass on '/' (corpus)"),
        ("marked_by_layer", "max mass on '/' (stimuli)"),
        ("offset_by_layer", "max best SlashScore(Δ) (corpus)"),
    ]
    fig = new_figure(figsize=(13, 3.8))
    axes = fig.subplots(1, 3)
    for ax, (attr, title) in zip(axes, panels):
        for i, s in enumerate(sums):  # one colour per run in every panel
            y = getattr(s, attr)
            if y is not None:
                ax.plot(s.depth, y, marker="o", ms=3, color=f"C{i}")
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("relative depth (layer + 0.5) / n_layers")
        ax.set_xlim(0, 1)
        ax.axvspan(1 / 3, 2 / 3, color="0.92", zorder=0)
    axes[0].set_ylabel("per-layer maximum over heads")
    # deferred: matplotlib takes ~0.6 s to import and only figures need it
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color=f"C{i}", marker="o", ms=3, label=s.model) for i, s in enumerate(sums)]
    axes[0].legend(handles=handles, fontsize=8)
    fig.tight_layout()
    return fig
