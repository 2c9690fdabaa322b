"""Report sections read from committed results: what they label, on the data they were written for."""

from pathlib import Path

from headlab.reporting.sections import characterize_section

ROOT = Path(__file__).resolve().parents[2]


def test_a_top_slash_head_with_no_preference_for_slash_is_labelled_so(tmp_path):
    """minilm-l6's top head by '/' mass gives every control symbol the same mass (pooled specificity 0.9999,
    position CV 0.0005): the report says it is not a '/' head instead of listing it as one."""
    md = characterize_section(ROOT / "results/study/claims/minilm-l6", tmp_path, "t").markdown
    rows = [r for r in md.splitlines() if r.startswith("| 0.2")]
    assert rows and "no preference for '/'" in rows[0]
    assert any(r.startswith("| 4.9 |") for r in md.splitlines())  # a head that prefers '/' keeps its plain name
