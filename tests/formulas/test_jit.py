"""kvtier.formulas.jit: a loop compiled where numba is, the same loop as written where it is not."""

from __future__ import annotations

import builtins

import numpy as np

from kvtier.formulas import jit


def _prefix_sums(values: np.ndarray, out: np.ndarray) -> None:
    total = 0
    for i in range(values.size):
        total += values[i]
        out[i] = total


def test_a_kernel_gives_the_same_answer_compiled_and_as_written():
    # 3, 3 + 1 = 4, 4 + 4 = 8
    kernel = jit.jit(_prefix_sums)
    values = np.array([3, 1, 4], dtype=np.int64)
    compiled, plain = np.zeros(3, dtype=np.int64), np.zeros(3, dtype=np.int64)
    kernel(values, compiled)
    kernel.py_func(values, plain)
    assert compiled.tolist() == plain.tolist() == [3, 4, 8]
    assert kernel.py_func is _prefix_sums and kernel.__name__ == "_prefix_sums"


def test_without_numba_the_function_runs_as_written(monkeypatch):
    real = builtins.__import__

    def no_numba(name, *args, **kwargs):
        if name == "numba":
            raise ImportError(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_numba)
    assert jit.compile_loop(_prefix_sums) is _prefix_sums
    kernel = jit.jit(_prefix_sums)
    out = np.zeros(2, dtype=np.int64)
    kernel(np.array([2, 5], dtype=np.int64), out)  # 2, 2 + 5 = 7
    assert out.tolist() == [2, 7]
