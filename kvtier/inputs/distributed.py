"""A trace split into many files (one per hour or per server), parsed in parallel on Dask, then replayed.

Fleets keep their prefix-cache logs in many files.  :class:`Parts` orders the files by their
first timestamps, then parses and validates each on a Dask cluster (``dask.distributed``: a
:class:`~distributed.LocalCluster` by default, or the scheduler at an address) into the arrays
of its requests with their ids chained, a few at a time; :func:`replay` feeds them as they
come to one :class:`~kvtier.formulas.cache.stream.LruStream` (exact, or sampled): the same
curve as the single-process reader on the files concatenated, with one part at a time in this
process.  :func:`windowed` is the exact path by time
windows: each window replayed on its own after a warm-up of the references before it, in
parallel, the windows' histograms added; :func:`kvtier.formulas.cache.curve.curve_error` against
the single pass measures what the windows lose (the reuses that reach back past a warm-up).

Needs the optional extra ``dask`` (``pip install -e ".[dask]"``); workers of a real cluster need
kvtier installed too.  Times are seconds.
"""

from __future__ import annotations

import glob
import logging
import math
import os
import re
import signal
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from itertools import chain, islice
from pathlib import Path
from typing import Any

import numpy as np

from kvtier.errors import KvtierError, show
from kvtier.formulas.cache.curve import LruHistogram
from kvtier.formulas.cache.regen import RegenCosts
from kvtier.formulas.cache.sampling import sample_threshold
from kvtier.formulas.cache.stream import LruStream, prepare_chunk
from kvtier.formulas.cache.trace import DEFAULT_HIT_COUNT, Trace
from kvtier.inputs import traces
from kvtier.inputs.traces.files import line_blocks
from kvtier.inputs.traces.load import column_blocks, read_requests
from kvtier.inputs.traces.read import check_block_tokens, request_starts
from kvtier.units import plural


def parse_part(path: str, block_tokens: int, trace_format: str, sample_rate: float = 1.0) -> dict[str, Any]:
    """One file of a trace read and validated as :func:`kvtier.inputs.traces.read_trace` does, its ids chained.

    Below a ``sample_rate`` of 1 the file is also sampled where it is read (on a Dask worker):
    only the references whose hashed id falls below the rate's threshold travel on, as a
    :class:`~kvtier.formulas.cache.stream.Chunk`, about ``sample_rate`` of the file's references.

    Returns
    -------
    dict
        ``name``, ``timestamps_s`` (s), ``lines`` (its requests) and either ``ids`` (int64, chained),
        ``starts``, ``input_tokens``, ``output_tokens`` (exact), or ``chunk`` (sampled).
    """
    where, file = traces.trace_path(path)
    fmt = traces.format_named(trace_format)
    c = read_requests(line_blocks(file, where), where, check_block_tokens(block_tokens), fmt)
    starts = request_starts(c.counts)
    part = {
        "name": where,
        "ids": fmt.prefix_ids(c.ids, starts),
        "starts": starts,
        "input_tokens": c.inputs,
        "output_tokens": c.outputs,
        "timestamps_s": fmt.seconds(c.stamps),
        "lines": int(c.counts.size),
    }
    if sample_rate < 1.0:
        chunk = prepare_chunk(
            part.pop("ids"),
            part.pop("starts"),
            part.pop("input_tokens"),
            block_tokens,
            part.pop("output_tokens"),
            part["timestamps_s"],
            sample_threshold(sample_rate),
        )
        part["chunk"] = chunk
    return part


SCHEDULER_TIMEOUT_S = 10.0
"""Seconds a Dask scheduler has to answer ``--scheduler`` before the command gives up."""

_ADDRESS = re.compile(r"(tcp|tls)://[A-Za-z0-9.\-]+:[0-9]{1,5}|(tcp|tls)://\[[0-9A-Fa-f:.]+\]:[0-9]{1,5}")


def check_scheduler(address: str) -> None:
    """Refuse what is not a Dask scheduler's address, ``tcp://HOST:PORT`` (or ``tls://``), in one line."""
    if not _ADDRESS.fullmatch(address):
        raise KvtierError(
            f"--scheduler {show(address)}: not a Dask scheduler's address; give tcp://HOST:PORT (or tls://HOST:PORT)"
        )


