"""Units: user strings into SI base units, and back out for humans."""

from __future__ import annotations

import math
import re

import pytest

from kvtier import KvtierError, parse_quantity, units
from kvtier.units import (
    DTYPE_BYTES,
    GIB,
    KINDS,
    LIMITS,
    MIB,
    Bounds,
    format_bandwidth,
    format_bytes,
    format_flop_rate,
    format_number,
    format_quantity,
    format_time,
    is_bare_number,
)

YEAR_S = 365.25 * 24 * 3600
"""A Julian year: 365.25 days of 86,400 s = 31,557,600 s."""


UNIT_EXAMPLES = [
    # the one form shown for a key of a kind that needs a unit, with its value by hand
    ("bytes", "5MiB", 5 * 2**20),  # 5 x 1,048,576 = 5,242,880 B
    ("bandwidth", "64GB/s", 64e9),
    ("flop_rate", "500TFLOP/s", 500e12),
    ("flops", "2.24e12FLOP", 2.24e12),
    ("time", "5us", 5e-6),
    ("power", "467W", 467.0),
    ("energy", "26.2J", 26.2),
    ("power_capacity", "0.15W/GB", 1.5e-10),  # 0.15 W / 1e9 B
    ("price", "12000USD", 12_000.0),
    ("price_rate", "3USD/h", 3 / 3600),  # 3 USD / 3,600 s
    ("price_capacity", "10USD/GB", 1e-8),  # 10 USD / 1e9 B
    ("price_energy", "0.09USD/kWh", 2.5e-8),  # 0.09 USD / 3.6e6 J
    ("period", "5y", 157_788_000.0),  # 5 x 31,557,600 s
]


BYTES_BY_HAND = {"B": 1.0, "kB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12}
BYTES_BY_HAND |= {"KiB": 1024.0, "MiB": 1024.0**2, "GiB": 1024.0**3, "TiB": 1024.0**4}


SECONDS_BY_HAND = {"s": 1.0, "min": 60.0, "h": 60 * 60.0, "d": 24 * 60 * 60.0, "y": 365.25 * 24 * 60 * 60.0}


JOULES_BY_HAND = {"J": 1.0, "kJ": 1e3, "MJ": 1e6, "Wh": 3600.0, "kWh": 3600.0 * 1e3, "MWh": 3600.0 * 1e6}
"""Each spelling's size in the base unit, by hand: 1 GiB = 1024**3 B, 1 d = 24 x 3,600 s, 1 Wh = 1 W x 3,600 s."""


@pytest.mark.parametrize(
    ("text", "kind", "expected"),
    [
        ("64GB/s", "bandwidth", 64e9),  # decimal: 64 x 1e9 B/s
        ("59.6 GiB/s", "bandwidth", 59.6 * 2**30),  # binary: 59.6 x 1,073,741,824 = 63,995,002,470 B/s
        ("400 Gb/s", "bandwidth", 50e9),  # bits: 400e9 / 8 = 50e9 B/s
        ("500TFLOP/s", "flop_rate", 500e12),
        ("989 TFLOPS", "flop_rate", 989e12),
        ("0.25", "fraction", 0.25),
        ("25%", "fraction", 0.25),  # 25 / 100
        ("16", "tokens", 16),
        ("128K", "tokens", 131072),  # 128 x 1024
        ("32K tokens", "tokens", 32768),  # 32 x 1024
        ("1M", "tokens", 1048576),  # 1024 x 1024
        ("100_000", "tokens", 100000),
        ("5 MiB", "bytes", 5 * 2**20),  # 5 x 1,048,576 = 5,242,880 B
        ("140 GB", "bytes", 140e9),
        ("82 us", "time", 82e-6),
        ("82 µs", "time", 82e-6),
        ("18 ms", "time", 0.018),
        ("70e9", "count", 70e9),
        ("70B", "count", 70e9),  # B = 1e9 for counts
        (64e9, "bandwidth", 64e9),  # bare numbers are already in base units
    ],
)
def test_parse_quantity(text, kind, expected):
    assert parse_quantity(text, kind) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("64 furlongs", "bandwidth"),
        ("fast", "bandwidth"),
        ("64 GB", "bandwidth"),
        ("25 percent", "fraction"),
        ("5 parsecs", "bytes"),
        ("12 hours", "time"),
        (True, "fraction"),
        ([1], "tokens"),
        ("64,5 GB/s", "bandwidth"),  # a decimal comma is refused, not read as 645 GB/s
    ],
)
def test_parse_rejects_with_clear_message(text, kind):
    with pytest.raises(KvtierError, match=f"as {kind}"):
        parse_quantity(text, kind)


def test_nan_and_inf_parse_to_non_finite_for_the_validator():
    assert math.isnan(parse_quantity("nan", "bandwidth"))
    assert math.isinf(parse_quantity("inf GB/s", "bandwidth"))


