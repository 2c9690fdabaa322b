"""Specialization against model size (``headlab scale``): one point per scanned model.

Input: scan folders (``scan.json``), or folders whose sub-folders hold them (a ``headlab claims`` output).
Per model, from its corpus scan alone, so that every model is measured the same way:

* the share of heads of each kind, a head counted when its mean score reaches the formation tracker's
  threshold (:data:`headlab.formation.track_report.THRESHOLDS`, ours): previous-token, induction, sink, slash pattern
  (best SlashScore(Δ) over Δ = 0..K), and `/` (the strict slash-dominance rule of the scan);
* the largest mean attention mass on `/` over heads, and the top SlashScore(Δ) with its Δ.

Parameter counts are the model's own (embeddings included), read from the scan's ``model_facts``. Comparing
scans made on different corpora, windows or filters compares those too, so the settings are required equal.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, ClassVar, Sequence

import numpy as np

from headlab.census.result import ScanResult
from headlab.errors import HeadlabError
from headlab.formation.track_report import THRESHOLDS
from headlab.io import write_text_atomic
from headlab.plotting import new_figure, save_figure
from headlab.result import Result
from headlab.study.claims import folder_name
from headlab.values import repeated

# kind -> (scan detector, threshold key of THRESHOLDS)
KINDS = {"previous-token": ("previous-token", "previous-token"), "induction": ("induction", "induction"),
         "sink": ("sink", "sink"), "slash pattern": ("offset", "offset")}
COMPARABLE = ("corpus", "window", "filter", "max_samples", "seed", "sdh_rule")


@dataclass
class ScalePoint:
    model: str
    kind: str                    # encoder | decoder
    n_params: int
    n_heads: int                 # all heads, layers x heads
    shares: dict[str, float]     # kind -> share of heads; "/" is the slash-dominance rule's share
    max_slash_mass: float
    top_slash_score: float
    top_slash_delta: int
    n_windows: int
    n_windows_with_slash: int

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_json(d: dict[str, Any]) -> "ScalePoint":
        return ScalePoint(**d)


def scan_files(runs: Sequence[str | Path]) -> list[Path]:
    """``scan.json`` of each folder, or of each of its sub-folders when it has none itself; a sub-folder that is
    a link, or a scan found twice (by a link, another spelling or a copy), is refused: one scan is one point."""
    found: list[Path] = []
    for r in runs:
        p = Path(r)
        if (p / ScanResult.KIND).exists():
            found.append(p / ScanResult.KIND)
            continue
        subs = sorted(p.glob("*/scan.json")) if p.is_dir() else []
        if linked := [s.parent for s in subs if s.parent.is_symlink()]:
            raise HeadlabError(f"{linked[0]} is a link to a folder: give the folder it names itself (results are "
                               "never read through a link)")
        if not subs:
            raise HeadlabError(f"{p} holds no scan.json, nor do its sub-folders; run headlab scan or headlab claims "
                               "there first")
        found += subs
    if twice := repeated("runs", [str(f.parent) for f in found]):
        raise HeadlabError(twice)
    return found


def point(sc: ScanResult) -> ScalePoint:
    """One model's specialization from its scan."""

    facts = sc.settings["model_facts"]
    shares = {}
    for kind, (det, key) in KINDS.items():
        m = sc.means.get(det)
        if m is not None:
            best = np.nanmax(np.nan_to_num(m, nan=-1.0), axis=-1) if m.ndim == 3 else np.nan_to_num(m, nan=-1.0)
            shares[kind] = float((best >= THRESHOLDS[key]).mean())
    shares["/"] = float(sc.sdh.mean())
    tok = sc.means.get("token")
    off = sc.means.get("offset")
    if off is not None and not np.isnan(off).all():
        l, h, d = np.unravel_index(int(np.nanargmax(np.nan_to_num(off, nan=-1.0))), off.shape)
        top, delta = float(off[l, h, d]), int(d)
    else:
        top, delta = float("nan"), -1

    return ScalePoint(model=folder_name(sc.model), kind="decoder" if facts["causal"] else "encoder",
                      n_params=int(facts["n_params"]), n_heads=sc.n_layers * sc.n_heads, shares=shares,
                      max_slash_mass=float(np.nanmax(tok)) if tok is not None and not np.isnan(tok).all()
                      else float("nan"),
                      top_slash_score=top, top_slash_delta=delta, n_windows=sc.n_samples,
                      n_windows_with_slash=sc.n_samples_with_target)


@dataclass
class ScaleResult(Result):
    """``scale.json``: the scans' shared ``settings`` and one point per model (:class:`ScalePoint`), by size."""

    KIND: ClassVar[str] = "scale.json"
    COMPANIONS: ClassVar[tuple[str, ...]] = ("scale.md", "scale.png")

    settings: dict[str, Any]
    points: list[dict[str, Any]]

    def scale_points(self) -> list[ScalePoint]:
        return [ScalePoint.from_json(p) for p in self.points]

    def markdown(self) -> str:
        return markdown(self.scale_points(), self.settings)

    def records(self) -> list[dict[str, Any]]:
        return [dict(p) for p in self.points]

    def figure(self) -> Any:
        """Share of heads per kind, highest `/` mass and top SlashScore against parameters."""
        return scale_figure(self.scale_points())

    def write_companions(self, folder: Path) -> None:
        write_text_atomic(folder / "scale.md", self.markdown())
        save_figure(self.figure(), folder / "scale.png")


