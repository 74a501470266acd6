"""kvtier.formulas.flash, by hand: the drives a flash tier buys."""

from __future__ import annotations

import math

import pytest

from kvtier.formulas.flash import flash_drives


def test_flash_drives_are_bought_for_capacity_write_rate_and_wear():
    # a 10 TB tier written at 2 GB/s on 4 TB drives that write 3 GB/s and take 1 drive write a day for 1,000 days:
    # capacity 10 / 4 = 2.5 -> 3 drives; bandwidth 2 / 3 -> 1; wear 2e9 x 86,400 / (1 x 4e12) = 43.2 -> 44 drives
    d = flash_drives(10e12, 2e9, 4e12, 3e9, 1.0, 1000 * 86400)
    assert (d.for_capacity, d.for_bandwidth, d.for_endurance, d.count) == (3, 1, 44, 44)
    assert d.flash_bytes == 44 * 4e12
    # flash of the tier's own size: 1 x 10e12 B x 1,000 days of rated writes / 2e9 B/s = 5e6 s (57.9 days)
    assert d.wearout_s == pytest.approx(5e6)
    # no writes: held for its capacity only, and it never wears
    idle = flash_drives(10e12, 0.0, 4e12, 3e9, 1.0, 1000 * 86400)
    assert (idle.count, idle.wearout_s) == (3, math.inf)
    # an exact multiple is not rounded up: 8 TB on 4 TB drives is 2
    assert flash_drives(8e12, 0.0, 4e12, 3e9, 1.0, 86400).for_capacity == 2
