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
