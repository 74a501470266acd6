"""kvtier.inputs.traces, by hand: formats, the validation messages, the line splitter, the in-memory reader,
the stream and the generator."""

from __future__ import annotations

import dataclasses
import json
import math
import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvtier.errors import KvtierError
from kvtier.formulas import reuse as workload
from kvtier.inputs import traces
from tests.conftest import BAD, trace_of, trace_text, write_trace
from tests.oracles import HAND_ROWS, row

HAND_BLOCK_TOKENS = 4


# lengths at 16 tokens a block: ceil(40/16) = 3, ceil(70/16) = 5, ceil(32/16) = 2, ceil(90/16) = 6 ids: 16 references.
# Chained, block 11 after 99 (request 3) is another prefix than 11 after 10. Naming the chained ids
# A=(10) B=(10,11) C=(..12) D=(..13) E=(..14) X=(99) Y=(99,11) F=(..15), the references are
#   A B C | A B C D E | X Y | A B C D E F
# stack distances: A B C again after {B,C}, {C,A}, {A,B}: 2 2 2; in request 4 each of A..E has six others since: 6
QWEN_DISTANCES = [-1, -1, -1, 2, 2, 2, -1, -1, -1, -1, 6, 6, 6, 6, 6, -1]


FIELDS_TEXT = "timestamp, input_length, output_length, hash_ids"


def write_lines(path: Path, rows: list) -> Path:
    """One line per row: a dict as JSON, a str as it is."""
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


# ---------------------------------------------------------------------------
# stream_lru on a hand trace, in any chunks
# ---------------------------------------------------------------------------


# blocks at distance 0, 1, 2, 3: 1 (idx 6), 3 (idx 2, 3, 8), 0, 1 (idx 7)
HAND_COUNTS_BLOCKS = [1, 3, 0, 1]


# tokens at distance 0: 1; 1: 4 + 4 + 2 = 10; 3: 4
HAND_COUNTS_TOKENS = [1, 10, 0, 4]


def conversation(n: int, **kw) -> tuple[workload.Trace, list[list[int]]]:
    t = traces.generate_trace(n, **kw)
    return t, [t.blocks[a:b].tolist() for a, b in zip(t.starts[:-1], t.starts[1:], strict=True)]


REQ2 = {"timestamp": 0, "input_length": 2, "output_length": 1, "hash_ids": [1, 2]}
"""A valid request of 2 tokens (two blocks at 1 token a block); the cases below change one field of it."""


@pytest.mark.parametrize(
    ("content", "message"),
    [("", "the trace holds no requests"), ("\n\n", "the trace holds no requests")],
)
def test_an_empty_trace_is_refused(tmp_path, content, message):
    path = tmp_path / "empty.jsonl"
    path.write_text(content)
    with pytest.raises(KvtierError, match=f"^{path}: {message}$"):
        traces.read_trace(path)


# ---------------------------------------------------------------------------
# the shipped traces and the page
# ---------------------------------------------------------------------------


def test_the_shipped_traces_counted_directly_agree_and_hits_are_prefixes():
    for name, n_requests in (("conversation", 12_031), ("synthetic", 3_993)):
        _, path = traces.trace_path(name)
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        ids = [h for row in rows for h in row["hash_ids"]]
        r = traces.analyse(name)
        assert (r.trace.n_requests, r.trace.n_refs, r.trace.n_unique) == (n_requests, len(ids), len(set(ids)))
        # an infinite cache misses each distinct block once: hit ratio = 1 - unique / references
        assert float(r.hit_ratio()) == pytest.approx(1 - len(set(ids)) / len(ids))
        assert (r.requests_with_a_hit_after_a_miss, r.requests_with_a_distance_that_falls) == (0, 0)


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
    r = workload.Reuse.of(again)
    assert r.requests_with_a_distance_that_falls == 0 and 0 < float(r.hit_ratio()) < 1
    assert math.isclose(float(r.hit_ratio(r.capacity_for(1.0))), float(r.hit_ratio()))


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


@pytest.mark.parametrize("case", ["missing field", "timestamp backwards", "hash_ids length"])
def test_stream_lru_refuses_bad_lines_like_the_reader(case, tmp_path):
    rows, line, message = BAD[case]
    path = write_trace(tmp_path / "bad.jsonl", rows)
    with pytest.raises(KvtierError) as err:
        traces.stream_lru(path)
    assert str(err.value).startswith(f"{path}: line {line}: ") and message in str(err.value)


def test_a_qwen_trace_is_read_in_seconds_with_its_ids_chained(qwen):
    r = workload.Reuse.of(traces.read_trace(qwen, 16, "qwen"))
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
    r = workload.Reuse.of(traces.read_trace(qwen, 16))
    # 6.0 read as milliseconds: 0.006 s
    assert r.trace.duration_s == pytest.approx(0.006)
    # unchained, block 11 of request 3 "hits" after 99 missed: counted per block 9 hits of 16, and one request
    # with a hit after a miss; counted up to each request's first miss (the default) that hit is not one: 8 of 16
    assert float(r.recounted("per-block").hit_ratio()) == 9 / 16 and r.requests_with_a_hit_after_a_miss == 1
    assert r.count == "prefix" and float(r.hit_ratio()) == 8 / 16


