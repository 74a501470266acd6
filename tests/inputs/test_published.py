"""The published gains the split page cites: read with their sources, bad entries refused in one line."""

from __future__ import annotations

import pytest

from kvtier.errors import KvtierError
from kvtier.inputs import published


def test_the_shipped_figures_are_cake_s_and_hcache_s_with_their_sources():
    p = published.published()
    assert p["cake_ttft"].value == 2.6 and "ICML 2025" in p["cake_ttft"].source
    assert p["hcache_ttft_vs_offload"].value == 1.93 and "2410.05004" in p["hcache_ttft_vs_offload"].source
    assert (p["hcache_storage_low"].value, p["hcache_storage_high"].value) == (1.92, 2.40)
    assert {g.provenance for g in p.values()} == {"measured"}


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({}, "needs a non-empty 'gains' mapping"),
        ({"gains": {"x": 3}}, "gains.x must be a mapping"),
        ({"gains": {"x": {"value": -1}}}, "gains.x.value must be a positive number"),
        ({"gains": {"x": {"value": True}}}, "gains.x.value must be a positive number"),
        ({"gains": {"x": {"value": 2, "provenance": "measured", "basis": "b"}}}, "gains.x.source must be non-empty"),
    ],
)
def test_a_bad_entry_is_refused_in_one_line_naming_it(raw, message):
    with pytest.raises(KvtierError, match=message) as err:
        published.parse(raw, "mine.yaml")
    assert str(err.value).startswith("mine.yaml: ") and "\n" not in str(err.value)
