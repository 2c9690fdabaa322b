"""The report sections of the head monitor: a profile, a check and an evaluation, each its own page."""

from __future__ import annotations

from pathlib import Path

from headlab.monitor.comparison import EvaluationResult
from headlab.monitor.profile import Profile
from headlab.monitor.screening import CheckResult
from headlab.presenting.sections import Section, own_markdown, section
from headlab.rulebook.registration import judged_from_evidence


@section("monitor profile", Profile, 110)
def profile_section(folder: Path, figdir: Path, tag: str) -> Section:
    return own_markdown(Profile, folder, figdir, tag, f"Head monitor profile — {folder.name}")


@section("monitor check", CheckResult, 120)
def check_section(folder: Path, figdir: Path, tag: str) -> Section:
    return own_markdown(CheckResult, folder, figdir, tag, f"Head monitor check — {folder.name}")


@section("monitor evaluation", EvaluationResult, 130)
def evaluation_section(folder: Path, figdir: Path, tag: str) -> Section:
    # its verdicts as the rule book judges its statistics now, never as stored
    return own_markdown(EvaluationResult, folder, figdir, tag, f"Head monitor evaluation — {folder.name}",
                        lambda r: judged_from_evidence(r, str(folder / EvaluationResult.KIND)))
