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


def test_forms_table_and_glue():
    from kvtier.report.pages.measured.validation import form_numbers, form_table, validation_numbers
    from kvtier.scenario import Scenario

    s = Scenario()
    table = form_table(s)
    assert list(table["key"])[:5] == [
        "regen.launch_floor_per_layer",
        "regen.knee_sharpness",
        "regen.mem_overhead_per_layer",
        "regen.attention",
        "fetch.host_cache",
    ]
    n = form_numbers(s)
    # the 256 MiB pageable copy with the copies beyond the cache left out: one share, -39.5 % (the referee's figure)
    assert n["form_cache_out_min_pct"] == pytest.approx(-39.49, abs=0.01)
    # the peers' form given kvtier's data: 17 of 29 within 10 %, kvtier 27
    assert (n["peer_eq_n"], n["peer_eq_peer_within"], n["peer_eq_kvtier_within"]) == (29, 17, 27)
    v = validation_numbers(s)
    # out of sample: the distinct points of every leave-one-out and held-out group, the pool's rows not counted
    # again (the same copies): 12 eager 70B + 6 attention calls + 10 8B + 6 interior + 8 transformers
    # + 7 + 7 pinned copies + 4 + 4 small pinned + 4 small and 7 larger pageable + 2 chunked blocks + 1 duplex = 78
    assert v["val_independent_points"] == 78
    assert (v["val_reps_min"], v["val_reps_max"]) == (3, 50)
    # through compare's pageable (the pool's DRAM share), the 256 KiB to 64 MiB copies: +27.8 to +69.7 %
    assert v["pool_warm_n"] == 6
    assert v["pool_warm_min_pct"] == pytest.approx(27.78, abs=0.01)
    assert v["pool_warm_max_pct"] == pytest.approx(69.71, abs=0.01)
    # the 8B 64-token pass, counted: -40.9 % of its 36.87 ms median, -19.2 % of its fastest 26.96 ms
    assert v["p8_64_error_pct"] == pytest.approx(-40.91, abs=0.01)
    assert v["p8_64_error_vs_fastest_pct"] == pytest.approx(-19.18, abs=0.01)
