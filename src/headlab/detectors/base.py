"""The detector contract and registry.

A detector turns one layer's attention into one score per head per sample, ``(B, H)`` or ``(B, H, C)`` for
detectors with C columns (e.g. offsets), without ever seeing a ``(T, T)`` matrix. It says what it needs:

* ``needs = "pairs"`` (default): sums of probabilities over sparse (query, key) pairs, declared in
  :meth:`Detector.prepare` with ``batch.key_mass`` / ``diagonal_mass`` / ``match_mass`` / ``link_mass`` (the
  four shapes of :mod:`headlab.detectors.needs`) and read back in :meth:`Detector.score` with
  ``batch.pair_mass(name)``. Every capture route serves these: fused, chunked and eager.
* ``needs = "rows"``: whole probability rows. :meth:`Detector.reduce_rows` gets blocks of rows and returns
  partial sums that the engine adds up; ``score`` reads the total with ``batch.row_sum(self.name)``. Served by
  the chunked and eager routes only.

``score`` must treat the head axis as opaque: a route may stack several layers' heads on it (the fused and
chunked routes evaluate consecutive layers together), so (B, H) there can be (B, n_layers · H).

NaN marks a sample for which the score is undefined (a ``token`` score on a sample without the target);
undefined samples are left out of every statistic. Padding positions never contribute: queries are
restricted to ``batch.query_mask`` and padded keys carry zero probability.

A detector declares its meaning beside its code: ``label`` (a column or a plot's title), ``meaning`` (what a
high score is, in words), ``hint`` (what an unusually high score suggests about a text), ``threshold`` (the
score at which a head is said to have the pattern, where one is conventional) and ``options`` (a settings
fragment, :class:`headlab.settings.Settings`, whose fields are its constructor's keywords with their defaults, help
and allowed values; a scan gives each from its setting of the same name, which it declares with the fragment's
``field_of``) and, optionally, ``bounds`` (the range every score lies in, :data:`MASS` for a share of attention: a
reader of ``scan.json`` refuses a score outside it as not measured). Register a new detector with ``@register`` on
a :class:`Detector` subclass (``headlab.register_detector``); ``make(name, **options)`` builds one by name. No
if-chains: the scan's choices and validation, ``scan.json``, ``heads.csv``, the report, the viewer and the monitor
read this registry, so a detector registered from outside the package reaches every one of them.
"""

from __future__ import annotations

import weakref
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Literal, Sequence, TypeVar

import numpy as np
import torch

from headlab.detectors.needs import Diagonal, Groups, KeySet, Links, Matches, Needs, token_groups
from headlab.errors import HeadlabError
from headlab.settings import Settings

#: the bounds of a share of a query's attention (a detector's ``bounds``)
MASS = (0.0, 1.0)


