"""kvtier.inputs.probe.ranges: a range keeps the spread or the band and the cap; the shipped sets hold together."""

from __future__ import annotations

import pytest

from kvtier.inputs.assumptions import check_consistency, load_assumptions
from kvtier.inputs.probe import ranges
from tests.conftest import ROOT


def test_widen_keeps_the_spread_or_the_band_and_the_cap():
    assert ranges.widen(100.0, 95.0, 104.0) == (90.0, pytest.approx(110.0))  # the spread inside +-10 %
    assert ranges.widen(100.0, 80.0, 130.0) == (80.0, 130.0)  # the spread beyond it
    assert ranges.widen(0.95, 0.93, 0.97, cap=1.0) == (pytest.approx(0.855), 1.0)  # 104.5 % capped at 100 %


def test_the_shipped_sets_hold_together():
    # both shipped sets pass the whole-set check; h200-measured needed ranges of its own for its x8 bracket
    # (27.57 GB/s below the seed's 32) and its MFUs (49.67 % to 78.53 %, beyond the seed's 50 %)
    check_consistency(load_assumptions())
    measured = load_assumptions(ROOT / "kvtier" / "data" / "h200-measured.yaml")
    check_consistency(measured)
    assert measured.value("uncertainty.bandwidth_low") == measured.value("bandwidth.pessimistic")
    assert measured.value("uncertainty.mfu_low") == measured.value("mfu.conservative")
    assert measured.value("uncertainty.mfu_high") == measured.value("mfu.optimistic")