def test_the_formats_are_the_keys_choices():
    from kvtier.inputs.assumptions import SCHEMA, seed

    assert SCHEMA["workload.trace_format"].choices == tuple(traces.TRACE_FORMATS)
    assert seed().value("workload.trace_format") == traces.DEFAULT_FORMAT
    # Mooncake: ms, chained, 512 tokens an id; Qwen: s, one id per 16-token block
    assert [(f.unit, f.units_per_s, f.chained, f.block_tokens) for f in traces.TRACE_FORMATS.values()] == [
        ("ms", 1e3, True, 512),
        ("s", 1.0, False, 16),
    ]


# ---------------------------------------------------------------------------
# one line splitter for both readers
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("size", [1, 2, 3, 7, 64, 1 << 20])
def test_split_lines_gives_the_same_lines_from_pieces_of_any_size(size):
    # \n ends a line; \r\n too (its \r dropped); a lone \r, \x0c, U+0085 and U+2028 do not; blanks count but are skipped
    data = "a\r\nb\rc\n\n  \t\nd\x0ce\u0085f\u2028g\n\nh".encode()
    pieces = [data[i : i + size] for i in range(0, len(data), size)]
    assert list(traces.split_lines(pieces, "t")) == [(1, "a"), (2, "b\rc"), (5, "d\x0ce\u0085f\u2028g"), (7, "h")]


def test_the_in_memory_reader_stops_at_its_reference_limit_and_the_stream_does_not(hand, monkeypatch, capsys):
    # HAND holds 2 + 3 + 1 + 2 + 3 = 11 references; with a limit of 5, line 3 would bring 2 + 3 + 1 = 6
    monkeypatch.setattr(traces, "MAX_TRACE_REFS", 5)
    with pytest.raises(KvtierError) as err:
        traces.read_trace(hand, HAND_BLOCK_TOKENS)
    assert str(err.value) == (
        f"{hand}: line 3: more than 5 block references, the most the in-memory analysis holds (about 110 B each);"
        " use --stream"
    )
    assert traces.stream_lru(hand, HAND_BLOCK_TOKENS).n_refs == 11


@pytest.mark.parametrize(("limit", "line"), [(5, 3), (7, 4), (10, 5)])
def test_the_in_memory_reader_names_the_line_past_its_limit_across_blocks(hand, monkeypatch, limit, line):
    # blocks of a line or two (16-byte reads, every read a block): the count carries from block to block.
    # HAND's references, cumulative: 2, 5, 6, 8, 11 -> past 5 at line 3, past 7 at line 4, past 10 at line 5
    monkeypatch.setattr(traces, "MAX_TRACE_REFS", limit)
    monkeypatch.setattr(traces, "READ_BYTES", 16)
    monkeypatch.setattr(traces, "BLOCK_BYTES", 1)
    with pytest.raises(KvtierError, match=rf": line {line}: more than {limit} block references"):
        traces.read_trace(hand, HAND_BLOCK_TOKENS)
    monkeypatch.setattr(traces, "MAX_TRACE_REFS", 11)  # exactly what it holds: read whole, as in one block
    assert traces.read_trace(hand, HAND_BLOCK_TOKENS).n_refs == 11


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
        traces.parse_trace(row, "bad.jsonl", 1)
    assert str(info.value) == f"bad.jsonl: line 1: {message}"


def test_whole_messages_for_a_bad_trace():
    with pytest.raises(KvtierError) as info:
        traces.parse_trace(trace_text([{**REQ2, "timestamp": 5}, {**REQ2, "timestamp": 4.5}]), "t.jsonl", 1)
    assert str(info.value) == "t.jsonl: line 2: timestamp 4.5 ms goes backwards (the line before: 5)"
    with pytest.raises(KvtierError) as info:
        traces.parse_trace(trace_text([{**REQ2, "hash_ids": [1, 2**64]}]), "t.jsonl", 1)
    assert str(info.value) == "t.jsonl: line 1: a hash id does not fit in 64 bits"


@pytest.mark.parametrize(
    ("block_tokens", "shown"), [(0, "0"), (-4, "-4"), (2.5, "2.5"), ("4", "'4'"), (2**31 + 1, "2147483649")]
)
def test_block_tokens_must_be_a_whole_number_of_at_least_one(block_tokens, shown):
    with pytest.raises(KvtierError) as info:
        traces.parse_trace(trace_text([REQ2]), "t", block_tokens)
    assert str(info.value) == f"block tokens must be a whole number from 1 to 2,147,483,648, got {shown}"


def test_the_largest_block_holds_2_to_the_31_tokens():
    # 2 tokens in a block of 2**31 need ceil(2 / 2**31) = 1 id
    trace = traces.parse_trace(trace_text([{**REQ2, "hash_ids": [1]}]), "t", 2**31)
    assert trace.block_tokens == 2**31 and trace.ref_tokens.tolist() == [2]


def test_zero_lengths_are_requests_too():
    # an empty prompt has no blocks (ceil(0 / 4) = 0 ids); a request may produce no output
    trace = traces.parse_trace(
        trace_text(
            [{"timestamp": 0, "input_length": 0, "output_length": 0, "hash_ids": []}, {**REQ2, "input_length": 8}]
        ),
        "t",
        4,
    )
    assert trace.n_requests == 2 and trace.n_refs == 2
    assert trace.input_tokens.tolist() == [0, 8] and trace.output_tokens.tolist() == [0, 1]
    assert trace.starts.tolist() == [0, 0, 2]


