"""CLI of the active-induction study: ``headlab induce CONFIG``."""

from __future__ import annotations

import argparse

from headlab.api import formation
from headlab.cli.options import at_least, bind, call, list_option, real_in


def register(sub: argparse._SubParsersAction) -> None:
    from headlab.formation.induce.arms import ARMS, Levers

    lv = Levers()
    p = sub.add_parser("induce", help="grow a `/` head on purpose: training arms x seeds, with verdicts",
                       description="Train CONFIG under each arm (the data, auxiliary-loss and initialization "
                                   "levers, alone and combined) and seed, measure every checkpoint on held-out "
                                   "probe windows, and write OUT/induce.md, induce.json and induce.png. Finished "
                                   "runs in OUT/runs are reused and interrupted ones resumed.")
    p.add_argument("config", help="base training config: a TOML file or a named config (e.g. seeds)")
    p.add_argument("--out", required=True, help="study folder")
    list_option(p, "--arms", choices=list(ARMS), default=list(ARMS), help="arms (default: all)")
    list_option(p, "--seeds", parse=int, default=[0, 1, 2], metavar="SEED", help="seeds (default 0 1 2)")
    list_option(p, "--heads", default=lv.heads, metavar="L.H", help="heads the auxiliary loss trains (default 1.0)")
    p.add_argument("--weight", type=real_in(0, 100, open_lo=True), default=lv.weight,
                   help=f"the auxiliary loss's weight (default {lv.weight})")
    p.add_argument("--stop", type=real_in(0, 1, open_lo=True), default=lv.stop,
                   help=f"share of the run after which the auxiliary loss stops (default {lv.stop})")
    p.add_argument("--slash-share", type=real_in(0, 1), default=lv.slash_share,
                   help=f"the data arm's share of windows with '/' (default {lv.slash_share})")
    p.add_argument("--draws", type=at_least(0), default=10,
                   help="matched random heads in each run's ablation test (0: no ablation; default 10)")
    p.add_argument("--overwrite", action="store_true", help="replace an earlier summary in --out (runs are reused)")
    p.add_argument("--no-progress", action="store_true")
    bind(p, formation.induce, _cmd_induce)


def _cmd_induce(a: argparse.Namespace) -> int:
    print(call(a).markdown())
    print(f"wrote {a.out}/induce.md, induce.json and induce.png (runs in {a.out}/runs)")
    return 0
