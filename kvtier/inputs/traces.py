"""Serving traces: find, read and validate them, one JSON object a line, into the arrays the reuse formulas take.

A trace is one JSON object per line and per request, in the format of the traces Mooncake
published with its FAST'25 paper (shipped in ``kvtier/data/traces/mooncake-fast25/``):
``timestamp`` (ms since the start of the trace), ``input_length`` and ``output_length``
(tokens) and ``hash_ids``, one id per block of ``block_tokens`` prompt tokens, chained so
that two equal ids mean an equal prefix up to and including that block.  Other formats
(:data:`TRACE_FORMATS`: Alibaba's Qwen traces, timestamps in seconds and one id per
16-token block, not chained) declare their unit of time and whether their ids are chained;
unchained ids are chained on reading (:func:`kvtier.formulas.reuse.chain_ids`), as a serving
engine keys its prefix cache.

- :func:`read_trace`, the one validating reader: a malformed line, a duplicate key, a
  missing field, a negative or too large length, a ``hash_ids`` list whose length
  disagrees with the input length, or a timestamp that goes backwards is a
  :class:`~kvtier.errors.KvtierError` naming the file and the line, on one line.  Both it
  and the stream read regular files only, through one line splitter (:func:`split_lines`:
  ``\\n`` ends a line, nothing else does), holding arrays, never the file's text.  It returns
  a :class:`~kvtier.formulas.reuse.Trace`; :func:`analyse` measures it
  (:class:`~kvtier.formulas.reuse.Reuse`), cached per file version.
- :func:`stream_lru`, the exact LRU curve of a trace read line by line, in memory
  proportional to its distinct blocks: it walks the file and feeds
  :class:`~kvtier.formulas.reuse.LruStream` chunks of whole requests, for a trace larger
  than memory.
- :func:`generate_trace`, a seeded generator of traces in the Mooncake format (shared-prefix
  trees, skewed reuse) for benchmarks at scale, and :func:`to_jsonl`, which writes one.

Times are seconds, sizes bytes, unless a name says otherwise.
"""

from __future__ import annotations

import codecs
import errno
import json
import math
import os
import stat
import time
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from kvtier.data import SHIPPED_TRACES, TRACE_DIR
from kvtier.errors import KvtierError, show
from kvtier.formulas.jit import jit
from kvtier.formulas.reuse import (
    DEFAULT_HIT_COUNT,
    ChunkReuse,
    LruHistogram,
    LruStream,
    RegenCosts,
    Reuse,
    Trace,
    block_hash,
    chain_ids,
    curve_error,
    dense_ids,
    histogram_of,
    sample_threshold,
)

TRACE_BLOCK_TOKENS = 512
"""Tokens per ``hash_ids`` block in the Mooncake traces (as their authors publish them)."""


FIELDS = ("timestamp", "input_length", "output_length", "hash_ids")
"""A request's fields as the Mooncake traces name them: its timestamp, prompt tokens, output tokens, block ids."""


@dataclass(frozen=True)
class TraceFormat:
    """One trace format: what its fields are called, the unit of its timestamps and what its block ids identify.

    The one record the reader, the scanner, the chaining, ``--format`` and ``workload.trace_format``
    all read: a format is one entry of :data:`TRACE_FORMATS`.

    Attributes
    ----------
    name : str
        What ``--format`` and ``workload.trace_format`` call it.
    unit : str
        The unit of the timestamps as messages print it (``ms``, ``s``).
    unit_name : str
        The same unit in words, for messages (``milliseconds``).
    units_per_s : float
        Timestamp units in one second (1000 for ms, 1 for s).
    chained : bool
        True when each id already names the whole prefix up to its block (equal ids: equal
        prefix); False when an id names one block's own tokens wherever it stands, so that
        the reader chains them (:func:`chain_ids`) before measuring reuse.
    block_tokens : int
        Prompt tokens per id as the trace's authors publish them (tokens).
    source : str
        Where the format is published.
    summary : str
        What ``kvtier workload --format`` says of it, after ``name =``.
    fields : tuple of str
        The names of a request's timestamp, prompt tokens, output tokens and block ids, in that
        order (default :data:`FIELDS`); printable ASCII with no quote or backslash, which JSON
        would escape.  Other fields of a request are ignored.
    """

    name: str
    unit: str
    unit_name: str
    units_per_s: float
    chained: bool
    block_tokens: int
    source: str
    summary: str
    fields: tuple[str, str, str, str] = FIELDS

    def __post_init__(self) -> None:
        plain = all(f and f.isascii() and f.isprintable() and '"' not in f and "\\" not in f for f in self.fields)
        if len(self.fields) != 4 or len(set(self.fields)) != 4 or not plain:
            raise ValueError(f"trace format {self.name!r}: four distinct plain field names, got {self.fields!r}")

    def prefix_ids(self, ids: np.ndarray, starts: np.ndarray) -> np.ndarray:
        """A trace's ids as they are read, requests one after another (``starts``), as prefix-chained ids."""
        return ids if self.chained else chain_ids(ids, starts)

    def seconds(self, stamps: np.ndarray) -> np.ndarray:
        """Timestamps in the format's unit, in seconds."""
        return stamps / self.units_per_s

    @property
    def keys(self) -> bytes:
        """The four field names quoted, one after another, as the scanner matches them."""
        return b"".join(b'"' + f.encode("ascii") + b'"' for f in self.fields)

    @property
    def key_ends(self) -> tuple[int, ...]:
        """Where each quoted field name of :attr:`keys` ends."""
        ends, at = [], 0
        for f in self.fields:
            at += len(f) + 2
            ends.append(at)
        return tuple(ends)