def test_blank_lines_are_skipped_wherever_they_are():
    # three requests, lines 2 and 3 blank: line numbers still count them (the bad one is line 6)
    text = trace_text([REQ2]) + "\n\n  \n" + trace_text([{**REQ2, "timestamp": 1}, {**REQ2, "timestamp": 2}])
    assert traces.parse_trace(text, "t", 1).n_requests == 3
    with pytest.raises(KvtierError, match=r"^t: line 6: "):
        traces.parse_trace(text + "\n{", "t", 1)


def test_hash_ids_are_any_64_bit_integers_and_stay_distinct():
    # negative ids are ids: -1 and -2 are two blocks (as float64 bit patterns both would be NaN);
    # dense ids follow the sorted hash ids: -2 -> 0, -1 -> 1, 2**63 - 1 -> 2
    trace = trace_of([[-1, 2**63 - 1], [-2, -1]])
    assert trace.n_unique == 3
    assert trace.blocks.tolist() == [1, 2, 0, 1]
    assert trace.blocks.dtype == np.int64
    # timestamps in ms become seconds: 0 and 1000 ms
    assert trace.timestamps_s.tolist() == [0.0, 1.0]


def test_a_directory_is_not_a_trace(tmp_path):
    with pytest.raises(KvtierError) as info:
        traces.read_trace(tmp_path)
    assert str(info.value) == f"{tmp_path}: trace is not a regular file"


def test_a_trace_larger_than_a_config_file_is_read(tmp_path):
    # the shipped conversation trace is well above the 1 MiB limit of the other files
    path = traces.trace_path("conversation")[1]
    assert path.stat().st_size > 1 << 20
    lines = [line for line in path.read_text().splitlines() if line.strip()]
    assert traces.read_trace("conversation").n_requests == len(lines)


def test_analyse_reads_the_file_again_when_its_size_or_time_changes(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text(trace_text([REQ2]))
    first = os.stat(path)
    assert traces.analyse(path, 1).trace.n_requests == 1
    # same modification time, one more request (a larger file): read again
    path.write_text(trace_text([REQ2, {**REQ2, "timestamp": 1}]))
    os.utime(path, ns=(first.st_atime_ns, first.st_mtime_ns))
    assert traces.analyse(path, 1).trace.n_requests == 2
    # same size, a later time, other content (output_length 1 -> 7): read again
    before = os.stat(path)
    path.write_text(trace_text([{**REQ2, "output_length": 7}, {**REQ2, "timestamp": 1}]))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns + 10**9))
    assert traces.analyse(path, 1).trace.output_tokens.tolist() == [7, 1]


def test_analyse_reads_through_read_trace_when_the_file_cannot_be_stat_ed(tmp_path, monkeypatch):
    # the first lookup finds a path that cannot be stat'ed, the second (read_trace's own) a real file:
    # read_trace gets the same name and block size (4 tokens a block: 8 tokens need 2 ids)
    real = tmp_path / "real.jsonl"
    real.write_text(trace_text([{**REQ2, "input_length": 8}]))
    paths = iter([tmp_path / "gone.jsonl", real])
    names = []

    def lookup(name):
        names.append(name)
        path = next(paths)
        return str(path), path

    monkeypatch.setattr(traces, "trace_path", lookup)
    r = traces.analyse("mine", 4)
    assert names == ["mine", "mine"] and r.trace.block_tokens == 4 and r.trace.n_refs == 2


def test_analyse_names_a_file_that_vanished_after_it_was_found(tmp_path, monkeypatch):
    path = tmp_path / "gone.jsonl"
    monkeypatch.setattr(traces, "trace_path", lambda name: (str(path), path))
    with pytest.raises(KvtierError) as info:
        traces.analyse("gone", 1)
    assert str(info.value) == f"{path}: trace not found"


def test_a_shipped_trace_path_is_a_real_file():
    where, path = traces.trace_path("synthetic")
    assert where == "synthetic" and Path(path).is_file()


@pytest.mark.parametrize("chunk", [1, 2, 3, 1 << 20])
def test_stream_lru_on_the_hand_trace(tmp_path, chunk):
    path = write_lines(tmp_path / "hand.jsonl", HAND_ROWS)
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
    path = write_lines(tmp_path / "hand.jsonl", HAND_ROWS)
    h = traces.stream_lru(path, 4, chunk_refs=chunk)
    assert h.count == "prefix"
    assert h.counts["blocks"].tolist() == [0, 2, 0, 2] and h.counts["tokens"].tolist() == [0, 8, 0, 6]
    # 4 of 9 at any capacity of 4 or more; at 2 and 3: 2 of 9 (per block 4 of 9: 2 more)
    assert (h.hit_ratio(), h.hit_ratio(2)) == (pytest.approx(4 / 9), pytest.approx(2 / 9))
    # per block at capacity 2: hits at distances 0 and 1 (1 + 3 = 4 of 9): 2/9 more than up to the first miss
    assert h.other.hit_ratio(2) - h.hit_ratio(2) == pytest.approx(2 / 9)


@pytest.mark.parametrize("share", [0, -0.5, 1.5, 2])
def test_capacity_for_refuses_a_share_outside_zero_to_one(tmp_path, share):
    h = traces.stream_lru(write_lines(tmp_path / "hand.jsonl", HAND_ROWS), 4)
    with pytest.raises(ValueError) as err:
        h.capacity_for(share)
    assert str(err.value) == f"share must be in (0, 1], got {share!r}"


