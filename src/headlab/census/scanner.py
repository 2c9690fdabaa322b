"""The head census: every head of a model scored by every detector over a corpus (``headlab scan``)."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from headlab.attention.routes import DEFAULT_BLOCK_MB, choose
from headlab.census.accumulator import Census
from headlab.census.per_sample import PerSampleWriter
from headlab.census.stream import CKPT_JSON, fingerprint, load_checkpoint, merge_ranks, run
from headlab.corpus import DEFAULT_CORPUS, Document, Sampler, documents
from headlab.detectors import DEFAULT_DETECTORS, Detector, bind_to, make
from headlab.display import Displayable
from headlab.distributed import world
from headlab.errors import HeadlabError
from headlab.head import name as head_name
from headlab.interrupts import Terminated
from headlab.io import write_csv_atomic, write_json_atomic
from headlab.models import LoadedModel, load
from headlab.progress import bar as progress_bar
from headlab.result import per_head, read_json

SCORE_KEYS = ("token", "token_std", "token_frac_above", "token_max_run", "offset", "offset_delta",
              "previous_token", "duplicate_token", "induction", "sink", "entropy")


@dataclass
class ScanResult(Displayable):
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
            key = name.replace("-", "_")
            if name == "offset":
                by_delta = mean[layer, head]
                best = int(np.nanargmax(by_delta)) if not np.all(np.isnan(by_delta)) else None
                s["offset"] = float(by_delta[best]) if best is not None else float("nan")
                s["offset_delta"] = best
                s["offset_by_delta"] = [float(x) for x in by_delta]
            else:
                s[key] = float(mean[layer, head])
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

    @staticmethod
    def from_json(d: dict[str, Any]) -> "ScanResult":
        """The result of a ``scan.json`` (the inverse of :meth:`to_json`: means of every detector, the token
        detector's spread and the SDH marks; other detectors' spreads are not stored)."""
        L, H, heads = d["n_layers"], d["n_heads"], d["heads"]
        derived = {"token_std", "token_frac_above", "token_max_run", "offset_delta", "offset_by_delta"}
        means = {}
        for key in heads[0]["scores"] if heads else []:
            if key in derived:
                continue
            get = (lambda h: h["scores"]["offset_by_delta"]) if key == "offset" else (lambda h, k=key: h["scores"][k])
            means[key.replace("_", "-")] = per_head(heads, L, H, get)
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
            warnings=list(d["warnings"]), interrupted_by=d["interrupted_by"])

    @staticmethod
    def read(path: str | Path) -> "ScanResult":
        return ScanResult.from_json(read_json(path))

    def write(self, out_dir: str | Path) -> Path:
        """Write ``scan.json`` and ``heads.csv`` into ``out_dir`` (atomically) and return the folder."""
        out = Path(out_dir)
        heads = self.heads()
        write_json_atomic(out / "scan.json", self.to_json(heads))
        keys = [k for k in SCORE_KEYS if k in heads[0]["scores"]]
        write_csv_atomic(
            out / "heads.csv",
            ["layer", "head", *keys, "sdh"],
            ([h["layer"], h["head"], *[h["scores"][k] for k in keys], int(h["sdh"])] for h in heads),
        )
        return out

    def top(self, name: str, n: int = 5) -> list[tuple[str, float, int | None]]:
        """The ``n`` best heads of one detector: ``(L.H, score, offset Δ or None)``."""
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
        import pyarrow.parquet as pq

        return pq.read_table(path).to_pandas()

    def _summary(self, n: int) -> tuple[str, str | None, list[tuple[str, list[str]]], str | None]:
        """The parts of every summary: header, route, each detector's ``n`` top heads, the SDH rule's count."""
        header = (f"{self.model}: {self.n_layers}x{self.n_heads} heads, {self.n_samples} samples "
                  f"({self.n_samples_with_target} with target), {self.n_tokens} tokens"
                  + (f"  [INTERRUPTED by {self.interrupted_by or 'a signal'}: partial, finished batches only]"
                     if self.interrupted else ""))
        route = (f"route: {self.settings['route']} ({self.settings.get('route_reason', '')})"
                 if "route" in self.settings else None)
        rows = [(name, [f"{h} {v:.3f}" + (f" (Δ={d})" if d is not None else "") for h, v, d in self.top(name, n)])
                for name in self.means]
        sdh = None
        if "token" in self.means:
            st = self.settings.get("sdh_rule", {})
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


def scan(
    model: str | LoadedModel,
    texts: Sequence[str] | None = None,
    *,
    corpus: Sequence[str] | None = None,
    detectors: Sequence[str | Detector] = DEFAULT_DETECTORS,
    target: str = "/",
    bare: bool = False,
    queries: str = "can-see",
    max_offset: int = 8,
    threshold: float = 0.5,
    consecutive: int = 3,
    max_samples: int | None = 512,
    batch_size: int = 8,
    max_length: int = 128,
    stride: int | None = None,
    seed: int = 0,
    target_filter: str = "any",
    progress: bool = True,
    device: str = "cpu",
    route: str = "auto",
    chunk_mb: float = DEFAULT_BLOCK_MB,
    checkpoint_dir: str | Path | None = None,
    checkpoint_every: int | None = None,
    resume: bool = False,
    per_sample: str | Path | None = None,
) -> ScanResult:
    """Score every attention head of ``model`` over a corpus, streaming.

    Args:
        model: a name or path for :func:`headlab.load`, or a :class:`LoadedModel`.
        texts: texts to scan (Python API); otherwise ``corpus`` sources (named or paths; default wiki+pydoc).
        detectors: registered detector names (or instances). ``token`` uses ``target``/``bare``/``queries``,
            ``offset`` uses ``max_offset``.
        threshold, consecutive: the slash-dominance rule, θ and k.
        max_samples: stop after this many samples (None: the whole corpus).
        max_length: window length in tokens, special tokens included (capped at the model's window);
            longer texts are split into windows ``stride`` tokens apart (default: non-overlapping).
        seed: fixes the sample order, hence the consecutive rule.
        target_filter: ``any``, ``with-target`` or ``without-target`` samples.
        device: where a model given by name is loaded (``cpu``, ``cuda``, ``auto``).
        route: capture route (:mod:`headlab.attention.routes`): ``auto`` (default: ``fused`` wherever the model and the
            detectors allow it, else ``chunked``, else ``eager``), or one of them forced.
        chunk_mb: memory budget of one block of the chunked and fused routes, in MB.
        checkpoint_dir, checkpoint_every, resume: write the merged statistics every ``checkpoint_every`` samples
            into ``checkpoint_dir`` (default: every 2048 samples for scans of more than 4096, else never; 0: never),
            and with ``resume`` continue from the checkpoint there (:mod:`headlab.census.stream`).
        per_sample: a ``.parquet`` file for one row of scores per sample (:mod:`headlab.census.per_sample`).
    Under ``torchrun`` the samples are shared among the processes (:mod:`headlab.distributed`); every process
    returns the merged result.
    A Ctrl-C (or SIGTERM, under the CLI) stops the scan early and returns the statistics of every batch that
    finished, marked ``interrupted``.
    """
    loaded = model if isinstance(model, LoadedModel) else load(model, device=device)
    dets = [_make(d, target=target, bare=bare, queries=queries, max_offset=max_offset) for d in detectors]
    if not dets:
        raise HeadlabError("no detector selected")
    if chunk_mb <= 0:
        raise HeadlabError(f"--chunk-mb must be positive, not {chunk_mb}")
    choice = choose(loaded.model, dets, route)
    window = min(max_length, loaded.facts.max_length)
    bind_to(loaded, dets)  # before the sampler (it needs the token's target ids) and the recorded settings
    token = next((d for d in dets if d.name == "token"), None)
    docs = _documents(texts, corpus)
    targets = token.target_ids if token is not None else ()  # type: ignore[attr-defined]
    sampler = Sampler(loaded.tokenizer, window, stride, seed, targets, target_filter)  # type: ignore[arg-type]
    if target_filter != "any" and token is None:
        raise HeadlabError("--filter needs the token detector (it defines the target)")

    L, H = loaded.facts.n_layers, loaded.facts.n_heads
    w = world()
    census = Census((L, H), threshold, consecutive)
    every = _checkpoint_every(checkpoint_every, max_samples, checkpoint_dir)
    folder = Path(checkpoint_dir) if checkpoint_dir is not None else None
    settings = _settings(texts, corpus, dets, target, bare, threshold, consecutive, max_samples, batch_size,
                         window, sampler, seed, target_filter, choice, chunk_mb, loaded)
    print_ = fingerprint(settings)
    parts = 0
    if resume:
        if folder is None:
            raise HeadlabError("resuming needs the folder that holds the checkpoint (--out)")
        found = load_checkpoint(folder, census, w, print_)
        if found is None and not (folder / CKPT_JSON).exists():
            raise HeadlabError(f"{folder} holds no scan checkpoint to resume; run without --resume")
        parts = found or 0
    writer = PerSampleWriter(per_sample, parts) if per_sample is not None and w.main else None
    bar = progress_bar(max_samples, f"scan {loaded.name}", "sample", progress and w.main)
    if bar is not None and census.position:
        bar.update(census.position)
    try:
        interrupted = run(loaded, dets, sampler.samples(docs, max_samples), census, w, batch_size=batch_size,
                          route=choice.route, chunk_mb=chunk_mb, bar=bar, every=every, folder=folder, print_=print_,
                          writer=writer, rows=per_sample is not None)
    except KeyboardInterrupt as exc:  # Ctrl-C before the loop, or a sharded scan (its last checkpoint stands)
        interrupted = exc
        if w.size > 1:
            raise
    finally:
        if bar is not None:
            bar.close()
    merge_ranks(census, w)
    if writer is not None and census.n_samples:
        writer.finish()
    n_samples, n_tokens, n_with = census.n_samples, census.n_tokens, census.n_with
    moments, rule = census.moments, census.rule
    if n_samples == 0 and interrupted is not None:
        raise type(interrupted)("interrupted before the first batch finished: nothing to write")
    if n_samples == 0:
        if target_filter != "any":
            raise HeadlabError(f"no sample passes --filter {target_filter} (target {target!r})")
        raise HeadlabError(
            "the corpus is empty: it produced no samples (empty, binary or unreadable files are skipped)"
        )
    notes = []
    if token is not None and n_with == 0:
        notes.append(f"no sample contains {target!r}: token scores and the SDH rule are undefined")
        warnings.warn(notes[-1], stacklevel=2)
    elif token is not None and n_with < consecutive:
        notes.append(
            f"only {n_with} sample(s) contain {target!r}, fewer than the rule's k = {consecutive}: "
            "the SDH share is undefined (use more samples or --filter with-target)"
        )
        warnings.warn(notes[-1], stacklevel=2)
    settings["world_size"] = w.size
    settings["checkpoint_every"] = every
    settings["per_sample"] = str(Path(per_sample).resolve()) if per_sample is not None else None
    has_token = "token" in moments
    return ScanResult(
        model=loaded.name,
        n_layers=L,
        n_heads=H,
        n_samples=n_samples,
        n_samples_with_target=n_with,
        n_tokens=n_tokens,
        settings=settings,
        means={k: m.mean for k, m in moments.items()},
        stds={k: m.std for k, m in moments.items()},
        token_frac_above=moments["token"].frac_above if has_token else None,
        token_max_run=rule.best if has_token else None,
        sdh=rule.passed if has_token and n_with else np.zeros((L, H), dtype=bool),
        interrupted=interrupted is not None,
        warnings=notes,
        interrupted_by=None
        if interrupted is None
        else ("SIGTERM" if isinstance(interrupted, Terminated) else "SIGINT"),
    )



def _settings(texts: Any, corpus: Any, dets: Sequence[Detector], target: str, bare: bool, threshold: float,
              consecutive: int, max_samples: int | None, batch_size: int, window: int, sampler: Sampler, seed: int,
              target_filter: str, choice: Any, chunk_mb: float, loaded: LoadedModel) -> dict[str, Any]:
    """The settings recorded in ``scan.json``; all but the budgets also fingerprint a checkpoint."""
    return {
        "corpus": list(corpus or DEFAULT_CORPUS) if texts is None else f"{len(texts)} texts (Python API)",
        "detectors": {d.name: d.settings() for d in dets},
        "sdh_rule": {"detector": "token", "target": target, "bare": bare, "threshold": threshold,
                     "consecutive": consecutive},
        "max_samples": max_samples,
        "batch_size": batch_size,
        "window": window,
        "stride": sampler.stride,
        "special_tokens": sampler.special.count,
        "seed": seed,
        "filter": target_filter,
        "capture": "streaming",
        **choice.settings(),
        "chunk_mb": chunk_mb,
        "model_facts": loaded.facts.__dict__,
    }


def _checkpoint_every(every: int | None, max_samples: int | None, folder: Any) -> int:
    """Samples between checkpoints: as asked, else 2048 for scans of more than 4096 samples with a folder."""
    if every is not None:
        if every < 0:
            raise HeadlabError(f"--checkpoint-every must be 0 (never) or positive, not {every}")
        return every
    return 2048 if folder is not None and (max_samples is None or max_samples > 4096) else 0

def _make(d: str | Detector, **opts: Any) -> Detector:
    if isinstance(d, Detector):
        return d
    key = d.replace("_", "-")
    per = {"token": ("target", "bare", "queries"), "offset": ("max_offset",)}.get(key, ())
    return make(key, **{k: opts[k] for k in per})


def _documents(texts: Sequence[str] | None, corpus: Sequence[str] | None) -> list[Document]:
    if texts is None:
        return documents(list(corpus) if corpus else None)
    if isinstance(texts, str):
        raise HeadlabError("texts must be a list of strings, not one string")
    docs = [Document(f"text:{i}", lambda t=t: [t]) for i, t in enumerate(texts) if isinstance(t, str) and t.strip()]
    if not docs:
        raise HeadlabError("no non-empty text to scan")
    return docs
