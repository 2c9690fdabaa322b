"""The rule book: every verdict headlab publishes, one declared rule per claim (``book`` holds the contract, the
version and the fingerprints; ``slash``, ``retrieval`` and ``formation`` the rules of each document)."""

from headlab.rulebook import formation, retrieval, slash  # noqa: F401  (each module declares its rules)
from headlab.rulebook.book import BOOK, VERSION, Judgement, Rule, Verdict, fingerprints, judge, label

__all__ = ["BOOK", "VERSION", "Judgement", "Rule", "Verdict", "fingerprints", "judge", "label"]
