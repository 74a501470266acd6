"""kvtier.inputs.traces.scan: the compiled scanner against the validating reader and json.loads, the same arrays
and errors, on hand lines and generated ones."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvtier.errors import KvtierError
from kvtier.inputs import traces
from kvtier.inputs.traces.load import request_blocks
from kvtier.inputs.traces.read import Columns, Requests, validated_columns
from kvtier.inputs.traces.scan import scan_columns
from tests.conftest import write_trace

FIELDS_TEXT = "timestamp, input_length, output_length, hash_ids"


# ---------------------------------------------------------------------------
# The compiled scanner (scan_columns) against the validating reader: the same arrays, the same errors.
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


def columns(path: Path, fast: bool, block_tokens: int = 512) -> Columns:
    return Columns.join(list(request_blocks(path, str(path), block_tokens, FMT, fast=fast)))


def test_the_scanner_reads_hand_lines_as_the_validating_reader_does(tmp_path):
    block = "".join(line + "\n" for line in (LINE1, LINE2, LINE3)).encode()
    got = scan_columns(block, 512)
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
    path = write_trace(tmp_path / "t.jsonl", [LINE1, LINE2, LINE3])
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
    assert scan_columns(block, 512) is None
    path = write_trace(tmp_path / "t.jsonl", [LINE1, line])
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
    path = write_trace(
        tmp_path / "t.jsonl",
        [LINE1, '{"timestamp": 2, "input_length": 512, "output_length": 5, "hash_ids": [1], "x": 4}'],
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
    monkeypatch.setattr("kvtier.inputs.traces.files.BLOCK_BYTES", block_bytes)
    # a blank first line, then 29 good lines (lines 2 to 30), the bad one on line 31, more good ones
    path = write_trace(tmp_path / "t.jsonl", ["", *GOOD[:29], bad, *GOOD[30:]])
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
    monkeypatch.setattr("kvtier.inputs.traces.files.BLOCK_BYTES", block_bytes)
    trace = traces.generate_trace(300, seed=3, new_blocks=(1, 6))
    path = write_trace(tmp_path / "t.jsonl", list(traces.to_jsonl(trace)))
    fast, slow = columns(path, fast=True), columns(path, fast=False)
    for name in NAMES:
        assert np.array_equal(getattr(fast, name), getattr(slow, name)), name
    # the ids as written are the generated trace's dense ids
    assert np.array_equal(fast.ids, trace.blocks)


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


def _validated(block: bytes, block_tokens: int) -> Columns | None:
    try:
        return validated_columns(Requests("t", block_tokens, FMT), block, 0)
    except KvtierError:
        return None


def _agrees(lines: list[str], block_tokens: int = 4) -> None:
    """The scanner on the block of ``lines`` gives None or exactly the validating reader's arrays and json's values."""
    block = "".join(line + "\n" for line in lines).encode("utf-8", errors="surrogatepass")
    scanned = scan_columns(block, block_tokens)
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
    scanned = scan_columns((line + "\n").encode(), 4)
    assert scanned is not None and scanned.stamps.tolist() == [1500.0] and scanned.ids.tolist() == [3, -4]
    _agrees([line])
