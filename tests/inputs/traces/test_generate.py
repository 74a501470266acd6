"""kvtier.inputs.traces.generate: the seeded generator of traces and its JSONL."""

from __future__ import annotations

import math

import numpy as np

from kvtier.formulas.cache.curve import Reuse
from kvtier.formulas.cache.trace import Trace
from kvtier.inputs import traces


def conversation(n: int, **kw) -> tuple[Trace, list[list[int]]]:
    t = traces.generate_trace(n, **kw)
    return t, [t.blocks[a:b].tolist() for a, b in zip(t.starts[:-1], t.starts[1:], strict=True)]


# ---------------------------------------------------------------------------
# the generator
# ---------------------------------------------------------------------------


def test_generated_traces_are_seeded_valid_and_prefix_shaped():
    a = traces.generate_trace(300, seed=3)
    b = traces.generate_trace(300, seed=3)
    assert np.array_equal(a.blocks, b.blocks) and np.array_equal(a.timestamps_s, b.timestamps_s)
    assert not np.array_equal(a.blocks, traces.generate_trace(300, seed=4).blocks)
    again = traces.parse_trace("\n".join(traces.to_jsonl(a)), "generated", a.block_tokens)
    assert np.array_equal(again.blocks, a.blocks) and np.array_equal(again.input_tokens, a.input_tokens)
    r = Reuse.of(again)
    assert r.requests_with_a_distance_that_falls == 0 and 0 < float(r.hit_ratio()) < 1
    assert math.isclose(float(r.hit_ratio(r.capacity_for(1.0))), float(r.hit_ratio()))


# ---------------------------------------------------------------------------
# the generator and its JSONL
# ---------------------------------------------------------------------------


def test_generate_trace_defaults_are_the_documented_ones():
    # with 9,000 requests one conversation would grow to 257 blocks (at request 5,507): max_blocks 256 starts it afresh
    n = 9_000
    t = traces.generate_trace(n)
    explicit = traces.generate_trace(
        n,
        seed=0,
        n_prefixes=1_000,
        skew=1.1,
        shared_blocks=4,
        new_blocks=(1, 40),
        rate_per_s=10.0,
        max_blocks=256,
        block_tokens=512,
    )
    assert t.name == explicit.name == "generated(seed=0)"
    assert t.block_tokens == 512
    for field in ("timestamps_s", "input_tokens", "output_tokens", "starts", "blocks"):
        assert np.array_equal(getattr(t, field), getattr(explicit, field)), field
    # no prompt past max_blocks
    assert int(np.diff(t.starts).max()) <= 256
    # Poisson arrivals at 10/s: 8,999 gaps of mean 0.1 s -> about 899.9 s (sd sqrt(8,999) x 0.1 = 9.5 s)
    assert 850 < t.duration_s < 950


def test_generated_conversations_grow_by_one_turn_up_to_max_blocks():
    # one prefix of 1 block (raw id 0), one new block a request (raw ids 1, 2, 3, ... in request order), so
    # the dense ids are the raw ids; max_blocks 3: a fresh prompt is [0, r + 1], a grown one [0, r, r + 1]
    t, prompts = conversation(400, seed=7, n_prefixes=1, shared_blocks=1, new_blocks=(1, 1), max_blocks=3)
    assert t.name == "generated(seed=7)"
    assert prompts[0] == [0, 1]
    grown = eligible = 0
    for r in range(1, 400):
        if len(prompts[r - 1]) == 2:
            # the previous turn can be extended: 1 + 1 + 1 = 3 <= 3 blocks
            eligible += 1
            assert prompts[r] in ([0, r + 1], [0, r, r + 1])
            grown += len(prompts[r]) == 3
        else:
            # 1 + 2 + 1 = 4 > 3: start afresh from the shared prefix
            assert prompts[r] == [0, r + 1]
    # half the requests extend: about 0.5 of those that can (sd 0.5 / sqrt(eligible ~ 266) = 0.03)
    assert 0.4 < grown / eligible < 0.6
    assert t.n_unique == 401 and t.blocks.tolist() == [b for p in prompts for b in p]


