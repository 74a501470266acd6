"""kvtier.formulas.reuse, by hand: reading traces, stack distances, the LRU curve and the GPU time hits save.

The curve is checked in memory and streamed.
"""

from __future__ import annotations

import json
import math
import os
from collections import OrderedDict
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvtier.errors import KvtierError
from kvtier.formulas import reuse as workload
from tests.conftest import BAD, write_trace

# references in order: 1 2 | 1 2 3 | 4 | 1 5 | 1 2 3   (11 references, 5 distinct blocks)
# stack distance = distinct other blocks used since the block's last use (-1: first use):
#   idx 2 (1): since idx 0, {2}          -> 1      idx 3 (2): since idx 1, {1}        -> 1
#   idx 6 (1): since idx 2, {2, 3, 4}    -> 3      idx 8 (1): since idx 6, {5}        -> 1
#   idx 9 (2): since idx 3, {3, 4, 1, 5} -> 4      idx 10 (3): since idx 4, {4, 1, 5, 2} -> 4
HAND_DISTANCES = [-1, -1, 1, 1, -1, -1, 3, -1, 1, 4, 4]


HAND_BLOCK_TOKENS = 4


def lru_brute(blocks: list[int]) -> list[int]:
    """Stack distances by moving each block to the top of an explicit stack."""
    stack: list[int] = []
    out = []
    for b in blocks:
        if b in stack:
            out.append(len(stack) - 1 - stack.index(b))
            stack.remove(b)
        else:
            out.append(-1)
        stack.append(b)
    return out


def lru_hits(blocks: list[int], capacity: int) -> int:
    """Hits of a direct simulation of an LRU cache of ``capacity`` blocks."""
    cache: OrderedDict[int, None] = OrderedDict()
    hits = 0
    for b in blocks:
        if b in cache:
            hits += 1
            cache.move_to_end(b)
        else:
            cache[b] = None
            if len(cache) > capacity:
                cache.popitem(last=False)
    return hits


# ---------------------------------------------------------------------------
# streaming: the same curve in memory proportional to the distinct blocks
# ---------------------------------------------------------------------------


def first_seen_dense(values: np.ndarray) -> np.ndarray:
    """Dense ids in order of first appearance, computed the obvious way."""
    ids: dict[int, int] = {}
    return np.array([ids.setdefault(int(v), len(ids)) for v in values], dtype=np.int64)


# lengths at 16 tokens a block: ceil(40/16) = 3, ceil(70/16) = 5, ceil(32/16) = 2, ceil(90/16) = 6 ids: 16 references.
# Chained, block 11 after 99 (request 3) is another prefix than 11 after 10. Naming the chained ids
# A=(10) B=(10,11) C=(..12) D=(..13) E=(..14) X=(99) Y=(99,11) F=(..15), the references are
#   A B C | A B C D E | X Y | A B C D E F
# stack distances: A B C again after {B,C}, {C,A}, {A,B}: 2 2 2; in request 4 each of A..E has six others since: 6
QWEN_DISTANCES = [-1, -1, -1, 2, 2, 2, -1, -1, -1, -1, 6, 6, 6, 6, 6, -1]


FIELDS_TEXT = "timestamp, input_length, output_length, hash_ids"


def _text(rows: list[dict]) -> str:
    return "\n".join(json.dumps(r) for r in rows)


def _trace(blocks_per_request: list[list[int]], times_ms: list[float] | None = None, block_tokens: int = 1):
    """A trace of one request per list, each block full (``block_tokens`` tokens), one second apart by default."""
    times = times_ms if times_ms is not None else [1000.0 * i for i in range(len(blocks_per_request))]
    rows = [
        {"timestamp": t, "input_length": len(ids) * block_tokens, "output_length": 1, "hash_ids": ids}
        for t, ids in zip(times, blocks_per_request, strict=True)
    ]
    return workload.parse_trace(_text(rows), "t", block_tokens)


def _reuse(blocks_per_request, times_ms=None, block_tokens: int = 1) -> workload.Reuse:
    return workload.Reuse.of(_trace(blocks_per_request, times_ms, block_tokens))


# ---------------------------------------------------------------------------
# what a hit is worth
# ---------------------------------------------------------------------------

# k = 2 FLOP per parameter-token, N = 1e9 parameters, no attention term; 1e15 FLOP/s at 50 %:
# compute(h) = 2e9 h / 5e14 = 4e-6 h s.  Weights 2e9 B at 1e12 B/s x 50 %: memory 2e9 / 5e11 = 4 ms
RC = workload.RegenCosts(
    kv_bytes_per_token=1000.0,
    active_params=1e9,
    flops_per_param_token=2.0,
    attention_flops_per_position=0.0,
    peak_flop_per_s=1e15,
    mfu=0.5,
    weight_bytes=2e9,
    mem_bandwidth_bytes_per_s=1e12,
    mem_efficiency=0.5,
)


def _link(name: str = "l") -> workload.LinkSpec:
    # 1e6 B/s and 1 ms a block
    return workload.LinkSpec(name, 1e6, 1e-3)


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


# ---------------------------------------------------------------------------
# the kernel and the dense ids
# ---------------------------------------------------------------------------

STREAM = [0, 1, 2, 0, 1, 3, 2, 2, 0, 4, 1, 3]


# most recent first, the stack after each reference, and the depth each block was found at:
#   0 -1 [0]; 1 -1 [1 0]; 2 -1 [2 1 0]; 0 at depth 2 [0 2 1]; 1 at 2 [1 0 2]; 3 -1 [3 1 0 2];
#   2 at 3 [2 3 1 0]; 2 at 0 [2 3 1 0]; 0 at 3 [0 2 3 1]; 4 -1 [4 0 2 3 1]; 1 at 4 [1 4 0 2 3]; 3 at 4
STREAM_DISTANCES = [-1, -1, -1, 2, 2, -1, 3, 0, 3, -1, 4, 4]


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


