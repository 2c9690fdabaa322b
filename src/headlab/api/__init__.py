"""The Python twin of every ``headlab`` command: one function per command, the same names and defaults, the
typed result returned. The CLI parses its options into these calls (:mod:`headlab.cli`), so a notebook and a
shell run the same code.

Where a command writes a folder, its twin writes only when given ``out=`` (a notebook often wants the object,
not the files); ``overwrite`` and ``progress`` mean what ``--overwrite`` and ``--no-progress`` mean.
"""

from __future__ import annotations

from headlab.io import saving

__all__ = ["saving"]