def _connect(client_type: Any, address: str) -> Any:
    """A client of the scheduler at ``address``, or a one-line KvtierError within :data:`SCHEDULER_TIMEOUT_S`.

    Connected in a thread of its own: a server that accepts the connection but never speaks Dask's protocol (an
    HTTP server on that port) holds ``Client`` past its own timeout, so the wait is bounded here.
    """
    box: dict[str, Any] = {}

    def connect() -> None:
        try:
            box["client"] = client_type(address, timeout=f"{SCHEDULER_TIMEOUT_S}s")
        except Exception as exc:  # noqa: BLE001 - any failure to connect is the same answer to the user
            box["error"] = exc

    worker = threading.Thread(target=connect, name="kvtier-dask-connect", daemon=True)
    worker.start()
    worker.join(SCHEDULER_TIMEOUT_S + 2.0)
    if "client" in box:
        return box["client"]
    raise KvtierError(f"--scheduler {show(address)}: no Dask scheduler answered within {SCHEDULER_TIMEOUT_S:g} s")


def dask_setup(worker: Any) -> None:
    """Run by each LocalCluster worker as it starts (Dask's preload): ignore SIGINT.

    A Ctrl-C in a shell reaches every process of the group; the workers printed their
    ``KeyboardInterrupt`` tracebacks (68 lines) while this process said "interrupted" in one.
    Ignored there, the command closes the cluster itself as it stops.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@contextmanager
def client(scheduler: str | None = None, workers: int = 2):
    """A Dask client: of the scheduler at ``scheduler`` (``tcp://host:8786``), else of a new LocalCluster."""
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise KvtierError("the distributed path needs Dask: pip install -e '.[dask]'") from None
    if scheduler:
        check_scheduler(scheduler)
        with _connect(Client, scheduler) as c:
            yield c
        return
    # Ctrl-C stopping the gathers leaves tasks whose AllExit asyncio logs ("Task exception was never retrieved")
    logging.getLogger("asyncio").setLevel(logging.CRITICAL)
    # SIGINT ignored while the cluster starts: the worker processes inherit an ignored signal through exec (a
    # blocked mask did not reach them), so a Ctrl-C while they import printed their KeyboardInterrupt tracebacks;
    # one pressed in those seconds is lost, the one after stops the command
    previous = (
        signal.signal(signal.SIGINT, signal.SIG_IGN) if threading.current_thread() is threading.main_thread() else None
    )
    try:
        # no dashboard; the scheduler's HTTP server (health and metrics) on a free port, not 8787: a second cluster
        # on the machine warned "Port 8787 is already in use"
        cluster = LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            dashboard_address=None,
            scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
            preload=[__name__],  # each worker runs dask_setup: Ctrl-C is this process's to handle
            silence_logs=logging.CRITICAL,
        )
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
    with cluster, Client(cluster) as c:
        yield c


def first_stamp(path: str, block_tokens: int, trace_format: str) -> tuple[float, float]:
    """The first arrival (s) of one file of a split trace, and its last where the file is one block of lines
    (``inf`` otherwise): only its first block is read.

    A file's timestamps never go back (the reader refuses it), so the first orders the parts before any is
    parsed whole; the last breaks a tie between parts that start at the same instant (the one that ends there
    first). A file with no request is a :class:`~kvtier.errors.KvtierError` naming it.
    """
    where, file = traces.trace_path(path)
    fmt = traces.format_named(trace_format)
    raw = line_blocks(file, where)
    head = list(islice(raw, 2))  # the first block of lines, and whether another follows
    blocks = column_blocks(chain(head, raw), where, check_block_tokens(block_tokens), fmt)
    first = next(blocks, None)
    blocks.close()
    if first is None:
        raise KvtierError(f"{where}: the trace holds no requests")
    stamps = fmt.seconds(first.stamps)
    return float(stamps[0]), float(stamps[-1]) if len(head) == 1 else math.inf


