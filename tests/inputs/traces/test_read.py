"""kvtier.inputs.traces.read: the validating reader's whole one-line messages, by hand."""

from __future__ import annotations

import json

import numpy as np
import pytest

from kvtier.errors import KvtierError
from kvtier.inputs import traces
from tests.conftest import trace_of, trace_text

FIELDS_TEXT = "timestamp, input_length, output_length, hash_ids"


REQ2 = {"timestamp": 0, "input_length": 2, "output_length": 1, "hash_ids": [1, 2]}


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
    assert str(info.value) == "t.jsonl: line 1: a hash id does not fit in 64 bits, signed or unsigned"


def test_unsigned_64_bit_ids_are_the_same_bits_read_as_signed():
    # issue 43: Qwen's published traces write some ids as unsigned 64-bit numbers above 2**63; 2**64 - 1 has the bits
    # of -1, so a trace that names a block both ways names one block (the second request hits both)
    t = traces.parse_trace(
        trace_text([{**REQ2, "hash_ids": [2**64 - 1, 2**63]}, {**REQ2, "timestamp": 1, "hash_ids": [-1, -(2**63)]}]),
        "t.jsonl",
        1,
    )
    assert t.n_unique == 2 and t.blocks.tolist() == [t.blocks[0], t.blocks[1], t.blocks[0], t.blocks[1]]


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