def test_formatting_states_decimal_or_binary():
    assert format_bytes(5 * 2**20) == "5.00 MiB"
    assert format_bytes(140e9, binary=False) == "140.00 GB"
    assert format_bytes(140e9) == "130.39 GiB"  # 140e9 / 2**30 = 130.385...
    assert format_bandwidth(64e9) == "64 GB/s"
    assert format_bandwidth(3.35e12) == "3.35 TB/s"  # 4 significant digits, trailing zeros dropped
    assert format_flop_rate(2.25e15) == "2.25 PFLOP/s"
    assert format_time(81.92e-6) == "81.92 µs"
    assert format_time(0.01792) == "17.92 ms"
    assert format_time(0.0) == "0 s"


def test_commas_group_thousands_only():
    # "1,024" is one thousand and twenty-four tokens; "100,000 tokens" a hundred thousand
    assert parse_quantity("1,024", "tokens") == 1024
    assert parse_quantity("100,000 tokens", "tokens") == 100_000


def test_a_bare_number_is_in_the_base_unit_for_every_kind():
    # "0" and "1e-6" as text are seconds, as the numbers 0 and 1e-6 are: `--set fetch_latency=0`
    # and `fetch_latency: 0` in a file mean the same
    assert parse_quantity("0", "time") == parse_quantity(0, "time") == 0.0
    assert parse_quantity("1e-6", "time") == 1e-6


@pytest.mark.parametrize(
    ("kind", "low", "high"),
    [
        ("bandwidth", 1e3, 1e15),  # 1 kB/s .. 1 PB/s
        ("flop_rate", 1e9, 1e21),  # 1 GFLOP/s .. 1000 EFLOP/s
        ("time", 0.0, 10.0),  # 0 s .. 10 s
        ("fraction", 1e-4, 1.0),
        ("tokens", 0.0, 2.0**30),  # 1024M = 1024 x 2**20 tokens
    ],
)
def test_physical_bounds_include_their_ends_and_nothing_beyond(kind, low, high):
    bounds = LIMITS[kind]
    assert low in bounds and high in bounds
    assert math.nextafter(low, -math.inf) not in bounds and math.nextafter(high, math.inf) not in bounds
    assert math.nan not in bounds and math.inf not in bounds


@pytest.mark.parametrize(
    ("value", "bare"),
    [(64, True), (6.4e10, True), ("64e9", True), (" 1_000 ", True), (".5", True), ("-3", True)]
    + [("64GB/s", False), ("64 GB/s", False), ("5us", False), (True, False), (None, False), ("", False), ("e9", False)],
)
def test_is_bare_number(value, bare):
    from kvtier.units import is_bare_number

    assert is_bare_number(value) is bare


def test_constants_by_hand():
    # a mebibyte is 2**20 = 1,048,576 B; a gibibyte 2**30 = 1,073,741,824 B
    assert MIB == 1_048_576.0 and GIB == 1_073_741_824.0
    # bytes per element: 16 bits / 8 = 2 (bf16, fp16), 32 / 8 = 4 (fp32), 8 / 8 = 1 (fp8); no other type
    assert (DTYPE_BYTES["bf16"], DTYPE_BYTES["fp16"], DTYPE_BYTES["fp32"], DTYPE_BYTES["fp8"]) == (2, 2, 4, 1)
    assert len(DTYPE_BYTES) == 4


@pytest.mark.parametrize(
    ("kind", "unit", "larger", "value"),
    [
        # a value is held in the kind's SI base unit: "1 UNIT" reads as 1.0, a larger unit as its size in it
        ("bytes", "B", "1 GB", 1e9),
        ("bandwidth", "B/s", "1 GB/s", 1e9),
        ("flop_rate", "FLOP/s", "1 TFLOP/s", 1e12),
        ("flops", "FLOP", "1 PFLOP", 1e15),
        ("time", "s", "1 ms", 1e-3),
        ("tokens", "tokens", "1K", 1024.0),
        ("power", "W", "1 kW", 1e3),
        ("energy", "J", "1 kWh", 3.6e6),  # 1,000 W x 3,600 s
        ("power_capacity", "W/B", "1 W/GB", 1e-9),
        ("price", "USD", "1 kUSD", 1e3),
        ("price_rate", "USD/s", "1 USD/h", 1 / 3600),
        ("price_capacity", "USD/B", "1 USD/GB", 1e-9),
        ("price_energy", "USD/J", "1 USD/kWh", 1 / 3.6e6),
        ("period", "s", "1 d", 86_400.0),  # 24 x 3,600 s
    ],
)
def test_each_kind_holds_its_values_in_its_base_unit(kind, unit, larger, value):
    assert KINDS[kind].si_unit == unit
    assert parse_quantity(f"1 {unit}", kind) == 1.0
    assert parse_quantity(larger, kind) == pytest.approx(value, rel=1e-12, abs=0)


def test_the_dimensionless_kinds():
    # a fraction and a count have no unit: "1"; a fraction's 50 % is 0.5 of it
    assert KINDS["fraction"].si_unit == KINDS["count"].si_unit == "1"
    assert parse_quantity("50%", "fraction") == 0.5
    assert len(KINDS) == 16


@pytest.mark.parametrize(("kind", "text", "value"), UNIT_EXAMPLES)
def test_every_unit_example_parses_to_its_value(kind, text, value):
    assert KINDS[kind].unit_example == text
    assert parse_quantity(text, kind) == pytest.approx(value, rel=1e-12, abs=0)


