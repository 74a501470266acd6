"""kvtier.formulas.roofline: values by hand, ties, properties and whole error messages."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kvtier import load_model
from kvtier.errors import KvtierError
from kvtier.formulas import costs, roofline
from kvtier.inputs import hardware
from tests.conftest import BLOCK70, W70


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


# Llama-3 70B as the source chapter counts it: nominal 70e9 parameters in bf16
P70 = 70e9


KV70 = 327_680  # 2 (K,V) x 80 layers x 8 KV heads x 128 head_dim x 2 B


# Llama-3 8B from its published config
P8 = 8_030_261_248


W8 = 16_060_522_496  # 8,030,261,248 params x 2 B


KV8 = 131_072  # 2 x 32 layers x 8 KV heads x 128 head_dim x 2 B = 128 KiB


# ---------------------------------------------------------------------------
# Roofline: limits and properties
# ---------------------------------------------------------------------------

times = st.floats(min_value=1e-7, max_value=10.0, allow_nan=False)


sizes = st.floats(min_value=1.0, max_value=1e12, allow_nan=False)


fractions = st.floats(min_value=0.01, max_value=1.0)


# ---------------------------------------------------------------------------
# Roofline: worked examples
# ---------------------------------------------------------------------------


def test_llama3_70b_lone_block_on_h100_is_memory_bound():
    h100 = hardware.accelerator("h100-sxm")
    peak, hbm = h100.peak_flop_per_s, h100.mem_bandwidth_bytes_per_s
    flops = costs.forward_flops(16, P70)  # 2 x 70e9 x 16 = 2.24e12 FLOP
    # lone block: batch_tokens == block_tokens, so the block pays for all 140e9 B of weights;
    # the tail block at position 0 reads no cached KV
    read = roofline.regen_bytes_read(W70, 16, 16, KV70, 0)
    assert float(read) == 140e9
    # compute: 2.24e12 / (989e12 x 0.25) = 2.24e12 / 2.4725e14 = 9.06 ms
    compute = costs.compute_time_s(flops, h100.peak_flop_per_s, 0.25)
    assert float(compute) == pytest.approx(9.0597e-3, rel=1e-4)
    # memory: 140e9 / (3.35e12 x 1.0) = 41.79 ms
    memory = roofline.memory_time_s(read, h100.mem_bandwidth_bytes_per_s)
    assert float(memory) == pytest.approx(41.791e-3, rel=1e-4)
    # roofline = max(9.06, 41.79) ms = 41.79 ms, memory-bound
    assert float(roofline.roofline_time_s(flops, read, peak, 0.25, hbm)) == pytest.approx(140e9 / 3.35e12, rel=1e-12)
    assert str(roofline.bound(flops, read, peak, 0.25, hbm)) == "memory"


def test_llama3_70b_batched_block_on_h100_is_compute_bound():
    h100 = hardware.accelerator("h100-sxm")
    peak, hbm = h100.peak_flop_per_s, h100.mem_bandwidth_bytes_per_s
    flops = 2 * P70 * 16  # 2.24e12 FLOP
    # 4096 tokens share one weight read: 140e9 x 16 / 4096 = 546,875,000 B = 546.9 MB
    read = roofline.regen_bytes_read(W70, 16, 4096, KV70, 0)
    assert float(read) == pytest.approx(546_875_000, rel=1e-12)
    # memory: 546.875e6 / 3.35e12 = 0.1632 ms < compute 9.06 ms -> compute-bound
    assert float(roofline.memory_time_s(read, 3.35e12)) == pytest.approx(0.16325e-3, rel=1e-4)
    assert str(roofline.bound(flops, read, peak, 0.25, hbm)) == "compute"
    # and then the roofline is exactly the chapter's MFU model: 2.24e12 / (989e12 x 0.25)
    assert float(roofline.roofline_time_s(flops, read, peak, 0.25, hbm)) == float(
        costs.compute_time_s(flops, 989e12, 0.25)
    )


def test_llama3_8b_interior_block_on_h200():
    model = load_model("llama-3-8b")
    assert model.total_params == P8
    assert model.kv_bytes_per_token("bf16") == KV8
    h200 = hardware.accelerator("h200")
    peak, hbm = h200.peak_flop_per_s, h200.mem_bandwidth_bytes_per_s
    flops = costs.forward_flops(16, P8)  # 2 x 8,030,261,248 x 16 = 256,968,359,936 FLOP
    assert float(flops) == 256_968_359_936
    # lone block at position 4096, prefix resident: 16,060,522,496 B weights + 131,072 x 4096 = 536,870,912 B KV
    read = roofline.regen_bytes_read(W8, 16, 16, KV8, 4096)
    assert float(read) == 16_597_393_408  # 16,060,522,496 + 536,870,912
    # compute: 256,968,359,936 / (989e12 x 0.40) = 0.6496 ms
    assert float(costs.compute_time_s(flops, 989e12, 0.40)) == pytest.approx(0.64956e-3, rel=1e-4)
    # memory: 16,597,393,408 / 4.8e12 = 3.4578 ms -> memory-bound
    assert float(roofline.roofline_time_s(flops, read, peak, 0.40, hbm)) == pytest.approx(3.4578e-3, rel=1e-4)
    assert str(roofline.bound(flops, read, peak, 0.40, hbm)) == "memory"
    # batch of 8192 tokens: 16,060,522,496 x 16 / 8192 = 31,368,208 B weights + 536,870,912 B KV
    # = 568,239,120 B -> 568,239,120 / 4.8e12 = 0.1184 ms < 0.6496 ms -> compute-bound
    batched = roofline.regen_bytes_read(W8, 16, 8192, KV8, 4096)
    assert float(batched) == 568_239_120
    assert float(roofline.memory_time_s(batched, 4.8e12)) == pytest.approx(0.11838e-3, rel=1e-4)
    assert str(roofline.bound(flops, batched, peak, 0.40, hbm)) == "compute"
    # at half the memory efficiency the memory side doubles: 0.2368 ms, still compute-bound
    assert float(roofline.memory_time_s(batched, 4.8e12, 0.5)) == pytest.approx(0.23675e-3, rel=1e-4)


def test_break_even_bandwidth_examples():
    # chapter's conservative regeneration, 17.92 ms: 5,242,880 B / 17.92e-3 s = 292.57 MB/s
    assert float(roofline.break_even_bandwidth(BLOCK70, 17.92e-3)) == pytest.approx(292.571e6, rel=1e-5)
    # lone 70B block on an H100 under the roofline, 140e9 / 3.35e12 = 41.79 ms:
    # 5,242,880 x 3.35e12 / 140e9 = 125.45 MB/s
    assert float(roofline.break_even_bandwidth(BLOCK70, 140e9 / 3.35e12)) == pytest.approx(125.455e6, rel=1e-5)
    # with latency: 5,242,880 / (1 ms - 60 us) = 5,242,880 / 0.94e-3 = 5.5775 GB/s
    assert float(roofline.break_even_bandwidth(BLOCK70, 1e-3, 60e-6)) == pytest.approx(5.57753e9, rel=1e-5)
    # latency >= regeneration time: no bandwidth makes fetching win
    assert float(roofline.break_even_bandwidth(BLOCK70, 1e-3, 1e-3)) == math.inf
    assert float(roofline.break_even_bandwidth(BLOCK70, 1e-3, 2e-3)) == math.inf
    assert math.isnan(float(roofline.break_even_bandwidth(BLOCK70, math.nan)))


@given(sizes, times)
def test_break_even_times_regen_time_is_block_bytes(block, regen):
    # fetch time at the break-even bandwidth equals the regeneration time
    bw = roofline.break_even_bandwidth(block, regen)
    assert float(bw * regen) == pytest.approx(block, rel=1e-12)
    assert float(costs.fetch_time_s(block, bw)) == pytest.approx(regen, rel=1e-12)


@given(sizes, times, st.floats(0.0, 0.99))
def test_break_even_with_latency_equalizes_fetch_and_regen(block, regen, latency_share):
    latency = regen * latency_share
    bw = roofline.break_even_bandwidth(block, regen, latency)
    assert float(costs.fetch_time_s(block, bw, latency)) == pytest.approx(regen, rel=1e-9)


@given(sizes, times, times)
def test_break_even_falls_as_regeneration_slows(block, r1, r2):
    lo, hi = sorted((r1, r2))
    assert roofline.break_even_bandwidth(block, hi) <= roofline.break_even_bandwidth(block, lo)
    # and rises with latency
    assert roofline.break_even_bandwidth(block, hi, lo / 2) >= roofline.break_even_bandwidth(block, hi)


@given(st.floats(1e9, 1e16), sizes, fractions, fractions)
def test_roofline_is_the_mfu_model_when_compute_bound(flops, n_bytes, mfu, eff):
    t = roofline.roofline_time_s(flops, n_bytes, 989e12, mfu, 3.35e12, eff)
    mfu_model = costs.compute_time_s(flops, 989e12, mfu)
    assert t >= mfu_model
    assert t >= n_bytes / (3.35e12 * eff)
    if str(roofline.bound(flops, n_bytes, 989e12, mfu, 3.35e12, eff)) == "compute":
        assert float(t) == float(mfu_model)
    # no bytes read: always the MFU model
    assert float(roofline.roofline_time_s(flops, 0.0, 989e12, mfu, 3.35e12, eff)) == float(mfu_model)


@given(st.floats(1e9, 1e16), st.floats(1e9, 1e16), sizes, sizes, fractions, fractions)
def test_roofline_grows_with_work_and_bytes(f1, f2, b1, b2, mfu, eff):
    f_lo, f_hi = sorted((f1, f2))
    b_lo, b_hi = sorted((b1, b2))
    args = (989e12, mfu, 3.35e12, eff)
    assert roofline.roofline_time_s(f_lo, b_lo, *args) <= roofline.roofline_time_s(f_hi, b_lo, *args)
    assert roofline.roofline_time_s(f_lo, b_lo, *args) <= roofline.roofline_time_s(f_lo, b_hi, *args)


@given(fractions, fractions, st.floats(1e11, 1e13), st.floats(1e11, 1e13))
def test_roofline_falls_as_hardware_improves(m1, m2, bw1, bw2):
    m_lo, m_hi = sorted((m1, m2))
    bw_lo, bw_hi = sorted((bw1, bw2))
    flops, n_bytes = 2.24e12, 140e9
    assert roofline.roofline_time_s(flops, n_bytes, 989e12, m_hi, bw_lo) <= roofline.roofline_time_s(
        flops, n_bytes, 989e12, m_lo, bw_lo
    )
    assert roofline.roofline_time_s(flops, n_bytes, 989e12, m_lo, bw_hi) <= roofline.roofline_time_s(
        flops, n_bytes, 989e12, m_lo, bw_lo
    )


@given(st.integers(1, 1024), st.integers(0, 1_000_000), st.integers(0, 1_000_000))
def test_weight_share_falls_with_batch(block, extra1, extra2):
    small, large = sorted((block + extra1, block + extra2))
    assert roofline.regen_bytes_read(W70, block, large, KV70, 1000) <= roofline.regen_bytes_read(
        W70, block, small, KV70, 1000
    )
    # the lone block pays the whole weight read, plus its KV
    assert float(roofline.regen_bytes_read(W70, block, block, KV70, 1000)) == W70 + KV70 * 1000


def test_bad_roofline_inputs_raise():
    with pytest.raises(KvtierError, match="batch_tokens must be >= block_tokens"):
        roofline.regen_bytes_read(W70, 16, 8, KV70, 0)
    with pytest.raises(KvtierError, match="block_tokens must be positive"):
        roofline.regen_bytes_read(W70, 0, 8, KV70, 0)
    with pytest.raises(KvtierError, match=r"mfu must be in \(0, 1\], got 1.5"):
        roofline.roofline_time_s(2.24e12, W70, 989e12, 1.5, 3.35e12)
    with pytest.raises(KvtierError, match=r"mem_efficiency must be in \(0, 1\], got 0"):
        roofline.roofline_time_s(2.24e12, W70, 989e12, 0.5, 3.35e12, 0.0)
    with pytest.raises(KvtierError, match="mem_bandwidth_bytes_per_s must be positive"):
        roofline.roofline_time_s(2.24e12, W70, 989e12, 0.5, -1.0)
    with pytest.raises(KvtierError, match="peak_flop_per_s .* is required"):
        roofline.roofline_time_s(2.24e12, W70, None, 0.5, 3.35e12)
    with pytest.raises(KvtierError, match="peak_flop_per_s .* must be positive"):
        roofline.roofline_time_s(2.24e12, W70, 0.0, 0.5, 3.35e12)


def test_vectorized_equals_scalar():
    mfu = np.array([0.25, 0.4, 0.5])[:, None, None]
    batch = np.array([16, 256, 4096, 65536])[None, :, None]
    accs = [hardware.accelerator(n) for n in ("h100-sxm", "h200", "b200", "chapter-implied")]
    peak = np.array([a.peak_flop_per_s for a in accs])[None, None, :]
    bw = np.array([a.mem_bandwidth_bytes_per_s for a in accs])[None, None, :]
    flops = 2 * P70 * 16
    read = roofline.regen_bytes_read(W70, 16, batch, KV70, 50_000)
    grid = roofline.roofline_time_s(flops, read, peak, mfu, bw, 0.8)
    which = roofline.bound(flops, read, peak, mfu, bw, 0.8)
    even = roofline.break_even_bandwidth(BLOCK70, grid, 0.5e-6)
    assert grid.shape == which.shape == even.shape == (3, 4, 4)
    for i, m in enumerate(mfu.ravel()):
        for j, b in enumerate(batch.ravel()):
            for k, acc in enumerate(accs):
                r = float(roofline.regen_bytes_read(W70, 16, int(b), KV70, 50_000))
                hw = (acc.peak_flop_per_s, float(m), acc.mem_bandwidth_bytes_per_s, 0.8)
                t = float(roofline.roofline_time_s(flops, r, *hw))
                assert grid[i, j, k] == t
                assert which[i, j, k] == str(roofline.bound(flops, r, *hw))
                assert even[i, j, k] == float(roofline.break_even_bandwidth(BLOCK70, t, 0.5e-6))
    # the grid spans both regimes: lone blocks memory-bound, large batches compute-bound
    assert set(which.ravel()) == {"compute", "memory"}


def test_the_blended_time():
    # p = 2: sqrt(3^2 + 4^2) = 5; equal sides: 2^(1/p) x either; large p: the plain maximum
    assert roofline.blended_time_s(3.0, 4.0, 2.0) == pytest.approx(5.0)
    assert roofline.blended_time_s(1.0, 1.0, 4.0) == pytest.approx(2**0.25)
    assert roofline.blended_time_s(1.0, 100.0, 3.75) == pytest.approx(100.0, rel=1e-6)
    assert roofline.blended_time_s(0.0, 0.0, 2.0) == 0.0
    assert roofline.blended_time_s([1.0, 3.0], [1.0, 4.0], 1.0).tolist() == [2.0, 7.0]  # p = 1: the sum
    with pytest.raises(KvtierError, match="sharpness must be >= 1, got 0.5"):
        roofline.blended_time_s(1.0, 1.0, 0.5)
    with pytest.raises(KvtierError, match="must not be negative"):
        roofline.blended_time_s(-1.0, 1.0, 2.0)


def test_the_lone_knee_by_hand():
    # Llama-3-70B's 140e9 B of weights at 3.35e12 B/s x 80 % = 2.68e12 B/s: 52.2388 ms a read.  At
    # 500e12 FLOP/s x 25 % = 1.25e14 FLOP/s, k N = 2 x 70e9 = 1.4e11 FLOP a token, so the compute of
    # n tokens takes as long at n = 0.0522388 s x 1.25e14 / 1.4e11 = 1.75e25 / 3.752e23 = 46.64 tokens
    n = roofline.lone_knee_tokens(140e9, 3.35e12, 0.8, 500e12, 0.25, 70e9)
    assert float(n) == pytest.approx(1.75e25 / 3.752e23, rel=1e-12)
    assert float(n) == pytest.approx(46.6418, rel=1e-5)
    # there the two sides of the roofline meet; k = 3 FLOP a parameter-token moves the knee to 2/3 of it
    compute = costs.compute_time_s(costs.forward_flops(n, 70e9), 500e12, 0.25)
    assert float(compute) == pytest.approx(float(roofline.memory_time_s(140e9, 3.35e12, 0.8)), rel=1e-12)
    assert float(roofline.lone_knee_tokens(140e9, 3.35e12, 0.8, 500e12, 0.25, 70e9, 3.0)) == pytest.approx(
        float(n) * 2 / 3, rel=1e-12
    )
    # the memory side's checks hold here too
    with pytest.raises(KvtierError, match="mem_efficiency must be in"):
        roofline.lone_knee_tokens(140e9, 3.35e12, 1.5, 500e12, 0.25, 70e9)


def test_bound_checks_the_compute_side_as_the_roofline_does():
    # bound and roofline_time_s share one checked compute side (costs.compute_time_s inside)
    with pytest.raises(KvtierError, match=r"peak_flop_per_s \(a peak compute rate\) is required"):
        roofline.bound(1.0, 1.0, float("nan"), 0.5, 1e12)
    with pytest.raises(KvtierError, match=r"mfu must be in \(0, 1\], got 1.5"):
        roofline.bound(1.0, 1.0, 1e12, 1.5, 1e12)


def test_with_every_keyword_at_its_default_it_is_the_chapters_roofline_exactly():
    flops = np.array([1e12, 5e14])
    args = (flops, 1.4e11, 989e12, 0.5, 3.35e12, 0.8)
    # byte-identical, not approximately: the seed set's tables of record depend on it
    assert np.array_equal(roofline.forward_pass_time_s(*args), roofline.roofline_time_s(*args))


def test_the_forward_pass_by_hand():
    # compute = 1e12 / (1e15 x 0.5) = 2 ms; memory = 1e10 / (1e12 x 0.5) + 10 x 0.1 ms = 20 + 1 = 21 ms;
    # launch = 10 x 3 ms = 30 ms; floor = max(21, 30) = 30 ms; p = 1: the sum 2 + 30 = 32 ms; + serial 5 ms = 37 ms
    t = roofline.forward_pass_time_s(
        1e12,
        1e10,
        1e15,
        0.5,
        1e12,
        0.5,
        layers=10,
        mem_overhead_per_layer_s=1e-4,
        launch_floor_per_layer_s=3e-3,
        sharpness=1.0,
        serial_s=5e-3,
    )
    assert float(t) == pytest.approx(37e-3, rel=1e-12)
    # a block of a quarter of the pass: memory 20 ms (bytes given already shared) + 0.25 ms, launch 7.5 ms;
    # p = 2: sqrt(2^2 + 20.25^2) = 20.3485... ms
    t = roofline.forward_pass_time_s(
        1e12, 1e10, 1e15, 0.5, 1e12, 0.5, layers=10, mem_overhead_per_layer_s=1e-4,
        launch_floor_per_layer_s=3e-3, sharpness=2.0, share=0.25,
    )  # fmt: skip
    assert float(t) == pytest.approx(math.hypot(2e-3, 20.25e-3), rel=1e-12)


def test_attention_by_hand_and_none_without_cached_kv():
    # 80 layers x 50 us + 1.6e8 B / (4.8e12 B/s x 0.05) = 4 ms + 0.6667 ms
    t = roofline.attention_time_s(np.array([1.6e8, 0.0]), 80, 50e-6, 4.8e12, 0.05)
    assert t[0] == pytest.approx(4e-3 + 1.6e8 / 2.4e11, rel=1e-12)
    assert t[1] == 0.0  # a pass over fresh tokens: its attention calls are inside its other terms


def test_a_sharpness_below_1_is_refused():
    with pytest.raises(KvtierError, match="sharpness must be >= 1"):
        roofline.forward_pass_time_s(1e12, 1e10, 1e15, 0.5, 1e12, 0.5, sharpness=0.5)
