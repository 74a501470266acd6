"""The cost page's mix: each reuse served the cheapest way, and a trace with no reuse or no duration."""

from __future__ import annotations

import numpy as np
import pytest

from kvtier.formulas import economics
from kvtier.report.pages import cost
from kvtier.report.pages.cost import mix
from kvtier.scenario import Scenario


def test_longer_intervals_favour_slower_tiers_in_the_mix():
    # two tiers: fast (hold 1 USD/(B s), fetch 0) and slow (hold 0.1, fetch 5); recompute 20
    # per byte-second with 1-byte blocks: fast wins below 5 / 0.9 = 5.56 s, slow up to (20 - 5) / 0.1 = 150 s
    dt = np.array([1.0, 5.0, 6.0, 100.0, 200.0])
    choice = economics.cheapest_tier(dt, [1.0, 0.1], [0.0, 5.0], 20.0)
    assert choice.tolist() == [0, 0, 1, 1, 2]
    mix = economics.tier_mix(dt, 100.0, 1.0, [1.0, 0.1], [0.0, 5.0], 20.0)
    assert mix.share.tolist() == [0.4, 0.4, 0.2]
    # Little's law: fast holds (1 + 5) B s / 100 s = 0.06 B; slow (6 + 100) / 100 = 1.06 B
    assert mix.bytes_held.tolist() == pytest.approx([0.06, 1.06, 0.0])
    # cost per second: hold 0.06 x 1 + 1.06 x 0.1 = 0.166; fetch 2 x 5 / 100 = 0.1; recompute 20 / 100 = 0.2
    assert mix.usd_per_s == pytest.approx(0.466)
    assert mix.recompute_all_usd_per_s == pytest.approx(5 * 20 / 100)


def test_the_trace_mix_serves_every_reuse_and_scales_with_the_bytes_per_token():
    s = Scenario()
    table = mix.mix_table(s)
    shares = table[[f"share_{m}_pct" for m in mix.MIX_MEDIA]].sum(axis=1)
    assert np.allclose(shares, 100.0)
    assert (table["mix_usd_per_h"] < table["recompute_all_usd_per_h"]).all()
    # no room in host DRAM: nothing is held there
    assert (table.loc[table["ladder"] == "host DRAM full", "dram_GiB"] == 0).all()
    batch = table[(table["regime"] == "batch") & (table["ladder"] == "with host DRAM")].set_index("model")
    # DeepSeek-V3 caches 61 x (512 + 64) x 2 B = 70,272 B a token against Llama-3-70B's 327,680 B: 0.21445;
    # the same reuses go to the same tiers, so the GiB held scale with it
    ratio = batch.loc["deepseek-v3", "dram_GiB"] / batch.loc["llama-3-70b", "dram_GiB"]
    assert ratio == pytest.approx(70_272 / 327_680, rel=1e-3)


def test_the_mix_tornado_names_the_price_that_changes_the_largest_tier():
    t = mix.mix_tornado_table(Scenario())
    assert t["swing"].is_monotonic_decreasing
    # dearer host DRAM (20 USD/GB) than the CXL expander (12 USD/GB): the expander takes its place
    row = t.set_index("input").loc["cost.dram_gb"]
    assert (row["largest_tier_base"], row["largest_tier_at_high"]) == ("host DRAM", "CXL expander")
    n = cost.numbers(Scenario())
    decider = n["mix_decider_sentence"]
    assert (
        "the purchase price of host DRAM capacity per GB: at the high end" in decider and "cost.dram_gb" not in decider
    )
    assert "CXL expander takes the place" in decider


def test_a_trace_of_no_duration_has_totals_and_a_saving_but_no_rates():
    # all reuses at one instant: intervals 0 s over a trace of 0 s; tiers (hold 1, fetch 0) and (hold 0.1, fetch 5),
    # recompute 20: at dt = 0 tier 0 costs 1 x 0 + 0 = 0, the cheapest, so both reuses are served from it
    mix = economics.tier_mix([0.0, 0.0], 0.0, 1.0, [1.0, 0.1], [0.0, 5.0], 20.0)
    assert mix.share.tolist() == [1.0, 0.0, 0.0]
    # totals: the mix 0 USD, recomputing both reuses 2 x 20 = 40 USD; saving 1 - 0 / 40 = 100 %
    assert (mix.usd, mix.recompute_all_usd, mix.saving) == (0.0, 40.0, 1.0)
    # rates and Little's law divide by the trace's 0 s: undefined, None (never NaN or a ZeroDivisionError)
    assert mix.usd_per_s is None and mix.recompute_all_usd_per_s is None and mix.bytes_held is None
    assert not mix.rates_defined


def test_a_trace_with_no_reuse_and_no_duration_costs_nothing_and_saves_nothing_to_speak_of():
    # nothing to cache: every rate is 0 even over 0 s (no cost ever arises), and the saving is 0 / 0: None
    mix = economics.tier_mix([], 0.0, 1.0, [1.0, 0.1], [0.0, 5.0], 20.0)
    assert (mix.usd_per_s, mix.recompute_all_usd_per_s, mix.saving) == (0.0, 0.0, None)
    assert mix.bytes_held.tolist() == [0.0, 0.0, 0.0] and not mix.has_reuse and mix.rates_defined


def test_the_saving_is_a_ratio_of_totals_and_a_negative_duration_is_refused():
    dt = np.array([1.0, 5.0, 6.0, 100.0, 200.0])
    mix = economics.tier_mix(dt, 100.0, 1.0, [1.0, 0.1], [0.0, 5.0], 20.0)
    # 0.466 USD/s against 1 USD/s (test_longer_intervals_favour_slower_tiers_in_the_mix): 53.4 % saved
    assert mix.saving == pytest.approx(1 - 0.466 / 1.0)
    with pytest.raises(ValueError, match="duration_s must be >= 0"):
        economics.tier_mix(dt, -1.0, 1.0, [1.0, 0.1], [0.0, 5.0], 20.0)


def test_the_mix_peaks_at_one_instant_not_at_the_sum_of_each_mediums_peak():
    from kvtier.report.pages.cost import glue

    n = glue.numbers(Scenario())
    # host DRAM peaks at 1,133.6 GiB and NVMe at 150.5 GiB, 1,284.1 GiB if they peaked together; they do not:
    # the busiest instant holds 1,271.4 GiB of both
    assert n["mix_dram_peak_gib"] + n["mix_nvme_peak_gib"] == pytest.approx(1284.06, abs=0.01)
    assert n["mix_peak_total_gib"] == pytest.approx(1271.41, abs=0.01)
    assert n["mix_peak_total_gib"] <= n["mix_dram_peak_gib"] + n["mix_nvme_peak_gib"]
