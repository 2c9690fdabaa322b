"""CLI of the cross-model study: ``headlab claims``, ``compare``, ``scale`` and ``languages``."""

from __future__ import annotations

import argparse

from headlab.api import study
from headlab.cli.options import bind, call, run_options, say_wrote, settings_options, threads_option
from headlab.study.claims import ClaimsSettings
from headlab.study.compare import CompareSettings
from headlab.study.languages import LanguagesSettings


def register(sub: argparse._SubParsersAction) -> None:
    _add_claims(sub)
    _add_compare(sub)
    _add_scale(sub)
    _add_languages(sub)
    _add_verdicts(sub)


def _add_claims(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "claims",
        help="measure each claim of the slash-dominance write-up on one or more models",
        description="One row per claim, one column per model: the measured value with its 95%% "
        "interval and a verdict by the rule printed with the table. Writes "
        "DIR/claims.md and DIR/claims.json.",
    )
    p.add_argument("models", nargs="+")
    settings_options(p, ClaimsSettings)
    run_options(p, "device")
    threads_option(p)
    run_options(p, "out", "overwrite", out_default="runs/claims")
    p.add_argument("--resume", action="store_true",
                   help="reuse each model's scan, characterization and ablation that an earlier (interrupted) run "
                   "left in --out with the same settings")
    run_options(p, "progress")
    bind(p, study.claims, _cmd_claims)


def _cmd_claims(a: argparse.Namespace) -> int:
    r = call(a)
    print(r.markdown())
    print(f"wrote {a.out}/claims.md and {a.out}/claims.json (per-model scan and characterization in {a.out}/MODEL/)")
    return 0


def _add_compare(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("compare", help="compare scans/characterizations of different models (table + PNG)")
    p.add_argument("runs", nargs="+", help="run folders holding scan.json and/or characterize.json")
    settings_options(p, CompareSettings)
    run_options(p, "out", "overwrite", out_default="runs/compare")
    bind(p, study.compare, _cmd_compare)


def _cmd_compare(a: argparse.Namespace) -> int:
    r = call(a)
    print(r.markdown())
    say_wrote(a.out, r)
    return 0


def _add_scale(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("scale", help="specialization against parameter count, one point per scanned model",
                       description="RUNS are scan folders (scan.json) or folders of them (a headlab claims output). "
                                   "Writes DIR/scale.md, DIR/scale.json and DIR/scale.png: share of heads per kind, "
                                   "max mass on '/' and top SlashScore against parameters, encoders and decoders "
                                   "marked.")
    p.add_argument("runs", nargs="+")
    run_options(p, "out", "overwrite", out_default="runs/scale")
    bind(p, study.scale, _cmd_scale)


def _cmd_scale(a: argparse.Namespace) -> int:
    r = call(a)
    print(r.markdown())
    say_wrote(a.out, r, f" ({len(r.points)} models)")
    return 0


def _add_languages(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("languages", help="`/` heads on the slash stimulus suite in several languages",
                       description="Per model and language: every head's mass on '/' with its interval, the strict "
                                   "slash-dominance rule on the suite, and whether the first language's top head "
                                   "stays on top. Writes DIR/languages.md and DIR/MODEL/languages.json.")
    p.add_argument("models", nargs="+")
    settings_options(p, LanguagesSettings)
    run_options(p, "device")
    threads_option(p)
    run_options(p, "out", "overwrite", out_default="runs/languages")
    bind(p, study.languages, _cmd_languages)


def _cmd_languages(a: argparse.Namespace) -> int:
    results = call(a)
    print("\n".join(["# `/` heads across languages (slash stimulus suite)", ""] + [r.markdown() for r in results]))
    print(f"wrote {a.out}/languages.md and {a.out}/MODEL/languages.json")
    return 0


def _add_verdicts(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("verdicts", help="re-judge every committed verdict with the current rule book",
                       description="Re-judges every committed verdict under RESULTS (the claims tables, the "
                                   "formation claims, the induction study and the monitor evaluations from the "
                                   "statistics they keep; the retrieval verdicts from their result files), "
                                   "rewrites them, and prints each verdict that moved; it refuses a rule whose code "
                                   "moved since its declaration. --record WHY (a rule's own commit) declares the "
                                   "changed rules on the data as it stands, refused while a committed data file is "
                                   "missing or a rule's calibration (RESULTS/rulebook/calibration) is stale or "
                                   "says it cannot reach supported, and appends the changes, the rule book's version "
                                   "and every rule's fingerprint to the ledger RESULTS/verdict_changes.json, "
                                   "rendered as verdict_changes.md.")
    p.add_argument("results", nargs="?", default="results", help="the results folder (default: results)")
    p.add_argument("--record", default=None, metavar="WHY", help="why the rules changed (default: record nothing)")
    bind(p, study.verdicts, _cmd_verdicts)


def _cmd_verdicts(a: argparse.Namespace) -> int:
    changes = call(a)
    for c in changes:
        print(f"{c.where}: {c.row} [{c.rule}]: {c.old} -> {c.new}")
    said = f"; recorded in {a.results}/verdict_changes.json and .md" if a.record else ""
    print(f"{len(changes)} verdict(s) moved{said}")
    return 0
