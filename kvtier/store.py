"""The store of a trace's analysis: each result computed once per key, kept in memory and on disk.

A trace's analysis (its LRU curve, the second pass's tallies, the policies, the hierarchies, the
sampled curves, the windows) depends on the trace file and a few keys, not on the rest of an
assumption set. :func:`memoized` computes a result once per ``(kind, key)`` and keeps it in this
process; with a directory in use (:func:`stored_in`, or the environment variable
:data:`DIRECTORY_VARIABLE` that a build hands its notebooks' kernels) it also writes it there, so the
build's own process and every kernel of that build compute it once between them.

The key names everything the result depends on, the trace by :func:`trace_version` (path, size,
modification time and content hash), so a result is reused only where it would be recomputed
identically. A result that cannot be written (a full disk, a read-only directory) is kept in
memory only; one that cannot be read back is computed again. The files are pickles this package
wrote into a directory of its own build; nothing else is read from there.

Imports nothing from kvtier: it sits in the bottom layer, beside :mod:`kvtier.errors`, so that the
scenario and the pages alike keep their trace results here.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import pickle
import tempfile
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

T = TypeVar("T")

DIRECTORY_VARIABLE = "KVTIER_ANALYSIS_DIR"
"""The environment variable naming the directory a build shares with its notebooks' kernels."""

FORMAT = 1
"""The version of what the store writes; a change to a stored type's layout raises it."""

MAX_IN_MEMORY = 64
"""Results kept in memory at most, the least recently used dropped first (a trace's two passes hold megabytes)."""

_memory: OrderedDict[str, Any] = OrderedDict()
_directory: list[Path | None] = []
_hashes: dict[tuple[str, int, int], str] = {}


def directory() -> Path | None:
    """The directory results are written to: the innermost :func:`stored_in`, else :data:`DIRECTORY_VARIABLE`."""
    if _directory:
        return _directory[-1]
    named = os.environ.get(DIRECTORY_VARIABLE)
    return Path(named) if named else None


@contextlib.contextmanager
def stored_in(path: Path | None) -> Iterator[None]:
    """Write results under ``path`` (None: keep them in memory only) while the block runs."""
    _directory.append(path)
    try:
        yield
    finally:
        _directory.pop()


def trace_version(path: str | os.PathLike[str], size: int, mtime_ns: int) -> str:
    """A trace file's identity for a key: its path, size, modification time (ns) and SHA-256.

    The file is hashed once per (path, size, modification time) in a process.
    """
    found = _hashes.get((str(path), size, mtime_ns))
    if found is None:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        found = _hashes[(str(path), size, mtime_ns)] = f"{path}:{size}:{mtime_ns}:{h.hexdigest()}"
    return found


def keyable(value: Any) -> Any:
    """``value`` as plain JSON data for a key, every float exact.

    Dataclasses become their fields by name, numpy arrays their dtype, shape and elements, numpy
    scalars Python numbers, mappings and sequences their items; a value of any other type is refused,
    since its text need not tell two values apart (numpy prints arrays rounded).

    Raises
    ------
    TypeError
        For a value of a type it does not know.
    """
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return ["ndarray", str(value.dtype), list(value.shape), value.ravel().tolist()]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {type(value).__name__: {f.name: keyable(getattr(value, f.name)) for f in dataclasses.fields(value)}}
    if isinstance(value, Mapping):
        return [[keyable(k), keyable(v)] for k, v in sorted(value.items(), key=lambda item: repr(item[0]))]
    if isinstance(value, (list, tuple)):
        return [keyable(v) for v in value]
    raise TypeError(f"kvtier.store: cannot key a {type(value).__name__}")


def digest(kind: str, key: Any) -> str:
    """The name of a result: SHA-256 of its kind and key (:func:`keyable`) written as sorted JSON."""
    text = json.dumps([FORMAT, kind, keyable(key)], sort_keys=True)
    return f"{kind}-{hashlib.sha256(text.encode()).hexdigest()[:32]}"


MISSING: Any = object()
"""What :func:`lookup` returns for a result not stored."""


def lookup(kind: str, key: Any) -> Any:
    """The result stored for ``(kind, key)``, from memory or the directory in use; :data:`MISSING` where none is."""
    name = digest(kind, key)
    if name in _memory:
        _memory.move_to_end(name)
        return _memory[name]
    where = directory()
    if where is not None:
        try:
            with open(where / f"{name}.pickle", "rb") as f:
                value = pickle.load(f)
        except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError):
            return MISSING
        _remember(name, value)
        return value
    return MISSING


def keep(kind: str, key: Any, value: T) -> T:
    """Store ``value`` as the result for ``(kind, key)``: in memory, and in the directory in use if any."""
    name = digest(kind, key)
    where = directory()
    if where is not None:
        _write(where, name, value)
    _remember(name, value)
    return value


def _remember(name: str, value: Any) -> None:
    _memory[name] = value
    _memory.move_to_end(name)
    while len(_memory) > MAX_IN_MEMORY:
        _memory.popitem(last=False)


def memoized(kind: str, key: Any, compute: Callable[[], T]) -> T:
    """The result of ``compute()`` for ``(kind, key)``: from memory, else from the directory in use, else computed.

    Parameters
    ----------
    kind : str
        What the result is (``"policies"``), a word that starts its file's name.
    key : JSON-like, dataclasses and numpy values included (:func:`keyable`)
        Everything the result depends on; two calls with equal keys must compute equal results.
    compute : callable
        Computes the result; called at most once per key in a process.
    """
    found = lookup(kind, key)
    return keep(kind, key, compute()) if found is MISSING else found


def _write(where: Path, name: str, value: Any) -> None:
    """Write ``value`` as ``where/NAME.pickle`` whole or not at all (a temporary file renamed into place)."""
    try:
        where.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=where, prefix=f".{name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                pickle.dump(value, f, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, where / f"{name}.pickle")
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except OSError:
        return  # kept in memory: the store is a saving, never a requirement


def clear() -> None:
    """Forget every result held in memory (the directory's files stay)."""
    _memory.clear()
    _hashes.clear()
