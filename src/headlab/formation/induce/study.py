"""``headlab induce CONFIG``: the active-induction study. Every arm (:mod:`.arms`) x seed is a training run under
``OUT/runs/ARM-sSEED`` with its ``measure.json`` (:class:`.measure.MeasureResult`); the study summary is
``OUT/induce.json``, ``induce.md`` and ``induce.png``. Every run's data pool is made before the first run trains
(built once per data settings and seed, shared by the arms that keep them). A run that finished is reused, one
that was interrupted is resumed, so an interrupted study keeps its finished work.

Per arm, over seeds (the measures are ours): ``SDH at the end`` k/n seeds (a head passes the strict rule on the
final weights); the median first step at which any head passes; the held-out loss cost against the plain arm of
the same seed; the layers the passing heads are in; for the auxiliary arms, whether the induced head still passes
after the term stops; the functional test (ablation loss difference against matched random heads).
The verdict per arm is the rule book's ``formation.foster``: its seeds ending with an SDH against the plain arm's
at the same seeds (Fisher's exact test, one-sided, p < 0.05); the plain arm is the null.
"""

from __future__ import annotations

import shutil
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from headlab.errors import HeadlabError
from headlab.formation.induce.arms import InduceSettings, arm_config
from headlab.formation.induce.measure import MeasureResult, measure_run, persistence
from headlab.formation.training_run import tracked_training
from headlab.io import write_text_atomic
from headlab.plotting import pyplot, save_figure
from headlab.result import Result
from headlab.rulebook import judge, label
from headlab.rulebook.multiplicity import holm, stated
from headlab.rulebook.registration import judged_as_produced
from headlab.training import checkpoint as ckpt
from headlab.training import from_dict
from headlab.training.config import config_path, load_config, same_but_vocab
from headlab.training.data import build_pool, fingerprint, pool_matches, save_pool


def run_arm(base: dict[str, Any], arm: str, seed: int, levers: InduceSettings, out: Path, draws: int,
            progress: bool) -> MeasureResult:
    run = out / "runs" / f"{arm}-s{seed}"
    cfg = from_dict(arm_config(base, arm, levers, seed), f"arm {arm}")
    if (run / MeasureResult.KIND).exists() and (run / "final.safetensors").exists():
        return MeasureResult.read(run)
    if not (run / "final.safetensors").exists():
        tracked_training(cfg, run, resume=bool(ckpt.checkpoints(run)), progress=progress, device="cpu")
    rec = measure_run(run, arm, draws, seed, progress=False)
    rec.write(run)
    return rec


def prepare_pools(configs: dict[Path, Any], progress: bool) -> None:
    """Every run's data pool before the first run trains (a corpus too small for an arm's settings fails here, not
    after hours of training): built once per data settings and seed, copied (digest-checked) to the runs that
    share them, left alone where a run already holds its own."""

    built: dict[str, Path] = {}
    for run, cfg in configs.items():
        want = fingerprint(cfg.data, cfg.optim.seed)
        if pool_matches(run, want) is None:
            built.setdefault(want, run)
            continue
        run.mkdir(parents=True, exist_ok=True)
        if want in built:
            src = built[want]
            shutil.rmtree(run / "tokenizer", ignore_errors=True)
            shutil.copytree(src / "tokenizer", run / "tokenizer")
            shutil.copy2(src / "data.safetensors", run / "data.safetensors")
            shutil.copy2(src / "data.json", run / "data.json")  # last: it marks the pool finished
        else:
            pool, tok = build_pool(cfg.data, cfg.optim.seed, progress)
            save_pool(pool, tok, run, want)
            built[want] = run


