"""The report section of a training run's tracking: the tracker's own page and its figures."""

from __future__ import annotations

from pathlib import Path

from headlab.formation.track_report import PhasesResult
from headlab.formation.tracking import TrackResult
from headlab.presenting.sections import Section, copy_figure, img, section


@section("training", TrackResult, 70, under="track", parts=(PhasesResult,))
def training_section(folder: Path, figdir: Path, tag: str) -> Section:
    text = (folder / "track" / TrackResult.REPORT).read_text()
    figs = [copy_figure(p, figdir, tag) for p in sorted((folder / "track").glob("*.png"))]
    body = "\n".join(line for line in text.splitlines() if not line.startswith("# ") and "](" not in line)
    return Section(
        f"Training and formation — {folder.name}",
        body.replace("\n## ", "\n### ") + "\n\n" + "\n\n".join(img(f, figdir, f.stem) for f in figs),
        figs,
    )
