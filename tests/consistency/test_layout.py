"""The package layout: every module is reachable under its own name (no function of a package shadows one of
its submodules), and the import layers of pyproject.toml hold (lint-imports runs them in make test too)."""

from __future__ import annotations

import importlib
import pkgutil
import re
import types
from pathlib import Path

import pytest

import headlab

ROOT = Path(__file__).resolve().parents[2]


def _modules() -> list[str]:
    found = pkgutil.walk_packages(headlab.__path__, "headlab.")
    return sorted(m.name for m in found if not m.name.endswith("__main__"))  # importing it runs the CLI


def test_no_function_shadows_a_module() -> None:
    shadowed = []
    for name in _modules():
        module = importlib.import_module(name)
        parent, _, child = name.rpartition(".")
        seen = getattr(importlib.import_module(parent), child)
        if seen is not module:
            shadowed.append(f"{parent}.{child} is {type(seen).__name__}, not the module")
    assert not shadowed, shadowed


def test_a_submodule_path_works_as_an_attribute_path() -> None:
    import headlab.training.config

    assert isinstance(headlab.training.config, types.ModuleType)
    assert callable(headlab.train) and callable(headlab.track) and callable(headlab.scan)
    assert callable(headlab.models.check) and callable(headlab.monitor.check) and callable(headlab.monitor.evaluate)


def test_top_level_holds_only_the_foundations() -> None:
    loose = {m.name for m in pkgutil.iter_modules(headlab.__path__) if not m.ispkg}
    assert loose <= {"__main__", "catalog", "display", "distributed", "errors", "head", "integrity", "interrupts", "io",
                     "plotting", "progress", "result", "settings", "values", "notices"}, loose


def test_modules_and_functions_stay_small() -> None:
    """Files under ~400 lines, functions that fit on a screen (~80 lines)."""
    import ast
    from pathlib import Path

    big, long = [], []
    for f in sorted(Path(headlab.__file__).parent.rglob("*.py")):
        text = f.read_text(encoding="utf-8")
        if text.count("\n") > 420:
            big.append(f.name)
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno >= 80:
                long.append(f"{f.name}:{node.name}")
    assert not big and not long, (big, long)


def test_results_hold_data_commands_and_tables_not_code() -> None:
    """Table and verdict code lives in the package or bench/studies (linted, typed, tested); results/ keeps the
    data, the run.sh that made it, and the tables those scripts render."""
    results = ROOT / "results"
    code = sorted(str(p.relative_to(ROOT)) for p in results.rglob("*.py"))
    inline = sorted(str(p.relative_to(ROOT)) for p in results.rglob("*.sh")
                    if re.search(r"python3? (-c|- )", p.read_text(encoding="utf-8")))
    # reading JSON (a run's log, a row) is Python's job in bench/studies, not sed's or awk's in a results script
    parsing = sorted(f"{p.relative_to(ROOT)}:{n}" for p in results.rglob("*.sh")
                     for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
                     if not line.lstrip().startswith("#") and re.search(r"\b(awk|jq|sed)\b", line))
    assert not code and not inline and not parsing, (code, inline, parsing)


def test_the_results_index_names_every_folder_and_file_at_its_top() -> None:
    index = (ROOT / "results" / "README.md").read_text(encoding="utf-8")
    rows = set(re.findall(r"^\| `([^`]+?)/?` \|", index, flags=re.M))
    top = {p.name for p in (ROOT / "results").iterdir() if p.name != "README.md"}
    assert rows == top, (sorted(top - rows), sorted(rows - top))


#: bench/studies script -> the committed table it renders, byte for byte
TABLES = {
    "d1_table.py": "results/retrieval/d1/d1.md",
    "dense_pilot_hops.py": "results/retrieval/dense_pilot/hops.md",
    "dense_pilot_batches.py": "results/retrieval/dense_pilot/batches.md",
    "eval_llm_table.py": "results/retrieval/eval_llm.md",
    "init_table.py": "results/retrieval/init/init.md",
    "khop_table.py": "results/retrieval/khop/khop.md",
}


@pytest.mark.parametrize("script", sorted(TABLES))
def test_a_committed_table_is_what_its_script_renders(script: str) -> None:
    import subprocess
    import sys

    got = subprocess.run([sys.executable, str(ROOT / "bench" / "studies" / script)], capture_output=True, text=True,
                         cwd=ROOT / "results", check=True).stdout  # not the root: no table reads the working folder
    assert got == (ROOT / TABLES[script]).read_text(encoding="utf-8"), script


def test_the_long_studys_arms_table_is_what_its_script_renders() -> None:
    """results/formation/long/arms.md from the arms run.sh gives it: the default arm's tracked seeds, then the
    small-qk arm's and the encoder arm's finished ones."""
    import subprocess
    import sys

    long = ROOT / "results" / "formation" / "long"
    arms = {"default": sorted(long.glob("s[0-9]*/track")), "small-qk": sorted(long.glob("small-qk/s[0-9]*/track")),
            "encoder": sorted(long.glob("encoder/s[0-9]*/track"))}
    args = [f"{name}={','.join(str(t.parent) for t in runs)}" for name, runs in arms.items() if runs]
    got = subprocess.run([sys.executable, str(ROOT / "bench" / "studies" / "formation_inits_table.py"), *args],
                         capture_output=True, text=True, cwd=ROOT / "results", check=True).stdout
    assert got == (long / "arms.md").read_text(encoding="utf-8")


def test_imports_sit_at_the_top_unless_a_comment_says_why() -> None:
    """An import inside a function hides a dependency; it stays there only with a comment saying why (an
    optional dependency, a measured start-up cost), on its line or above the group of imports it opens.
    headlab's own modules, the standard library, torch and numpy are loaded by ``import headlab`` anyway."""
    import ast

    hidden = []
    for path in sorted((ROOT / "src" / "headlab").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        for fn in ast.walk(ast.parse(text)):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                for body in (getattr(node, f, None) for f in ("body", "orelse", "finalbody")):
                    said = False  # the comment above a group of consecutive imports covers the group
                    for st in body if isinstance(body, list) else []:
                        if not isinstance(st, (ast.Import, ast.ImportFrom)):
                            said = False
                            continue
                        said = said or "#" in lines[st.lineno - 1] or lines[st.lineno - 2].strip().startswith("#")
                        if not said:
                            hidden.append(f"{path.relative_to(ROOT)}:{st.lineno}")
    assert not hidden, hidden


@pytest.mark.parametrize("written", ["results/peers/peers.md", "results/peers/minilm-l6/peers.md"])
def test_the_peers_table_in_benchmarks_is_the_committed_one(written: str) -> None:
    """BENCHMARKS.md shows each peers benchmark's table as bench/peers.py wrote it (the decoder's, the encoder's)."""
    table = [x for x in (ROOT / written).read_text(encoding="utf-8").splitlines() if x.startswith("|")]
    assert len(table) > 2 and "\n".join(table) in (ROOT / "BENCHMARKS.md").read_text(encoding="utf-8")
