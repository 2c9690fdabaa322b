"""The Python API is the CLI's other face: every command has a public twin, the CLI calls it, their option
names and defaults are the same; results render in a notebook and give data frames."""

from __future__ import annotations

import argparse
import inspect
import json
import re
from pathlib import Path
from typing import Any, Sequence

import pytest

import headlab
from headlab.cli import build_parser
from headlab.errors import HeadlabError
from headlab.models import LoadedModel
from tests.support import leaves

ROOT = Path(__file__).resolve().parents[2]

#: command path -> its public Python twin
TWINS = {
    "models list": headlab.models.list, "models install": headlab.models.install,
    "models check": headlab.models.check, "models families": headlab.models.families,
    "models verify": headlab.models.verify, "stimuli": headlab.stimuli, "characterize": headlab.characterize,
    "ablate": headlab.ablate, "importance": headlab.importance, "prune": headlab.prune, "claims": headlab.claims,
    "compare": headlab.compare, "scale": headlab.scale, "languages": headlab.languages, "scan": headlab.scan,
    "top": headlab.top, "monitor fit": headlab.monitor.fit, "monitor check": headlab.monitor.check,
    "monitor evaluate": headlab.monitor.evaluate, "train": headlab.train, "track": headlab.track,
    "predict": headlab.predict, "induce": headlab.induce, "retrieval generate": headlab.retrieval.generate,
    "retrieval train": headlab.retrieval.train, "retrieval sweep": headlab.retrieval.sweep,
    "retrieval depth-law": headlab.retrieval.depth_law,
    "retrieval analyze": headlab.retrieval.analyze, "retrieval emergence": headlab.retrieval.emergence,
    "retrieval eval-llm": headlab.retrieval.eval_llm, "view": headlab.view, "report": headlab.report,
    "verdicts": headlab.verdicts, "pattern": headlab.pattern,
}
#: options that only shape what the command prints or checks after the work (no Python counterpart)
PRINT_ONLY = {"scan": {"top"}, "view": {"check"}, "pattern": {"rows"}}
#: options the entry point applies as process settings, not twin parameters (--threads, --tokenizer,
#: --force-tokenizer, --device-map, --max-memory)
PARSER_KEYS = {"debug", "cmd", "func", "api", "no_progress", "models_cmd", "monitor_cmd", "retrieval_cmd", "threads",
               "tokenizer_source", "force_tokenizer", "device_map", "max_memory"}


LEAVES = leaves(build_parser())


def test_every_command_has_a_public_python_twin_that_the_cli_calls() -> None:
    assert set(LEAVES) == set(TWINS)
    for cmd, p in LEAVES.items():
        assert p.get_default("api") is TWINS[cmd], cmd


@pytest.mark.parametrize("cmd", sorted(TWINS))
def test_option_names_and_defaults_are_the_twins(cmd: str) -> None:
    params = inspect.signature(TWINS[cmd]).parameters
    dests = {a.dest for a in LEAVES[cmd]._actions} - PARSER_KEYS - {"help"} - PRINT_ONLY.get(cmd, set())
    assert dests <= set(params), f"{cmd}: options without a Python parameter: {sorted(dests - set(params))}"
    for name in dests - {"out"}:
        default = params[name].default
        if default is not inspect.Parameter.empty:
            assert LEAVES[cmd].get_default(name) == default, f"{cmd} --{name}"
    if "no_progress" in {a.dest for a in LEAVES[cmd]._actions}:
        assert params["progress"].default is True


#: commands that load a model on a --device but take no --dtype, and why
OWN_DTYPE = {"train": "builds and trains its own model in float32",
             "monitor check": "loads the model in the dtype its profile was fitted in"}


def test_every_command_that_loads_a_model_takes_its_dtype() -> None:
    from headlab.models import DTYPES

    for cmd, p in LEAVES.items():
        actions = {a.dest: a for a in p._actions}
        if "device" in actions and cmd not in OWN_DTYPE:
            assert "dtype" in actions, f"{cmd}: --device but no --dtype"
            assert tuple(actions["dtype"].choices) == DTYPES and p.get_default("dtype") == "float32", cmd
    assert "dtype" in inspect.signature(headlab.pattern).parameters