def summarize(records: list[MeasureResult]) -> dict[str, Any]:
    plain = {r["seed"]: r["loss"][-1] for r in records if r["arm"] == "plain"}
    out = {}
    for arm in dict.fromkeys(r["arm"] for r in records):
        rs = [r for r in records if r["arm"] == arm]
        ends = [bool(r["final_pass_heads"]) for r in rs]
        firsts = [r["first_pass_step"] for r in rs if r["first_pass_step"] is not None]
        cost = [r["loss"][-1] - plain[r["seed"]] for r in rs if r["seed"] in plain]
        abl = [r["ablation"] for r in rs if r["ablation"] is not None]
        out[arm] = {
            "seeds": len(rs), "sdh_at_end": sum(ends), "sdh_ever": sum(r["first_pass_step"] is not None for r in rs),
            "median_first_pass_step": float(np.median(firsts)) if firsts else None,
            "layers": sorted({int(h.split(".")[0]) for r in rs for h in r["final_pass_heads"]}),
            "heldout_loss": [r["loss"][-1] for r in rs],
            "loss_cost_vs_plain": {"mean": float(np.mean(cost)), "min": float(np.min(cost)),
                                   "max": float(np.max(cost))} if cost else None,
            "persistence": ([{"seed": r["seed"], "heads": persistence(r)} for r in rs]
                            if rs[0]["aux_stop"] is not None else None),
            "ablation": {"difference_mean": float(np.mean([a["difference"] for a in abl])),
                         "significant": sum(a["interval"][0] > 0 for a in abl), "runs": len(abl),
                         "heads_sdh": sum(r["ablated_is_sdh"] for r in rs)} if abl else None,
        }
    return judge_arms(out)


def judge_arms(summary: dict[str, Any]) -> dict[str, Any]:
    """Every arm of ``summary`` with its verdict by the rule book's ``formation.foster`` against the plain arm
    (not measured without one): the counts it keeps are the rule's statistics."""
    plain = summary.get("plain")
    stats = {arm: None if plain is None else {"null_arm": True} if arm == "plain" else
             {"arm": [s["sdh_at_end"], s["seeds"]], "plain": [plain["sdh_at_end"], plain["seeds"]]}
             for arm, s in summary.items()}
    stale = ("exploratory", "p")  # a judgement's optional marks: the new judgement says them afresh
    judged = holm([{**{k: v for k, v in s.items() if k not in stale}, **judge("formation.foster", stats[arm])}
                   for arm, s in summary.items()])
    return dict(zip(summary, judged))


def markdown(summary: dict[str, Any], settings: dict[str, Any]) -> str:
    lines = ["# Active induction of a `/` head", "", f"Base config `{settings['config']}`, seeds "
             f"{settings['seeds']}; levers {settings['levers']}.", "",
             "| arm | SDH at end | ever | median first step | layers | held-out loss − plain (mean [min, max]) | "
             "ablation: loss Δ − controls (mean; runs with interval > 0) | verdict |",
             "|---|---|---|---|---|---|---|---|"]
    for arm, s in summary.items():
        c = s["loss_cost_vs_plain"]
        cost = f"{c['mean']:+.3f} [{c['min']:+.3f}, {c['max']:+.3f}]" if c else "n/a"
        a = s["ablation"]
        abl = f"{a['difference_mean']:+.4f} ({a['significant']}/{a['runs']})" if a else "not run"
        first = f"{s['median_first_pass_step']:.0f}" if s["median_first_pass_step"] is not None else "-"
        lines.append(f"| {arm} | {s['sdh_at_end']}/{s['seeds']} | {s['sdh_ever']}/{s['seeds']} | {first} | "
                     f"{', '.join(map(str, s['layers'])) or '-'} | {cost} | {abl} | {label(s)} |")
    for arm, s in summary.items():
        for p in s["persistence"] or []:
            for head, v in (p["heads"] or {}).items():
                lines.append(f"- {arm}, seed {p['seed']}: head {head} after the auxiliary loss stopped: passes at "
                             f"{v['passing_after_stop']} of {v['checkpoints_after_stop']} checkpoints, at the end: "
                             f"{v['passes_at_end']}")
    lines += ["", "Verdicts: the rule book's `formation.foster` (docs/rules.md), each arm against the plain arm:", ""]
    lines += [f"- {arm}: {s.get('power') or '-'}" for arm, s in summary.items() if arm != "plain"]
    lines += ["", stated(list(summary.values()))]
    return "\n".join(lines) + "\n\n![mass](induce.png)\n"


