"""The retrieval problem from Python: the twins of ``headlab retrieval generate | train | sweep | analyze |
emergence | eval-llm``, the same names (``eval_llm`` for ``eval-llm``) and defaults.

Example:

    from headlab import retrieval
    run = retrieval.train(depth=2, n_layers=2, steps=300, out="runs/ret-d2")
    run["success"], run["final_accuracy"]
    retrieval.analyze("runs/ret-d2")       # labelled heads, ablation check, emergence steps
"""

from __future__ import annotations

import json
from contextlib import nullcontext
from pathlib import Path
from typing import Any, Sequence

from headlab.errors import HeadlabError, in_callers_words
from headlab.formation.emergence import EmergenceResult
from headlab.io import claim_file, saving, write_text_atomic, writing
from headlab.models import LoadedModel
from headlab.retrieval import analysis, grid, llm_eval
from headlab.retrieval.analysis import AnalyzeResult, circuit_emergence, write_analysis
from headlab.retrieval.grid import SweepResult
from headlab.retrieval.khop import KHopTask, train_khop
from headlab.retrieval.law import DepthLawResult
from headlab.retrieval.law import depth_law as measure
from headlab.retrieval.llm_eval import EvalLLMResult, plot_eval
from headlab.retrieval.record import RunSummary
from headlab.retrieval.settings import (
    ANALYZE,
    EVAL_LLM,
    GENERATE,
    SWEEP,
    TRAIN,
    AnalyzeSettings,
    EvalLLMSettings,
    GenerateSettings,
    SweepSettings,
    TrainSettings,
)
from headlab.retrieval.task import generate as examples
from headlab.retrieval.training import RetrievalTask, train_retrieval
from headlab.settings import takes, takes_run
from headlab.values import listed, validate


@in_callers_words
@takes(GenerateSettings)
def generate(settings: GenerateSettings = GENERATE, *, form: str, depth: int, out: str | Path | None,
             overwrite: bool) -> list[dict[str, Any]]:
    """``n`` seeded examples of ``form`` at chain ``depth`` with ``distractors`` distractor chains, each checked
    by the solver; with ``out`` (a ``.jsonl`` file, never replaced unless ``overwrite``), written one JSON a line.

    Example:

        ex = retrieval.generate(form="assign", depth=3, n=2)
        print(ex[0]["prompt"]); ex[0]["answer"]
    """

    validate(depth=depth)
    if out is not None:
        claim_file(out, overwrite)  # before the work: a folder, an existing file or a read-only place is refused
    rows = [{k: v for k, v in ex.items() if k != "chain"} for ex in examples(
        form, depth, settings.n, settings.seed, n_distractors=settings.distractors)]
    if out is not None:
        write_text_atomic(out, "\n".join(json.dumps(r) for r in rows) + "\n")
    return rows


@in_callers_words
@takes(TrainSettings, required=("out",))
def train(settings: TrainSettings = TRAIN, *, depth: int, out: str | Path, resume: bool = False,
          progress: bool) -> RunSummary:
    """Train one decoder on the minimal form at chain ``depth`` under ``curriculum`` (none, mixed, chain or
    dense) into ``out``; held-out accuracy by depth every ``eval_every`` steps; success is accuracy >= 0.99 at
    full depth. ``min_depth``: each step's training chains have a depth drawn from min_depth..depth (held-out
    sets stay at full length). ``warmup_steps`` defaults to min(100, steps/10). Returns the run's summary
    (success, the step of success, final accuracy by depth), also written to ``OUT/summary.json``. ``resume``
    continues the run in ``out`` from its last checkpoint (a folder with checkpoints is refused without it).
    ``task="khop"``: the k-hop induction task of Sanford et al. instead (:mod:`headlab.retrieval.khop`;
    ``depth`` is the largest hop count, the curriculum and distractors do not apply), its summary the per-hop
    error and the hop counts solved.

    Example:

        run = retrieval.train(depth=2, n_layers=2, steps=500, out="runs/ret-d2")
        run["success"], run["final_accuracy"]
    """
    st = settings
    validate(depth=depth)
    run = dict(n_layers=st.n_layers, seed=st.seed, eval_every=st.eval_every, progress=progress, resume=resume,
               **st.shape())
    if st.task == "khop":
        if st.min_depth is not None:
            raise HeadlabError(f"--min-depth {st.min_depth}: the minimal task's option; khop draws every sequence's "
                               "hop count from 0..depth already")
        unused = [f"--{st.flag(k)} {getattr(st, k)}" for k in ("curriculum", "distractors", "separator")
                  if getattr(st, k) != getattr(TRAIN, k)]
        if unused:
            raise HeadlabError(f"{', '.join(unused)}: the minimal task's option(s); the k-hop task has no curriculum, "
                               "distractor chains or separator")
        return train_khop(KHopTask(max_hops=depth), out, **run)
    task = RetrievalTask(depth, st.curriculum, n_distractors=st.distractors, separator=st.separator,
                         min_depth=st.min_depth)
    return train_retrieval(task, out, **run)


@in_callers_words
@listed("layers", "depths", "curricula", "seeds")
@takes(SweepSettings)
def sweep(settings: SweepSettings = SWEEP, *, progress: bool,
          out: str | Path = "runs/retrieval-sweep", overwrite: bool) -> SweepResult:
    """Layers x depth x curriculum x seeds, each (layers, depth) trained as one ensemble, cheapest first,
    ``jobs`` at once; ``no_train`` only aggregates finished cells. Writes ``sweep.json``, ``sweep.md``,
    ``success_map.png`` and ``learning_curves.png``; ``r.figure()`` is the success map, ``to_pandas()`` one row
    per cell. A rerun into the same folder resumes it: finished runs are reused and the summary, which is made
    from them, is written again; a folder holding any other ``sweep.json`` needs ``overwrite``.

    Example:

        r = retrieval.sweep(layers=[1, 2], depths=[2], seeds=[0], steps=500, out="runs/sweep-small")
        r.figure(); r.to_pandas()[["cell", "seeds", "successes"]]
    """
    grid.check(settings)
    with writing(out, SweepResult.files(), overwrite or _earlier_sweep(Path(out))) as folder:
        return grid.sweep(folder, settings, progress=progress)


