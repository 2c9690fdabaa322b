"""The Python twin of every ``headlab`` command: one function per command, the same names and defaults, the
typed result returned. The CLI parses its options into these calls (:mod:`headlab.cli`), so a notebook and a
shell run the same code.

Where a command writes a folder, its twin writes only when given ``out=`` (a notebook often wants the object,
not the files); ``overwrite`` and ``progress`` mean what ``--overwrite`` and ``--no-progress`` mean.
"""

from __future__ import annotations

import contextlib
import dataclasses
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from headlab.display import Displayable, field_table
from headlab.errors import HeadlabError


@contextlib.contextmanager
def saving(out: str | Path | None, files: Sequence[str], overwrite: bool) -> Iterator[Path | None]:
    """``io.writing`` when ``out`` is given (the folder is checked before the work), else nothing to write."""
    if out is None:
        yield None
        return
    from headlab.io import writing

    with writing(out, files, overwrite) as folder:
        yield folder


@dataclasses.dataclass
class Written(Displayable):
    """What a folder-writing command returns: the folder, its Markdown summary, and the data behind it.

    ``data`` is the command's own value (a list of per-run records, or the JSON document it wrote);
    ``records()`` are its rows where it is a list.
    """

    folder: Path
    summary: str
    data: Any
    figure_of: Callable[[Any], Any] | None = dataclasses.field(default=None, repr=False)

    def markdown(self) -> str:
        return (self.folder / self.summary).read_text(encoding="utf-8")

    def figure(self) -> Any:
        """The command's figure drawn again from ``data`` (a matplotlib figure)."""
        if self.figure_of is None:
            raise HeadlabError(f"{self.summary} has no figure to draw in Python; its PNG files are in {self.folder}")
        return self.figure_of(self.data)

    def records(self) -> list[dict[str, Any]]:
        if not isinstance(self.data, list):
            return super().records()
        return [dataclasses.asdict(x) if dataclasses.is_dataclass(x) and not isinstance(x, type) else dict(x)
                for x in self.data]


@dataclasses.dataclass
class Summary(Displayable):
    """A command's JSON-like outcome (``data``) under a title; shows its scalar entries as a table."""

    title: str
    data: dict[str, Any]

    def markdown(self) -> str:
        return field_table(self.title, self.data.items())

    def __getitem__(self, key: str) -> Any:
        return self.data[key]
