"""Values of kvtier.formulas.roofline worked out by hand, its ties and its whole error messages (issue 15)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kvtier.errors import KvtierError
from kvtier.formulas import roofline


def test_bytes_read_adds_the_cached_kv_it_attends_to():
    # 1.4e11 B x 16 / 64 + 327,680 B x 1000 positions = 3.5e10 + 327,680,000 = 35,327,680,000 B
    assert roofline.regen_bytes_read(1.4e11, 16, 64, 327_680, 1000) == pytest.approx(35_327_680_000, rel=1e-12)
    # a lone block at position 0 reads the weights once: 1.4e11 B
    assert roofline.regen_bytes_read(1.4e11, 16, 16, 327_680, 0) == pytest.approx(1.4e11, rel=1e-12)


def test_bytes_read_accepts_a_batch_equal_to_the_block():
    # batch == block is the lone block, allowed; batch 15 < block 16 is refused with the whole message
    assert roofline.regen_bytes_read(100.0, 16, 16, 1.0, 0) == 100.0
    with pytest.raises(KvtierError) as info:
        roofline.regen_bytes_read(100.0, 16, 15, 1.0, 0)
    assert str(info.value) == ("batch_tokens must be >= block_tokens (a lone block has batch_tokens == block_tokens)")


def test_whole_messages_for_non_positive_and_missing_values():
    with pytest.raises(KvtierError) as info:
        roofline.regen_bytes_read(100.0, 0, 16, 1.0, 0)
    assert str(info.value) == "block_tokens must be positive, got 0"
    with pytest.raises(KvtierError) as info:
        roofline.roofline_time_s(1.0, 1.0, float("nan"), 0.5, 1e12)
    assert str(info.value) == "peak_flop_per_s (a peak compute rate) is required: got a missing value (None or NaN)"
    with pytest.raises(KvtierError) as info:
        roofline.memory_time_s(1.0, -5.0)
    assert str(info.value) == "mem_bandwidth_bytes_per_s must be positive, got -5"


@pytest.mark.parametrize("bad", [0.0, 1.5, -0.25, float("nan")])
def test_mfu_outside_the_unit_interval_is_refused_whole(bad):
    with pytest.raises(KvtierError) as info:
        roofline.roofline_time_s(1.0, 1.0, 1e12, np.array([0.5, bad]), 1e12)
    assert str(info.value) == f"mfu must be in (0, 1], got {bad:g}"


@pytest.mark.parametrize("bad", [0.0, 1.01, float("nan")])
def test_mem_efficiency_outside_the_unit_interval_is_refused_whole(bad):
    with pytest.raises(KvtierError) as info:
        roofline.memory_time_s(1.0, 1e12, bad)
    assert str(info.value) == f"mem_efficiency must be in (0, 1], got {bad:g}"


def test_mfu_and_efficiency_of_exactly_one_are_allowed():
    # 1e12 FLOP / (1e12 FLOP/s x 1) = 1 s; 4.8e12 B / (4.8e12 B/s x 1) = 1 s
    assert roofline.roofline_time_s(1e12, 4.8e12, 1e12, 1.0, 4.8e12, 1.0) == 1.0
    assert roofline.memory_time_s(4.8e12, 4.8e12, 1.0) == 1.0


def test_memory_time_default_efficiency_is_one():
    # 1.4e11 B / 4.8e12 B/s = 0.0291666... s; at efficiency 0.5 twice that
    assert roofline.memory_time_s(1.4e11, 4.8e12) == pytest.approx(1.4e11 / 4.8e12, rel=1e-12)
    assert roofline.memory_time_s(1.4e11, 4.8e12, 0.5) == pytest.approx(2 * 1.4e11 / 4.8e12, rel=1e-12)


def test_roofline_time_is_the_larger_side():
    # compute 2.24e12 / (1e15 x 0.5) = 4.48e-3 s; memory 1.4e11 / (4.8e12 x 0.8) = 0.036458 s -> memory
    assert roofline.roofline_time_s(2.24e12, 1.4e11, 1e15, 0.5, 4.8e12, 0.8) == pytest.approx(
        1.4e11 / 3.84e12, rel=1e-12
    )
    # compute 2.24e15 / 5e14 = 4.48 s beats memory 0.02917 s (default efficiency 1)
    assert roofline.roofline_time_s(2.24e15, 1.4e11, 1e15, 0.5, 4.8e12) == pytest.approx(4.48, rel=1e-12)


def test_bound_labels_each_side_and_a_tie_is_compute():
    # compute 1 s (1e12 / 1e12 / 1), memory 2 s (2e12 / 1e12): memory
    assert roofline.bound(1e12, 2e12, 1e12, 1.0, 1e12).tolist() == "memory"
    # compute 2 s, memory 1 s: compute
    assert roofline.bound(2e12, 1e12, 1e12, 1.0, 1e12).tolist() == "compute"
    # both exactly 1 s: a tie counts as compute-bound (the docstring's rule)
    assert roofline.bound(1e12, 1e12, 1e12, 1.0, 1e12).tolist() == "compute"
    # default efficiency 1: memory 1.0 s against compute 1.0 s is a tie; at efficiency 0.5 memory binds
    assert roofline.bound(1e12, 1e12, 1e12, 1.0, 1e12, 0.5).tolist() == "memory"


def test_break_even_bandwidth_by_hand_and_its_edges():
    # 5,242,880 B / (0.01792 s - 0.001 s) = 5,242,880 / 0.01692 = 309,862,884.2 B/s
    assert roofline.break_even_bandwidth(5_242_880, 0.01792, 1e-3) == pytest.approx(5_242_880 / 0.01692, rel=1e-12)
    # default latency 0: 5,242,880 / 0.01792
    assert roofline.break_even_bandwidth(5_242_880, 0.01792) == pytest.approx(5_242_880 / 0.01792, rel=1e-12)
    # latency equal to the regeneration time: inf
    assert roofline.break_even_bandwidth(5_242_880, 0.01792, 0.01792) == math.inf
    # NaN in the size, or in the slack, gives NaN (not inf)
    assert np.isnan(roofline.break_even_bandwidth(float("nan"), 0.01792))
    assert np.isnan(roofline.break_even_bandwidth(5_242_880, 0.01792, float("nan")))
    assert np.isnan(roofline.break_even_bandwidth(5_242_880, float("nan")))


def test_compute_bound_batch_by_hand():
    # budget = 0.01 s x 4.8e12 B/s x 1 - 327,680 B x 1000 = 4.8e10 - 327,680,000 = 47,672,320,000 B
    # batch = 1.4e11 x 16 / 47,672,320,000 = 46.988... tokens
    assert roofline.compute_bound_batch_tokens(1.4e11, 16, 327_680, 1000, 0.01, 4.8e12) == pytest.approx(
        1.4e11 * 16 / 47_672_320_000, rel=1e-12
    )
    # efficiency 0.5: budget 2.4e10 - 327,680,000 = 23,672,320,000; 2.24e12 / that = 94.62 tokens
    assert roofline.compute_bound_batch_tokens(1.4e11, 16, 327_680, 1000, 0.01, 4.8e12, 0.5) == pytest.approx(
        2.24e12 / 23_672_320_000, rel=1e-12
    )


def test_compute_bound_batch_is_never_below_the_block_and_inf_when_kv_alone_is_too_slow():
    # a huge compute time: W x T / budget is tiny, so the block itself (16) is returned
    assert roofline.compute_bound_batch_tokens(1.4e11, 16, 327_680, 0, 1e6, 4.8e12) == 16.0
    # reading the cached KV takes 327,680 x 1e6 / 4.8e12 = 0.068 s > 0.01 s of compute: no batch helps
    assert roofline.compute_bound_batch_tokens(1.4e11, 16, 327_680, 1e6, 0.01, 4.8e12) == math.inf
    # a budget of exactly zero (4.8e10 - 4.8e10): inf too
    assert roofline.compute_bound_batch_tokens(1.4e11, 16, 4.8e7, 1000, 0.01, 4.8e12) == math.inf


def test_blended_time_by_hand():
    # p = 2: sqrt(3^2 + 4^2) = 5
    assert roofline.blended_time_s(3.0, 4.0, 2.0) == pytest.approx(5.0, rel=1e-12)
    # p = 1 is the sum: 3 + 4 = 7
    assert roofline.blended_time_s(3.0, 4.0, 1.0) == pytest.approx(7.0, rel=1e-12)
    # the knee at p = 2: 2 ** 0.5 x 3
    assert roofline.blended_time_s(3.0, 3.0, 2.0) == pytest.approx(3.0 * math.sqrt(2.0), rel=1e-12)
    # both sides zero: 0 (not NaN)
    assert roofline.blended_time_s(0.0, 0.0, 2.0) == 0.0
    # one side zero: the other
    assert roofline.blended_time_s(0.0, 4.0, 3.0) == pytest.approx(4.0, rel=1e-12)


def test_blended_time_whole_messages():
    with pytest.raises(KvtierError) as info:
        roofline.blended_time_s(1.0, 1.0, 0.5)
    assert str(info.value) == "sharpness must be >= 1, got 0.5"
    with pytest.raises(KvtierError) as info:
        roofline.blended_time_s(1.0, 1.0, float("nan"))
    assert str(info.value) == "sharpness must be >= 1, got nan"
    with pytest.raises(KvtierError) as info:
        roofline.blended_time_s(-1.0, 1.0, 2.0)
    assert str(info.value) == "compute_s and floor_s must not be negative"
    with pytest.raises(KvtierError) as info:
        roofline.blended_time_s(1.0, -1.0, 2.0)
    assert str(info.value) == "compute_s and floor_s must not be negative"
    # sharpness exactly 1 and times exactly 0 are allowed
    assert roofline.blended_time_s(0.0, 2.0, 1.0) == 2.0


def test_roofline_reads_arguments_as_float64():
    # 2**70 bytes over 2**70 B/s is 1 s, as a float64 array (not an object array)
    result = roofline.memory_time_s(2**70, 2**70)
    assert result.dtype == np.float64 and result == 1.0


def test_compute_bound_batch_with_a_budget_below_one_byte():
    # budget = 1 s x 1.5 B/s x 1 - 1 B x 1 position = 0.5 B; batch = 100 x 1 / 0.5 = 200 tokens
    assert roofline.compute_bound_batch_tokens(100.0, 1, 1.0, 1, 1.0, 1.5) == pytest.approx(200.0, rel=1e-12)


def test_blended_time_below_one_second():
    # p = 2: sqrt(0.3^2 + 0.4^2) = 0.5 s (each side divided by the larger, 0.4, then scaled back)
    assert roofline.blended_time_s(0.3, 0.4, 2.0) == pytest.approx(0.5, rel=1e-12)
    assert roofline.blended_time_s(0.4, 0.3, 2.0) == pytest.approx(0.5, rel=1e-12)


def test_break_even_bandwidth_of_infinite_time_less_infinite_latency_is_undefined():
    # the slack inf - inf is NaN, so the answer is NaN, not inf
    with np.errstate(invalid="ignore"):
        assert np.isnan(roofline.break_even_bandwidth(5_242_880, math.inf, math.inf))


def test_the_message_names_the_first_value_outside_the_interval():
    # 1.0 is allowed, so of [1.0, 1.5] the offending value is 1.5
    with pytest.raises(KvtierError) as info:
        roofline.roofline_time_s(1.0, 1.0, 1e12, np.array([1.0, 1.5]), 1e12)
    assert str(info.value) == "mfu must be in (0, 1], got 1.5"
