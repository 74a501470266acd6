"""kvtier.formulas.cache.trace, by hand: a trace's counts, its requests' references and the tokens of each block."""

from __future__ import annotations

import numpy as np

from kvtier.formulas.cache.trace import DEFAULT_HIT_COUNT, HIT_COUNTS, Trace, ref_tokens

# three requests at 4 tokens a block: 8 tokens (blocks 0 1), none, 9 tokens (blocks 0 1 2, the last holding 1 token)
HAND = Trace(
    name="hand",
    block_tokens=4,
    timestamps_s=np.array([0.0, 1.5, 3.0]),
    input_tokens=np.array([8, 0, 9]),
    output_tokens=np.array([1, 2, 3]),
    starts=np.array([0, 2, 2, 5]),
    blocks=np.array([0, 1, 0, 1, 2]),
    trace_format="mooncake",
)


def test_the_counts_of_a_hand_trace():
    # 3 requests, 2 + 0 + 3 = 5 references to blocks 0, 1, 2; 3.0 s - 0.0 s
    assert (HAND.n_requests, HAND.n_refs, HAND.n_unique, HAND.duration_s) == (3, 5, 3, 3.0)


def test_each_reference_knows_its_request_and_whether_it_opens_it():
    # request 1 has no blocks: references 0 1 are request 0's, 2 3 4 request 2's
    assert HAND.request_of_ref.tolist() == [0, 0, 2, 2, 2]
    assert HAND.first_of_request.tolist() == [True, False, True, False, False]


def test_a_prompt_s_last_block_holds_the_rest_of_its_tokens():
    # 8 = 4 + 4; 9 = 4 + 4 + 1
    assert HAND.ref_tokens.tolist() == [4, 4, 4, 4, 1]
    # one block of 3 tokens alone: 3
    assert ref_tokens(4, np.array([3]), np.array([0, 1])).tolist() == [3]


def test_an_empty_trace_has_no_blocks_and_no_duration():
    empty = Trace(
        "e",
        4,
        np.zeros(0),
        np.zeros(0, dtype=np.int64),
        np.zeros(0, dtype=np.int64),
        np.zeros(1, dtype=np.int64),
        np.zeros(0, dtype=np.int64),
        "mooncake",
    )
    assert (empty.n_requests, empty.n_refs, empty.n_unique, empty.duration_s) == (0, 0, 0, 0.0)


def test_the_hit_counts():
    assert HIT_COUNTS == ("prefix", "per-block") and DEFAULT_HIT_COUNT == "prefix"
