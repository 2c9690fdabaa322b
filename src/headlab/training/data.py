"""Training data: a fixed, seeded pool of token windows from real corpora, stored in the run folder.

The pool is built once (``data.safetensors`` + ``tokenizer/`` in the run folder, and ``data.json`` with the
fingerprint of the settings that built it and the file's digest) and reused on resume, so a resumed run sees
exactly the data the uninterrupted run would; a pool left by other settings is rebuilt, never reused. Batch
``step`` is a pure function of ``(seed, step)``: epoch ``e`` visits the pool in the permutation drawn from
``seed + e``, so the data position of a run is just its step. ``slash_share`` windows (rounded) contain a `/`
token; the rest do not. Then ``repeat_share`` of the windows (seeded choice) end with a copy of an earlier span
of their own (:func:`repeat_spans`): real text made to reward copying, the lever that grows induction heads in
a small model within a CPU budget (the realized slash share can drop slightly: a window's `/` may sit in the
part that is replaced). A separate set of probe windows with `/` (never trained on) feeds the gradient signals
and the tracker.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import shutil
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import load_file

from headlab.attention.padding import pad_right
from headlab.corpus import Sampler, documents
from headlab.errors import HeadlabError
from headlab.io import file_sha256, save_tensors, write_json_atomic
from headlab.nn.tokenizer import load_tokenizer, save_tokenizer, train_bpe
from headlab.training.config import DataConfig

#: the largest BPE a config may ask for: four times the largest vocabulary of a released model (256k); the BPE
#: trainer allocates per token before it reads a text, so bpe:1000000000 ended in a 70 GB allocation
BPE_MAX = 2**20
BPE_MIN = 256 + 3  # every byte and the three special tokens (headlab.nn.tokenizer.SPECIALS)


def bpe_size(spec: str, where: str = "config") -> int | None:
    """N of a ``bpe:N`` tokenizer (None for any other tokenizer), refused outside [BPE_MIN, BPE_MAX]."""
    if not spec.startswith("bpe:"):
        return None
    try:
        size = int(spec.split(":", 1)[1])
    except ValueError:
        raise HeadlabError(f"{where}: tokenizer {spec!r}: expected bpe:N with N a whole number of tokens") from None
    if not BPE_MIN <= size <= BPE_MAX:
        raise HeadlabError(f"{where}: tokenizer {spec!r}: a byte-level BPE takes {BPE_MIN:,} to {BPE_MAX:,} "
                           f"tokens, not {size:,}; give bpe:N with N in that range")
    return size


@dataclass
class WindowPool:
    """Token windows right-padded to ``window``: ``ids`` (N, T) int64, ``mask`` (N, T) bool."""

    ids: torch.Tensor
    mask: torch.Tensor
    probe_ids: torch.Tensor
    probe_mask: torch.Tensor

    def __len__(self) -> int:
        return len(self.ids)

    def batch_indices(self, step: int, batch_size: int, seed: int) -> np.ndarray:
        """Row indices of the global batch of ``step`` (0-based)."""
        n = len(self.ids)
        start = step * batch_size
        out = []
        while len(out) < batch_size:
            epoch, offset = divmod(start + len(out), n)
            perm = np.random.default_rng(seed + epoch).permutation(n)
            take = min(batch_size - len(out), n - offset)
            out.extend(perm[offset : offset + take].tolist())
        return np.asarray(out)


def _texts(sources: list[str], max_chars: int) -> list[str]:
    out, n = [], 0
    for doc in documents(sources):
        for t in doc.load():
            if t.strip():
                out.append(t)
                n += len(t)
        if n >= max_chars:
            break
    return out


def _pad(rows: list[tuple[int, ...]], T: int, pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    return pad_right(rows, pad_id, T)


def slash_ids(tokenizer: Any) -> frozenset[int]:
    toks = tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))
    special = set(tokenizer.all_special_ids)
    return frozenset(i for i, t in enumerate(toks) if isinstance(t, str) and "/" in t and i not in special)


def build_pool(cfg: DataConfig, seed: int, progress: bool) -> tuple[WindowPool, Any]:
    """Tokenizer and window pool from the configured corpus (seeded)."""

    t0 = time.perf_counter()

    def say(msg: str) -> None:
        if progress:
            print(f"headlab: {msg} ({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)

    size = bpe_size(cfg.tokenizer)
    if size is not None:
        texts = _texts(cfg.corpus, cfg.tokenizer_chars)
        if not texts:
            raise HeadlabError(f"the corpus {cfg.corpus} has no text")
        say(f"training a byte-level BPE of {size} tokens on {sum(map(len, texts)):,} characters")
        tokenizer = train_bpe(texts, size)
    else:
        tokenizer = load_tokenizer(cfg.tokenizer)
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    targets = slash_ids(tokenizer)
    docs = documents(cfg.corpus)
    tokenized: dict[str, list[int]] = {}  # the three draws below pass over the same documents

    def take(filt: str, n: int, s: int) -> list[tuple[int, ...]]:
        sampler = Sampler(tokenizer, cfg.window, seed=s, target_ids=targets, target_filter=filt,  # type: ignore[arg-type]
                          cache=tokenized)
        return [x.input_ids for x in itertools.islice(sampler.samples(docs), n)]

    n = cfg.n_windows
    say(f"drawing {n} windows of {cfg.window} tokens (slash share {cfg.slash_share}) from {', '.join(cfg.corpus)}")
    probe = take("with-target", cfg.probe_windows, seed + 7919)
    if cfg.slash_share is None:
        rows = take("any", n + len(probe), seed)
    else:
        k = round(n * cfg.slash_share)
        rows = take("with-target", k + len(probe), seed) + take("without-target", n - k, seed)
    probe_set = set(probe)
    rows = [r for r in rows if r not in probe_set][:n]  # probe windows are held out
    if len(rows) < n:
        raise HeadlabError(
            f"the corpus yields only {len(rows)} windows for n_windows = {n} "
            f"(slash_share {cfg.slash_share}); lower n_windows or add text"
        )
    if not probe:
        raise HeadlabError("the corpus has no window with '/' for the probe set")
    rows = repeat_spans(rows, cfg.repeat_share, seed)
    say(f"data pool ready: {len(rows)} windows, {len(probe)} probe windows")
    ids, mask = _pad(rows, cfg.window, pad_id)
    p_ids, p_mask = _pad(probe, cfg.window, pad_id)
    return WindowPool(ids, mask, p_ids, p_mask), tokenizer


def repeat_spans(rows: list[tuple[int, ...]], share: float, seed: int) -> list[tuple[int, ...]]:
    """``share`` of ``rows`` (seeded choice) keep a head of a >= ceil(n/2) tokens and end with a copy of the
    span of the head that starts at a random b: positions a.. repeat positions b.., length n kept. Head length
    and start are drawn per window, so the copy sits at no fixed distance a - b (a fixed one would be learned
    as a positional shortcut, not as induction)."""
    k = round(len(rows) * share)
    if k == 0:
        return rows
    rng = np.random.default_rng(seed + 104729)
    out = list(rows)
    for i in rng.choice(len(rows), size=k, replace=False).tolist():
        r = rows[i]
        n = len(r)
        a = int(rng.integers((n + 1) // 2, n)) if n > 1 else n
        b = int(rng.integers(0, 2 * a - n + 1))
        out[i] = r[:a] + r[b : b + n - a]
    return out


def fingerprint(cfg: DataConfig, seed: int) -> str:
    """What a pool is built from: the data settings and the seed (a pool from other settings is another pool)."""
    data = asdict(cfg)
    if not data["repeat_share"]:  # pools built before the copying lever existed keep their fingerprint
        del data["repeat_share"]
    blob = json.dumps({"data": data, "seed": seed}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def save_pool(pool: WindowPool, tokenizer: Any, run: Path, print_: str) -> None:
    """Write ``data.safetensors``, ``tokenizer/`` and ``data.json`` (the pool's fingerprint and digest) last, so a
    pool without a matching ``data.json`` is never taken for a finished one."""
    (run / "data.json").unlink(missing_ok=True)
    tmp = run / "data.safetensors.tmp"
    save_tensors(
        {
            "ids": pool.ids.to(torch.int32),
            "mask": pool.mask.to(torch.uint8),
            "probe_ids": pool.probe_ids.to(torch.int32),
            "probe_mask": pool.probe_mask.to(torch.uint8),
        },
        str(tmp),
    )
    shutil.rmtree(run / "tokenizer", ignore_errors=True)
    save_tokenizer(tokenizer, run / "tokenizer")
    tmp.replace(run / "data.safetensors")
    write_json_atomic(run / "data.json", {"fingerprint": print_, "sha256": file_sha256(run / "data.safetensors")})


def pool_matches(run: Path, print_: str) -> str | None:
    """None when the run folder holds a finished pool built from ``print_``; else why it cannot be used."""
    if not (run / "data.safetensors").exists():
        return "no pool"
    try:
        meta = json.loads((run / "data.json").read_text())
    except (OSError, ValueError):
        return "its data.json is missing or damaged (a run stopped while building it, or an older headlab)"
    if meta.get("fingerprint") != print_:
        return "it was built from other data settings or another seed"
    if meta.get("sha256") != file_sha256(run / "data.safetensors"):
        return "data.safetensors does not match its digest (damaged)"
    return None


def load_pool(run: Path) -> tuple[WindowPool, Any]:
    try:
        t = load_file(str(run / "data.safetensors"))
        pool = WindowPool(t["ids"].long(), t["mask"].bool(), t["probe_ids"].long(), t["probe_mask"].bool())
    except Exception as exc:  # noqa: BLE001 - safetensors raises several types for a damaged file
        raise HeadlabError(f"{run / 'data.safetensors'} cannot be read ({type(exc).__name__}: {exc}); start the "
                           "run again") from None
    return pool, load_tokenizer(run / "tokenizer")
