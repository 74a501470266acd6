"""The measured page's validation: the held-out outlier shown with its own scatter."""

from __future__ import annotations

import pytest

from kvtier.report.pages import measured as page
from kvtier.scenario import Scenario


@pytest.fixture(scope="module")
def numbers() -> dict:
    return page.numbers(Scenario())


def test_the_held_out_outlier_is_shown_with_its_own_scatter(numbers):
    # probe2.json, 8B, 64 tokens: median 36.873 ms, fastest 26.956 ms of 10 -> 36.873 / 26.956 - 1 = 36.8 %;
    # the other sweep points within 15 %: the worst is 1 token, 22.722 / 21.428 - 1 = 6.04 %
    assert numbers["val_p8_outliers"] == "the 64 tokens, eager pass (-41 %)"
    assert numbers["val_p8_outlier_spread"] == (
        "over 10 repetitions its median, 36.9 ms, sits 37 % above its fastest, 27.0 ms"
    )
    assert numbers["val_p8_outlier_spread_pct"] == pytest.approx(36.79, abs=0.01)
    assert numbers["val_p8_rest_spread_pct"] == pytest.approx(6.04, abs=0.01)
