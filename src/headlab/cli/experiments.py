"""CLI of the experiments on a model's heads: ``headlab characterize``, ``stimuli``, ``ablate``, ``importance`` and
``prune``."""

from __future__ import annotations

import argparse

from headlab.ablation import format_report
from headlab.ablation.experiment import AblateSettings
from headlab.ablation.importance import ImportanceSettings, format_importance
from headlab.api import experiments as api
from headlab.cli.options import bind, call, list_option, run_options, say_wrote, settings_options
from headlab.cli.options import common_options as _common
from headlab.cli.options import default_out as _out
from headlab.probes import SUITES
from headlab.probes.settings import StimuliSettings
from headlab.study.characterize import CharacterizeSettings


def register(sub: argparse._SubParsersAction) -> None:
    for add in (_add_characterize, _add_stimuli, _add_ablate, _add_importance, _add_prune):
        add(sub)


def _add_stimuli(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("stimuli", help="write a constructed stimulus suite as JSONL",
                       description="Write a seeded stimulus suite (texts with target character spans) to a "
                                   "JSONL file, to inspect or reuse.")
    p.add_argument("suite", choices=sorted(SUITES))
    settings_options(p, StimuliSettings)
    p.add_argument("--model", default=None, help="tokenizer for the random-token contexts (suite contexts)")
    run_options(p, "out", "overwrite", out="output .jsonl file", required=True,
                overwrite="replace an existing --out file")
    bind(p, api.stimuli, _cmd_stimuli)


def _cmd_stimuli(a: argparse.Namespace) -> int:
    items = call(a)
    print(f"wrote {len(items)} stimuli to {a.out}")
    return 0


def _add_characterize(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("characterize", help="characterize every head with constructed stimuli",
                       description="Specificity, position sensitivity, context independence and layer profile "
                                   "of every head, with bootstrap 95%% intervals. Writes DIR/characterize.json "
                                   "and DIR/characterize.md.")
    p.add_argument("model")
    _common(p, "characterize", settings=CharacterizeSettings)
    bind(p, api.characterize, _cmd_characterize)


def _cmd_characterize(a: argparse.Namespace) -> int:
    out = _out(a, "characterize")
    r = call(a, out=out)
    print(r.markdown())
    say_wrote(out, r)
    return 0


def _add_ablate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "ablate",
        help="ablate a set of heads against matched random controls",
        description="Ablate heads together (at the output projection's input) and --draws sets of "
        "random heads matched by layer; report the effect on the tokens --positions selects, beside the tokens it "
        "compares them with (decoders: next-token loss and accuracy; encoders, which have no next token: the cosine "
        "distance between the ablated and the intact model's outputs). The test is one-sided, in the direction of "
        "harm: p = (1 + control sets that change the primary metric at least as much as the target) / (1 + draws); "
        "the two-sided p and the target-minus-controls interval are reported beside it.",
    )
    p.add_argument("model")
    list_option(p, "--heads", required=True, metavar="L.H", help="heads to ablate together, e.g. 0.7 16.0")
    _common(p, "ablate", settings=AblateSettings)
    bind(p, api.ablate, _cmd_ablate)


def _cmd_ablate(a: argparse.Namespace) -> int:
    out = _out(a, "ablate")
    r = call(a, out=out)
    print(format_report(r))
    say_wrote(out, r)
    return 0


def _add_importance(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("importance", help="exact and gradient importance of every head")
    p.add_argument("model")
    _common(p, "importance", settings=ImportanceSettings)
    bind(p, api.importance, _cmd_importance)


def _cmd_importance(a: argparse.Namespace) -> int:
    out = _out(a, "importance")
    r = call(a, out=out)
    print(format_importance(r))
    say_wrote(out, r)
    return 0


def _add_prune(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("prune", help="pruning curves: metric vs fraction of heads removed, by several orders")
    p.add_argument("model")
    list_option(p, "--keep", default=[], metavar="L.H", help="specialized heads never removed in the keep order")
    _common(p, "prune", settings=ImportanceSettings)
    bind(p, api.prune, _cmd_prune)


def _cmd_prune(a: argparse.Namespace) -> int:
    out = _out(a, "prune")
    r = call(a, out=out)
    for name, ys in r["curves"].items():
        print(f"{name:<24} " + " ".join("   -  " if y is None else f"{y:.4f}" for y in ys))
    print(f"fractions removed: {' '.join(f'{x:.1f}' for x in r['fractions'])}  ({r['metric']})")
    say_wrote(out, r)
    return 0
