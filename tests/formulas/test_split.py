"""The split: a prefix's head computed while its tail is fetched, against the two pure strategies."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvtier.formulas import split, ttft
from kvtier.formulas.cache.regen import RegenCosts

# 1e9 active parameters x 2 FLOP, no attention term, on 1e15 FLOP/s at 50 %: 2e9 / 5e14 = 4 us a token inside a
# batch; a lone pass also reads 2e9 B of weights at 1e12 B/s, 2 ms, whatever its length
RC = RegenCosts(
    kv_bytes_per_token=1e5,
    active_params=1e9,
    flops_per_param_token=2.0,
    attention_flops_per_position=0.0,
    peak_flop_per_s=1e15,
    mfu=0.5,
    weight_bytes=2e9,
    mem_bandwidth_bytes_per_s=1e12,
    mem_efficiency=1.0,
)
# 1e5 B a token over 1e10 B/s, no latency, blocks of 16 tokens in one copy each: 10 us a token
FETCH = ttft.Fetch(
    bandwidth_bytes_per_s=1e10,
    latency_s=0.0,
    block_tokens=16,
    transfers_per_block=1,
    layers=4,
    overlap=False,
    link_bytes_per_token=1e5,
)


def test_inside_a_batch_the_head_and_tail_cross_where_the_hand_arithmetic_says() -> None:
    # a prefix of 1,600 tokens and 16 new ones: the head costs 4 us a token, the tail 10 us, so they cross at
    # 4e-6 s = 1e-5 (1600 - s): s = 0.016 / 1.4e-5 = 1,142.9 tokens, between the boundaries 1,136 and 1,152;
    # at 1,136 the tail (464 x 10 us = 4.64 ms) outlasts the head (4.544 ms), at 1,152 the head (4.608 ms) the
    # tail (4.48 ms): the best is 1,152, 4.608 ms + the 16 new tokens' 0.064 ms = 4.672 ms
    r = split.best_split(RC, FETCH, np.array([1600.0]), np.array([1616.0]), "batch")
    assert r.split_tokens == pytest.approx([1152.0])
    assert r.split_s == pytest.approx([4.672e-3])
    # the pure strategies: fetch 16 ms + 0.064 ms; regenerate 1,616 x 4 us = 6.464 ms; the split is 6.464 / 4.672 =
    # 1.3836 times faster than the better of them
    assert r.fetch_s == pytest.approx([16.064e-3]) and r.regenerate_s == pytest.approx([6.464e-3])
    assert r.gain == pytest.approx([6.464 / 4.672]) and r.strict.all()
    # the fastest way: the split; loading the 1,600 tokens layer by layer (4 layers) under the 0.064 ms prefill hides
    # the prefill under the 16 ms fetch: (16 + 0.064 + 3 x max(16, 0.064)) / 4 = 16.016 ms, slower still
    assert r.fastest(False) == ["split"] and r.fastest(True) == ["split"]
    assert r.overlap_s == pytest.approx([(16e-3 + 0.064e-3 + 3 * 16e-3) / 4])
    assert [r.head_s[0], r.tail_s[0], r.rest_s[0]] == pytest.approx([4.608e-3, 4.48e-3, 0.064e-3])
    # the closed form: 2 a n / ((beta + a) + sqrt((beta + a)^2)) with alpha = 0: 2 x 1e-5 x 1600 / 2.8e-5
    assert split.balanced_tokens_batch(RC, FETCH, np.array([1600.0])) == pytest.approx([0.032 / 2.8e-5])
    # and the exhaustive search agrees
    assert split.brute_force_split(RC, FETCH, 1600.0, 1616.0, "batch").split_tokens == pytest.approx([1152.0])
    # the head slowed by 25 % while the copies run (5 us a token): the crossing moves to 0.016 / 1.5e-5 = 1,066.7;
    # at 1,056 the tail (5.44 ms) outlasts the head (5.28 ms), at 1,072 the head (5.36 ms) the tail (5.28 ms):
    # 5.36 + 0.064 = 5.424 ms
    slowed = split.best_split(RC, FETCH, np.array([1600.0]), np.array([1616.0]), "batch", slowdown=0.25)
    assert slowed.split_tokens == pytest.approx([1072.0]) and slowed.split_s == pytest.approx([5.424e-3])


def test_a_lone_head_pays_the_weights_read_so_a_short_prefix_is_regenerated_and_a_long_one_split() -> None:
    # alone, every pass reads the 2e9 B of weights (2 ms) and the KV it attends to: a 160-token prefix and 16 new
    # tokens are one 2 ms pass (176 x 4 us = 0.704 ms of compute under it); fetching first costs 1.6 ms and then a
    # pass of 16 tokens that reads the weights and the prefix's 1.6e7 B of KV, 2.016 ms: 3.616 ms. Any split pays two
    # passes, so the best is the pure regeneration and the split gains nothing
    r = split.best_split(RC, FETCH, np.array([160.0]), np.array([176.0]), "lone")
    assert r.split_tokens == pytest.approx([160.0]) and not r.strict.any()
    assert r.split_s == pytest.approx([2e-3]) and r.regenerate_s == pytest.approx([2e-3])
    assert r.fetch_s == pytest.approx([3.616e-3]) and r.gain == pytest.approx([1.0])
    # a 16,000-token prefix: regenerating costs 16,016 x 4 us = 64.064 ms, fetching 160 ms + the last pass (weights
    # and 1.6e9 B of KV: 3.6 ms). The head (4 us a token, over its 2 ms read) meets the tail (10 us a token) at
    # 0.16 / 1.4e-5 = 11,428.6 tokens; on the boundaries 11,424 and 11,440 both take 45.76 ms, then the last pass:
    # 49.36 ms, 64.064 / 49.36 = 1.298 times faster than regenerating
    r = split.best_split(RC, FETCH, np.array([16_000.0]), np.array([16_016.0]), "lone")
    assert r.strict.all() and r.split_tokens[0] in (11_424.0, 11_440.0)
    assert r.split_s == pytest.approx([49.36e-3]) and r.regenerate_s == pytest.approx([64.064e-3])
    assert r.fetch_s == pytest.approx([163.6e-3]) and r.gain == pytest.approx([64.064 / 49.36])


def test_the_split_at_its_ends_is_the_two_pure_strategies() -> None:
    prefix, prompt = np.array([800.0, 1600.0]), np.array([900.0, 1616.0])
    for regime in ("batch", "lone"):
        r = split.best_split(RC, FETCH, prefix, prompt, regime)
        assert split.split_time_s(RC, FETCH, prefix, prompt, np.zeros(2), regime) == pytest.approx(r.fetch_s)
        assert split.split_time_s(RC, FETCH, prefix, prompt, prefix, regime) == pytest.approx(r.regenerate_s)


def test_no_prefix_is_regenerated_and_bad_sizes_are_refused() -> None:
    r = split.best_split(RC, FETCH, np.array([0.0]), np.array([100.0]), "batch")
    # nothing to fetch: 100 x 4 us
    assert r.split_s == pytest.approx([0.4e-3]) and r.split_tokens == pytest.approx([0.0])
    with pytest.raises(ValueError, match="prefix tokens <= prompt tokens"):
        split.best_split(RC, FETCH, np.array([10.0]), np.array([5.0]), "batch")


def test_the_closed_form_needs_the_analytic_model() -> None:
    engine = RegenCosts(**{**vars(RC), "engine_tokens": (0.0, 1e5), "engine_linear_s": (0.0, 1.0),
                           "engine_attention_s": (0.0, 0.0), "engine_batch_s": (0.0, 1.0)})  # fmt: skip
    with pytest.raises(ValueError, match="no closed form"):
        split.balanced_tokens_batch(engine, FETCH, np.array([100.0]))


@st.composite
def cases(draw):
    """A random model, accelerator, link, engine block, prefix and prompt, the engine model as often as not."""
    attention = draw(st.sampled_from([0.0, 1e3, 3e5]))
    weights = draw(st.floats(1e8, 1e11))
    engine = draw(st.booleans())
    extra = {}
    if engine:  # a measured-looking curve: affine in tokens, rising, as the kernel tables are
        slope = draw(st.floats(1e-7, 1e-4))
        extra = {
            "engine_tokens": (0.0, 1e6),
            "engine_linear_s": (draw(st.floats(0.0, 5e-3)), slope * 1e6),
            "engine_attention_s": (0.0, draw(st.floats(0.0, 10.0))),
            "engine_batch_s": (0.0, slope * 1e6),
        }
    rc = RegenCosts(
        kv_bytes_per_token=1e5,
        active_params=draw(st.floats(1e8, 1e11)),
        flops_per_param_token=2.0,
        attention_flops_per_position=attention,
        peak_flop_per_s=draw(st.floats(1e14, 5e15)),
        mfu=draw(st.floats(0.05, 0.9)),
        weight_bytes=weights,
        mem_bandwidth_bytes_per_s=draw(st.floats(1e11, 8e12)),
        mem_efficiency=1.0,
        **extra,
    )
    fetch = ttft.Fetch(
        bandwidth_bytes_per_s=draw(st.floats(1e9, 4e11)),
        latency_s=draw(st.floats(0.0, 1e-4)),
        block_tokens=draw(st.sampled_from([16, 64, 256, 512])),
        transfers_per_block=draw(st.sampled_from([1, 2, 80, 160])),
        layers=80,
        overlap=False,
        link_bytes_per_token=draw(st.floats(1e3, 1e6)),
        min_transfer_s=draw(st.sampled_from([0.0, 5e-6])),
        efficiency=draw(st.floats(0.3, 1.0)),
    )
    prefix = float(draw(st.integers(0, 20_000)))
    prompt = prefix + draw(st.integers(0, 4_000))
    return rc, fetch, prefix, prompt, draw(st.sampled_from(["batch", "lone"])), draw(st.sampled_from([0.0, 0.043, 0.2]))


@settings(max_examples=150, deadline=None)
@given(cases())
def test_the_bisection_finds_the_exhaustive_searchs_best_and_never_loses_to_a_pure_strategy(case) -> None:
    rc, fetch, prefix, prompt, regime, slowdown = case
    r = split.best_split(rc, fetch, np.array([prefix]), np.array([prompt]), regime, slowdown)
    brute = split.brute_force_split(rc, fetch, prefix, prompt, regime, slowdown)
    assert r.split_s == pytest.approx(brute.split_s, rel=1e-12, abs=1e-15)
    assert r.split_s[0] <= min(r.fetch_s[0], r.regenerate_s[0]) * (1 + 1e-12)
    ends = [split.split_time_s(rc, fetch, [prefix], [prompt], [s], regime, slowdown) for s in (0.0, prefix)]
    assert ends[0] == pytest.approx(r.fetch_s, rel=1e-12) and ends[1] == pytest.approx(r.regenerate_s)


@settings(max_examples=100, deadline=None)
@given(cases())
def test_inside_a_batch_the_closed_form_lies_within_a_block_of_the_crossing(case) -> None:
    rc, fetch, prefix, _, _, _ = case
    if rc.engine or fetch.min_transfer_s > 0 or prefix == 0:
        return
    # a prefix of whole blocks: its tail's copies are then (n - s) / b at every boundary, as the closed form counts
    prefix = float(np.ceil(prefix / fetch.block_tokens) * fetch.block_tokens)
    s_star = float(split.balanced_tokens_batch(rc, fetch, np.array([prefix]))[0])
    # the first block boundary where the head outlasts the tail is the boundary at or just above the crossing
    k = np.arange(int(np.ceil(prefix / fetch.block_tokens)) + 1, dtype=float)
    s = np.minimum(k * fetch.block_tokens, prefix)
    ahead = split.head_s(rc, s, "batch") >= fetch.time_s(prefix - s)
    first = float(s[int(np.argmax(ahead))])
    assert first - fetch.block_tokens - 1e-6 <= s_star <= first + 1e-6
