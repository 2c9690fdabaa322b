"""Report sections read from committed results: what they label, on the data they were written for."""

from pathlib import Path

from headlab.study.section import characterize_section

ROOT = Path(__file__).resolve().parents[2]


def test_a_top_slash_head_with_no_preference_for_slash_is_labelled_so(tmp_path):
    """minilm-l6's top head by '/' mass gives every control symbol the same mass (pooled specificity 0.9999,
    position CV 0.0005): the report says it is not a '/' head instead of listing it as one."""
    md = characterize_section(ROOT / "results/study/claims/minilm-l6", tmp_path, "t").markdown
    rows = [r for r in md.splitlines() if r.startswith("| 0.2")]
    assert rows and "no preference for '/'" in rows[0]
    assert any(r.startswith("| 4.9 |") for r in md.splitlines())  # a head that prefers '/' keeps its plain name


def test_every_section_lives_beside_the_result_it_presents_and_reporting_holds_none() -> None:
    """A result kind's report section is registered in the package that writes the result (as its view is), in
    report order; the report (headlab.reporting) iterates the registry and imports no result kind."""
    import ast

    from headlab.presenting.sections import ordered
    from headlab.result import RESULTS

    found = ordered()  # every module imported: every result kind and its section registered
    by_kind = {cls.KIND: cls for cls in RESULTS.values()}
    assert [s.rank for s in found] == sorted(s.rank for s in found) and len(found) >= 13
    for s in found:
        cls = by_kind[s.marker.rsplit("/", 1)[-1]]
        assert s.build.__module__.split(".")[:2] == cls.__module__.split(".")[:2], (s.marker, s.build.__module__)
    for f in (ROOT / "src" / "headlab" / "reporting" / "__init__.py",):  # the report (verdicts.py re-judges)
        imported = {n.module for n in ast.walk(ast.parse(f.read_text())) if isinstance(n, ast.ImportFrom)}
        kinds = {m for m in imported if m and m.split(".")[1:2] and m.split(".")[1] in
                 ("census", "monitor", "retrieval", "study", "formation", "ablation")}
        assert not kinds, (f.name, kinds)
