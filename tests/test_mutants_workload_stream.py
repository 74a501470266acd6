"""The streaming LRU curve, generator and wavelet count of ``kvtier.formulas.reuse``, worked out by hand (issue 15).

Each expected number carries its arithmetic in the comment beside it; properties are checked
against a brute-force LRU stack written here, not against the functions themselves.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from kvtier.errors import KvtierError
from kvtier.formulas import reuse as workload


def brute_distances(blocks: list[int]) -> list[int]:
    """LRU stack distances with the most recent block first: a block's distance is its depth in the stack."""
    stack: list[int] = []
    out = []
    for b in blocks:
        depth = stack.index(b) if b in stack else -1
        out.append(depth)
        if depth >= 0:
            del stack[depth]
        stack.insert(0, b)
    return out


def write_lines(path: Path, rows: list) -> Path:
    """One line per row: a dict as JSON, a str as it is."""
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def row(ts: float, ids: list[int], n_in: int) -> dict:
    return {"timestamp": ts, "input_length": n_in, "output_length": 1, "hash_ids": ids}


# ---------------------------------------------------------------------------
# the wavelet count
# ---------------------------------------------------------------------------


def brute_count_below(values, lo, hi, below) -> list[int]:
    return [sum(1 for v in values[a:b] if v < c) for a, b, c in zip(lo, hi, below, strict=True)]


def test_count_below_on_hand_values():
    values = np.array([5, 0, 3, 7, 3, 1])
    # [0:6) below 4: 0, 3, 3, 1 -> 4; [1:3) below 1: 0 -> 1; [2:5) below 8: all 3 -> 3; [3:3) empty -> 0;
    # [0:6) below 0 -> 0; [3:6) below 3: 1 -> 1
    lo, hi, below = np.array([0, 1, 2, 3, 0, 3]), np.array([6, 3, 5, 3, 6, 6]), np.array([4, 1, 8, 9, 0, 3])
    got = workload._count_below(values, lo, hi, below)
    assert got.tolist() == [4, 1, 3, 0, 0, 1]
    assert got.dtype == np.int64  # counts are integers


def test_count_below_with_all_zero_values_and_thresholds():
    # every value 0: below 0 counts none, below 1 counts all three
    got = workload._count_below(np.zeros(3, dtype=np.int64), np.array([0, 0]), np.array([3, 3]), np.array([0, 1]))
    assert got.tolist() == [0, 3]


def test_count_below_with_no_values_or_no_queries():
    # no values: an empty range counts 0 whatever the threshold
    assert workload._count_below(np.zeros(0, dtype=np.int64), np.array([0]), np.array([0]), np.array([5])).tolist() == [
        0
    ]
    # no queries: an empty answer, still int64
    none = np.zeros(0, dtype=np.int64)
    got = workload._count_below(np.array([3, 1]), none, none, none)
    assert got.tolist() == [] and got.dtype == np.int64


@pytest.mark.parametrize("scale", [1, 2**20, 2**40])
def test_count_below_over_many_bit_levels_equals_counting(scale):
    # values up to 2**20 (21 levels, int32 positions) and beyond 2**32 (int64: an int32 copy would drop the high bits)
    rng = np.random.default_rng(11)
    values = rng.integers(0, 50, size=60) * scale + rng.integers(0, 3, size=60)
    lo = rng.integers(0, 60, size=40)
    hi = np.minimum(lo + rng.integers(0, 30, size=40), 60)
    below = rng.integers(0, 52, size=40) * scale + 1
    got = workload._count_below(values, lo, hi, below)
    assert got.tolist() == brute_count_below(values.tolist(), lo, hi, below.tolist())


def test_count_below_keeps_the_bits_above_32():
    # 2**32 + 5 is not below 6 (an int32 copy reads it as 5); 3 is: one value
    got = workload._count_below(np.array([2**32 + 5, 3]), np.array([0]), np.array([2]), np.array([6]))
    assert got.tolist() == [1]


# ---------------------------------------------------------------------------
# the kernel and the dense ids
# ---------------------------------------------------------------------------

