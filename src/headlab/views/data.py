"""What a viewer page shows: :class:`ViewData`, and the attention maps captured for it.

A page has samples (token strings, with the ``/`` positions marked), one or more checkpoints (a plain model has
one), per checkpoint a ``(L, H)`` array per score, optionally SDH marks, retrieval labels, the labelled circuit
and the tracker's phases, and the stored attention maps keyed by ``(checkpoint, sample, layer, head)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np
import torch

from headlab.attention.hooks import capture
from headlab.census.engine import collate, forward
from headlab.corpus import Sample
from headlab.detectors.base import DETECTORS
from headlab.errors import HeadlabError
from headlab.io import _clean
from headlab.models import LoadedModel
from headlab.models.loaded import device_of
from headlab.views.codec import quantize


@dataclass
class ViewSample:
    name: str
    ids: list[int]
    tokens: list[str]  # one display string per token
    marked: list[int]  # token positions to highlight (the '/' tokens, or the retrieval chain)
    bytes: list[str] = field(default_factory=list)  # per token: its raw bytes in hex where a character is split


@dataclass
class ViewData:
    title: str
    subtitle: str
    kind: str  # "model", "scan", "training" or "retrieval"
    n_layers: int
    n_heads: int
    causal: bool
    samples: list[ViewSample]
    steps: list[int | None]  # one entry per checkpoint; [None] for a plain model
    scores: list[dict[str, np.ndarray]]  # per checkpoint: score name -> (L, H)
    maps: dict[tuple[int, int, int, int], bytes] = field(default_factory=dict)  # (ck, sample, layer, head)
    sdh: np.ndarray | None = None  # (L, H) bool
    labels: list[list[str]] | None = None
    circuit: list[dict[str, Any]] | None = None
    phases: dict[str, Any] | None = None  # score -> "l.h" -> [phase dicts]
    notes: list[str] = field(default_factory=list)
    scale: str = "sqrt"  # map quantization, see headlab.views.codec
    marked_label: str = "'/'"  # what the highlighted tokens are

    def meta(self) -> dict[str, Any]:
        metrics = list(self.scores[0]) if self.scores else []
        return _clean(
            {
                "title": self.title,
                "subtitle": self.subtitle,
                "kind": self.kind,
                "n_layers": self.n_layers,
                "n_heads": self.n_heads,
                "causal": self.causal,
                "samples": [
                    {"name": s.name, "tokens": s.tokens, "marked": s.marked, "bytes": s.bytes} for s in self.samples
                ],
                "steps": [s if s is not None else 0 for s in self.steps],
                "metrics": metrics,
                "about": {m: w for m in metrics if (w := about(m))},
                "scores": [{m: np.asarray(sc[m], dtype=float).tolist() for m in metrics} for sc in self.scores],
                "map_checkpoints": sorted({c for c, _, _, _ in self.maps}),
                "sdh": self.sdh.astype(bool).tolist() if self.sdh is not None else None,
                "labels": self.labels,
                "circuit": self.circuit,
                "phases": self.phases,
                "scale": self.scale,
                "marked_label": self.marked_label,
                "notes": self.notes,
            }
        )


def about(metric: str) -> str:
    """What a score means in words, as the detector that makes it declares (``offset``: SlashScore at the head's
    best Δ); empty for a score no registered detector makes (a probe's, the monitor's)."""
    cls = DETECTORS.get(metric.replace("_", "-"))
    return "" if cls is None else cls.meaning or cls.shown_as()


#: shown on a token that holds only part of a character's bytes (byte-level BPE splits CJK and emoji)
PARTIAL = "\u2026"


def display_tokens(tokenizer: Any, ids: Sequence[int]) -> list[str]:
    """One readable string per token (decoded alone, so byte-level BPE shows spaces, not 'Ġ').

    A character split across tokens decodes to U+FFFD piece by piece; the token that completes it shows the
    whole character (with the pieces before it marked ``…``), as long as at most 8 tokens make one up.
    """
    out: list[str] = []
    pending: list[int] = []
    for i in ids:
        t = tokenizer.decode([int(i)])
        if "\ufffd" in t or pending:
            pending.append(int(i))
            merged = tokenizer.decode(pending)
            if "\ufffd" in merged and len(pending) < 8:
                out.append(PARTIAL)
                continue
            t, pending = merged, []
        out.append(t if t.strip() else repr(t)[1:-1] or "␣")
    return out


def _byte_decoder() -> dict[str, int]:
    """Byte-level BPE's printable stand-ins for the 256 bytes (GPT-2's published table)."""
    keep = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    chars, extra = list(keep), 0
    for b in range(256):
        if b not in keep:
            keep.append(b)
            chars.append(256 + extra)
            extra += 1
    return {chr(c): b for b, c in zip(keep, chars)}


_BYTE_DECODER = _byte_decoder()


def token_bytes(tokenizer: Any, i: int) -> bytes | None:
    """The raw bytes of one token: byte-level BPE pieces and SentencePiece ``<0xHH>`` fallbacks; None otherwise."""
    piece = tokenizer.convert_ids_to_tokens(int(i))
    if not isinstance(piece, str):
        return None
    if len(piece) == 6 and piece.startswith("<0x") and piece.endswith(">"):
        return bytes([int(piece[3:5], 16)])
    if all(c in _BYTE_DECODER for c in piece):
        return bytes(_BYTE_DECODER[c] for c in piece)
    return None


def byte_hints(tokenizer: Any, ids: Sequence[int], tokens: Sequence[str]) -> list[str]:
    """Per token, its bytes in hex where :func:`display_tokens` merged a split character (else "")."""
    out, merging = [], False
    for i, t in zip(ids, tokens):
        merging = t == PARTIAL or merging
        b = token_bytes(tokenizer, i) if merging else None
        out.append(b.hex(" ") if b else "")
        merging = t == PARTIAL
    return out


def make_sample(tokenizer: Any, name: str, ids: Sequence[int], marked: Sequence[int]) -> ViewSample:
    """A sample with its display tokens and the bytes behind any split character."""
    tokens = display_tokens(tokenizer, ids)
    return ViewSample(name, list(ids), tokens, list(marked), byte_hints(tokenizer, ids, tokens))


def text_sample(loaded: LoadedModel, text: str, name: str, marker: str = "/", bos: bool = False) -> ViewSample:
    """Tokenize ``text`` with the model's special tokens (``bos``: and the beginning-of-sequence token first,
    where the tokenizer adds none); longer than the model's window is an error."""
    if not text.strip():
        raise HeadlabError(f"{name}: the text is empty")
    ids = list(loaded.tokenizer(text)["input_ids"])
    first = loaded.tokenizer.bos_token_id
    if bos and first is None:
        raise HeadlabError(f"--bos: {loaded.name}'s tokenizer has no beginning-of-sequence token; leave --bos out")
    if bos and ids[:1] != [first]:
        ids = [first, *ids]
    if len(ids) > loaded.facts.max_length:
        raise HeadlabError(
            f"{name} is {len(ids)} tokens; {loaded.name}'s window is {loaded.facts.max_length}: "
            "shorten the text (headlab does not truncate silently)"
        )
    slash = loaded.ids_containing(marker)
    return make_sample(loaded.tokenizer, name, ids, [i for i, t in enumerate(ids) if t in slash])


