"""CLI of the census: ``headlab scan`` (one process or under torchrun, checkpointed, per-sample Parquet) and
``headlab top`` (the samples where a head fires most)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .cli_types import at_least, common_options, default_out, list_option, real_in
from .errors import HeadlabError


def register(sub: argparse._SubParsersAction) -> None:
    _add_scan(sub)
    _add_top(sub)


def _add_scan(sub: argparse._SubParsersAction) -> None:
    from .corpus import NAMED_SOURCES
    from .detectors import DEFAULT_DETECTORS, DETECTORS

    p = sub.add_parser("scan", help="score every attention head over a corpus (streaming)",
                       description="Score every head of MODEL with head detectors over a corpus, streaming. "
                                   "Writes DIR/scan.json and DIR/heads.csv.")
    p.add_argument("model", help="named model (headlab models list), HF model directory, .gguf file or hub id")
    list_option(p, "--corpus", metavar="SRC",
                   help=f"named sources ({' '.join(NAMED_SOURCES)}) or files/folders "
                        "(.txt .md .rst .jsonl, optionally .gz); default: wiki pydoc")
    list_option(p, "--detectors", default=list(DEFAULT_DETECTORS), choices=sorted(DETECTORS),
                help=f"detectors to run (default: all: {' '.join(DEFAULT_DETECTORS)})")
    p.add_argument("--target", default="/", help="token detector target character (default '/')")
    p.add_argument("--bare", action="store_true", help="target only the plain token, not merges like '://'")
    p.add_argument("--queries", choices=["can-see", "all"], default="can-see",
                   help="token score averages over queries that can see a target (default) or all queries")
    p.add_argument("--max-offset", type=at_least(0), default=8, help="offset detector: Δ = 0..K (default 8)")
    p.add_argument("--threshold", type=real_in(0, 1), default=0.5, help="SDH rule θ (default 0.5)")
    p.add_argument("--consecutive", type=at_least(1), default=3, help="SDH rule k consecutive samples (default 3)")
    p.add_argument("--max-samples", type=at_least(0), default=512, help="stop after N samples (0: whole corpus)")
    p.add_argument("--batch-size", type=at_least(1), default=8)
    p.add_argument("--max-length", type=at_least(2), default=128, help="window length in tokens (default 128)")
    p.add_argument("--stride", type=at_least(1), default=None, help="window stride in tokens (default: no overlap)")
    p.add_argument("--filter", dest="target_filter", choices=["any", "with-target", "without-target"],
                   default="any", help="keep samples with or without the target (default any)")
    p.add_argument("--seed", type=int, default=0, help="sample order seed (default 0)")
    p.add_argument("--top", type=at_least(1), default=5, help="heads shown per detector (default 5)")
    p.add_argument("--route", choices=["auto", "fused", "chunked", "eager"], default="auto",
                   help="capture route: auto (default: fused where the detectors and model allow, else chunked, "
                        "else eager), or force one; the route used is recorded in scan.json")
    p.add_argument("--chunk-mb", type=real_in(0, open_lo=True), default=256.0,
                   help="memory budget of one block of the chunked/fused routes, MB (default 256)")
    p.add_argument("--checkpoint-every", type=at_least(0), default=None, metavar="N",
                   help="write the merged statistics every N samples into --out (default: 2048 for scans of more "
                        "than 4096 samples, else never; 0: never)")
    p.add_argument("--resume", action="store_true", help="continue the scan from the checkpoint in --out")
    p.add_argument("--per-sample", default=None, metavar="FILE.parquet",
                   help="also write one row of scores per sample (columns: docs/scan.md)")
    common_options(p, "scan", seed=False, batch=False)
    p.set_defaults(func=_cmd_scan)


def _cmd_scan(a: argparse.Namespace) -> int:
    import contextlib
    from pathlib import Path

    from .distributed import device_for, world
    from .io import claim_file, writing
    from .scan import scan
    from .scan_stream import CKPT_JSON

    w = world()
    out_dir = default_out(a, "scan")
    if a.per_sample is not None and not a.per_sample.endswith(".parquet"):
        raise HeadlabError(f"--per-sample {a.per_sample}: give a .parquet file path")
    if a.resume and a.overwrite:
        raise HeadlabError("--resume continues the scan in --out and --overwrite starts it over: pass one of them")
    if a.resume and not (Path(out_dir) / CKPT_JSON).exists():
        raise HeadlabError(f"{out_dir} holds no scan checkpoint to resume; run without --resume")
    if w.main and not a.resume and not a.overwrite and (Path(out_dir) / CKPT_JSON).exists():
        raise HeadlabError(f"{out_dir} holds the checkpoint of an unfinished scan; pass --resume to continue it or "
                           "--overwrite to start over")
    if w.main and a.per_sample is not None:
        claim_file(a.per_sample, a.overwrite)
    # one writer per folder: under torchrun only rank 0 claims and locks it
    files = ["scan.json", "heads.csv"]
    held = writing(out_dir, files, a.overwrite) if w.main else contextlib.nullcontext(Path(out_dir))
    with held as out:
        r = scan(a.model, corpus=a.corpus, detectors=a.detectors, target=a.target, bare=a.bare, queries=a.queries,
                 max_offset=a.max_offset, threshold=a.threshold, consecutive=a.consecutive,
                 max_samples=a.max_samples or None, batch_size=a.batch_size, max_length=a.max_length,
                 stride=a.stride, seed=a.seed, target_filter=a.target_filter, progress=not a.no_progress,
                 device=device_for(a.device, w), route=a.route, chunk_mb=a.chunk_mb, checkpoint_dir=out,
                 checkpoint_every=a.checkpoint_every, resume=a.resume, per_sample=a.per_sample)
        if w.main:
            r.write(out)
            _drop_checkpoint(out, r.interrupted)
    if not w.main:
        return 0
    print(r.table(a.top))
    extra = f" and {a.per_sample}" if a.per_sample and r.n_samples else ""
    print(f"wrote {out}/scan.json and {out}/heads.csv{extra}")
    if r.interrupted:
        print(f"headlab: interrupted ({r.interrupted_by}): wrote the statistics of the {r.n_samples} samples whose "
              "batches finished, marked interrupted", file=sys.stderr)
        return 143 if r.interrupted_by == "SIGTERM" else 130
    return 0


def _drop_checkpoint(out: Any, interrupted: bool) -> None:
    """A finished scan's checkpoint has served its purpose; an interrupted one keeps it for --resume."""
    from .scan_stream import CKPT_JSON, CKPT_NPZ

    if not interrupted:
        for name in (CKPT_JSON, CKPT_NPZ):
            (out / name).unlink(missing_ok=True)


