"""Parse user quantities into SI base units and format them back for humans.

Inside kvtier every quantity is a plain float in an SI base unit:

========== ===================== ==========================================
kind       base unit             accepted input (examples)
========== ===================== ==========================================
bytes      byte (B)              ``5 MiB``, ``140 GB``, ``327680``
bandwidth  byte per second (B/s) ``64GB/s``, ``59.6 GiB/s``, ``400 Gb/s``
flop_rate  FLOP per second       ``500TFLOP/s``, ``989 TFLOPS``
flops      FLOP                  ``2.24e15``, ``2.24 PFLOP``
time       second (s)            ``82 us``, ``82 µs``, ``18 ms``, ``0``
fraction   dimensionless (0..1)  ``0.25``, ``25%``
tokens     token (count)         ``16``, ``128K`` (K = 1024 tokens), ``1M``
count      dimensionless         ``70e9``, ``70B`` (B = 1e9 here)
========== ===================== ==========================================

Decimal prefixes (k, M, G, T, P) are powers of 1000; binary prefixes (Ki, Mi, Gi,
Ti) are powers of 1024.  A lower-case ``b`` in a bandwidth means bits (``Gb/s``).
Token counts follow the long-context convention of the source chapter: ``32K`` is
32,768 tokens and ``128K`` is 131,072 tokens.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from kvtier.errors import KvtierError, show

KIND_UNITS: dict[str, str] = {
    "bytes": "B",
    "bandwidth": "B/s",
    "flop_rate": "FLOP/s",
    "flops": "FLOP",
    "time": "s",
    "fraction": "1",
    "tokens": "tokens",
    "count": "1",
}

UNIT_EXAMPLES: dict[str, str] = {
    "bytes": "5MiB",
    "bandwidth": "64GB/s",
    "flop_rate": "500TFLOP/s",
    "flops": "2.24e12FLOP",
    "time": "5us",
}
"""The kinds whose values need a unit where a user types them, each with an accepted form."""

_BARE_NUMBER = re.compile(r"\s*[-+]?(\d[\d_]*(\.\d*)?|\.\d+)([eE][-+]?\d+)?\s*")


def is_bare_number(value: object) -> bool:
    """Whether ``value`` is a number without a unit: an int, a float, or text such as ``"64e9"``."""
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float)):
        return True
    return isinstance(value, str) and _BARE_NUMBER.fullmatch(value) is not None


MIB = 2.0**20
"""One mebibyte (bytes)."""
GIB = 2.0**30
"""One gibibyte (bytes)."""

DTYPE_BYTES: dict[str, int] = {"bf16": 2, "fp16": 2, "fp32": 4, "fp8": 1}
"""Bytes per element of each KV-cache and weight element type kvtier accepts."""

_DECIMAL = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}
_BINARY = {"Ki": 2.0**10, "Mi": MIB, "Gi": GIB, "Ti": 2.0**40, "Pi": 2.0**50}
_TIME = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ns": 1e-9}
_TOKEN_SUFFIX = {"": 1, "K": 2**10, "k": 2**10, "M": 2**20, "m": 2**20}
_COUNT_SUFFIX = {"": 1.0, "K": 1e3, "k": 1e3, "M": 1e6, "B": 1e9, "G": 1e9, "T": 1e12}

_NUMBER = r"[-+]?(?:\d{1,3}(?:,\d{3})+(?:\.\d*)?|\d[\d_]*\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
"""A number; commas only as thousands separators ("1,024"), so "64,5" is rejected, not read as 645."""
_SPLIT = re.compile(rf"^\s*(?P<num>{_NUMBER}|nan|inf|-inf|\+inf)\s*(?P<unit>.*?)\s*$", re.IGNORECASE)

_EXAMPLES = {
    "bytes": "'5 MiB' or '140 GB'",
    "bandwidth": "'64GB/s', '59.6 GiB/s' or '400 Gb/s'",
    "flop_rate": "'500TFLOP/s' or '989 TFLOPS'",
    "flops": "'2.24e15' or '2.24 PFLOP'",
    "time": "'82 us' or '18 ms'",
    "fraction": "'0.25' or '25%'",
    "tokens": "'16', '100000' or '128K'",
    "count": "'70e9' or '70B'",
}


@dataclass(frozen=True)
class Bounds:
    """A closed range of one quantity kind, written as a reader would write it.

    Attributes
    ----------
    kind : str
        One of :data:`KIND_UNITS`.
    low, high : str
        The ends as text in any unit :func:`parse_quantity` reads for ``kind``, e.g.
        ``"1 kB/s"``; both ends are allowed.
    """

    kind: str
    low: str
    high: str

    def __contains__(self, value: float) -> bool:
        """Whether ``value`` (base unit of :attr:`kind`) lies in the range; NaN never does."""
        return parse_quantity(self.low, self.kind) <= value <= parse_quantity(self.high, self.kind)

    def __str__(self) -> str:
        return f"{self.kind} in [{self.low}, {self.high}]"


LIMITS: dict[str, Bounds] = {
    "bytes": Bounds("bytes", "0 B", "1024 PiB"),
    "bandwidth": Bounds("bandwidth", "1 kB/s", "1 PB/s"),
    "flop_rate": Bounds("flop_rate", "1 GFLOP/s", "1000 EFLOP/s"),
    "flops": Bounds("flops", "0 FLOP", "1e30 FLOP"),
    "time": Bounds("time", "0 s", "10 s"),
    "fraction": Bounds("fraction", "0.0001", "1"),
    "tokens": Bounds("tokens", "0", "1024M"),
    "count": Bounds("count", "0", "1e15"),
}
"""Physical bounds of each kind: every value an input may take, generously.

