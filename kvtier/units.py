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
power      watt (W)              ``467 W``, ``0.7 kW``
energy     joule (J)             ``26.2 J``, ``1 kWh``
power_capacity watt per byte     ``0.15 W/GB``, ``5 mW/GB``
price      US dollar (USD)       ``12000 USD``, ``4.15 kUSD``
price_rate US dollar per second  ``3 USD/h``, ``3 $/h``
price_capacity US dollar per byte ``10 USD/GB``, ``0.3 $/GB``
price_energy US dollar per joule ``0.09 USD/kWh``
period     second (s)            ``5 y``, ``90 d``, ``8 h``
========== ===================== ==========================================

Prices are in US dollars: a price without its currency (``3/h``) or a bare number is refused.
A year (``y``) is 365.25 days.

Decimal prefixes (k, M, G, T, P) are powers of 1000; binary prefixes (Ki, Mi, Gi,
Ti) are powers of 1024.  A lower-case ``b`` in a bandwidth means bits (``Gb/s``).
Token counts follow the long-context convention of the source chapter: ``32K`` is
32,768 tokens and ``128K`` is 131,072 tokens.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from functools import partial

from kvtier.errors import KvtierError, show

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
"""Bytes per element of each KV-cache, activation and weight element type kvtier accepts."""

WEIGHT_DTYPE_BYTES: dict[str, float] = {**DTYPE_BYTES, "int8": 1, "int4": 0.5}
"""Bytes per weight of each element type weights may be stored in: :data:`DTYPE_BYTES` and the integer formats
that weight-only quantization publishes (AWQ, GPTQ, bitsandbytes: 8 or 4 bits a weight; their scales and zero
points, a few bytes per group of 32 to 128 weights, are not counted)."""

AUTO_DTYPE = "auto"
"""The ``weight_dtype`` that means the model's published element type (from its ``config.json``)."""

_DECIMAL = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}
_BINARY = {"Ki": 2.0**10, "Mi": MIB, "Gi": GIB, "Ti": 2.0**40, "Pi": 2.0**50}
"""The prefixes of a unit read as prefix and base (:attr:`Kind.prefixed`): decimal, and binary first."""

_NUMBER = r"[-+]?(?:\d{1,3}(?:,\d{3})+(?:\.\d*)?|\d[\d_]*\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
"""A number; commas only as thousands separators ("1,024"), so "64,5" is rejected, not read as 645."""
_SPLIT = re.compile(rf"^\s*(?P<num>{_NUMBER}|nan|inf|-inf|\+inf)\s*(?P<unit>.*?)\s*$", re.IGNORECASE)

