"""kvtier.inputs.traces.formats: a format is one registry entry; its field names, unit and chaining reach the
reader, the scanner and the messages."""

from __future__ import annotations

import dataclasses
import json

import pytest

from kvtier.errors import KvtierError
from kvtier.inputs import traces
from kvtier.inputs.traces.scan import scan_columns
from tests.conftest import write_trace


def test_the_formats_are_the_keys_choices():
    from kvtier.inputs.assumptions import seed
    from kvtier.inputs.keys import SCHEMA

    assert SCHEMA["workload.trace_format"].choices == tuple(traces.TRACE_FORMATS)
    assert seed().value("workload.trace_format") == traces.DEFAULT_FORMAT
    # Mooncake: ms, chained, 512 tokens an id; Qwen: s, one id per 16-token block
    assert [(f.unit, f.units_per_s, f.chained, f.block_tokens) for f in traces.TRACE_FORMATS.values()] == [
        ("ms", 1e3, True, 512),
        ("s", 1.0, False, 16),
        ("ms", 1e3, True, 16),
    ]


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
    path = write_trace(tmp_path / "t.jsonl", [_other_line(0, 8, [5, 6]), _other_line(1_500_000, 10, [5, 6, 7])])
    trace = traces.read_trace(path, 4, "other")
    assert trace.timestamps_s.tolist() == [0.0, 1.5]
    assert trace.input_tokens.tolist() == [8, 10] and trace.output_tokens.tolist() == [2, 2]
    assert trace.blocks.tolist()[:2] == trace.blocks.tolist()[2:4] and trace.n_unique == 3
    # the scanner takes these lines (keys in another order, one more field: not plain) and plain ones alike
    plain = '{"arrival_us": 3, "prompt_tokens": 4, "completion_tokens": 0, "blocks": [9]}\n'
    scanned = scan_columns(plain.encode(), 4, fmt=other_format)
    assert scanned is not None and scanned.stamps.tolist() == [3.0] and scanned.ids.tolist() == [9]
    assert scan_columns(plain.encode(), 4) is None  # not a Mooncake line
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
    path = write_trace(tmp_path / "t.jsonl", [line])
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
