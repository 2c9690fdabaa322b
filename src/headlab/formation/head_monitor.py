"""The head monitor during training (``[monitor]`` in the training TOML): every ``every`` steps, the per-head
scores of a fixed probe set, appended to ``RUN/monitor.jsonl``, with warnings for collapse patterns.

Probe: the run's held-out probe windows (real text, never trained on) for the `/` mass, previous-token, sink and
entropy scores; repeated random tokens for induction (the probes of :mod:`headlab.formation.tracking`). ``entropy`` is
normalized by the entropy of uniform attention over the same visible keys: 1 is uniform, 0 is one key.

Rules, applied after the warm-up (a freshly initialized model attends uniformly by construction); each is said
when it starts to hold and again only after it has stopped holding:

* ``all-sink``: every head puts more than ``sink`` of its attention on the first token;
* ``entropy-collapse``: every head's normalized entropy is below ``entropy_low``;
* ``entropy-uniform``: every head's normalized entropy is above ``entropy_high``;
* ``lost-head``: a head whose `/` mass, previous-token or induction score reached ``specialized`` at an earlier
  row now scores below ``drop`` times its peak (said once, again only after it recovers).

A row: ``{"step", "scores": {metric: [[L x H]]}, "holding": [rules that hold], "warnings": [{"rule", "message"}
said at this row]}``; a resumed run drops the rows after its checkpoint (as for ``metrics.jsonl``) and rebuilds
its state (peaks, rules holding) from the rows it keeps.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import torch

from headlab.corpus import repeat_probe
from headlab.head import name as head_name
from headlab.io import AppendLog, read_jsonl
from headlab.nn import as_loaded
from headlab.notices import say
from headlab.probes.scoring import rows_to_samples, score_probes
from headlab.training.config import MonitorConfig

METRICS = ("slash_mass", "previous-token", "induction", "sink", "entropy")
TRACKED = ("slash_mass", "previous-token", "induction")


def uniform_entropy(lengths: list[int], causal: bool) -> float:
    """Mean over samples and queries of ln(keys the query may see): the entropy of uniform attention."""
    per = [float(np.mean([math.log(i + 1) for i in range(n)])) if causal else math.log(n) for n in lengths if n > 0]
    return float(np.mean(per)) if per else 1.0


def collapse_warnings(scores: dict[str, np.ndarray], cfg: MonitorConfig) -> list[dict[str, str]]:
    """The all-sink and entropy rules on one row of (L, H) scores."""
    out = []
    sink, ent = scores["sink"], scores["entropy"]
    if np.all(sink > cfg.sink):
        out.append({"rule": "all-sink", "message": f"every head parks > {cfg.sink:.0%} of its attention on the "
                    f"first token (least: {np.nanmin(sink):.2f})"})
    if np.all(ent < cfg.entropy_low):
        out.append({"rule": "entropy-collapse", "message": f"every head's attention entropy is below "
                    f"{cfg.entropy_low} of uniform (highest: {np.nanmax(ent):.3f}): attention collapsed onto "
                    "single keys"})
    if np.all(ent > cfg.entropy_high):
        out.append({"rule": "entropy-uniform", "message": f"every head's attention entropy is above "
                    f"{cfg.entropy_high} of uniform (lowest: {np.nanmin(ent):.3f}): no head attends selectively yet "
                    "(normal for a young model; a concern if it persists)"})
    return out


class PeakWatch:
    """The lost-head rule: peaks of every tracked (metric, head), and the heads now below ``drop`` x peak."""

    def __init__(self, specialized: float, drop: float):
        self.specialized, self.drop = specialized, drop
        self.peaks: dict[tuple[str, int, int], float] = {}
        self.lost: set[tuple[str, int, int]] = set()

    def update(self, scores: dict[str, np.ndarray]) -> list[dict[str, str]]:
        out = []
        for m in TRACKED:
            for (layer, head), v in np.ndenumerate(np.nan_to_num(scores[m], nan=0.0)):
                key = (m, layer, head)
                peak = self.peaks.get(key, 0.0)
                if peak >= self.specialized and v < self.drop * peak:
                    if key not in self.lost:
                        self.lost.add(key)
                        out.append({"rule": "lost-head", "message": f"head {head_name(layer, head)} lost its {m} "
                                    f"score: {v:.2f}, down from a peak of {peak:.2f}"})
                else:
                    self.lost.discard(key)
                self.peaks[key] = max(peak, float(v))
        return out


class HeadMonitor:
    """Trainer callback writing ``monitor.jsonl`` every ``cfg.every`` steps (and at step 1)."""

    def __init__(self, run: Path, cfg: MonitorConfig, probe_ids: torch.Tensor, probe_mask: torch.Tensor,
                 tokenizer: Any, max_length: int, causal: bool, warmup: int):
        self.cfg, self.tokenizer, self.warmup = cfg, tokenizer, warmup
        self.natural = rows_to_samples(probe_ids, probe_mask, "probe")
        self.repeat = repeat_probe(tokenizer, max(8, len(self.natural)), max_length, seed=0)
        self.uniform = uniform_entropy([len(s.input_ids) for s in self.natural], causal)
        self.path = Path(run) / "monitor.jsonl"
        self.watch = PeakWatch(cfg.specialized, cfg.drop)
        self.holding: set[str] = set()
        for row in read_jsonl(self.path) if self.path.exists() else []:
            self.watch.update({m: np.array(v, dtype=float) for m, v in row["scores"].items()})
            self.holding = set(row["holding"])
        self.log = AppendLog(self.path)

    def measure(self, model: torch.nn.Module) -> dict[str, np.ndarray]:
        """(L, H) per metric of :data:`METRICS` for the model as it is now (its train/eval mode is restored)."""

        was_training = model.training
        try:
            loaded = as_loaded(model, self.tokenizer, "monitor")  # type: ignore[arg-type]
            scores = score_probes(loaded, {"natural": self.natural, "repeat": self.repeat}, METRICS)
        finally:
            model.train(was_training)
        return {**scores, "entropy": scores["entropy"] / self.uniform}

    def on_step(self, trainer: Any, step: int, loss: float) -> None:
        if step != 1 and step % self.cfg.every:
            return
        scores = self.measure(trainer.model)
        found = self.watch.update(scores)
        collapse = collapse_warnings(scores, self.cfg) if step > self.warmup else []
        found = [w for w in collapse if w["rule"] not in self.holding] + found
        self.holding = {w["rule"] for w in collapse}
        for w in found:
            say(f"head monitor, step {step}: {w['message']}")
        self.log.write({"step": step, "scores": {m: np.where(np.isnan(a), None, a).tolist()  # type: ignore[call-overload]
                                                 for m, a in scores.items()},
                        "holding": sorted(self.holding), "warnings": found})

    def flush(self) -> None:
        self.log.flush()

    def close(self) -> None:
        self.log.close()


def read_monitor(run: str | Path) -> tuple[list[int], dict[str, np.ndarray], list[dict[str, Any]]]:
    """``monitor.jsonl`` as steps, ``{metric: (S, L, H)}`` and every warning with its step."""
    path = Path(run) / "monitor.jsonl"
    rows = read_jsonl(path) if path.exists() else []
    steps = [r["step"] for r in rows]
    series = {m: np.array([r["scores"][m] for r in rows], dtype=float) for m in (rows[0]["scores"] if rows else [])}
    return steps, series, [dict(w, step=r["step"]) for r in rows for w in r["warnings"]]
