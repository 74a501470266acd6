"""The workload page's LRU curve: the links table takes the tiers and their latency from the scenario."""

from __future__ import annotations

from kvtier.report.pages.workload import summary
from kvtier.scenario import Scenario


def test_the_links_table_takes_the_tiers_and_their_latency_from_the_scenario():
    from kvtier.inputs.assumptions import load_assumptions

    links = {k.name: k for k in summary.link_specs(Scenario())}
    # fastest first; CXL 2.0 x8 at 31.5 GB/s and the host link's 9.049 us a transfer (tier_latency.host_link)
    assert next(iter(links)) == "hbm"
    assert (links["cxl2-x8"].bandwidth_bytes_per_s, links["cxl2-x8"].latency_s) == (31.5e9, 9.049e-6)
    assert links["nvme-gen4-x4"].latency_s == 92e-6
    other = {k.name: k for k in summary.link_specs(Scenario(load_assumptions(sets={"tier_latency.host_link": "1us"})))}
    assert other["cxl2-x8"].latency_s == other["pcie6-x16"].latency_s == 1e-6
