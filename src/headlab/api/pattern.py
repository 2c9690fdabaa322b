"""``headlab.pattern``: one head's attention pattern on one text, as a labelled ``(T, T)`` array that draws
itself in a notebook (what TransformerLens users reach for with ``cache["pattern", L][h]``)."""

from __future__ import annotations

import base64
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from headlab.display import Displayable, markdown_html
from headlab.errors import HeadlabError, in_callers_words
from headlab.head import Head
from headlab.io import claim_file
from headlab.models import resolve
from headlab.models.loaded import LoadedModel
from headlab.plotting import new_figure, save_figure
from headlab.settings import takes_run
from headlab.views.data import capture_maps, text_sample


@dataclass
class Pattern(Displayable):
    """``probs[i, j]``: the attention of query ``i`` on key ``j`` (rows sum to 1); ``tokens`` label both axes.
    ``np.asarray(p)`` is the array; in a notebook it shows a heatmap on a fixed 0-1 scale and each query's
    strongest key."""

    model: str
    head: Head
    tokens: list[str]
    probs: np.ndarray  # (T, T) float32

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return self.probs if dtype is None else self.probs.astype(dtype)

    def markdown(self, rows: int | None = 24) -> str:
        """Each query's strongest key, for the first ``rows`` queries (None or 0: every query)."""
        T = len(self.tokens)
        shown = T if not rows else min(T, rows)
        lines = [f"**{self.model}**, head {self.head}: {T} tokens", "", "| query | strongest key | share |",
                 "|---|---|---|"]
        for i in range(shown):
            j = int(np.argmax(self.probs[i]))
            lines.append(f"| {i} `{self.tokens[i]}` | {j} `{self.tokens[j]}` | {self.probs[i, j]:.3f} |")
        more = ["", f"({T - shown} more queries: markdown(rows=None) in Python, --rows 0 on the command line)"]
        return "\n".join(lines + (more if T > shown else [])) + "\n"

    def figure(self) -> Any:
        """The pattern as a heatmap (matplotlib figure), queries down, keys across, colour scale fixed at 0-1."""

        T = len(self.tokens)
        size = min(12.0, 2.0 + 0.22 * T)
        fig = new_figure(figsize=(size + 1.2, size))
        ax = fig.subplots()
        im = ax.imshow(self.probs, vmin=0.0, vmax=1.0, cmap="viridis", interpolation="nearest")
        ticks = range(T) if T <= 64 else range(0, T, max(1, T // 32))
        ax.set_xticks(list(ticks), [self.tokens[k] for k in ticks], rotation=90, fontsize=7)
        ax.set_yticks(list(ticks), [self.tokens[k] for k in ticks], fontsize=7)
        ax.set(xlabel="key", ylabel="query", title=f"{self.model}: head {self.head}")
        fig.colorbar(im, ax=ax, label="attention share (0-1)")
        fig.tight_layout()
        return fig

    def _repr_html_(self) -> str:
        buf = io.BytesIO()
        self.figure().savefig(buf, format="png", dpi=90)
        img = base64.b64encode(buf.getvalue()).decode()
        return f'<img alt="attention pattern" src="data:image/png;base64,{img}"/>' + markdown_html(self.markdown())


@in_callers_words
@takes_run
def pattern(model: str | LoadedModel, text: str, head: str | Head, *, bos: bool = False, device: str,
            dtype: str, out: str | Path | None, overwrite: bool) -> Pattern:
    """One head's attention probabilities on ``text`` (tokenized with the model's special tokens, as ``scan``
    tokenizes; longer than the model's window is refused, never truncated); ``bos``: put the tokenizer's
    beginning-of-sequence token first where it adds none itself (TransformerLens's ``prepend_bos`` default, so a
    pattern compares with its ``cache["pattern", L]``). A model given by name is loaded in ``dtype``. With
    ``out`` (a ``.png`` file, never replaced unless ``overwrite``), the heatmap is written there too.

    Example:

        p = headlab.pattern("minilm-l6", "See https://example.org/a/b for the a/b split.", "0.2")
        p                      # in Jupyter: the heatmap and each query's strongest key
        np.asarray(p).shape    # (T, T)
    """

    if not isinstance(text, str):
        raise HeadlabError(f"text {text!r}: give one string")
    wanted = head if isinstance(head, Head) else Head.parse(str(head))
    if out is not None:
        if Path(out).suffix.lower() != ".png":
            raise HeadlabError(f"--out {out}: the heatmap is a PNG file; give a name ending in .png")
        claim_file(out, overwrite)  # before the model loads
    loaded = resolve(model, device=device, dtype=dtype)
    wanted.check(loaded.facts.n_layers, loaded.facts.n_heads)
    sample = text_sample(loaded, text, "text", bos=bos)
    got: dict[str, np.ndarray] = {}

    def sink(layer: int, h: int, m: np.ndarray) -> None:
        if (layer, h) == (wanted.layer, wanted.head):
            got["map"] = m.astype(np.float32, copy=True)

    capture_maps(loaded, sample.ids, sink)
    found = Pattern(loaded.name, wanted, list(sample.tokens), got["map"])
    if out is not None:
        save_figure(found.figure(), Path(out))
    return found
