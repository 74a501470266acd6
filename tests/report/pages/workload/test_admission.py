"""The workload page's admission and time to live: the decision's tier by what it admits and how long it keeps it."""

from __future__ import annotations

import pytest

from kvtier.report.pages.workload import admission
from kvtier.scenario import Scenario
from tests.conftest import hand_scenario_in


@pytest.fixture
def hand_scenario(tmp_path) -> Scenario:
    return hand_scenario_in(tmp_path)


def test_the_admission_table_by_hand(hand_scenario):
    # HAND: [1 2] 8 tokens, [1 2 3] 10, [4] 4, [1 5] 7, [1 2 3] 10: 39 prompt tokens, 4-token blocks; the decision's
    # tier is 5 blocks (tests/report/pages/workload/test_policies.py), which holds all 5 distinct blocks: no eviction.
    df = admission.admission_table(hand_scenario).set_index("filter")
    hit, writes = df["hit_tokens_pct"], df["writes"]
    # always: [1 2] misses both; [1 2 3] hits 1 2 (8 tokens); [4] misses; [1 5] hits 1 (4); [1 2 3] hits all three,
    # 12 tokens of a 10-token prompt: 10. 22 of 39, each of the 5 blocks written once
    assert hit["always"] == pytest.approx(22 / 39 * 100, rel=1e-12)
    assert writes["always"] == 5
    # second: a block is written on its second reference. [1 2] writes nothing; [1 2 3] misses 1 (writes 1 and 2,
    # their second references; 3 is its first); [1 5] hits 1 (4 tokens); [1 2 3] hits 1 2, misses 3 (its second:
    # written). 12 of 39, 3 writes
    assert hit["second"] == pytest.approx(12 / 39 * 100, rel=1e-12)
    assert writes["second"] == 3
    # third: 1 is written at [1 5] (its third reference, a miss), 2 at the last [1 2 3] after 1 hits (4 tokens). 4 of
    # 39, 2 writes
    assert hit["third"] == pytest.approx(4 / 39 * 100, rel=1e-12)
    assert writes["third"] == 2
    # TinyLFU filters only when the tier is full, which 5 blocks never is here: as always
    assert (hit["tinylfu"], writes["tinylfu"]) == (hit["always"], writes["always"])
    # the five-minute rule's residencies (hours, against 5 s of trace) expire nothing: as always
    for ttl in ("ttl pcie5-x16", "ttl nvme-gen4-x4"):
        assert df.loc[ttl, "ttl_h"] > 1
        assert df.loc[ttl, "expired"] == 0
        assert df.loc[ttl, "hit_tokens_pct"] == hit["always"]
    # drive writes a day: 5 blocks of 4 tokens x 327,680 B (Llama-3-70B bf16) over 5 s, on one 15.36 TB drive:
    # 6,553,600 B x 86,400 / 5 / 15.36e12 = 0.0073728 a day
    assert df.loc["always", "drive_writes_per_day"] == pytest.approx(5 * 4 * 327_680 * 86_400 / 5 / 15.36e12, rel=1e-12)
    # points lost per drive write a day saved: second gives up 10 of 39 tokens (25.64 points) for 2 of 5 writes
    saved = 2 * 4 * 327_680 * 86_400 / 5 / 15.36e12
    assert df.loc["second", "points_lost_per_dwpd"] == pytest.approx((10 / 39 * 100) / saved, rel=1e-12)


def test_the_admission_numbers_are_the_table(hand_scenario):
    n = admission.admission_numbers(hand_scenario)
    df = admission.admission_table(hand_scenario).set_index("filter")
    assert n["admission_second_hit_pct"] == df.loc["second", "hit_tokens_pct"]
    assert n["admission_always_pts_per_dwpd"] is None  # the reference row gives up nothing
    assert n["admission_tinylfu_pts_per_dwpd"] is None  # saves no write here
    assert "TinyLFU none (it saves no write)" in n["admission_paragraph"]
    assert "a TTL changes nothing" in n["admission_paragraph"]
    assert list(admission.shown_admission(hand_scenario).columns) == list(admission.ADMISSION_SHOWN)


def test_the_pages_admission_is_the_commands(capsys):
    # the workload page's rows and `kvtier workload conversation --capacity 31589 --admission`: one replay
    import json

    from kvtier.commands import main
    from kvtier.report.pages import workload as page

    s = page.SCENARIO(Scenario())
    df = admission.admission_table(s).set_index("filter")
    assert main(["workload", "conversation", "--capacity", "31589", "--admission", "--json"]) == 0
    rows = {r["filter"]: r for r in json.loads(capsys.readouterr().out)["admission"]["rows"]}
    for name, row in rows.items():
        assert df.loc[name, "hit_tokens_pct"] == pytest.approx(row["hit_ratio_tokens"] * 100, rel=1e-12)
        assert df.loc[name, "drive_writes_per_day"] == pytest.approx(row["drive_writes_per_day"], rel=1e-12)


def test_a_filter_that_gains_hits_as_it_saves_writes_is_said_to_gain(hand_scenario):
    # issue 43: a negative "points lost per drive write a day saved" read as a loss (-0.01); it is a gain
    from kvtier.report.pages.workload import words

    n = dict(admission.admission_numbers(hand_scenario))
    n["admission_second_pts_per_dwpd"] = -0.0132
    assert "the second-reference filter none: it gains 0.01" in words.admission_paragraph(n)