@in_callers_words
@takes(AnalyzeSettings)
def analyze(run: str | Path, settings: AnalyzeSettings = ANALYZE, *, out: str | Path | None,
            overwrite: bool) -> AnalyzeResult:
    """Label the heads of a retrieval run from attention maps on ``n`` probe examples (a role needs
    ``min_mass`` of attention), check the circuit by ablation against ``draws`` matched random sets and each
    head alone, and find the step each labelled head emerges. A run trained on dense targets also gets its hop
    labels (:mod:`headlab.retrieval.hops`: the hop whose lookup a head makes at least ``min_lift`` above even
    attention), their per-hop ablation and their emergence beside the step each hop is solved. Writes
    ``analyze.json``, ``analyze.md`` and ``circuit.png`` to ``out`` (default RUN/analyze).

    Example:

        a = retrieval.analyze("runs/sweep-small/L2-D2-chain-s0")
        a                    # the labelled circuit, the ablation check, the emergence steps
        a.figure()
    """
    folder = Path(out) if out is not None else Path(run) / "analyze"
    with writing(folder, AnalyzeResult.files(), overwrite) as held:
        r = analysis.analyze(run, settings)
        write_analysis(r, held)
    return r


def _earlier_sweep(out: Path) -> bool:
    """Whether ``out`` holds a summary this command wrote (a resume rewrites it from the runs it summarizes)."""
    try:
        SweepResult.read(out / SweepResult.KIND)
    except (HeadlabError, OSError, TypeError, KeyError, ValueError, AttributeError):
        return False
    return True


@in_callers_words
@listed("runs")
@takes_run
def emergence(runs: Sequence[str | Path], *, out: str | Path | None,
              overwrite: bool) -> EmergenceResult:
    """The order in which labelled heads emerge across analyzed runs (seeds): each run's order, how often the
    most common one repeats, pairwise precedence; with ``out``, writes ``emergence.json``.

    Example:

        e = retrieval.emergence([f"runs/sweep/L2-D2-chain-s{s}" for s in range(3)])
        e.most_common_order, e.same_order, e.n_runs
    """

    with saving(out, EmergenceResult.files(), overwrite) as folder:
        analyses = []
        for r in runs:
            f = Path(r) / "analyze" / AnalyzeResult.KIND
            if not f.exists():
                raise HeadlabError(f"{r} has not been analyzed: run headlab retrieval analyze {r} first")
            analyses.append(AnalyzeResult.read(f))
        t = circuit_emergence(analyses)
        if folder is not None:
            t.write(folder)
    return t


@in_callers_words
@takes(EvalLLMSettings)
def eval_llm(model: str | LoadedModel, settings: EvalLLMSettings = EVAL_LLM, *, device: str,
             progress: bool, out: str | Path | None, overwrite: bool) -> EvalLLMResult:
    """Accuracy of a pretrained causal LM on the text forms by chain depth (``n`` questions per cell,
    ``shots`` solved examples in the prompt), with Wilson 95% intervals; ``continuation`` > 0 also classifies a
    greedy continuation of that many tokens (answer, distractor, hop, other name, format). With ``out``,
    writes ``eval_llm.json`` and ``eval_llm.png``.

    Example:

        r = retrieval.eval_llm("smollm2-135m", depths=[1, 2], n=40, forms=["assign-mc"])
        r.to_pandas()[["form", "depth", "accuracy", "lower", "upper", "chance"]]; r.figure()
    """
    held = writing(out, EvalLLMResult.files(), overwrite) if out is not None else nullcontext(None)
    with held as folder:  # claimed and locked before the model is read: no result is lost to a late refusal
        r = llm_eval.eval_llm(model, settings, progress=progress, device=device)
        if folder is not None:
            r.write(folder)
            plot_eval(r, folder / "eval_llm.png")
    return r


__all__ = ["analyze", "emergence", "eval_llm", "generate", "sweep", "train"]


@in_callers_words
@listed("sweep")
@takes_run
def depth_law(sweep: str | Path | Sequence[str | Path], *, out: str | Path | None,
              overwrite: bool) -> DepthLawResult:
    """The depth law of a finished sweep (``headlab retrieval sweep`` at one depth, dense and answer-only
    curricula, or a folder of ``--task khop`` runs): per layers and curriculum, every seed's largest hop count
    solved at 0.95 accuracy, against 3^L/2 and 2^L (and, for k-hop runs, Sanford et al.'s published threshold).
    Several sweeps (one depth and budget each) are read side by side, each row naming its setting. With ``out``
    (default: the sweep folder; required for several), writes ``depth_law.json``, ``.md`` and ``.png``.

    Example:

        law = retrieval.depth_law(["results/retrieval/depth_law", "results/retrieval/depth_law_d8"],
                                  out="runs/law")
        law.figure()
    """

    sweeps = [sweep] if isinstance(sweep, (str, Path)) else list(sweep)
    if out is None and len(sweeps) > 1:
        raise HeadlabError(f"{len(sweeps)} sweeps read together need --out (a folder for their one depth law)")
    with saving(out if out is not None else sweeps[0], DepthLawResult.files(), overwrite) as folder:
        r = measure(sweeps)
        if folder is not None:
            r.write(folder)
    return r
