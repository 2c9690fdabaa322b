"""Generated blocks of README.md and docs/: tables rendered from committed results, never typed by hand.

A block sits between ``<!-- generated: NAME ARGS -->`` and ``<!-- end: NAME -->``; NAME is a generator below,
which reads committed files under ``results/`` and returns the Markdown: ``table PATH [N]`` (the N-th Markdown
table of a committed file), ``text PATH`` (a committed file as a code block, e.g. what a command printed),
``wall PATH`` (the command and wall-time lines of a run record), and tables of named results. Only
``result-kinds`` reads the code instead (the registry of result files). ``python docsite/blocks.py`` rewrites
every block in place; ``tests/consistency/test_docs_generated.py`` fails when a block differs from what its source
gives.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"(<!-- generated: ([\w-]+)((?: [^\s>]+)*) -->\n)(.*?)(<!-- end: \2 -->)", re.S)
#: name -> generator(root, up, *args): ``up`` leads from the document to the repository root ("" or "../")
GENERATORS: dict[str, Callable[..., str]] = {}


def generator(name: str) -> Callable[[Callable[..., str]], Callable[..., str]]:
    def reg(fn: Callable[..., str]) -> Callable[..., str]:
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
    family = [line for line in text.splitlines() if line.startswith("Multiplicity:")]
    return "\n".join(table + ["", *family]) + f"\n\nSource: `{source}` (details and rules there).\n"


def _committed(root: Path, source: str) -> str:
    if not source.startswith("results/"):
        raise ValueError(f"a generated block reads committed results (results/...), not {source}")
    return (root / source).read_text(encoding="utf-8")


@generator("table")
def table(root: Path, up: str, source: str, index: str = "1") -> str:
    """The ``index``-th Markdown table of a committed file, as it is there."""
    tables, current = [], []
    for line in _committed(root, source).splitlines() + [""]:
        if line.startswith("|"):
            current.append(line)
        elif current:
            tables.append(current)
            current = []
    return "\n".join(tables[int(index) - 1]) + f"\n\nSource: `{source}`.\n"


@generator("text")
def text_block(root: Path, up: str, source: str) -> str:
    """A committed file (what a command printed) as a code block."""
    return "```\n" + _committed(root, source).rstrip("\n") + "\n```\n"


@generator("wall")
def wall(root: Path, up: str, source: str) -> str:
    """The lines of a committed run record that give its command and wall time."""
    found = [line.strip() for line in _committed(root, source).splitlines()
             if re.search(r"wall time:|^command:|: \d+ s$", line.strip(), re.I)]
    if not found:
        raise ValueError(f"{source} records no command or wall time")
    return "".join(f"- {line}\n" for line in found) + f"\n(`{source}`)\n"


@generator("line")
def line(root: Path, up: str, source: str, prefix: str) -> str:
    """The first line of a committed file that starts with ``prefix`` (``_`` stands for a space)."""
    want = prefix.replace("_", " ")
    found = next((x for x in _committed(root, source).splitlines() if x.startswith(want)), None)
    if found is None:
        raise ValueError(f"{source} has no line starting with {want!r}")
    return f"{found} (`{source}`)\n"


@generator("readme")
def readme_section(root: Path, up: str, slug: str) -> str:
    """The body of the README's section whose heading starts with ``slug`` (``_`` for a space), so the site says
    what the README says in one place; the section's own generated blocks come as their rendered text."""
    want = "## " + slug.replace("_", " ")
    text = (root / "README.md").read_text(encoding="utf-8")
    start = next((m.end() for m in re.finditer(r"^## .*$", text, re.M) if m.group(0).startswith(want)), None)
    if start is None:
        raise ValueError(f"README.md has no section starting {want!r}")
    nxt = re.search(r"^## ", text[start:], re.M)
    body = text[start:start + nxt.start()] if nxt else text[start:]
    body = re.sub(r"^<!-- (generated|end): .*-->\n", "", body, flags=re.M)
    return body.strip("\n") + "\n"


