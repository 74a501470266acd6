"""Compiled loops where numba is importable, the same loops in plain Python where it is not.

:func:`jit` wraps a loop written for numba's ``nopython`` mode (numpy arrays and integers only):
at its first call it compiles it with ``numba.njit`` (cached on disk beside the module where that
is writable), or, without numba, runs the function as written, as QuantEcon.py's ``use_jit=False``
does.  Same arguments, same results either way; only the time differs.  numba is imported at the
first call, not when a module that defines a kernel is imported.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any


def compile_loop(func: Callable[..., Any]) -> Callable[..., Any]:
    """``func`` compiled by ``numba.njit(nogil=True)``, cached on disk where it can be; ``func`` without numba."""
    try:
        import numba
    except ImportError:
        return func
    try:
        return numba.njit(cache=True, nogil=True)(func)
    except RuntimeError:  # pragma: no cover - no writable place for the cache: compile in memory
        return numba.njit(nogil=True)(func)


def jit(func: Callable[..., Any]) -> Callable[..., Any]:
    """``func``, compiled at its first call (:func:`compile_loop`); ``.py_func`` is the function as written."""
    compiled: list[Callable[..., Any]] = []

    @functools.wraps(func)
    def call(*args: Any) -> Any:
        if not compiled:
            compiled.append(compile_loop(func))
        return compiled[0](*args)

    call.py_func = func  # type: ignore[attr-defined]
    return call
