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


def test_the_link_efficiency_multiplies_what_applies():
    from kvtier.formulas import transfer

    assert float(transfer.link_efficiency(False, 0.22, False, 0.9)) == 1.0
    assert float(transfer.link_efficiency(True, 0.22, False, 0.9)) == 0.22
    assert float(transfer.link_efficiency(True, 0.22, True, 0.9)) == pytest.approx(0.198, rel=1e-12)
