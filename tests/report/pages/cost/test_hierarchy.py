"""The cost page's hierarchies: replayed on the conversation trace, from its stack distances."""

from __future__ import annotations

import pytest

from kvtier import analysis
from kvtier.report.pages.cost import hierarchy as cost_hierarchy
from kvtier.report.pages.cost import tiers
from kvtier.scenario import Scenario


def test_the_hierarchy_replayed_on_the_conversation_trace():
    from kvtier.formulas.cache import hierarchy

    s = analysis.priced(Scenario())  # as the cost page prices the trace: Llama-3.1-70B on 4 H100s, TP 4
    sizes = cost_hierarchy.hierarchy_sizes(s)
    # HBM per accelerator, one placement for every page (issue 43): 80 GB less the TP-4 shard of the weights,
    # 141,107,412,992 B / 4 = 35,276,853,248 B, leaves 44,723,146,752 B; blocks of 327,680 B x 512 = 167,772,160 B;
    # the middle tier is the decision's 90 % LRU tier
    assert sizes["hbm_left_bytes"] == pytest.approx(80e9 - 141_107_412_992 / 4)
    hbm = int(sizes["accelerators"] * (80e9 - 141_107_412_992 / 4) // 167_772_160)
    mid = analysis.reuse(s).capacity_for(0.9)
    full = analysis.reuse(s).capacity_for(1.0)
    assert sizes[hierarchy.INCLUSIVE] == [hbm, mid, full]
    assert sizes[hierarchy.EXCLUSIVE] == [hbm, mid, full - hbm - mid]
    df = cost_hierarchy.hierarchy_table(s)
    assert len(df) == 2 * 2 * 3
    # the middle tier of the inclusive hierarchy is the cost_lru table's 90 % tier, GiB for GiB
    lru = tiers.lru_table(s)
    dram = df[(df["hierarchy"] == "host DRAM") & (df["mode"] == "inclusive") & (df["tier"] == "pcie5-x16")].iloc[0]
    assert dram["capacity_GiB"] == pytest.approx(lru[(lru["target"] == "90%")]["capacity_GiB"].iloc[0])
    # both hierarchies hold every achievable hit: 1 - 182,790 / 288,500 of the references
    assert df["hierarchy_hit_blocks_pct"].tolist() == pytest.approx([(1 - 182_790 / 288_500) * 100] * 12)
    # HBM is on top in both and of the same size: the same hits either way
    top = df[df["tier"] == "hbm"]["hit_blocks_pct"]
    assert top.nunique() == 1
    # no hierarchy costs less than the least-cost mix with perfect knowledge
    assert (df["hierarchy_usd_per_h"] >= df["lower_bound_usd_per_h"]).all()
    # NVMe wears; the others do not
    assert (
        df[df["medium"] != "nvme"]["nvme_wear_pct"].isna().all()
        and (df[df["medium"] == "nvme"]["nvme_wear_pct"] > 0).all()
    )


def test_the_hierarchy_from_the_streamed_histogram_is_the_replay_of_every_distance():
    # the page replays each hierarchy from the histogram of stack distances its streamed pass keeps; here the same
    # from the trace in memory, every reference's distance, and the recomputation of the reuses no tier serves
    from kvtier.formulas.cache import hierarchy

    s = Scenario()
    r = analysis.reuse(s)
    again = r.prev >= 0
    recompute = s.regen_costs().per_reference_s(r.trace, "batch")[again]
    rep = cost_hierarchy.hierarchy_replays(s)
    for middle in cost_hierarchy.HIERARCHIES:
        for mode in hierarchy.MODES:
            counts, _, cost = rep[(middle, mode)]
            whole = hierarchy.replay(r.distance, rep["sizes"][mode], mode)
            for field in ("hits", "admissions", "demotions"):
                assert getattr(counts, field).tolist() == getattr(whole, field).tolist()
            missed = hierarchy.serving_tier(r.distance[again], rep["sizes"][mode], mode) == 3
            # 1e-12: the same seconds summed in the order of their distances, not of the trace
            assert cost.recompute_usd_per_s * r.trace.duration_s == pytest.approx(
                float(recompute[missed].sum()) * s.tier_prices().accelerator_usd_per_s, rel=1e-12
            )


def test_the_hierarchys_hour_against_the_mix_says_what_hbm_holding_adds():
    from kvtier.report.pages import cost as page
    from kvtier.report.pages.cost.words import hierarchy_result_sentence
    from kvtier.scenario import seed_scenario

    n = page.numbers(page.SCENARIO(seed_scenario()))  # as the page prices it: Llama-3.1-70B on 4 H100s, TP 4
    # one placement for every page (issue 43): each busy accelerator keeps 80 GB less its TP-4 shard of the weights,
    # 80e9 - 141,107,412,992 / 4 = 44,723,146,752 B = 41.65 GiB, for the prefix cache; the exclusive hierarchy's
    # 16.78 USD/h holds 10.83 of it at HBM's share of the hour, and without it costs 16.78 - 10.83 = 5.94
    assert n["hier_hbm_left_gib"] == pytest.approx((80e9 - 141_107_412_992 / 4) / 2**30)
    assert n["hier_exc_usd_per_h"] == pytest.approx(16.778, abs=1e-3)
    assert n["hier_exc_hbm_hold_usd_per_h"] == pytest.approx(10.834, abs=1e-3)
    text = hierarchy_result_sentence(n)
    assert "10.83 USD of the exclusive hierarchy's hour is the HBM its prefix cache holds" in text
    assert text.endswith("without it the hierarchy costs 5.94.")
    # the seed's own placement, Llama-3-70B on one 80 GB accelerator, cannot hold its 141 GB of weights: no HBM tier
    seed = page.numbers(seed_scenario())
    assert seed["hier_hbm_left_gib"] == 0 and seed["hier_exc_hbm_hold_usd_per_h"] == 0
    assert hierarchy_result_sentence(seed).endswith(
        "HBM holds no prefix cache here: the placement's shard of the weights leaves its accelerators nothing"
        " beside it."
    )