def conversation(n: int, **kw) -> tuple[workload.Trace, list[list[int]]]:
    t = workload.generate_trace(n, **kw)
    return t, [t.blocks[a:b].tolist() for a, b in zip(t.starts[:-1], t.starts[1:], strict=True)]


def test_hand_trace_stack_distances_and_hit_ratios(hand):
    r = workload.Reuse.of(workload.read_trace(hand, HAND_BLOCK_TOKENS))
    assert r.distance.tolist() == HAND_DISTANCES
    assert (r.trace.n_requests, r.trace.n_refs, r.trace.n_unique) == (5, 11, 5)
    # infinite cache: the 6 references with a distance >= 0 hit: 6 / 11
    assert float(r.hit_ratio()) == pytest.approx(6 / 11)
    # LRU of C blocks hits distances < C: C=1 none; C=2 idx 2, 3, 8; C=4 adds idx 6; C=5 all six
    assert r.hit_ratio(np.array([1, 2, 3, 4, 5, 100])).tolist() == pytest.approx(
        [0, 3 / 11, 3 / 11, 4 / 11, 6 / 11, 6 / 11]
    )
    # tokens: blocks of 4 but the last of a 10-token prompt holds 2 and of a 7-token prompt 3; 39 tokens in all;
    # hits: idx 2, 3, 6, 8, 9 hold 4 each, idx 10 holds 2: 22 / 39
    assert r.trace.ref_tokens.tolist() == [4, 4, 4, 4, 2, 4, 4, 3, 4, 4, 2]
    assert float(r.hit_ratio(weighting="tokens")) == pytest.approx(22 / 39)
    # capacity for a share of the 6 achievable hits (sorted distances 1 1 1 3 4 4): 50 % needs 3 hits -> C = 1 + 1;
    # 80 % needs 4.8 -> 5 hits -> C = 4 + 1; 95 % and 100 % the same
    assert [r.capacity_for(x) for x in (0.5, 0.6, 0.8, 0.95, 1.0)] == [2, 4, 5, 5, 5]
    # reuse intervals (s): idx 2, 3: 1 - 0; idx 6: 3 - 1; idx 8: 5 - 3; idx 9, 10: 5 - 1
    assert r.reuse_interval_s.tolist() == pytest.approx([1, 1, 2, 2, 4, 4])
    # hits form a prefix of every prompt, and distances never fall along one (R2: 1 1 -; R4: 3 -; R5: 1 4 4)
    assert (r.requests_with_a_hit_after_a_miss, r.requests_with_a_distance_that_falls) == (0, 0)
    # per request at C = 2: R2 hits blocks 1, 2 (8 tokens), R5 hits block 1 (4 tokens)
    blocks, tokens = r.hit_tokens(2)
    assert blocks.tolist() == [0, 2, 0, 0, 1] and tokens.tolist() == [0, 8, 0, 0, 4]


def test_the_prefix_checks_can_fail():
    # a block that hits after its predecessor missed: request 2 reuses block 9 under a new first block 7
    trace = workload.parse_trace(
        "\n".join(
            json.dumps(r)
            for r in [
                {"timestamp": 0, "input_length": 2, "output_length": 1, "hash_ids": [8, 9]},
                {"timestamp": 1, "input_length": 2, "output_length": 1, "hash_ids": [7, 9]},
            ]
        ),
        "broken-chain",
        1,
    )
    r = workload.Reuse.of(trace)
    assert r.distance.tolist() == [-1, -1, -1, 1]
    assert (r.requests_with_a_hit_after_a_miss, r.requests_with_a_distance_that_falls) == (1, 1)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 12), min_size=1, max_size=80))
def test_stack_distances_equal_a_direct_lru_simulation(blocks):
    arr = np.array(blocks)
    d = workload.stack_distances(arr)
    assert d.tolist() == lru_brute(blocks)
    for capacity in (1, 2, 3, 5, 8, 13):
        assert int(((d >= 0) & (d < capacity)).sum()) == lru_hits(blocks, capacity)


def test_stack_distances_on_a_larger_random_trace():
    rng = np.random.default_rng(7)
    blocks = (rng.zipf(1.3, 3000) % 400).tolist()
    d = workload.stack_distances(np.array(blocks))
    assert d.tolist() == lru_brute(blocks)
    trace = workload.Trace(
        "t", 1, np.zeros(1), np.array([3000]), np.zeros(1, int), np.array([0, 3000]), np.array(blocks)
    )
    r = workload.Reuse(trace, workload.previous_reference(trace.blocks), d)
    for capacity in (1, 10, 50, 200):
        assert float(r.hit_ratio(capacity)) == pytest.approx(lru_hits(blocks, capacity) / 3000)


@pytest.mark.parametrize(
    ("content", "message"),
    [("", "the trace holds no requests"), ("\n\n", "the trace holds no requests")],
)
def test_an_empty_trace_is_refused(tmp_path, content, message):
    path = tmp_path / "empty.jsonl"
    path.write_text(content)
    with pytest.raises(KvtierError, match=f"^{path}: {message}$"):
        workload.read_trace(path)


# ---------------------------------------------------------------------------
# the shipped traces and the page
# ---------------------------------------------------------------------------