TRACE_FORMATS: dict[str, TraceFormat] = {
    f.name: f
    for f in (
        TraceFormat(
            name="mooncake",
            unit="ms",
            unit_name="milliseconds",
            units_per_s=1e3,
            chained=True,
            block_tokens=TRACE_BLOCK_TOKENS,
            source="Mooncake FAST'25 traces (github.com/kvcache-ai/Mooncake): timestamp in ms, one chained id per"
            " 512 tokens",
            summary="timestamps in ms, prefix-chained ids, 512 tokens an id",
        ),
        TraceFormat(
            name="qwen",
            unit="s",
            unit_name="seconds",
            units_per_s=1.0,
            chained=False,
            block_tokens=16,
            source="Alibaba Bailian Qwen traces, ATC'25 (github.com/alibaba-edu/qwen-bailian-usagetraces-anon):"
            " timestamp in s since the trace's start, one salted SipHash per 16-token block, not chained",
            summary="Alibaba's Qwen traces, timestamps in s, one id per 16-token block, chained here as a prefix"
            " cache does",
        ),
    )
}
"""The trace formats the reader knows, by name: adding a format is adding its entry here."""

DEFAULT_FORMAT = "mooncake"
"""The format of the shipped traces, and of a trace whose format is not declared."""

BYTES_PER_REF = 110
"""Peak memory of the in-memory analysis per block reference (B), measured: ``kvtier workload --json``'s peak
resident memory over its references, 105 B for 20 M references (numpy 2, Linux).  The reader itself holds 8 B a
reference while it reads, and 32 at most while it indexes them; the stack distances and the report the rest."""

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

MAX_LINE_BYTES = 16 << 20
"""Longest line of a trace (bytes): 16 MiB, about two million hash ids (a prompt of 32 M tokens at 16 a block)."""

READ_BYTES = 1 << 20
"""Bytes read from a trace at a time."""

MAX_TOKENS = 2**53
"""Most tokens an ``input_length`` or ``output_length`` may count: every count up to it is exact as a float."""

MAX_BLOCK_TOKENS = 1 << 31
"""Most tokens a block may hold (2,147,483,648, beyond any context): token counts then fit in 64 bits."""


# ---------------------------------------------------------------------------
# reading
# ---------------------------------------------------------------------------


def format_named(name: str) -> TraceFormat:
    """The :class:`TraceFormat` called ``name``; KvtierError naming the known ones otherwise."""
    if name not in TRACE_FORMATS:
        raise KvtierError(f"trace format {show(name, quote=True)} is not one of {', '.join(TRACE_FORMATS)}")
    return TRACE_FORMATS[name]


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
        raise KvtierError(f"{show(text)}: trace not found; name a file or a shipped trace: {', '.join(SHIPPED_TRACES)}")
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


def _whole(value: Any) -> bool:
    """True for an int, or a float with no fractional part (JSON writes 5 or 5.0); never a bool."""
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and math.isfinite(value) and value.is_integer())


def _block_tokens(value: Any) -> int:
    """``value`` as tokens per block: a whole number from 1 to :data:`MAX_BLOCK_TOKENS`."""
    if int(value) != value or not 1 <= value <= MAX_BLOCK_TOKENS:
        raise KvtierError(
            f"block tokens must be a whole number from 1 to {MAX_BLOCK_TOKENS:,}, got {show(value, quote=True)}"
        )
    return int(value)


