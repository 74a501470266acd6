"""A trace read in chunks of whole requests, for a trace of any length: the exact LRU curve, and by windows.

:class:`RequestChunks` walks the file (validated as :func:`~kvtier.inputs.traces.load.read_trace`
validates it); :func:`stream_lru` feeds :class:`~kvtier.formulas.cache.stream.LruStream` in memory
proportional to the distinct blocks; :func:`check_window` checks a time window and its warm-up.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterator, Sequence

import numpy as np

from kvtier.errors import KvtierError
from kvtier.formulas.cache.curve import LruHistogram
from kvtier.formulas.cache.regen import RegenCosts
from kvtier.formulas.cache.stream import ChunkReuse, LruStream
from kvtier.formulas.cache.trace import DEFAULT_HIT_COUNT
from kvtier.inputs.traces.files import trace_path
from kvtier.inputs.traces.formats import DEFAULT_FORMAT, TRACE_BLOCK_TOKENS, format_named
from kvtier.inputs.traces.load import request_blocks
from kvtier.inputs.traces.read import Columns, check_block_tokens, request_starts

BATCH_LINES = 2048
"""Most lines in one batch of the stream (:class:`RequestChunks`): a chunk ends only at a batch's end."""

BATCH_CHARS = 1 << 20
"""Most characters of lines in one batch of the stream: a batch ends at the line that reaches it."""


class RequestChunks:
    """A trace read line by line in chunks of whole requests, validated as :func:`read_trace` validates it.

    Same one-line errors and line numbers as :func:`read_trace` (:func:`split_lines`), with no
    limit on the file's size.  A chunk ends after the first batch of lines (:data:`BATCH_LINES`,
    or the line that reaches :data:`BATCH_CHARS`) that brings the references held to
    ``min_refs()``, asked afresh for each chunk (a stream's state grows, and its per-chunk work
    with it).  Iterating yields ``(ids chained, starts, input tokens, output tokens, timestamps
    in s)``; ``where`` is the trace's shown name and ``n_requests`` the requests read so far.
    Raises :class:`KvtierError` for a trace with no requests.
    """

    def __init__(
        self, name: str | os.PathLike[str], block_tokens: int, trace_format: str, min_refs: Callable[[], int]
    ) -> None:
        self.where, self.path = trace_path(name)
        self.fmt = format_named(trace_format)
        self.block_tokens = check_block_tokens(block_tokens)
        self.min_refs = min_refs
        self.n_requests = 0

    def __iter__(self) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
        fmt = self.fmt
        held: list[Columns] = []  # read, not yet yielded
        n_held = 0  # their references

        def joined() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
            c = Columns.join(held) if len(held) > 1 else held[0]
            starts = request_starts(c.counts)
            ids = fmt.prefix_ids(c.ids.copy(), starts)
            return ids, starts, c.inputs, c.outputs, fmt.seconds(c.stamps)

        lines_in_batch = chars_in_batch = 0
        for cols in request_blocks(self.path, self.where, self.block_tokens, fmt):
            self.n_requests += cols.counts.size
            while cols.counts.size:
                cum = np.cumsum(cols.chars)
                by_lines = BATCH_LINES - lines_in_batch - 1
                by_chars = int(np.searchsorted(cum, BATCH_CHARS - chars_in_batch, side="left"))
                end = min(by_lines, by_chars)
                if end >= cols.counts.size:  # the batch goes on into the next block
                    lines_in_batch += cols.counts.size
                    chars_in_batch += int(cum[-1])
                    held.append(cols)
                    n_held += int(cols.counts.sum())
                    break
                lines_in_batch = chars_in_batch = 0
                head, cols = cols.split(end + 1)
                held.append(head)
                n_held += int(head.counts.sum())
                if n_held >= self.min_refs():
                    yield joined()
                    held, n_held = [], 0
        if held:
            yield joined()
        if not self.n_requests:
            raise KvtierError(f"{self.where}: the trace holds no requests")