def test_the_shipped_traces_counted_directly_agree_and_hits_are_prefixes():
    for name, n_requests in (("conversation", 12_031), ("synthetic", 3_993)):
        _, path = workload.trace_path(name)
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        ids = [h for row in rows for h in row["hash_ids"]]
        r = workload.analyse(name)
        assert (r.trace.n_requests, r.trace.n_refs, r.trace.n_unique) == (n_requests, len(ids), len(set(ids)))
        # an infinite cache misses each distinct block once: hit ratio = 1 - unique / references
        assert float(r.hit_ratio()) == pytest.approx(1 - len(set(ids)) / len(ids))
        assert (r.requests_with_a_hit_after_a_miss, r.requests_with_a_distance_that_falls) == (0, 0)


# ---------------------------------------------------------------------------
# the generator
# ---------------------------------------------------------------------------


def test_generated_traces_are_seeded_valid_and_prefix_shaped():
    a = workload.generate_trace(300, seed=3)
    b = workload.generate_trace(300, seed=3)
    assert np.array_equal(a.blocks, b.blocks) and np.array_equal(a.timestamps_s, b.timestamps_s)
    assert not np.array_equal(a.blocks, workload.generate_trace(300, seed=4).blocks)
    again = workload.parse_trace("\n".join(workload.to_jsonl(a)), "generated", a.block_tokens)
    assert np.array_equal(again.blocks, a.blocks) and np.array_equal(again.input_tokens, a.input_tokens)
    r = workload.Reuse.of(again)
    assert r.requests_with_a_distance_that_falls == 0 and 0 < float(r.hit_ratio()) < 1
    assert math.isclose(float(r.hit_ratio(r.capacity_for(1.0))), float(r.hit_ratio()))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(-3, 12), min_size=1, max_size=80),
    st.lists(st.integers(0, 80), max_size=5),
)
def test_the_stream_in_any_chunks_equals_the_whole(values, cuts):
    raw = np.array(values, dtype=np.int64) * 1_000_003
    cuts = sorted(c for c in cuts if c <= raw.size)
    dense_ids = workload.DenseIds()
    mapped = np.concatenate([dense_ids.map(part) for part in np.split(raw, cuts)])
    assert mapped.tolist() == first_seen_dense(raw).tolist()
    kernel = workload.StackDistanceStream()
    streamed = np.concatenate([kernel.feed(part) for part in np.split(mapped, cuts)])
    assert streamed.tolist() == lru_brute(values)


def test_stream_lru_equals_the_in_memory_analysis(hand):
    for name, block, chunk in (("synthetic", 512, 700), (str(hand), 4, 2)):
        whole = workload.analyse(name, block)
        h = workload.stream_lru(name, block, chunk_refs=chunk)
        assert (h.n_requests, h.n_refs, h.n_unique) == (
            whole.trace.n_requests,
            whole.trace.n_refs,
            whole.trace.n_unique,
        )
        for weighting in ("blocks", "tokens"):
            for capacity in (1, 2, 5, 100, 5_000, math.inf):
                assert h.hit_ratio(capacity, weighting) == pytest.approx(float(whole.hit_ratio(capacity, weighting)))
            shares = (0.5, 0.8, 0.9, 0.95, 1.0)
            assert [h.capacity_for(x, weighting) for x in shares] == [whole.capacity_for(x, weighting) for x in shares]
        assert h.requests_with_a_distance_that_falls == whole.requests_with_a_distance_that_falls == 0


@pytest.mark.parametrize("case", ["missing field", "timestamp backwards", "hash_ids length"])
def test_stream_lru_refuses_bad_lines_like_the_reader(case, tmp_path):
    rows, line, message = BAD[case]
    path = write_trace(tmp_path / "bad.jsonl", rows)
    with pytest.raises(KvtierError) as err:
        workload.stream_lru(path)
    assert str(err.value).startswith(f"{path}: line {line}: ") and message in str(err.value)


def test_a_qwen_trace_is_read_in_seconds_with_its_ids_chained(qwen):
    r = workload.Reuse.of(workload.read_trace(qwen, 16, "qwen"))
    assert r.trace.trace_format == "qwen"
    assert r.distance.tolist() == QWEN_DISTANCES
    # 8 hits of 16 references, 8 distinct prefixes; no block hits after a miss once chained
    assert (r.trace.n_refs, r.trace.n_unique, float(r.hit_ratio())) == (16, 8, 0.5)
    assert (r.requests_with_a_hit_after_a_miss, r.requests_with_a_distance_that_falls) == (0, 0)
    # timestamps are seconds: 0, 1.5, 4, 6 s (not 6 ms)
    assert r.trace.timestamps_s.tolist() == [0.0, 1.5, 4.0, 6.0] and r.trace.duration_s == 6.0
    # reuse intervals: A B C at 1.5 s after request 1; A B C D E at 6 - 1.5 = 4.5 s
    assert r.reuse_interval_s.tolist() == [1.5] * 3 + [4.5] * 5


def test_the_same_trace_read_as_mooncake_is_1000_times_shorter_and_unchained(qwen):
    r = workload.Reuse.of(workload.read_trace(qwen, 16))
    # 6.0 read as milliseconds: 0.006 s
    assert r.trace.duration_s == pytest.approx(0.006)
    # unchained, block 11 of request 3 "hits" after 99 missed: 9 hits, and one request with a hit after a miss
    assert float(r.hit_ratio()) == 9 / 16 and r.requests_with_a_hit_after_a_miss == 1


def test_the_formats_are_the_keys_choices():
    from kvtier.inputs.assumptions import SCHEMA, seed

    assert SCHEMA["workload.trace_format"].choices == tuple(workload.TRACE_FORMATS)
    assert seed().value("workload.trace_format") == workload.DEFAULT_FORMAT
    # Mooncake: ms, chained, 512 tokens an id; Qwen: s, one id per 16-token block
    assert [(f.unit, f.units_per_s, f.chained, f.block_tokens) for f in workload.TRACE_FORMATS.values()] == [
        ("ms", 1e3, True, 512),
        ("s", 1.0, False, 16),
    ]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.integers(-3, 3), max_size=6), min_size=1, max_size=8))