class _DuplicateKey(Exception):
    """A key that appears twice in one JSON object of a trace line."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json.loads``'s hook for each object: a dict, unless a key appears twice (the last would silently win)."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return obj


def _json_object(line: str, at: str, fields: Sequence[str] = FIELDS) -> dict[str, Any]:
    """One trace line parsed by the standard library: a JSON object with the request's ``fields``, or KvtierError
    starting with ``at``."""
    try:
        obj = json.loads(line, object_pairs_hook=_unique_keys)
    except _DuplicateKey as exc:
        raise KvtierError(f"{at}: duplicate key {show(exc.args[0], quote=True)}") from None
    except (json.JSONDecodeError, RecursionError):
        raise KvtierError(f"{at}: not a JSON object (malformed JSON)") from None
    except ValueError:  # an integer of more than 4300 digits
        raise KvtierError(f"{at}: a value cannot be read") from None
    if not isinstance(obj, dict):
        raise KvtierError(f"{at}: expected a JSON object with {', '.join(fields)}")
    missing = [f for f in fields if f not in obj]
    if missing:
        raise KvtierError(f"{at}: missing field '{missing[0]}' (a request needs {', '.join(fields)})")
    return obj


def _number(value: int | float) -> str:
    """A number from a trace for a message: as written, or its count of digits when that runs past 30 characters."""
    text = repr(value)
    return text if len(text) <= 30 else f"a {len(text.lstrip('-'))}-digit number"


def _timestamp(value: Any, at: str, fmt: TraceFormat) -> float:
    """A request's timestamp as a finite float in the format's unit."""
    field, unit = fmt.fields[0], fmt.unit_name
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise KvtierError(f"{at}: '{field}' must be a finite number of {unit}, got {show(value, quote=True)}")
    try:
        ts = float(value)
    except OverflowError:  # an integer beyond float's range (about 309 digits)
        raise KvtierError(f"{at}: '{field}' is too large ({_number(value)})") from None
    if not math.isfinite(ts):
        raise KvtierError(f"{at}: '{field}' must be a finite number of {unit}, got {show(value, quote=True)}")
    return ts


def _length(obj: dict[str, Any], field: str, at: str) -> int:
    """A request's prompt or output tokens, ``obj[field]``: a whole number of tokens, 0 to :data:`MAX_TOKENS`."""
    value = obj[field]
    if not _whole(value):
        raise KvtierError(f"{at}: '{field}' must be a whole number of tokens, got {show(value, quote=True)}")
    if value < 0:
        raise KvtierError(f"{at}: '{field}' is negative ({int(value)})")
    if value > MAX_TOKENS:
        raise KvtierError(f"{at}: '{field}' is too large ({_number(value)}); at most 2**53 = {MAX_TOKENS:,} tokens")
    return int(value)


_NOT_INT = object()
"""What :func:`_id_array` returns for a list that holds something other than integers."""


def _id_array(ids: Any, line: str) -> array | object | None:
    """``ids`` as 64-bit integers; :data:`_NOT_INT` when not a list of integers, None when one does not fit.

    ``array.extend`` refuses floats and strings in C; a bool it would take as 0 or 1, so a line
    that spells ``true`` or ``false`` anywhere is checked one id at a time.
    """
    if not isinstance(ids, list):
        return _NOT_INT
    if ("true" in line or "false" in line) and any(isinstance(h, bool) for h in ids):
        return _NOT_INT
    out = array("q")
    try:
        out.extend(ids)
    except TypeError:
        return _NOT_INT
    except OverflowError:
        return None if all(isinstance(h, int) for h in ids) else _NOT_INT
    return out


