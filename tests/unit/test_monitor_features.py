"""A profile's features are checked against the model before its scan: a head the model does not have is refused
in one line, with what to do."""

from __future__ import annotations

import pytest

from headlab.errors import HeadlabError
from headlab.monitor.checking import features_fit


def test_a_feature_naming_a_head_the_model_lacks_is_refused_before_the_scan():
    features_fit(["sink/5.11", "token/0.0", "loss"], 6, 12, "minilm-l6")  # document-level features name no head
    with pytest.raises(HeadlabError, match=r"names head 9\.9, which minilm-l6 \(6 layers x 12 heads\) does not"):
        features_fit(["sink/5.11", "sink/9.9"], 6, 12, "minilm-l6")
    with pytest.raises(HeadlabError, match="names no head"):
        features_fit(["sink/nine"], 6, 12, "minilm-l6")