def test_fractions_tokens_and_counts_need_no_unit():
    # a bare 0.4, 16 or 70e9 means one thing; a bare 64 for a bandwidth could be B/s or GB/s
    assert {k for k, kind in KINDS.items() if kind.unit_example is None} == {"fraction", "tokens", "count"}
    assert {kind for kind, _, _ in UNIT_EXAMPLES} | {"fraction", "tokens", "count"} == set(KINDS)


@pytest.mark.parametrize(
    ("kind", "forms", "values"),
    [
        # the forms a refusal quotes, each read by hand: a message never suggests a form it refuses
        ("bytes", "'5 MiB' or '140 GB'", (5 * 2**20, 140e9)),
        ("bandwidth", "'64GB/s', '59.6 GiB/s' or '400 Gb/s'", (64e9, 59.6 * 2**30, 400e9 / 8)),
        ("flop_rate", "'500TFLOP/s' or '989 TFLOPS'", (500e12, 989e12)),
        ("flops", "'2.24e15' or '2.24 PFLOP'", (2.24e15, 2.24e15)),
        ("time", "'82 us' or '18 ms'", (82e-6, 18e-3)),
        ("fraction", "'0.25' or '25%'", (0.25, 0.25)),
        ("tokens", "'16', '100000' or '128K'", (16, 100_000, 128 * 1024)),
        ("count", "'70e9' or '70B'", (70e9, 70e9)),
        ("power", "'467 W' or '0.7 kW'", (467.0, 700.0)),
        ("energy", "'26.2 J' or '1 kWh'", (26.2, 3.6e6)),
        ("power_capacity", "'0.15 W/GB' or '5 mW/GB'", (0.15e-9, 5e-12)),  # 5e-3 W / 1e9 B
        ("price", "'12000 USD' or '4.15 kUSD'", (12_000.0, 4_150.0)),
        ("price_rate", "'3 USD/h' or '3 $/h'", (3 / 3600, 3 / 3600)),
        ("price_capacity", "'10 USD/GB' or '0.3 $/GB'", (1e-8, 0.3e-9)),
        ("price_energy", "'0.09 USD/kWh' or '90 USD/MWh'", (0.09 / 3.6e6, 90 / 3.6e9)),  # both 2.5e-8 USD/J
        ("period", "'5 y', '90 d' or '8 h'", (5 * YEAR_S, 90 * 86_400.0, 8 * 3600.0)),
    ],
)
def test_every_kind_refuses_with_forms_it_accepts(kind, forms, values):
    with pytest.raises(KvtierError) as info:
        parse_quantity("plenty", kind)
    assert str(info.value) == f"cannot read 'plenty' as {kind}; expected e.g. {forms}"
    quoted = re.findall(r"'([^']*)'", forms)
    assert [parse_quantity(text, kind) for text in quoted] == pytest.approx(list(values), rel=1e-12, abs=0)


@pytest.mark.parametrize(
    ("text", "kind", "expected"),
    [
        # every unit a kind reads by name (spaces dropped), each by hand
        ("1 s", "time", 1.0),
        ("1 ms", "time", 1e-3),
        ("1 us", "time", 1e-6),
        ("1 µs", "time", 1e-6),  # the micro sign
        ("1 μs", "time", 1e-6),  # the Greek mu
        ("1 ns", "time", 1e-9),
        ("1K", "tokens", 1024),  # tokens: K = k = 2**10, M = m = 2**20
        ("1k", "tokens", 1024),
        ("1M", "tokens", 1_048_576),
        ("1m", "tokens", 1_048_576),
        ("2 TOKENS", "tokens", 2),  # the words in any case
        ("2 Tok", "tokens", 2),
        ("1K", "count", 1e3),  # counts: decimal, B = G = 1e9
        ("1k", "count", 1e3),
        ("1M", "count", 1e6),
        ("1B", "count", 1e9),
        ("1G", "count", 1e9),
        ("1T", "count", 1e12),
        ("1 mW", "power", 1e-3),
        ("1 W", "power", 1.0),
        ("1 kW", "power", 1e3),
        ("1 MW", "power", 1e6),
        ("1 mJ", "energy", 1e-3),
        ("1 J", "energy", 1.0),
        ("1 kJ", "energy", 1e3),
        ("1 MJ", "energy", 1e6),
        ("1 Wh", "energy", 3600.0),  # 1 W x 3,600 s
        ("1 kWh", "energy", 3.6e6),
        ("1 MWh", "energy", 3.6e9),
        ("1 W/B", "power_capacity", 1.0),
        ("1 W/kB", "power_capacity", 1e-3),
        ("1 W/MB", "power_capacity", 1e-6),
        ("1 W/GB", "power_capacity", 1e-9),
        ("1 W/TB", "power_capacity", 1e-12),
        ("1 W/KiB", "power_capacity", 1 / 1024),
        ("1 W/MiB", "power_capacity", 1 / 1_048_576),
        ("1 W/GiB", "power_capacity", 1 / 1_073_741_824),
        ("1 W/TiB", "power_capacity", 1 / 1_099_511_627_776),  # 2**40 B
        ("1 mW/GB", "power_capacity", 1e-12),  # 1e-3 W / 1e9 B
        ("1 USD/s", "price_rate", 1.0),
        ("1 USD/min", "price_rate", 1 / 60),
        ("1 USD/h", "price_rate", 1 / 3600),
        ("1 USD/d", "price_rate", 1 / 86_400),
        ("1 USD/y", "price_rate", 1 / 31_557_600),  # 365.25 x 86,400 s
        ("1 $/h", "price_rate", 1 / 3600),
        ("1 USD/B", "price_capacity", 1.0),
        ("1 USD/TB", "price_capacity", 1e-12),
        ("1 $/TiB", "price_capacity", 1 / 1_099_511_627_776),
        ("1 USD/J", "price_energy", 1.0),
        ("1 USD/kJ", "price_energy", 1e-3),
        ("1 USD/MJ", "price_energy", 1e-6),
        ("1 USD/Wh", "price_energy", 1 / 3600),
        ("1 $/kWh", "price_energy", 1 / 3.6e6),
        ("1 s", "period", 1.0),
        ("1 min", "period", 60.0),
        ("1 h", "period", 3600.0),
        ("1 d", "period", 86_400.0),
        ("1 days", "period", 86_400.0),
        ("1 y", "period", 31_557_600.0),
        ("1 yr", "period", 31_557_600.0),
        ("1 year", "period", 31_557_600.0),
        ("2 years", "period", 63_115_200.0),
        ("1 GB", "bytes", 1e9),  # the prefixes not pinned below
        ("1 MiB", "bytes", 1_048_576.0),
        ("1 GiB/s", "bandwidth", 1_073_741_824.0),
        ("1 GFLOPS", "flop_rate", 1e9),
        ("8 Gbit/s", "bandwidth", 1e9),  # bits: 8e9 / 8 bits per byte
        ("8 Gb/s", "bandwidth", 1e9),
        ("8 Gbps", "bandwidth", 1e9),
        ("25 %", "fraction", 0.25),  # 25 / 100
    ],
)
def test_every_unit_by_name(text, kind, expected):
    assert parse_quantity(text, kind) == pytest.approx(expected, rel=1e-12, abs=0)  # no absolute slack at 1e-12