def test_a_trace_without_hits_has_an_empty_histogram(tmp_path):
    # two distinct blocks, each used once: no hit, empty histograms
    h = traces.stream_lru(write_lines(tmp_path / "cold.jsonl", [row(0, [1, 2], 8)]), 4)
    assert h.counts["blocks"].tolist() == [] and h.counts["tokens"].tolist() == []
    assert h.total == {"blocks": 2.0, "tokens": 8.0}
    assert h.hit_ratio() == 0.0
    assert h.capacity_for(1.0) == 0


def test_a_trace_without_blocks_has_ratio_zero(tmp_path):
    # one request of 0 tokens: no reference at all, total 0
    h = traces.stream_lru(write_lines(tmp_path / "empty.jsonl", [row(0, [], 0)]), 4)
    assert (h.n_requests, h.n_refs, h.n_unique) == (1, 0, 0)
    assert h.total == {"blocks": 0.0, "tokens": 0.0}
    assert h.hit_ratio() == 0.0 and h.hit_ratio(5, "tokens") == 0.0
    assert h.capacity_for(1.0) == 0


def test_capacity_for_with_hits_only_at_distance_one(tmp_path):
    # 1 2 1 2: distances -1 -1 1 1, histogram [0, 2]: all the hits need 2 blocks
    h = traces.stream_lru(write_lines(tmp_path / "two.jsonl", [row(0, [1, 2, 1, 2], 16)]), 4, count="per-block")
    assert h.counts["blocks"].tolist() == [0, 2]
    assert h.capacity_for(1.0) == 2
    assert h.capacity_for(0.5) == 2  # 1 hit of 2 still needs distance 1


def test_capacity_for_with_a_single_hit(tmp_path):
    # 1 1: distances -1 0, histogram [1]: one block of capacity
    h = traces.stream_lru(write_lines(tmp_path / "one.jsonl", [row(0, [1, 1], 8)]), 4, count="per-block")
    assert h.counts["blocks"].tolist() == [1]
    assert h.capacity_for(1.0) == 1
    assert h.hit_ratio(1) == 0.5  # 1 hit of 2 references


def test_falls_are_counted_in_every_chunk_at_their_own_requests(tmp_path):
    # request 1: 5 5 -> -1 0, a fall at its second block; request 2: 3 4 4 -> -1 -1 0, a fall at its third.
    # chunk_refs 2: one chunk a request, each fall counted once: 2
    path = write_lines(tmp_path / "falls.jsonl", [row(0, [5, 5], 8), row(1, [3, 4, 4], 12)])
    for chunk in (2, 1 << 20):
        h = traces.stream_lru(path, 4, chunk_refs=chunk, count="per-block")
        assert h.requests_with_a_distance_that_falls == 2
        assert h.counts["blocks"].tolist() == [2]  # two hits at distance 0


def test_stream_lru_with_one_token_blocks(tmp_path):
    # block_tokens 1: 2 tokens need 2 ids; 1 1 -> -1 0
    h = traces.stream_lru(write_lines(tmp_path / "one.jsonl", [row(0, [9, 9], 2)]), 1, count="per-block")
    assert h.total == {"blocks": 2.0, "tokens": 2.0}
    assert h.hit_ratio() == 0.5


@pytest.mark.parametrize(
    ("block_tokens", "shown"),
    [(0, "0"), (-4, "-4"), (2.5, "2.5"), (np.float64(2.5), "np.float64(2.5)"), (2**31 + 1, "2147483649")],
)
def test_stream_lru_refuses_bad_block_tokens(tmp_path, block_tokens, shown):
    path = write_lines(tmp_path / "hand.jsonl", HAND_ROWS)
    with pytest.raises(KvtierError) as err:
        traces.stream_lru(path, block_tokens)
    assert str(err.value) == f"block tokens must be a whole number from 1 to 2,147,483,648, got {shown}"


def test_stream_lru_names_an_empty_trace(tmp_path):
    path = write_lines(tmp_path / "blank.jsonl", ["", "  "])
    with pytest.raises(KvtierError) as err:
        traces.stream_lru(path)
    assert str(err.value) == f"{path}: the trace holds no requests"


def test_stream_lru_names_a_hash_id_past_64_bits(tmp_path):
    path = write_lines(tmp_path / "big.jsonl", [row(0, [1], 4), row(1, [2**63], 4)])
    with pytest.raises(KvtierError) as err:
        traces.stream_lru(path, 4)
    assert str(err.value) == f"{path}: line 2: a hash id does not fit in 64 bits"


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
    assert str(err.value) == f"{tmp_path}: trace is not a regular file"