@generator("monitor-reading")
def monitor_reading(root: Path, up: str, source: str) -> str:
    """The counts a reading of one head-monitor evaluation (``evaluate.json``) quotes, computed from it."""
    import numpy as np

    from headlab.display import count

    d = json.loads(_committed(root, source))
    kinds = d["kinds"]
    # a verdict reads "exploratory · tie" where its rule was declared after the evaluation: counted by its outcome
    outcome = {k: r["verdict"].split(" · ")[-1].split(" (")[0] for k, r in kinds.items()}
    by = {v: sorted(k for k, o in outcome.items() if o == v) for v in ("heads better", "baseline better", "tie")}
    exploratory = sum(r["verdict"].startswith("exploratory") for r in kinds.values())
    heads = [r["auroc"]["heads"][0] for r in kinds.values()]
    forest_ahead = sorted(k for k, r in kinds.items() if r["auroc"]["heads-forest"][0] > r["auroc"]["heads"][0] + 0.03)
    recall = {m: float(np.mean([r["recall_at_fpr"][m] for r in kinds.values()])) for m in ("heads", "heads-forest")}
    text = (f"- **{d['model']}** (`{source}`): heads AUROC {min(heads):.2f}-{max(heads):.2f} over {len(kinds)} kinds; "
            f"heads better than the best baseline on {len(by['heads better'])} "
            f"({', '.join(by['heads better']) or 'none'}), baseline better on {len(by['baseline better'])} "
            f"({', '.join(by['baseline better']) or 'none'}), tie on {len(by['tie'])}"
            + (f" ({exploratory} of the {len(kinds)} verdicts exploratory: their rule was declared after this "
               "evaluation)" if exploratory else "") + "; the isolation forest ranks "
            f"better than the distance by more than 0.03 on {count(len(forest_ahead), 'kind')}, but at the 1% "
            f"threshold recalls {recall['heads-forest']:.2f} on average against the distance's {recall['heads']:.2f}.")
    if all("heads_add_information" in r for r in kinds.values()):
        adds = sorted(k for k, r in kinds.items() if r["heads_add_information"])
        best: dict[str, int] = {}
        for r in kinds.values():
            best[r["best_baseline"]] = best.get(r["best_baseline"], 0) + 1
        ranked = ", ".join(f"{m} on {n}" for m, n in sorted(best.items(), key=lambda x: -x[1]))
        text += (f" The best baseline is {ranked} kinds; combined with it, the heads add information (paired gain "
                 f"interval above 0) on {len(adds)} ({', '.join(adds) or 'none'}).")
    if all("every_signal" in r for r in kinds.values()):
        every = {k: r["every_signal"] for k, r in kinds.items()}
        below = sorted(k for k, e in every.items() if e["gain_over"][kinds[k]["best_baseline"]][2] < 0)
        aucs = [e["auroc"][0] for e in every.values()]
        text += (f" Every signal combined (each record's rarest signal, no labels): AUROC "
                 f"{min(aucs):.2f}-{max(aucs):.2f}; below the kind's best baseline (paired interval under 0) on "
                 f"{len(below)} of {len(kinds)} ({', '.join(below) or 'none'}).")
    return text + "\n"


@generator("result-kinds")
def result_kinds(root: Path, up: str) -> str:
    """Every registered result kind (headlab.result.RESULTS): its file, its Python type, its JSON keys."""
    from headlab.catalog import complete
    from headlab.result import RESULTS

    complete()  # every result kind registers when its module is imported

    lines = ["| file | Python type | top-level keys | written beside it |", "|---|---|---|---|"]
    for kind, cls in sorted(RESULTS.items()):
        keys = ", ".join(f"`{k}`" for k in cls.keys())
        lines.append(f"| `{kind}` | `{cls.__module__}.{cls.__qualname__}` | {keys} | "
                     f"{', '.join(f'`{c}`' for c in cls.COMPANIONS) or '-'} |")
    return "\n".join(lines) + "\n"


@generator("detectors")
def detectors(root: Path, up: str) -> str:
    """Every detector headlab ships (headlab.detectors.DETECTORS, plugins left out): what each declares beside
    its code."""
    from headlab.detectors import DETECTORS

    lines = ["| name | module | label | a high score means | threshold |", "|---|---|---|---|---|"]
    for name, cls in sorted(DETECTORS.items()):
        if cls.__module__.startswith("headlab."):
            lines.append(f"| `{name}` | `{cls.__module__}` | {cls.shown_as()} | {cls.meaning or '-'} | "
                         f"{'-' if cls.threshold is None else cls.threshold} |")
    return "\n".join(lines) + "\n"


@generator("heads-csv-columns")
def heads_csv_columns(root: Path, up: str) -> str:
    """The columns of heads.csv for a scan with the monitor's detectors, as ScanResult writes them (a one-head
    result written to a temporary folder: the writer's own order)."""
    import tempfile

    import numpy as np

    from headlab.census.result import ScanResult
    from headlab.monitor.settings import MONITOR_DETECTORS

    means = {d: np.zeros((1, 1, 9)) if d == "offset" else np.zeros((1, 1)) for d in MONITOR_DETECTORS}
    r = ScanResult(model="m", n_layers=1, n_heads=1, n_samples=1, n_samples_with_target=1, n_tokens=1,
                   settings={"detectors": {d: {} for d in MONITOR_DETECTORS}}, means=means,
                   stds={d: np.zeros((1, 1)) for d in means}, token_frac_above=np.zeros((1, 1)),
                   token_max_run=np.zeros((1, 1), dtype=int), sdh=np.zeros((1, 1), dtype=bool))
    with tempfile.TemporaryDirectory() as tmp:
        r.write_companions(Path(tmp))
        header = (Path(tmp) / "heads.csv").read_text().splitlines()[0]
    return ", ".join(f"`{c}`" for c in header.split(",")) + "\n"


