"""The cost page's LRU tiers: a 95 % tier in host DRAM and on NVMe, by hand for the conversation trace."""

from __future__ import annotations

import numpy as np
import pytest

from kvtier.report.pages.cost import tiers
from kvtier.scenario import Scenario


def test_the_lru_tier_by_hand_for_the_conversation_trace():
    df = tiers.lru_table(Scenario())
    dram = df[(df["target"] == "95%") & (df["tier"] == "pcie5-x16")].iloc[0]
    # 37,645 blocks x 512 tokens x 327,680 B = 6.3158e12 B = 5,882.0 GiB, its peak occupancy
    assert dram["capacity_GiB"] == pytest.approx(37_645 * 512 * 327_680 / 2**30, rel=1e-12)
    # holding it in host DRAM: 6.3158e12 B x 6.7126e-17 USD/(B s) x 3600 s = 1.5262 USD/h
    assert dram["hold_usd_per_h"] == pytest.approx(1.5262, rel=1e-4)
    # recomputation avoided 20.4531 accelerators x 3 USD/h = 61.359 USD/h; less fetches and holding: 59.61 USD/h
    assert dram["recompute_avoided_batch_usd_per_h"] == pytest.approx(61.359, rel=1e-4)
    assert dram["saved_batch_usd_per_h"] == pytest.approx(61.359 - 1.5262 - dram["fetch_usd_per_h"], rel=1e-4)
    nvme = df[(df["target"] == "95%") & (df["tier"] == "nvme-gen4-x4")].iloc[0]
    # every miss written once, a whole block: 188,042 missed blocks (288,500 references less 100,458 hits) x 512
    # tokens x 327,680 B / 3,536.999 s
    # = 8.9195 GB/s against a 5.6 GB/s drive = 159.3 %; reads keep its link 76.4 % busy:
    # 4.7628 GB/s / 7 GB/s = 68.04 % for the bytes, plus 4.7628e9 / (16 x 327,680 B) = 908.4 copies/s of the
    # serving engine's 16-token blocks x 92 us (tier_latency.nvme, one read a copy) = 8.36 % (each request's prefix
    # is ceil(tokens / 16) copies, its last one partly filled: within 1e-5 of bytes over full blocks)
    assert nvme["write_GBps"] == pytest.approx(188_042 * 512 * 327_680 / 3_536.999 / 1e9, rel=1e-6)
    assert nvme["write_busy_pct"] == pytest.approx(8.9195 / 5.6 * 100, rel=1e-4)
    assert nvme["read_GBps"] == pytest.approx(4.7628, rel=1e-4)
    assert nvme["read_busy_pct"] == pytest.approx(
        (nvme["read_GBps"] / 7 + nvme["read_GBps"] * 1e9 / (16 * 327_680) * 92e-6) * 100, rel=1e-5
    )
    # 8.9195e9 B/s x 86,400 s / 6.3158e12 B = 122.02 drive writes a day, against 1 for 5 years: 12,202 %
    assert nvme["drive_writes_per_day"] == pytest.approx(122.02, rel=1e-4)
    assert nvme["nvme_wear_pct"] == pytest.approx(12_202, rel=1e-4)
    assert np.isnan(dram["nvme_wear_pct"])
