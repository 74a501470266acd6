"""The transfer model: a fetch with a floor per copy, pageable host memory and a busy link, by hand."""

from __future__ import annotations

import numpy as np
import pytest


def test_the_transfer_model_by_hand_and_the_chapters_fetch_at_its_defaults():
    from kvtier.formulas import costs, transfer

    # defaults: exactly transfers x latency + bytes / bandwidth
    b, bw = np.array([4096.0, 5 * 2**20]), 55e9
    assert np.array_equal(transfer.fetch_time_s(b, bw, 9e-6, 160), costs.fetch_time_s(b, bw, 9e-6, 160))
    # a 4 KiB copy: 9 us + 4096 / 55e9 = 9.074 us, below the 15 us floor: 15 us
    # 5 MiB at 22 % of the rate: 9 us + 5242880 / 12.1e9 = 9 + 433.3 = 442.3 us, above the floor
    t = transfer.fetch_time_s(b, bw, 9e-6, 1, 15e-6, np.array([1.0, 0.22]))
    assert t[0] == pytest.approx(15e-6, rel=1e-12)
    assert t[1] == pytest.approx(9e-6 + 5 * 2**20 / (55e9 * 0.22), rel=1e-12)
    # the floor is paid once: 160 chunks of 32 KiB, 160 x 9 us + 5 MiB / 55 GB/s = 1440 + 95.3 us
    assert float(transfer.fetch_time_s(5 * 2**20, bw, 9e-6, 160, 15e-6)) == pytest.approx(
        160 * 9e-6 + 5 * 2**20 / bw, rel=1e-12
    )


def test_the_overhead_adds_to_each_transfers_latency_and_zero_changes_nothing():
    from kvtier.formulas import transfer

    b, bw = np.array([4096.0, 5 * 2**20]), 55e9
    assert np.array_equal(
        transfer.fetch_time_s(b, bw, 9e-6, 160, 15e-6, 0.5, 0.0), transfer.fetch_time_s(b, bw, 9e-6, 160, 15e-6, 0.5)
    )
    # 5 MiB at 16 % of 55 GB/s (8.8 GB/s), 9 us latency and 15 us overhead: 24 us + 5,242,880 / 8.8e9 = 24 + 595.8 us
    t = float(transfer.fetch_time_s(5 * 2**20, bw, 9e-6, 1, 15e-6, 0.16, 15e-6))
    assert t == pytest.approx(24e-6 + 595.782e-6, rel=1e-6)
    # two transfers pay it twice: 2 x 24 us + 595.8 us
    t2 = float(transfer.fetch_time_s(5 * 2**20, bw, 9e-6, 2, 15e-6, 0.16, 15e-6))
    assert t2 - t == pytest.approx(24e-6, rel=1e-9)
    # a 4 KiB copy: 24 us + 4096 / 8.8e9 = 24.47 us, above the 15 us floor
    assert float(transfer.fetch_time_s(4096, bw, 9e-6, 1, 15e-6, 0.16, 15e-6)) == pytest.approx(24.4655e-6, rel=1e-4)


def test_the_staging_share_is_warm_within_the_cache_and_cold_beyond():
    from kvtier.formulas import transfer

    # a 128 MiB cache: 64 MiB and 128 MiB (the end included) warm at 26 %, 256 MiB and a pool of any size cold at 16 %
    src = np.array([64, 128, 256], dtype=float) * 2**20
    assert transfer.staging_efficiency(src, 0.16, 0.26, 128 * 2**20).tolist() == [0.26, 0.26, 0.16]
    assert float(transfer.staging_efficiency(np.inf, 0.16, 0.26, 128 * 2**20)) == 0.16
    # a cache of 0 B: every source is cold, the seed's single share
    assert float(transfer.staging_efficiency(4096, 1.0, 0.5, 0.0)) == 1.0


def test_the_link_efficiency_multiplies_what_applies():
    from kvtier.formulas import transfer

    assert float(transfer.link_efficiency(False, 0.22, False, 0.9)) == 1.0
    assert float(transfer.link_efficiency(True, 0.22, False, 0.9)) == 0.22
    assert float(transfer.link_efficiency(True, 0.22, True, 0.9)) == pytest.approx(0.198, rel=1e-12)


