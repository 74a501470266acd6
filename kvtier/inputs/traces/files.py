"""A trace's file: found (a shipped trace by name, or a path), read as a regular file only, split into lines.

:func:`trace_path` resolves a name; :func:`split_lines` is the one line splitter (``\\n`` ends a line and
nothing else does; a line is at most :data:`MAX_LINE_BYTES`); :func:`line_blocks` cuts the file into
blocks of whole lines for the readers.  Errors name the file, and the line where there is one.
"""

from __future__ import annotations

import codecs
import errno
import glob
import os
import stat
from collections.abc import Iterable, Iterator
from importlib import resources
from pathlib import Path

from kvtier import store
from kvtier.data import SHIPPED_TRACES, TRACE_DIR
from kvtier.errors import KvtierError, show

MAX_LINE_BYTES = 16 << 20
"""Longest line of a trace (bytes): 16 MiB, about two million hash ids (a prompt of 32 M tokens at 16 a block)."""

READ_BYTES = 1 << 20
"""Bytes read from a trace at a time."""


def _lexists(text: str) -> bool:
    """True when ``text`` names a directory entry here, even a dangling symbolic link or a loop of them."""
    try:
        os.lstat(text)
    except (OSError, ValueError):  # ValueError: a NUL byte in the name
        return False
    return True


def shadows_shipped(name: str | os.PathLike[str]) -> bool:
    """True when ``name`` is a shipped trace's name and also a file here: :func:`trace_path` then reads the file."""
    text = os.fspath(name)
    return text in SHIPPED_TRACES and _lexists(text)


def trace_path(name: str | os.PathLike[str]) -> tuple[str, Path]:
    """Resolve a shipped trace's name or a user's file into ``(shown name, path)``.

    An existing file wins over a shipped trace of the same name (:func:`shadows_shipped`
    tells when; the command says so in its output).

    Parameters
    ----------
    name : str or path-like
        ``conversation`` or ``synthetic`` (the shipped traces), or the path of a JSONL file.

    Raises
    ------
    KvtierError
        A name that is neither a shipped trace nor a directory entry.
    """
    text = os.fspath(name)
    if text in SHIPPED_TRACES and not _lexists(text):
        ref = resources.files("kvtier.data").joinpath(f"{TRACE_DIR}/{SHIPPED_TRACES[text]}")
        return text, Path(str(ref))
    if not _lexists(text):
        hint = " (a glob pattern: kvtier workload --parts reads the files it names)" if glob.has_magic(text) else ""
        raise KvtierError(
            f"{show(text)}: trace not found{hint}; name a file or a shipped trace: {', '.join(SHIPPED_TRACES)}"
        )
    return show(text), Path(text)


def file_version(name: str | os.PathLike[str]) -> tuple[str, int, int] | None:
    """A trace file's path, size and modification time (ns): what tells one version of it from the next.

    ``None`` where the name resolves to nothing that can be read (the reader names the problem).
    """
    try:
        path = trace_path(name)[1]
        st = path.stat()
    except (KvtierError, OSError, ValueError):
        return None
    return str(path), st.st_size, st.st_mtime_ns


def version_key(name: str | os.PathLike[str]) -> str | None:
    """A trace file's identity for the store of its analysis (:func:`kvtier.store.trace_version`: path, size,
    modification time and content hash); ``None`` where the name resolves to nothing that can be read."""
    version = file_version(name)
    return None if version is None else store.trace_version(*version)


