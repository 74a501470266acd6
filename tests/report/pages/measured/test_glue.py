"""The measured page's numbers: the illustrative point measured, the energy check and the fetch fit."""

from __future__ import annotations

import pytest

from kvtier.report.pages import measured as page
from kvtier.scenario import Scenario
from tests.conftest import ROOT


@pytest.fixture(scope="module")
def numbers() -> dict:
    return page.numbers(Scenario())


def test_the_illustrative_point_measured(numbers):
    # lone block: 44.4514 ms (CUDA graph) / 104.672 µs = 424.67; in batch: 260.53 µs x 16 = 4.1685 ms / 104.672 µs
    assert numbers["measured_lone_ratio"] == pytest.approx(0.04445135879516601 / 0.00010467199981212616)
    assert numbers["measured_lone_ratio"] == pytest.approx(424.67, abs=0.01)
    assert numbers["measured_in_batch_ratio"] == pytest.approx(39.82, abs=0.01)
    # the chapter: (2 x 70e9 x 16 + 356,515,840 FLOP of the block's attention over itself) / (500 TFLOP/s x 25 %)
    # = 17.92285 ms over 5 MiB / 64 GB/s = 81.92 µs: 218.784816
    assert numbers["chapter_ratio"] == pytest.approx(218.784816, rel=1e-12)
    # the seed's lone block: 140 GB / (3.35 TB/s x 80 %) = 52.24 ms / 81.92 µs = 637.7
    assert numbers["set_lone_ratio"] == pytest.approx(637.68, abs=0.01)
    # per-chunk layout: 44.4514 ms / 2.0204 ms = 22.0 and / 1.3722 ms = 32.4
    assert (numbers["per_chunk_lone_ratio_min"], numbers["per_chunk_lone_ratio_max"]) == pytest.approx(
        (22.00, 32.39), abs=0.01
    )


def test_the_energy_check_is_called_a_consistency_check_and_held_out(numbers):
    # in sample: 466.78 W x 56.024 ms = 26.151 J against 26.197 J: 0.18 % (by construction); held out: 8B graph pass
    # 466.78 W x 8.6078 ms = 4.018 J against 3.246 J: 23.8 % above
    assert numbers["energy_in_sample_error_pct"] == pytest.approx(0.177, abs=0.001)
    assert numbers["energy_held_out_j"] == pytest.approx(4.018, abs=0.001)
    assert numbers["energy_held_out_error_pct"] == pytest.approx(23.78, abs=0.01)
    assert numbers["energy_held_out_direction"] == "above"
    text = (ROOT / "notebooks" / "11_measured.md").read_text()
    assert "consistency check, not evidence" in text and "energy_held_out_j" in text


def test_the_fetch_fit_error_over_its_points(numbers):
    # 5 MiB: 9.049 µs + 5,242,880 B / 55.14 GB/s = 104.13 µs against 104.67 µs measured: -0.52 %
    assert numbers["fit_5mib_us"] == pytest.approx(104.13, abs=0.01)
    assert numbers["fit_5mib_error_pct"] == pytest.approx(-0.52, abs=0.01)
    assert numbers["fit_max_abs_error_pct"] < 1
    # per chunk: 160 x 9.049 µs + 5 MiB / 55.14 GB/s = 1.448 + 0.095 = 1.543 ms
    assert numbers["per_chunk_model_ms"] == pytest.approx(1.543, abs=0.001)


def test_the_pageable_paragraph_names_the_cold_rate_a_pool_sees(numbers):
    # the probe's rates: 1 MiB in 98.53 us = 10.64 GB/s, 16 MiB the fastest at 15.13 GB/s, then 256 MiB at 8.79 GB/s
    assert (numbers["pageable_1mib_gbps"], numbers["pageable_peak_gbps"]) == pytest.approx((10.64, 15.13), abs=0.01)
    assert (numbers["pageable_peak_mib"], numbers["pageable_big_mib"]) == (16, 256)
    assert numbers["pageable_big_gbps"] == pytest.approx(8.79, abs=0.01)
    # the fit: 26.37 % and 16.38 % of the pinned 55.14 GB/s = 14.54 and 9.03 GB/s, 15.26 us per copy
    assert numbers["pageable_warm_gbps"] == pytest.approx(0.2637 * 55.14, rel=1e-3)
    assert numbers["pageable_cold_gbps"] == pytest.approx(0.1638 * 55.14, rel=1e-3)
    assert numbers["pageable_overhead_us"] == pytest.approx(15.26, abs=0.01)
    # the cache, assumed 128 MiB, bracketed by the copies at 64 MiB (warm) and 256 MiB (cold)
    assert (numbers["cache_low_mib"], numbers["host_cache_mib"], numbers["cache_high_mib"]) == (64, 128, 256)
    # a 5 MiB block from a pool: 9.049 + 15.26 us + 5,242,880 / 9.032 GB/s = 24.31 + 580.5 = 604.8 us; from a
    # buffer in the cache: 24.31 + 5,242,880 / 14.54 GB/s = 384.8 us (the probe measured 405.2 us)
    assert numbers["pageable_pool_block_us"] == pytest.approx(604.8, abs=0.1)
    assert numbers["pageable_cache_block_us"] == pytest.approx(384.8, abs=0.1)
    # out of sample: the eight copies of 256 KiB to 1 GiB within 8.3 % (16 MiB the worst), the 4 KiB one +26.7 %
    assert numbers["pageable_goal_n"] == 8 and numbers["pageable_goal_kib"] == 256
    assert numbers["pageable_goal_loo_worst_abs_pct"] == pytest.approx(8.3, abs=0.05)
    assert numbers["pageable_goal_loo_worst_case"] == "16 MiB"
    assert numbers["val_small_pageable_loo_worst_case"] == "4 KiB"
    assert numbers["val_small_pageable_loo_worst_abs_pct"] == pytest.approx(26.7, abs=0.05)
    text = (ROOT / "notebooks" / "11_measured.md").read_text()
    assert "its fetches see the DRAM rate" in text and "{glue:text}`pageable_pool_block_us:.0f` µs" in text