def test_chained_ids_are_equal_exactly_when_the_prefixes_are(requests):
    ids = np.array([h for r in requests for h in r], dtype=np.int64)
    starts = np.r_[0, np.cumsum([len(r) for r in requests])].astype(np.int64)
    chained = workload.chain_ids(ids, starts).tolist()
    prefixes = [tuple(r[: j + 1]) for r in requests for j in range(len(r))]
    assert len(chained) == len(prefixes)
    for a in range(len(prefixes)):
        for b in range(len(prefixes)):
            assert (chained[a] == chained[b]) == (prefixes[a] == prefixes[b])


# ---------------------------------------------------------------------------
# one line splitter for both readers
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("size", [1, 2, 3, 7, 64, 1 << 20])
def test_split_lines_gives_the_same_lines_from_pieces_of_any_size(size):
    # \n ends a line; \r\n too (its \r dropped); a lone \r, \x0c, U+0085 and U+2028 do not; blanks count but are skipped
    data = "a\r\nb\rc\n\n  \t\nd\x0ce\u0085f\u2028g\n\nh".encode()
    pieces = [data[i : i + size] for i in range(0, len(data), size)]
    assert list(workload.split_lines(pieces, "t")) == [(1, "a"), (2, "b\rc"), (5, "d\x0ce\u0085f\u2028g"), (7, "h")]


def test_the_in_memory_reader_stops_at_its_reference_limit_and_the_stream_does_not(hand, monkeypatch, capsys):
    # HAND holds 2 + 3 + 1 + 2 + 3 = 11 references; with a limit of 5, line 3 would bring 2 + 3 + 1 = 6
    monkeypatch.setattr(workload, "MAX_TRACE_REFS", 5)
    with pytest.raises(KvtierError) as err:
        workload.read_trace(hand, HAND_BLOCK_TOKENS)
    assert str(err.value) == (
        f"{hand}: line 3: more than 5 block references, the most the in-memory analysis holds (about 110 B each);"
        " use --stream"
    )
    assert workload.stream_lru(hand, HAND_BLOCK_TOKENS).n_refs == 11


REQ2 = {"timestamp": 0, "input_length": 2, "output_length": 1, "hash_ids": [1, 2]}
"""A valid request of 2 tokens (two blocks at 1 token a block); the cases below change one field of it."""


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("[1, 2]", f"expected a JSON object with {FIELDS_TEXT}"),
        (
            json.dumps({k: v for k, v in REQ2.items() if k != "output_length"}),
            f"missing field 'output_length' (a request needs {FIELDS_TEXT})",
        ),
        (
            json.dumps({**REQ2, "timestamp": "now"}),
            "'timestamp' must be a finite number of milliseconds, got 'now'",
        ),
        (
            json.dumps({**REQ2, "input_length": "two"}),
            "'input_length' must be a whole number of tokens, got 'two'",
        ),
        (
            json.dumps({**REQ2, "output_length": True}),
            "'output_length' must be a whole number of tokens, got True",
        ),
        (json.dumps({**REQ2, "input_length": -1}), "'input_length' is negative (-1)"),
        # 2 tokens at 1 token a block need ceil(2 / 1) = 2 ids; at Mooncake's 512 a block ceil(2 / 512) = 1 would fit
        (
            json.dumps({**REQ2, "hash_ids": [1]}),
            "'hash_ids' has 1 ids but input_length 2 at 1 tokens a block needs 2;"
            " the mooncake format's 512 tokens a block would fit",
        ),
        # 2 tokens, 3 ids: neither 1 token a block (2 ids) nor 512 (1 id) fits, so no hint
        (
            json.dumps({**REQ2, "hash_ids": [1, 2, 3]}),
            "'hash_ids' has 3 ids but input_length 2 at 1 tokens a block needs 2",
        ),
        # Python refuses to read an integer of more than 4,300 digits
        ('{"timestamp": ' + "9" * 5000 + "}", "a value cannot be read"),
        ("{", "not a JSON object (malformed JSON)"),
    ],
)
def test_whole_messages_for_a_bad_request(row, message):
    with pytest.raises(KvtierError) as info:
        workload.parse_trace(row, "bad.jsonl", 1)
    assert str(info.value) == f"bad.jsonl: line 1: {message}"


def test_whole_messages_for_a_bad_trace():
    with pytest.raises(KvtierError) as info:
        workload.parse_trace(_text([{**REQ2, "timestamp": 5}, {**REQ2, "timestamp": 4.5}]), "t.jsonl", 1)
    assert str(info.value) == "t.jsonl: line 2: timestamp 4.5 ms goes backwards (the line before: 5)"
    with pytest.raises(KvtierError) as info:
        workload.parse_trace(_text([{**REQ2, "hash_ids": [1, 2**64]}]), "t.jsonl", 1)
    assert str(info.value) == "t.jsonl: line 1: a hash id does not fit in 64 bits"


@pytest.mark.parametrize(
    ("block_tokens", "shown"), [(0, "0"), (-4, "-4"), (2.5, "2.5"), ("4", "'4'"), (2**31 + 1, "2147483649")]
)
def test_block_tokens_must_be_a_whole_number_of_at_least_one(block_tokens, shown):
    with pytest.raises(KvtierError) as info:
        workload.parse_trace(_text([REQ2]), "t", block_tokens)
    assert str(info.value) == f"block tokens must be a whole number from 1 to 2,147,483,648, got {shown}"


def test_the_largest_block_holds_2_to_the_31_tokens():
    # 2 tokens in a block of 2**31 need ceil(2 / 2**31) = 1 id
    trace = workload.parse_trace(_text([{**REQ2, "hash_ids": [1]}]), "t", 2**31)
    assert trace.block_tokens == 2**31 and trace.ref_tokens.tolist() == [2]