def _regular(path: Path, where: str) -> os.stat_result:
    """``path``'s status, which must be a regular file; checked before opening, so nothing blocks in ``open``."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        dangling = " (a symbolic link to a missing file)" if os.path.islink(path) else ""
        raise KvtierError(f"{where}: trace not found{dangling}") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise KvtierError(f"{where}: trace is a loop of symbolic links") from None
        raise KvtierError(f"{where}: cannot read trace ({exc.__class__.__name__})") from None
    except ValueError:  # a NUL byte in the path
        raise KvtierError(f"{where}: trace not found") from None
    if stat.S_ISDIR(st.st_mode):
        raise KvtierError(
            f"{where}: trace is a directory, not a regular file (kvtier workload --parts reads the files in one)"
        )
    if not stat.S_ISREG(st.st_mode):
        raise KvtierError(f"{where}: trace is not a regular file")
    return st


def _too_large(where: str, limit: int) -> KvtierError:
    return KvtierError(
        f"{where}: trace is larger than {limit:,} bytes, the most the in-memory analysis reads; use --stream"
    )


def _chunks(path: Path, where: str, limit: int | None) -> Iterator[bytes]:
    """The bytes of a regular file, :data:`READ_BYTES` at a time; at most ``limit`` bytes (None: no limit)."""
    size = _regular(path, where).st_size
    if limit is not None and size > limit:
        raise _too_large(where, limit)
    try:
        # O_NONBLOCK: should the name have become a FIFO since the check, open() still returns
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        raise KvtierError(f"{where}: cannot read trace ({exc.__class__.__name__})") from None
    with os.fdopen(fd, "rb", buffering=0) as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise KvtierError(f"{where}: trace is not a regular file")
        total = 0
        while chunk := handle.read(READ_BYTES):
            total += len(chunk)
            if limit is not None and total > limit:  # the file grew after the check
                raise _too_large(where, limit)
            yield chunk


def _line_text(raw: bytes, where: str, number: int) -> str | None:
    """One line's bytes as text, None when blank: a ``\\r`` before its ``\\n`` dropped, UTF-8 required."""
    if len(raw) > MAX_LINE_BYTES:
        raise KvtierError(f"{where}: line {number}: longer than {MAX_LINE_BYTES:,} bytes; refused")
    if number == 1 and raw.startswith(codecs.BOM_UTF8):  # a byte-order mark, as some editors write
        raw = raw[len(codecs.BOM_UTF8) :]
    if not raw.strip(b" \t\r"):  # JSON's own whitespace only
        return None
    if raw.endswith(b"\r"):
        raw = raw[:-1]
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise KvtierError(f"{where}: line {number}: not UTF-8 text") from None


def split_lines(chunks: Iterable[bytes], where: str, before: int = 0) -> Iterator[tuple[int, str]]:
    """The non-blank lines of a trace as ``(line number, text)``, from its bytes in pieces of any size.

    The one line splitter of both readers: a line ends at ``\\n`` and nowhere else (``\\r\\n``
    is accepted; a lone ``\\r``, form feed, U+0085 or U+2028 is part of its line, where JSON
    takes it as string content or refuses it).  Line numbers count blank lines too.  A UTF-8
    byte-order mark at the start is skipped.  At most :data:`MAX_LINE_BYTES` are held
    for one line, so a file with no line break (a file of NULs) is refused after that many.
    ``before``: the lines of the file before ``chunks`` (a block of whole lines from the middle).

    Raises
    ------
    KvtierError
        A line longer than :data:`MAX_LINE_BYTES` or not UTF-8, naming ``where`` and the line.
    """
    number, parts, held = before, [], 0
    for chunk in chunks:
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            number += 1
            raw = chunk[start:end]
            if parts:
                raw = b"".join([*parts, raw])
                parts, held = [], 0
            start = end + 1
            if (text := _line_text(raw, where, number)) is not None:
                yield number, text
        if start < len(chunk):
            parts.append(chunk[start:])
            held += len(chunk) - start
            if held > MAX_LINE_BYTES:
                raise KvtierError(f"{where}: line {number + 1}: longer than {MAX_LINE_BYTES:,} bytes; refused")
    if parts and (text := _line_text(b"".join(parts), where, number + 1)) is not None:
        yield number + 1, text


def trace_lines(path: Path, where: str, limit: int | None = None) -> Iterator[tuple[int, str]]:
    """The non-blank lines of the trace file ``path`` (:func:`split_lines`), reading at most ``limit`` bytes."""
    return split_lines(_chunks(path, where, limit), where)


# ---- the columnar fast path -------------------------------------------------------------------------------

BLOCK_BYTES = 8 << 20
"""Bytes of whole lines the columnar reader parses at once (:func:`request_blocks`), cut at a line's end."""


def line_blocks(path: Path, where: str, limit: int | None = None) -> Iterator[tuple[int, bytes]]:
    """The trace file ``path`` in blocks of whole lines of about :data:`BLOCK_BYTES`: ``(lines before it, bytes)``.

    At most ``limit`` bytes of file (None: no limit), checked before a byte is read (:func:`_chunks`).

    A block ends just after a ``\\n`` (the last may end without one).  Where no line ends within
    :data:`MAX_LINE_BYTES` the bytes held so far come as a block of their own, so that
    :func:`split_lines` refuses the line, having held no more than that for it.
    """
    before, pending, held = 0, [], 0
    for chunk in _chunks(path, where, limit):
        pending.append(chunk)
        held += len(chunk)
        if held < BLOCK_BYTES:
            continue
        data = b"".join(pending)
        end = data.rfind(b"\n") + 1
        if not end and held <= MAX_LINE_BYTES:
            pending = [data]
            continue
        end = end or held
        block = data[:end]
        yield before, block
        before += block.count(b"\n")
        pending = [data[end:]] if end < held else []
        held -= end
    if held:
        yield before, b"".join(pending)
