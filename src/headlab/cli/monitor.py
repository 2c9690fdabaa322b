"""CLI of the head monitor: ``headlab monitor fit``, ``check`` and ``evaluate``."""

from __future__ import annotations

import argparse
import json
from typing import Any

from headlab import monitor
from headlab.cli.options import (
    at_least,
    bind,
    call,
    list_option,
    run_options,
    say_wrote,
    settings_options,
    threads_option,
    tokenizer_option,
)
from headlab.monitor.settings import CheckSettings, EvaluateSettings, MonitorSettings


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("monitor", help="profile a model's head activity on reference text; flag unusual documents")
    ms = p.add_subparsers(dest="monitor_cmd", required=True)
    f = ms.add_parser("fit", help="scan a reference corpus and write PROFILE_DIR/profile.json")
    f.add_argument("model")
    settings_options(f, MonitorSettings)
    _shared(f, MonitorSettings)
    bind(f, monitor.fit, _cmd_fit)
    c = ms.add_parser("check", help="score and flag every document of a corpus against a profile")
    c.add_argument("profile", help="a folder written by headlab monitor fit")
    list_option(c, "--corpus", required=True, metavar="SRC")
    settings_options(c, CheckSettings)
    _shared(c, CheckSettings)
    c.add_argument("--write-filtered", metavar="OUT.jsonl",
                   help="also write the JSONL records that were not flagged, byte for byte")
    c.add_argument("--write-scores", metavar="OUT.jsonl",
                   help="also write every scored JSONL record with headlab_score and headlab_flag added")
    c.add_argument("--resume", action="store_true", help="finish the interrupted check in --out")
    bind(c, monitor.check, _cmd_check)
    e = ms.add_parser("evaluate", help="AUROC of the monitor vs the filters pipelines run (Gopher, C4, n-gram "
                                         "perplexity, ...), per kind of structure")
    e.add_argument("model")
    settings_options(e, EvaluateSettings)
    _shared(e, EvaluateSettings)
    bind(e, monitor.evaluate, _cmd_evaluate)


def _shared(p: argparse.ArgumentParser, settings: Any = None) -> None:
    if settings is None:
        p.add_argument("--seed", type=int)
        p.add_argument("--batch-size", type=at_least(1))
        p.add_argument("--id-field", metavar="FIELD")
    run_options(p, "device")
    threads_option(p)
    tokenizer_option(p)
    run_options(p, "out", "overwrite", "progress", required=True)


def _cmd_fit(a: argparse.Namespace) -> int:
    prof = call(a)
    print(prof.summary())
    say_wrote(a.out, prof)
    return 0


def _cmd_check(a: argparse.Namespace) -> int:
    res, _ = call(a, rows=False)  # the rows are in --out's monitor.jsonl; holding them would grow with the records
    print(f"{res.n_flagged} of {res.n_documents} documents flagged ({100 * res.flag_rate:.1f}%; "
          f"{res.reference_rate()})")
    for r in res.most_flagged:
        print(f"  flagged: {r['doc']}  score {r['score']:.1f}")
    for t in res.top_features:
        print(f"  {t['feature']:<22} mean z {t['mean_z']:+.1f} over the flagged documents")
    say_wrote(a.out, res)
    for path, what in ((a.write_filtered, "the records not flagged"), (a.write_scores, "the records with scores")):
        if path:
            print(f"wrote {path}: {what}")
    return 0


def _cmd_evaluate(a: argparse.Namespace) -> int:

    r = call(a)
    print(r.markdown())
    print(json.dumps({k: v["verdict"] for k, v in r.kinds.items()}))
    say_wrote(a.out, r)
    return 0