class Parts:
    """Every file of a split trace, parsed one after another in the order of their first timestamps.

    Made, it has read each file's first block of lines (:func:`first_stamp`, on ``dask_client``
    when given) and knows the order, :attr:`names`; iterated, it yields each file parsed
    (:func:`parse_part`), keeping at most ``ahead`` parsed parts in flight on the cluster (its
    workers, by default) and none in this process once yielded: the trace is streamed, however
    many files.  A part that starts before the one before it ends is a
    :class:`~kvtier.errors.KvtierError` naming both, raised when it comes.  Below a
    ``sample_rate`` of 1 each file is sampled where it is parsed, so only the sampled references
    reach this process; :func:`replay` needs the same rate.
    """

    def __init__(
        self,
        paths: Sequence[str | os.PathLike[str]],
        block_tokens: int = traces.TRACE_BLOCK_TOKENS,
        trace_format: str = traces.DEFAULT_FORMAT,
        dask_client: Any = None,
        sample_rate: float = 1.0,
        ahead: int | None = None,
    ) -> None:
        if not paths:
            raise KvtierError("no trace files to read")
        given = [os.fspath(p) for p in paths]
        self.block_tokens, self.trace_format, self.sample_rate = block_tokens, trace_format, sample_rate
        self.client = dask_client
        if dask_client is None:
            firsts = [first_stamp(p, block_tokens, trace_format) for p in given]
        else:
            futures = dask_client.map(
                first_stamp, given, block_tokens=block_tokens, trace_format=trace_format, pure=False
            )
            firsts = dask_client.gather(futures)
        order = sorted(zip(firsts, [traces.trace_path(p)[0] for p in given], given, strict=True))  # first, last, name
        self.names = [where for _, where, _ in order]
        """The files' names as the reader shows them, in the order of their first timestamps."""
        self._paths = [p for _, _, p in order]
        workers = len(dask_client.scheduler_info().get("workers", {})) if dask_client is not None else 1
        self.ahead = max(1, ahead if ahead is not None else workers)

    def _parsed(self) -> Iterator[dict[str, Any]]:
        """Each file parsed, in order: here one at a time, or on the cluster ``ahead`` at a time."""
        kw = {"block_tokens": self.block_tokens, "trace_format": self.trace_format, "sample_rate": self.sample_rate}
        if self.client is None:
            for p in self._paths:
                yield parse_part(p, **kw)
            return
        waiting = iter(self._paths)
        flight = deque(self.client.submit(parse_part, p, **kw, pure=False) for p in islice(waiting, self.ahead))
        while flight:
            part = flight.popleft().result()
            for p in islice(waiting, 1):
                flight.append(self.client.submit(parse_part, p, **kw, pure=False))
            yield part

    def __iter__(self) -> Iterator[dict[str, Any]]:
        before: tuple[str, float] | None = None
        for part in self._parsed():
            ts = part["timestamps_s"]
            if before is not None and ts[0] < before[1]:
                raise KvtierError(
                    f"{part['name']}: starts at {ts[0]:g} s, before {before[0]} ends"
                    f" ({before[1]:g} s); the parts of a trace must not overlap in time"
                )
            before = (part["name"], float(ts[-1]))
            yield part


def read_parts(
    paths: Sequence[str | os.PathLike[str]],
    block_tokens: int = traces.TRACE_BLOCK_TOKENS,
    trace_format: str = traces.DEFAULT_FORMAT,
    dask_client: Any = None,
    sample_rate: float = 1.0,
) -> list[dict[str, Any]]:
    """Every part of :class:`Parts` held at once, in order: what :func:`windowed` needs (each window any part)."""
    return list(Parts(paths, block_tokens, trace_format, dask_client, sample_rate))


def _feed(stream: LruStream, part: dict[str, Any], block_tokens: int, lo: int = 0, hi: int | None = None) -> None:
    """Feed requests ``lo:hi`` of ``part`` to ``stream`` (:func:`kvtier.inputs.traces.feed_requests`)."""
    traces.feed_requests(
        stream,
        part["ids"],
        part["starts"],
        part["input_tokens"],
        part["output_tokens"],
        part["timestamps_s"],
        block_tokens,
        lo,
        part["lines"] if hi is None else hi,
    )


def replay(
    parts: Iterable[dict[str, Any]],
    block_tokens: int = traces.TRACE_BLOCK_TOKENS,
    trace_format: str = traces.DEFAULT_FORMAT,
    count: str = DEFAULT_HIT_COUNT,
    rc: RegenCosts | None = None,
    sample_rate: float = 1.0,
    max_blocks: int | None = None,
    name: str | None = None,
) -> LruHistogram:
    """The parts fed in order to one :class:`~kvtier.formulas.cache.stream.LruStream`: the single-pass curve.

    ``parts`` may be a :class:`Parts`, each part dropped once fed.

    Parts sampled where they were read (:func:`read_parts` with a ``sample_rate``) are fed as they
    came; exact parts are sampled here when ``sample_rate`` is below 1.
    """
    stream = LruStream(count, rc, sample_rate, max_blocks)
    names, lines = [], 0
    for part in parts:
        if "chunk" in part:
            stream.feed_chunk(part["chunk"])
        else:
            _feed(stream, part, block_tokens)
        names.append(part["name"])
        lines += part["lines"]
    label = name or (names[0] if len(names) == 1 else f"{len(names)} files from {names[0]}")
    return stream.histogram(label, lines, trace_format, block_tokens)