STREAM = [0, 1, 2, 0, 1, 3, 2, 2, 0, 4, 1, 3]
# most recent first, the stack after each reference, and the depth each block was found at:
#   0 -1 [0]; 1 -1 [1 0]; 2 -1 [2 1 0]; 0 at depth 2 [0 2 1]; 1 at 2 [1 0 2]; 3 -1 [3 1 0 2];
#   2 at 3 [2 3 1 0]; 2 at 0 [2 3 1 0]; 0 at 3 [0 2 3 1]; 4 -1 [4 0 2 3 1]; 1 at 4 [1 4 0 2 3]; 3 at 4
STREAM_DISTANCES = [-1, -1, -1, 2, 2, -1, 3, 0, 3, -1, 4, 4]


def test_the_brute_force_stack_agrees_with_the_hand():
    assert brute_distances(STREAM) == STREAM_DISTANCES


@pytest.mark.parametrize("size", [1, 2, 3, 5, 12])
def test_the_kernel_in_chunks_gives_the_hand_distances(size):
    kernel = workload.StackDistanceStream()
    parts = [kernel.feed(np.array(STREAM[i : i + size])) for i in range(0, len(STREAM), size)]
    assert np.concatenate(parts).tolist() == STREAM_DISTANCES
    # the state: references fed so far, and each block's last reference
    # (0 at 8, 1 at 10, 2 at 7, 3 at 11, 4 at 9)
    assert kernel.offset == 12
    assert kernel.last[:6].tolist() == [8, 10, 7, 11, 9, -1]


def test_the_kernel_takes_whole_float_ids_and_gives_int64():
    # [0, 1, 0] as floats: -1, -1, then 1 (block 1 between)
    kernel = workload.StackDistanceStream()
    got = kernel.feed(np.array([0.0, 1.0, 0.0]))
    assert got.tolist() == [-1, -1, 1] and got.dtype == np.int64


def test_an_empty_chunk_gives_an_empty_int64_array():
    kernel = workload.StackDistanceStream()
    empty = kernel.feed(np.zeros(0, dtype=np.int64))
    assert empty.size == 0 and empty.dtype == np.int64
    # so chunks joined together stay integer: [-1, -1, 1] as above
    joined = np.concatenate((kernel.feed(np.array([0, 1])), empty, kernel.feed(np.array([0]))))
    assert joined.tolist() == [-1, -1, 1] and joined.dtype == np.int64
    assert kernel.offset == 3


def test_the_kernel_grows_its_state_for_ids_past_1024():
    kernel = workload.StackDistanceStream()
    # 1024 is one past the first 1024 slots: the state grows to 2048
    assert kernel.feed(np.array([1024])).tolist() == [-1]
    assert kernel.last.size == 2048
    # 5000 needs 5001 slots (more than twice 2048): 5000 -1, 1024 {5000} 1, 7 -1, 5000 {1024, 7} 2
    assert kernel.feed(np.array([5000, 1024, 7, 5000])).tolist() == [-1, 1, -1, 2]
    assert kernel.last.size == 5001
    # 1024 since its last use (index 2): {7, 5000} -> 2
    assert kernel.feed(np.array([1024])).tolist() == [2]


def test_the_kernel_past_two_to_the_32_references_equals_the_brute_force():
    # a stream that has already fed 2**32 - 3 references: positions pass 2**32 inside the second chunk
    blocks = [3, 3, 1, 1, 0, 0, 0, 1, 4, 3]
    kernel = workload.StackDistanceStream()
    kernel.offset = 2**32 - 3
    got = np.concatenate((kernel.feed(np.array(blocks[:4])), kernel.feed(np.array(blocks[4:]))))
    # by hand: 3 -1, 3 0, 1 -1, 1 0, 0 -1, 0 0, 0 0, 1 {0} 1, 4 -1, 3 {1, 0, 4} 3
    assert got.tolist() == [-1, 0, -1, 0, -1, 0, 0, 1, -1, 3] == brute_distances(blocks)


def test_dense_ids_follow_first_appearance_across_chunks():
    dense = workload.DenseIds()
    # 50 first (0), then 10 (1)
    assert dense.map(np.array([50, 10, 50])).tolist() == [0, 1, 0]
    # 10 known (1); 30 and 20 new in this order: 30 -> 2, 20 -> 3
    got = dense.map(np.array([30, 10, 20, 30]))
    assert got.tolist() == [2, 1, 3, 2] and got.dtype == np.int64
    # the state: sorted hashes [10, 20, 30, 50] with their ids [1, 3, 2, 0], both int64 (16 B a block)
    assert dense.keys.tolist() == [10, 20, 30, 50] and dense.values.tolist() == [1, 3, 2, 0]
    assert dense.keys.dtype == dense.values.dtype == np.int64
    assert len(dense) == 4


