"""A claims study's view: the page of its first model's scan (the models in the table's order)."""

from __future__ import annotations

from pathlib import Path

from headlab.census.result import ScanResult
from headlab.errors import HeadlabError
from headlab.result import found_in
from headlab.study.claims import ClaimsResult, folder_name
from headlab.views.data import ViewData
from headlab.views.model import from_scan
from headlab.views.sources import FolderSource, Shown, register_source


def claims_scan(folder: Path) -> Path:
    """The scan folder a claims study opens on: its first model's (in the table's order) that holds a scan."""
    for m in ClaimsResult.read(folder).models:
        sub = folder / folder_name(m.model)
        if ScanResult in found_in(sub):
            return sub
    raise HeadlabError(f"{folder}: the claims study holds no model folder with a scan.json")


def from_claims(folder: Path, shown: Shown) -> ViewData:
    return from_scan(claims_scan(folder), shown)


register_source(FolderSource("claims", "a claims study (claims.json)", lambda p: ClaimsResult in found_in(p),
                             from_claims, rank=3))
