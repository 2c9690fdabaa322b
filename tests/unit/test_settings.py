"""One settings object per command family: the scan's defaults are defined once (ScanSettings) and the Python
twin, the CLI and the recorded settings all read them; bad values are refused with one line before any work."""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import math
from pathlib import Path
from typing import Any

import pytest

import headlab
from headlab.census.settings import DEFAULTS, ScanSettings
from headlab.census.stats import SDH
from headlab.cli import build_parser
from headlab.cli.options import run_options
from headlab.errors import HeadlabError
from headlab.settings import RUN, RunOptions
from tests.support import leaves

ROOT = Path(__file__).resolve().parents[2]


def _parser(*path: str):
    p = build_parser()
    for name in path:
        p = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction)).choices[name]
    return p


def _scan_parser():
    return _parser("scan")


def _families():
    from headlab.ablation.experiment import AblateSettings
    from headlab.monitor.settings import MonitorSettings
    from headlab.study.characterize import CharacterizeSettings

    return [  # settings class, Python twin, CLI command, the arguments the command needs
        (ScanSettings, headlab.scan, ("scan",), ["minilm-l6"]),
        (CharacterizeSettings, headlab.characterize, ("characterize",), ["minilm-l6"]),
        (AblateSettings, headlab.ablate, ("ablate",), ["minilm-l6", "--heads", "0.1"]),
        (MonitorSettings, headlab.monitor.fit, ("monitor", "fit"), ["minilm-l6", "--out", "x"]),
    ]


#: every command whose twin is generated from a settings class: (command, its twin)
DECLARED = {cmd: p for cmd, p in leaves(build_parser()).items()
            if getattr(p.get_default("api"), "settings_type", None) is not None}
API_PAGES = "".join(p.read_text(encoding="utf-8") for p in (ROOT / "docs" / "api").glob("*.md"))


def _listed(value):
    return list(value) if isinstance(value, (list, tuple)) else value


#: commands without a settings class, and why: their options are inputs or run options only
WITHOUT_SETTINGS = {
    **dict.fromkeys(("models check", "models families", "models install", "models list", "models verify"),
                    "a model name (and --force) is all they take"),
    "report": "a run folder, the output and its title",
    "pattern": "a model, a text and a head in, a PNG out (the device and dtype as every loader)",
    "retrieval depth-law": "sweep folders in, a table out",
    "retrieval emergence": "run folders in, a table out",
    "scale": "scan folders in, a table out",
    "train": "its settings are the TOML config (TrainConfig); --seed replaces the config's seed",
    "verdicts": "the results folder and the reason a new rule book is recorded",
}


def test_the_families_that_declare_their_settings() -> None:
    assert {"scan", "characterize", "ablate", "importance", "prune", "claims", "monitor fit", "top", "stimuli",
            "view", "compare"} <= set(DECLARED)
    assert set(leaves(build_parser())) - set(DECLARED) == set(WITHOUT_SETTINGS)


@pytest.mark.parametrize("cmd", sorted(DECLARED))
def test_twin_cli_settings_and_docs_share_every_name_and_default(cmd: str) -> None:
    """One declaration: each field is the twin's keyword with the field's default, the command's option (its
    declared flag, the same default) unless it is Python-only, and a row of the twin's parameter table."""
    p = DECLARED[cmd]
    twin = p.get_default("api")
    cls = twin.settings_type
    params = inspect.signature(twin).parameters
    actions = {a.dest: a for a in p._actions}
    dotted = "headlab." + cmd.replace(" ", ".").replace("-", "_")
    table = API_PAGES.split(f"<!-- generated: parameters {dotted} -->", 1)[1].split("<!-- end", 1)[0]
    for f in cls.fields():
        assert params[f.name].kind is inspect.Parameter.KEYWORD_ONLY, (cmd, f.name)
        assert params[f.name].default == f.default, (cmd, f.name)
        assert f"| `{f.name}` | `{f.default!r}` |" in table, (cmd, f.name)
        if not f.metadata["cli"]:
            assert f.name not in actions, (cmd, f.name)
            continue
        assert actions[f.name].option_strings == [f"--{cls.flag(f.name)}"], (cmd, f.name)
        assert _listed(p.get_default(f.name)) == _listed(f.default), (cmd, f.name)
    assert params["settings"].default is None


