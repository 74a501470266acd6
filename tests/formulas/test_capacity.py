"""kvtier.formulas.capacity: the KV share of device memory and the crossover, worked out by hand."""

from __future__ import annotations

import numpy as np
import pytest

from kvtier.formulas import capacity
from tests.conftest import KV_70B


def test_capacity_by_hand():
    # weights: 70e9 x 2 B = 1.4e11 B
    assert capacity.weight_bytes(70e9, 2) == pytest.approx(1.4e11, rel=1e-12)
    # 128K context: 131,072 x 327,680 B = 42,949,672,960 B (exactly 40 GiB)
    assert capacity.kv_bytes(131_072, KV_70B) == 42_949_672_960
    # share: 42,949,672,960 / 1.4e11 = 0.306783378...
    assert capacity.kv_share_of_weights(131_072, KV_70B, 1.4e11) == pytest.approx(42_949_672_960 / 1.4e11, rel=1e-12)
    # crossover: 1.4e11 / 327,680 = 427,246.09375 tokens
    assert capacity.crossover_context_tokens(1.4e11, KV_70B) == pytest.approx(427_246.09375, rel=1e-12)


def test_capacity_results_are_float64_even_from_integers():
    # integer inputs whose product overflows int64 (2**40 x 2**30 = 2**70) stay exact in float64
    assert capacity.kv_bytes(2**40, 2**30) == 2.0**70
    assert capacity.weight_bytes(2**40, 2**30) == 2.0**70
    assert capacity.kv_bytes(2, 3).dtype == np.float64


@pytest.mark.parametrize(
    ("function", "args"),
    [
        (capacity.weight_bytes, (70e9, 2)),
        (capacity.kv_bytes, (131_072, KV_70B)),
        (capacity.kv_share_of_weights, (131_072, KV_70B, 1.4e11)),
        (capacity.crossover_context_tokens, (1.4e11, KV_70B)),
    ],
)
def test_capacity_reads_every_argument_as_float64(function, args):
    # a Python integer beyond int64 (2**70) in any one position still gives a float64 array
    # (numpy would hold it as an object array if that argument were not converted to float64)
    for i in range(len(args)):
        changed = list(args)
        changed[i] = 2**70
        result = function(*changed)
        assert result.dtype == np.float64, (function.__name__, i)
