"""The compiled scanner (traces.scan_columns) against the validating reader: the same arrays, the same errors.

The streamed analysis reads a trace in blocks of whole lines; a block whose every line is a plain,
valid request is read by the scanner, any other by the validating reader, line by line.  These
tests hold the two to the same arrays on hand-checked lines, to the same one-line error on bad
input wherever it sits, and the stream's chunks to where the line-by-line reader put them.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from kvtier.errors import KvtierError
from kvtier.formulas.reuse import LruStream
from kvtier.inputs import traces

FMT = traces.TRACE_FORMATS["mooncake"]
FIELDS_TEXT = ", ".join(traces.FIELDS)
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


def stream_lru_line_by_line(path: Path, chunk_refs: int, rate: float) -> LruStream:
    """The streamed analysis as it was before the scanner: every line through the validating reader, in batches,
    a chunk fed after the first batch that brings the references held to max(chunk_refs, distinct blocks / 4)."""
    stream = LruStream("prefix", None, rate)
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

    for batch in traces._batches(traces.trace_lines(path, str(path))):
        req.add_lines(batch)
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
