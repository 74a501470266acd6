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


def test_the_shipped_setups_name_figures_of_the_file_and_say_they_are_this_books_choice():
    s = published.setups()
    assert list(s) == ["cake", "hcache"]
    assert s["cake"].gains[0] == "cake_ttft" and s["cake"].bandwidth_GBps == (1.0, 2.0, 4.0, 8.0, 12.5)
    assert s["hcache"].prefix_tokens == (4080,) and s["hcache"].model == "llama-2-7b"
    assert {x.provenance for x in s.values()} == {"assumed"}
    assert all("this book's choice" in x.basis for x in s.values())
    # Cake's largest reductions as published: 68.1 % and 94.6 % of the compute-only and I/O-only times
    p = published.published()
    assert (p["cake_reduction_vs_compute"].value, p["cake_reduction_vs_io"].value) == (0.681, 0.946)


GOOD = {
    "title": "t",
    "paper": "P",
    "gains": ["x"],
    "model": "m",
    "accelerator": "a",
    "prefix_tokens": [1024],
    "new_tokens": 16,
    "bandwidth_GBps": [1.5],
    "provenance": "assumed",
    "basis": "b",
    "source": "s",
}
GAINS = published.parse({"gains": {"x": {"value": 2, "provenance": "measured", "basis": "b", "source": "s"}}})


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"gains": ["y"]}, r"setups.k.gains must list figures of 'gains' \(x\)"),
        ({"prefix_tokens": [10.5]}, "setups.k.prefix_tokens must be a non-empty list of positive whole numbers"),
        ({"prefix_tokens": []}, "setups.k.prefix_tokens must be a non-empty list"),
        ({"new_tokens": 0}, "setups.k.new_tokens must be a positive whole number, got 0"),
        ({"bandwidth_GBps": [True]}, "setups.k.bandwidth_GBps must be a non-empty list of positive numbers"),
        ({"basis": " "}, "setups.k.basis must be non-empty text"),
    ],
)
def test_a_bad_setup_is_refused_in_one_line_naming_it(change, message):
    with pytest.raises(KvtierError, match=message) as err:
        published.parse_setups({"setups": {"k": {**GOOD, **change}}}, GAINS, "mine.yaml")
    assert str(err.value).startswith("mine.yaml: ") and "\n" not in str(err.value)
    assert published.parse_setups({"setups": {"k": GOOD}}, GAINS)["k"].bandwidth_GBps == (1.5,)
