"""`/` heads across languages on the slash stimulus suite (``headlab languages``).

Per model and language: the slash suite in that language only (:data:`headlab.probes.templates.TEMPLATES`,
the same categories and slots in every language), every head's mean attention mass on the marked `/` (the
``marked`` detector, as in :mod:`headlab.study.characterize`) with a bootstrap 95% interval over items, and
the strict slash-dominance rule on the suite (> θ in k consecutive items). Across languages: the top heads, the
reference language's top head's mass and rank in every other language, and the Spearman correlation of all
heads' masses with the reference language's (scipy). A head "dominates across languages" when it is the top
head in every language.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, ClassVar, Sequence

import numpy as np
from scipy.stats import spearmanr

from headlab.census.stats import SDH, ConsecutiveRule
from headlab.errors import HeadlabError
from headlab.head import name as head_name
from headlab.io import write_text_atomic
from headlab.models import LoadedModel, resolve
from headlab.probes.suites import slash
from headlab.probes.templates import TEMPLATES
from headlab.result import Result
from headlab.settings import Settings, dtype_setting, setting
from headlab.study.bootstrap import mean_ci
from headlab.study.characterize import marked_mass
from headlab.values import ITEM_BYTES, Rule

LANGUAGES = tuple(TEMPLATES)


@dataclass
class LanguageRow:
    language: str
    items: int
    sdh: list[str]                        # heads passing the strict rule on this language's suite
    top: list[tuple[str, float, float, float]]   # head, mass, lower, upper (best first)
    reference_top_mass: float             # the reference language's top head, here
    reference_top_rank: int               # 1 = it is the top head here too
    spearman: float                       # all heads' masses here vs in the reference language


@dataclass
class LanguagesResult(Result):
    """Per language: the top heads by mass on `/`, the strict rule's SDHs, the reference's top head's rank."""

    model: str
    settings: dict[str, Any]
    rows: list[LanguageRow]

    @property
    def same_top(self) -> bool:
        return len({r.top[0][0] for r in self.rows}) == 1

    def records(self) -> list[dict[str, Any]]:
        return [{k: v for k, v in asdict(r).items()} for r in self.rows]

    KIND = "languages.json"
    COMPANIONS = ("languages.md",)
    KEYS = ("model", "settings", "same_top", "rows")

    def to_json(self) -> dict[str, Any]:
        return {"model": self.model, "settings": self.settings, "same_top": self.same_top,
                "rows": [asdict(r) for r in self.rows]}

    @classmethod
    def decode(cls, d: dict[str, Any]) -> "LanguagesResult":
        rows = [LanguageRow(**{**r, "top": [tuple(t) for t in r["top"]]}) for r in d["rows"]]
        return LanguagesResult(d["model"], d["settings"], rows)

    def markdown(self) -> str:
        ref = self.settings["reference"]
        lines = [f"## {self.model}", "",
                 f"| language | items | SDHs (strict rule) | top heads by `/` mass [95%] | {ref}'s top head here "
                 f"(rank) | Spearman with {ref} |", "|---|---|---|---|---|---|"]
        for r in self.rows:
            top = ", ".join(f"{h} {v:.2f} [{a:.2f}, {b:.2f}]" for h, v, a, b in r.top)
            lines.append(f"| {r.language} | {r.items} | {len(r.sdh)}{': ' + ', '.join(r.sdh) if r.sdh else ''} | "
                         f"{top} | {r.reference_top_mass:.2f} ({r.reference_top_rank}) | {r.spearman:.2f} |")
        tops = sorted({r.top[0][0] for r in self.rows})
        lines += ["", f"Same top head in every language: {'yes, ' + tops[0] if self.same_top else 'no'} "
                  f"(top heads: {', '.join(tops)})."]
        return "\n".join(lines) + "\n"

    def write_companions(self, folder: Path) -> None:
        write_text_atomic(folder / "languages.md", self.markdown())


def check_languages(languages: Sequence[str]) -> None:
    unknown = [x for x in languages if x not in TEMPLATES]
    if unknown or not languages:
        raise HeadlabError(f"--languages: unknown language {', '.join(unknown) or '(none given)'}; the slash suite "
                           f"has templates in {', '.join(LANGUAGES)}")


@dataclass(frozen=True)
class LanguagesSettings(Settings):
    """The slash stimulus suite in each of ``languages`` (the first is the reference), ``n`` items each drawn
    with ``seed``; ``batch_size`` and the weights' ``dtype``."""

    FAMILY: ClassVar[str] = "languages"
    LISTS: ClassVar[tuple[str, ...]] = ("languages",)

    languages: tuple[str, ...] = setting(LANGUAGES, "languages; the first is the reference", choices=LANGUAGES,
                                         annotation="Sequence[str]")
    n: int = setting(40, "suite items per language (the strict rule needs three in a row)",
                     rule=Rule("whole", 3, each=ITEM_BYTES))
    seed: int = setting(0, "random seed (the suite's items)")
    batch_size: int = setting(8, "samples per forward pass")
    dtype: str = dtype_setting()

    def more_problems(self) -> list[str]:
        return [] if self.languages else ["--languages: give at least one language"]


#: languages given no options
LANGUAGES_SETTINGS = LanguagesSettings()


def by_language(model: str | LoadedModel, settings: LanguagesSettings = LANGUAGES_SETTINGS, *, top: int = 3,
                threshold: float = SDH.threshold, consecutive: int = SDH.consecutive,
                device: str) -> LanguagesResult:
    """Measure ``model`` on the slash suite of each of ``settings.languages``; the first is the reference."""

    languages, n, seed, batch_size = settings.languages, settings.n, settings.seed, settings.batch_size
    check_languages(languages)
    lm = resolve(model, device=device, dtype=settings.dtype)
    L, H = lm.facts.n_layers, lm.facts.n_heads
    masses = {}
    for lang in languages:
        m = marked_mass(lm, slash(n, seed, [lang]), batch_size)  # (N, L, H)
        rule = ConsecutiveRule((L, H), threshold, consecutive)
        rule.update(m)
        masses[lang] = (m, rule.passed)
    ref_mean = np.nanmean(masses[languages[0]][0], 0).ravel()
    ref_top = int(np.nanargmax(ref_mean))
    rows = []
    for lang, (m, passed) in masses.items():
        mean, lo, hi = (a.ravel() for a in mean_ci(m, seed=seed))
        order = np.argsort(-np.nan_to_num(mean, nan=-1.0), kind="stable")
        name = lambda i: head_name(int(i) // H, int(i) % H)  # noqa: E731
        rows.append(LanguageRow(
            language=lang, items=len(m), sdh=[head_name(int(a), int(b)) for a, b in zip(*np.nonzero(passed))],
            top=[(name(i), float(mean[i]), float(lo[i]), float(hi[i])) for i in order[:top]],
            reference_top_mass=float(mean[ref_top]), reference_top_rank=int(np.nonzero(order == ref_top)[0][0]) + 1,
            spearman=float(spearmanr(mean, ref_mean, nan_policy="omit").statistic)))
    return LanguagesResult(lm.name, {"languages": list(languages), "reference": languages[0], "n": n, "seed": seed,
                                     "threshold": threshold, "consecutive": consecutive,
                                     "detector": "marked (mass on the suite's `/`)"}, rows)
