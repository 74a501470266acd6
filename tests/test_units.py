"""Units: user strings into SI base units, and back out for humans."""

import math

import pytest

from kvtier import KvtierError, parse_quantity
from kvtier.units import LIMITS, format_bandwidth, format_bytes, format_flop_rate, format_time


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