def test_trace_lines_numbers_the_lines_and_decodes_utf8(tmp_path):
    # blank line 2 is skipped but counted; the line break is not part of the line
    path = tmp_path / "t.txt"
    path.write_bytes("a\n\nb\u00e9\n".encode())
    assert list(traces.trace_lines(path, "t")) == [(1, "a"), (3, "b\u00e9")]


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
    trace = workload.Trace(
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


def test_stream_lru_takes_the_largest_block(tmp_path):
    # four blocks of 2**31 tokens (the largest block): 4 x 2**31 = 2**33 = 8,589,934,592 tokens
    path = write_lines(tmp_path / "huge.jsonl", [row(0, [1, 2, 3, 4], 4 * 2**31)])
    h = traces.stream_lru(path, 2**31)
    assert h.total == {"blocks": 4.0, "tokens": 2.0**33}


def test_a_bad_line_past_the_first_batch_is_named_as_line_by_line(tmp_path):
    # the scanner reads blocks of lines; a block with a bad line is read again line by line, so the message
    # names the line: line 3,001 repeats a key, after 3,000 good lines
    good = [row(t, [t], 4) for t in range(3000)]
    path = tmp_path / "batch.jsonl"
    text = trace_text(good) + '\n{"timestamp": 3000, "input_length": 4, "output_length": 1, "hash_ids": [1],'
    path.write_text(text + ' "timestamp": 3001}\n')
    for read in (lambda: traces.read_trace(path, 4), lambda: traces.stream_lru(path, 4)):
        with pytest.raises(KvtierError) as err:
            read()
        assert str(err.value) == f"{path}: line 3001: duplicate key 'timestamp'"
    # without it, the 3,000 requests read whole: 3,000 references, one a request
    path.write_text(trace_text(good))
    assert traces.read_trace(path, 4).n_refs == 3000 and traces.stream_lru(path, 4).n_requests == 3000


# ---------------------------------------------------------------------------
# The compiled scanner (traces.scan_columns) against the validating reader: the same arrays, the same errors.
#
# The streamed analysis reads a trace in blocks of whole lines; a block whose every line is a plain,
# valid request is read by the scanner, any other by the validating reader, line by line.  These
# tests hold the two to the same arrays on hand-checked lines, to the same one-line error on bad
# input wherever it sits, and the stream's chunks to where the line-by-line reader put them.
# ---------------------------------------------------------------------------

FMT = traces.TRACE_FORMATS["mooncake"]
NAMES = ("stamps", "inputs", "outputs", "counts", "ids", "chars")

LINE1 = '{"timestamp": 0, "input_length": 1000, "output_length": 5, "hash_ids": [7, -3]}'
LINE2 = '{"hash_ids":[9223372036854775807],"output_length":0,"input_length":512,"timestamp":1.5e3}'
LINE3 = '{"timestamp": 1500.25, "input_length": 0, "output_length": 12, "hash_ids": []}'


def columns(path: Path, fast: bool, block_tokens: int = 512) -> traces.Columns:
    return traces.Columns.join(list(traces.request_blocks(path, str(path), block_tokens, FMT, fast=fast)))


def write(tmp_path: Path, lines: list[str], name: str = "t.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join(line + "\n" for line in lines))
    return path


def test_the_scanner_reads_hand_lines_as_the_validating_reader_does(tmp_path):
    block = "".join(line + "\n" for line in (LINE1, LINE2, LINE3)).encode()
    got = traces.scan_columns(block, 512)
    assert got is not None  # every line plain: the keys in any order, a timestamp written 1.5e3 or 1500.25
    # 1000 tokens at 512 a block: ceil(1000 / 512) = 2 ids; 512: 1 id; 0 tokens: none
    assert got.stamps.tolist() == [0.0, 1500.0, 1500.25]
    assert got.inputs.tolist() == [1000, 512, 0]
    assert got.outputs.tolist() == [5, 0, 12]
    assert got.counts.tolist() == [2, 1, 0]
    assert got.ids.tolist() == [7, -3, 2**63 - 1]
    # each line's characters, what decides where the reader's batches end: line 1 is "{" 1, "timestamp" with its
    # quotes 11, ": 0, " 5, "input_length" 14, ": 1000, " 8, "output_length" 15, ": 5, " 5, "hash_ids" 10,
    # ": [7, -3]" 9, "}" 1: 79
    assert got.chars.tolist() == [len(LINE1), len(LINE2), len(LINE3)] == [79, 89, 78]
    path = write(tmp_path, [LINE1, LINE2, LINE3])
    slow = columns(path, fast=False)
    for name in NAMES:
        assert getattr(got, name).tolist() == getattr(slow, name).tolist(), name
        assert getattr(got, name).dtype == getattr(slow, name).dtype, name


@pytest.mark.parametrize(
    "line",
    [
        '{"timestamp": 1, "input_length": 512, "output_length": 5, "hash_ids": [1], "chat_id": 4}',  # another field
        '{"timestamp": 1, "input_length": 512.0, "output_length": 5, "hash_ids": [1]}',  # a length written 512.0
        '{"timestamp": 1, "input_length": 512, "output_length": 5, "hash_ids": [9223372036854775808]}',  # 2**63
        '{"timestamp": 1, "input_length": 512, "output_length": 5, "hash_ids": [1]}\r',  # a carriage return
        '{"timestamp": 1, "input_length": 512, "output_length": 5, "hash_ids": [true]}',
        '{"timestamp": 1, "input_length": 512, "output_length": 5, "hash_ids": [01]}',  # JSON refuses 01
        "",  # a blank line
    ],
)
def test_a_line_the_scanner_does_not_take_goes_to_the_validating_reader(tmp_path, line):
    block = (LINE1 + "\n" + line + "\n").encode()
    assert traces.scan_columns(block, 512) is None
    path = write(tmp_path, [LINE1, line])
    try:
        slow = columns(path, fast=False)
    except KvtierError as exc:
        with pytest.raises(KvtierError) as err:
            columns(path, fast=True)
        assert str(err.value) == str(exc)
        return
    fast = columns(path, fast=True)
    for name in NAMES:
        assert getattr(fast, name).tolist() == getattr(slow, name).tolist(), name


def test_a_valid_line_the_scanner_refuses_keeps_its_values(tmp_path):
    # the extra field is ignored: 512 tokens, one id 1; the first line as by hand above
    path = write(
        tmp_path, [LINE1, '{"timestamp": 2, "input_length": 512, "output_length": 5, "hash_ids": [1], "x": 4}']
    )
    fast = columns(path, fast=True)
    assert fast.stamps.tolist() == [0.0, 2.0]
    assert fast.ids.tolist() == [7, -3, 1]
    assert fast.counts.tolist() == [2, 1]


GOOD = [json.dumps({"timestamp": t, "input_length": 512, "output_length": 1, "hash_ids": [t]}) for t in range(40)]


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ('{"timestamp": 100, "input_length": 512,', "not a JSON object (malformed JSON)"),
        (
            '{"timestamp": 100, "input_length": "512", "output_length": 1, "hash_ids": [1]}',
            "'input_length' must be a whole number of tokens, got '512'",
        ),
        (
            '{"timestamp": 100, "input_length": 512, "hash_ids": [1]}',
            f"missing field 'output_length' (a request needs {FIELDS_TEXT})",
        ),
        # line 31 follows line 30, GOOD[28], timestamp 28 (the blank line 1 counts)
        (
            '{"timestamp": 3, "input_length": 512, "output_length": 1, "hash_ids": [1]}',
            "timestamp 3 ms goes backwards (the line before: 28)",
        ),
        # 1024 tokens at 512 a block need 2 ids
        (
            '{"timestamp": 100, "input_length": 1024, "output_length": 1, "hash_ids": [1]}',
            "'hash_ids' has 1 ids but input_length 1024 at 512 tokens a block needs 2",
        ),
    ],
)
@pytest.mark.parametrize("block_bytes", [64, 1000, 1 << 20])
def test_a_bad_line_gives_the_same_error_wherever_the_blocks_end(tmp_path, monkeypatch, bad, message, block_bytes):
    monkeypatch.setattr(traces, "BLOCK_BYTES", block_bytes)
    # a blank first line, then 29 good lines (lines 2 to 30), the bad one on line 31, more good ones
    path = write(tmp_path, ["", *GOOD[:29], bad, *GOOD[30:]])
    expected = f"{path}: line 31: {message}"
    for fast in (True, False):
        with pytest.raises(KvtierError) as err:
            columns(path, fast=fast)
        assert str(err.value) == expected
    with pytest.raises(KvtierError) as err:
        traces.stream_lru(path)
    assert str(err.value) == expected


