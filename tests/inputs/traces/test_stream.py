"""kvtier.inputs.traces.stream: the exact LRU curve of a trace read in chunks, by hand, and by windows."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pytest

import kvtier.inputs.traces.stream as streaming
from kvtier.errors import KvtierError
from kvtier.formulas.cache.stream import LruStream
from kvtier.inputs import traces
from kvtier.inputs.traces.read import Requests, request_starts
from tests.conftest import BAD, write_trace
from tests.oracles import HAND_ROWS, row

# ---------------------------------------------------------------------------
# stream_lru on a hand trace, in any chunks
# ---------------------------------------------------------------------------


# blocks at distance 0, 1, 2, 3: 1 (idx 6), 3 (idx 2, 3, 8), 0, 1 (idx 7)
HAND_COUNTS_BLOCKS = [1, 3, 0, 1]


# tokens at distance 0: 1; 1: 4 + 4 + 2 = 10; 3: 4
HAND_COUNTS_TOKENS = [1, 10, 0, 4]


def test_stream_lru_equals_the_in_memory_analysis(hand):
    for name, block, chunk in (("synthetic", 512, 700), (str(hand), 4, 2)):
        whole = traces.analyse(name, block)
        h = traces.stream_lru(name, block, chunk_refs=chunk)
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


def test_read_dense_is_the_trace_numbered_in_order_of_first_use(hand):
    # HAND: [1 2] [1 2 3] [4] [1 5] [1 2 3]; chained prefix ids, numbered as they first come: 0 1 | 0 1 2 | 3 | 0 4 |
    # 0 1 2 (block 5 after 1 is a prefix of its own, [1 5], not [1 2]'s second block); 4 B a reference
    blocks, starts = traces.read_dense(hand, 4)
    assert blocks.dtype == np.int32
    assert blocks.tolist() == [0, 1, 0, 1, 2, 3, 0, 4, 0, 1, 2]
    assert starts.tolist() == [0, 2, 5, 6, 8, 11]
    # the same ids up to their names as the in-memory reader's: equal where they are equal
    whole = traces.read_trace(hand, 4).blocks
    assert (np.equal.outer(whole, whole) == np.equal.outer(blocks, blocks)).all()
    # read in many chunks, the synthetic trace numbers alike (every reference to the same block, the same id)
    syn, _ = traces.read_dense("synthetic", 512)
    mem = traces.read_trace("synthetic", 512).blocks
    first = {}
    assert all(first.setdefault(int(m), int(d)) == int(d) for m, d in zip(mem, syn, strict=True))
    assert len(first) == len(set(syn.tolist()))


def test_read_dense_refuses_a_trace_past_its_limit_in_one_line(hand):
    with pytest.raises(KvtierError) as info:
        traces.read_dense(hand, 4, max_refs=10)
    assert (
        str(info.value)
        == f"{hand}: more than 10 block references, the most the eviction policies are replayed on exactly"
    )


@pytest.mark.parametrize("case", ["missing field", "timestamp backwards", "hash_ids length"])
def test_stream_lru_refuses_bad_lines_like_the_reader(case, tmp_path):
    rows, line, message = BAD[case]
    path = write_trace(tmp_path / "bad.jsonl", rows)
    with pytest.raises(KvtierError) as err:
        traces.stream_lru(path)
    assert str(err.value).startswith(f"{path}: line {line}: ") and message in str(err.value)


@pytest.mark.parametrize("chunk", [1, 2, 3, 1 << 20])
def test_stream_lru_on_the_hand_trace(tmp_path, chunk):
    path = write_trace(tmp_path / "hand.jsonl", HAND_ROWS)
    h = traces.stream_lru(path, 4, chunk_refs=chunk, count="per-block")  # the hand counts are per block
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


@pytest.mark.parametrize("chunk", [1, 3, 1 << 20])
def test_stream_lru_counts_hits_up_to_each_request_s_first_miss(tmp_path, chunk):
    # the hand trace's stack distances per request: (-1 -2) -1 -1 | (-1 -2 5) 1 1 -1 | (7 7) -1 0 | (-1 7) 3 1.
    # Up to the first miss: the running largest, a miss ending the request's hits: -1 -1 | 1 1 -1 | -1 -1 | 3 3.
    # So 2 hits at distance 1 (4 + 4 tokens) and 2 at distance 3 (4 + 2 tokens), where per block 5 hits count
    path = write_trace(tmp_path / "hand.jsonl", HAND_ROWS)
    h = traces.stream_lru(path, 4, chunk_refs=chunk)
    assert h.count == "prefix"
    assert h.counts["blocks"].tolist() == [0, 2, 0, 2] and h.counts["tokens"].tolist() == [0, 8, 0, 6]
    # 4 of 9 at any capacity of 4 or more; at 2 and 3: 2 of 9 (per block 4 of 9: 2 more)
    assert (h.hit_ratio(), h.hit_ratio(2)) == (pytest.approx(4 / 9), pytest.approx(2 / 9))
    # per block at capacity 2: hits at distances 0 and 1 (1 + 3 = 4 of 9): 2/9 more than up to the first miss
    assert h.other.hit_ratio(2) - h.hit_ratio(2) == pytest.approx(2 / 9)


@pytest.mark.parametrize("share", [0, -0.5, 1.5, 2])
def test_capacity_for_refuses_a_share_outside_zero_to_one(tmp_path, share):
    h = traces.stream_lru(write_trace(tmp_path / "hand.jsonl", HAND_ROWS), 4)
    with pytest.raises(ValueError) as err:
        h.capacity_for(share)
    assert str(err.value) == f"share must be in (0, 1], got {share!r}"


def test_a_trace_without_hits_has_an_empty_histogram(tmp_path):
    # two distinct blocks, each used once: no hit, empty histograms
    h = traces.stream_lru(write_trace(tmp_path / "cold.jsonl", [row(0, [1, 2], 8)]), 4)
    assert h.counts["blocks"].tolist() == [] and h.counts["tokens"].tolist() == []
    assert h.total == {"blocks": 2.0, "tokens": 8.0}
    assert h.hit_ratio() == 0.0
    assert h.capacity_for(1.0) == 0


def test_a_trace_without_blocks_has_ratio_zero(tmp_path):
    # one request of 0 tokens: no reference at all, total 0
    h = traces.stream_lru(write_trace(tmp_path / "empty.jsonl", [row(0, [], 0)]), 4)
    assert (h.n_requests, h.n_refs, h.n_unique) == (1, 0, 0)
    assert h.total == {"blocks": 0.0, "tokens": 0.0}
    assert h.hit_ratio() == 0.0 and h.hit_ratio(5, "tokens") == 0.0
    assert h.capacity_for(1.0) == 0


def test_capacity_for_with_hits_only_at_distance_one(tmp_path):
    # 1 2 1 2: distances -1 -1 1 1, histogram [0, 2]: all the hits need 2 blocks
    h = traces.stream_lru(write_trace(tmp_path / "two.jsonl", [row(0, [1, 2, 1, 2], 16)]), 4, count="per-block")
    assert h.counts["blocks"].tolist() == [0, 2]
    assert h.capacity_for(1.0) == 2
    assert h.capacity_for(0.5) == 2  # 1 hit of 2 still needs distance 1


def test_capacity_for_with_a_single_hit(tmp_path):
    # 1 1: distances -1 0, histogram [1]: one block of capacity
    h = traces.stream_lru(write_trace(tmp_path / "one.jsonl", [row(0, [1, 1], 8)]), 4, count="per-block")
    assert h.counts["blocks"].tolist() == [1]
    assert h.capacity_for(1.0) == 1
    assert h.hit_ratio(1) == 0.5  # 1 hit of 2 references


def test_falls_are_counted_in_every_chunk_at_their_own_requests(tmp_path):
    # request 1: 5 5 -> -1 0, a fall at its second block; request 2: 3 4 4 -> -1 -1 0, a fall at its third.
    # chunk_refs 2: one chunk a request, each fall counted once: 2
    path = write_trace(tmp_path / "falls.jsonl", [row(0, [5, 5], 8), row(1, [3, 4, 4], 12)])
    for chunk in (2, 1 << 20):
        h = traces.stream_lru(path, 4, chunk_refs=chunk, count="per-block")
        assert h.requests_with_a_distance_that_falls == 2
        assert h.counts["blocks"].tolist() == [2]  # two hits at distance 0


def test_stream_lru_with_one_token_blocks(tmp_path):
    # block_tokens 1: 2 tokens need 2 ids; 1 1 -> -1 0
    h = traces.stream_lru(write_trace(tmp_path / "one.jsonl", [row(0, [9, 9], 2)]), 1, count="per-block")
    assert h.total == {"blocks": 2.0, "tokens": 2.0}
    assert h.hit_ratio() == 0.5


@pytest.mark.parametrize(
    ("block_tokens", "shown"),
    [(0, "0"), (-4, "-4"), (2.5, "2.5"), (np.float64(2.5), "np.float64(2.5)"), (2**31 + 1, "2147483649")],
)
def test_stream_lru_refuses_bad_block_tokens(tmp_path, block_tokens, shown):
    path = write_trace(tmp_path / "hand.jsonl", HAND_ROWS)
    with pytest.raises(KvtierError) as err:
        traces.stream_lru(path, block_tokens)
    assert str(err.value) == f"block tokens must be a whole number from 1 to 2,147,483,648, got {shown}"


def test_stream_lru_names_an_empty_trace(tmp_path):
    path = write_trace(tmp_path / "blank.jsonl", ["", "  "])
    with pytest.raises(KvtierError) as err:
        traces.stream_lru(path)
    assert str(err.value) == f"{path}: the trace holds no requests"


def test_stream_lru_names_a_hash_id_past_64_bits(tmp_path):
    path = write_trace(tmp_path / "big.jsonl", [row(0, [1], 4), row(1, [2**64], 4)])
    with pytest.raises(KvtierError) as err:
        traces.stream_lru(path, 4)
    assert str(err.value) == f"{path}: line 2: a hash id does not fit in 64 bits, signed or unsigned"


def test_stream_lru_names_a_line_that_is_not_utf8(tmp_path):
    path = tmp_path / "latin.jsonl"
    path.write_bytes(json.dumps(row(0, [1], 4)).encode() + b"\n" + b'{"timestamp": "\xe9"}\n')
    with pytest.raises(KvtierError) as err:
        traces.stream_lru(path, 4)
    assert str(err.value) == f"{path}: line 2: not UTF-8 text"


def test_stream_lru_names_a_file_it_cannot_open(tmp_path):
    # a directory exists but is refused before it is opened, as the in-memory reader refuses it
    with pytest.raises(KvtierError) as err:
        traces.stream_lru(tmp_path)
    assert str(err.value).startswith(f"{tmp_path}: trace is a directory, not a regular file")


def test_stream_lru_takes_the_largest_block(tmp_path):
    # four blocks of 2**31 tokens (the largest block): 4 x 2**31 = 2**33 = 8,589,934,592 tokens
    path = write_trace(tmp_path / "huge.jsonl", [row(0, [1, 2, 3, 4], 4 * 2**31)])
    h = traces.stream_lru(path, 2**31)
    assert h.total == {"blocks": 4.0, "tokens": 2.0**33}


# ---------------------------------------------------------------------------
# The compiled scanner (scan_columns) against the validating reader: the same arrays, the same errors.
#
# The streamed analysis reads a trace in blocks of whole lines; a block whose every line is a plain,
# valid request is read by the scanner, any other by the validating reader, line by line.  These
# tests hold the two to the same arrays on hand-checked lines, to the same one-line error on bad
# input wherever it sits, and the stream's chunks to where the line-by-line reader put them.
# ---------------------------------------------------------------------------

FMT = traces.TRACE_FORMATS["mooncake"]


def stream_lru_line_by_line(path: Path, chunk_refs: int, rate: float) -> LruStream:
    """The streamed analysis with every line through the validating reader, in batches of BATCH_LINES lines or
    BATCH_CHARS characters, a chunk fed after the first batch that brings the references held to
    max(chunk_refs, distinct blocks / 4)."""
    stream = LruStream("prefix", None, rate)
    req = Requests(str(path), 512, FMT)

    def flush() -> None:
        starts = request_starts(req.counts)
        if len(req.counts):
            stream.feed(
                np.frombuffer(req.ids, dtype=np.int64).copy(),
                starts,
                np.frombuffer(req.inputs, dtype=np.int64),
                512,
                np.frombuffer(req.outputs, dtype=np.int64),
                np.frombuffer(req.stamps, dtype=float) / FMT.units_per_s,
            )
        for column in (req.stamps, req.inputs, req.outputs, req.counts, req.ids):
            del column[:]

    lines = chars = 0
    for number, text in traces.trace_lines(path, str(path)):
        req.add(number, text)
        lines, chars = lines + 1, chars + len(text)
        if lines >= streaming.BATCH_LINES or chars >= streaming.BATCH_CHARS:  # a batch ends here
            lines = chars = 0
            if len(req.ids) >= max(chunk_refs, len(stream) // 4):
                flush()
    flush()
    return stream


def same(a, b) -> bool:
    """Equal values, arrays equal element by element and in dtype, through dicts and tuples."""
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
    return a == b or (a != a and b != b)  # NaN first and last times compare equal


@pytest.mark.parametrize("rate", [1.0, 0.5])
def test_the_stream_feeds_the_same_chunks_as_the_line_by_line_reader(tmp_path, monkeypatch, rate):
    # small batches and blocks, so that batches straddle blocks and chunks end inside blocks
    monkeypatch.setattr("kvtier.inputs.traces.stream.BATCH_LINES", 7)
    monkeypatch.setattr("kvtier.inputs.traces.stream.BATCH_CHARS", 900)
    monkeypatch.setattr("kvtier.inputs.traces.files.BLOCK_BYTES", 1500)
    trace = traces.generate_trace(400, seed=5, new_blocks=(1, 6))
    path = write_trace(tmp_path / "t.jsonl", list(traces.to_jsonl(trace)))
    fed: list[int] = []
    original = LruStream.feed

    def counting(self, ids, *args, **kwargs):
        fed.append(ids.size)
        return original(self, ids, *args, **kwargs)

    monkeypatch.setattr(LruStream, "feed", counting)
    want = stream_lru_line_by_line(path, 50, rate).histogram(str(path), 400, "mooncake", 512)
    before, fed[:] = list(fed), []
    got = traces.stream_lru(path, chunk_refs=50, sample_rate=rate)
    # many chunks, each of the references the line-by-line reader fed at once
    assert len(fed) > 5 and fed == before and sum(fed) == trace.n_refs
    for field in dataclasses.fields(got):
        assert same(getattr(got, field.name), getattr(want, field.name)), field.name


@pytest.mark.parametrize(("window_min", "warmup_min"), [(5.0, 0.0), (5.0, 5.0), (1.0, 3.0)])
def test_windows_streamed_are_the_windows_of_the_trace_in_memory(window_min, warmup_min):
    # one pass over the file in small chunks (1,000 references, so windows and warm-ups straddle them) feeding the
    # windows' tally, against distributed.windowed replaying each window of the trace in memory: the same
    # histogram, count for count
    from kvtier.formulas.cache.replay import WindowTally
    from kvtier.formulas.cache.trace import DEFAULT_HIT_COUNT
    from kvtier.inputs import distributed

    t = traces.read_trace("conversation")
    whole = distributed.windowed([distributed.part_of(t)], window_min * 60, warmup_min * 60, t.block_tokens)
    tally = WindowTally(float(t.timestamps_s[0]), window_min * 60, warmup_min * 60, DEFAULT_HIT_COUNT)
    traces.stream_lru("conversation", chunk_refs=1_000, observers=[tally])
    assert tally.counts.astype(float).tolist() == whole.counts["blocks"].tolist()
    # 288,500 references in all, whichever window counts them
    assert tally.total == whole.total["blocks"] == whole.n_refs == 288_500
    with pytest.raises(KvtierError, match="--window"):
        traces.check_window(0.0, 0.0)
