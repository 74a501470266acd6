"""The analysis store computes a result once per key: in memory, and through a directory shared by processes."""

from __future__ import annotations

import os

import numpy as np
import pytest

from kvtier import store


@pytest.fixture(autouse=True)
def empty_store():
    store.clear()
    yield
    store.clear()


def counted(value):
    """A compute function that records each call."""
    calls = []

    def compute():
        calls.append(1)
        return value

    return compute, calls


def test_a_key_is_computed_once_in_a_process_and_another_key_again():
    compute, calls = counted({"hits": np.array([1.0, 2.0])})
    first = store.memoized("policies", {"trace": "t:1:2:ab", "caps": [2, 4]}, compute)
    again = store.memoized("policies", {"caps": [2, 4], "trace": "t:1:2:ab"}, compute)  # key order does not matter
    assert again is first and len(calls) == 1
    store.memoized("policies", {"trace": "t:1:2:ab", "caps": [2, 8]}, compute)
    store.memoized("curve", {"trace": "t:1:2:ab", "caps": [2, 4]}, compute)  # another kind, another result
    assert len(calls) == 3


def test_a_directory_hands_a_result_to_the_next_process(tmp_path):
    compute, calls = counted({"hits": np.array([3.0, 5.0])})
    with store.stored_in(tmp_path):
        store.memoized("policies", {"k": 1}, compute)
    # one file, named by the kind and the key's digest, and no temporary file left beside it
    assert [p.name for p in tmp_path.iterdir()] == [store.digest("policies", {"k": 1}) + ".pickle"]
    store.clear()  # as a kernel starts: nothing in memory
    with store.stored_in(tmp_path):
        loaded = store.memoized("policies", {"k": 1}, compute)
    assert len(calls) == 1 and loaded["hits"].tolist() == [3.0, 5.0]


def test_the_environment_names_the_directory_a_kernel_reads(tmp_path, monkeypatch):
    compute, calls = counted(7)
    monkeypatch.setenv(store.DIRECTORY_VARIABLE, str(tmp_path))
    assert store.directory() == tmp_path
    store.memoized("x", 1, compute)
    store.clear()
    assert store.memoized("x", 1, compute) == 7 and len(calls) == 1
    with store.stored_in(None):  # an explicit "memory only" wins over the environment
        assert store.directory() is None


def test_an_unwritable_or_damaged_store_costs_a_computation_not_a_failure(tmp_path):
    compute, calls = counted([1, 2])
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    with store.stored_in(blocked / "below"):  # below a regular file: nothing can be created there
        assert store.memoized("x", 1, compute) == [1, 2]
    assert len(calls) == 1
    store.clear()
    with store.stored_in(tmp_path):
        (tmp_path / (store.digest("x", 1) + ".pickle")).write_bytes(b"not a pickle")
        assert store.memoized("x", 1, compute) == [1, 2]
    assert len(calls) == 2
    # the damaged file was replaced by a good one
    store.clear()
    with store.stored_in(tmp_path):
        assert store.memoized("x", 1, compute) == [1, 2]
    assert len(calls) == 2


def test_a_trace_version_changes_with_its_content(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text("a\n")
    st = os.stat(path)
    one = store.trace_version(path, st.st_size, st.st_mtime_ns)
    # path, 2 bytes, the time, then sha256(b"a\n")
    sha = "87428fc522803d31065e7bce3cf03fe475096631e5e07bbd7a0fde60c4cf25c7"
    assert one == f"{path}:2:{st.st_mtime_ns}:{sha}"
    path.write_text("b\n")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # same size and time, other bytes: a cached hash stays
    assert store.trace_version(path, st.st_size, st.st_mtime_ns) == one
    store.clear()
    assert store.trace_version(path, st.st_size, st.st_mtime_ns) != one


def test_a_key_tells_apart_values_that_print_alike():
    import dataclasses

    @dataclasses.dataclass(frozen=True)
    class Costs:
        mfu: float
        rates: np.ndarray

    # numpy prints both arrays as [1.23456789e+09]; the key keeps every bit
    a = Costs(0.25, np.array([1234567891.0]))
    b = Costs(0.25, np.array([1234567891.0000002]))
    assert repr(a.rates) == repr(b.rates)
    assert store.digest("x", {"rc": a}) != store.digest("x", {"rc": b})
    assert store.digest("x", {"rc": a}) == store.digest("x", {"rc": Costs(0.25, np.array([1234567891.0]))})
    # a numpy scalar keys as the Python number it holds
    assert store.digest("x", np.float64(0.5)) == store.digest("x", 0.5)
    with pytest.raises(TypeError, match="cannot key a object"):
        store.digest("x", object())


def test_memory_keeps_the_most_recently_used_results(monkeypatch):
    monkeypatch.setattr(store, "MAX_IN_MEMORY", 2)
    compute, calls = counted("r")
    store.memoized("x", 1, compute)
    store.memoized("x", 2, compute)
    store.memoized("x", 1, compute)  # used again: 2 is now the oldest
    store.memoized("x", 3, compute)  # 2 is dropped
    assert len(calls) == 3
    store.memoized("x", 1, compute)
    assert len(calls) == 3
    store.memoized("x", 2, compute)  # computed again
    assert len(calls) == 4