@pytest.mark.parametrize("block_bytes", [64, 1000, 1 << 20])
def test_blocks_of_any_size_give_the_same_arrays(tmp_path, monkeypatch, block_bytes):
    monkeypatch.setattr(traces, "BLOCK_BYTES", block_bytes)
    trace = traces.generate_trace(300, seed=3, new_blocks=(1, 6))
    path = write(tmp_path, list(traces.to_jsonl(trace)))
    fast, slow = columns(path, fast=True), columns(path, fast=False)
    for name in NAMES:
        assert np.array_equal(getattr(fast, name), getattr(slow, name)), name
    # the ids as written are the generated trace's dense ids
    assert np.array_equal(fast.ids, trace.blocks)


def stream_lru_line_by_line(path: Path, chunk_refs: int, rate: float) -> workload.LruStream:
    """The streamed analysis with every line through the validating reader, in batches of BATCH_LINES lines or
    BATCH_CHARS characters, a chunk fed after the first batch that brings the references held to
    max(chunk_refs, distinct blocks / 4)."""
    stream = workload.LruStream("prefix", None, rate)
    req = traces._Requests(str(path), 512, FMT)

    def flush() -> None:
        starts = traces._starts(req.counts)
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
        if lines >= traces.BATCH_LINES or chars >= traces.BATCH_CHARS:  # a batch ends here
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
    monkeypatch.setattr(traces, "BATCH_LINES", 7)
    monkeypatch.setattr(traces, "BATCH_CHARS", 900)
    monkeypatch.setattr(traces, "BLOCK_BYTES", 1500)
    trace = traces.generate_trace(400, seed=5, new_blocks=(1, 6))
    path = write(tmp_path, list(traces.to_jsonl(trace)))
    fed: list[int] = []
    original = workload.LruStream.feed

    def counting(self, ids, *args, **kwargs):
        fed.append(ids.size)
        return original(self, ids, *args, **kwargs)

    monkeypatch.setattr(workload.LruStream, "feed", counting)
    want = stream_lru_line_by_line(path, 50, rate).histogram(str(path), 400, "mooncake", 512)
    before, fed[:] = list(fed), []
    got = traces.stream_lru(path, chunk_refs=50, sample_rate=rate)
    # many chunks, each of the references the line-by-line reader fed at once
    assert len(fed) > 5 and fed == before and sum(fed) == trace.n_refs
    for field in dataclasses.fields(got):
        assert same(getattr(got, field.name), getattr(want, field.name)), field.name


