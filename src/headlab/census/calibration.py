"""Which exact capture route is fastest for a batch shape, measured once per model, device and dtype.

Every route returns the same scores (:mod:`headlab.attention.routes`); only their cost differs, and not in a
fixed order: at short windows the model's own eager attention plus one dense evaluation of ``(B, H, T, T)``
can beat the kernel route's recomputation of the pair sums, at long ones the kernel route wins by far (and
eager's memory grows as T²). So ``auto`` times the routes that serve a scan on its first batch of each shape
(batch size and length rounded up to a power of two) and keeps the fastest; the seconds are cached in
``$HEADLAB_CACHE/route-costs.json`` under the model, device, dtype, torch threads and detectors, so a
later scan of the same shape measures nothing. Eager is timed only where one layer's probabilities fit the
block budget, the memory rule the chunked route keeps. Timing costs one warm-up and :data:`ROUNDS` forwards
per route, and a route choice gains at most the gap between routes (measured within ~30%), so a shape that
runs fewer than :data:`MIN_BATCHES` batches in a chunk is not timed: batches of windows of up to :data:`SHORT_T`
tokens take the eager route, measured faster there, and the others the kernel route, which is never far from the
faster and is the only one whose memory stays flat.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import torch

from headlab.detectors import Batch, Detector
from headlab.io import write_json_atomic
from headlab.models import LoadedModel, cache_dir
from headlab.models.loaded import device_of
from headlab.notices import say

COSTS_FILE = "route-costs.json"
#: timed forwards per route after one untimed warm-up: the fastest of them is the route's cost
ROUNDS = 2
#: the fewest batches of one shape in a chunk that repay timing it (five scored forwards at two routes)
MIN_BATCHES = 16
#: the longest window (a power of two) an untimed batch scores on the eager route: at 128 tokens and batch 2-8
#: eager was 1.02-1.13x a bare forward against the kernel route's 1.08-1.44x, and at batch 1, since eager holds
#: and reduces its layers together, 1.07x against 1.09-1.10x on smollm2-135m and 1.15-1.21x against 1.29-1.30x
#: on minilm-l6; at 256 tokens eager was the slower in every cell (BENCHMARKS.md "Windows of 128 tokens, again"
#: and "one window")
SHORT_T = 128


def costs_path() -> Path:
    return cache_dir() / COSTS_FILE


def bucket(T: int) -> int:
    """Lengths share a measurement up to the next power of two."""
    return 1 << max(0, T - 1).bit_length()


@dataclass
class RoutePicker:
    """Picks the fastest of ``candidates`` for each batch shape; :meth:`report` says what it chose and why."""

    loaded: LoadedModel
    detectors: Sequence[Detector]
    candidates: tuple[str, ...]
    block_mb: float
    path: Path = field(default_factory=costs_path)
    chosen: dict[str, dict[str, Any]] = field(default_factory=dict)

    def pick(self, B: int, T: int, make: Callable[[], Batch], run: Callable[[str, Batch], None],
             n_batches: int = MIN_BATCHES) -> str:
        """The route for ``n_batches`` batches of ``B`` samples of up to ``T`` tokens; ``make()`` builds a fresh
        batch of that shape and ``run(route, batch)`` scores it, to time the routes whose cost is not known."""
        shape = f"{B}x{bucket(T)}"
        if shape in self.chosen:
            return str(self.chosen[shape]["route"])
        dense_mb = B * self.loaded.facts.n_heads * bucket(T) ** 2 * 4 / 2**20  # one layer's (B, H, T, T) float32
        routes = [r for r in self.candidates if r != "eager" or dense_mb <= self.block_mb]
        if len(routes) == 1:
            self.chosen[shape] = {"route": routes[0], "why": f"eager would hold {dense_mb:.0f} MB of attention a "
                                                             f"layer, above the {self.block_mb:g} MB block budget"}
            return routes[0]
        costs = self._stored_costs(shape, routes)
        measured = len(costs) < len(routes)
        if measured and n_batches < MIN_BATCHES:
            short = "eager" in routes and bucket(T) <= SHORT_T
            pick = "eager" if short else routes[0]
            self.chosen[shape] = {"route": pick, "why": f"not timed: {n_batches} batch(es) of this shape, timing "
                                                        f"repays itself from {MIN_BATCHES}; "
                                                        + (f"batches of windows up to {SHORT_T} tokens score faster "
                                                           "on eager" if short else
                                                           "the kernel route's memory stays flat")}
            return pick
        if measured:
            costs = _measure(routes, make, run)
            self._store(shape, costs)
        best = min(costs, key=costs.__getitem__)
        self.chosen[shape] = {"route": best, "seconds": {r: round(c, 5) for r, c in costs.items()},
                              "why": "measured now" if measured else f"measured before ({self.path})"}
        return best

    def report(self) -> dict[str, dict[str, Any]]:
        return dict(self.chosen)

    def _model_key(self) -> str:
        m = self.loaded
        params = sum(p.numel() for p in m.model.parameters())
        dets = json.dumps([(d.name, d.settings()) for d in self.detectors], sort_keys=True, default=str)
        return "|".join([m.name, str(params), str(device_of(m.model)), str(m.dtype),
                         f"threads={torch.get_num_threads()}", hashlib.sha256(dets.encode()).hexdigest()[:16]])

    def _stored(self) -> dict[str, Any]:
        try:
            st = self.path.stat()
            key = (str(self.path), st.st_mtime_ns, st.st_size)
            if _read.get("key") != key:  # a scan of one-window batches asks once a batch: read the file once
                _read.update(key=key, data=json.loads(self.path.read_text()))
            data = _read["data"]
        except (OSError, ValueError):  # none yet, or unreadable: measure again and rewrite it
            return {}
        return data if isinstance(data, dict) else {}  # shared: read it, copy it to change it

    def _stored_costs(self, shape: str, routes: Sequence[str]) -> dict[str, float]:
        """The cached seconds of ``routes`` at ``shape``; a damaged entry (not a table, a cost that is not a
        finite positive number) is a cache miss, said on stderr and re-measured, never trusted nor fatal."""
        by_shape = self._stored().get(self._model_key(), {})
        stored = by_shape.get(shape, {}) if isinstance(by_shape, dict) else by_shape
        if not isinstance(stored, dict):
            say(f"{self.path}: a damaged entry for {shape} ({type(stored).__name__}); measuring the routes again")
            return {}
        good = {r: stored[r] for r in routes if r in stored and _is_cost(stored[r])}
        bad = sorted(r for r in routes if r in stored and r not in good)
        if bad:
            say(f"{self.path}: damaged cost(s) for {', '.join(bad)} at {shape}; measuring the routes again")
            return {}
        return {r: float(c) for r, c in good.items()}

    def _store(self, shape: str, costs: dict[str, float]) -> None:
        data = copy.deepcopy(self._stored())
        if not isinstance(data.get(self._model_key()), dict):
            data[self._model_key()] = {}
        data[self._model_key()][shape] = costs
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            write_json_atomic(self.path, data)
        except OSError:  # a read-only cache costs a re-measurement next time, not the scan
            pass


#: the last cost file read: its (path, mtime, size) and contents
_read: dict[str, Any] = {}


def _is_cost(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x > 0


def _measure(routes: Sequence[str], make: Callable[[], Batch], run: Callable[[str, Batch], None]
             ) -> dict[str, float]:
    """Seconds of one scored forward on each route: one warm-up, then :data:`ROUNDS` interleaved rounds."""
    run(routes[0], make())
    best = {r: float("inf") for r in routes}
    for _ in range(ROUNDS):
        for r in routes:
            b = make()
            t0 = time.perf_counter()
            run(r, b)
            best[r] = min(best[r], time.perf_counter() - t0)
    return best