def _the_environment_threads_are_taken_unless_given(monkeypatch, cores: int) -> None:
    """OMP_NUM_THREADS (torchrun sets 1 for each of several workers) is the default where it is set, however busy
    or idle the machine; --threads still chooses; a value that is no number of threads is said and left."""
    import torch

    from headlab import distributed

    monkeypatch.setattr(distributed, "busy_cores", lambda: 0.0)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert distributed.use_threads(None) == (1, None) and torch.get_num_threads() == 1
    assert distributed.use_threads(cores) == (cores, None)
    for bad in ("many", "0", str(cores + 1)):
        monkeypatch.setenv("OMP_NUM_THREADS", bad)
        n, said = distributed.use_threads(None)
        assert n == cores and f"OMP_NUM_THREADS={bad} is not a number of threads" in said
    monkeypatch.delenv("OMP_NUM_THREADS")


def test_every_command_that_computes_on_a_device_takes_its_threads(monkeypatch, capsys) -> None:
    """--threads beside every --device (train's threads are its config's); the default takes the cores the
    machine can give and says so when that is fewer than its cores."""
    import torch

    from headlab import distributed
    from headlab.cli import main

    for cmd, p in LEAVES.items():
        dests = {a.dest for a in p._actions}
        if "device" in dests and cmd != "train":
            assert "threads" in dests and p.get_default("threads") is None, cmd
    before = torch.get_num_threads()
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    try:
        monkeypatch.setattr(distributed, "busy_cores", lambda: 99.0)
        assert distributed.use_threads(None)[0] == 1 and "--threads N" in distributed.use_threads(None)[1]
        monkeypatch.setattr(distributed, "busy_cores", lambda: None)  # no /proc/stat: the load average decides
        monkeypatch.setattr(distributed.os, "getloadavg", lambda: (99.0, 0.0, 0.0))
        assert distributed.use_threads(None)[0] == 1
        cores = distributed.spare_cores()[0]
        assert distributed.use_threads(cores) == (cores, None) and torch.get_num_threads() == cores
        with pytest.raises(HeadlabError, match=f"--threads {cores + 1}: this process may use {cores} core"):
            distributed.use_threads(cores + 1)  # torch sized its pool by it: 4096 crashed the process
        _the_environment_threads_are_taken_unless_given(monkeypatch, cores)
        main(["top", "nowhere.parquet", "--head", "0.1"])  # top takes no --threads: nothing said
        assert "cores" not in capsys.readouterr().err
        assert main(["scan", "minilm-l6", "--threads", "0"]) == 2  # refused before the model is asked for
        assert "--threads: 0 is below the minimum 1" in capsys.readouterr().err
    finally:
        torch.set_num_threads(before)


def test_every_twin_has_its_parameter_table_on_the_api_pages() -> None:
    """Rendered from the signature and the command's --help (docsite/blocks.py; kept current by
    tests/consistency/test_docs_generated.py), under the name users import."""
    pages = "".join(p.read_text(encoding="utf-8") for p in (ROOT / "docs" / "api").glob("*.md"))
    for cmd in TWINS:
        dotted = "headlab." + cmd.replace(" ", ".").replace("-", "_")
        assert f"<!-- generated: parameters {dotted} -->" in pages and f"::: {dotted}\n" in pages, cmd