Wide enough for any real link (a modem to beyond any HBM), accelerator (a CPU core to
a zettaFLOP/s), utilization (0.01 % to 100 %), latency and context (2**30 tokens), and
narrow enough that no result computed from them overflows to inf or underflows to 0:
a 2**30-token block over 1 kB/s is about 1e24 s, not inf.
"""


def _fail(text: object, kind: str, what: str = "") -> KvtierError:
    detail = f" ({what})" if what else ""
    return KvtierError(f"cannot read {show(text, quote=True)} as {kind}{detail}; expected e.g. {_EXAMPLES[kind]}")


def _split(text: str, kind: str) -> tuple[float, str]:
    match = _SPLIT.match(text)
    if not match:
        raise _fail(text, kind)
    number = float(match.group("num").replace("_", "").replace(",", ""))
    return number, match.group("unit")


def _prefixed(unit: str, base_patterns: tuple[str, ...], kind: str, text: str) -> float:
    """Return the multiplier of ``unit`` = (prefix)(one of base_patterns)."""
    for base in base_patterns:
        if unit.endswith(base):
            prefix = unit[: len(unit) - len(base)]
            if prefix in _BINARY:
                return _BINARY[prefix]
            if prefix in _DECIMAL:
                return _DECIMAL[prefix]
    raise _fail(text, kind, f"unknown unit {show(unit, quote=True)}")


def parse_quantity(value: object, kind: str) -> float:
    """Parse a user quantity into the SI base unit of ``kind``.

    Parameters
    ----------
    value : str, int or float
        The quantity as typed by a user (``"64GB/s"``) or a bare number, which is
        taken to be already in the base unit of ``kind`` (bytes, B/s, FLOP/s, ...).
    kind : str
        One of :data:`KIND_UNITS`.

    Returns
    -------
    float
        The value in the base unit of ``kind``.

    Raises
    ------
    KvtierError
        If the text cannot be read, or the unit does not belong to ``kind``.
    """
    if kind not in KIND_UNITS:
        raise ValueError(f"unknown quantity kind {kind!r}")
    if isinstance(value, bool):
        raise _fail(value, kind, "a boolean is not a quantity")
    if isinstance(value, (int, float)):
        try:
            return float(value)
        except OverflowError:
            raise _fail(value, kind, "too large") from None
    if not isinstance(value, str):
        raise _fail(value, kind, f"got a {type(value).__name__}")
    number, unit = _split(value, kind)
    compact = unit.replace(" ", "")
    if kind == "fraction":
        if compact == "%":
            return number / 100.0
        if compact == "":
            return number
        raise _fail(value, kind, f"unknown unit {show(unit, quote=True)}")
    if kind == "tokens":
        compact = re.sub(r"(?i)(tokens|token|tok)$", "", compact)
        if compact in _TOKEN_SUFFIX:
            return number * _TOKEN_SUFFIX[compact]
        raise _fail(value, kind, f"unknown unit {show(unit, quote=True)}")
    if kind == "count":
        if compact in _COUNT_SUFFIX:
            return number * _COUNT_SUFFIX[compact]
        raise _fail(value, kind, f"unknown unit {show(unit, quote=True)}")
    if compact == "":  # a bare number is in the base unit, written as text or not: "0" is 0 s
        return number
    if kind == "time":
        if compact in _TIME:
            return number * _TIME[compact]
        raise _fail(value, kind, f"unknown unit {show(unit, quote=True)}")
    if kind == "bytes":
        return number * _prefixed(compact, ("B",), kind, value)
    if kind == "bandwidth":
        for bits in ("bit/s", "b/s", "bps"):
            if compact.endswith(bits) and not compact.endswith("B/s"):
                return number * _prefixed(compact, (bits,), kind, value) / 8.0
        return number * _prefixed(compact, ("B/s", "Bps"), kind, value)
    if kind == "flop_rate":
        return number * _prefixed(compact, ("FLOP/s", "FLOPS", "flop/s", "FLOPs/s"), kind, value)
    if kind == "flops":
        return number * _prefixed(compact, ("FLOPs", "FLOP", "flop"), kind, value)
    raise _fail(value, kind)  # pragma: no cover - every kind is handled above


# ---------------------------------------------------------------------------
# Formatting for humans
# ---------------------------------------------------------------------------


def format_bytes(n_bytes: float, digits: int = 2, binary: bool = True) -> str:
    """Format a byte count, binary units (KiB, MiB, GiB) unless ``binary`` is False."""
    if binary:
        steps = [("TiB", 2.0**40), ("GiB", GIB), ("MiB", MIB), ("KiB", 2.0**10)]
    else:
        steps = [("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)]
    for name, size in steps:
        if abs(n_bytes) >= size:
            return f"{n_bytes / size:.{digits}f} {name}"
    return f"{n_bytes:.0f} B"


def format_bandwidth(bytes_per_s: float, digits: int = 4) -> str:
    """Format a bandwidth in decimal units (GB/s = 1e9 B/s), ``digits`` significant digits."""
    for name, size in [("TB/s", 1e12), ("GB/s", 1e9), ("MB/s", 1e6), ("kB/s", 1e3)]:
        if abs(bytes_per_s) >= size:
            return f"{bytes_per_s / size:.{digits}g} {name}"
    return f"{bytes_per_s:.0f} B/s"


def format_flop_rate(flop_per_s: float, digits: int = 4) -> str:
    """Format a compute rate in decimal units (TFLOP/s = 1e12 FLOP/s), ``digits`` significant digits."""
    for name, size in [("PFLOP/s", 1e15), ("TFLOP/s", 1e12), ("GFLOP/s", 1e9)]:
        if abs(flop_per_s) >= size:
            return f"{flop_per_s / size:.{digits}g} {name}"
    return f"{flop_per_s:.0f} FLOP/s"


def format_time(seconds: float, digits: int = 2) -> str:
    """Format a duration with the largest unit (h, min, s, ms, µs, ns) that keeps it >= 1.

    Minutes and hours start at one minute and one hour: 11,606 s reads "3.22 h".
    """
    if not math.isfinite(seconds):
        return str(seconds)
    if seconds == 0:
        return "0 s"
    for name, size in [("h", 3600.0), ("min", 60.0), ("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)]:
        if abs(seconds) >= size:
            return f"{seconds / size:,.{digits}f} {name}"
    return f"{seconds / 1e-9:.{digits}f} ns"


def format_quantity(value: float, kind: str) -> str:
    """Format ``value`` (base unit of ``kind``) the way a reader expects to see it."""
    if kind == "bytes":
        return format_bytes(value)
    if kind == "bandwidth":
        return format_bandwidth(value)
    if kind == "flop_rate":
        return format_flop_rate(value)
    if kind == "time":
        return format_time(value)
    if kind == "fraction":
        return f"{value * 100:g}%"
    if kind in ("tokens", "count"):
        return f"{value:,.0f}" if float(value).is_integer() else f"{value:g}"
    if kind == "flops":
        return f"{value:.3g} FLOP"
    return f"{value:g}"
