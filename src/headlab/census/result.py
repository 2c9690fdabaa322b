"""The result of a scan (``scan.json`` and ``heads.csv``): per-head statistics of every detector and the SDH marks."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from headlab.census.stats import SDH
from headlab.detectors import DETECTORS, Detector
from headlab.errors import HeadlabError
from headlab.head import name as head_name
from headlab.interrupts import Terminated
from headlab.io import write_csv_atomic
from headlab.result import Result, per_head
from headlab.values import validate

#: patterns that can explain a head's `/` mass (a previous-token head puts mass on whatever precedes it)
EXPLAINING = ("previous-token", "sink", "duplicate-token", "induction")
#: how far a stored mean may stray past its detector's bounds: a probability near 1 rounds to 1 in bfloat16, so masses
#: summed from bfloat16 probabilities may pass 1 by a few thousandths; a forged score is far outside
BOUND_SLACK = 1e-2
#: statistics scan.json derives from the token and offset scores (``_`` names): not scores of a detector
DERIVED = ("token_std", "token_frac_above", "token_max_run", "offset_delta", "offset_by_delta")


def summarize(name: str, value: Any) -> dict[str, Any]:
    """A head's entries in scan.json for one detector's mean score, as the detector declares them (a detector
    no longer registered: a float, or the list of its columns)."""
    return DETECTORS.get(name, Detector).summarize(name, value)


@dataclass
class ScanResult(Result):
    """Per-head statistics of one scan. ``means[name]`` is ``(L, H)`` (``(L, H, K+1)`` for offset).

    In a notebook it shows :meth:`table`; ``to_pandas()`` gives one row per head (the columns of ``heads.csv``)
    and :meth:`per_sample` the per-sample scores of a scan run with ``per_sample=``."""

    model: str
    n_layers: int
    n_heads: int
    n_samples: int
    n_samples_with_target: int
    n_tokens: int
    settings: dict[str, Any]
    means: dict[str, np.ndarray]
    stds: dict[str, np.ndarray]
    token_frac_above: np.ndarray | None
    token_max_run: np.ndarray | None
    sdh: np.ndarray  # (L, H) bool
    interrupted: bool = False
    warnings: list[str] = field(default_factory=list)
    interrupted_by: str | None = None  # "SIGINT" or "SIGTERM" when ``interrupted``

    @property
    def sdh_share(self) -> float | None:
        """Share of all heads that pass the slash-dominance rule; None (undefined) when fewer samples hold the
        target than the rule's k consecutive samples: no head could pass, so 0 would be a non-result."""
        k = int(self.settings.get("sdh_rule", {}).get("consecutive", 1))
        if self.token_frac_above is None or self.n_samples_with_target < max(k, 1):
            return None
        return float(self.sdh.sum()) / (self.n_layers * self.n_heads)

    def head_scores(self, layer: int, head: int) -> dict[str, Any]:
        s: dict[str, Any] = {}
        for name, mean in self.means.items():
            s.update(summarize(name, mean[layer, head]))
        if "token" in self.means:
            s["token_std"] = float(self.stds["token"][layer, head])
            s["token_frac_above"] = (
                float(self.token_frac_above[layer, head]) if self.token_frac_above is not None else None
            )
            s["token_max_run"] = int(self.token_max_run[layer, head]) if self.token_max_run is not None else None
        return s

    def heads(self) -> list[dict[str, Any]]:
        return [
            {"layer": l, "head": h, "name": head_name(l, h), "scores": self.head_scores(l, h),
             "sdh": bool(self.sdh[l, h])}
            for l in range(self.n_layers)
            for h in range(self.n_heads)
        ]

    KIND = "scan.json"
    COMPANIONS = ("heads.csv",)
    KEYS = ("model", "n_layers", "n_heads", "n_samples", "n_samples_with_target", "n_tokens", "settings",
            "sdh_share", "n_sdh", "interrupted", "interrupted_by", "warnings", "heads")

    def to_json(self, heads: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        return {
            "model": self.model,
            "n_layers": self.n_layers,
            "n_heads": self.n_heads,
            "n_samples": self.n_samples,
            "n_samples_with_target": self.n_samples_with_target,
            "n_tokens": self.n_tokens,
            "settings": self.settings,
            "sdh_share": self.sdh_share,
            "n_sdh": int(self.sdh.sum()),
            "interrupted": self.interrupted,
            "interrupted_by": self.interrupted_by,
            "warnings": self.warnings,
            "heads": heads if heads is not None else self.heads(),
        }

    @classmethod
    def decode(cls, d: dict[str, Any]) -> "ScanResult":
        """The result of a ``scan.json`` (the inverse of :meth:`to_json`: means of every detector, the token
        detector's spread and the SDH marks; other detectors' spreads are not stored)."""
        L, H, heads = d["n_layers"], d["n_heads"], d["heads"]
        means = {}
        for key in heads[0]["scores"] if heads else []:
            if key in DERIVED:
                continue
            get = (lambda h: h["scores"]["offset_by_delta"]) if key == "offset" else (lambda h, k=key: h["scores"][k])
            means[key.replace("_", "-")] = per_head(heads, L, H, get)  # older scan.json files say previous_token
        has_token = "token" in means
        frac = per_head(heads, L, H, lambda h: h["scores"]["token_frac_above"]) if has_token else None
        runs = per_head(heads, L, H, lambda h: h["scores"]["token_max_run"]) if has_token else None
        return ScanResult(
            model=d["model"], n_layers=L, n_heads=H, n_samples=d["n_samples"],
            n_samples_with_target=d["n_samples_with_target"], n_tokens=d["n_tokens"], settings=d["settings"],
            means=means, stds={"token": per_head(heads, L, H, lambda h: h["scores"]["token_std"])} if has_token else {},
            token_frac_above=None if frac is None or np.isnan(frac).all() else frac,
            token_max_run=None if runs is None or np.isnan(runs).all() else runs.astype(int),
            sdh=per_head(heads, L, H, lambda h: h["sdh"]).astype(bool), interrupted=d["interrupted"],
            warnings=list(d["warnings"]), interrupted_by=d["interrupted_by"]).consistent(d)

    def consistent(self, doc: dict[str, Any]) -> "ScanResult":
        """This scan, refused in one line when its numbers are not what a scan can write: a score outside its
        detector's ``bounds``, an SDH mark that is not the strict rule's reading of the token's longest run, a
        count that is not its marks' (a forged file sealed again reads as it was, but not as measured)."""
        for name, mean in self.means.items():
            lo, hi = getattr(DETECTORS.get(name), "bounds", None) or (-np.inf, np.inf)
            bad = np.argwhere((mean < lo - BOUND_SLACK) | (mean > hi + BOUND_SLACK))  # NaN (undefined) compares False
            if bad.size:
                at = tuple(bad[0])
                raise HeadlabError(f"scan.json: the {name} score {mean[at]:.6g} of head {head_name(*at[:2])} is "
                                   f"outside [{lo:g}, {hi:g}], where every {name} score lies: not a measured scan; "
                                   "scan again")
        k = self.settings.get("sdh_rule", {}).get("consecutive")
        runs = self.token_max_run if self.token_max_run is not None else np.zeros_like(self.sdh, dtype=int)
        marks = runs >= k if isinstance(k, int) else self.sdh
        if (marks != self.sdh).any():
            at = tuple(np.argwhere(marks != self.sdh)[0])
            raise HeadlabError(f"scan.json: head {head_name(*at)} is marked sdh {bool(self.sdh[at])} with a longest "
                               f"run of {int(runs[at])} samples above the threshold, where the strict rule needs {k}: "
                               "not a measured scan; scan again")
        if (runs > self.n_samples_with_target).any() or doc["n_sdh"] != int(self.sdh.sum()) or (
                doc["sdh_share"] != self.sdh_share):
            raise HeadlabError(f"scan.json: n_sdh {doc['n_sdh']}, sdh_share {doc['sdh_share']} or a longest run are "
                               f"not what its {int(self.sdh.sum())} marked head(s) and {self.n_samples_with_target} "
                               "samples with the target give: not a measured scan; scan again")
        return self

    def stop_if_interrupted(self, what: str) -> None:
        """For a command that needs the whole scan: an interrupted scan stops it as the interrupt did (exit 130 for
        Ctrl-C, 143 for SIGTERM) instead of being used as if complete."""
        if self.interrupted:
            stop = Terminated if self.interrupted_by == "SIGTERM" else KeyboardInterrupt
            raise stop(f"{what}: the scan of {self.model} was interrupted after {self.n_samples} samples")

    def require_complete(self, where: str | Path) -> "ScanResult":
        """A stored scan a command builds on must be whole: one line naming it otherwise."""
        if self.interrupted:
            raise HeadlabError(f"{where} holds an interrupted scan ({self.n_samples} samples, stopped by "
                               f"{self.interrupted_by or 'a signal'}); finish it with headlab scan ... --resume "
                               "or scan again")
        return self

    def write_companions(self, folder: Path) -> None:
        """``heads.csv``: one row per head, every detector's mean (a column per column of a detector with several,
        named ``detector:column``) and the SDH mark."""
        heads = self.heads()
        cells = [self._csv_cells(h["scores"]) for h in heads]
        keys = list(cells[0]) if cells else []
        sdh = ["sdh"] if "token" in self.means else []  # the slash-dominance rule reads the token detector
        write_csv_atomic(folder / "heads.csv", ["layer", "head", *keys, *sdh],
                         ([h["layer"], h["head"], *c.values(), *[int(h["sdh"])] * len(sdh)]
                          for h, c in zip(heads, cells)))

    def _csv_cells(self, scores: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in scores.items():
            if not isinstance(value, list):
                out[key] = value
            elif key not in DERIVED:  # a detector's columns, each its own cell
                names = self.settings.get("detectors", {}).get(key, {}).get("columns") or range(len(value))
                out.update({f"{key}:{c}": v for c, v in zip(names, value)})
        return out

    def top(self, name: str, n: int = 5) -> list[tuple[str, float, int | None]]:
        """The ``n`` best heads of one detector: ``(L.H, score, offset Δ or None)``."""
        validate(n=n)
        mean = self.means[name]
        delta = None
        if mean.ndim == 3:
            delta = np.nanargmax(np.where(np.isnan(mean), -np.inf, mean), axis=-1)
            mean = np.nanmax(np.where(np.isnan(mean), -np.inf, mean), axis=-1)
        flat = np.where(np.isnan(mean), -np.inf, mean).ravel()
        best = np.argsort(-flat, kind="stable")[:n]
        return [
            (
                f"{i // self.n_heads}.{i % self.n_heads}",
                float(flat[i]),
                None if delta is None else int(delta.ravel()[i]),
            )
            for i in best
            if np.isfinite(flat[i])
        ]

    def markdown(self, n: int = 5) -> str:
        """The summary as Markdown: one row per detector with its ``n`` top heads, then the SDH rule's count."""
        header, route, rows, sdh = self._summary(n)
        lines = [f"**{header}**", "", route or "", "", "| detector | top heads (mean score) |", "|---|---|"]
        lines += [f"| {name} | {', '.join(cells) or 'undefined'} |" for name, cells in rows]
        return "\n".join(lines + ["", sdh or ""]) + "\n"

    def records(self) -> list[dict[str, Any]]:
        """One row per head, ``L.H`` in ``head``: every detector's mean (offset: the best Δ and its score)."""
        return [{"head": h["name"], "layer": h["layer"], "index": h["head"], "sdh": h["sdh"],
                 **{k: v for k, v in h["scores"].items() if k != "offset_by_delta"}} for h in self.heads()]

    def per_sample(self) -> Any:
        """The per-sample Parquet of this scan as a ``pandas.DataFrame`` (one row per sample; docs/scan.md)."""
        path = self.settings.get("per_sample")
        if not path:
            raise HeadlabError("this scan wrote no per-sample file; scan again with per_sample='FILE.parquet'")
        # deferred: pyarrow.parquet adds ~0.19 s and 18 modules; only Parquet files need it
        import pyarrow.parquet as pq

        return pq.read_table(path).to_pandas()

    def _explained(self, head: str) -> str:
        """`` [previous-token 0.98]`` when another pattern takes most of a top `/` head's attention: its `/` mass
        may then be a side effect of that pattern, not attention to `/`."""

        layer, index = (int(x) for x in head.split("."))
        found = [(float(self.means[k][layer, index]), k) for k in EXPLAINING if k in self.means]
        best = max(((v, k) for v, k in found if np.isfinite(v)), default=None)
        return f" [{best[1]} {best[0]:.2f}]" if best is not None and best[0] > SDH.threshold else ""

    def _summary(self, n: int) -> tuple[str, str | None, list[tuple[str, list[str]]], str | None]:
        """The parts of every summary: header, route, each detector's ``n`` top heads, the SDH rule's count."""
        target = f" ({self.n_samples_with_target} with target)" if self.n_samples_with_target else ""
        header = (f"{self.model}: {self.n_layers}x{self.n_heads} heads, {self.n_samples} samples{target}, "
                  f"{self.n_tokens} tokens"
                  + (f"  [INTERRUPTED by {self.interrupted_by or 'a signal'}: partial, finished batches only]"
                     if self.interrupted else ""))
        route = (f"route: {self.settings['route']}{_picked(self.settings.get('route_by_shape'))} "
                 f"({self.settings.get('route_reason', '')})" if "route" in self.settings else None)
        absent = "token" in self.means and self.n_samples_with_target == 0  # ordinary text: nothing to say on '/'
        rows = [(name, [f"{h}={v:.3f}" + (f" (Δ={d})" if d is not None else "")
                        + (self._explained(h) if name == "token" else "") for h, v, d in self.top(name, n)])
                for name in self.means if not (absent and name == "token")]
        sdh = None
        st = self.settings.get("sdh_rule", {})
        if absent:
            sdh = (f"no sample contains {st.get('target', '/')!r}: the token detector and the SDH rule had nothing "
                   "to score (--target names another token)")
        elif "token" in self.means:
            rule = f"token {st.get('target')!r} > {st.get('threshold')} in {st.get('consecutive')} consecutive samples"
            if self.sdh_share is None:
                sdh = (f"SDH ({rule}): undefined: {self.n_samples_with_target} sample(s) contain the target, "
                       f"fewer than the rule's k = {st.get('consecutive')}")
            else:
                names = [head_name(l, h) for l, h in zip(*np.nonzero(self.sdh))]
                sdh = (f"SDH ({rule}): {len(names)} of {self.n_layers * self.n_heads} heads "
                       f"({100 * self.sdh_share:.1f}%)" + (f": {' '.join(names)}" if names else ""))
        return header, route, rows, sdh

    def table(self, n: int = 5) -> str:
        """A compact human summary: the top heads of each detector and the SDH count."""
        header, route, rows, sdh = self._summary(n)
        lines = [header] + [f"  {route}"] * (route is not None)
        lines += [f"  {name:<16} " + ("  ".join(cells) if cells else "(undefined)") for name, cells in rows]
        return "\n".join(lines + [f"  {sdh}"] * (sdh is not None))


def _picked(by_shape: "dict[str, dict[str, Any]] | None") -> str:
    """`` -> eager for 8x128, fused for 1x2048``: what ``auto`` chose for each batch shape (B x T bucket)."""
    if not by_shape:
        return ""
    return " -> " + ", ".join(f"{c['route']} for {shape}" for shape, c in by_shape.items())
