"""What a retrieval or k-hop run records about itself, as registered results: ``task.json`` (:class:`RunTask`,
written before training, so an unfinished run is known by it) and ``summary.json`` (:class:`RunSummary`, its
shape, budget and outcome, written when it finishes). The sweep, the depth law, the verdicts and the viewer read
a run through these two, never by parsing its files themselves."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from headlab.display import field_table
from headlab.result import Result
from headlab.retrieval.task import KHopTask, RetrievalTask

#: the task kinds a ``task.json`` may hold, by its ``task`` key (absent: the retrieval problem)
TASKS: dict[str, type[RetrievalTask] | type[KHopTask]] = {"retrieval": RetrievalTask, "khop": KHopTask}


@dataclass
class RunTask(Result):
    """The task a run was trained on; its JSON is the task's own fields (``"task": "khop"`` for k-hop)."""

    KIND: ClassVar[str] = "task.json"
    KEYS: ClassVar[tuple[str, ...]] = tuple(sorted({"task"} | {f.name for t in TASKS.values()
                                                                for f in dataclasses.fields(t)}))
    task: RetrievalTask | KHopTask

    def to_json(self) -> dict[str, Any]:
        return self.task.to_json()

    @classmethod
    def _optional(cls) -> set[str]:
        return set(cls.KEYS)  # which keys are needed depends on the kind: the task's constructor checks them

    @classmethod
    def decode(cls, d: dict[str, Any]) -> "RunTask":
        kind = TASKS[d.get("task", "retrieval")]
        return cls(kind(**{k: v for k, v in d.items() if k != "task"}))

    def markdown(self) -> str:
        return field_table("task", self.to_json().items())


@dataclass
class RunSummary(Result):
    """A finished run: the task, the model's shape and the optimizer's budget, then the outcome. The retrieval
    problem fills the ``success``/``final_*`` fields (``ensemble_wall_s``, ``eval_n``, ``trained_with`` when it
    was trained in an ensemble); the k-hop task fills ``final_errors``, ``solved``, ``published_solved`` and
    ``curve``. Fields added after runs were committed default to what those runs used."""

    KIND: ClassVar[str] = "summary.json"
    task: dict[str, Any]
    n_layers: int
    n_heads: int
    d_model: int
    positions: str
    steps: int
    seed: int
    lr: float
    warmup_steps: int
    batch_size: int
    init: str = "default"
    untied: bool = False
    checkpoint_every: int | None = None
    # the retrieval problem
    success_threshold: float | None = None
    success: bool | None = None
    success_step: int | None = None
    final_accuracy: dict[str, float] = field(default_factory=dict)
    final_loss: float | None = None
    final_hops: dict[str, float] = field(default_factory=dict)
    trained_with: str | None = None
    ensemble_wall_s: float | None = None
    eval_n: int | None = None
    # the k-hop task
    final_errors: dict[str, float] | None = None
    solved: int | None = None
    published_solved: int | None = None
    curve: list[dict[str, int]] | None = None

    #: what produced a run's data: its task, model, budget and seed (how often it checkpointed, how many sequences
    #: evaluated it and whether it trained in an ensemble change no weight it reaches)
    RECIPE: ClassVar[tuple[str, ...]] = ("task", "n_layers", "n_heads", "d_model", "positions", "steps", "seed", "lr",
                                         "warmup_steps", "batch_size", "init", "untied")

    @classmethod
    def produced_from(cls, doc: dict[str, Any]) -> list[dict[str, Any]]:
        """One identity: the run's recipe and seed, read as the run reads back (fields it did not record at their
        defaults), so a rerun of the same recipe and seed is the same data however its files differ."""
        run = cls.from_json(doc).to_json()
        return [{k: run.get(k) for k in cls.RECIPE}]

    def to_json(self) -> dict[str, Any]:
        """Every field the run has: an optional one left unset (the other task's, or what an older run did not
        record) is left out, as it reads back."""
        optional = self._optional()
        return {k: v for k, v in super().to_json().items() if k not in optional or v not in (None, {})}

    def markdown(self) -> str:
        shown = ((k, v) for k, v in self.to_json().items() if k != "curve")
        return field_table(f"run summary ({self.task.get('task', 'retrieval')} task)", shown)


def finished_runs(folder: Path) -> list[RunSummary]:
    """The summaries of the finished runs one level inside ``folder`` (a sweep's cells), in name order; a run
    still training has none and is not listed."""
    return [RunSummary.read(p) for p in sorted(Path(folder).glob(f"*/{RunSummary.KIND}"))]
