"""A fleet's tier priced (the cost page's table, the decision's sentence): one computation with the workload page's."""

from __future__ import annotations

import pytest

from kvtier.report import fleet
from kvtier.scenario import Scenario
from tests.conftest import hand_scenario_in


@pytest.fixture
def hand_scenario(tmp_path) -> Scenario:
    return hand_scenario_in(tmp_path, **{"fleet.instances": "2"})


def test_the_priced_fleet_is_the_workload_pages_fleet(hand_scenario):
    from kvtier.report.pages.workload.fleet import fleet_table

    priced = fleet.fleet_cost_table(hand_scenario).set_index(["tier", "routing"])
    replayed = fleet_table(hand_scenario).set_index(["tier", "routing"])
    for row in priced.index:
        assert priced.loc[row, "hit_tokens_pct"] == replayed.loc[row, "hit_tokens_pct"]
        assert priced.loc[row, "ttft_mean_ms"] == replayed.loc[row, "ttft_mean_ms"]
    # the decision's 5 blocks over 2 instances: 2 each, 4 in all, of 4 tokens x 327,680 B = 5,242,880 B
    assert priced["capacity_TB"].unique().tolist() == pytest.approx([4 * 4 * 327_680 / 1e12], rel=1e-12)
    # a tier on each node buys memory alone (10 USD/GB); the pool one 2 TB server and one port beside it
    node, pooled = priced.loc[("per instance", "prefix")], priced.loc[("pooled", "any")]
    assert (node["servers"], node["ports"]) == (0, 0)
    assert node["hardware_kusd"] == pytest.approx(5_242_880 * 10e-9 / 1e3, rel=1e-12)
    assert (pooled["servers"], pooled["ports"]) == (1, 1)
    assert pooled["hardware_kusd"] == pytest.approx((5_242_880 * 10e-9 + 12_000 + 4_150) / 1e3, rel=1e-12)
    # net = avoided - fetching - holding, every row
    net = priced["avoided_usd_per_h"] - priced["fetch_usd_per_h"] - priced["hold_usd_per_h"]
    assert priced["net_usd_per_h"].tolist() == pytest.approx(net.tolist(), rel=1e-12)


def test_the_numbers_and_sentences_quote_the_table(hand_scenario):
    n = fleet.fleet_cost_numbers(hand_scenario)
    df = fleet.fleet_cost_table(hand_scenario).set_index(["tier", "routing"])
    assert n["fleet_cost_node_net"] == df.loc[("per instance", "prefix"), "net_usd_per_h"]
    assert n["fleet_cost_pool_net"] == df.loc[("pooled", "any"), "net_usd_per_h"]
    assert n["fleet_cost_servers"] == 1
    sentence = fleet.fleet_decision_sentence(n)
    assert f"{n['fleet_cost_node_net']:,.2f} dollars an hour in each node's own DRAM" in sentence
    # a trace of no duration has no rate: both sentences say so rather than print an undefined number
    dead = {**n, "fleet_cost_node_net": None, "fleet_cost_pool_net": None, "fleet_cost_worst_net": None}
    assert "no rate" in fleet.fleet_decision_sentence(dead)
    assert "no rate" in fleet.fleet_cost_paragraph(dead)


def test_two_losses_are_worded_as_losses_not_as_what_pays_more(hand_scenario):
    # issue 43: "nets -0.00 dollars an hour in each node's own DRAM and -0.37 as one pool ...: a tier in each node's
    # DRAM pays more"; losing 0.004 rounds to nothing and losing 0.37 is a loss, the smaller loss the better
    n = {**fleet.fleet_cost_numbers(hand_scenario), "fleet_cost_node_net": -0.004, "fleet_cost_pool_net": -0.37}
    n["fleet_cost_worst_net"] = -0.5
    sentence = fleet.fleet_decision_sentence(n)
    assert "tier nets 0.00 dollars an hour in each node's own DRAM and loses 0.37 as one pool of" in sentence
    both = fleet.fleet_decision_sentence({**n, "fleet_cost_node_net": -0.32})  # the verb once where both lose
    assert "tier loses 0.32 dollars an hour in each node's own DRAM and 0.37 as one pool of" in both
    assert sentence.endswith("neither pays: a tier in each node's DRAM loses less.")
    paragraph = fleet.fleet_cost_paragraph(n)
    assert "and lose 0.37 dollars an hour" in paragraph and "neither pays: a tier on each node loses less, by 0.37" in (
        paragraph
    )
    assert "a tier on each node loses 0.50 dollars an hour." in paragraph and "-0." not in paragraph