def test_zero_lengths_are_requests_too():
    # an empty prompt has no blocks (ceil(0 / 4) = 0 ids); a request may produce no output
    trace = workload.parse_trace(
        _text([{"timestamp": 0, "input_length": 0, "output_length": 0, "hash_ids": []}, {**REQ2, "input_length": 8}]),
        "t",
        4,
    )
    assert trace.n_requests == 2 and trace.n_refs == 2
    assert trace.input_tokens.tolist() == [0, 8] and trace.output_tokens.tolist() == [0, 1]
    assert trace.starts.tolist() == [0, 0, 2]


def test_blank_lines_are_skipped_wherever_they_are():
    # three requests, lines 2 and 3 blank: line numbers still count them (the bad one is line 6)
    text = _text([REQ2]) + "\n\n  \n" + _text([{**REQ2, "timestamp": 1}, {**REQ2, "timestamp": 2}])
    assert workload.parse_trace(text, "t", 1).n_requests == 3
    with pytest.raises(KvtierError, match=r"^t: line 6: "):
        workload.parse_trace(text + "\n{", "t", 1)


def test_hash_ids_are_any_64_bit_integers_and_stay_distinct():
    # negative ids are ids: -1 and -2 are two blocks (as float64 bit patterns both would be NaN);
    # dense ids follow the sorted hash ids: -2 -> 0, -1 -> 1, 2**63 - 1 -> 2
    trace = _trace([[-1, 2**63 - 1], [-2, -1]])
    assert trace.n_unique == 3
    assert trace.blocks.tolist() == [1, 2, 0, 1]
    assert trace.blocks.dtype == np.int64
    # timestamps in ms become seconds: 0 and 1000 ms
    assert trace.timestamps_s.tolist() == [0.0, 1.0]


def test_a_directory_is_not_a_trace(tmp_path):
    with pytest.raises(KvtierError) as info:
        workload.read_trace(tmp_path)
    assert str(info.value) == f"{tmp_path}: trace is not a regular file"


def test_a_trace_larger_than_a_config_file_is_read(tmp_path):
    # the shipped conversation trace is well above the 1 MiB limit of the other files
    path = workload.trace_path("conversation")[1]
    assert path.stat().st_size > 1 << 20
    lines = [line for line in path.read_text().splitlines() if line.strip()]
    assert workload.read_trace("conversation").n_requests == len(lines)


def test_analyse_reads_the_file_again_when_its_size_or_time_changes(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text(_text([REQ2]))
    first = os.stat(path)
    assert workload.analyse(path, 1).trace.n_requests == 1
    # same modification time, one more request (a larger file): read again
    path.write_text(_text([REQ2, {**REQ2, "timestamp": 1}]))
    os.utime(path, ns=(first.st_atime_ns, first.st_mtime_ns))
    assert workload.analyse(path, 1).trace.n_requests == 2
    # same size, a later time, other content (output_length 1 -> 7): read again
    before = os.stat(path)
    path.write_text(_text([{**REQ2, "output_length": 7}, {**REQ2, "timestamp": 1}]))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns + 10**9))
    assert workload.analyse(path, 1).trace.output_tokens.tolist() == [7, 1]


def test_analyse_reads_through_read_trace_when_the_file_cannot_be_stat_ed(tmp_path, monkeypatch):
    # the first lookup finds a path that cannot be stat'ed, the second (read_trace's own) a real file:
    # read_trace gets the same name and block size (4 tokens a block: 8 tokens need 2 ids)
    real = tmp_path / "real.jsonl"
    real.write_text(_text([{**REQ2, "input_length": 8}]))
    paths = iter([tmp_path / "gone.jsonl", real])
    names = []

    def lookup(name):
        names.append(name)
        path = next(paths)
        return str(path), path

    monkeypatch.setattr(workload, "trace_path", lookup)
    r = workload.analyse("mine", 4)
    assert names == ["mine", "mine"] and r.trace.block_tokens == 4 and r.trace.n_refs == 2


def test_analyse_names_a_file_that_vanished_after_it_was_found(tmp_path, monkeypatch):
    path = tmp_path / "gone.jsonl"
    monkeypatch.setattr(workload, "trace_path", lambda name: (str(path), path))
    with pytest.raises(KvtierError) as info:
        workload.analyse("gone", 1)
    assert str(info.value) == f"{path}: trace not found"


# ---------------------------------------------------------------------------
# reuse: hit ratios, capacities, the curve, per request
# ---------------------------------------------------------------------------


def test_a_single_distance_below_the_capacity_counts():
    # references A A B C B: distances -1 0 -1 -1 1; a cache of 1 block hits only the distance 0: 1 / 5
    r = _reuse([[1], [1], [2], [3], [2]])
    assert r.distance.tolist() == [-1, 0, -1, -1, 1]
    assert r.hit_ratio(np.array([1.0, 2.0])).tolist() == [0.2, 0.4]
    # share 1 of the 2 achievable hits needs both: distance 1 + 1 = 2 blocks; half needs one: 0 + 1
    assert r.capacity_for(1.0) == 2 and r.capacity_for(0.5) == 1
    # an integer capacity gives a float ratio
    assert r.hit_ratio(1).dtype == np.float64


def test_a_trace_without_reuse_hits_nothing():
    r = _reuse([[1, 2], [3]])
    assert r.hit_ratio(5).tolist() == 0.0 and float(r.hit_ratio()) == 0.0
    assert r.capacity_for(1.0) == 0
    caps, ratios = r.curve()
    assert caps.tolist() == [1.0] and ratios.tolist() == [0.0]


