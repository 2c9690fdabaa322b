"""CLI of what a person looks at: ``headlab view`` (the offline attention viewer) and ``headlab report``."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from headlab.api import seeing
from headlab.api.pattern import pattern
from headlab.cli.options import at_least, bind, call, run_options, settings_options, threads_option, tokenizer_option
from headlab.viewer.browser import open_page
from headlab.viewer.settings import ViewSettings


def register(sub: argparse._SubParsersAction) -> None:
    v = sub.add_parser("view", help="write one self-contained, offline HTML attention viewer",
                       description="SOURCE is a model (name, folder or hub id), a scan folder (scan.json: its scores "
                                   "colour the grid), a training run (checkpoint slider; headlab track output when "
                                   "present) or a retrieval run (the labelled circuit).")
    v.add_argument("source")
    v.add_argument("--text", action="append", default=None, help="a text to show (repeatable; default: a corpus "
                                                                  "window with '/' and two slash stimuli)")
    v.add_argument("--texts-file", default=None,
                   help="one text per line, shown in that order; a .jsonl file: each record's 'text', as scan reads it")
    run_options(v, "out", out="FILE.html (default runs/view-NAME.html)")
    settings_options(v, ViewSettings)
    v.add_argument("--check", action="store_true", help="open the page in headless Chromium and report its load "
                                                        "time, console errors and network requests")
    run_options(v, "overwrite", "device", overwrite="replace an existing FILE.html")
    threads_option(v)
    tokenizer_option(v)
    run_options(v, "progress")
    bind(v, seeing.view, _cmd_view)
    _add_pattern(sub)

    r = sub.add_parser("report", help="Markdown + HTML report with PNG figures of every result in a run folder")
    r.add_argument("run", help="a folder of headlab results (searched two levels deep)")
    r.add_argument("--title", default=None)
    run_options(r, "out", "overwrite", out="output folder (default RUN/report)")
    bind(r, seeing.report, _cmd_report)


def _add_pattern(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("pattern", help="one head's attention pattern on one text: each query's strongest key, and "
                                       "the heatmap as a PNG",
                       description="Prints, for each query token of TEXT, the key head L.H attends to most and its "
                                   "share; writes the (T, T) heatmap on a fixed 0-1 scale.")
    p.add_argument("model", help="named model (headlab models list), HF model directory or hub id")
    p.add_argument("--head", required=True, metavar="L.H")
    p.add_argument("--text", required=True, help="the text (longer than the model's window is refused)")
    run_options(p, "out", "overwrite", out="FILE.png (default runs/pattern-MODEL-L.H.png)",
                overwrite="replace an existing FILE.png")
    p.add_argument("--rows", type=at_least(0), default=24, help="queries printed (0: every query)")
    p.add_argument("--bos", action="store_true", help="put the tokenizer's beginning-of-sequence token first where "
                   "it adds none (TransformerLens prepends it by default; scan does not)")
    run_options(p, "device")
    threads_option(p)
    run_options(p, "dtype")
    tokenizer_option(p)
    bind(p, pattern, _cmd_pattern)


def _cmd_pattern(a: argparse.Namespace) -> int:
    name = os.path.basename(str(a.model).rstrip("/"))
    out = Path(a.out or os.path.join("runs", f"pattern-{name}-{a.head}.png"))
    print(call(a, out=out).markdown(rows=a.rows), end="")
    print(f"wrote {out}")
    return 0


def _cmd_view(a: argparse.Namespace) -> int:
    out = Path(a.out or os.path.join("runs", "view-" + os.path.basename(str(a.source).rstrip("/")) + ".html"))
    call(a, out=out)
    print(f"wrote {out} ({out.stat().st_size / 1e6:.2f} MB, offline: open it in any browser)")
    if a.check:
        with open_page(out) as (_, log):
            pass
        print(f"  Chromium: ready in {log['load_s']:.2f} s; console errors {len(log['console_errors'])}, page errors "
              f"{len(log['page_errors'])}, network requests {len(log['requests'])}")
        if log["console_errors"] or log["page_errors"] or log["requests"]:
            print("  " + "; ".join(log["console_errors"] + log["page_errors"] + log["requests"]), file=sys.stderr)
            return 1
    return 0


def _cmd_report(a: argparse.Namespace) -> int:
    r = call(a)
    print(f"report: {len(r.sections)} sections, {r.figures} figures")
    for s in r.sections:
        print(f"  {s}")
    print(f"wrote {r.markdown_file} and {r.html_file}")
    return 0