def test_dense_ids_tell_apart_hashes_a_float_would_merge():
    # 2**60 and 2**60 + 1 are one float64 but two int64 hashes: ids 0 and 1
    dense = workload.DenseIds()
    assert dense.map(np.array([2**60])).tolist() == [0]
    assert dense.map(np.array([2**60 + 1, 2**60])).tolist() == [1, 0]


def test_dense_ids_of_a_two_dimensional_chunk_are_flat_in_reading_order():
    # 7 -> 0, 9 -> 1, 9 -> 1, 8 -> 2
    dense = workload.DenseIds()
    assert dense.map(np.array([[7, 9], [9, 8]])).tolist() == [0, 1, 1, 2]


# ---------------------------------------------------------------------------
# stream_lru on a hand trace, in any chunks
# ---------------------------------------------------------------------------

HAND_ROWS = [
    row(0, [-1, -2], 8),  # 2 full blocks: 4 + 4 tokens
    row(1, [-1, -2, 5], 9),  # 4 + 4 + 1
    "",  # a blank line is skipped, not the end
    row(2, [7, 7], 5),  # 4 + 1
    row(3, [-1, 7], 6),  # 4 + 2
    row(4, [], 0),  # no blocks
]
# references: -1 -2 | -1 -2 5 | 7 7 | -1 7 |   (9 references; dense -1 -> 0, -2 -> 1, 5 -> 2, 7 -> 3)
# distances (most recent first): -1 -1 | 1 1 -1 | -1 0 | 3 ({-2, 5, 7}) 1 ({-1})
# tokens:                          4  4 | 4 4  1 |  4 1 | 4 2                     total 28
HAND_D = [-1, -1, 1, 1, -1, -1, 0, 3, 1]
# blocks at distance 0, 1, 2, 3: 1 (idx 6), 3 (idx 2, 3, 8), 0, 1 (idx 7)
HAND_COUNTS_BLOCKS = [1, 3, 0, 1]
# tokens at distance 0: 1; 1: 4 + 4 + 2 = 10; 3: 4
HAND_COUNTS_TOKENS = [1, 10, 0, 4]


def test_the_hand_trace_by_brute_force():
    refs = [h for r in HAND_ROWS if isinstance(r, dict) for h in r["hash_ids"]]
    assert brute_distances(refs) == HAND_D


@pytest.mark.parametrize("chunk", [1, 2, 3, 1 << 20])
def test_stream_lru_on_the_hand_trace(tmp_path, chunk):
    path = write_lines(tmp_path / "hand.jsonl", HAND_ROWS)
    h = workload.stream_lru(path, 4, chunk_refs=chunk)
    assert h.name == str(path)
    # 5 requests (the blank line skipped), 9 references, 4 distinct blocks
    assert (h.n_requests, h.n_refs, h.n_unique) == (5, 9, 4)
    assert h.total == {"blocks": 9.0, "tokens": 28.0}  # 8 + 9 + 5 + 6 + 0 = 28 tokens
    assert h.counts["blocks"].tolist() == HAND_COUNTS_BLOCKS
    assert h.counts["tokens"].tolist() == HAND_COUNTS_TOKENS
    # falls: request 3 (7 7): inf then 0; request 4 (-1 7): 3 then 1; request 2 (1 1 inf) does not fall
    assert h.requests_with_a_distance_that_falls == 2
    # hit ratios: 5 hits of 9 blocks; capacity 1: 1/9; 1.5 -> 2 blocks: (1 + 3)/9; 4: 5/9
    assert h.hit_ratio() == pytest.approx(5 / 9, rel=1e-15)
    assert h.hit_ratio(1) == pytest.approx(1 / 9, rel=1e-15)
    assert h.hit_ratio(1.5) == pytest.approx(4 / 9, rel=1e-15)
    assert h.hit_ratio(3) == pytest.approx(4 / 9, rel=1e-15)
    assert h.hit_ratio(4) == pytest.approx(5 / 9, rel=1e-15)
    # tokens: 15 of 28; capacity 2: (1 + 10)/28
    assert h.hit_ratio(math.inf, "tokens") == pytest.approx(15 / 28, rel=1e-15)
    assert h.hit_ratio(2, "tokens") == pytest.approx(11 / 28, rel=1e-15)
    # blocks cum [1, 4, 4, 5]: share 1 needs 5 -> 4 blocks; 0.8 needs 4 -> 2; 0.2 needs 1 -> 1;
    # just above 0.2 needs more than 1 -> 2; a share just above 0 -> 1
    assert h.capacity_for(1.0) == 4
    assert h.capacity_for(0.8) == 2
    assert h.capacity_for(0.2) == 1
    assert h.capacity_for(0.2000001) == 2
    assert h.capacity_for(1e-9) == 1
    # tokens cum [1, 11, 11, 15]: half (7.5) -> 2 blocks; all 15 -> 4
    assert h.capacity_for(0.5, "tokens") == 2
    assert h.capacity_for(1.0, "tokens") == 4


