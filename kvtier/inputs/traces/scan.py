"""The trace scanner: plain request lines read straight from bytes into arrays, compiled where numba is.

It reads a block of whole lines when every line is plain and valid, and hands the block back (None)
otherwise, to the validating reader (:mod:`kvtier.inputs.traces.read`), whose arrays and messages are
the reference: never another answer (a differential test holds it to ``json.loads``).
"""

from __future__ import annotations

import math

import numpy as np

from kvtier.formulas.jit import jit
from kvtier.inputs.traces.files import MAX_LINE_BYTES
from kvtier.inputs.traces.formats import DEFAULT_FORMAT, TRACE_FORMATS, TraceFormat
from kvtier.inputs.traces.read import MAX_TOKENS, Columns


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
    that is not finite, past :data:`MAX_TOKENS` or goes backwards from ``last``, a length past :data:`MAX_TOKENS`, not
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
    if (np.abs(stamps) > MAX_TOKENS).any():  # past 2**53 of the format's unit: the line reader names it
        return None
    if chars.max() > MAX_LINE_BYTES or (inputs > MAX_TOKENS).any() or (outputs > MAX_TOKENS).any():
        return None
    if not (counts == fmt.blocks_for(inputs, block_tokens)).all():
        return None
    return Columns(stamps, inputs, outputs, counts, ids[: int(counts.sum())].copy(), chars)