@pytest.mark.parametrize("cmd", sorted(DECLARED))
def test_a_keyword_beside_settings_replaces_only_its_value(cmd: str) -> None:
    from headlab.settings import takes

    cls = DECLARED[cmd].get_default("api").settings_type
    got = {}

    def capture(settings):
        got["settings"] = settings
        return settings
    wrapped = takes(cls)(capture)
    assert wrapped() == cls()
    with pytest.raises(HeadlabError, match=f"give a {cls.__name__}"):
        wrapped(settings={"seed": 1})
    if not {"seed", "batch_size"} <= {f.name for f in cls.fields()}:
        return
    base = cls().replace(seed=7)
    assert wrapped(settings=base, batch_size=3) == base.replace(batch_size=3)
    assert got["settings"].seed == 7
    with pytest.raises(HeadlabError, match="--batch-size 0"):
        wrapped(settings=base, batch_size=0)


def test_no_twin_calls_an_inner_function_renamed_run() -> None:
    import re

    found = [f"{p.name}: {m}" for p in (ROOT / "src" / "headlab" / "api").glob("*.py")
             for m in re.findall(r"import .* as run\w*", p.read_text(encoding="utf-8"))]
    assert not found, found


@pytest.mark.parametrize("cls_index, change, phrase", [
    (1, {"n": 1}, "--n"), (1, {"kappa": 2.0}, "--kappa"), (1, {"words": 1}, "--words"),
    (2, {"mode": "half"}, "--mode"), (2, {"draws": 0}, "--draws"), (2, {"suite_n": 0}, "--suite-n"),
    (3, {"fpr": 0.0}, "--fpr"), (3, {"max_samples": 5}, "--max-samples"), (3, {"corpus": ()}, "--corpus"),
])
def test_every_family_refuses_a_bad_value_in_one_line(cls_index: int, change: dict, phrase: str) -> None:
    cls = _families()[cls_index][0]
    with pytest.raises(HeadlabError) as info:
        cls(**change)
    assert phrase in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(HeadlabError, match=f"unknown {cls.FAMILY} setting"):
        cls().replace(nope=1)


def test_a_result_records_its_settings() -> None:
    from headlab.ablation.experiment import AblateSettings
    from headlab.study.characterize import CharacterizeSettings

    s = CharacterizeSettings(symbols="-")  # one string is one symbol
    assert s.symbols == ("-",) and s.record()["symbols"] == ["-"]
    assert AblateSettings(corpus="wiki").corpus == ("wiki",)


def test_the_twin_and_the_cli_take_every_scan_default_from_the_settings() -> None:
    params = inspect.signature(headlab.scan).parameters
    cli = _scan_parser().parse_args(["minilm-l6"])
    for f in dataclasses.fields(ScanSettings):
        assert params[f.name].default == getattr(DEFAULTS, f.name), f.name
        if hasattr(cli, f.name) and f.name != "detectors":
            assert getattr(cli, f.name) == getattr(DEFAULTS, f.name), f.name
    assert list(cli.detectors) == list(DEFAULTS.detectors)
    assert (DEFAULTS.threshold, DEFAULTS.consecutive) == (SDH.threshold, SDH.consecutive) == (0.5, 3)


@pytest.mark.parametrize("change, phrase", [
    ({"threshold": -1}, "--threshold"), ({"threshold": math.nan}, "--threshold"), ({"batch_size": 0}, "--batch-size"),
    ({"consecutive": 0}, "--consecutive"), ({"max_samples": "8"}, "--max-samples"),
    ({"max_length": None}, "--max-length"),
    ({"chunk_mb": 0}, "--chunk-mb"), ({"route": "warp"}, "--route"), ({"target_filter": "some"}, "--filter"),
    ({"detectors": ()}, "no detector"), ({"checkpoint_every": -2}, "--checkpoint-every"),
])
def test_bad_values_are_one_line_naming_the_option(change: dict, phrase: str) -> None:
    with pytest.raises(HeadlabError) as info:
        ScanSettings(**change)
    assert phrase in str(info.value) and "\n" not in str(info.value)


def test_one_name_is_one_detector_and_zero_samples_means_all() -> None:
    s = ScanSettings(detectors="token", max_samples=0)
    assert s.detectors == ("token",) and s.max_samples is None
    assert s.replace(seed=3).seed == 3
    with pytest.raises(HeadlabError, match="unknown scan setting"):
        s.replace(sead=3)