def _parse_request(
    line: str, where: str, number: int, block_tokens: int, fmt: TraceFormat = TRACE_FORMATS[DEFAULT_FORMAT]
) -> tuple[float, int, int, array | None]:
    """One line of a trace, validated: ``(timestamp in the format's unit, input tokens, output tokens, hash ids)``.

    The hash ids come as an ``array('q')``, or None when one of them does not fit in 64 bits
    (the caller says so, after the checks that come first).
    """
    at = f"{where}: line {number}"
    stamp, n_input, n_output, hashes = fmt.fields
    obj = _json_object(line, at, fmt.fields)
    ts = _timestamp(obj[stamp], at, fmt)
    n_in, n_out = _length(obj, n_input, at), _length(obj, n_output, at)
    raw = obj[hashes]
    ids = _id_array(raw, line)
    if ids is _NOT_INT:
        raise KvtierError(f"{at}: '{hashes}' must be a list of integers")
    expected = -(-n_in // block_tokens)
    if len(raw) != expected:
        fits = block_tokens != fmt.block_tokens and len(raw) == -(-n_in // fmt.block_tokens)
        hint = f"; the {fmt.name} format's {fmt.block_tokens} tokens a block would fit" if fits else ""
        raise KvtierError(
            f"{at}: '{hashes}' has {len(raw)} ids but {n_input} {n_in} at {block_tokens} tokens a block"
            f" needs {expected}{hint}"
        )
    return ts, n_in, n_out, ids  # type: ignore[return-value]


# ---- collecting requests ----------------------------------------------------------------------------------


class _Requests:
    """A trace's requests as compact arrays, one validated line at a time (8 B a reference, 32 B a request)."""

    def __init__(self, where: str, block_tokens: int, fmt: TraceFormat, max_refs: int | None = None):
        self.where, self.block_tokens, self.fmt, self.max_refs = where, block_tokens, fmt, max_refs
        self.stamps = array("d")
        self.inputs = array("q")
        self.outputs = array("q")
        self.counts = array("q")
        self.ids = array("q")  # 8 bytes a reference, not a Python int object each
        self.last = -math.inf
        self.refs_before = 0  # references read before these columns, which count against max_refs too

    def add(self, number: int, line: str) -> tuple[int, int]:
        """Validate line ``number`` and append its request; return its ``(input tokens, ids)``."""
        ts, n_in, n_out, hashes = _parse_request(line, self.where, number, self.block_tokens, self.fmt)
        if ts < self.last:
            raise KvtierError(
                f"{self.where}: line {number}: timestamp {ts:g} {self.fmt.unit} goes backwards"
                f" (the line before: {self.last:g})"
            )
        n_ids = -(-n_in // self.block_tokens)
        if self.max_refs is not None and self.refs_before + len(self.ids) + n_ids > self.max_refs:
            raise KvtierError(
                f"{self.where}: line {number}: more than {self.max_refs:,} block references, the most the in-memory"
                f" analysis holds (about {BYTES_PER_REF} B each); use --stream"
            )
        if hashes is None:
            raise KvtierError(f"{self.where}: line {number}: a hash id does not fit in 64 bits")
        self.ids.extend(hashes)
        self.last = ts
        self.stamps.append(ts)
        self.inputs.append(n_in)
        self.outputs.append(n_out)
        self.counts.append(n_ids)
        return n_in, n_ids


BATCH_LINES = 2048
"""Most lines in one batch of the stream (:class:`RequestChunks`): a chunk ends only at a batch's end."""

BATCH_CHARS = 1 << 20
"""Most characters of lines in one batch of the stream: a batch ends at the line that reaches it."""


def _starts(counts: Sequence[int] | np.ndarray) -> np.ndarray:
    """``[0, c0, c0 + c1, ...]``: where each request's references begin, and the total at the end."""
    starts = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(np.asarray(counts, dtype=np.int64), out=starts[1:])
    return starts


# ---- the columnar fast path -------------------------------------------------------------------------------

BLOCK_BYTES = 8 << 20
"""Bytes of whole lines the columnar reader parses at once (:func:`request_blocks`), cut at a line's end."""


@dataclass
class Columns:
    """A block of consecutive requests of a trace as arrays: what the validating reader would have appended.

    Attributes
    ----------
    stamps : ndarray of float
        Each request's ``timestamp`` in the format's unit.
    inputs, outputs : ndarray of int64
        ``input_length`` and ``output_length`` (tokens).
    counts : ndarray of int64
        Hash ids per request.
    ids : ndarray of int64
        The hash ids as written, requests one after another.
    chars : ndarray of int64
        Characters of each request's line (as :func:`split_lines` gives it), which decide where the
        reader's batches end (:data:`BATCH_LINES`, :data:`BATCH_CHARS`) and so where the stream's chunks do.
    """

    stamps: np.ndarray
    inputs: np.ndarray
    outputs: np.ndarray
    counts: np.ndarray
    ids: np.ndarray
    chars: np.ndarray

    def split(self, lines: int) -> tuple[Columns, Columns]:
        """The first ``lines`` requests and the rest."""
        refs = int(self.counts[:lines].sum())
        head = Columns(
            *(c[:lines] for c in (self.stamps, self.inputs, self.outputs, self.counts)),
            self.ids[:refs],
            self.chars[:lines],
        )
        tail = Columns(
            *(c[lines:] for c in (self.stamps, self.inputs, self.outputs, self.counts)),
            self.ids[refs:],
            self.chars[lines:],
        )
        return head, tail

    @staticmethod
    def join(parts: Sequence[Columns]) -> Columns:
        """Blocks one after another, as one."""
        names = ("stamps", "inputs", "outputs", "counts", "ids", "chars")
        return Columns(*(np.concatenate([getattr(p, n) for p in parts]) for n in names))


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


@jit
def _scan_py(buf: np.ndarray, keys: np.ndarray, key_ends: np.ndarray, out: np.ndarray, ids: np.ndarray) -> int:
    """Read plain requests from the bytes of whole lines: the lines read, or -1 at the first that is not plain.

    A plain line is one JSON object of exactly the four fields ``keys`` spells (quoted, one after another,
    each ending at ``key_ends``: :attr:`TraceFormat.keys`), in any order, spelled
    without escapes, with spaces or tabs between tokens: ``timestamp`` any JSON number,
    ``input_length`` and ``output_length`` whole numbers of up to 15 digits, ``hash_ids`` a list
    of integers that fit in 64 bits (up to 19 digits, an optional minus sign).  Row ``r`` of
    ``out`` receives ``(timestamp, input, output, ids, characters of the line, where the
    timestamp's text starts, where it ends)``, the timestamp itself when it is an integer of up
    to 15 digits (exact as a float) and its text's place otherwise (start -1 when not needed);
    ``ids`` the ids, one request after another.  Compiled where numba is (:mod:`kvtier.formulas.jit`).
    """
    n = buf.size
    i = line = refs = 0
    while i < n:
        start = i
        while i < n and (buf[i] == 32 or buf[i] == 9):
            i += 1
        if i >= n or buf[i] != 123:  # "{"; a blank line is not plain
            return -1
        i += 1
        seen = 0
        for member in range(4):
            while i < n and (buf[i] == 32 or buf[i] == 9):
                i += 1
            field = -1
            for f in range(4):
                k0 = 0 if f == 0 else key_ends[f - 1]
                size = key_ends[f] - k0
                if seen & (1 << f) or i + size > n:
                    continue
                same = True
                for j in range(size):
                    if buf[i + j] != keys[k0 + j]:
                        same = False
                        break
                if same:
                    field = f
                    i += size
                    break
            if field < 0:  # another key, an escape, a key twice
                return -1
            seen |= 1 << field
            while i < n and (buf[i] == 32 or buf[i] == 9):
                i += 1
            if i >= n or buf[i] != 58:  # ":"
                return -1
            i += 1
            while i < n and (buf[i] == 32 or buf[i] == 9):
                i += 1
            if field == 0:  # a JSON number: -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?
                begin = i
                negative = i < n and buf[i] == 45
                if negative:
                    i += 1
                value = digits = 0
                while i < n and 48 <= buf[i] <= 57:
                    if digits == 1 and value == 0:
                        return -1
                    if digits < 15:
                        value = value * 10 + (int(buf[i]) - 48)
                    digits += 1
                    i += 1
                if digits == 0:
                    return -1
                plain = digits <= 15
                if i < n and buf[i] == 46:  # "."
                    plain = False
                    i += 1
                    frac = 0
                    while i < n and 48 <= buf[i] <= 57:
                        frac += 1
                        i += 1
                    if frac == 0:
                        return -1
                if i < n and (buf[i] == 101 or buf[i] == 69):  # "e", "E"
                    plain = False
                    i += 1
                    if i < n and (buf[i] == 43 or buf[i] == 45):
                        i += 1
                    exp = 0
                    while i < n and 48 <= buf[i] <= 57:
                        exp += 1
                        i += 1
                    if exp == 0:
                        return -1
                if plain:
                    out[line, 0] = -value if negative else value
                    out[line, 5] = -1
                else:
                    out[line, 5] = begin
                    out[line, 6] = i
            elif field < 3:
                value = digits = 0
                while i < n and 48 <= buf[i] <= 57:
                    if digits == 1 and value == 0:
                        return -1
                    value = value * 10 + (int(buf[i]) - 48)
                    digits += 1
                    i += 1
                    if digits > 15:
                        return -1
                if digits == 0:
                    return -1
                out[line, field] = value
            else:
                if i >= n or buf[i] != 91:  # "["
                    return -1
                i += 1
                count = 0
                while i < n and (buf[i] == 32 or buf[i] == 9):
                    i += 1
                if i < n and buf[i] == 93:  # "]": no ids
                    i += 1
                else:
                    while True:
                        negative = i < n and buf[i] == 45  # "-"
                        if negative:
                            i += 1
                        value = digits = 0
                        while i < n and 48 <= buf[i] <= 57:
                            d = int(buf[i]) - 48
                            if digits == 1 and value == 0:
                                return -1
                            # at most 2**63 - 1 in size: 922337203685477580 * 10 + 7
                            if value > 922337203685477580 or (value == 922337203685477580 and d > 7):
                                return -1
                            value = value * 10 + d
                            digits += 1
                            i += 1
                        if digits == 0:
                            return -1
                        ids[refs] = -value if negative else value
                        refs += 1
                        count += 1
                        while i < n and (buf[i] == 32 or buf[i] == 9):
                            i += 1
                        if i < n and buf[i] == 44:  # ","
                            i += 1
                            while i < n and (buf[i] == 32 or buf[i] == 9):
                                i += 1
                            continue
                        if i < n and buf[i] == 93:  # "]"
                            i += 1
                            break
                        return -1
                out[line, 3] = count
            while i < n and (buf[i] == 32 or buf[i] == 9):
                i += 1
            if member < 3:
                if i >= n or buf[i] != 44:  # ","
                    return -1
                i += 1
        if i >= n or buf[i] != 125:  # "}"
            return -1
        i += 1
        while i < n and (buf[i] == 32 or buf[i] == 9):
            i += 1
        if i < n and buf[i] != 10:  # the line goes on
            return -1
        out[line, 4] = i - start
        line += 1
        i += 1
    return line


def scan_columns(
    block: bytes, block_tokens: int, last: float = -math.inf, fmt: TraceFormat = TRACE_FORMATS[DEFAULT_FORMAT]
) -> Columns | None:
    """A block of whole lines read by the compiled scanner (:func:`_scan_py`) when every line is plain and valid.

    None, and the block goes to the validating reader (:func:`validated_columns`), whose arrays
    and messages are the reference, at the first line that is not plain (another field, a string
    or ``true`` anywhere, a length written ``5.0``, an id past 64 bits, a blank line, a carriage
    return, a byte-order mark, any byte JSON would refuse) or when a check fails: a timestamp
    that is not finite or goes backwards from ``last``, a length past :data:`MAX_TOKENS`, not
    ``ceil(input_length / block_tokens)`` ids, a line longer than :data:`MAX_LINE_BYTES`.  A
    timestamp that is not an integer of at most 15 digits is read by Python's ``float`` from
    its text, as the standard library's ``json`` reads it.
    """
    if not block:
        return None
    out = np.empty((block.count(b"\n") + 1, 7), dtype=np.int64)
    ids = np.empty(len(block) // 2 + 1, dtype=np.int64)
    keys, ends = np.frombuffer(fmt.keys, dtype=np.uint8), np.array(fmt.key_ends, dtype=np.int64)
    lines = _scan_py(np.frombuffer(block, dtype=np.uint8), keys, ends, out, ids)
    if lines <= 0:
        return None
    out = out[:lines]
    inputs, outputs, counts, chars = (out[:, j].copy() for j in (1, 2, 3, 4))
    stamps = out[:, 0].astype(float)  # whole numbers of at most 15 digits: exact
    for r in np.flatnonzero(out[:, 5] >= 0):
        stamps[r] = float(block[out[r, 5] : out[r, 6]])
    if not np.isfinite(stamps).all() or stamps[0] < last or (stamps[1:] < stamps[:-1]).any():
        return None
    if chars.max() > MAX_LINE_BYTES or (inputs > MAX_TOKENS).any() or (outputs > MAX_TOKENS).any():
        return None
    if not (counts == -(-inputs // block_tokens)).all():
        return None
    return Columns(stamps, inputs, outputs, counts, ids[: int(counts.sum())].copy(), chars)


def validated_columns(req: _Requests, block: bytes, before: int) -> Columns:
    """A block of whole lines read by the validating reader (:meth:`_Requests.add`), one line at a time
    where need be: the same arrays as :func:`scan_columns`, or the KvtierError naming the file and the line.

    ``req`` carries the last timestamp from block to block; its columns are emptied.
    """
    chars = array("q")
    for number, text in split_lines((block,), req.where, before):
        req.add(number, text)
        chars.append(len(text))
    out = Columns(
        np.frombuffer(req.stamps, dtype=float).copy(),
        np.frombuffer(req.inputs, dtype=np.int64).copy(),
        np.frombuffer(req.outputs, dtype=np.int64).copy(),
        np.frombuffer(req.counts, dtype=np.int64).copy(),
        np.frombuffer(req.ids, dtype=np.int64).copy(),
        np.frombuffer(chars, dtype=np.int64).copy(),
    )
    for column in (req.stamps, req.inputs, req.outputs, req.counts, req.ids):
        del column[:]
    return out


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
    req = _Requests(where, block_tokens, fmt)
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
            probe = _Requests(where, block_tokens, fmt, max_refs)
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
    starts = _starts(c.counts)
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
    tokens = _block_tokens(block_tokens)
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
        How hits are counted (:data:`kvtier.formulas.reuse.HIT_COUNTS`): up to each request's first miss, or
        every cached block.
    """
    where, path = trace_path(name)
    try:
        st = path.stat()
    except (OSError, ValueError):
        return Reuse.of(read_trace(name, block_tokens, trace_format), count)  # read_trace names the problem
    return _analyse_cached(str(path), st.st_size, st.st_mtime_ns, where, block_tokens, trace_format, count)


# ---------------------------------------------------------------------------
# synthetic traces for scale
# ---------------------------------------------------------------------------


def generate_trace(
    n_requests: int,
    *,
    seed: int = 0,
    n_prefixes: int = 1_000,
    skew: float = 1.1,
    shared_blocks: int = 4,
    new_blocks: tuple[int, int] = (1, 40),
    rate_per_s: float = 10.0,
    max_blocks: int = 256,
    block_tokens: int = TRACE_BLOCK_TOKENS,
) -> Trace:
    """A seeded synthetic trace: prompts that share prefixes from a tree, reused with a Zipf skew.

    Each request picks one of ``n_prefixes`` shared prefixes (a system prompt or a
    document, ``shared_blocks`` blocks long, the tree's first level) with probability
    proportional to ``rank ** -skew``, extends it with one of that prefix's earlier
    continuations half of the time (a conversation's next turn), and adds between
    ``new_blocks[0]`` and ``new_blocks[1]`` blocks of its own; a conversation that would grow
    past ``max_blocks`` blocks starts afresh from its shared prefix.  Arrivals are Poisson at
    ``rate_per_s``.  Same arguments, same trace.

    Returns
    -------
    Trace
        Already indexed, as :func:`read_trace` would return it; :func:`to_jsonl` writes it.
    """
    rng = np.random.default_rng(seed)
    weights = np.arange(1, n_prefixes + 1, dtype=float) ** -skew
    picks = rng.choice(n_prefixes, size=n_requests, p=weights / weights.sum())
    extend = rng.random(n_requests) < 0.5
    n_new = rng.integers(new_blocks[0], new_blocks[1] + 1, size=n_requests)
    gaps = rng.exponential(1.0 / rate_per_s, size=n_requests)
    gaps[0] = 0.0
    last_block_tokens = rng.integers(1, block_tokens + 1, size=n_requests)
    next_id = n_prefixes * shared_blocks
    continuations: dict[int, list[int]] = {}
    pieces: list[np.ndarray] = []
    counts = np.empty(n_requests, dtype=np.int64)
    for r in range(n_requests):
        root = int(picks[r])
        head = np.arange(root * shared_blocks, (root + 1) * shared_blocks)
        tail = continuations.get(root)
        own = np.arange(next_id, next_id + n_new[r])
        next_id += int(n_new[r])
        grow = extend[r] and tail and shared_blocks + len(tail) + own.size <= max_blocks
        prompt = np.concatenate((head, tail, own)) if grow else np.concatenate((head, own))
        continuations[root] = prompt[shared_blocks:].tolist()
        pieces.append(prompt)
        counts[r] = prompt.size
    raw = np.concatenate(pieces)
    _, dense = np.unique(raw, return_inverse=True)
    starts = np.zeros(n_requests + 1, dtype=np.int64)
    np.cumsum(counts, out=starts[1:])
    return Trace(
        name=f"generated(seed={seed})",
        block_tokens=block_tokens,
        timestamps_s=np.round(np.cumsum(gaps), 3),
        input_tokens=(counts - 1) * block_tokens + last_block_tokens,
        output_tokens=rng.integers(1, 1_000, size=n_requests),
        starts=starts,
        blocks=dense.reshape(-1).astype(np.int64),
        trace_format=DEFAULT_FORMAT,
    )


def to_jsonl(trace: Trace) -> Iterable[str]:
    """The lines of ``trace`` in the Mooncake format (block ids as hash ids, timestamps in ms)."""
    for r in range(trace.n_requests):
        yield json.dumps(
            {
                "timestamp": round(float(trace.timestamps_s[r]) * 1e3),
                "input_length": int(trace.input_tokens[r]),
                "output_length": int(trace.output_tokens[r]),
                "hash_ids": trace.blocks[trace.starts[r] : trace.starts[r + 1]].tolist(),
            }
        )


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
        self.block_tokens = _block_tokens(block_tokens)
        self.min_refs = min_refs
        self.n_requests = 0

    def __iter__(self) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
        fmt = self.fmt
        held: list[Columns] = []  # read, not yet yielded
        n_held = 0  # their references

        def joined() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
            c = Columns.join(held) if len(held) > 1 else held[0]
            starts = _starts(c.counts)
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
    ``rc`` it counts what everything :func:`kvtier.formulas.reuse.report` says needs;
    ``count``, ``sample_rate``, ``max_blocks``, ``over_time`` and ``observers`` are
    :class:`LruStream`'s.
    """
    stream = LruStream(count, rc, sample_rate, max_blocks, over_time, observers)
    chunks = RequestChunks(name, block_tokens, trace_format, lambda: max(chunk_refs, len(stream) // 4))
    for ids, starts, inputs, outputs, stamps in chunks:
        stream.feed(ids, starts, inputs, chunks.block_tokens, outputs, stamps)
    return stream.histogram(chunks.where, chunks.n_requests, chunks.fmt.name, chunks.block_tokens)


def read_sample(
    name: str | os.PathLike[str],
    rate: float,
    block_tokens: int = TRACE_BLOCK_TOKENS,
    trace_format: str = DEFAULT_FORMAT,
) -> Trace:
    """A trace's spatially hashed sample held in memory: every request, and the references whose block is kept.

    A block is kept when :func:`kvtier.formulas.reuse.block_hash` of its prefix-chained id is
    below ``rate`` of the hash space (SHARDS), so a kept block keeps every reference to it and
    a request keeps its kept blocks in order.  Read in one streamed pass (:class:`RequestChunks`):
    memory about ``rate`` x 105 B a reference, whatever the trace's length.
    """
    threshold = sample_threshold(rate)
    chunks = RequestChunks(name, block_tokens, trace_format, lambda: 1 << 20)
    ids: list[np.ndarray] = []
    per: list[np.ndarray] = []
    cols: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    for chained, starts, inputs, outputs, stamps in chunks:
        keep = block_hash(chained) < threshold
        request = np.repeat(np.arange(starts.size - 1), np.diff(starts))
        ids.append(chained[keep])
        per.append(np.bincount(request[keep], minlength=starts.size - 1))
        cols.append((inputs, outputs, stamps))
    return Trace(
        name=chunks.where,
        block_tokens=chunks.block_tokens,
        timestamps_s=np.concatenate([c[2] for c in cols]),
        input_tokens=np.concatenate([c[0] for c in cols]),
        output_tokens=np.concatenate([c[1] for c in cols]),
        starts=_starts(np.concatenate(per)),
        blocks=dense_ids(np.concatenate(ids)),
        trace_format=chunks.fmt.name,
    )


def stream_windows(
    name: str | os.PathLike[str],
    window_s: float,
    warmup_s: float,
    block_tokens: int = TRACE_BLOCK_TOKENS,
    trace_format: str = DEFAULT_FORMAT,
    count: str = DEFAULT_HIT_COUNT,
    chunk_refs: int = 1 << 20,
) -> LruHistogram:
    """The exact curve by time windows with a warm-up, read in one streamed pass: what
    :func:`kvtier.inputs.distributed.windowed` gives of the trace as one part, bounded.

    Window ``k`` covers ``[t0 + k W, t0 + (k + 1) W)`` from the first request ``t0``; its stream
    is fed the ``warmup_s`` before it, its counts then reset, and is added to the others once the
    trace has passed its end.  At most ``ceil(warmup_s / window_s) + 1`` windows are open at once,
    each holding the distinct blocks of its own span.
    """
    check_window(window_s, warmup_s)
    chunks = RequestChunks(name, block_tokens, trace_format, lambda: chunk_refs)
    bt = chunks.block_tokens
    open_: dict[int, tuple[LruStream, list[bool]]] = {}  # window -> its stream, whether its counts were reset
    total: LruStream | None = None
    t0 = last = math.nan
    next_k = 0

    def close(k: int) -> None:
        nonlocal total
        stream, reset = open_.pop(k)
        if not reset[0]:
            stream.reset_counts()
        if total is None:
            total = stream
        else:
            total.add(stream)

    for ids, starts, inputs, outputs, stamps in chunks:
        if math.isnan(t0):
            t0 = float(stamps[0])
        last = float(stamps[-1])
        top = int((last - t0 + warmup_s) // window_s)  # the last window these requests warm up or fill
        for k in range(next_k, top + 1):
            open_[k] = (LruStream(count), [False])
        next_k = max(next_k, top + 1)
        for k in sorted(open_):
            stream, reset = open_[k]
            begin = t0 + k * window_s
            w0, w1, w2 = (int(x) for x in np.searchsorted(stamps, [begin - warmup_s, begin, begin + window_s]))
            if not reset[0]:
                feed_requests(stream, ids, starts, inputs, outputs, stamps, bt, w0, w1)
                if last >= begin:
                    stream.reset_counts()
                    reset[0] = True
            if reset[0]:
                feed_requests(stream, ids, starts, inputs, outputs, stamps, bt, w1, w2)
            if last >= begin + window_s:
                close(k)
    for k in sorted(open_):
        if t0 + k * window_s <= last:  # a window the trace reaches; one it only warms up is not one
            close(k)
    assert total is not None
    return total.histogram(
        f"{chunks.where}, windows of {window_s:g} s, warm-up {warmup_s:g} s", total.n_requests, chunks.fmt.name, bt
    )


def check_window(window_s: float, warmup_s: float) -> None:
    """Refuse a window that is not a number of seconds above 0, or a warm-up below 0, naming the option."""
    if not (math.isfinite(window_s) and window_s > 0):
        raise KvtierError(f"--window {window_s!r}: a number of seconds above 0")
    if not (math.isfinite(warmup_s) and warmup_s >= 0):
        raise KvtierError(f"--warmup {warmup_s!r}: a number of seconds, 0 or more")


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


SAMPLE_RATES = (0.1, 0.01, 0.001)
"""The sampling rates whose error :func:`sampling_error` measures by default (the SHARDS paper's range)."""


def sampling_error(
    name: str | os.PathLike[str] | Trace,
    rates: Iterable[float] = SAMPLE_RATES,
    block_tokens: int = TRACE_BLOCK_TOKENS,
    trace_format: str = DEFAULT_FORMAT,
    count: str = DEFAULT_HIT_COUNT,
    max_blocks: int | None = None,
) -> list[dict[str, float]]:
    """The error of the sampled LRU curve against the exact one on a trace, at each sampling rate.

    Parameters
    ----------
    name : str, path-like or Trace
        A shipped trace, a file, or a trace in memory (:func:`generate_trace`'s).
    rates : iterable of float
        Sampling rates in (0, 1].
    max_blocks : int, optional
        The fixed-size variant's bound on the sampled blocks held.

    Returns
    -------
    list of dict
        One per rate: ``rate`` (the one asked), ``rate_used`` (after the fixed size lowered it),
        ``sampled_refs``, ``refs``, ``mean_abs`` and ``max_abs`` (:func:`kvtier.formulas.reuse.curve_error`,
        blocks weighted), ``seconds`` (the sampled pass, reading included) and ``exact_seconds``.
    """

    def measure(rate: float, bound: int | None) -> tuple[LruHistogram, float]:
        t0 = time.perf_counter()
        if isinstance(name, Trace):
            h = histogram_of(name, count, None, rate, bound)
        else:
            h = stream_lru(
                name, block_tokens, trace_format=trace_format, count=count, sample_rate=rate, max_blocks=bound
            )
        return h, time.perf_counter() - t0

    exact, exact_s = measure(1.0, None)
    rows = []
    for rate in rates:
        h, seconds = measure(rate, max_blocks)
        rows.append(
            {
                "rate": float(rate),
                "rate_used": h.sample_rate,
                "refs": h.n_refs,
                "sampled_refs": h.sampled_refs,
                **{k: v for k, v in curve_error(exact, h).items() if k in ("mean_abs", "max_abs")},
                "seconds": seconds,
                "exact_seconds": exact_s,
            }
        )
    return rows