def test_a_trace_without_references_has_ratio_zero():
    # empty prompts only: no references, no weight; the ratio is 0 (not 0 / 0), as floats
    r = workload.Reuse.of(
        workload.parse_trace(_text([{"timestamp": 0, "input_length": 0, "output_length": 3, "hash_ids": []}]), "t", 1)
    )
    ratio = r.hit_ratio(np.array([1, 2]))
    assert ratio.tolist() == [0.0, 0.0] and ratio.dtype == np.float64


@pytest.mark.parametrize("share", [0.0, -0.5, 1.5])
def test_a_share_outside_0_to_1_is_refused(share):
    r = _reuse([[1], [1]])
    with pytest.raises(ValueError) as info:
        r.capacity_for(share)
    assert str(info.value) == f"share must be in (0, 1], got {share!r}"


def test_an_unknown_weighting_is_refused():
    r = _reuse([[1], [1]])
    for ask in (lambda: r.hit_ratio(weighting="bytes"), lambda: r.capacity_for(1.0, "bytes"), lambda: r.curve("bytes")):
        with pytest.raises(ValueError) as info:
            ask()
        assert str(info.value) == "weighting must be 'blocks' or 'tokens', got 'bytes'"


def test_the_curve_steps_at_each_distinct_distance():
    # references 1 2 | 1 2 3 | 4 | 1 5 | 1 2 3 (the hand trace of test_workload): hit distances sorted
    # 1 1 1 3 4 4 of 11 references; the ratio steps at capacities 2 (3 hits), 4 (4) and 5 (6)
    r = _reuse([[1, 2], [1, 2, 3], [4], [1, 5], [1, 2, 3]])
    caps, ratios = r.curve()
    assert caps.tolist() == [2.0, 4.0, 5.0]
    assert ratios.tolist() == pytest.approx([3 / 11, 4 / 11, 6 / 11])
    # weighted by tokens at 2 tokens a block every block holds 2: the same fractions
    assert r.curve("tokens")[1].tolist() == pytest.approx([3 / 11, 4 / 11, 6 / 11])


def test_the_curve_with_one_hit_distance():
    # A A A: distances -1 0 0; one step, at capacity 1, to 2 of 3
    caps, ratios = _reuse([[1], [1], [1]]).curve()
    assert caps.tolist() == [1.0] and ratios.tolist() == pytest.approx([2 / 3])


def test_capacity_for_a_full_share_takes_the_farthest_hit():
    # one block reused at distance 50 among 199 reuses at distance 0 (200 hits): all of them need 51 blocks,
    # 99 % (198 hits) need 1
    blocks = [[1000], *[[i] for i in range(1, 51)], [1000], *[[7]] * 200]
    r = _reuse(blocks)
    assert r.capacity_for(1.0) == 51
    assert r.capacity_for(0.99) == 1


def test_hit_tokens_counts_distance_zero_and_every_request():
    # A | A | B: the second A hits at distance 0 in a 1-block cache; the last request has no hit
    # but still has its row (three requests, three rows)
    r = _reuse([[1], [1], [2]], block_tokens=4)
    blocks, tokens = r.hit_tokens(1)
    assert blocks.tolist() == [0, 1, 0] and tokens.tolist() == [0, 4, 0]
    # a last request with an empty prompt still has its row
    rows = [{"timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": [1]}] * 2
    rows.append({"timestamp": 1, "input_length": 0, "output_length": 1, "hash_ids": []})
    blocks, tokens = workload.Reuse.of(workload.parse_trace(_text(rows), "t", 1)).hit_tokens()
    assert blocks.tolist() == [0, 1, 0] and tokens.tolist() == [0, 1, 0]
    # distance 1 does not fit a 1-block cache: A B A
    blocks, _ = _reuse([[1], [2], [1]]).hit_tokens(1)
    assert blocks.tolist() == [0, 0, 0]


def test_prefix_flops_use_the_flops_per_parameter_token():
    # k = 3 instead of 2: 3 x 1e9 x 4 = 1.2e10; with 1e6 FLOP a position: + 1e6 x 4 x 5 / 2 = 1e7
    rc = workload.RegenCosts(**{**vars(RC), "flops_per_param_token": 3.0, "attention_flops_per_position": 1e6})
    assert rc.prefix_flops(np.array([4.0])).tolist() == [1.2e10 + 1e7]


def test_lone_time_is_the_roofline_and_zero_without_tokens():
    # 0 tokens: 0; 1 and 500 tokens: memory-bound, 4 ms; 4000 tokens: compute 4e-6 x 4000 = 16 ms
    assert RC.lone_s(np.array([0, 1, 500, 4000])).tolist() == pytest.approx([0.0, 4e-3, 4e-3, 1.6e-2])
    # weights of 1e6 B (2 µs to read): one token is compute-bound at 4 µs, two at 8 µs
    light = workload.RegenCosts(**{**vars(RC), "weight_bytes": 1e6})
    assert light.lone_s(np.array([1, 2])).tolist() == pytest.approx([4e-6, 8e-6])


def test_lone_memory_bound_where_the_weights_outlast_the_compute():
    # 0 tokens is no pass at all; 1 and 500 tokens (2 ms of compute) are memory-bound (4 ms);
    # at 1000 tokens compute is 4 ms too, a tie, which is not memory-bound; 4000 tokens are compute-bound
    assert RC.lone_memory_bound(np.array([0, 1, 500, 1000, 4000])).tolist() == [False, True, True, False, False]