def test_one_string_where_a_list_is_expected_is_one_item(tmp_path) -> None:
    from pathlib import Path

    from headlab.values import items

    assert items("wiki") == ["wiki"] and items(("a", "b")) == ["a", "b"] and items(None) is None
    assert items(Path("x")) == [Path("x")] and items(3) == [3]
    root = Path(__file__).parents[2]
    w = headlab.scale(str(root / "results/study/claims"), out=tmp_path / "scale")  # one folder, not its letters
    assert len(w.points) == 4
    assert inspect.signature(headlab.scale).parameters["runs"].annotation  # the twin keeps its signature


def test_every_command_describes_itself() -> None:
    for cmd, p in leaves(build_parser()).items():
        assert p.description and len(p.description) > 20, cmd


def test_every_command_prints_its_help() -> None:
    """argparse formats help strings with %: a default shown in the help holding a '%' (characterize's placebos)
    broke ``characterize --help`` until the settings' options escaped it."""
    import argparse

    from headlab.cli.entry import build_parser

    def walk(p: argparse.ArgumentParser) -> int:
        p.format_help()
        subs = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
        return 1 + sum(walk(c) for s in subs for c in s.choices.values())

    assert walk(build_parser()) > 30


@pytest.mark.parametrize("cmd", sorted(leaves(build_parser())))
def test_every_run_option_is_its_one_declaration(cmd: str) -> None:
    """A command's --device, --dtype, --overwrite, --no-progress and --out are made from RunOptions, and its twin's
    keyword of that name takes the declared default (``out``: required, or a folder of the command's own)."""
    p = leaves(build_parser())[cmd]
    params = inspect.signature(p.get_default("api")).parameters
    for f in dataclasses.fields(RunOptions):
        action = next((a for a in p._actions if a.dest == f.name.replace("progress", "no_progress")), None)
        if action is None:
            continue
        flag = "--" + (f.metadata["flag"] or f.name)
        assert action.option_strings == [flag], (cmd, flag)
        if f.name not in ("out", "overwrite"):  # what --out holds, and so what --overwrite replaces, is the command's
            assert action.help.startswith(f.metadata["help"]), (cmd, flag)
        if f.name != "out":
            assert params[f.name].default == getattr(RUN, f.name), (cmd, f.name)


def test_a_run_option_without_a_default_takes_the_declared_one() -> None:
    from headlab.settings import takes_run

    @takes_run(required=("out",))
    def fn(x: int, *, device: str, progress: bool, out: str, overwrite: bool = True) -> tuple[Any, ...]:
        return x, device, progress, out, overwrite

    sig = inspect.signature(fn).parameters
    assert (sig["device"].default, sig["progress"].default) == (RUN.device, RUN.progress)
    assert sig["out"].default is inspect.Parameter.empty and sig["overwrite"].default is True  # its own, kept
    assert fn(1, out="o") == (1, "cpu", True, "o", True)
    assert fn(1, out="o", device="cuda", progress=False) == (1, "cuda", False, "o", True)
    with pytest.raises(TypeError, match="out"):
        fn(1)
    with pytest.raises(ValueError, match="not run options"):
        run_options(argparse.ArgumentParser(), "devices")


def test_a_detectors_options_are_its_settings_fragment_and_the_scan_gives_them() -> None:
    """The scan's detector fields are the detectors' own declarations (default, help, choices), and a scan builds
    each detector with the values of its fragment's fields."""
    from headlab.detectors.base import DETECTORS, make, options_for

    fragments = {name: cls.options for name, cls in DETECTORS.items() if cls.options is not None}
    assert {"token", "offset", "marked"} <= set(fragments)
    declared = {f.name: f for f in ScanSettings.fields()}
    for name, frag in fragments.items():
        for f in frag.fields():
            assert declared[f.name].default == f.default and declared[f.name].metadata == f.metadata, (name, f.name)
    s = DEFAULTS.replace(target=":", bare=True, queries="all", max_offset=3)
    token, offset = make("token", **options_for("token", s)), make("offset", **options_for("offset", s))
    assert (token.target, token.bare, token.queries, offset.max_offset) == (":", True, "all", 3)
    with pytest.raises(HeadlabError, match="--queries 'some': choose can-see, all"):
        fragments["token"](queries="some")