def test_the_cli_runs_the_twin(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from headlab.cli import main

    out = tmp_path / "ex.jsonl"
    assert main(["retrieval", "generate", "--form", "assign", "--depth", "2", "--n", "5", "--out", str(out)]) == 0
    rows = headlab.retrieval.generate(form="assign", depth=2, n=5)
    assert [json.loads(line) for line in out.read_text().splitlines()] == rows
    assert "wrote 5 assign examples" in capsys.readouterr().out


def test_sweep_result_renders_and_tabulates() -> None:
    from headlab.retrieval.grid import SweepResult

    r = SweepResult.read(ROOT / "results/retrieval/map/sweep.json")
    html = r._repr_html_()
    assert "<table>" in html and "bound log₃(2D)" in html and "chain" in html
    df = r.to_pandas()
    assert len(df) == len(r.cells) and {"cell", "seeds", "successes"} <= set(df.columns)
    fig = r.figure()
    from matplotlib.figure import Figure

    assert isinstance(fig, Figure) and len(fig.axes) >= len(r.grid["curricula"])


def test_eval_llm_result_renders_intervals() -> None:
    from headlab.retrieval.llm_eval import EvalLLMResult

    r = EvalLLMResult.read(ROOT / "results/retrieval/eval-llm/smollm2-135m-0shot/eval_llm.json")
    df = r.to_pandas()
    assert len(df) == len(r.cells) and (df["lower"] <= df["accuracy"]).all() and (df["accuracy"] <= df["upper"]).all()
    c = r.cells[0]
    assert f"{c['accuracy']:.3f} [{c['interval'][0]:.3f}, {c['interval'][1]:.3f}]" in r._repr_html_()


def test_a_result_without_a_table_says_so() -> None:
    from headlab.formation.emergence import EmergenceResult

    e = EmergenceResult(runs=[], most_common_order=[], same_order=0, n_runs=0, pairwise=[])
    assert "in 0 of 0 runs" in e.markdown()
    with pytest.raises(HeadlabError, match="no natural table"):
        e.to_pandas()


def test_figures_for_files_do_not_switch_a_notebook_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    import matplotlib

    from headlab.plotting import pyplot

    before = matplotlib.get_backend()
    monkeypatch.setitem(sys.modules, "ipykernel", sys)  # as inside a Jupyter kernel
    matplotlib.use("svg")
    try:
        pyplot()
        assert matplotlib.get_backend() == "svg"
    finally:
        matplotlib.use(before)


def test_defaults_written_in_the_help_are_the_real_ones() -> None:
    import re

    checked = 0
    for cmd, p in LEAVES.items():
        for a in p._actions:
            m = re.search(r"\(default:? ([-0-9. ]+)\)", a.help or "")
            if not m:
                continue
            shown = [float(x) for x in m.group(1).split()]
            d = p.get_default(a.dest)
            assert shown == [float(x) for x in (d if isinstance(d, (list, tuple)) else [d])], f"{cmd} --{a.dest}"
            checked += 1
    assert checked >= 20


def test_a_retrieval_analysis_renders_its_circuit() -> None:
    from matplotlib.figure import Figure

    from headlab.retrieval.analysis import AnalyzeResult

    folder = ROOT / "results/retrieval/map/L2-D2-chain-s0/analyze"
    r = AnalyzeResult.read(folder / "analyze.json")
    assert r.markdown() == (folder / "analyze.md").read_text()  # the notebook shows what the run wrote
    shown = r._repr_html_()
    assert "Retrieval circuit" in shown and shown.count("<tr>") == len(r.labels) + 1 + len(
        [k for k, v in r.emergence["emerged_at"].items() if v is not None]) + 1
    assert f"{r.ablation['accuracy_base']:.3f}" in shown
    fig = r.figure()
    assert isinstance(fig, Figure) and len(fig.axes[0].patches) == len(r.labels) * len(r.labels[0])


def test_every_option_says_what_it_is_and_its_default() -> None:
    missing, silent = [], []
    for cmd, p in LEAVES.items():
        for a in p._actions:
            if a.dest in ("help", "version"):
                continue
            if not a.help:
                missing.append(f"{cmd} {a.dest}")
            d = p.get_default(a.dest)
            if a.option_strings and d is not None and d is not False and d != argparse.SUPPRESS \
                    and "default" not in a.help:
                silent.append(f"{cmd} --{a.dest}")
    assert not missing and not silent, (missing, silent)


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    import headlab
    from headlab.cli import main

    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"headlab {headlab.__version__}"
    assert main(["--debug", "--version"]) == 0  # the parser's own --version, beside other arguments, says the same
    assert capsys.readouterr().out.strip() == f"headlab {headlab.__version__}"


def test_version_answers_without_importing_torch() -> None:
    import subprocess
    import sys

    code = "import sys; from headlab.cli import main; main(['--version']); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60).stdout.split()
    assert out[-1] == "False"


def test_the_type_door_takes_paths_where_names_or_paths_are_asked_and_refuses_the_rest():
    """in_callers_words checks a Python call's arguments against the twin's own annotations: a Path is as good
    as its string, a headlab class is checked by isinstance, an alias or Any is not checked."""
    from pathlib import Path as P

    from headlab.errors import in_callers_words

    @in_callers_words
    def twin(model: str | LoadedModel, corpus: Sequence[str] | None = None, *, out: str | Path | None = None,
             anything: Any = None) -> str:
        return "ran"

    assert twin(P("/m"), [P("a.jsonl"), "wiki"], out=P("o"), anything=object()) == "ran"
    assert twin("m", "wiki") == "ran"  # one string where a sequence is asked is one item
    for call, said in ((lambda: twin(None), "model=None"), (lambda: twin("m", [None]), "corpus[0] is NoneType"),
                       (lambda: twin("m", out=5), "out=5"), (lambda: twin(3.5), "model=3.5")):
        with pytest.raises(HeadlabError, match=re.escape(said)):
            call()


def test_a_result_without_fields_has_a_repr_that_says_what_it_is():
    from headlab.api.seeing import ViewerPage

    class Data:
        title = "minilm-l6: 3 texts"

    got = repr(ViewerPage(Data(), "<html></html>"))  # type: ignore[arg-type]
    assert got == "<ViewerPage: attention viewer: minilm-l6: 3 texts (0.00 MB page)>" and " at 0x" not in got


def test_a_pattern_prints_its_first_queries_or_all_of_them():
    import numpy as np

    from headlab.api.pattern import Pattern
    from headlab.head import Head

    p = Pattern("m", Head(0, 1), [f"t{i}" for i in range(30)], np.eye(30, dtype=np.float32))
    assert p.markdown().count("| t") == 0 and p.markdown().count("\n| ") == 25  # header + 24 queries
    assert "(6 more queries: markdown(rows=None)" in p.markdown()
    assert p.markdown(rows=None).count("\n| ") == 31 and "more queries" not in p.markdown(rows=None)


def test_small_numbers_keep_their_digits():
    from headlab.display import number

    assert [number(0.0), number(2.3e-6), number(0.01234), number(-3e-7, signed=True)] == [
        "0.0000", "2.30e-06", "0.0123", "-3.00e-07"]


def test_help_once_printed_is_printed_again_from_the_cache_until_the_code_changes(tmp_path, monkeypatch, capsys):
    import headlab
    from headlab.cli import helptext, main

    monkeypatch.setenv("HEADLAB_CACHE", str(tmp_path))
    assert [helptext.is_request(a) for a in (["--help"], ["scan", "-h"], ["scan", "x", "--help"], ["scan"], [])] == [
        True, True, True, False, False]
    assert main(["scan", "--help"]) == 0
    fresh = capsys.readouterr().out
    assert "usage: headlab scan" in fresh and helptext.cached(["scan", "--help"]) == fresh
    assert main(["scan", "--help"]) == 0 and capsys.readouterr().out == fresh  # from the cache
    monkeypatch.setattr(headlab, "__version__", "0.0.0-changed")  # any change of the key is a miss
    assert helptext.cached(["scan", "--help"]) is None


def test_the_busy_cores_are_measured_now_not_averaged_over_a_minute() -> None:
    """A process spinning on one core is counted while it runs (the load average would count it for a minute after)."""
    import subprocess
    import sys
    import time

    from headlab import distributed

    if distributed.busy_cores(0.01) is None:
        pytest.skip("no /proc/stat here")
    spin = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.3)
        assert distributed.busy_cores(0.3) >= 0.7
    finally:
        spin.kill()
        spin.wait()
