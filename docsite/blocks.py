"""Generated blocks of README.md and docs/: tables rendered from committed results, never typed by hand.

A block sits between ``<!-- generated: NAME -->`` and ``<!-- end: NAME -->``; NAME is a generator below, which
reads committed files under ``results/`` and returns the Markdown. ``python docsite/blocks.py`` rewrites every
block in place; ``tests/unit/test_docs_generated.py`` fails when a block differs from what its source gives.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"(<!-- generated: ([\w-]+) -->\n)(.*?)(<!-- end: \2 -->)", re.S)
#: name -> generator(root, up): ``up`` leads from the document to the repository root ("" or "../")
GENERATORS: dict[str, Callable[[Path, str], str]] = {}


def generator(name: str) -> Callable[[Callable[[Path, str], str]], Callable[[Path, str], str]]:
    def reg(fn: Callable[[Path, str], str]) -> Callable[[Path, str], str]:
        if name in GENERATORS:
            raise ValueError(f"generator {name!r} is already registered")
        GENERATORS[name] = fn
        return fn
    return reg


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


@generator("scale-table")
def scale_table(root: Path, up: str) -> str:
    """Specialization against parameter count (results/study/scale.json)."""
    source = "results/study/scale.json"
    d = json.loads((root / source).read_text())
    kinds = ["previous-token", "induction", "sink", "slash pattern"]
    lines = ["| model | kind | params | heads | " + " | ".join(f"{k} heads" for k in kinds)
             + " | SDHs (strict rule) | max `/` mass | top SlashScore (Δ) |", "|---" * (7 + len(kinds)) + "|"]
    for p in d["points"]:
        sdh = round(p["shares"]["/"] * p["n_heads"])
        lines.append(f"| {p['model']} | {p['kind']} | {p['n_params'] / 1e6:.2f}M | {p['n_heads']} | "
                     + " | ".join(_pct(p["shares"][k]) for k in kinds)
                     + f" | {sdh} | {p['max_slash_mass']:.3f} | {p['top_slash_score']:.3f} ({p['top_slash_delta']}) |")
    return "\n".join(lines) + f"\n\nSource: `{source}`.\n"


@generator("study-claims")
def study_claims(root: Path, up: str) -> str:
    """The claims table of the full study, as ``headlab claims`` wrote it (results/study/claims/claims.md)."""
    source = "results/study/claims/claims.md"
    text = (root / source).read_text()
    table = [line for line in text.splitlines() if line.startswith("|")]
    return "\n".join(table) + f"\n\nSource: `{source}` (details and rules there).\n"


def render(text: str, up: str, root: Path = ROOT) -> str:
    """``text`` (a document ``up`` below the root) with every generated block rendered again from its source."""
    def fill(m: re.Match) -> str:
        name = m.group(2)
        if name not in GENERATORS:
            raise KeyError(f"unknown generated block {name!r}; known: {', '.join(GENERATORS)}")
        return m.group(1) + GENERATORS[name](root, up) + m.group(4)
    return BLOCK.sub(fill, text)


def documents(root: Path = ROOT) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def main() -> int:
    for path in documents():
        text = path.read_text(encoding="utf-8")
        new = render(text, "" if path.parent == ROOT else "../")
        if new != text:
            path.write_text(new, encoding="utf-8")
            print(f"rendered {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
