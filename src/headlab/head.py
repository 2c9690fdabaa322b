"""A head: ``Head(layer, head)``, written and read as ``L.H`` here and nowhere else."""

from __future__ import annotations

from typing import Iterable, NamedTuple

from headlab.errors import HeadlabError


class Head(NamedTuple):
    layer: int
    head: int

    def __str__(self) -> str:
        return f"{self.layer}.{self.head}"

    @classmethod
    def parse(cls, text: str) -> "Head":
        """``"3.1"`` -> ``Head(3, 1)``; anything else is a one-line error naming the text. A number is refused:
        0.10 and 0.1 are one float, so head 0.10 cannot be told from head 0.1 once written as one."""
        if isinstance(text, Head):
            return text
        if not isinstance(text, str):
            raise HeadlabError(f"head {text!r} is a {type(text).__name__}: write heads as strings 'L.H' (the "
                               "float 0.10 is 0.1)")
        try:
            layer, head = (int(x) for x in text.strip().split("."))
        except ValueError:
            raise HeadlabError(f"head {text.strip()!r} is not of the form L.H") from None
        return cls(layer, head)

    def check(self, n_layers: int, n_heads: int) -> "Head":
        """This head, after checking it lies inside a model of ``n_layers`` x ``n_heads``."""
        if not (0 <= self.layer < n_layers and 0 <= self.head < n_heads):
            raise HeadlabError(f"head {self} is outside the model ({n_layers} layers x {n_heads} heads)")
        return self


def name(layer: int, head: int) -> str:
    """``L.H`` of a (layer, head) pair held as two integers (array indices)."""
    return str(Head(int(layer), int(head)))


def every(n_layers: int, n_heads: int) -> Iterable[Head]:
    """Every head of a model, layer by layer."""
    return (Head(layer, head) for layer in range(n_layers) for head in range(n_heads))