def test_break_even_bandwidth_and_latency_under_the_transfer_model():
    from kvtier.formulas import costs, transfer

    # 5 MiB, 1 ms to regenerate, 100 us of latency: the fetch reaches 1e-3 at
    # 5,242,880 / (900 us) = 5.825 GB/s of reached rate; at 50 % the link must carry 11.65 GB/s
    bw = float(transfer.break_even_bandwidth(5 * 2**20, 1e-3, 100e-6, 1, 0.0, 0.5))
    assert bw == pytest.approx(5 * 2**20 / 900e-6 / 0.5, rel=1e-12)
    assert float(transfer.fetch_time_s(5 * 2**20, bw, 100e-6, 1, 0.0, 0.5)) == pytest.approx(1e-3, rel=1e-12)
    # a floor of 1 ms or more: no bandwidth makes the fetch shorter than the regeneration
    assert float(transfer.break_even_bandwidth(5 * 2**20, 1e-3, 100e-6, 1, 1e-3, 1.0)) == np.inf
    # latency per transfer at 10 GB/s x 50 % = 5 GB/s: (1,000 - 1,048.576 us) < 0 -> 0; at 20 GB/s x 50 %:
    # (1,000 - 524.288) / 4 transfers = 118.928 us
    assert float(transfer.break_even_latency(5 * 2**20, 10e9, 1e-3, 4, 0.0, 0.5)) == 0.0
    assert float(transfer.break_even_latency(5 * 2**20, 20e9, 1e-3, 4, 0.0, 0.5)) == pytest.approx(118.928e-6)
    assert float(transfer.break_even_latency(5 * 2**20, 20e9, 1e-3, 4, 2e-3, 0.5)) == 0.0
    # at their defaults the chapter's break-evens exactly
    assert float(transfer.break_even_bandwidth(5 * 2**20, 1e-3, 100e-6)) == float(
        costs.bandwidth_for_ratio(5 * 2**20, 1e-3, 1.0, 100e-6)
    )


def test_break_even_bandwidth_and_latency_take_the_overhead_per_transfer():
    from kvtier.formulas import transfer

    # 5 MiB in 4 transfers of 50 us latency + 100 us pageable overhead: 4 x 150 = 600 us of the 1 ms budget,
    # so the reached rate must be 5,242,880 / 400 us = 13.107 GB/s; at 50 % the link carries 26.214 GB/s
    bw = float(transfer.break_even_bandwidth(5 * 2**20, 1e-3, 50e-6, 4, 0.0, 0.5, 100e-6))
    assert bw == pytest.approx(26.2144e9, rel=1e-12)
    assert float(transfer.fetch_time_s(5 * 2**20, bw, 50e-6, 4, 0.0, 0.5, 100e-6)) == pytest.approx(1e-3, rel=1e-12)
    # overhead alone eats the budget: 4 x 250 us = 1 ms -> no bandwidth is enough
    assert float(transfer.break_even_bandwidth(5 * 2**20, 1e-3, 0.0, 4, 0.0, 1.0, 250e-6)) == np.inf
    # latency: (1,000 - 524.288 us at 20 GB/s x 50 %) / 4 = 118.928 us per transfer, less 100 us of overhead:
    # the link's own share is 18.928 us; with 150 us of overhead nothing is left (0)
    assert float(transfer.break_even_latency(5 * 2**20, 20e9, 1e-3, 4, 0.0, 0.5, 100e-6)) == pytest.approx(18.928e-6)
    assert float(transfer.break_even_latency(5 * 2**20, 20e9, 1e-3, 4, 0.0, 0.5, 150e-6)) == 0.0
    lat = float(transfer.break_even_latency(5 * 2**20, 20e9, 1e-3, 4, 0.0, 0.5, 100e-6))
    assert float(transfer.fetch_time_s(5 * 2**20, 20e9, lat, 4, 0.0, 0.5, 100e-6)) == pytest.approx(1e-3, rel=1e-12)