def _add_top(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("top", help="the samples where one head scores highest (from a scan's --per-sample file)",
                       description="Reads the per-sample Parquet of a scan and prints the K samples where head L.H "
                                   "scores highest under DETECTOR, with their text.")
    p.add_argument("source", help="a FILE.parquet written by scan --per-sample, or the scan folder holding it")
    p.add_argument("--head", required=True, metavar="L.H")
    p.add_argument("--detector", default="token")
    p.add_argument("--k", type=at_least(1), default=20)
    p.add_argument("--model", default=None, help="tokenizer for the text (default: the scan's model)")
    p.set_defaults(func=_cmd_top)


def _cmd_top(a: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from .head import Head
    from .persample import top

    path, model = Path(a.source), a.model
    if path.is_dir():
        scan_json = path / "scan.json"
        if not scan_json.exists():
            raise HeadlabError(f"{path} holds no scan.json; give the .parquet file of scan --per-sample")
        settings = json.loads(scan_json.read_text())
        model = model or settings["model"]
        found = settings["settings"].get("per_sample")
        if not found:
            raise HeadlabError(f"the scan in {path} wrote no per-sample file; rerun it with --per-sample FILE.parquet")
        path = Path(found)
    if not path.exists():
        raise HeadlabError(f"{path} does not exist")
    head = str(Head.parse(a.head))
    rows = top(path, head, a.detector, a.k)
    tok = _tokenizer(model) if model else None
    print(f"top {len(rows)} samples of head {head} by {a.detector} in {path}:")
    for rank, row in enumerate(rows, 1):
        text = tok.decode(row["ids"], skip_special_tokens=True) if tok is not None else f"{len(row['ids'])} tokens"
        print(f"{rank:>3}. {row['score']:.4f}  sample {row['sample']}  {row['doc']} #{row['window']}  "
              f"{' '.join(text.split())[:160]!r}")
    return 0


def _tokenizer(model: str) -> Any:
    from .models.loader import load_tokenizer

    return load_tokenizer(model)