@pytest.mark.parametrize(("window_min", "warmup_min"), [(5.0, 0.0), (5.0, 5.0), (1.0, 3.0)])
def test_windows_streamed_are_the_windows_of_the_trace_in_memory(window_min, warmup_min):
    # one pass over the file in small chunks (1,000 references, so windows and warm-ups straddle them), against
    # distributed.windowed on the trace as one part in memory: the same histograms, count for count
    from kvtier.inputs import distributed

    t = traces.read_trace("conversation")
    whole = distributed.windowed([distributed.part_of(t)], window_min * 60, warmup_min * 60, t.block_tokens)
    streamed = traces.stream_windows("conversation", window_min * 60, warmup_min * 60, chunk_refs=1_000)
    for key in ("blocks", "tokens"):
        assert streamed.counts[key].tolist() == whole.counts[key].tolist()
    assert (streamed.total, streamed.n_refs, streamed.n_requests, streamed.n_unique) == (
        whole.total,
        whole.n_refs,
        whole.n_requests,
        whole.n_unique,
    )
    # 288,500 references in all, whichever window counts them
    assert streamed.n_refs == 288_500
    with pytest.raises(KvtierError, match="--window"):
        traces.stream_windows("conversation", 0.0, 0.0)


# ---------------------------------------------------------------------------
# The scanner against json.loads and the validating reader on generated lines: the same arrays, or it hands
# the block over (None); never another answer.
# ---------------------------------------------------------------------------

_SPACE = st.sampled_from(["", " ", "\t", "  "])
_JSON_NUMBER = st.from_regex(r"-?(0|[1-9][0-9]{0,21})(\.[0-9]{1,4})?([eE][+-]?[0-9]{1,3})?", fullmatch=True)
_NOT_JSON_NUMBER = st.sampled_from(["01", "+1", ".5", "1.", "1e", "-", "NaN", "Infinity", "0x10", "1_0", "true"])