@pytest.mark.parametrize("share", [0, -0.5, 1.5, 2])
def test_capacity_for_refuses_a_share_outside_zero_to_one(tmp_path, share):
    h = workload.stream_lru(write_lines(tmp_path / "hand.jsonl", HAND_ROWS), 4)
    with pytest.raises(ValueError) as err:
        h.capacity_for(share)
    assert str(err.value) == f"share must be in (0, 1], got {share!r}"


def test_a_trace_without_hits_has_an_empty_histogram(tmp_path):
    # two distinct blocks, each used once: no hit, empty histograms
    h = workload.stream_lru(write_lines(tmp_path / "cold.jsonl", [row(0, [1, 2], 8)]), 4)
    assert h.counts["blocks"].tolist() == [] and h.counts["tokens"].tolist() == []
    assert h.total == {"blocks": 2.0, "tokens": 8.0}
    assert h.hit_ratio() == 0.0
    assert h.capacity_for(1.0) == 0


def test_a_trace_without_blocks_has_ratio_zero(tmp_path):
    # one request of 0 tokens: no reference at all, total 0
    h = workload.stream_lru(write_lines(tmp_path / "empty.jsonl", [row(0, [], 0)]), 4)
    assert (h.n_requests, h.n_refs, h.n_unique) == (1, 0, 0)
    assert h.total == {"blocks": 0.0, "tokens": 0.0}
    assert h.hit_ratio() == 0.0 and h.hit_ratio(5, "tokens") == 0.0
    assert h.capacity_for(1.0) == 0


def test_capacity_for_with_hits_only_at_distance_one(tmp_path):
    # 1 2 1 2: distances -1 -1 1 1, histogram [0, 2]: all the hits need 2 blocks
    h = workload.stream_lru(write_lines(tmp_path / "two.jsonl", [row(0, [1, 2, 1, 2], 16)]), 4)
    assert h.counts["blocks"].tolist() == [0, 2]
    assert h.capacity_for(1.0) == 2
    assert h.capacity_for(0.5) == 2  # 1 hit of 2 still needs distance 1


def test_capacity_for_with_a_single_hit(tmp_path):
    # 1 1: distances -1 0, histogram [1]: one block of capacity
    h = workload.stream_lru(write_lines(tmp_path / "one.jsonl", [row(0, [1, 1], 8)]), 4)
    assert h.counts["blocks"].tolist() == [1]
    assert h.capacity_for(1.0) == 1
    assert h.hit_ratio(1) == 0.5  # 1 hit of 2 references


def test_falls_are_counted_in_every_chunk_at_their_own_requests(tmp_path):
    # request 1: 5 5 -> -1 0, a fall at its second block; request 2: 3 4 4 -> -1 -1 0, a fall at its third.
    # chunk_refs 2: one chunk a request, each fall counted once: 2
    path = write_lines(tmp_path / "falls.jsonl", [row(0, [5, 5], 8), row(1, [3, 4, 4], 12)])
    for chunk in (2, 1 << 20):
        h = workload.stream_lru(path, 4, chunk_refs=chunk)
        assert h.requests_with_a_distance_that_falls == 2
        assert h.counts["blocks"].tolist() == [2]  # two hits at distance 0


def test_stream_lru_with_one_token_blocks(tmp_path):
    # block_tokens 1: 2 tokens need 2 ids; 1 1 -> -1 0
    h = workload.stream_lru(write_lines(tmp_path / "one.jsonl", [row(0, [9, 9], 2)]), 1)
    assert h.total == {"blocks": 2.0, "tokens": 2.0}
    assert h.hit_ratio() == 0.5