@pytest.mark.parametrize(
    ("kind", "units"),
    [
        # every compound spelling a kind reads: a watt or milliwatt per each size, a dollar per each size,
        # time and energy, in both spellings of the dollar
        (
            "power_capacity",
            {f"{w}/{b}": wv / bv for w, wv in (("W", 1.0), ("mW", 1e-3)) for b, bv in BYTES_BY_HAND.items()},
        ),
        ("price_capacity", {f"{c}/{b}": 1 / bv for c in ("USD", "$") for b, bv in BYTES_BY_HAND.items()}),
        ("price_rate", {f"{c}/{t}": 1 / tv for c in ("USD", "$") for t, tv in SECONDS_BY_HAND.items()}),
        ("price_energy", {f"{c}/{e}": 1 / ev for c in ("USD", "$") for e, ev in JOULES_BY_HAND.items()}),
    ],
)
def test_every_compound_unit(kind, units):
    assert set(KINDS[kind].units) == set(units)
    for unit, factor in units.items():
        assert parse_quantity(f"2 {unit}", kind) == pytest.approx(2 * factor, rel=1e-12, abs=0), unit


def test_a_percentage_is_divided_by_100_not_multiplied_by_0_01():
    # 35 / 100 is the double nearest 0.35; 35 x 0.01 is 0.35000000000000003, one step above it
    assert parse_quantity("35%", "fraction") == 35 / 100 == 0.35
    assert 35 * 0.01 != 0.35


@pytest.mark.parametrize(
    ("kind", "low", "high", "text"),
    [
        # every kind's physical bounds by hand, as messages state them
        ("bytes", 0.0, 2.0**60, "bytes in [0 B, 1024 PiB]"),  # 1024 x 2**50 B
        ("bandwidth", 1e3, 1e15, "bandwidth in [1 kB/s, 1 PB/s]"),
        ("flop_rate", 1e9, 1e21, "flop_rate in [1 GFLOP/s, 1000 EFLOP/s]"),  # 1000 x 1e18
        ("flops", 0.0, 1e30, "flops in [0 FLOP, 1e30 FLOP]"),
        ("time", 0.0, 10.0, "time in [0 s, 10 s]"),
        ("fraction", 1e-4, 1.0, "fraction in [0.0001, 1]"),
        ("tokens", 0.0, 2.0**30, "tokens in [0, 1024M]"),  # 1024 x 2**20
        ("count", 0.0, 1e15, "count in [0, 1e15]"),
        ("power", 1e-3, 1e8, "power in [1 mW, 100 MW]"),  # 100 x 1e6 W
        ("energy", 1e-3, 3.6e12, "energy in [1 mJ, 1000 MWh]"),  # 1000 x 3.6e9 J
        ("power_capacity", 1e-15, 1e-6, "power_capacity in [0.001 mW/GB, 1000 W/GB]"),  # 1e-6 W / 1e9 B; 1e3 / 1e9
        ("price_rate", 1e-4 / 3600, 1e6 / 3600, "price_rate in [0.0001 USD/h, 1000000 USD/h]"),
        ("price_capacity", 1e-15, 1e-3, "price_capacity in [0.000001 USD/GB, 1000000 USD/GB]"),  # / 1e9 B
        ("price_energy", 1e-4 / 3.6e6, 1e3 / 3.6e6, "price_energy in [0.0001 USD/kWh, 1000 USD/kWh]"),
        ("period", 3600.0, 100 * YEAR_S, "period in [1 h, 100 y]"),  # 3,155,760,000 s
    ],
)
def test_every_kinds_bounds_by_hand(kind, low, high, text):
    bounds = LIMITS[kind]
    assert str(bounds) == str(KINDS[kind].bounds) == text
    step = 1e-9  # far above one rounding step, far below any other bound's distance
    assert low * (1 + step) in bounds and high * (1 - step) in bounds
    assert high * (1 + step) not in bounds
    assert (low * (1 - step) if low else -step) not in bounds
    assert math.nan not in bounds and math.inf not in bounds