def stream_lru(
    name: str | os.PathLike[str],
    block_tokens: int = TRACE_BLOCK_TOKENS,
    chunk_refs: int = 1 << 20,
    trace_format: str = DEFAULT_FORMAT,
    *,
    count: str = DEFAULT_HIT_COUNT,
    rc: RegenCosts | None = None,
    sample_rate: float = 1.0,
    max_blocks: int | None = None,
    over_time: tuple[float, int | None, float | None] | None = None,
    observers: Sequence[Callable[[ChunkReuse], None]] = (),
) -> LruHistogram:
    """A trace read line by line and measured in memory proportional to its distinct blocks (:class:`LruStream`).

    Read by :class:`RequestChunks` in chunks of whole requests of about ``chunk_refs``
    references, and at least a quarter as many as the distinct blocks seen, so that the
    per-chunk work on the state (sorting it) stays O(n log n) overall; holds what
    :class:`LruStream` holds, one chunk and one line (at most :data:`MAX_LINE_BYTES`).  With
    ``rc`` it counts what everything :func:`kvtier.formulas.cache.report.report` says needs;
    ``count``, ``sample_rate``, ``max_blocks``, ``over_time`` and ``observers`` are
    :class:`LruStream`'s.
    """
    stream = LruStream(count, rc, sample_rate, max_blocks, over_time, observers)
    chunks = RequestChunks(name, block_tokens, trace_format, lambda: max(chunk_refs, len(stream) // 4))
    for ids, starts, inputs, outputs, stamps in chunks:
        stream.feed(ids, starts, inputs, chunks.block_tokens, outputs, stamps)
    return stream.histogram(chunks.where, chunks.n_requests, chunks.fmt.name, chunks.block_tokens)


DENSE_MAX_REFS = 1 << 27
"""Most references :func:`read_dense` holds: 134,217,728, at 4 B each as int32 ids (512 MiB)."""


def read_dense(
    name: str | os.PathLike[str],
    block_tokens: int = TRACE_BLOCK_TOKENS,
    trace_format: str = DEFAULT_FORMAT,
    max_refs: int = DENSE_MAX_REFS,
) -> tuple[np.ndarray, np.ndarray]:
    """A trace's block ids alone, dense in order of first appearance (int32), and where each request's begin.

    Read by :class:`RequestChunks` and numbered by :class:`~kvtier.formulas.cache.ids.DenseIds` (16 B a
    distinct block while reading), for replays that need every reference in order but nothing else of the
    trace: the eviction policies on a trace longer than :func:`~kvtier.inputs.traces.load.read_trace` holds.
    4 B a reference and 8 a request.

    Raises
    ------
    KvtierError
        One line naming the trace, for more than ``max_refs`` references, and as :class:`RequestChunks`.
    """
    from kvtier.formulas.cache.ids import DenseIds

    dense = DenseIds()
    ids_parts: list[np.ndarray] = []
    count_parts: list[np.ndarray] = []
    total = 0
    chunks = RequestChunks(name, block_tokens, trace_format, lambda: max(1 << 20, len(dense) // 4))
    for ids, starts, *_ in chunks:
        total += ids.size
        if total > max_refs:
            raise KvtierError(
                f"{chunks.where}: more than {max_refs:,} block references, the most the eviction policies are"
                " replayed on exactly"
            )
        ids_parts.append(dense.map(ids).astype(np.int32))
        count_parts.append(np.diff(starts))
    dense.keys, dense.values = dense.keys[:0], dense.values[:0]  # the hashes are done with: free them
    blocks = np.concatenate(ids_parts) if ids_parts else np.empty(0, dtype=np.int32)
    del ids_parts
    counts = np.concatenate(count_parts) if count_parts else np.empty(0, dtype=np.int64)
    starts_all = np.zeros(counts.size + 1, dtype=np.int64)
    np.cumsum(counts, out=starts_all[1:])
    return blocks, starts_all


def check_window(window_s: float, warmup_s: float) -> None:
    """Refuse a window that is not a number of seconds above 0, or a warm-up below 0, naming the option."""
    if not (math.isfinite(window_s) and window_s > 0):
        raise KvtierError(f"--window {window_s:g}: a number of seconds above 0")
    if not (math.isfinite(warmup_s) and warmup_s >= 0):
        raise KvtierError(f"--warmup {warmup_s:g}: a number of seconds, 0 or more")


def feed_requests(
    stream: LruStream,
    ids: np.ndarray,
    starts: np.ndarray,
    inputs: np.ndarray,
    outputs: np.ndarray,
    stamps: np.ndarray,
    block_tokens: int,
    lo: int,
    hi: int,
) -> None:
    """Feed requests ``lo:hi`` of a chunk (or of a whole part, :mod:`kvtier.inputs.distributed`) to ``stream``."""
    if hi <= lo:
        return
    s = starts[lo : hi + 1]
    stream.feed(ids[s[0] : s[-1]], s - s[0], inputs[lo:hi], block_tokens, outputs[lo:hi], stamps[lo:hi])