@st.composite
def _request_line(draw, stamps: st.SearchStrategy[str] | None = None, block_tokens: int = 4) -> str:
    """A request line as JSON may spell it: any key order, spacing, number spelling, maybe an extra field or a
    repeated key; ``stamps`` spells its timestamp (default: any JSON number)."""
    n_in = draw(st.integers(0, 40))
    n_ids = -(-n_in // block_tokens)
    ids = draw(st.lists(st.integers(-(2**64), 2**64), min_size=n_ids, max_size=n_ids))
    ts = draw(st.one_of(st.integers(0, 10**18).map(str), _JSON_NUMBER) if stamps is None else stamps)
    length = st.sampled_from(["{}", "{}.0", "{}e0", "{}"])
    members = {
        "timestamp": ts,
        "input_length": draw(length).format(n_in),
        "output_length": draw(length).format(draw(st.integers(0, 10**16))),
        "hash_ids": "[" + ",".join(f"{draw(_SPACE)}{h}{draw(_SPACE)}" for h in ids) + "]",
    }
    if draw(st.booleans()):
        members[draw(st.sampled_from(["chat_id", "x", "timestamp"]))] = draw(st.sampled_from(['"a"', "1", "null"]))
    order = draw(st.permutations(list(members.items())))
    body = ",".join(f'{draw(_SPACE)}"{k}"{draw(_SPACE)}:{draw(_SPACE)}{v}{draw(_SPACE)}' for k, v in order)
    return f"{draw(_SPACE)}{{{body}}}{draw(_SPACE)}"


@st.composite
def _broken_line(draw) -> str:
    """A request line with one character inserted, deleted or replaced, a timestamp JSON refuses, or any text."""
    kind = draw(st.sampled_from(["insert", "delete", "replace", "number", "text"]))
    if kind == "text":
        return draw(st.text(max_size=60).filter(lambda t: "\n" not in t))
    if kind == "number":
        return draw(_request_line(_NOT_JSON_NUMBER))
    line = draw(_request_line())
    at = draw(st.integers(0, len(line)))
    char = draw(st.sampled_from(list('{}[],:"-.0123456789eE \t\r\x00\\') + ["true", "é", "\u2028"]))
    if kind == "insert":
        return line[:at] + char + line[at:]
    if kind == "delete":
        return line[:at] + line[at + 1 :]
    return line[:at] + char + line[at + 1 :]


def _validated(block: bytes, block_tokens: int) -> traces.Columns | None:
    try:
        return traces.validated_columns(traces._Requests("t", block_tokens, FMT), block, 0)
    except KvtierError:
        return None


def _agrees(lines: list[str], block_tokens: int = 4) -> None:
    """The scanner on the block of ``lines`` gives None or exactly the validating reader's arrays and json's values."""
    block = "".join(line + "\n" for line in lines).encode("utf-8", errors="surrogatepass")
    scanned = traces.scan_columns(block, block_tokens)
    if scanned is None:
        return
    reference = _validated(block, block_tokens)
    assert reference is not None, "the scanner read a block the validating reader refuses"
    for name in NAMES:
        assert getattr(scanned, name).dtype == getattr(reference, name).dtype, name
        assert getattr(scanned, name).tolist() == getattr(reference, name).tolist(), name
    objs = [json.loads(line) for line in lines]
    assert scanned.stamps.tolist() == [float(o["timestamp"]) for o in objs]
    assert scanned.inputs.tolist() == [o["input_length"] for o in objs]
    assert scanned.outputs.tolist() == [o["output_length"] for o in objs]
    assert scanned.ids.tolist() == [h for o in objs for h in o["hash_ids"]]


@settings(max_examples=300, deadline=None)
@given(st.lists(_request_line(), min_size=1, max_size=6))
def test_the_scanner_agrees_with_json_on_valid_lines(lines):
    _agrees(lines)


@settings(max_examples=300, deadline=None)
@given(st.lists(_request_line(), max_size=4), _broken_line(), st.lists(_request_line(), max_size=2))
def test_the_scanner_never_reads_an_invalid_line_otherwise(before, bad, after):
    _agrees([*before, bad, *after])


def test_the_differential_lines_reach_the_scanner():
    # the strategies are not all refused: a plain line of 5 tokens at 4 a block, two ids, is read by both
    line = '{"hash_ids": [3, -4], "timestamp": 1.5e3, "input_length": 5 ,"output_length":0}'
    scanned = traces.scan_columns((line + "\n").encode(), 4)
    assert scanned is not None and scanned.stamps.tolist() == [1500.0] and scanned.ids.tolist() == [3, -4]
    _agrees([line])


# ---------------------------------------------------------------------------
# A format is one registry entry: its field names, unit and chaining reach the reader, the scanner and the messages.
# ---------------------------------------------------------------------------

VLLM_LIKE = traces.TraceFormat(
    name="other",
    unit="us",
    unit_name="microseconds",
    units_per_s=1e6,
    chained=False,
    block_tokens=4,
    source="a hand format",
    summary="timestamps in us, one id per 4-token block",
    fields=("arrival_us", "prompt_tokens", "completion_tokens", "blocks"),
)


def _other_line(ts: int, n_in: int, ids: list[int]) -> str:
    return json.dumps({"arrival_us": ts, "prompt_tokens": n_in, "completion_tokens": 2, "blocks": ids, "note": "x"})


@pytest.fixture
def other_format(monkeypatch):
    monkeypatch.setitem(traces.TRACE_FORMATS, VLLM_LIKE.name, VLLM_LIKE)
    return VLLM_LIKE


def test_a_format_with_other_field_names_is_read_by_its_entry_alone(tmp_path, other_format):
    # ids 5 6 | 5 6 7, one per 4-token block, not chained: chained, the second request repeats the first's two
    # prefixes and adds one; 1,500,000 us = 1.5 s
    path = write(tmp_path, [_other_line(0, 8, [5, 6]), _other_line(1_500_000, 10, [5, 6, 7])])
    trace = traces.read_trace(path, 4, "other")
    assert trace.timestamps_s.tolist() == [0.0, 1.5]
    assert trace.input_tokens.tolist() == [8, 10] and trace.output_tokens.tolist() == [2, 2]
    assert trace.blocks.tolist()[:2] == trace.blocks.tolist()[2:4] and trace.n_unique == 3
    # the scanner takes these lines (keys in another order, one more field: not plain) and plain ones alike
    plain = '{"arrival_us": 3, "prompt_tokens": 4, "completion_tokens": 0, "blocks": [9]}\n'
    scanned = traces.scan_columns(plain.encode(), 4, fmt=other_format)
    assert scanned is not None and scanned.stamps.tolist() == [3.0] and scanned.ids.tolist() == [9]
    assert traces.scan_columns(plain.encode(), 4) is None  # not a Mooncake line
    assert traces.stream_lru(path, 4, trace_format="other").n_refs == 5


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            '{"arrival_us": 0, "prompt_tokens": 4, "blocks": [1]}',
            "missing field 'completion_tokens' (a request needs arrival_us, prompt_tokens, completion_tokens, blocks)",
        ),
        (
            '{"arrival_us": "0", "prompt_tokens": 4, "completion_tokens": 1, "blocks": [1]}',
            "'arrival_us' must be a finite number of microseconds, got '0'",
        ),
        (
            '{"arrival_us": 0, "prompt_tokens": 8, "completion_tokens": 1, "blocks": [1]}',
            "'blocks' has 1 ids but prompt_tokens 8 at 4 tokens a block needs 2",
        ),
        (
            '{"arrival_us": 0, "prompt_tokens": 4, "completion_tokens": 1, "blocks": "1"}',
            "'blocks' must be a list of integers",
        ),
    ],
)
def test_a_format_s_messages_name_its_own_fields(tmp_path, other_format, line, message):
    path = write(tmp_path, [line])
    with pytest.raises(KvtierError) as err:
        traces.read_trace(path, 4, "other")
    assert str(err.value) == f"{path}: line 1: {message}"


def test_the_scanner_keys_are_the_quoted_field_names():
    # '"timestamp"' is 11 bytes, '"input_length"' 14 more (25), '"output_length"' 15 (40), '"hash_ids"' 10 (50)
    mooncake = traces.TRACE_FORMATS["mooncake"]
    assert mooncake.keys == b'"timestamp""input_length""output_length""hash_ids"'
    assert mooncake.key_ends == (11, 25, 40, 50)


@pytest.mark.parametrize("fields", [("a", "b", "c"), ("a", "a", "c", "d"), ('a"', "b", "c", "d"), ("a", "", "c", "d")])
def test_a_format_refuses_field_names_the_scanner_cannot_match(fields):
    with pytest.raises(ValueError, match="four distinct plain field names"):
        dataclasses.replace(VLLM_LIKE, fields=fields)


def test_the_formats_choices_of_the_key_are_the_registry_s():
    from kvtier.inputs.assumptions import SCHEMA

    assert SCHEMA["workload.trace_format"].choices == tuple(traces.TRACE_FORMATS) == ("mooncake", "qwen")