@pytest.mark.parametrize(
    ("text", "kind", "expected"),
    [
        # FLOP quantities with units: 2.24 x 1e15, 3 x 1e12, 7 x 1e9 (FLOPs and flop spellings too)
        ("2.24 PFLOP", "flops", 2.24e15),
        ("3 TFLOPs", "flops", 3e12),
        ("7 Gflop", "flops", 7e9),
        ("5 FLOP", "flops", 5.0),
        ("2.24e15", "flops", 2.24e15),
        # every decimal and binary byte prefix
        ("1 kB", "bytes", 1e3),
        ("1 KB", "bytes", 1e3),
        ("1 MB", "bytes", 1e6),
        ("1 TB", "bytes", 1e12),
        ("1 PB", "bytes", 1e15),
        ("1 EB", "bytes", 1e18),
        ("1 KiB", "bytes", 1024.0),
        ("1 GiB", "bytes", 2.0**30),
        ("1 TiB", "bytes", 2.0**40),
        ("1 PiB", "bytes", 2.0**50),
        ("7 B", "bytes", 7.0),
        # bandwidth: bytes, "Bps", bits in three spellings (divided by 8)
        ("8 Gbit/s", "bandwidth", 1e9),
        ("8 Mbps", "bandwidth", 1e6),
        ("16 kb/s", "bandwidth", 2e3),
        ("3 GBps", "bandwidth", 3e9),
        ("2 MiB/s", "bandwidth", 2 * 2.0**20),
        ("5 B/s", "bandwidth", 5.0),
        # flop rates in each spelling
        ("1 PFLOP/s", "flop_rate", 1e15),
        ("2 Gflop/s", "flop_rate", 2e9),
        ("3 TFLOPs/s", "flop_rate", 3e12),
        # time units
        ("2 s", "time", 2.0),
        ("5 ns", "time", 5e-9),
        ("3 μs", "time", 3e-6),  # Greek mu, not the micro sign
        # token suffixes: lower-case k and m are binary too; "tok" and "token"
        ("2k", "tokens", 2048),
        ("2m", "tokens", 2 * 2**20),
        ("3 tok", "tokens", 3),
        ("1 token", "tokens", 1),
        ("4Ktokens", "tokens", 4096),
        # count suffixes are decimal: K, k, M, G, T
        ("5K", "count", 5e3),
        ("5k", "count", 5e3),
        ("5M", "count", 5e6),
        ("5G", "count", 5e9),
        ("5T", "count", 5e12),
        ("5", "count", 5.0),
        # numbers: thousands separators with a fraction, underscores, a leading dot, signs, exponents
        ("1,234.5 B", "bytes", 1234.5),
        ("1_000 B", "bytes", 1000.0),
        (".5 GB", "bytes", 5e8),
        ("+2 GB", "bytes", 2e9),
        ("1e3 B", "bytes", 1e3),
        ("2E-3 s", "time", 2e-3),
        ("  64  GB/s  ", "bandwidth", 64e9),
        ("50 %", "fraction", 0.5),
        (3, "tokens", 3.0),
    ],
)
def test_parse_quantity_by_hand(text, kind, expected):
    value = parse_quantity(text, kind)
    assert value == pytest.approx(expected, rel=1e-12)
    assert type(value) is float


def test_infinities_and_nan_parse_in_each_spelling():
    assert parse_quantity("-inf GB/s", "bandwidth") == -math.inf
    assert parse_quantity("+inf", "time") == math.inf
    assert math.isnan(parse_quantity("NaN", "fraction"))


