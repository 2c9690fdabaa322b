"""CLI of the formation work: ``headlab train``, ``track``, ``predict`` and ``induce``."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from headlab.api import formation
from headlab.cli.options import at_least, bind, call, run_options, say_wrote, settings_options
from headlab.formation.induce.arms import InduceSettings
from headlab.formation.predict import PredictSettings
from headlab.formation.tracking import TrackResult, TrackSettings
from headlab.training.config import named_configs


def register(sub: argparse._SubParsersAction) -> None:
    _add_train(sub)
    _add_track(sub)
    _add_predict(sub)
    _add_induce(sub)


def _add_train(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("train", help="train a small Transformer from scratch on real text, with checkpoints",
                       description="Train CONFIG (a TOML file or a named config; docs/training.md) into the run folder "
                                   "--out. Also runs under torchrun --nproc_per_node=N.")
    p.add_argument("config", help="a TOML config file or a named config that ships with headlab "
                   f"({', '.join(named_configs())})")
    run_options(p, "out", out="run folder", required=True)
    p.add_argument("--resume", action="store_true", help="continue from the last good checkpoint in --out")
    p.add_argument("--seed", type=at_least(0), default=None, help="override optim.seed (one run per seed)")
    run_options(p, "device", "progress")
    bind(p, formation.train, _cmd_train)


def _cmd_train(a: argparse.Namespace) -> int:
    r = call(a)
    if r.main:
        loss = f"; final training loss {r.final_loss:.3f} nats/token" if r.final_loss is not None else ""
        print(f"trained {r.steps} steps ({r.tokens_per_s:.0f} tokens/s){loss}; run folder {a.out}")
    return 0


def _add_track(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("track", help="score every head at every checkpoint of a training run; phases and plots")
    p.add_argument("run", help="run folder written by headlab train")
    settings_options(p, TrackSettings)
    run_options(p, "out", "overwrite", "progress", out="output folder (default RUN/track)")
    bind(p, formation.track, _cmd_track)


def _cmd_track(a: argparse.Namespace) -> int:
    out = Path(a.out or os.path.join(a.run, "track"))
    call(a, out=out)
    print((out / TrackResult.REPORT).read_text())
    print(f"wrote {out}/track.json, track.csv, phases.json, track.md and plots")
    return 0


def _add_predict(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("predict", help="predict from early training which heads specialize (over several seeds)")
    p.add_argument("runs", nargs="+", help="tracked run folders, one per seed (headlab track first)")
    settings_options(p, PredictSettings)
    run_options(p, "out", "overwrite", out="write predict.json here")
    bind(p, formation.predict, _cmd_predict)


def _cmd_predict(a: argparse.Namespace) -> int:
    res = call(a)
    print(f"{a.metric} >= {res['threshold']} at the end; features from the first {a.early:.0%}; {len(a.runs)} runs, "
          f"{res['n_heads']} heads, {res['n_positive']} specialized ({res['evaluation']})")
    fmt = lambda x: "n/a" if x is None else f"{x:.3f}"  # noqa: E731
    for k in ("early_model", "early_score_alone", "layer_index", "random"):
        v = res[k]
        print(f"  {k:<18} precision {fmt(v.get('precision'))}  recall {fmt(v.get('recall'))}  "
              f"ROC AUC {fmt(v['roc_auc'])}")
    return 0


def _add_induce(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("induce", help="grow a `/` head on purpose: training arms x seeds, with verdicts",
                       description="Train CONFIG under each arm (the data, auxiliary-loss and initialization "
                                   "levers, alone and combined) and seed, measure every checkpoint on held-out "
                                   "probe windows, and write OUT/induce.md, induce.json and induce.png. Finished "
                                   "runs in OUT/runs are reused and interrupted ones resumed.")
    p.add_argument("config", help="base training config: a TOML file or a named config (e.g. seeds)")
    settings_options(p, InduceSettings)
    run_options(p, "out", "overwrite", "progress", out="study folder", required=True,
                overwrite="replace an earlier summary in --out (runs are reused)")
    bind(p, formation.induce, _cmd_induce)


def _cmd_induce(a: argparse.Namespace) -> int:
    r = call(a)
    print(r.markdown())
    say_wrote(a.out, r, f" (runs in {a.out}/runs)")
    return 0