def _window(
    parts: Sequence[dict[str, Any]],
    start_s: float,
    end_s: float,
    warmup_s: float,
    block_tokens: int,
    count: str,
    rc: RegenCosts | None,
) -> LruStream:
    """One window ``[start_s, end_s)`` replayed after a warm-up of ``[start_s - warmup_s, start_s)``, not counted."""
    warm = LruStream(count, rc)
    for part in parts:
        ts = part["timestamps_s"]
        w0, w1 = np.searchsorted(ts, [start_s - warmup_s, start_s], side="left")
        _feed(warm, part, block_tokens, int(w0), int(w1))
    warm.reset_counts()
    for part in parts:
        ts = part["timestamps_s"]
        lo, hi = np.searchsorted(ts, [start_s, end_s], side="left")
        _feed(warm, part, block_tokens, int(lo), int(hi))
    return warm


MAX_WINDOWS = 10_000
"""Most time windows :func:`windowed` replays: each is a task and a stream of its own."""


def windowed(
    parts: Sequence[dict[str, Any]],
    window_s: float,
    warmup_s: float,
    block_tokens: int = traces.TRACE_BLOCK_TOKENS,
    trace_format: str = traces.DEFAULT_FORMAT,
    count: str = DEFAULT_HIT_COUNT,
    rc: RegenCosts | None = None,
    dask_client: Any = None,
) -> LruHistogram:
    """The exact path by time windows of ``window_s`` with a warm-up of ``warmup_s`` each, the histograms added.

    Each window is replayed on its own (on ``dask_client`` when given): its references after
    those of the ``warmup_s`` before it, which set the cache's state but are not counted.  A
    reuse that reaches back past the warm-up is a miss here where the single pass may hit:
    the windowed curve is at most the single pass's, a slight lower bound
    (:func:`kvtier.formulas.cache.curve.curve_error` measures the gap).
    """
    if any("chunk" in p for p in parts):
        raise KvtierError("--window replays every reference: read the parts without sampling (sample rate 1)")
    traces.check_window(window_s, warmup_s)
    t0 = float(parts[0]["timestamps_s"][0])
    t1 = float(parts[-1]["timestamps_s"][-1])
    if (t1 - t0) / window_s >= MAX_WINDOWS:  # checked before the edges are allocated (--window 1e-9 asked 1.5 TiB)
        raise KvtierError(
            f"--window {window_s:g}: the parts span {t1 - t0:,.6g} s, more than {MAX_WINDOWS:,} windows of"
            f" {window_s:g} s, each replayed on its own; a wider --window"
        )
    edges = t0 + window_s * np.arange(int((t1 - t0) // window_s) + 2)
    args = [(float(a), float(b)) for a, b in zip(edges[:-1], edges[1:], strict=True)]
    run: Callable[[float, float], LruStream] = lambda a, b: _window(  # noqa: E731
        parts, a, b, warmup_s, block_tokens, count, rc
    )
    if dask_client is None:
        streams = [run(a, b) for a, b in args]
    else:
        shared = dask_client.scatter(list(parts), broadcast=True)
        futures = [
            dask_client.submit(_window, shared, a, b, warmup_s, block_tokens, count, rc, pure=False) for a, b in args
        ]
        streams = dask_client.gather(futures)
    total = streams[0]
    for other in streams[1:]:
        total.add(other)
    label = f"{plural(len(parts), 'file')} from {parts[0]['name']}, windows of {window_s:g} s, warm-up {warmup_s:g} s"
    return total.histogram(label, total.n_requests, trace_format, block_tokens)


def part_of(trace: Trace) -> dict[str, Any]:
    """A trace in memory as one part of :func:`read_parts`' kind, for :func:`replay` and :func:`windowed`."""
    return {
        "name": trace.name,
        "ids": trace.blocks,
        "starts": trace.starts,
        "input_tokens": trace.input_tokens,
        "output_tokens": trace.output_tokens,
        "timestamps_s": trace.timestamps_s,
        "lines": trace.n_requests,
    }


def files(spec: str) -> list[str]:
    """The files a ``--parts`` argument names: a directory's files, or a glob pattern's, each directory among them
    read to any depth (one folder per day is a common layout), sorted by path.

    Raises
    ------
    KvtierError
        Naming the first entry that is neither a regular file nor a directory (a FIFO, a socket, a link to
        nothing), or when nothing is found.
    """
    p = Path(spec)
    named = [p] if p.is_dir() else [Path(g) for g in sorted(glob.glob(spec))]
    found: list[str] = []
    for entry in named:
        for f in sorted(entry.rglob("*")) if entry.is_dir() else [entry]:
            if f.is_dir():
                continue
            if not f.is_file():
                kind = "a link to nothing" if f.is_symlink() and not f.exists() else "not a regular file"
                raise KvtierError(f"{show(str(f))}: {kind}; a part of a trace must be a regular file")
            found.append(str(f))
    if not found:
        raise KvtierError(f"{show(spec)}: no trace files (name a directory or a glob pattern)")
    return sorted(found)