@pytest.mark.parametrize(
    ("value", "kind", "message"),
    [
        # a unit that is not of the kind: key (the kind), the text, and the accepted forms
        (
            "64 furlongs",
            "bandwidth",
            "cannot read '64 furlongs' as bandwidth (unknown unit 'furlongs'); "
            "expected e.g. '64GB/s', '59.6 GiB/s' or '400 Gb/s'",
        ),
        (
            "64 GB",
            "bandwidth",
            "cannot read '64 GB' as bandwidth (unknown unit 'GB'); expected e.g. '64GB/s', '59.6 GiB/s' or '400 Gb/s'",
        ),
        (
            "5 parsecs",
            "bytes",
            "cannot read '5 parsecs' as bytes (unknown unit 'parsecs'); expected e.g. '5 MiB' or '140 GB'",
        ),
        ("12 hours", "time", "cannot read '12 hours' as time (unknown unit 'hours'); expected e.g. '82 us' or '18 ms'"),
        (
            "25 percent",
            "fraction",
            "cannot read '25 percent' as fraction (unknown unit 'percent'); expected e.g. '0.25' or '25%'",
        ),
        (
            "3 lines",
            "tokens",
            "cannot read '3 lines' as tokens (unknown unit 'lines'); expected e.g. '16', '100000' or '128K'",
        ),
        ("3 dozen", "count", "cannot read '3 dozen' as count (unknown unit 'dozen'); expected e.g. '70e9' or '70B'"),
        (
            "2 PB/s",
            "flops",
            "cannot read '2 PB/s' as flops (unknown unit 'PB/s'); expected e.g. '2.24e15' or '2.24 PFLOP'",
        ),
        (
            "2 PB",
            "flop_rate",
            "cannot read '2 PB' as flop_rate (unknown unit 'PB'); expected e.g. '500TFLOP/s' or '989 TFLOPS'",
        ),
        ("5 XB", "bytes", "cannot read '5 XB' as bytes (unknown unit 'XB'); expected e.g. '5 MiB' or '140 GB'"),
        # a price in another currency is named as such; a price in dollars with an unknown unit is not
        (
            "3 EUR/h",
            "price_rate",
            "cannot read '3 EUR/h' as price_rate ('EUR/h' is not in US dollars: write USD or $); "
            "expected e.g. '3 USD/h' or '3 $/h'",
        ),
        (
            "3 USD/fortnight",
            "price_rate",
            "cannot read '3 USD/fortnight' as price_rate (unknown unit 'USD/fortnight'); "
            "expected e.g. '3 USD/h' or '3 $/h'",
        ),
        (
            "10 EUR/GB",
            "price_capacity",
            "cannot read '10 EUR/GB' as price_capacity ('EUR/GB' is not in US dollars: write USD or $); "
            "expected e.g. '10 USD/GB' or '0.3 $/GB'",
        ),
        (
            "0.09 EUR/kWh",
            "price_energy",
            "cannot read '0.09 EUR/kWh' as price_energy ('EUR/kWh' is not in US dollars: write USD or $); "
            "expected e.g. '0.09 USD/kWh' or '90 USD/MWh'",
        ),
        # a price without its currency is refused as not in dollars, not read in the base unit
        (
            "3 /h",
            "price_rate",
            "cannot read '3 /h' as price_rate ('/h' is not in US dollars: write USD or $); "
            "expected e.g. '3 USD/h' or '3 $/h'",
        ),
        # a price in dollars with an unknown unit is not named as another currency
        (
            "3 $/fortnight",
            "price_rate",
            "cannot read '3 $/fortnight' as price_rate (unknown unit '$/fortnight'); "
            "expected e.g. '3 USD/h' or '3 $/h'",
        ),
        # a kind that is not a price names no currency
        ("7 hp", "power", "cannot read '7 hp' as power (unknown unit 'hp'); expected e.g. '467 W' or '0.7 kW'"),
        ("7 kWh", "power", "cannot read '7 kWh' as power (unknown unit 'kWh'); expected e.g. '467 W' or '0.7 kW'"),
        # a prefixed unit is named as read, without its spaces; any other unit as written
        ("5 X B", "bytes", "cannot read '5 X B' as bytes (unknown unit 'XB'); expected e.g. '5 MiB' or '140 GB'"),
        ("5 x s", "time", "cannot read '5 x s' as time (unknown unit 'x s'); expected e.g. '82 us' or '18 ms'"),
        (
            "5 X tokens",
            "tokens",
            "cannot read '5 X tokens' as tokens (unknown unit 'X tokens'); expected e.g. '16', '100000' or '128K'",
        ),
        # text that is no number at all: no detail
        ("fast", "bandwidth", "cannot read 'fast' as bandwidth; expected e.g. '64GB/s', '59.6 GiB/s' or '400 Gb/s'"),
        # a boolean, a list: the detail says what it got
        (True, "fraction", "cannot read True as fraction (a boolean is not a quantity); expected e.g. '0.25' or '25%'"),
        ([1], "tokens", "cannot read [1] as tokens (got a list); expected e.g. '16', '100000' or '128K'"),
    ],
)
def test_whole_parse_error_messages(value, kind, message):
    with pytest.raises(KvtierError) as info:
        parse_quantity(value, kind)
    assert str(info.value) == message


def test_too_large_an_integer_names_itself_in_the_message():
    with pytest.raises(KvtierError) as info:
        parse_quantity(10**400, "count")
    text = str(info.value)
    assert text.startswith("cannot read 1000") and text.endswith(" as count (too large); expected e.g. '70e9' or '70B'")


def test_an_unknown_kind_is_a_programming_error():
    with pytest.raises(ValueError) as info:
        parse_quantity("1", "speed")
    assert str(info.value) == "unknown quantity kind 'speed'"


def test_bit_rates_are_not_taken_for_byte_rates():
    # "B/s" ends in "/s" but not in "b/s": 8 GB/s is 8e9 B/s, not 1e9
    assert parse_quantity("8 GB/s", "bandwidth") == 8e9