def measured_alike(files: Sequence[Path]) -> list[ScanResult]:
    """The scans in ``files``, each finished and made with the :data:`COMPARABLE` settings of the first: models
    set side by side must be measured alike, and an interrupted scan's statistics cover only part of its corpus."""
    scans = [ScanResult.read(f).require_complete(f) for f in files]
    for f, sc in zip(files, scans):
        diff = [k for k in COMPARABLE if sc.settings.get(k) != scans[0].settings.get(k)]
        if diff:
            raise HeadlabError(f"{f} was scanned with other {', '.join(diff)} than {files[0]} "
                               f"({', '.join(f'{k}={sc.settings.get(k)!r}' for k in diff)}); rescan so the models "
                               "are measured alike")
    return scans


def scale(runs: Sequence[str | Path], out_dir: str | Path) -> ScaleResult:
    """Write ``scale.json``, ``scale.md`` and ``scale.png`` (specialization against parameter count)."""
    files = scan_files(runs)
    scans = measured_alike(files)
    first = scans[0].settings
    points = sorted((point(sc) for sc in scans), key=lambda p: p.n_params)
    r = ScaleResult({k: first.get(k) for k in COMPARABLE}, [p.to_json() for p in points])
    r.write(out_dir)
    return r


def markdown(points: Sequence[ScalePoint], settings: dict[str, Any]) -> str:
    kinds = list(KINDS) + ["/"]
    rule = settings.get("sdh_rule", {})
    lines = ["# Specialization against scale", "",
             f"Scans of {settings.get('max_samples')} windows of {settings.get('window')} tokens from "
             f"{' '.join(settings.get('corpus') or [])} (filter {settings.get('filter')}). A head counts for a kind "
             "when its mean score reaches the formation tracker's threshold (ours); `/` is the strict "
             f"slash-dominance rule (>{rule.get('threshold')} in {rule.get('consecutive')} consecutive windows with "
             "`/`).", "",
             "| model | kind | parameters | heads | windows with `/` | " + " | ".join(f"{k} heads" for k in kinds[:-1])
             + " | SDHs (`/`, strict rule)"
             + " | max `/` mass | top SlashScore (Δ) |",
             "|---|---|---|---|---|" + "---|" * len(kinds) + "---|---|"]
    for p in points:
        cells = [f"{100 * p.shares[k]:.1f}%" if k in p.shares else "" for k in kinds]
        cells[-1] = f"{round(p.shares['/'] * p.n_heads)} ({cells[-1]})"
        lines.append(f"| {p.model} | {p.kind} | {p.n_params / 1e6:.2f}M | {p.n_heads} | {p.n_windows_with_slash} | "
                     + " | ".join(cells) + f" | {p.max_slash_mass:.3f} | {p.top_slash_score:.3f} "
                     f"({p.top_slash_delta}) |")
    return "\n".join(lines) + "\n"


def scale_figure(points: Sequence[ScalePoint]) -> Any:
    """Share of heads per kind, highest `/` mass and top SlashScore against parameters (matplotlib figure)."""
    fig = new_figure(figsize=(14, 4.2))
    axes = fig.subplots(1, 3)
    marker = {"encoder": "o", "decoder": "s"}
    x = np.array([p.n_params for p in points], dtype=float)
    for i, kind in enumerate(list(KINDS) + ["/"]):
        for arch in ("encoder", "decoder"):
            pts = [(p.n_params, p.shares[kind]) for p in points if p.kind == arch and kind in p.shares]
            if pts:
                axes[0].scatter(*zip(*pts), marker=marker[arch], color=f"C{i}", s=30,
                                label=kind if arch == "decoder" or not any(p.kind == "decoder" for p in points)
                                else None)
    axes[0].set_title("share of heads per kind", fontsize=10)
    axes[0].legend(fontsize=7, title="kind (o encoder, s decoder)", title_fontsize=7)
    for ax, attr, title in ((axes[1], "max_slash_mass", "max mean attention mass on '/'"),
                            (axes[2], "top_slash_score", "top SlashScore(Δ)")):
        for p in points:
            ax.scatter(p.n_params, getattr(p, attr), marker=marker[p.kind], color="C0" if p.kind == "encoder"
                       else "C3", s=30)
            ax.annotate(p.model, (p.n_params, getattr(p, attr)), fontsize=6, xytext=(3, 3),
                        textcoords="offset points")
        ax.set_title(f"{title} (blue o encoder, red s decoder)", fontsize=9)
    for ax in axes:
        ax.set_xscale("log")
        ax.set_xlabel("parameters")
        ax.set_ylim(-0.03, 1.03)
        if len(x):
            ax.set_xlim(x.min() / 2, x.max() * 3)
    fig.tight_layout()
    return fig
