"""The one type door: every field of every settings class, given a value of a type its annotation does not allow,
is refused in one line naming the option, whether the settings object is built by hand or by a twin's keyword."""

from __future__ import annotations

import pytest

import headlab  # noqa: F401  (every command family's settings class is defined on import)
from headlab.errors import HeadlabError
from headlab.settings import Settings

#: values no settings field takes: no annotation names object, bytes, a mapping or a complex number
WRONG = [object(), b"bytes", {"a": 1}, 3j]


def _families() -> list[type[Settings]]:
    found, todo = [], list(Settings.__subclasses__())
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo += cls.__subclasses__()
    return sorted(found, key=lambda c: c.__name__)


CASES = [(cls, f.name) for cls in _families() for f in cls.fields()]


def test_every_command_family_is_covered() -> None:
    assert len(_families()) >= 15 and len(CASES) >= 100


@pytest.mark.parametrize("cls, name", CASES, ids=[f"{c.__name__}.{n}" for c, n in CASES])
def test_a_wrong_type_is_refused_in_one_line_naming_the_field(cls: type[Settings], name: str) -> None:
    flag = cls.flag(name)
    for value in WRONG:
        with pytest.raises(HeadlabError) as info:
            cls(**{name: value})
        said = str(info.value)
        assert "\n" not in said and (flag in said or name in said), said