def test_bounds_print_and_contain():
    bounds = Bounds("time", "1 ms", "2 s")
    assert str(bounds) == "time in [1 ms, 2 s]"
    assert 1e-3 in bounds and 2.0 in bounds and 0.5 in bounds
    assert 9e-4 not in bounds and 2.1 not in bounds
    # the other limits by hand: 1024 PiB = 2**60 B; 1e30 FLOP; 1e15 count
    assert 2.0**60 in LIMITS["bytes"] and 2.0**60 * 1.0001 not in LIMITS["bytes"]
    assert 1e30 in LIMITS["flops"] and 1.1e30 not in LIMITS["flops"] and -1.0 not in LIMITS["flops"]
    assert 1e15 in LIMITS["count"] and 1.1e15 not in LIMITS["count"] and 0.0 in LIMITS["count"]
    assert 0.0 in LIMITS["bytes"] and -1.0 not in LIMITS["bytes"]


@pytest.mark.parametrize(
    ("n_bytes", "kwargs", "text"),
    [
        # binary thresholds: each unit starts at exactly its size
        (2.0**40, {}, "1.00 TiB"),
        (2.0**40 - 2.0**30, {}, "1023.00 GiB"),
        (2.0**30, {}, "1.00 GiB"),
        (2.0**20, {}, "1.00 MiB"),
        (2.0**10, {}, "1.00 KiB"),
        (1023, {}, "1023 B"),
        (1536, {"digits": 1}, "1.5 KiB"),  # 1536 / 1024 = 1.5
        (-(2.0**20), {}, "-1.00 MiB"),  # the magnitude picks the unit
        # decimal thresholds
        (1e12, {"binary": False}, "1.00 TB"),
        (1e9, {"binary": False}, "1.00 GB"),
        (1e6, {"binary": False}, "1.00 MB"),
        (1e3, {"binary": False}, "1.00 kB"),
        (999, {"binary": False}, "999 B"),
        (2.5e9, {"binary": False, "digits": 3}, "2.500 GB"),
    ],
)
def test_format_bytes_thresholds(n_bytes, kwargs, text):
    assert format_bytes(n_bytes, **kwargs) == text


@pytest.mark.parametrize(
    ("rate", "text"),
    [
        (1e12, "1 TB/s"),
        (1e9, "1 GB/s"),
        (1e6, "1 MB/s"),
        (1e3, "1 kB/s"),
        (999.0, "999 B/s"),
        (-64e9, "-64 GB/s"),
        (123_456_789.0, "123.5 MB/s"),  # 4 significant digits by default
    ],
)
def test_format_bandwidth_thresholds(rate, text):
    assert format_bandwidth(rate) == text


def test_format_bandwidth_digits():
    # 63.9950 GB/s to 6 significant digits
    assert format_bandwidth(63.995e9, digits=6) == "63.995 GB/s"
    assert format_bandwidth(63.995e9, digits=2) == "64 GB/s"


@pytest.mark.parametrize(
    ("rate", "text"),
    [
        (1e15, "1 PFLOP/s"),
        (1e12, "1 TFLOP/s"),
        (1e9, "1 GFLOP/s"),
        (999.0, "999 FLOP/s"),
        (-989e12, "-989 TFLOP/s"),
        (989.4e12, "989.4 TFLOP/s"),
    ],
)
def test_format_flop_rate_thresholds(rate, text):
    assert format_flop_rate(rate) == text
    assert format_flop_rate(123.456e12, digits=2) == "1.2e+02 TFLOP/s"


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (3600.0, "1.00 h"),
        (11_606.0, "3.22 h"),  # 11,606 / 3600 = 3.2239
        (3599.0, "59.98 min"),
        (60.0, "1.00 min"),
        (59.0, "59.00 s"),
        (1.0, "1.00 s"),
        (1e-3, "1.00 ms"),
        (1e-6, "1.00 µs"),
        (5e-9, "5.00 ns"),
        (-0.5, "-500.00 ms"),
        (360_000.0, "100.00 h"),
        (math.inf, "inf"),
        (math.nan, "nan"),
    ],
)
def test_format_time_thresholds(seconds, text):
    assert format_time(seconds) == text


def test_format_time_digits_and_thousands():
    assert format_time(0.01792, digits=1) == "17.9 ms"
    # 3,600,000 s = 1,000 h: thousands separated
    assert format_time(3_600_000.0) == "1,000.00 h"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (218.74999999999997, "218.75"),
        (5_242_880, "5,242,880"),
        (11_452.3, "11,452"),
        (17.92, "17.92"),
        (0.292521, "0.29252"),
        (5e14, "5e+14"),
        (1.234e-5, "1.234e-05"),
        (9.99995e-5, "1e-04"),  # 9.99995 rounds to 10.0000: one more decade
        (1e9, "1e+09"),
        (999_999_999, "999,999,999"),
        (1e-4, "0.0001"),
        (0, "0"),
        (-0.0, "0"),
        (-1.5, "-1.5"),
        ("3.14159", "3.1416"),
        (" 2.5 ", "2.5"),
        (math.inf, "inf"),
        (12345.6, "12,346"),
        (1234.56, "1,234.6"),
    ],
)
def test_format_number_by_hand(value, text):
    assert format_number(value) == text


