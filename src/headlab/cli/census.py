"""CLI of the census: ``headlab scan`` (one process or under torchrun, checkpointed, per-sample Parquet) and
``headlab top`` (the samples where a head fires most)."""

from __future__ import annotations

import argparse
import sys

from headlab.api import census
from headlab.census.settings import ScanSettings, TopSettings
from headlab.cli.options import at_least, bind, call, common_options, default_out, list_option, settings_options
from headlab.corpus import NAMED_SOURCES
from headlab.distributed import world


def register(sub: argparse._SubParsersAction) -> None:
    _add_scan(sub)
    _add_top(sub)


def _add_scan(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("scan", help="score every attention head over a corpus (streaming)",
                       description="Score every head of MODEL with head detectors over a corpus, streaming. "
                                   "Writes DIR/scan.json and DIR/heads.csv.")
    p.add_argument("model", help="named model (headlab models list), HF model directory, .gguf file or hub id")
    list_option(p, "--corpus", metavar="SRC",
                   help=f"named sources ({' '.join(NAMED_SOURCES)}) or files/folders "
                        "(.txt .md .rst .jsonl, optionally .gz); default: wiki pydoc")
    p.add_argument("--top", type=at_least(1), default=5, help="heads shown per detector")
    p.add_argument("--resume", action="store_true", help="continue the scan from the checkpoint in --out")
    p.add_argument("--per-sample", default=None, metavar="FILE.parquet",
                   help="also write one row of scores per sample (columns: docs/scan.md)")
    common_options(p, "scan", settings=ScanSettings)
    bind(p, census.scan, _cmd_scan)


def _cmd_scan(a: argparse.Namespace) -> int:
    r = call(a, out=default_out(a, "scan"))
    if not world().main:
        return 0
    print(r.table(min(a.top, r.n_layers * r.n_heads)))  # more heads than the model has: every head
    extra = f" and {a.per_sample}" if a.per_sample and r.n_samples else ""
    print(f"wrote {default_out(a, 'scan')}/scan.json and {default_out(a, 'scan')}/heads.csv{extra}")
    if r.interrupted:
        print(f"headlab: interrupted ({r.interrupted_by}): wrote the statistics of the {r.n_samples} samples whose "
              "batches finished, marked interrupted", file=sys.stderr)
        return 143 if r.interrupted_by == "SIGTERM" else 130
    return 0


def _add_top(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("top", help="the samples where one head scores highest (from a scan's --per-sample file)",
                       description="Reads the per-sample Parquet of a scan and prints the K samples where head L.H "
                                   "scores highest under DETECTOR, with their text.")
    p.add_argument("source", help="a FILE.parquet written by scan --per-sample, or the scan folder holding it")
    p.add_argument("--head", required=True, metavar="L.H")
    settings_options(p, TopSettings)
    bind(p, census.top, _cmd_top)


def _cmd_top(a: argparse.Namespace) -> int:
    r = call(a)
    print(f"top {len(r.rows)} samples of head {r.head} by {r.detector} in {r.source}:")
    for rank, row in enumerate(r.rows, 1):
        text = row["text"] if row["text"] is not None else f"[{len(row['ids'])} token ids: --model M decodes them]"
        print(f"{rank:>3}. {row['score']:.4f}  sample {row['sample']}  {row['doc']} #{row['window']}  "
              f"{' '.join(text.split())[:160]!r}")
    return 0