def test_saving_per_second_of_trace():
    # A | A | B over 0.5 s at 4 tokens a block: in an unbounded cache the second A hits, 4 tokens
    r = _reuse([[1], [1], [2]], times_ms=[0, 250, 500], block_tokens=4)
    sv = workload.saving(r, RC, 2)
    assert sv.capacity_blocks == 2.0 and isinstance(sv.capacity_blocks, float)
    assert sv.hit_ratio_blocks == pytest.approx(1 / 3)  # 1 hit of 3 references
    assert sv.hit_tokens_per_s == pytest.approx(8.0)  # 4 tokens / 0.5 s
    assert sv.hit_bytes_per_s == pytest.approx(8000.0)  # 4 tokens x 1000 B / 0.5 s
    # inside a batch: 4 x 4e-6 s / 0.5 s = 3.2e-5; alone: 4 ms / 0.5 s = 8e-3
    assert sv.in_batch_gpu_s_per_s == pytest.approx(3.2e-5)
    assert sv.lone_gpu_s_per_s == pytest.approx(8e-3)
    assert sv.lone_memory_bound_share == 1.0


def test_saving_with_no_hits_and_with_no_duration():
    # no hit: nothing memory-bound (0, not the mean of nothing)
    assert workload.saving(_reuse([[1], [2]]), RC).lone_memory_bound_share == 0.0
    # a trace whose requests all arrive at once has no rate: NaN per second
    sv = workload.saving(_reuse([[1], [1]], times_ms=[0, 0]), RC)
    assert math.isnan(sv.hit_tokens_per_s) and math.isnan(sv.lone_gpu_s_per_s)


def test_a_one_token_hit_is_counted_in_the_memory_bound_share():
    # 1 token a block; the single hit holds 1 token and is memory-bound alone (4e-6 s of compute < 4 ms)
    assert workload.saving(_reuse([[1], [1]]), RC).lone_memory_bound_share == 1.0


# ---------------------------------------------------------------------------
# percentiles and the report
# ---------------------------------------------------------------------------


def test_percentiles_by_hand():
    # numpy's linear interpolation over 1 2 3 4: p50 at rank 1.5 -> 2.5; p90 at 2.7 -> 3.7; p99 at 2.97 -> 3.97
    assert workload.percentiles(np.array([4, 1, 3, 2])) == pytest.approx(
        {"p50": 2.5, "p90": 3.7, "p99": 3.97, "max": 4}
    )
    assert workload.percentiles([1, 2, 3, 4], (25,)) == pytest.approx({"p25": 1.75, "max": 4.0})
    empty = workload.percentiles(np.array([]))
    assert list(empty) == ["p50", "p90", "p99", "max"] and all(math.isnan(v) for v in empty.values())


def test_the_report_by_hand():
    # A | A | B over 0.5 s at 4 tokens a block (inputs 4 4 4, outputs 1 1 1)
    r = _reuse([[1], [1], [2]], times_ms=[0, 250, 500], block_tokens=4)
    rep = workload.report(r, RC, [_link()], targets_pct=(50, 100))
    assert [t["target_pct"] for t in rep["tiers"]] == [50, 100]  # 100 once, though asked for
    assert rep["trace"]["requests_per_s"] == 6.0  # 3 requests / 0.5 s
    assert rep["trace"]["input_tokens"] == {"p50": 4.0, "p90": 4.0, "p99": 4.0, "max": 4.0, "mean": 4.0}
    assert rep["blocks"]["hit_ratio_infinite_blocks"] == pytest.approx(1 / 3)
    assert rep["blocks"]["hit_ratio_infinite_tokens"] == pytest.approx(4 / 12)
    # the one reuse comes 0.25 s after its first reference
    assert rep["blocks"]["reuse_interval_s"]["mean"] == 0.25
    tier = rep["tiers"][1]
    assert list(tier) == [
        "target_pct",
        "capacity_blocks",
        "capacity_bytes",
        "hit_ratio_blocks",
        "hit_ratio_tokens",
        "hit_tokens_per_s",
        "hit_bytes_per_s",
        "in_batch_gpu_s_per_s",
        "lone_gpu_s_per_s",
        "lone_memory_bound_share",
        "links",
    ]
    assert tier["capacity_blocks"] == 1.0 and tier["capacity_bytes"] == 4000.0  # 1 block x 4 tokens x 1000 B
    # fetching the hit: 1 ms + 4,000 B / 1e6 B/s = 5 ms, over 0.5 s: 0.01 link-seconds a second
    link = tier["links"][0]
    assert link["fetch_link_s_per_s"] == pytest.approx(0.01)
    # saved per second inside a batch 3.2e-5 and alone 8e-3, over 0.01: 3.2e-3 and 0.8
    assert link["in_batch_over_fetch"] == pytest.approx(3.2e-3)
    assert link["lone_over_fetch"] == pytest.approx(0.8)


def test_the_report_of_a_trace_without_duration_or_hits():
    # both requests at once: no rates
    rep = workload.report(_reuse([[1], [1]], times_ms=[0, 0]), RC, [_link()], targets_pct=(50,))
    assert math.isnan(rep["trace"]["requests_per_s"])
    assert math.isnan(rep["tiers"][0]["links"][0]["fetch_link_s_per_s"])
    # no reuse at all: nothing to fetch, so no ratio to it; no interval to average
    rep = workload.report(_reuse([[1], [2]]), RC, [_link()], targets_pct=(50,))
    link = rep["tiers"][0]["links"][0]
    assert link["fetch_link_s_per_s"] == 0.0
    assert math.isnan(link["in_batch_over_fetch"]) and math.isnan(link["lone_over_fetch"])
    assert math.isnan(rep["blocks"]["reuse_interval_s"]["mean"])


def test_the_report_sizes_each_target_on_its_share():
    # the farthest-hit trace: 100 % needs 51 blocks; a share of 99 % needs 1 (see capacity_for above)
    blocks = [[1000], *[[i] for i in range(1, 51)], [1000], *[[7]] * 200]
    rep = workload.report(_reuse(blocks), RC, targets_pct=(99,))
    assert [(t["target_pct"], t["capacity_blocks"]) for t in rep["tiers"]] == [(99, 1.0), (100, 51.0)]