@dataclass
class InduceResult(Result):
    """``induce.json``: the study's ``settings`` (config, arms, seeds, levers, draws) and its per-arm ``summary``
    with the verdicts; ``induce.md`` beside it (``induce.png``, drawn from the per-run records, too)."""

    KIND: ClassVar[str] = "induce.json"
    COMPANIONS: ClassVar[tuple[str, ...]] = ("induce.md", "induce.png")

    settings: dict[str, Any]
    summary: dict[str, Any]

    def markdown(self) -> str:
        return markdown(self.summary, self.settings)

    @classmethod
    def produced_from(cls, doc: dict[str, Any]) -> list[dict[str, Any]]:
        """One identity per arm and seed: the study's config, the arm, its levers and the seed (the plain arm has
        none)."""
        s = doc["settings"]
        return [{"config": s["config"], "arm": arm, "levers": None if arm == "plain" else s.get("levers"),
                 "seed": seed} for arm in s["arms"] for seed in s["seeds"]]

    def records(self) -> list[dict[str, Any]]:
        return [{"arm": arm, **{k: v for k, v in row.items() if not isinstance(v, (list, dict))}}
                for arm, row in self.summary.items() if isinstance(row, dict)]

    def write_companions(self, folder: Path) -> None:
        write_text_atomic(folder / "induce.md", self.markdown())

    def verdicts(self) -> dict[str, tuple[str, str, str]]:
        """Each arm's verdict by name (``arm A``): its rule, label and power statement."""
        return {f"arm {arm}": ("formation.foster", label(s), s.get("power", "")) for arm, s in self.summary.items()}

    def rejudged(self) -> InduceResult:
        """The study with every arm judged again by the current rule book (``headlab verdicts``)."""
        return InduceResult(self.settings, judge_arms(self.summary))


def plot(records: list[MeasureResult], path: Path) -> None:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    for arm in dict.fromkeys(r["arm"] for r in records):
        rs = [r for r in records if r["arm"] == arm]
        steps = rs[0]["steps"]
        top = np.mean([[np.max(m) for m in r["mass"]] for r in rs if r["steps"] == steps], 0)
        ax.plot(steps, top, marker="o", ms=2, label=arm)
    ax.axhline(0.5, color="k", lw=0.6, ls="--")
    ax.set(xscale="log", xlabel="step", ylabel="highest head's `/` mass (mean over seeds)",
           title="held-out probe windows")
    ax.legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, path)


def run_arms(config: str | Path, out: str | Path, settings: InduceSettings, progress: bool) -> InduceResult:

    out, levers, arms, seeds, draws = Path(out), settings, settings.arms, settings.seeds, settings.draws
    base = tomllib.loads(config_path(config).read_text(encoding="utf-8"))
    configs = {out / "runs" / f"{arm}-s{seed}": from_dict(arm_config(base, arm, levers, seed), f"{config} (arm {arm})")
               for arm in arms for seed in seeds}  # every arm's config is checked before the first run starts
    for run, cfg in configs.items():  # and a run kept from an earlier study must be this study's run
        if (run / "config.toml").exists() and not same_but_vocab(load_config(run / "config.toml"), cfg):
            raise HeadlabError(f"{run} was trained from another config than this study's {run.name}; choose "
                               "another --out or remove that run")
    prepare_pools({r: c for r, c in configs.items() if not (r / "final.safetensors").exists()}, progress)
    records = [run_arm(base, arm, seed, levers, out, draws, progress) for arm in arms for seed in seeds]
    record = {"config": str(config), "arms": list(arms), "seeds": list(seeds), "levers": settings.levers(),
              "draws": draws}
    # judged under the identities of its arms and seeds: a rerun of a declared study stays exploratory
    result = judged_as_produced(InduceResult(record, summarize(records)))
    result.write(out)
    plot(records, out / "induce.png")
    return result
