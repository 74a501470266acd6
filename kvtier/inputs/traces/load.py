"""A trace file read whole: blocks of lines scanned or validated, indexed as a Trace, measured once per version.

:func:`column_blocks` is the one reader of a trace's blocks (the scanner where it can, the validating
reader where it cannot: the same arrays, the same errors); :func:`read_trace` reads a file into a
:class:`~kvtier.formulas.cache.trace.Trace` within :data:`MAX_TRACE_BYTES` and :data:`MAX_TRACE_REFS`;
:func:`analyse` measures it (:class:`~kvtier.formulas.cache.curve.Reuse`), cached per file version.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from kvtier.errors import KvtierError
from kvtier.formulas.cache.curve import Reuse
from kvtier.formulas.cache.ids import dense_ids
from kvtier.formulas.cache.trace import DEFAULT_HIT_COUNT, Trace
from kvtier.inputs.traces.files import line_blocks, trace_path
from kvtier.inputs.traces.formats import DEFAULT_FORMAT, TRACE_BLOCK_TOKENS, TraceFormat, format_named
from kvtier.inputs.traces.read import Columns, Requests, check_block_tokens, request_starts, validated_columns
from kvtier.inputs.traces.scan import scan_columns

MAX_TRACE_REFS = 1 << 25
"""Most block references the in-memory analysis reads (33,554,432): at :data:`BYTES_PER_REF` about 3.4 GiB.
A trace with more is refused at the line that passes it; ``--stream`` reads any number."""

MAX_TRACE_BYTES = 384 << 20
"""Largest trace file the in-memory analysis reads (402,653,184 bytes), checked from its size before reading.

