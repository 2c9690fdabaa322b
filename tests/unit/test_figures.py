"""The report's heatmaps keep shares on one 0-1 scale, so a faint panel looks faint."""

import numpy as np

from headlab.plotting import color_limits
from headlab.presenting.figures import head_heatmaps


def test_a_share_is_drawn_on_a_fixed_scale_and_other_scores_on_their_range(tmp_path) -> None:
    faint = np.full((2, 3), 0.004)
    faint[1, 2] = 0.012  # an induction panel of a smoke run: it must not look vivid
    assert color_limits(faint) == {"vmin": 0.0, "vmax": 1.0}
    entropy = np.array([[0.5, 2.0], [np.nan, 3.5]])
    assert color_limits(entropy) == {"vmin": 0.5, "vmax": 3.5}
    assert color_limits(np.full((2, 2), np.nan)) == {"vmin": 0.0, "vmax": 1.0}
    out = head_heatmaps({"induction": faint, "entropy": np.ones((2, 3)) * 2}, None, "t", tmp_path / "h.png")
    assert out.stat().st_size > 1000


def test_a_tracked_share_is_drawn_on_a_fixed_scale_that_the_colour_bar_names() -> None:
    """Scores between 0.073 and 0.087 (noise) must not fill the colour range as a head near 1 would."""
    from headlab.formation.tracking import TrackResult

    rng = np.random.default_rng(0)
    t = TrackResult("r", [1, 10, 100], 2, 2, {"previous-token": 0.073 + 0.014 * rng.random((3, 2, 2))})
    fig = t.figure("previous-token")
    image = fig.axes[0].images[0]
    assert image.get_clim() == (0.0, 1.0)
    assert "fixed 0-1 scale" in fig.axes[1].get_ylabel()