@torch.no_grad()
def capture_maps(loaded: LoadedModel, ids: Sequence[int], sink: Callable[[int, int, np.ndarray], None]) -> None:
    """Run one sample and hand every head's ``(T, T)`` attention map to ``sink(layer, head, map)`` as the layer
    is computed, so a long input never holds all layers' maps at once."""

    def on_layer(layer: int, probs: torch.Tensor) -> None:  # probs (1, H, T, T)
        p = probs[0].float().cpu().numpy()
        for h in range(p.shape[0]):
            sink(layer, h, p[h])

    # one sample, so nothing is padded and the pad id is irrelevant (a retrieval model has no tokenizer)
    batch = collate([Sample(0, "view", 0, tuple(int(i) for i in ids))], 0, loaded.facts.causal, device_of(loaded.model))
    with capture(loaded.model, on_layer):
        forward(loaded, batch)


def store_maps(data: ViewData, loaded: LoadedModel, checkpoint: int) -> None:
    """Capture and quantize every head's map on every sample of ``data`` for one checkpoint."""
    for s, sample in enumerate(data.samples):
        def sink(layer: int, head: int, m: np.ndarray, s: int = s) -> None:
            data.maps[(checkpoint, s, layer, head)] = quantize(m, loaded.facts.causal, data.scale)

        capture_maps(loaded, sample.ids, sink)
