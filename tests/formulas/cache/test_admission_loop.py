"""kvtier.formulas.cache.admission_loop: the admission replay compiled, fed chunk by chunk, against its Python oracle.

The oracle (kvtier.formulas.cache.admission_oracle) keeps the tier in an OrderedDict and TinyLFU's sketch in a small
class; the compiled loop keeps both in arrays.  They must agree request for request, with the same writes and
expiries, for every filter and with a time to live, on the conversation trace and on generated ones, fed at once
or in chunks.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvtier.formulas.cache import admission, admission_loop, admission_oracle
from kvtier.formulas.cache.admission_loop import AdmissionState, sketch_columns, sketch_width
from kvtier.inputs import traces
from tests.formulas.cache.test_fleet import make_trace, prompts


@pytest.fixture(scope="module")
def conversation():
    return traces.read_trace("conversation")


def same(got, want) -> None:
    assert got.hit_blocks.tolist() == want.hit_blocks.tolist()
    assert (got.writes, got.expired) == (want.writes, want.expired)


@pytest.mark.parametrize("admit", admission.ADMISSIONS)
def test_compiled_admission_is_the_oracle_on_the_conversation_trace(conversation, admit):
    # 2,000 blocks evict all along (TinyLFU's sketch halves every 20,000 references); a TTL of 60 s expires blocks
    for capacity, ttl in ((2000, math.inf), (2000, 60.0), (math.inf, 60.0)):
        got = admission.replay_admission(conversation, capacity, admit, ttl)
        same(got, admission_oracle.replay_admission_py(conversation, capacity, admit, ttl))
        assert got.writes > 0
    assert got.expired > 0  # the unbounded tier with a TTL of 60 s


@settings(max_examples=120, deadline=None)
@given(
    prompts,
    st.integers(0, 6),
    st.sampled_from(admission.ADMISSIONS),
    st.sampled_from([math.inf, 0.5, 2.5, 7.0]),
)
def test_compiled_admission_is_the_oracle_on_generated_traces(ps, capacity, admit, ttl):
    t = make_trace(ps)  # one request a second: TTLs of 0.5, 2.5 and 7 s expire blocks idle that long
    same(
        admission.replay_admission(t, capacity, admit, ttl),
        admission_oracle.replay_admission_py(t, capacity, admit, ttl),
    )


def test_fed_in_chunks_it_is_the_trace_fed_at_once(conversation):
    t = conversation
    ids = admission.first_use_ids(t.blocks)
    whole = AdmissionState(1500, "tinylfu", 120.0)
    want = whole.feed(ids, t.starts, t.timestamps_s)
    chunked = AdmissionState(1500, "tinylfu", 120.0)
    got = []
    for lo in range(0, t.n_requests, 1000):
        hi = min(lo + 1000, t.n_requests)
        s = t.starts[lo : hi + 1]
        got.append(chunked.feed(ids[s[0] : s[-1]], s - s[0], t.timestamps_s[lo:hi]))
    assert np.concatenate(got).tolist() == want.tolist()
    assert (chunked.writes, chunked.expired) == (whole.writes, whole.expired) and whole.expired > 0


def test_the_sketch_columns_by_hand():
    # capacity 3: 4 x 3 = 12 counters rounded up to 16 (the least); block 0's column in row 0 is
    # (1 x 0x9E3779B1) >> 17 & 15 = 2654435761 >> 17 = 20251 (20251.6...), 20251 & 15 = 11
    assert sketch_width(3) == 16 and sketch_width(1000) == 4096
    # bounded: 4 x 1e6 = 4e6 -> 2**22 (4,194,304); 1e9 blocks asked for 2**32 counters a row (128 GiB), now 2**22 too
    assert sketch_width(1e6) == sketch_width(1e9) == sketch_width(2.0**53) == 2**22
    assert sketch_columns(0, 16)[0] == 11


def test_the_first_use_numbering():
    # ids 7 5 7 9 5: numbered in order of first reference 0 1 0 2 1
    assert admission.first_use_ids(np.array([7, 5, 7, 9, 5])).tolist() == [0, 1, 0, 2, 1]


@pytest.mark.parametrize("admit", ["tinylfu", "second"])
def test_without_numba_the_loop_as_written_gives_the_same(monkeypatch, admit):
    # kvtier.formulas.jit runs the loop as plain Python where numba is missing: the sketch's columns without overflow
    rng = np.random.default_rng(3)
    t = make_trace([rng.integers(0, 30, k).tolist() for k in rng.integers(1, 6, 300)])
    want = admission.replay_admission(t, 4, admit, 3.0)
    monkeypatch.setattr(admission_loop, "_admission_loop", admission_loop._admission_loop.py_func)
    same(admission.replay_admission(t, 4, admit, 3.0), want)
    assert want.hit_blocks.sum() > 0 and want.expired > 0
