"""kvtier.inputs.traces.load: a trace read whole, its limits, formats and the measured analysis cached per version."""

from __future__ import annotations

import json
import os

import pytest

from kvtier.errors import KvtierError
from kvtier.formulas.cache.curve import Reuse
from kvtier.inputs import traces
from tests.conftest import trace_text
from tests.oracles import row

HAND_BLOCK_TOKENS = 4


# lengths at 16 tokens a block: ceil(40/16) = 3, ceil(70/16) = 5, ceil(32/16) = 2, ceil(90/16) = 6 ids: 16 references.
# Chained, block 11 after 99 (request 3) is another prefix than 11 after 10. Naming the chained ids
# A=(10) B=(10,11) C=(..12) D=(..13) E=(..14) X=(99) Y=(99,11) F=(..15), the references are
#   A B C | A B C D E | X Y | A B C D E F
# stack distances: A B C again after {B,C}, {C,A}, {A,B}: 2 2 2; in request 4 each of A..E has six others since: 6
QWEN_DISTANCES = [-1, -1, -1, 2, 2, 2, -1, -1, -1, -1, 6, 6, 6, 6, 6, -1]


REQ2 = {"timestamp": 0, "input_length": 2, "output_length": 1, "hash_ids": [1, 2]}


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


def test_a_qwen_trace_is_read_in_seconds_with_its_ids_chained(qwen):
    r = Reuse.of(traces.read_trace(qwen, 16, "qwen"))
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
    r = Reuse.of(traces.read_trace(qwen, 16))
    # 6.0 read as milliseconds: 0.006 s
    assert r.trace.duration_s == pytest.approx(0.006)
    # unchained, block 11 of request 3 "hits" after 99 missed: counted per block 9 hits of 16, and one request
    # with a hit after a miss; counted up to each request's first miss (the default) that hit is not one: 8 of 16
    assert float(r.recounted("per-block").hit_ratio()) == 9 / 16 and r.requests_with_a_hit_after_a_miss == 1
    assert r.count == "prefix" and float(r.hit_ratio()) == 8 / 16


def test_the_in_memory_reader_stops_at_its_reference_limit_and_the_stream_does_not(hand, monkeypatch, capsys):
    # HAND holds 2 + 3 + 1 + 2 + 3 = 11 references; with a limit of 5, line 3 would bring 2 + 3 + 1 = 6
    monkeypatch.setattr("kvtier.inputs.traces.load.MAX_TRACE_REFS", 5)
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
    monkeypatch.setattr("kvtier.inputs.traces.load.MAX_TRACE_REFS", limit)
    monkeypatch.setattr("kvtier.inputs.traces.files.READ_BYTES", 16)
    monkeypatch.setattr("kvtier.inputs.traces.files.BLOCK_BYTES", 1)
    with pytest.raises(KvtierError, match=rf": line {line}: more than {limit} block references"):
        traces.read_trace(hand, HAND_BLOCK_TOKENS)
    # exactly what it holds: read whole, as in one block
    monkeypatch.setattr("kvtier.inputs.traces.load.MAX_TRACE_REFS", 11)
    assert traces.read_trace(hand, HAND_BLOCK_TOKENS).n_refs == 11


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

    monkeypatch.setattr("kvtier.inputs.traces.load.trace_path", lookup)
    r = traces.analyse("mine", 4)
    assert names == ["mine", "mine"] and r.trace.block_tokens == 4 and r.trace.n_refs == 2


def test_analyse_names_a_file_that_vanished_after_it_was_found(tmp_path, monkeypatch):
    path = tmp_path / "gone.jsonl"
    monkeypatch.setattr("kvtier.inputs.traces.load.trace_path", lambda name: (str(path), path))
    with pytest.raises(KvtierError) as info:
        traces.analyse("gone", 1)
    assert str(info.value) == f"{path}: trace not found"


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
