"""The fetch page: the chapter's fetch table, recomputed from the seed set."""

import pytest


def test_fetch_table(seed_scenario):
    fetch = seed_scenario.fetch_by_label()
    # 5,242,880 B / 121e9 B/s = 43.33 µs  (chapter: 43 µs)
    assert fetch["optimistic"] == pytest.approx(43.329587e-6, rel=1e-6)
    # 5,242,880 B / 64e9 B/s = 81.92 µs   (chapter: 82 µs)
    assert fetch["mid"] == pytest.approx(81.92e-6, rel=1e-12)
    # 5,242,880 B / 32e9 B/s = 163.84 µs  (chapter: 164 µs)
    assert fetch["pessimistic"] == pytest.approx(163.84e-6, rel=1e-12)
    assert [round(t * 1e6) for t in fetch.values()] == [43, 82, 164]


def test_the_seed_comparison_is_printed_only_when_the_build_differs(seed_scenario):
    from kvtier.report.pages import fetch
    from tests.conftest import scenario

    # the seed build has just given 43.33, 81.92 and 163.84 us: it names only the chapter's rounding
    assert (
        fetch.numbers(seed_scenario)["seed_sentence"] == "The source chapter prints them rounded as 43, 82 and 164 µs."
    )
    # at 100 GB/s mid the build gives 52.43 us, so the seed's 81.92 us is quoted beside the chapter's 82
    changed = fetch.numbers(scenario(**{"bandwidth.mid": "100GB/s"}))["seed_sentence"]
    assert changed == (
        "With the seed assumptions these are 43.33, 81.92 and 163.84 µs, which the source chapter prints rounded"
        " as 43, 82 and 164 µs."
    )
