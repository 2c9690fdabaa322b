"""Whether a result file is as headlab wrote it.

A result's JSON carries the sha256 of its content (:func:`headlab.io.sealed`). A file that cannot carry its own
seal, a log written line by line while a run trains (``eval.jsonl``), is sealed by its folder's
:class:`Manifest` (``manifest.json``, itself a sealed result) once the run has finished. :func:`verified` checks
either, so a reader that pools files (``headlab verdicts``) refuses an edited one before it judges anything.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Iterable

from headlab.errors import HeadlabError
from headlab.io import SEAL, file_sha256, unsealed
from headlab.notices import say
from headlab.result import Result, read_json


@dataclass
class Manifest(Result):
    """The sha256 of each file of a finished run that has no seal of its own, by its name in the folder."""

    KIND: ClassVar[str] = "manifest.json"
    digests: dict[str, str]

    @classmethod
    def of(cls, folder: str | os.PathLike[str], names: Iterable[str]) -> "Manifest":
        """The manifest of ``names`` in ``folder`` as they are now (a name not there is left out)."""
        folder = Path(folder)
        return cls({n: file_sha256(folder / n) for n in sorted(names) if (folder / n).is_file()})

    def check(self, path: Path, where: str) -> bool:
        """Whether the manifest seals ``path`` (refused, in one line naming ``where``, when it no longer
        matches)."""
        want = self.digests.get(path.name)
        if want is None:
            return False
        if file_sha256(path) != want:
            raise HeadlabError(f"{where} was changed after headlab wrote it (its sha256 no longer matches its "
                               f"folder's {self.KIND}): a result is not trusted as edited; restore it (git "
                               "checkout) or run again the command that made it")
        return True


def verified(path: str | os.PathLike[str], where: str | None = None) -> bool:
    """Whether ``path`` carries a seal, its own (a JSON object's :data:`~headlab.io.SEAL`) or its folder's
    manifest's; a file whose content no longer matches its seal is refused in one line naming ``where`` (default
    the path). ``False``: nothing seals it (written before results were sealed), and it reads as it is."""
    path = Path(path)
    where = where or str(path)
    if path.suffix == ".json":
        doc = read_json(path)
        unsealed(doc, where)
        return isinstance(doc, dict) and SEAL in doc
    manifest = path.parent / Manifest.KIND
    return manifest.is_file() and Manifest.read(manifest).check(path, where)


def say_unsealed(files: Iterable[str | os.PathLike[str]], who: str) -> list[Path]:
    """Say, in one line on stderr (and in the result's record), which of ``files`` carry no seal: written before
    results were sealed, or with the seal removed by hand, so nothing shows they are as headlab wrote them; they
    are read as they are. A file that cannot be read, or whose seal no longer matches, is left to its reader, which
    refuses it by name. Returns the files without a seal."""
    bare = [Path(f) for f in files if Path(f).is_file() and _bare(Path(f))]
    if bare:
        say(f"{who}: {len(bare)} result file(s) carry no seal, so nothing shows they are as headlab wrote them "
            f"(written before results were sealed, or the seal removed): {bare[0]}"
            f"{' and more' if len(bare) > 1 else ''}; read as they are")
    return bare


def _bare(path: Path) -> bool:
    try:
        return not verified(path)
    except HeadlabError:
        return False  # unreadable or edited: its reader refuses it, naming it


__all__ = ["Manifest", "say_unsealed", "verified"]
