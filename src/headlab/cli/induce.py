"""CLI of the active-induction study: ``headlab induce CONFIG``."""

from __future__ import annotations

import argparse

from headlab.api import formation
from headlab.cli.options import bind, call, settings_options
from headlab.formation.induce.arms import InduceSettings


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("induce", help="grow a `/` head on purpose: training arms x seeds, with verdicts",
                       description="Train CONFIG under each arm (the data, auxiliary-loss and initialization "
                                   "levers, alone and combined) and seed, measure every checkpoint on held-out "
                                   "probe windows, and write OUT/induce.md, induce.json and induce.png. Finished "
                                   "runs in OUT/runs are reused and interrupted ones resumed.")
    p.add_argument("config", help="base training config: a TOML file or a named config (e.g. seeds)")
    p.add_argument("--out", required=True, help="study folder")
    settings_options(p, InduceSettings)
    p.add_argument("--overwrite", action="store_true", help="replace an earlier summary in --out (runs are reused)")
    p.add_argument("--no-progress", action="store_true")
    bind(p, formation.induce, _cmd_induce)


def _cmd_induce(a: argparse.Namespace) -> int:
    print(call(a).markdown())
    print(f"wrote {a.out}/induce.md, induce.json and induce.png (runs in {a.out}/runs)")
    return 0