@dataclass
class Batch:
    """One padded batch as detectors see it.

    input_ids: (B, T) long; attention_mask: (B, T) bool, False on padding; causal: decoder attention.
    ``cache`` holds per-batch tensors that every layer reuses (built once, by the first layer that asks).
    ``needs`` collects the pair sums the detectors declared; a route fills ``pair_mass`` layer by layer.
    ``links``: the (query, key) pairs the batch's samples name (``Sample.links``), by label: ``(n, 3)`` long rows
    (sample, query, key) and ``(n,)`` weights.
    """

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    causal: bool
    cache: dict[str, torch.Tensor] = field(default_factory=dict)
    links: dict[str, tuple[torch.Tensor, torch.Tensor]] = field(default_factory=dict)
    needs: Needs = field(default_factory=Needs, repr=False)
    _groups: Groups | None = field(default=None, repr=False)
    _layer: dict[str, torch.Tensor] | None = field(default=None, repr=False)
    _rows: dict[str, torch.Tensor] | None = field(default=None, repr=False)

    @property
    def query_mask(self) -> torch.Tensor:  # (B, T) float: 1 on real query positions
        return self.cached("query_mask", lambda: self.attention_mask.to(torch.float32))

    def cached(self, key: str, build: Callable[[], torch.Tensor]) -> torch.Tensor:
        if key not in self.cache:
            self.cache[key] = build()
        return self.cache[key]

    def id_mask(self, key: str, ids: frozenset[int]) -> torch.Tensor:
        """(B, T) float mask of positions whose token id is in ``ids`` (padding excluded)."""
        def build() -> torch.Tensor:
            top = int(self.input_ids.max())
            table = torch.zeros(top + 1, dtype=torch.bool, device=self.input_ids.device)
            idx = torch.tensor(sorted(i for i in ids if i <= top), dtype=torch.long, device=table.device)
            table[idx] = True
            return (table[self.input_ids] & self.attention_mask).to(torch.float32)
        return self.cached(f"ids:{key}", build)

    # --- declarations (Detector.prepare) ------------------------------------------------------------------
    def key_mass(self, name: str, queries: torch.Tensor, keys: torch.Tensor) -> None:
        """Ask for ``Σ_i queries[b, i] Σ_j p[b, h, i, j] · keys[b, j]``; both (B, T)."""
        self.needs.keysets.setdefault(name, KeySet(queries.float(), keys.float()))

    def diagonal_mass(self, name: str, delta: int, queries: torch.Tensor) -> None:
        """Ask for ``Σ_{i ≥ delta} queries[b, i] · p[b, h, i, i − delta]``."""
        self.needs.diagonals.setdefault(name, Diagonal(delta, queries.float()))

    def match_mass(self, name: str, shift: int, queries: torch.Tensor) -> None:
        """Ask for ``Σ_i queries[b, i] Σ_{j < i, token[j] = token[i]} p[b, h, i, j + shift]``."""
        self.needs.matches.setdefault(name, Matches(shift, queries.float()))

    def link_mass(self, name: str, label: str) -> None:
        """Ask for ``Σ_n w_n · p[b, h, i_n, j_n]`` over the batch's links labelled ``label`` (none: zero)."""
        at, w = self.links.get(label) or (torch.zeros(0, 3, dtype=torch.long, device=self.input_ids.device),
                                          torch.zeros(0, device=self.input_ids.device))
        self.needs.links.setdefault(name, Links(at, w, (self.input_ids.shape[0], self.input_ids.shape[1])))

    def link_weight(self, label: str) -> torch.Tensor:
        """(B,) total weight of each sample's links labelled ``label``."""
        total = torch.zeros(self.input_ids.shape[0], device=self.input_ids.device)
        if label in self.links:
            at, w = self.links[label]
            total.index_add_(0, at[:, 0], w)
        return total

    @property
    def groups(self) -> Groups:
        """Real positions grouped by token id (built once per batch, for ``match_mass``)."""
        if self._groups is None:
            self._groups = token_groups(self.input_ids, self.attention_mask)
        return self._groups

    # --- per-layer results (set by the route) -------------------------------------------------------------
    def set_layer(self, sums: dict[str, torch.Tensor] | None, rows: dict[str, torch.Tensor] | None = None) -> None:
        self._layer, self._rows = sums, rows

    def pair_mass(self, name: str) -> torch.Tensor:
        """(B, H): this layer's declared sum ``name``."""
        if self._layer is None:
            raise RuntimeError("pair_mass outside a layer (use headlab.attention.routes.score_layer or the engine)")
        return self._layer[name]

    def row_sum(self, name: str) -> torch.Tensor:
        """This layer's total of a rows detector's :meth:`Detector.reduce_rows` partial sums."""
        if self._rows is None:
            raise RuntimeError("row_sum outside a layer (use headlab.attention.routes.score_layer or the engine)")
        return self._rows[name]