def test_a_half_second_trace_has_a_rate():
    # 2 requests 0.5 s apart: 4 a second (a duration under 1 s is still a duration)
    rep = workload.report(_reuse([[1], [1]], times_ms=[0, 500]), RC, [_link()], targets_pct=(50,))
    assert rep["trace"]["requests_per_s"] == 4.0
    # the hit: 1 ms + 1 token x 1000 B / 1e6 B/s = 2 ms, over 0.5 s = 4e-3
    assert rep["tiers"][0]["links"][0]["fetch_link_s_per_s"] == pytest.approx(4e-3)


def test_a_shipped_trace_path_is_a_real_file():
    where, path = workload.trace_path("synthetic")
    assert where == "synthetic" and Path(path).is_file()


@pytest.mark.parametrize("ids", [[], [5], [3, -1, 3, 2**63 - 1, -(2**63), -1]])
def test_dense_ids_are_the_ranks_np_unique_gives(ids):
    # [3, -1, 3, 2**63 - 1, -2**63, -1]: sorted distinct -2**63 < -1 < 3 < 2**63 - 1 -> ranks 2 1 2 3 0 1
    raw = np.array(ids, dtype=np.int64)
    dense = workload.dense_ids(raw)
    assert dense.dtype == np.int64 and dense.tolist() == np.unique(raw, return_inverse=True)[1].tolist()


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


def test_fetching_pays_the_latency_once_a_transfer_and_a_block_may_take_several():
    # 2 hit blocks of 8 tokens at 1,000 B a token over 1e6 B/s with 1 ms a transfer (costs.fetch_time_s):
    # 1 transfer a block: 2 x 1 ms + 8,000 / 1e6 = 10 ms; 3 a block (a per-layer layout): 6 x 1 ms + 8 ms = 14 ms
    assert RC.fetch_transfers == 1
    assert RC.fetch_s(np.array([2]), np.array([8]), 1e6, 1e-3).tolist() == pytest.approx([10e-3], rel=1e-12)
    chunked = workload.RegenCosts(**{**vars(RC), "fetch_transfers": 3})
    assert chunked.fetch_s(np.array([2, 0]), np.array([8, 0]), 1e6, 1e-3).tolist() == pytest.approx([14e-3, 0.0])
    # the report's links: A | A | B over 0.5 s at 4 tokens a block, one hit of 1 block and 4,000 B:
    # 3 x 1 ms + 4 ms = 7 ms over 0.5 s = 0.014 link-seconds a second (0.01 with one transfer a block)
    r = _reuse([[1], [1], [2]], times_ms=[0, 250, 500], block_tokens=4)
    one, three = (workload.report(r, rc, [_link()], targets_pct=(100,))["tiers"][0]["links"][0] for rc in (RC, chunked))
    assert one["fetch_link_s_per_s"] == pytest.approx(0.01, rel=1e-12)
    assert three["fetch_link_s_per_s"] == pytest.approx(0.014, rel=1e-12)


def test_the_layout_reaches_the_workload_from_the_assumption_set():
    from kvtier.inputs.assumptions import load_assumptions
    from kvtier.scenario import Scenario

    # Llama-3-70B: a K and a V chunk in each of 80 layers, 160 transfers a block when fetched per layer
    assert workload.RegenCosts.of(Scenario(), "conservative").fetch_transfers == 1
    per_layer = Scenario(load_assumptions(sets={"fetch_layout": "per-layer"}))
    assert workload.RegenCosts.of(per_layer, "conservative").fetch_transfers == 160


def test_recomputing_a_hit_costs_what_the_cost_page_charges_a_block():
    from kvtier.report.pages import page_of
    from kvtier.scenario import Scenario

    # one implementation: costs.regen_flops and costs.compute_time_s inside a batch, the roofline alone.
    # Llama-3-70B at the seed, a 16-token prefix from position 0: 2 x 70e9 x 16 = 2.24e12 FLOP plus attention
    # 2 x 80 layers x 64 heads x (128 + 128) = 2,621,440 FLOP a position x 16 x 17 / 2 = 136 positions
    # = 356,515,840 FLOP; / (500e12 x 25 %) = 2,240,356,515,840 / 1.25e14 = 17.92285 ms.  Alone: the
    # weights' read, 140e9 B / (3.35e12 B/s x 80 %) = 52.2388 ms, outlasts the compute
    s = Scenario()
    rc = workload.RegenCosts.of(s, "conservative")
    in_batch, lone = float(rc.in_batch_s(np.array([16.0]))[0]), float(rc.lone_s(np.array([16.0]))[0])
    assert in_batch == pytest.approx(2_240_356_515_840 / 1.25e14, rel=1e-12)
    assert lone == pytest.approx(140e9 / (3.35e12 * 0.8), rel=1e-12)
    assert rc.lone_memory_bound(np.array([16.0])).tolist() == [True]
    # the scenario's regimes, which the cost page prices, give the same numbers to the last bit
    assert in_batch == float(s.in_batch_regen_s(0, "resident", 0.25))
    assert lone == float(s.lone_regen_s(0, "resident", 0.25))
    blocks = next(t for t in page_of("13_cost").tables if t.name == "cost_blocks").build(s)
    regen_ms = blocks.set_index(["block_tokens", "regime"])["regen_ms"]
    assert regen_ms[(16, "batch")] == pytest.approx(in_batch * 1e3, rel=1e-12)
    assert regen_ms[(16, "lone")] == pytest.approx(lone * 1e3, rel=1e-12)
