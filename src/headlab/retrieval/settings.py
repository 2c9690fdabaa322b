"""The settings of the retrieval commands, declared once: one decoder and its training (shared by ``train`` and
``sweep``), what each command adds, and ``analyze``'s and ``eval-llm``'s measurements. The twins' keywords,
the command-line options and the docs' tables are generated from these (:mod:`headlab.settings`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from headlab.nn.init import INITS
from headlab.settings import Settings, dtype_setting, setting
from headlab.values import Rule

CURRICULA = ("none", "mixed", "chain", "dense")
POSITIONS = ("rope", "learned", "sinusoidal")
#: the text forms a pretrained model is asked (the minimal form is for the trained decoders)
LLM_FORMS = ("assign", "assign-mc", "relatives", "relatives-mc")


@dataclass(frozen=True)
class DecoderSettings(Settings):
    """One retrieval decoder (``n_heads`` heads of width ``d_model``, ``positions``, ``init``, ``untied``
    output), its task's options (``distractors`` chains, a ``separator`` token, training chains from
    ``min_depth``) and its training (``steps`` of ``batch_size`` at ``lr`` after ``warmup_steps``, evaluated every
    ``eval_every``)."""

    FAMILY: ClassVar[str] = "retrieval"

    n_heads: int = setting(4, "heads per layer")
    d_model: int = setting(64, "model width", rule=Rule("whole", 2))
    steps: int = setting(2500, "training steps")
    batch_size: int = setting(64, "sequences per training step")
    lr: float = setting(1e-3, "peak learning rate (AdamW)")
    distractors: int = setting(1, "distractor chains beside the answer's (1: the committed runs' recipe)")
    positions: str = setting("rope", "position encoding", choices=POSITIONS)
    init: str = setting("default", "weight initialization (headlab.nn.init says what each does; fan-in with "
                        "--untied leaves the lookup plateau)", choices=tuple(INITS))
    untied: bool = setting(False, "an output head of its own, not the input embedding's")
    separator: bool = setting(False, "a <sep> token after every (variable, reference) pair")
    min_depth: int | None = setting(None, "training chains' depth drawn per step from MIN_DEPTH..depth (default: "
                                    "always the depth)")
    warmup_steps: int | None = setting(None, "learning-rate warm-up steps (default min(100, steps/10))")
    eval_every: int = setting(100, "steps between held-out evaluations")

    def shape(self) -> dict[str, Any]:
        """The keywords of :func:`~headlab.retrieval.training.retrieval_config` this decoder sets."""
        return {k: getattr(self, k) for k in ("n_heads", "d_model", "steps", "batch_size", "lr", "positions",
                                              "init", "untied", "warmup_steps")}



@dataclass(frozen=True)
class TrainSettings(DecoderSettings):
    """One run: a decoder of ``n_layers`` trained under ``curriculum`` with ``seed`` on the ``task`` (minimal, or
    khop: Sanford et al.'s k-hop induction)."""

    FAMILY: ClassVar[str] = "retrieval train"

    n_layers: int = setting(2, "layers")
    curriculum: str = setting("chain", "training curriculum (chain: the paper-like one)", choices=CURRICULA)
    task: str = setting("minimal", "minimal, or khop: Sanford et al.'s k-hop induction, --depth its largest hop "
                        "count", choices=("minimal", "khop"))
    seed: int = setting(0, "random seed (weights, data)")


@dataclass(frozen=True)
class SweepSettings(DecoderSettings):
    """The grid: ``layers`` x ``depths`` x ``curricula`` x ``seeds``, checkpoints every ``checkpoint_every`` steps,
    ``jobs`` ensembles at once, ``eval_n`` held-out examples per depth; ``no_train`` only aggregates."""

    FAMILY: ClassVar[str] = "retrieval sweep"
    LISTS: ClassVar[tuple[str, ...]] = ("layers", "depths", "curricula", "seeds")

    layers: tuple[int, ...] = setting((1, 2), "layer counts", item=int, annotation="Sequence[int]")
    depths: tuple[int, ...] = setting((2, 3), "chain depths (2 3: the bound log3(2D) is 1.26 and 1.63 layers; depth "
                                      "5 needs 3 and far more steps)", item=int, annotation="Sequence[int]")
    curricula: tuple[str, ...] = setting(("none", "mixed", "chain"), "curricula compared", choices=CURRICULA,
                                         annotation="Sequence[str]")
    seeds: tuple[int, ...] = setting((0, 1, 2), "seeds per cell", item=int, annotation="Sequence[int]")
    checkpoint_every: int = setting(50, "steps between checkpoints", rule=Rule("whole", 1))
    jobs: int = setting(2, "ensembles (one per layers x depth) trained at once, one torch thread each")
    eval_n: int = setting(256, "held-out examples per depth")
    no_train: bool = setting(False, "only aggregate the finished cells; the others are shown as not run")

    def more_problems(self) -> list[str]:
        bad = [(name, v) for name in ("layers", "depths", "seeds") for v in getattr(self, name) or ()
               if not isinstance(v, int) or isinstance(v, bool) or v < (0 if name == "seeds" else 1)]
        empty = [name for name in self.LISTS if not getattr(self, name)]
        return ([f"--{name} {v!r}: give whole numbers (seeds from 0, the others from 1)" for name, v in bad[:1]]
                + [f"--{name}: give at least one" for name in empty[:1]])


@dataclass(frozen=True)
class AnalyzeSettings(Settings):
    """How a run's heads are labelled: ``n`` probe examples, a role's ``min_mass``, a hop label's ``min_lift``;
    ``draws`` random head sets in the ablation check (:mod:`headlab.retrieval.controls`)."""

    FAMILY: ClassVar[str] = "retrieval analyze"

    n: int = setting(64, "probe examples")
    draws: int = setting(10, "random head sets of the circuit's size per layer in the ablation check (matched "
                         "where the layers allow; distinct sets: all of them where fewer exist)", rule=Rule("whole", 1))
    min_mass: float = setting(0.3, "attention mass a role needs")
    min_lift: float = setting(0.2, "dense runs: a hop label's attention above even attention over the visible "
                              "keys")


@dataclass(frozen=True)
class EvalLLMSettings(Settings):
    """What a pretrained model is asked: ``forms`` at ``depths``, ``n`` questions per cell with ``shots`` solved
    examples, ``continuation`` greedy tokens classified; ``seed``, ``batch_size``, the weights' ``dtype``."""

    FAMILY: ClassVar[str] = "retrieval eval-llm"
    LISTS: ClassVar[tuple[str, ...]] = ("depths", "forms")

    depths: tuple[int, ...] = setting((1, 2, 3), "chain depths", item=int, annotation="Sequence[int]")
    n: int = setting(500, "questions per cell")
    shots: int = setting(0, "solved examples in the prompt")
    forms: tuple[str, ...] = setting(LLM_FORMS, "text forms evaluated", choices=LLM_FORMS,
                                     annotation="Sequence[str]")
    seed: int = setting(0, "random seed (the questions)")
    batch_size: int = setting(8, "prompts per forward pass")
    continuation: int = setting(8, "greedy continuation tokens for the outcome-classified scoring (0: off)")
    dtype: str = dtype_setting()

    def more_problems(self) -> list[str]:
        bad = [v for v in self.depths or () if not isinstance(v, int) or isinstance(v, bool) or v < 1]
        return [f"--depths {bad[0]!r}: give whole numbers of at least 1"] if bad else []


#: examples one ``generate`` call makes: the list is held in memory and written at once
MAX_GENERATE = 1_000_000


@dataclass(frozen=True)
class GenerateSettings(Settings):
    """How many examples ``headlab retrieval generate`` writes (``n``), with ``distractors`` distractor chains,
    drawn with ``seed`` (the form and depth are the command's own arguments)."""

    FAMILY: ClassVar[str] = "retrieval generate"

    n: int = setting(100, f"examples (at most {MAX_GENERATE:,} a call)")
    distractors: int = setting(1, "distractor chains beside the answer's (1: the committed runs' recipe)")
    seed: int = setting(0, "random seed (the examples)")

    def more_problems(self) -> list[str]:
        return [f"--n {self.n}: at most {MAX_GENERATE:,} examples a call (they are held in memory); generate in "
                "parts with different --seed"] if isinstance(self.n, int) and self.n > MAX_GENERATE else []


#: the settings given no options
DECODER, TRAIN, SWEEP, ANALYZE, EVAL_LLM = (DecoderSettings(), TrainSettings(), SweepSettings(), AnalyzeSettings(),
                                            EvalLLMSettings())
GENERATE = GenerateSettings()