@pytest.mark.parametrize(
    ("block_tokens", "shown"),
    [(0, "0"), (-4, "-4"), (2.5, "2.5"), (np.float64(2.5), "np.float64(2.5)"), (2**31 + 1, "2147483649")],
)
def test_stream_lru_refuses_bad_block_tokens(tmp_path, block_tokens, shown):
    path = write_lines(tmp_path / "hand.jsonl", HAND_ROWS)
    with pytest.raises(KvtierError) as err:
        workload.stream_lru(path, block_tokens)
    assert str(err.value) == f"block tokens must be a whole number from 1 to 2,147,483,648, got {shown}"


def test_stream_lru_names_an_empty_trace(tmp_path):
    path = write_lines(tmp_path / "blank.jsonl", ["", "  "])
    with pytest.raises(KvtierError) as err:
        workload.stream_lru(path)
    assert str(err.value) == f"{path}: the trace holds no requests"


def test_stream_lru_names_a_hash_id_past_64_bits(tmp_path):
    path = write_lines(tmp_path / "big.jsonl", [row(0, [1], 4), row(1, [2**63], 4)])
    with pytest.raises(KvtierError) as err:
        workload.stream_lru(path, 4)
    assert str(err.value) == f"{path}: line 2: a hash id does not fit in 64 bits"


def test_stream_lru_names_a_line_that_is_not_utf8(tmp_path):
    path = tmp_path / "latin.jsonl"
    path.write_bytes(json.dumps(row(0, [1], 4)).encode() + b"\n" + b'{"timestamp": "\xe9"}\n')
    with pytest.raises(KvtierError) as err:
        workload.stream_lru(path, 4)
    assert str(err.value) == f"{path}: line 2: not UTF-8 text"


def test_stream_lru_names_a_file_it_cannot_open(tmp_path):
    # a directory exists but is refused before it is opened, as the in-memory reader refuses it
    with pytest.raises(KvtierError) as err:
        workload.stream_lru(tmp_path)
    assert str(err.value) == f"{tmp_path}: trace is not a regular file"


def test_trace_lines_numbers_the_lines_and_decodes_utf8(tmp_path):
    # blank line 2 is skipped but counted; the line break is not part of the line
    path = tmp_path / "t.txt"
    path.write_bytes("a\n\nb\u00e9\n".encode())
    assert list(workload.trace_lines(path, "t")) == [(1, "a"), (3, "b\u00e9")]


# ---------------------------------------------------------------------------
# the generator and its JSONL
# ---------------------------------------------------------------------------


def test_generate_trace_defaults_are_the_documented_ones():
    # with 9,000 requests one conversation would grow to 257 blocks (at request 5,507): max_blocks 256 starts it afresh
    n = 9_000
    t = workload.generate_trace(n)
    explicit = workload.generate_trace(
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


def conversation(n: int, **kw) -> tuple[workload.Trace, list[list[int]]]:
    t = workload.generate_trace(n, **kw)
    return t, [t.blocks[a:b].tolist() for a, b in zip(t.starts[:-1], t.starts[1:], strict=True)]


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
    t = workload.generate_trace(
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
    trace = workload.Trace(
        name="hand",
        block_tokens=4,
        timestamps_s=np.array([0.0, 1.234, 2.5]),
        input_tokens=np.array([5, 4, 0]),
        output_tokens=np.array([7, 8, 9]),
        starts=np.array([0, 2, 3, 3]),
        blocks=np.array([0, 1, 0]),
    )
    # 1.234 s = 1,234 ms; 2.5 s = 2,500 ms
    assert list(workload.to_jsonl(trace)) == [
        '{"timestamp": 0, "input_length": 5, "output_length": 7, "hash_ids": [0, 1]}',
        '{"timestamp": 1234, "input_length": 4, "output_length": 8, "hash_ids": [0]}',
        '{"timestamp": 2500, "input_length": 0, "output_length": 9, "hash_ids": []}',
    ]


def test_stream_lru_takes_the_largest_block(tmp_path):
    # four blocks of 2**31 tokens (the largest block): 4 x 2**31 = 2**33 = 8,589,934,592 tokens
    path = write_lines(tmp_path / "huge.jsonl", [row(0, [1, 2, 3, 4], 4 * 2**31)])
    h = workload.stream_lru(path, 2**31)
    assert h.total == {"blocks": 4.0, "tokens": 2.0**33}
