"""Capture routes: how a layer's attention reaches the detectors.

=========  ==========================================================  ================  ==================
route      how                                                         serves            memory per layer
=========  ==========================================================  ================  ==================
fused      fused kernel + log-sum-exp; pair sums recomputed from q, k  pairs             O(B·H·T·d)
chunked    eager math in blocks of C query rows, each block dropped    pairs, rows       O(B·H·C·T)
eager      the model's own eager attention, whole (B, H, T, T)         pairs, rows       O(B·H·T²)
=========  ==========================================================  ================  ==================

``auto`` considers the first route that serves every detector and the model (fused, then chunked) and the
eager route, and takes the faster of the two for each batch shape, timed on the scan's own batches
(:mod:`headlab.census.calibration`); where only eager serves, it is eager.
Every route answers the same declared sums (:mod:`headlab.detectors.needs`), so their scores agree; the eager
route is the reference the others are tested against.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import torch
from torch import nn

from headlab.attention.routes import chunked, fused
from headlab.attention.routes.spec import AttentionSpec
from headlab.attention.routes.views import LogitsView, ProbsView
from headlab.attention.rules import fused_unsupported, kernel_supported
from headlab.detectors import Batch, Detector
from headlab.detectors.needs import Groups, evaluate, match_plan, pair_pattern, pattern_names
from headlab.errors import HeadlabError

KernelHandler = Callable[[int, torch.Tensor, torch.Tensor, torch.Tensor, AttentionSpec], torch.Tensor]

ROUTES = ("fused", "chunked", "eager")
#: the route choice that picks one of :data:`ROUTES` per batch shape (:func:`choose`)
AUTO = "auto"
#: default memory budget (MB) of one block: a chunked block of rows, a fused block of queries, a match block.
DEFAULT_BLOCK_MB = 256.0
#: a key set with at most T / SMALL_SET keys (the sink, a few '/') is read by a small matrix product against
#: just those keys; a larger one rides the kernel as an indicator column of V (which widens every head a
#: little, ~4-13% of the kernel's time measured on 2 CPU cores at T = 2048-8192).
SMALL_SET = 64
#: kernel routes keep up to this many MB of queries, keys and log-sum-exps to evaluate layers together, and
#: cut the evaluation's own temporaries (token-match blocks) to EVAL_MB: together they are the fused route's
#: memory above a bare forward (32 MB of deferral measured 3% faster but 5 points more peak memory on
#: minilm-l6 at batch 8 x 128 tokens).
DEFER_MB = 16.0
EVAL_MB = 16.0
#: the eager route reads key sets, token matches and links through one dense (B, T·T, n) pattern of pair weights
#: when it fits this many MB: one product with the layer's probabilities instead of a product per key set and a
#: gather per token group, each a handful of small operators (at 128 tokens these, not arithmetic, were the cost)
PATTERN_MB = 16.0


@dataclass(frozen=True)
class Choice:
    """``route``: a route, or ``auto`` when ``candidates`` (more than one) are timed per batch shape."""

    route: str
    reason: str
    candidates: tuple[str, ...] = ()

    def settings(self) -> dict[str, str]:
        return {"route": self.route, "route_reason": self.reason}


def choose(model: nn.Module, detectors: Sequence[Detector], requested: str = AUTO) -> Choice:
    """The route for ``model`` and ``detectors``; a forced route that cannot serve them is a clear error."""

    if requested not in ("auto", *ROUTES):
        raise HeadlabError(f"unknown route {requested!r}; choose auto, {', '.join(ROUTES)}")
    rows = [d.name for d in detectors if d.needs == "rows"]
    blockers = {
        "fused": fused_unsupported(model) or (f"detector(s) {', '.join(rows)} need whole rows" if rows else None),
        "chunked": kernel_supported(model),
        "eager": None,
    }
    if requested != "auto":
        if blockers[requested] is not None:
            raise HeadlabError(f"--route {requested} cannot serve this scan: {blockers[requested]}")
        return Choice(requested, "requested", (requested,))
    for name in ROUTES:
        if blockers[name] is None:
            skipped = [f"not {n}: {blockers[n]}" for n in ROUTES[:ROUTES.index(name)]]
            why = "; ".join(skipped) if skipped else "every detector needs pairs only"
            if name == "eager":
                return Choice(name, why, (name,))
            return Choice("auto", f"the faster of {name} and eager for each batch shape, timed; {why}", (name, "eager"))
    raise AssertionError("eager always serves")


LayerSink = Callable[[int, dict[str, torch.Tensor]], None]  # (layer, {detector: (B, H[, C])})


@dataclass
class _Pending:
    layer: int
    q: torch.Tensor
    k: torch.Tensor
    lse: torch.Tensor
    spec: AttentionSpec
    mass: torch.Tensor | None
    rows: dict[str, torch.Tensor]

    @property
    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in (self.q, self.k, self.lse))


class LayerScorer:
    """Scores every layer of one batch on one route and hands them to ``sink(layer, scores)``.

    Kernel routes defer the pair sums: each layer's queries, keys and log-sum-exp are kept (up to
    ``defer_mb``) and consecutive layers with the same rules are evaluated together, stacked along the head
    axis (grouped-query head h still reads key head h // g). At short context this turns ~30 rounds of small
    tensor operations into one; at long context one layer fills the budget and is evaluated alone. Call
    :meth:`flush` after the forward.
    """

    def __init__(self, detectors: Sequence[Detector], batch: Batch, sink: LayerSink,
                 block_mb: float = DEFAULT_BLOCK_MB, defer_mb: float = DEFER_MB):
        self.detectors, self.batch, self.sink = list(detectors), batch, sink
        self.block_mb, self.defer_mb = block_mb, defer_mb
        self.rows = [d for d in self.detectors if d.needs == "rows"]
        T = batch.input_ids.shape[1]
        keysets = batch.needs.keysets
        self.big = [n for n, ks in keysets.items() if int((ks.keys > 0).sum(-1).max()) * SMALL_SET > T]
        self.small = [n for n in keysets if n not in self.big]
        self.indicators = self._indicators(self.big)
        self.pending: list[_Pending] = []
        self._plans: dict[int, list] = {}
        self._pattern: torch.Tensor | None = None
        self.reduced: list[tuple[int, int, dict[str, torch.Tensor], dict[str, torch.Tensor]]] = []
        self.held: list[tuple[int, torch.Tensor, dict[str, torch.Tensor]]] = []

    @property
    def groups(self) -> Groups | None:
        """The batch's token groups where token matches are declared (built on first use: the dense pattern
        needs none)."""
        return self.batch.groups if self.batch.needs.matches else None

    def _pair_pattern(self) -> torch.Tensor:
        if self._pattern is None:
            self._pattern = pair_pattern(self.batch.needs, self.batch.input_ids, self.batch.attention_mask)
        return self._pattern

    def _pattern_fits(self) -> bool:
        B, T = self.batch.input_ids.shape
        n = len(pattern_names(self.batch.needs))
        return 0 < B * T * T * n * 4 <= min(self.block_mb, PATTERN_MB) * 2**20

    def from_probs(self, layer: int, probs: torch.Tensor) -> None:
        """Eager route: the layer's full probabilities (B, H, T, T), reduced (the reference). Where the dense
        pattern fits, layers with the same head count are held (up to ``defer_mb``) and reduced together, stacked
        along the head axis, as the kernel routes defer theirs. The small sums are kept and scored with the other
        layers' at :meth:`flush`, so detectors score once a batch."""
        rows = {d.name: d.reduce_rows(probs, 0, 0, self.batch) for d in self.rows}
        if not self._pattern_fits():
            H = probs.shape[1]
            sums = evaluate(self.batch.needs, ProbsView(probs), self.groups, H, lambda: self._plan(H))
            self.reduced.append((layer, H, sums, rows))
            return
        held = sum(p.numel() * p.element_size() for _, p, _ in self.held)
        if self.held and (self.held[0][1].shape[1] != probs.shape[1]
                          or held + probs.numel() * probs.element_size() > self.defer_mb * 2**20):
            self._reduce_held()
        self.held.append((layer, probs, rows))

    def _reduce_held(self) -> None:
        """The held layers' sums from one stacked view: one band, one product with the pattern."""
        held, self.held = self.held, []
        H = held[0][1].shape[1]
        stacked = held[0][1] if len(held) == 1 else torch.cat([p for _, p, _ in held], 1)  # (B, n·H, T, T)
        n = stacked.shape[1]
        sums = evaluate(self.batch.needs, ProbsView(stacked), None, n, pattern=self._pair_pattern)
        for i, (layer, _, rows) in enumerate(held):
            self.reduced.append((layer, H, {k: v[:, i * H:(i + 1) * H] for k, v in sums.items()}, rows))

    def kernel(self, route: str) -> KernelHandler:
        """The handler :func:`headlab.attention.hooks.capture_kernel` calls for the fused or chunked route."""

        def handle(layer: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, spec: AttentionSpec) -> torch.Tensor:
            rows: dict[str, torch.Tensor] = {}
            if route == "fused":
                out, lse, mass = fused.attend(q, k, v, spec, self.indicators, self.block_mb)
            else:
                def on_rows(probs: torch.Tensor, q0: int, k0: int) -> None:
                    for d in self.rows:
                        part = d.reduce_rows(probs, q0, k0, self.batch)
                        rows[d.name] = part if d.name not in rows else rows[d.name] + part

                out, lse, mass = chunked.attend(q, k, v, spec, self.indicators, self.block_mb, on_rows)
            self._defer(_Pending(layer, q, k, lse, spec, mass, rows))
            return out

        return handle

    def _defer(self, item: _Pending) -> None:
        if self.pending and (
            not _same_rules(self.pending[0].spec, item.spec)
            or sum(p.nbytes for p in self.pending) + item.nbytes > self.defer_mb * 2**20
        ):
            self.flush()
        self.pending.append(item)

    def flush(self) -> None:
        """Evaluate and emit every deferred layer."""
        if self.held:
            self._reduce_held()
        if self.reduced:
            self._emit_reduced()
        if not self.pending:
            return
        items, self.pending = self.pending, []
        H = items[0].q.shape[1]
        cat = lambda ts: ts[0] if len(ts) == 1 else torch.cat(ts, 1)  # stack layers along the head axis
        view = LogitsView(
            cat([p.q for p in items]), cat([p.k for p in items]), cat([p.lse for p in items]), items[0].spec
        )
        mass = cat([p.mass for p in items]) if self.big else None
        n = H * len(items)
        sums = evaluate(
            self.batch.needs, view, self.groups, n, lambda: self._plan(n), keyset_mass=self._keyset_mass(view, mass)
        )
        rows = {d.name: cat([p.rows[d.name] for p in items]) for d in self.rows}
        self._emit([p.layer for p in items], H, sums, rows)

    def _plan(self, n_heads: int) -> list:
        if n_heads not in self._plans:
            budget = min(self.block_mb, EVAL_MB) * 2**20
            max_pairs = int(budget // (4 * 3 * n_heads))  # logits, probabilities, a temporary
            T = self.batch.input_ids.shape[1]
            self._plans[n_heads] = match_plan(self.batch.needs, self.batch.groups, T, max_pairs)
        return self._plans[n_heads]

    def _indicators(self, names: list[str]) -> torch.Tensor | None:
        if not names:
            return None
        return torch.stack([self.batch.needs.keysets[n].keys for n in names], -1)  # (B, T, m)

    def _keyset_mass(self, view: LogitsView, mass: torch.Tensor | None) -> torch.Tensor | None:
        """(B, H, T, m) in the declared order: big sets from the kernel's columns, small ones from the view."""
        if not self.big and not self.small:
            return None
        cols = {}
        if self.big:
            cols.update({n: mass[..., c].float() for c, n in enumerate(self.big)})  # type: ignore[index]
        if self.small:
            got = view.keyset_mass(self._indicators(self.small))  # type: ignore[arg-type]
            cols.update({n: got[..., c] for c, n in enumerate(self.small)})
        return torch.stack([cols[n] for n in self.batch.needs.keysets], -1)

    def _emit_reduced(self) -> None:
        """The eager route's kept layers, stacked along the head axis (one head count per stack)."""
        reduced, self.reduced = self.reduced, []
        H = reduced[0][1]
        if any(h != H for _, h, _, _ in reduced):
            for layer, h, sums, rows in reduced:
                self._emit([layer], h, sums, rows)
            return
        cat = lambda ts: torch.cat(ts, 1)
        sums = {name: cat([r[2][name] for r in reduced]) for name in reduced[0][2]}
        rows = {name: cat([r[3][name] for r in reduced]) for name in reduced[0][3]}
        self._emit([r[0] for r in reduced], H, sums, rows)

    def _emit(self, layers: list[int], H: int, sums: dict[str, torch.Tensor], rows: dict[str, torch.Tensor]) -> None:
        self.batch.set_layer(sums, rows)
        try:
            scores = {d.name: d.score(self.batch) for d in self.detectors}  # (B, len(layers) * H[, C])
        finally:
            self.batch.set_layer(None)
        for i, layer in enumerate(layers):
            self.sink(layer, {name: s[:, i * H : (i + 1) * H] for name, s in scores.items()})


def _same_rules(a: AttentionSpec, b: AttentionSpec) -> bool:
    if (a.causal, a.scale, a.window, a.softcap) != (b.causal, b.scale, b.window, b.softcap):
        return False
    if a.key_mask is None or b.key_mask is None:
        return a.key_mask is b.key_mask
    return a.key_mask is b.key_mask or bool(torch.equal(a.key_mask, b.key_mask))


def score_layer(detectors: "list[Detector] | tuple[Detector, ...]", attn: torch.Tensor,
                batch: Batch) -> dict[str, torch.Tensor]:
    """Scores of one layer from its full probabilities ``attn`` (B, H, T, T): the eager route's reference
    evaluation. Call :func:`prepare_batch` once per batch first."""
    H = attn.shape[1]
    groups = batch.groups if batch.needs.matches else None
    sums = evaluate(batch.needs, ProbsView(attn), groups, H, lambda: match_plan(batch.needs, batch.groups,
                                                                                  attn.shape[-1], 1 << 24))
    rows = {d.name: d.reduce_rows(attn, 0, 0, batch) for d in detectors if d.needs == "rows"}
    batch.set_layer(sums, rows)
    try:
        return {d.name: d.score(batch) for d in detectors}
    finally:
        batch.set_layer(None)