class Detector(ABC):
    """Base class of head detectors; subclasses set ``name`` and implement :meth:`score`."""

    name: ClassVar[str]
    summary: ClassVar[str]
    #: a short name for tables and plots (default: the name)
    label: ClassVar[str] = ""
    #: what a high score means, in words ("attention to the previous token")
    meaning: ClassVar[str] = ""
    #: what an unusually high score suggests about a text (the monitor's and the viewer's hint)
    hint: ClassVar[str] = "unusual structure"
    #: the score at which a head is said to have the pattern (None: no conventional cut)
    threshold: ClassVar[float | None] = None
    #: the settings fragment of its constructor's keywords (None: it takes none); a scan setting of the same name
    #: gives each (``token``'s ``target`` is ``--target``)
    options: ClassVar[type[Settings] | None] = None
    #: names of the columns when the detector returns (B, H, C); None for one score per head.
    columns: tuple[str, ...] | None = None
    #: "pairs": sparse pair sums (every route); "rows": whole probability rows (chunked and eager routes).
    needs: ClassVar[Literal["pairs", "rows"]] = "pairs"
    _bound: "weakref.ref[Any] | None" = None

    def bind(self, loaded: Any) -> None:
        """Resolve model-specific facts (token ids, special tokens) once, before the first batch.

        Never called directly by a census: :func:`bind_to` (through the engine) calls it once per model."""

    def bound_to(self, loaded: Any) -> bool:
        """Whether :meth:`bind` has run for exactly this loaded model."""
        return self._bound is not None and self._bound() is loaded

    def bind_once(self, loaded: Any) -> None:
        """:meth:`bind` unless already bound to ``loaded`` (a weak reference: a detector keeps no model alive)."""
        if not self.bound_to(loaded):
            self.bind(loaded)
            self._bound = weakref.ref(loaded)

    def prepare(self, batch: Batch) -> None:
        """Declare this batch's pair sums (``batch.key_mass`` and friends), once per batch."""

    def reduce_rows(self, probs: torch.Tensor, q0: int, k0: int, batch: Batch) -> torch.Tensor:
        """Rows detectors: probabilities (B, H, C, K) of queries q0.. over keys k0.. → partial sums to add up."""
        raise NotImplementedError(f"detector {self.name!r} declares needs='pairs'")

    @abstractmethod
    def score(self, batch: Batch) -> torch.Tensor:
        """This layer's (B, H) or (B, H, C) scores from ``batch.pair_mass`` / ``batch.row_sum``; NaN where
        undefined."""

    def settings(self) -> dict[str, Any]:
        return {}

    @classmethod
    def summarize(cls, name: str, value: Any) -> dict[str, Any]:
        """A head's entries in ``scan.json`` from its mean score: a float, or the list of its columns' means."""
        v = np.asarray(value, dtype=float)
        return {name: float(v)} if v.ndim == 0 else {name: [float(x) for x in v]}

    @classmethod
    def shown_as(cls) -> str:
        return cls.label or cls.name


DETECTORS: dict[str, type[Detector]] = {}
D = TypeVar("D", bound=type[Detector])


def register(cls: D) -> D:
    """Add a detector class to the registry under its ``name`` (refused when the name is taken or is not one
    the command line and the result files can carry: ASCII letters, digits and inner dashes, so that no name can
    look like another, a built-in's with a Cyrillic о in it)."""
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not name or not name.isascii() or not all(c.isalnum() or c == "-" for c in name) \
            or name[0] == "-" or name[-1] == "-" or "_" in name:
        raise HeadlabError(f"register a detector: its name must be ASCII letters, digits and inner dashes, not "
                           f"{name!r}{_non_ascii(name)}")
    if name in DETECTORS:
        raise HeadlabError(f"detector {name!r} is already registered")
    DETECTORS[name] = cls
    return cls


def _non_ascii(name: Any) -> str:
    """Where a name holds a character that is not ASCII, which one (a letter that looks like a Latin one)."""
    odd = [c for c in name if not c.isascii()] if isinstance(name, str) else []
    return f" (it holds {', '.join(f'U+{ord(c):04X}' for c in odd[:3])})" if odd else ""


def options_for(name: str, settings: Any) -> dict[str, Any]:
    """The constructor keywords the detector ``name`` takes from scan ``settings``: its ``options`` fragment's
    fields that ``settings`` gives."""
    cls = DETECTORS.get(name.replace("_", "-"))
    if cls is None or cls.options is None:
        return {}
    return {f.name: getattr(settings, f.name) for f in cls.options.fields() if hasattr(settings, f.name)}


def make(name: str, **options: Any) -> Detector:
    """Build the detector registered as ``name`` (``-`` and ``_`` are interchangeable)."""
    key = name.replace("_", "-")
    cls = DETECTORS.get(key)
    if cls is None:
        raise HeadlabError(f"--detectors: unknown detector '{name}'; registered: {', '.join(sorted(DETECTORS))}")
    try:
        return cls(**options)
    except TypeError as exc:
        raise HeadlabError(f"detector '{key}': {exc}") from exc


def bind_to(loaded: Any, detectors: "Sequence[Detector]") -> None:
    """Bind every detector to ``loaded`` (once per model: a detector already bound to it is left as it is).

    The engine calls this before every batch it scores, so no census path can score with a detector that
    has not learned the model's token ids (a ``sink`` that counts no separator, a ``token`` with no target)."""
    for d in detectors:
        d.bind_once(loaded)


def prepare_batch(detectors: "list[Detector] | tuple[Detector, ...]", batch: Batch) -> None:
    for d in detectors:
        d.prepare(batch)
