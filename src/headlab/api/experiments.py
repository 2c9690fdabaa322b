"""Python twins of ``headlab characterize``, ``ablate``, ``importance``, ``prune`` and ``stimuli``."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from headlab.ablation import importance as importance_study
from headlab.ablation.experiment import ABLATE, AblateSettings, ablate_experiment
from headlab.ablation.importance import IMPORTANCE, ImportanceResult, ImportanceSettings
from headlab.ablation.prune import PruneResult, prune_curves, write_prune
from headlab.ablation.result import AblateResult
from headlab.errors import HeadlabError, in_callers_words
from headlab.io import saving, writing_files
from headlab.models import LoadedModel, load
from headlab.probes import make_suite, write_stimuli
from headlab.probes.settings import STIMULI, StimuliSettings
from headlab.settings import takes
from headlab.study import characterize as characterization
from headlab.study.characterize import CHARACTERIZE, CharacterizeResult, CharacterizeSettings
from headlab.values import listed

Model = str | LoadedModel


@in_callers_words
@takes(CharacterizeSettings)
def characterize(model: Model, settings: CharacterizeSettings = CHARACTERIZE, *, device: str,
                 dtype: str, progress: bool, out: str | Path | None,
                 overwrite: bool) -> CharacterizeResult:
    """Characterize every head with constructed stimuli: mass on ``/`` (SDH rule: mass > ``threshold`` in
    ``consecutive`` consecutive stimuli), specificity against other symbols, position sensitivity (coefficient of
    variation over relative gaps), context independence, layer profile; bootstrap 95% intervals over the ``n``
    base items per suite. RoPE models also get the (κ, Δ) slash-pattern analysis on ``rope_samples`` prompts.
    With ``out``, writes ``characterize.json`` and ``characterize.md`` there (the settings:
    :class:`~headlab.study.characterize.CharacterizeSettings`).

    Example:

        r = headlab.characterize("minilm-l6", n=12)
        r.to_pandas().sort_values("slash_mass").tail()   # one row per head, value and 95% interval
    """
    with saving(out, CharacterizeResult.files(), overwrite) as folder:
        r = characterization.characterize(model, settings, progress=progress, device=device, dtype=dtype)
        if folder is not None:
            r.write(folder)
    return r


@in_callers_words
@takes(AblateSettings)
def ablate(model: Model, heads: str | Sequence[str], settings: AblateSettings = ABLATE, *, device: str,
           dtype: str, progress: bool, out: str | Path | None,
           overwrite: bool) -> AblateResult:
    """Ablate ``heads`` (``L.H``) together at the output projection's input (``mode``: zero, mean or resample)
    and ``draws`` random head sets matched by layer; the change of the loss-based metric on ``samples`` windows
    of ``window`` tokens (half with ``/``), target minus control with a bootstrap 95% interval and a permutation
    p-value. ``suites`` adds stimulus suites (``suite_n`` items each). With ``out``, writes ``ablate.json``.

    Example:

        r = headlab.ablate("smollm2-135m", ["3.2", "5.7"], draws=10)
        r.control["interval"]     # target minus matched controls, 95%
    """
    if isinstance(heads, int) or (not isinstance(heads, str) and any(not isinstance(h, str) for h in heads)):
        raise HeadlabError(f"heads {heads!r}: give head names as \"L.H\" strings, e.g. [\"0.7\", \"2.3\"]")
    with saving(out, AblateResult.files(), overwrite) as folder:
        r = ablate_experiment(model, heads, settings, progress=progress, device=device, dtype=dtype)
        if folder is not None:
            r.write(folder)
    return r


@in_callers_words
@listed("corpus")
@takes(ImportanceSettings)
def importance(model: Model, settings: ImportanceSettings = IMPORTANCE, *, device: str,
               progress: bool, out: str | Path | None, overwrite: bool) -> ImportanceResult:
    """Every head's exact importance (the metric's change when that head alone is zeroed) and its gradient
    importance, on ``samples`` corpus windows of ``window`` tokens. With ``out``, writes ``importance.json``.

    Example:

        imp = headlab.importance("smollm2-135m", samples=16)
        imp.to_pandas().nlargest(10, "exact_delta")   # the heads whose removal costs most
    """
    with saving(out, ImportanceResult.files(), overwrite) as folder:
        r = importance_study.importance(model, settings, progress=progress, device=device)
        if folder is not None:
            r.write(folder)
    return r


@in_callers_words
@listed("keep", "corpus")
@takes(ImportanceSettings)
def prune(model: Model, settings: ImportanceSettings = IMPORTANCE, *, keep: Sequence[str] = (), device: str,
          progress: bool, out: str | Path | None, overwrite: bool) -> PruneResult:
    """Pruning curves: the metric after removing each fraction of heads, by several removal orders; ``keep``
    names heads (``L.H``) the keep order never removes. ``r.figure()`` draws them. With ``out``, writes
    ``prune.json`` and ``prune.png``.

    Example:

        r = headlab.prune("smollm2-135m", keep=["3.2"])
        r.figure()                                  # metric against the fraction of heads removed
        r.to_pandas().pivot(index="fraction", columns="order")
    """
    with saving(out, PruneResult.files(), overwrite) as folder:
        r = prune_curves(model, keep, settings, progress=progress, device=device)
        if folder is not None:
            write_prune(r, folder)
    return r


@in_callers_words
@takes(StimuliSettings)
def stimuli(suite: str, settings: StimuliSettings = STIMULI, *, model: Model | None = None,
            out: str | Path | None, overwrite: bool) -> list[Any]:
    """A seeded stimulus suite (texts with their target character spans); ``model``'s tokenizer draws the
    random-token contexts of the ``contexts`` suite. With ``out`` (a ``.jsonl`` file), writes it there (an
    existing file is replaced only with ``overwrite``).

    Example:

        items = headlab.stimuli("slash", n=5)
        items[0].text, items[0].spans    # the text and its target character spans [start, end)
    """

    opts: dict[str, Any] = {}
    with writing_files([out], overwrite):  # a folder, an existing file or a read-only place: refused first
        if suite == "contexts" and model is not None:
            opts["tokenizer"] = (model if isinstance(model, LoadedModel) else load(model)).tokenizer
        items = list(make_suite(suite, settings.n, settings.seed, **opts))
        if out is not None:
            write_stimuli(items, out)
    return items
