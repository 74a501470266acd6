"""The one validating reader of a trace's lines, by the standard library's ``json``.

A malformed line, a duplicate key, a missing field, a negative or too large length, an id list whose
length disagrees with the prompt's, or a timestamp that goes backwards is a
:class:`~kvtier.errors.KvtierError` naming the file, the line and the field, on one line, in the
words of the line's :class:`~kvtier.inputs.traces.formats.TraceFormat`.  :class:`Requests` collects
validated lines as compact arrays; :func:`validated_columns` reads a block of lines into
:class:`Columns`, the arrays the scanner (:mod:`kvtier.inputs.traces.scan`) must equal.
"""

from __future__ import annotations

import json
import math
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from kvtier.errors import KvtierError, show
from kvtier.inputs.traces.files import split_lines
from kvtier.inputs.traces.formats import DEFAULT_FORMAT, FIELDS, TRACE_FORMATS, TraceFormat

BYTES_PER_REF = 110
"""Peak memory of the in-memory analysis per block reference (B), measured: ``kvtier workload --json``'s peak
resident memory over its references, 105 B for 20 M references (numpy 2, Linux).  The reader itself holds 8 B a
reference while it reads, and 32 at most while it indexes them; the stack distances and the report the rest."""


MAX_TOKENS = 2**53
"""Most tokens an ``input_length`` or ``output_length`` may count: every count up to it is exact as a float."""

MAX_BLOCK_TOKENS = 1 << 31
"""Most tokens a block may hold (2,147,483,648, beyond any context): token counts then fit in 64 bits."""


def _whole(value: Any) -> bool:
    """True for an int, or a float with no fractional part (JSON writes 5 or 5.0); never a bool."""
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and math.isfinite(value) and value.is_integer())


def check_block_tokens(value: Any) -> int:
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
    if abs(ts) > MAX_TOKENS:  # as lengths are capped: 2**53 ms is 285,000 years, and later sums stay exact
        raise KvtierError(f"{at}: '{field}' is too large ({_number(value)}); at most 2**53 = {MAX_TOKENS:,} {unit}")
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
        if not all(isinstance(h, int) for h in ids):
            return _NOT_INT
        if not all(-(2**63) <= h < 2**64 for h in ids):
            return None
        # unsigned 64-bit ids (Qwen's published traces write some above 2**63): the same 64 bits, read as signed
        return array("q", (h - 2**64 if h >= 2**63 else h for h in ids))
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
    expected = fmt.blocks_for(n_in, block_tokens)
    if len(raw) != expected:
        fits = block_tokens != fmt.block_tokens and len(raw) == fmt.blocks_for(n_in, fmt.block_tokens)
        hint = f"; the {fmt.name} format's {fmt.block_tokens} tokens a block would fit" if fits else ""
        if not fits:  # another format's blocks would: say which (a Qwen trace read as Mooncake's, say)
            other = next(
                (
                    f
                    for f in TRACE_FORMATS.values()
                    if f.name != fmt.name and f.fields == fmt.fields and len(raw) == f.blocks_for(n_in, f.block_tokens)
                ),
                None,
            )
            if other is not None:
                hint = f"; a {other.name} trace's {other.block_tokens} tokens a block would fit: --format {other.name}"
        raise KvtierError(
            f"{at}: '{hashes}' has {len(raw)} ids but {n_input} {n_in} at {block_tokens} tokens a block"
            f" needs {expected}{hint}"
        )
    return ts, n_in, n_out, ids  # type: ignore[return-value]


# ---- collecting requests ----------------------------------------------------------------------------------


class Requests:
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
        n_ids = self.fmt.blocks_for(n_in, self.block_tokens)
        if self.max_refs is not None and self.refs_before + len(self.ids) + n_ids > self.max_refs:
            raise KvtierError(
                f"{self.where}: line {number}: more than {self.max_refs:,} block references, the most the in-memory"
                f" analysis holds (about {BYTES_PER_REF} B each); use --stream"
            )
        if hashes is None:
            raise KvtierError(f"{self.where}: line {number}: a hash id does not fit in 64 bits, signed or unsigned")
        self.ids.extend(hashes)
        self.last = ts
        self.stamps.append(ts)
        self.inputs.append(n_in)
        self.outputs.append(n_out)
        self.counts.append(n_ids)
        return n_in, n_ids


def request_starts(counts: Sequence[int] | np.ndarray) -> np.ndarray:
    """``[0, c0, c0 + c1, ...]``: where each request's references begin, and the total at the end."""
    starts = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(np.asarray(counts, dtype=np.int64), out=starts[1:])
    return starts


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
        stream's batches end (:data:`kvtier.inputs.traces.stream.BATCH_LINES`, ``BATCH_CHARS``) and so its chunks.
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


def validated_columns(req: Requests, block: bytes, before: int) -> Columns:
    """A block of whole lines read by the validating reader (:meth:`Requests.add`), one line at a time
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
