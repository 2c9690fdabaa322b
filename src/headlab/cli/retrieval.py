"""CLI of the retrieval work: ``headlab retrieval generate|train|sweep|eval-llm``."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from headlab import retrieval
from headlab.cli.options import at_least, bind, call, run_options, say_wrote, settings_options, threads_option
from headlab.retrieval.law import SOLVED, run_d_max
from headlab.retrieval.settings import (
    AnalyzeSettings,
    EvalLLMSettings,
    GenerateSettings,
    SweepSettings,
    TrainSettings,
)
from headlab.retrieval.task import FORMS


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("retrieval", help="the retrieval problem: generate, train, sweep, evaluate LLMs")
    rs = p.add_subparsers(dest="retrieval_cmd", required=True)

    g = rs.add_parser("generate", help="write seeded examples, one JSON a line (each checked by the solver)")
    g.add_argument("--form", required=True, choices=FORMS)
    g.add_argument("--depth", type=at_least(1), required=True)
    settings_options(g, GenerateSettings)
    run_options(g, "out", "overwrite", out="FILE.jsonl", required=True, overwrite="replace an existing FILE.jsonl")
    bind(g, retrieval.generate, _cmd_generate)

    t = rs.add_parser("train", help="train one decoder on the minimal form")
    t.add_argument("--depth", type=at_least(1), required=True)
    settings_options(t, TrainSettings)
    run_options(t, "out", out="run folder", required=True)
    t.add_argument("--resume", action="store_true", help="continue the run in --out from its last checkpoint")
    run_options(t, "progress")
    bind(t, retrieval.train, _cmd_train)

    s = rs.add_parser("sweep", help="layers x depth x curriculum x seeds: success map and learning curves")
    settings_options(s, SweepSettings)
    run_options(s, "out", "overwrite", "progress", out="sweep folder", out_default="runs/retrieval-sweep",
                overwrite="replace a sweep.json in --out that is not a sweep's summary (a rerun resumes without it)")
    bind(s, retrieval.sweep, _cmd_sweep)

    an = rs.add_parser("analyze", help="label heads from attention maps, check by ablation, emergence order")
    an.add_argument("run", help="a run of headlab retrieval train (or a sweep cell)")
    settings_options(an, AnalyzeSettings)
    run_options(an, "out", "overwrite", out="output folder (default RUN/analyze)")
    bind(an, retrieval.analyze, _cmd_analyze)

    dl = rs.add_parser("depth-law", help="largest hop count solved per layer count, against 3^L/2 (a finished sweep)")
    dl.add_argument("sweep", nargs="+", help="folders written by headlab retrieval sweep (one setting each)")
    run_options(dl, "out", "overwrite", out="output folder (default: the sweep folder; required for several)")
    bind(dl, retrieval.depth_law, _cmd_depth_law)

    em = rs.add_parser("emergence", help="order in which labelled heads emerge, across seeds (analyzed runs)")
    em.add_argument("runs", nargs="+", help="runs already analyzed (headlab retrieval analyze RUN)")
    run_options(em, "out", "overwrite", out="write emergence.json here")
    bind(em, retrieval.emergence, _cmd_emergence)

    e = rs.add_parser("eval-llm", help="accuracy of a pretrained causal LM on the text forms, by depth")
    e.add_argument("model")
    settings_options(e, EvalLLMSettings)
    run_options(e, "device")
    threads_option(e)
    run_options(e, "out", "overwrite", "progress",
                out="folder for eval_llm.json and .png (default runs/eval-llm-MODEL)")
    bind(e, retrieval.eval_llm, _cmd_eval_llm)


def _cmd_generate(a: argparse.Namespace) -> int:
    rows = call(a)
    print(f"wrote {len(rows)} {a.form} examples of depth {a.depth} to {a.out} (all checked by the solver)")
    return 0


def _cmd_train(a: argparse.Namespace) -> int:
    r = call(a)
    if r.solved is not None:
        print(f"k-hop: hop counts 0..{r.solved} solved (error < 5%; published for {r.n_layers} layers: "
              f"{r.published_solved}); final error by hop count {r.final_errors}")
        return 0
    print(f"success: {r.success} (step {r.success_step}); final accuracy by depth {r.final_accuracy}")
    if r.final_hops:
        print(f"final accuracy by hop count {r.final_hops}: hops 1..{run_d_max(r.to_json())} solved at "
              f"{SOLVED} (a dense run is read per hop; its success is the answer's, asked without the hops)")
    elif not r.success:
        print(f"not learned in {r.steps} steps: try more --steps, --init fan-in --untied (the recipe that leaves "
              "the one-lookup plateau), or fewer --distractors; results/retrieval holds runs that learned")
    return 0


def _cmd_depth_law(a: argparse.Namespace) -> int:
    r = call(a)
    print(r.markdown(), end="")
    say_wrote(a.out or a.sweep[0], r)
    return 0


def _cmd_sweep(a: argparse.Namespace) -> int:
    r = call(a)
    for k, v in r["cells"].items():
        if not v["seeds"]:
            print(f"  {k:<16} not run")
            continue
        print(f"  {k:<16} {v['successes']}/{v['seeds']} succeeded (bound log3(2D) = {v['bound_layers']:.2f} layers)")
    for c, v in r["by_curriculum"].items():
        print(f"  curriculum {c}: {v['successes']}/{v['runs']} runs succeeded")
    say_wrote(a.out, r)
    return 0


def _cmd_analyze(a: argparse.Namespace) -> int:
    out = Path(a.out or os.path.join(a.run, "analyze"))
    r = call(a, out=out)
    print((out / "analyze.md").read_text())
    say_wrote(out, r)
    return 0


def _cmd_emergence(a: argparse.Namespace) -> int:
    print(call(a).markdown(), end="")
    return 0


def _outcomes(c: dict) -> str:
    shares = ", ".join(f"{k} {v / sum(c['counts'].values()):.2f}" for k, v in c["counts"].items())
    return f"; continuation: {c['accuracy']:.3f} [{c['interval'][0]:.3f}, {c['interval'][1]:.3f}] ({shares})"


def _cmd_eval_llm(a: argparse.Namespace) -> int:
    out = Path(a.out or os.path.join("runs", "eval-llm-" + os.path.basename(str(a.model).rstrip("/"))))
    r = call(a, out=out)
    for c in r["cells"]:
        print(
            f"  {c['form']:<13} depth {c['depth']}: {c['accuracy']:.3f} [{c['interval'][0]:.3f}, "
            f"{c['interval'][1]:.3f}] (n={c['n']}, chance {c['chance']:.2f})"
            + (_outcomes(c["continuation"]) if "continuation" in c else "")
        )
    say_wrote(out, r)
    return 0
