"""The workload page's fleet: the decision's tier split over instances under each router, against one pool."""

from __future__ import annotations

import pytest

from kvtier import analysis
from kvtier.report.pages.workload import fleet
from kvtier.scenario import Scenario
from tests.conftest import hand_scenario_in


@pytest.fixture
def hand_scenario(tmp_path) -> Scenario:
    return hand_scenario_in(tmp_path, **{"fleet.instances": "2"})


def test_the_fleet_table_by_hand(hand_scenario):
    # HAND: [1 2] 8 tokens, [1 2 3] 10, [4] 4, [1 5] 7, [1 2 3] 10: 39 prompt tokens, 4-token blocks.
    # The decision's tier is 5 blocks (tests/report/pages/workload/test_policies.py); over 2 instances, 2 each.
    df = fleet.fleet_table(hand_scenario).set_index(["tier", "routing"])
    hit = df["hit_tokens_pct"]
    # round robin: instance 0 gets [1 2] [4] [1 2 3], instance 1 [1 2 3] [1 5]; at 2 blocks each, [4] evicts 1
    # before [1 2 3] returns and instance 1 never sees a prefix twice: nothing hits
    assert hit[("per instance", "round-robin")] == 0.0
    # prefix: [1 2] -> 0; [1 2 3] finds 1 2 on 0 (2 of 3 > 0.3): 8 tokens; [4] -> 1 (nothing cached, in turn);
    # [1 5]: no instance holds 1 (0 holds 2 3) -> 0 in turn, which then holds 1 5; [1 2 3] finds 1 on 0
    # (1 of 3 > 0.3): 4 tokens. 12 of 39
    assert hit[("per instance", "prefix")] == pytest.approx(12 / 39 * 100, rel=1e-12)
    # session: [1 2 3] extends [1 2] (holds its last full block, 1): instance 0, 8 tokens; [4] and [1 5] open
    # sessions (1 was gone on past by [1 2 3]) on 1 and 0; [1 2 3] extends [1 2 3]'s last full block 2: instance 0,
    # which holds 1 5 by then: 4 tokens. 12 of 39
    assert hit[("per instance", "session")] == pytest.approx(12 / 39 * 100, rel=1e-12)
    # one pool of 4 blocks: stack distances -1 -1 | 1 1 -1 | -1 | 3 -1 | 1 4 4; up to each first miss, below 4:
    # [1 2 3] 2 blocks (8 tokens), [1 5] 1 (4), [1 2 3] 1 (4): 16 of 39
    assert hit[("pooled", "any")] == pytest.approx(16 / 39 * 100, rel=1e-12)
    assert hit[("none", "any")] == 0.0
    # Llama-3-70B bf16 KV: 80 layers x 8 heads x 128 x 2 (K, V) x 2 B = 327,680 B a token; 2 blocks of 4 tokens
    gib = 327_680 * 4 / 2**30
    assert df.loc[("per instance", "prefix"), "capacity_GiB"] == pytest.approx(2 * gib, rel=1e-12)
    assert df.loc[("pooled", "any"), "capacity_GiB"] == pytest.approx(4 * gib, rel=1e-12)
    # no tier: every prompt prefilled whole, alone; prompts of at most 10 tokens are bound by reading the weights,
    # 140e9 B at 3.35e12 B/s x 80 % = 52.24 ms each, so the mean is that. A fetched prefix only adds to it here
    ttft = df["ttft_mean_ms"]
    assert ttft[("none", "any")] == pytest.approx(140e9 / (3.35e12 * 0.8) * 1e3, rel=1e-9)
    assert ttft[("pooled", "any")] > ttft[("none", "any")]


def test_the_fleet_numbers_are_the_table(hand_scenario):
    n = fleet.fleet_numbers(hand_scenario)
    df = fleet.fleet_table(hand_scenario).set_index(["tier", "routing"])
    assert n["fleet_instances"] == 2
    assert n["fleet_prefix_hit_pct"] == df.loc[("per instance", "prefix"), "hit_tokens_pct"]
    assert n["fleet_least_loaded_hit_pct"] == df.loc[("per instance", "least-loaded"), "hit_tokens_pct"]
    assert n["fleet_pool_ttft_ms"] == df.loc[("pooled", "any"), "ttft_mean_ms"]
    assert list(fleet.shown_fleet(hand_scenario).columns) == list(fleet.FLEET_SHOWN)


def test_the_pages_fleet_is_the_commands(capsys):
    # the workload page's prefix row and `kvtier workload conversation --capacity 3948 --instances 8 --routing
    # prefix`: the decision's 31,589 blocks over 8 instances, 3,948 each, one computation (kvtier.analysis.fleet_of)
    import json

    from kvtier.commands import main
    from kvtier.report.pages import workload as page

    s = page.SCENARIO(Scenario())
    assert analysis.fleet_capacity_blocks(s) == 31_589 // 8 == 3_948
    df = fleet.fleet_table(s).set_index(["tier", "routing"])
    argv = ["workload", "conversation", "--capacity", "3948", "--instances", "8", "--routing", "prefix", "--json"]
    assert main(argv) == 0
    got = json.loads(capsys.readouterr().out)["fleet"]
    row = df.loc[("per instance", "prefix")]
    assert row["hit_tokens_pct"] == pytest.approx(got["node"]["hit_ratio_tokens"] * 100, rel=1e-12)
    assert row["ttft_mean_ms"] == pytest.approx(got["node"]["ttft_mean_s"] * 1e3, rel=1e-12)
    assert df.loc[("pooled", "any"), "hit_tokens_pct"] == pytest.approx(got["pooled"]["hit_ratio_tokens"] * 100)