@generator("rule-book")
def rule_book(root: Path, up: str) -> str:
    """Every rule of the rule book (headlab.rulebook.BOOK): the claim, statistic, test, threshold and its
    origin, null and minimum evidence, with its fingerprint."""
    from headlab.rulebook import BOOK, VERSION
    from headlab.rulebook.registration import declarations

    declared = declarations()
    lines = [f"Rule book version {VERSION}.", "",
             "| rule | claim (the document's words) | statistic | test | threshold | origin | null | "
             "least evidence | declared (data that existed then: exploratory) | fingerprint |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    order = ("slash", "monitor", "retrieval", "formation")
    for r in sorted(BOOK.values(), key=lambda r: order.index(r.id.split(".")[0])):
        cells = (r.claim, r.statistic, r.test, r.threshold, r.origin, r.null, r.minimum)
        d = declared.get(r.id)
        when = (f"version {d.version}: {len(d.files)} files, {len(d.stats)} verdicts' statistics" if d
                else "never: exploratory on any data")
        lines.append(f"| `{r.id}` | " + " | ".join(c.replace("|", "\\|") for c in cells)
                     + f" | {when} | `{r.fingerprint()}` |")
    return "\n".join(lines) + "\n"


#: what the few parameters with no command-line option are (every other meaning is the option's --help)
PYTHON_ONLY = {
    "progress": "show progress bars (the command line's `--no-progress` turns them off)",
    "texts": "texts to scan instead of a corpus (each is a document)",
    "max_length": "window length in tokens",
    "model": "the model the profile was fitted on, already loaded or by name; None loads the profile's own",
    "settings": "the settings above as one object (`headlab.settings`); a keyword given beside it replaces its "
                "value",
    "rows": "return one row per document (they grow with the records; False returns none, monitor.jsonl in out "
            "has them)",
}


@generator("parameters")
def parameters(root: Path, up: str, twin: str) -> str:
    """The parameter table of a command's Python twin (``headlab.monitor.fit``): each keyword, its default, the
    command-line option it answers to, and what it is, in the words of that option's help."""
    import importlib
    import inspect

    from headlab.cli import build_parser

    module, _, attr = twin.rpartition(".")
    fn = getattr(importlib.import_module(module), attr)
    leaf = next((p for p in _leaves(build_parser()) if p.get_default("api") is fn), None)
    if leaf is None:
        raise ValueError(f"{twin} is the twin of no command")
    actions = {a.dest: a for a in leaf._actions}
    lines = ["| parameter | default | command line | what it is |", "|---|---|---|---|"]
    family = getattr(fn, "settings_type", None)  # a twin made by headlab.settings.takes: its fields' own words
    declared = {f.name: f.metadata["help"] for f in family.fields()} if family is not None else {}
    for name, prm in inspect.signature(fn).parameters.items():
        action = actions.get("no_progress" if name == "progress" else name)
        own = PYTHON_ONLY.get(name) or declared.get(name)
        help_ = own if action is None or name == "progress" else action.help
        if not help_:
            raise ValueError(f"{twin}: parameter {name!r} has no option help and no PYTHON_ONLY entry")
        shown = " ".join(map(str, prm.default)) if isinstance(prm.default, (list, tuple)) else prm.default
        help_ = help_.removesuffix(f" (default: {shown})").replace("%%", "%")  # the default has its column
        flag = "-" if action is None else (action.option_strings[-1] if action.option_strings else name.upper())
        default = "required" if prm.default is prm.empty else f"`{prm.default!r}`"
        lines.append(f"| `{name}` | {default} | `{flag}` | {help_.replace('|', '/')} |")
    return "\n".join(lines) + "\n"


def _leaves(p: Any) -> list[Any]:
    """Every command's own parser under ``p`` (``monitor fit``, not ``monitor``)."""
    import argparse

    subs = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
    return [leaf for a in subs for sub in a.choices.values() for leaf in _leaves(sub)] if subs else [p]


def render(text: str, up: str, root: Path = ROOT) -> str:
    """``text`` (a document ``up`` below the root) with every generated block rendered again from its source."""
    def fill(m: re.Match) -> str:
        name, args = m.group(2), m.group(3).split()
        if name not in GENERATORS:
            raise KeyError(f"unknown generated block {name!r}; known: {', '.join(GENERATORS)}")
        return m.group(1) + GENERATORS[name](root, up, *args) + m.group(5)
    return BLOCK.sub(fill, text)


def documents(root: Path = ROOT) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").rglob("*.md"))]


def up_of(path: Path, root: Path = ROOT) -> str:
    """The way up from a document to the repository root ("" for README.md, "../" for docs/X.md)."""
    return "../" * (len(path.relative_to(root).parts) - 1)


def main() -> int:
    for path in documents():
        text = path.read_text(encoding="utf-8")
        new = render(text, up_of(path))
        if new != text:
            path.write_text(new, encoding="utf-8")
            print(f"rendered {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