def test_format_number_digits():
    # 3 significant figures: 17.92 -> 17.9; 1.23456e-5 -> 1.23e-05
    assert format_number(17.92, 3) == "17.9"
    assert format_number(1.23456e-5, 3) == "1.23e-05"


@pytest.mark.parametrize(
    ("value", "kind", "text"),
    [
        (5 * 2**20, "bytes", "5.00 MiB"),
        (64e9, "bandwidth", "64 GB/s"),
        (500e12, "flop_rate", "500 TFLOP/s"),
        (18e-3, "time", "18.00 ms"),
        (0.25, "fraction", "25%"),
        (131_072.0, "tokens", "131,072"),
        (70e9, "count", "70,000,000,000"),
        (2.5, "count", "2.5"),
        (2.24e15, "flops", "2.24e+15 FLOP"),
        # the cost kinds show in one unit each: value / factor (1 USD/h = 1/3600 USD/s)
        (3.0 / 3600.0, "price_rate", "3 USD/h"),
        (0.3e-9, "price_capacity", "0.3 USD/GB"),  # 0.3 USD/GB = 0.3e-9 USD/B
        (0.09 / 3.6e6, "price_energy", "0.09 USD/kWh"),  # 1 kWh = 3.6e6 J
        (0.15e-9, "power_capacity", "0.15 W/GB"),
        (5 * 365.25 * 86400.0, "period", "5 y"),  # a Julian year of 365.25 days
        (467.0, "power", "467 W"),
        (3.6e6, "energy", "3.6e+06 J"),  # 1 kWh = 3,600,000 J, shown in joules to 4 significant figures
        (26.2, "energy", "26.2 J"),
        (2.5, "tokens", "2.5"),
        (3.0, "other", "3"),
    ],
)
def test_format_quantity_by_kind(value, kind, text):
    assert format_quantity(value, kind) == text


@pytest.mark.parametrize(
    ("value", "bare"),
    [("1.5e-3", True), ("+7", True), ("1.", True), ("12 ", True), ("1e", False), ("1,000", False), (False, False)],
)
def test_is_bare_number_more(value, bare):
    assert is_bare_number(value) is bare


def test_format_flop_rate_default_is_four_significant_digits():
    # 989.44 TFLOP/s to 4 significant digits: 989.4
    assert format_flop_rate(989.44e12) == "989.4 TFLOP/s"


@pytest.mark.parametrize(
    ("value", "digits", "text"),
    [
        (1, 5, "1"),  # one is not zero
        (0.125, 2, "0.13"),  # half away from zero, not to even (0.12)
        (1.25e-5, 2, "1.3e-05"),  # the same in scientific notation
        (123_456.7, 5, "123,457"),  # six integer digits: to the unit, not to tens
        (2.000001, 5, "2"),  # "2.0000" loses its zeros and its point
        (-0.4, 0, "0"),  # no digits: rounds to "-0", shown as "0"
        (0.4, 0, "0"),
    ],
)
def test_format_number_rounding_edges(value, digits, text):
    assert format_number(value, digits) == text


def test_an_unknown_prefix_on_a_bit_rate_is_named_whole():
    with pytest.raises(KvtierError) as info:
        parse_quantity("8 Xb/s", "bandwidth")
    assert str(info.value) == (
        "cannot read '8 Xb/s' as bandwidth (unknown unit 'Xb/s'); expected e.g. '64GB/s', '59.6 GiB/s' or '400 Gb/s'"
    )


@pytest.mark.parametrize("kind", ["price_rate", "price_capacity", "price_energy"])
def test_a_price_opens_with_usd_or_a_dollar_sign(kind):
    # a unit opening with USD or $ is a dollar price with an unknown unit; any other, not in US dollars
    for unit, why in (
        ("USD/x", "unknown unit 'USD/x'"),
        ("$/x", "unknown unit '$/x'"),
        ("EUR/x", "'EUR/x' is not in US dollars: write USD or $"),
    ):
        with pytest.raises(KvtierError) as info:
            parse_quantity(f"1 {unit}", kind)
        assert str(info.value).startswith(f"cannot read '1 {unit}' as {kind} ({why}); expected e.g. ")


def test_the_module_docstring_tables_every_kind():
    # the table at the top of kvtier/units.py: one row per kind, in the order of KINDS
    lines = units.__doc__.splitlines()
    rules = [i for i, line in enumerate(lines) if line.startswith("==========")]
    assert [line.split()[0] for line in lines[rules[1] + 1 : rules[2]]] == list(KINDS)


def test_plural_by_count():
    # issue 43: "1 of 1 requests", "an LRU tier of 1 blocks", "buys 1 drives", "one pool of 1 memory servers"
    from kvtier.units import plural

    assert plural(1, "block") == "1 block" and plural(2, "block") == "2 blocks"
    assert plural(1024, "block", ",") == "1,024 blocks" and plural(1.0, "drive", ",.0f") == "1 drive"
    assert plural(99999, "row") == "99999 rows"  # as kvtier diff writes its counts
    assert plural(0, "drive") == "0 drives"
