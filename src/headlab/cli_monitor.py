"""CLI of the head monitor: ``headlab monitor fit``, ``check`` and ``evaluate``."""

from __future__ import annotations

import argparse
from pathlib import Path

from .cli_types import at_least, list_option, real_in


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("monitor", help="profile a model's head activity on reference text; flag unusual documents")
    ms = p.add_subparsers(dest="monitor_cmd", required=True)
    f = ms.add_parser("fit", help="scan a reference corpus and write PROFILE_DIR/profile.json")
    f.add_argument("model")
    list_option(f, "--corpus", default=["wiki"], metavar="SRC", help="reference text (default: wiki)")
    f.add_argument("--max-samples", type=at_least(20), default=2000)
    f.add_argument("--per-detector", type=at_least(1), default=8, help="heads per detector in a fingerprint")
    f.add_argument("--fpr", type=real_in(0, 0.5, open_lo=True), default=0.01,
                   help="share of reference documents flagged (default 0.01)")
    _shared(f)
    f.set_defaults(func=_cmd_fit)
    c = ms.add_parser("check", help="score and flag every document of a corpus against a profile")
    c.add_argument("profile", help="a folder written by headlab monitor fit")
    list_option(c, "--corpus", required=True, metavar="SRC")
    c.add_argument("--max-samples", type=at_least(1), default=2000)
    _shared(c)
    c.set_defaults(func=_cmd_check)
    from .monitor.evaluate import KINDS

    e = ms.add_parser("evaluate", help="AUROC of the monitor vs a character-class baseline, per kind of structure")
    e.add_argument("model")
    list_option(e, "--reference", default=["wiki"], metavar="SRC")
    list_option(e, "--kinds", choices=KINDS, default=None,
                help="kinds of structure to detect (default: every kind whose corpus is installed)")
    e.add_argument("--max-samples", type=at_least(20), default=3000, help="reference samples (default 3000)")
    e.add_argument("--kind-samples", type=at_least(1), default=200, help="samples per kind (default 200)")
    _shared(e)
    e.set_defaults(func=_cmd_evaluate)


def _shared(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--batch-size", type=at_least(1), default=8)
    p.add_argument("--device", default="cpu")
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--overwrite", action="store_true", help="replace an earlier result in --out")
    p.add_argument("--no-progress", action="store_true")


def _cmd_fit(a: argparse.Namespace) -> int:
    from .io import writing
    from .monitor import fit

    with writing(a.out, ["profile.json"], a.overwrite) as out:
        prof = fit(a.model, a.corpus, max_samples=a.max_samples, per_detector=a.per_detector, fpr=a.fpr,
                   seed=a.seed, batch_size=a.batch_size, progress=not a.no_progress, device=a.device)
        prof.write(out / "profile.json")
    print(f"profile of {prof.model} on {', '.join(prof.corpus)}: {len(prof.features)} features, "
          f"{prof.n_fit} documents fitted, {prof.n_calibration} held out; threshold {prof.threshold:.2f} flags "
          f"{100 * prof.calibration_flag_rate:.1f}% of the held-out reference (target {100 * prof.fpr:.0f}%)")
    print(f"wrote {out}/profile.json")
    return 0


def _cmd_check(a: argparse.Namespace) -> int:
    from .errors import HeadlabError
    from .io import writing
    from .monitor import check

    if not (Path(a.profile) / "profile.json").exists():
        raise HeadlabError(f"{a.profile} holds no profile.json; write one with headlab monitor fit")
    with writing(a.out, ["check.json", "monitor.jsonl", "monitor.parquet", "monitor.md"], a.overwrite) as out:
        res, _ = check(a.profile, a.corpus, out, max_samples=a.max_samples, seed=a.seed, batch_size=a.batch_size,
                       progress=not a.no_progress, device=a.device)
    print(f"{res.n_flagged} of {res.n_documents} documents flagged ({100 * res.flag_rate:.1f}%; reference rate "
          f"{100 * res.fpr:.0f}%)")
    for t in res.top_features:
        print(f"  {t['feature']:<22} mean z {t['mean_z']:+.1f} over the flagged documents")
    print(f"wrote {out}/monitor.md, monitor.jsonl, monitor.parquet, check.json and scores.png")
    return 0


def _cmd_evaluate(a: argparse.Namespace) -> int:
    import json

    from .io import write_json_atomic, write_text_atomic, writing
    from .monitor.evaluate import evaluate, installed_kinds, markdown

    kinds = installed_kinds(a.kinds)
    with writing(a.out, ["evaluate.json", "evaluate.md", "calibration.png"], a.overwrite) as out:
        r = evaluate(a.model, a.reference, kinds, max_samples=a.max_samples, kind_samples=a.kind_samples,
                     seed=a.seed, batch_size=a.batch_size, progress=not a.no_progress, device=a.device,
                     figure=out / "calibration.png")
        write_json_atomic(out / "evaluate.json", r)
        write_text_atomic(out / "evaluate.md", markdown(r))
    print(markdown(r))
    print(json.dumps({k: v["verdict"] for k, v in r["kinds"].items()}))
    print(f"wrote {out}/evaluate.json, evaluate.md and calibration.png")
    return 0