_YEAR_S = 365.25 * 86400.0
_PER_BYTE = {"B": 1.0, "kB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12, "KiB": 2.0**10, "MiB": 2.0**20, "GiB": 2.0**30}
_PER_BYTE["TiB"] = 2.0**40
_PER_TIME = {"s": 1.0, "min": 60.0, "h": 3600.0, "d": 86400.0, "y": _YEAR_S}
_PER_ENERGY = {"J": 1.0, "kJ": 1e3, "MJ": 1e6, "Wh": 3600.0, "kWh": 3.6e6, "MWh": 3.6e9}
_CURRENCY = ("USD", "$")
"""Parts of the compound units of :data:`KINDS` (``W/GB``, ``USD/h``): each spelling to its factor."""
_BITS = 8.0
"""Bits per byte: a bit rate (``Gb/s``) is divided by it."""


@dataclass(frozen=True)
class Bounds:
    """A closed range of one quantity kind, written as a reader would write it.

    Attributes
    ----------
    kind : str
        One of :data:`KINDS`.
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


@dataclass(frozen=True)
class Kind:
    """One quantity kind: everything kvtier knows of it, one record of :data:`KINDS`.

    Attributes
    ----------
    name : str
        The kind's name (``"bandwidth"``), as assumption keys and records name it.
    si_unit : str
        The SI base unit every value of the kind is held in (``"B/s"``; ``"1"`` when dimensionless).
    examples : str
        Accepted forms, quoted by the message that refuses a text (``"'82 us' or '18 ms'"``).
    low, high : str
        The physical bounds (:data:`LIMITS`) as text in the kind's units; both ends allowed.
    formatter : callable
        Formats a value in the base unit for a reader (:func:`format_quantity`).
    unit_example : str or None
        The one form shown for a value that needs a unit (``"64GB/s"``): an assumption of such
        a kind refuses a bare number other than 0, which could be B/s or GB/s.  None: a bare
        number is read in the base unit.
    units : mapping of str to float
        Whole unit spellings (spaces removed) to the factor that takes the number to the base
        unit (``"ms"`` -> 1e-3).  A text without a unit is in the base unit, whatever the kind.
    divided : mapping of str to float
        Whole unit spellings whose value is the number divided by an exact divisor: ``%`` is the
        number / 100, which a product with 0.01 would round differently.
    prefixed : tuple of (str, float)
        Base unit spellings read after a decimal or binary prefix (``GiB``, ``Gbit/s``), each with
        the divisor applied after the prefix's factor (8 for bits).  No unit ends in two of them.
    words : str
        A regular expression of words dropped, in any case, from the end of the unit before it is
        read: ``16 tokens`` is ``16``.
    currency : tuple of str
        The spellings a price's unit must start with; a unit starting otherwise is named as not
        in US dollars.
    """

    name: str
    si_unit: str
    examples: str
    low: str
    high: str
    formatter: Callable[[float], str]
    unit_example: str | None = None
    units: Mapping[str, float] = field(default_factory=dict)
    divided: Mapping[str, float] = field(default_factory=dict)
    prefixed: tuple[tuple[str, float], ...] = ()
    words: str = ""
    currency: tuple[str, ...] = ()

    @property
    def bounds(self) -> Bounds:
        """The physical bounds of the kind, :attr:`low` to :attr:`high`."""
        return Bounds(self.name, self.low, self.high)


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


SIGNIFICANT_DIGITS = 5
"""How many significant figures a number shows in a table, the review diff and the CLI (see
:func:`format_number`); 218.75 shows whole, 0.29252 B/s to five figures."""


def format_number(value: float | str, digits: int = SIGNIFICANT_DIGITS) -> str:
    """A number for reading: the one rule of the tables, the review diff and the command line.

    The value is taken as its table of record holds it (``%.10g``, or the CSV text itself) and
    rounded once, half away from zero, so that 218.74999999999997 (recorded 218.75) shows as
    218.75.  A whole number below 1e9 shows exactly with thousands separators (``5,242,880``);
    a number of ``digits`` or more integer digits to the unit (``11,452``); any other to
    ``digits`` significant figures without trailing zeros (``17.92``, ``0.29252``); below 1e-4
    and from 1e9 on in scientific notation (``5e+14``, ``1.234e-05``).
    """
    exact = Decimal(value.strip() if isinstance(value, str) else f"{value:.10g}")
    if not exact.is_finite():
        return str(value)
    if exact == 0:
        return "0"
    magnitude = exact.adjusted()  # the exponent of the leading digit
    if magnitude < -4 or magnitude >= 9:
        mantissa = exact.scaleb(-magnitude).quantize(Decimal(1).scaleb(1 - digits), rounding=ROUND_HALF_UP)
        if abs(mantissa) >= 10:  # 9.99995 rounds up to 10.0000
            mantissa, magnitude = mantissa / 10, magnitude + 1
        text = f"{mantissa.normalize():f}"
        return f"{text}e{magnitude:+03d}"
    places = 0 if magnitude >= digits - 1 or exact == exact.to_integral_value() else digits - 1 - magnitude
    rounded = exact.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)
    text = f"{rounded:,.{places}f}"
    if places:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "0") else text


def plural(n: float, word: str, spec: str = "") -> str:
    """``n`` formatted with ``spec`` and ``word``, plural unless ``n`` is 1 (``1 table``, ``2 tables``; with
    ``spec=","``, ``1,024 blocks``)."""
    return f"{n:{spec}} {word}{'' if n == 1 else 's'}"


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


def _percent(fraction: float) -> str:
    """A fraction (0..1) as a percentage: 0.25 -> ``25%``."""
    return f"{fraction * 100:g}%"


def _whole(value: float) -> str:
    """A count: whole, with thousands separators (``131,072``), else as it is (``2.5``)."""
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:g}"


def _flops(value: float) -> str:
    """A number of FLOPs to three significant figures: 2.24e15 -> ``2.24e+15 FLOP``."""
    return f"{value:.3g} FLOP"


def _in_unit(unit: str, factor: float, value: float) -> str:
    """``value`` (base unit) in ``unit``, which is ``factor`` base units, to four significant figures."""
    return f"{value / factor:.4g} {unit}"


# fmt: off
KINDS: dict[str, Kind] = {kind.name: kind for kind in (
    Kind("bytes", "B", "'5 MiB' or '140 GB'", "0 B", "1024 PiB", format_bytes,
         unit_example="5MiB", prefixed=(("B", 1.0),)),
    Kind("bandwidth", "B/s", "'64GB/s', '59.6 GiB/s' or '400 Gb/s'", "1 kB/s", "1 PB/s", format_bandwidth,
         unit_example="64GB/s",
         prefixed=(("bit/s", _BITS), ("b/s", _BITS), ("bps", _BITS), ("B/s", 1.0), ("Bps", 1.0))),
    Kind("flop_rate", "FLOP/s", "'500TFLOP/s' or '989 TFLOPS'", "1 GFLOP/s", "1000 EFLOP/s", format_flop_rate,
         unit_example="500TFLOP/s", prefixed=(("FLOP/s", 1.0), ("FLOPS", 1.0), ("flop/s", 1.0), ("FLOPs/s", 1.0))),
    Kind("flops", "FLOP", "'2.24e15' or '2.24 PFLOP'", "0 FLOP", "1e30 FLOP", _flops,
         unit_example="2.24e12FLOP", prefixed=(("FLOPs", 1.0), ("FLOP", 1.0), ("flop", 1.0))),
    Kind("time", "s", "'82 us' or '18 ms'", "0 s", "10 s", format_time,
         unit_example="5us", units={"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ns": 1e-9}),
    Kind("fraction", "1", "'0.25' or '25%'", "0.0001", "1", _percent,
         divided={"%": 100.0}),
    Kind("tokens", "tokens", "'16', '100000' or '128K'", "0", "1024M", _whole,
         units={"K": 2.0**10, "k": 2.0**10, "M": 2.0**20, "m": 2.0**20}, words="tokens|token|tok"),
    Kind("count", "1", "'70e9' or '70B'", "0", "1e15", _whole,
         units={"K": 1e3, "k": 1e3, "M": 1e6, "B": 1e9, "G": 1e9, "T": 1e12}),
    Kind("power", "W", "'467 W' or '0.7 kW'", "1 mW", "100 MW", partial(_in_unit, "W", 1.0),
         unit_example="467W", units={"mW": 1e-3, "W": 1.0, "kW": 1e3, "MW": 1e6}),
    Kind("energy", "J", "'26.2 J' or '1 kWh'", "1 mJ", "1000 MWh", partial(_in_unit, "J", 1.0),
         unit_example="26.2J", units={"mJ": 1e-3, **_PER_ENERGY}),
    Kind("power_capacity", "W/B", "'0.15 W/GB' or '5 mW/GB'", "0.001 mW/GB", "1000 W/GB",
         partial(_in_unit, "W/GB", 1e-9), unit_example="0.15W/GB",
         units={f"{w}/{b}": wv / bv for w, wv in (("mW", 1e-3), ("W", 1.0)) for b, bv in _PER_BYTE.items()}),
    Kind("price", "USD", "'12000 USD' or '4.15 kUSD'", "0 USD", "1e12 USD", partial(_in_unit, "USD", 1.0),
         unit_example="12000USD", currency=_CURRENCY, units={"USD": 1.0, "$": 1.0, "kUSD": 1e3}),
    Kind("price_rate", "USD/s", "'3 USD/h' or '3 $/h'", "0.0001 USD/h", "1000000 USD/h",
         partial(_in_unit, "USD/h", 1 / 3600.0), unit_example="3USD/h", currency=_CURRENCY,
         units={f"{c}/{t}": 1.0 / tv for c in _CURRENCY for t, tv in _PER_TIME.items()}),
    Kind("price_capacity", "USD/B", "'10 USD/GB' or '0.3 $/GB'", "0.000001 USD/GB", "1000000 USD/GB",
         partial(_in_unit, "USD/GB", 1e-9), unit_example="10USD/GB", currency=_CURRENCY,
         units={f"{c}/{b}": 1.0 / bv for c in _CURRENCY for b, bv in _PER_BYTE.items()}),
    Kind("price_energy", "USD/J", "'0.09 USD/kWh' or '90 USD/MWh'", "0.0001 USD/kWh", "1000 USD/kWh",
         partial(_in_unit, "USD/kWh", 1 / 3.6e6), unit_example="0.09USD/kWh", currency=_CURRENCY,
         units={f"{c}/{e}": 1.0 / ev for c in _CURRENCY for e, ev in _PER_ENERGY.items()}),
    Kind("period", "s", "'5 y', '90 d' or '8 h'", "1 h", "100 y", partial(_in_unit, "y", _YEAR_S),
         unit_example="5y",
         units={**_PER_TIME, "yr": _YEAR_S, "year": _YEAR_S, "years": _YEAR_S, "days": 86400.0}),
)}
# fmt: on
"""Every quantity kind, one record each: its base unit, examples, bounds, display and the units it reads."""

LIMITS: dict[str, Bounds] = {name: kind.bounds for name, kind in KINDS.items()}
"""Physical bounds of each kind (its :attr:`Kind.bounds`): every value an input may take, generously.

Wide enough for any real link (a modem to beyond any HBM), accelerator (a CPU core to
a zettaFLOP/s), utilization (0.01 % to 100 %), latency and context (2**30 tokens), and
narrow enough that no result computed from them overflows to inf or underflows to 0:
a 2**30-token block over 1 kB/s is about 1e24 s, not inf.
"""


def format_quantity(value: float, kind: str) -> str:
    """Format ``value`` (base unit of ``kind``) the way a reader expects to see it (:attr:`Kind.formatter`)."""
    spec = KINDS.get(kind)
    return spec.formatter(value) if spec is not None else f"{value:g}"


# ---------------------------------------------------------------------------
# Parsing user quantities
# ---------------------------------------------------------------------------


def _fail(text: object, kind: str, what: str = "") -> KvtierError:
    detail = f" ({what})" if what else ""
    return KvtierError(f"cannot read {show(text, quote=True)} as {kind}{detail}; expected e.g. {KINDS[kind].examples}")


def _split(text: str, kind: str) -> tuple[float, str]:
    match = _SPLIT.match(text)
    if not match:
        raise _fail(text, kind)
    number = float(match.group("num").replace("_", "").replace(",", ""))
    return number, match.group("unit")


def parse_quantity(value: object, kind: str) -> float:
    """Parse a user quantity into the SI base unit of ``kind``.

    Parameters
    ----------
    value : str, int or float
        The quantity as typed by a user (``"64GB/s"``) or a bare number, which is
        taken to be already in the base unit of ``kind`` (bytes, B/s, FLOP/s, ...).
    kind : str
        One of :data:`KINDS`; its record says which units it reads.

    Returns
    -------
    float
        The value in the base unit of ``kind``.

    Raises
    ------
    KvtierError
        If the text cannot be read, or the unit does not belong to ``kind``.
    """
    spec = KINDS.get(kind)
    if spec is None:
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
    if spec.words:
        compact = re.sub(rf"(?i)({spec.words})$", "", compact)
    if compact == "":  # a bare number is in the base unit, written as text or not: "0" is 0 s
        return number
    if compact in spec.units:
        return number * spec.units[compact]
    if compact in spec.divided:
        return number / spec.divided[compact]
    for base, divisor in spec.prefixed:
        if compact.endswith(base):
            prefix = compact[: len(compact) - len(base)]
            factor = _BINARY.get(prefix, _DECIMAL.get(prefix))
            if factor is not None:
                return number * factor / divisor
    if spec.currency and not compact.startswith(spec.currency):
        raise _fail(value, kind, f"{show(unit, quote=True)} is not in US dollars: write USD or $")
    # a prefixed kind names the unit as read, without spaces ('XB' of "5 X B"); any other as written
    raise _fail(value, kind, f"unknown unit {show(compact if spec.prefixed else unit, quote=True)}")