def test_generated_prompts_take_new_blocks_from_the_whole_range():
    # max_blocks 1: no prompt grows; each is its 1 shared block plus 2 to 5 new ones: 3 to 6 blocks, every size
    t, prompts = conversation(200, seed=2, n_prefixes=1, shared_blocks=1, new_blocks=(2, 5), max_blocks=1)
    assert sorted({len(p) for p in prompts}) == [3, 4, 5, 6]
    assert all(p[0] == 0 for p in prompts)
    # new blocks (3, 3): always 1 + 3 = 4
    _, prompts = conversation(50, seed=2, n_prefixes=1, shared_blocks=1, new_blocks=(3, 3), max_blocks=1)
    assert {len(p) for p in prompts} == {4}
    # two shared blocks: prompts start [0, 1]
    _, prompts = conversation(20, seed=2, n_prefixes=1, shared_blocks=2, new_blocks=(1, 1), max_blocks=1)
    assert all(p[:2] == [0, 1] and len(p) == 3 for p in prompts)


def test_generated_prefixes_are_picked_with_the_zipf_weights():
    # two prefixes of 1 block (raw ids 0 and 1), skew 2 (an int): weights 1 and 2**-2 = 0.25,
    # so prefix 0 takes 1 / 1.25 = 0.8 of 2,000 requests: 1,600 (sd sqrt(2,000 x 0.8 x 0.2) = 17.9)
    t, prompts = conversation(2_000, seed=5, n_prefixes=2, skew=2, shared_blocks=1, new_blocks=(1, 1), max_blocks=2)
    zeros = sum(p[0] == 0 for p in prompts)
    assert 1_510 < zeros < 1_690
    assert {p[0] for p in prompts} == {0, 1}


def test_generated_lengths_times_and_outputs():
    # block_tokens 2: the last block holds 1 or 2 tokens, so input = (blocks - 1) x 2 + 1 or 2
    n = 20_000
    t = traces.generate_trace(
        n, seed=3, n_prefixes=1, shared_blocks=1, new_blocks=(1, 1), max_blocks=2, rate_per_s=100.0, block_tokens=2
    )
    blocks = np.diff(t.starts)
    last = t.input_tokens - (blocks - 1) * 2
    assert set(last.tolist()) == {1, 2}
    assert t.input_tokens.dtype == t.output_tokens.dtype == np.int64
    # outputs uniform on 1..999: over 20,000 requests both ends occur (each missed with chance (998/999)**20,000 ~ 2e-9)
    assert (int(t.output_tokens.min()), int(t.output_tokens.max())) == (1, 999)
    # times start at 0 and are whole milliseconds
    assert t.timestamps_s[0] == 0.0
    ms = t.timestamps_s * 1e3
    assert np.allclose(ms, np.round(ms), rtol=0, atol=1e-6)
    assert not np.allclose(t.timestamps_s, np.round(t.timestamps_s))
    # 19,999 gaps of mean 1/100 s: about 200 s (sd sqrt(19,999) / 100 = 1.4 s)
    assert 193 < t.duration_s < 207
    assert t.blocks.dtype == np.int64 and t.blocks.ndim == 1


def test_to_jsonl_writes_milliseconds_and_each_requests_ids():
    trace = Trace(
        name="hand",
        block_tokens=4,
        timestamps_s=np.array([0.0, 1.234, 2.5]),
        input_tokens=np.array([5, 4, 0]),
        output_tokens=np.array([7, 8, 9]),
        starts=np.array([0, 2, 3, 3]),
        blocks=np.array([0, 1, 0]),
        trace_format="mooncake",
    )
    # 1.234 s = 1,234 ms; 2.5 s = 2,500 ms
    assert list(traces.to_jsonl(trace)) == [
        '{"timestamp": 0, "input_length": 5, "output_length": 7, "hash_ids": [0, 1]}',
        '{"timestamp": 1234, "input_length": 4, "output_length": 8, "hash_ids": [0]}',
        '{"timestamp": 2500, "input_length": 0, "output_length": 9, "hash_ids": []}',
    ]