Measured as peak resident memory per byte of trace (``kvtier workload --json``, numpy 2, Linux): 8.5 B for a
trace whose ids are written as in the shipped ones (about 14 B a reference), so 384 MiB holds in about 3.2 GiB.
A trace written more densely (ids of one digit, 2 B a reference: 52 B of memory per byte) meets
:data:`MAX_TRACE_REFS` first.  A larger trace: ``--stream``.
"""


def request_blocks(
    path: Path,
    where: str,
    block_tokens: int,
    fmt: TraceFormat,
    fast: bool = True,
    limit: int | None = None,
    max_refs: int | None = None,
) -> Iterator[Columns]:
    """The requests of the trace file ``path``, validated, as :class:`Columns` a block of lines at a time.

    :func:`column_blocks` of :func:`line_blocks` (at most ``limit`` bytes of file).
    """
    return column_blocks(line_blocks(path, where, limit), where, block_tokens, fmt, fast, max_refs)


def column_blocks(
    blocks: Iterable[tuple[int, bytes]],
    where: str,
    block_tokens: int,
    fmt: TraceFormat,
    fast: bool = True,
    max_refs: int | None = None,
) -> Iterator[Columns]:
    """Blocks of whole lines ``(lines before, bytes)`` as validated :class:`Columns`: the one reader of a trace.

    Each block, when ``fast``, is read by the compiled scanner (:func:`scan_columns`) when every
    line is plain and valid, else by the validating reader (:func:`validated_columns`): the same
    arrays either way, and the same one-line error naming the file and the line for a bad request.
    Blocks with no request (blank lines) are skipped.  With ``max_refs``, more block references
    in all are refused at the line that passes it, in the validating reader's words.
    """
    req = Requests(where, block_tokens, fmt)
    total = 0
    for before, block in blocks:
        last = req.last
        cols = None
        if fast:
            cols = scan_columns(block, block_tokens, last, fmt)
        if cols is None:
            cols = validated_columns(req, block, before)
        elif cols.stamps.size:
            req.last = float(cols.stamps[-1])
        if max_refs is not None and total + cols.ids.size > max_refs:
            # the block again, line by line, with what is left of the bound: it names the line that passes it
            probe = Requests(where, block_tokens, fmt, max_refs)
            probe.last, probe.refs_before = last, total
            validated_columns(probe, block, before)
        total += int(cols.ids.size)
        if cols.counts.size:
            yield cols


def read_requests(
    blocks: Iterable[tuple[int, bytes]],
    where: str,
    block_tokens: int,
    fmt: TraceFormat,
    max_refs: int | None = None,
) -> Columns:
    """Every request of ``blocks`` (:func:`column_blocks`) as one :class:`Columns`; empty for no request."""
    parts = [replace(c, chars=c.chars[:0]) for c in column_blocks(blocks, where, block_tokens, fmt, True, max_refs)]
    if not parts:
        empty = np.zeros(0, dtype=np.int64)
        return Columns(np.zeros(0), empty, empty, empty, empty, empty)
    return Columns.join(parts) if len(parts) > 1 else parts[0]


def _trace_of(c: Columns, where: str, block_tokens: int, fmt: TraceFormat) -> Trace:
    """The requests read (:func:`read_requests`) indexed as a :class:`Trace`: dense ids of the chained block ids."""
    if not c.counts.size:
        raise KvtierError(f"{where}: the trace holds no requests")
    starts = request_starts(c.counts)
    raw = fmt.prefix_ids(c.ids, starts)
    return Trace(
        name=where,
        block_tokens=block_tokens,
        timestamps_s=fmt.seconds(c.stamps),
        input_tokens=c.inputs,
        output_tokens=c.outputs,
        starts=starts,
        blocks=dense_ids(raw),
        trace_format=fmt.name,
    )


def _read(blocks: Iterable[tuple[int, bytes]], where: str, block_tokens: Any, trace_format: str) -> Trace:
    """Validate every request of ``blocks`` and index the trace; at most :data:`MAX_TRACE_REFS` references."""
    fmt = format_named(trace_format)
    tokens = check_block_tokens(block_tokens)
    return _trace_of(read_requests(blocks, where, tokens, fmt, MAX_TRACE_REFS), where, tokens, fmt)


def parse_trace(
    text: str, where: str, block_tokens: int = TRACE_BLOCK_TOKENS, trace_format: str = DEFAULT_FORMAT
) -> Trace:
    """Validate and index the text of a trace (see :func:`read_trace`), split as a file is (:func:`split_lines`).

    Parameters
    ----------
    text : str
        The JSONL text; blank lines are skipped.
    where : str
        How messages name the trace.
    block_tokens : int
        Prompt tokens per ``hash_ids`` block (tokens, >= 1).
    trace_format : str
        A :data:`TRACE_FORMATS` name.
    """
    data = text.encode("utf-8", errors="surrogatepass")
    return _read([(0, data)] if data else [], where, block_tokens, trace_format)


def read_trace(
    name: str | os.PathLike[str], block_tokens: int = TRACE_BLOCK_TOKENS, trace_format: str = DEFAULT_FORMAT
) -> Trace:
    """Read and validate a trace: a shipped one by name or a user's JSONL file, line by line.

    Holds the requests as arrays while it reads (8 B a reference), never the file's bytes
    or text or a list of its lines; the file's size is checked against
    :data:`MAX_TRACE_BYTES` before a byte is read.

    Parameters
    ----------
    name : str or path-like
        ``conversation``, ``synthetic`` or a path.
    block_tokens : int
        Prompt tokens per ``hash_ids`` block (tokens); 512 in the Mooncake traces.
    trace_format : str
        A :data:`TRACE_FORMATS` name: the unit of the timestamps and whether ids are chained.

    Raises
    ------
    KvtierError
        One line naming the file (and the line, for a bad request): not found, a loop of
        symbolic links, not a regular file, too large, a line too long or not UTF-8,
        malformed JSON, a duplicate key, a missing field, a negative or too large length,
        a timestamp too large, ``hash_ids`` whose length is not
        ``ceil(input_length / block_tokens)``, a timestamp that goes backwards, no requests.
    """
    where, path = trace_path(name)
    return _read(line_blocks(path, where, MAX_TRACE_BYTES), where, block_tokens, trace_format)


@lru_cache(maxsize=4)
def _measured(path: str, size: int, mtime_ns: int, where: str, block_tokens: int, trace_format: str) -> Reuse:
    return Reuse.of(_read(line_blocks(Path(path), where, MAX_TRACE_BYTES), where, block_tokens, trace_format))


@lru_cache(maxsize=4)
def _analyse_cached(
    path: str, size: int, mtime_ns: int, where: str, block_tokens: int, trace_format: str, count: str
) -> Reuse:
    return _measured(path, size, mtime_ns, where, block_tokens, trace_format).recounted(count)


def analyse(
    name: str | os.PathLike[str],
    block_tokens: int = TRACE_BLOCK_TOKENS,
    trace_format: str = DEFAULT_FORMAT,
    count: str = DEFAULT_HIT_COUNT,
) -> Reuse:
    """Read, validate and measure a trace (a shipped one by name or a file), cached per file version.

    Parameters
    ----------
    name : str or path-like
        ``conversation``, ``synthetic`` or a path.
    block_tokens : int
        Prompt tokens per ``hash_ids`` block (tokens).
    trace_format : str
        A :data:`TRACE_FORMATS` name.
    count : str
        How hits are counted (:data:`kvtier.formulas.cache.trace.HIT_COUNTS`): up to each request's first miss, or
        every cached block.
    """
    where, path = trace_path(name)
    try:
        st = path.stat()
    except (OSError, ValueError):
        return Reuse.of(read_trace(name, block_tokens, trace_format), count)  # read_trace names the problem
    return _analyse_cached(str(path), st.st_size, st.st_mtime_ns, where, block_tokens, trace_format, count)
