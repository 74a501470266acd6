"""kvtier.report.diff.changes: every changed cell of two sets of tables of record, by hand, and how rows match."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from kvtier.report.diff import ABSENT, COLUMN, Change, diff_tables, load_tables
from kvtier.report.diff.text import summary
from tests.conftest import by_cell
from tests.report.diff import write

# ---------------------------------------------------------------------------
# the bandwidth change, by hand
# ---------------------------------------------------------------------------


def test_bandwidth_change_fetch_row(seed_dir: Path, fast_dir: Path) -> None:
    cells = by_cell(diff_tables(load_tables(str(seed_dir)), load_tables(str(fast_dir))))
    # The block: 2 x 80 layers x 8 kv heads x 128 x 2 B = 327,680 B/token; x 16 tokens = 5,242,880 B = 5 MiB.
    # Old fetch: 5,242,880 B / 64e9 B/s = 81.92 µs.  New: 5,242,880 / 100e9 = 52.4288 µs.
    # Relative change: 52.4288 / 81.92 - 1 = 64/100 - 1 = -36 %.
    fetch_us = cells[("fetch", "bracket=mid", "fetch_us")]
    assert (fetch_us.old, fetch_us.new) == ("81.92", "52.4288")
    assert fetch_us.rel_change == pytest.approx(-0.36, rel=1e-12)
    assert fetch_us.kind == "number"
    # Bandwidth: 64 -> 100 GB/s, (100 - 64) / 64 = +56.25 %.
    bw = cells[("fetch", "bracket=mid", "bandwidth_GBps")]
    assert (bw.old, bw.new, bw.rel_change) == ("64", "100", pytest.approx(0.5625, rel=1e-12))
    # The basis text follows the override; text has no relative change.
    basis = cells[("fetch", "bracket=mid", "basis")]
    assert basis.new == "override of the seed set's 64 GB/s"
    assert basis.rel_change is None and basis.kind == "text"
    # The hardware the bracket stands for follows its value: no link preset runs at 100 GB/s.
    hardware = cells[("fetch", "bracket=mid", "hardware")]
    assert hardware.old == "the raw rate of PCIe 5.0 x16, CXL 2.0 x16 or CXL 3.x x8"
    assert hardware.new == "no link preset at this bandwidth"
    # Nothing else in fetch.csv: the block (5 MiB), the latency (0) and the other brackets are as they were.
    assert {k for k in cells if k[0] == "fetch"} == {
        ("fetch", "bracket=mid", "bandwidth_GBps"),
        ("fetch", "bracket=mid", "fetch_us"),
        ("fetch", "bracket=mid", "basis"),
        ("fetch", "bracket=mid", "hardware"),
    }


def test_bandwidth_change_ratio_and_interior(seed_dir: Path, fast_dir: Path) -> None:
    cells = by_cell(diff_tables(load_tables(str(seed_dir)), load_tables(str(fast_dir))))
    # Regeneration at 25 % MFU of 500 TFLOP/s: 16 x 2 x 70e9 = 2.24e12 FLOP / 125e12 FLOP/s = 17.92 ms.
    # Old ratio 17.92285212672 ms / 81.92 µs = 218.784816; new / 52.4288 µs = 341.851275 (x 100/64 = +56.25 %).
    r = cells[("ratio", "bandwidth_bracket=mid, mfu_bracket=conservative", "ratio")]
    assert (r.old, r.new) == ("218.784816", "341.851275")
    assert r.rel_change == pytest.approx(0.5625, rel=1e-9)
    # Orders of magnitude: log10(218.785) = 2.34002 -> log10(341.851) = 2.53384, +log10(1.5625) = +0.19382.
    oom = cells[("ratio", "bandwidth_bracket=mid, mfu_bracket=conservative", "orders_of_magnitude")]
    assert oom.rel_change == pytest.approx(math.log10(1.5625) / math.log10(218.784816), rel=1e-8)
    # Only the three mid rows change, six numbers each (bandwidth, fetch, and the ratio and its orders in
    # both regimes); regen_ms and lone_regen_ms do not. within_claim stays True for all three in-batch
    # (109.4 / 136.8 / 218.8 -> 170.9 / 213.7 / 341.9), and so does lone_within_claim: a lone block
    # reads 140e9 B of weights at 3.35e12 B/s x 80 % = 52.24 ms, / 81.92 µs = 637.7 -> / 52.4288 µs = 996.4.
    ratio_cells = {k for k in cells if k[0] == "ratio"}
    assert len(ratio_cells) == 3 * 6
    assert all(k[1].startswith("bandwidth_bracket=mid,") for k in ratio_cells)
    assert {k[2] for k in ratio_cells} == {
        "bandwidth_GBps",
        "fetch_us",
        "ratio",
        "orders_of_magnitude",
        "lone_ratio",
        "lone_orders_of_magnitude",
    }
    lone = cells[("ratio", "bandwidth_bracket=mid, mfu_bracket=conservative", "lone_ratio")]
    assert float(lone.old) == pytest.approx(140e9 / (3.35e12 * 0.8) / 81.92e-6, rel=1e-9)
    # Interior: regeneration is unchanged; both ratios to the fetch of its 2 x 6 rows scale by 100/64.
    interior = [c for c in cells.values() if c.table == "interior"]
    assert len(interior) == 2 * 12
    assert {c.column for c in interior} == {"ratio_to_fetch", "lone_ratio_to_fetch"}
    assert all(c.rel_change == pytest.approx(0.5625, rel=1e-8) for c in interior)
    # The assumption record: its SI value 64e9 -> 100e9 is the one number; display, basis, source are text.
    a = {k[2]: c for k, c in cells.items() if k[0] == "assumptions"}
    assert set(a) == {"value", "value_si", "basis", "source"}
    assert all(c.row == "key=bandwidth.mid" for c in a.values())
    assert (a["value_si"].old, a["value_si"].new) == ("64000000000.0", "100000000000.0")
    assert (a["value"].old, a["value"].new, a["value"].kind) == ("64 GB/s", "100 GB/s", "text")


def test_unaffected_tables_report_nothing(seed_dir: Path, fast_dir: Path) -> None:
    changes = diff_tables(load_tables(str(seed_dir)), load_tables(str(fast_dir)))
    # Bandwidth enters neither the block size, nor regeneration, nor the roofline, nor the Monte Carlo (its
    # range is separate from the brackets); in capacity only the last block's ratios to the fetch move.
    assert {c.table for c in changes} == {
        "assumptions",
        "capacity",
        "fetch",
        "interior",
        "ratio",
        "models",
        "tiers",
        "tornado",
        "serving_placement",
        "serving_moe",
        "workload_fleet",
        "cost_fleet",
    }
    assert not [c for c in changes if c.table in {"block_unit", "regenerate", "roofline", "uncertainty"}]
    # assumptions 1 + fetch 2 + interior 24 (two regimes) + ratio 18 + models 10 (one illustrative ratio per
    # preset) + tiers 20 (the mid bracket's bandwidth, fetch and three ratios in each regime, 8; its fetch in
    # each layout, 2, and ratio in each regime and layout, 4; its break-even latency in each regime in the set's
    # layout and in each layout, 6; its break-even bandwidths stay: no latency) + capacity 12
    # (six rows, the last block's ratio in each regime) + tornado 16 (in-batch: the mfu and peak rows are
    # taken at the illustrative bandwidth, two ratios and a swing each, 6; lone block: mem_efficiency and
    # mem_bandwidth 3 each, mfu and peak 2 each, their swing staying 0 on a memory-bound block, 10)
    # + the serving page's placements at the illustrative (mid) bandwidth: the fetch and both ratios of
    # 4 tensor-parallel sizes, 12, and of 5 DeepSeek-V3 placements, 15 + the workload page's fleet 16 (each
    # instance's tier is read at the illustrative bracket: every router's mean and 90th-percentile time to first
    # token, 10; and, as a request stays in flight for its time to first token, the routers that count requests
    # in flight route otherwise: prefix's and least-loaded's hit ratio and two balance figures, 6; the pool is
    # read over RDMA and its row, like no tier's, stays) + the cost page's fleet priced 19 (every router's tier per
    # instance: its fetching, net saving and mean time to first token, 15; prefix's and least-loaded's hit ratio and
    # recomputation avoided, 4; the pool's row stays)
    # = 165 numbers; assumptions 3 + fetch 2 (basis, and the hardware the bracket names) = 5 text cells.
    assert sum(c.kind == "number" for c in changes) == 165
    assert sum(c.kind == "text" for c in changes) == 5


def test_order_is_deterministic(seed_dir: Path, fast_dir: Path) -> None:
    changes = diff_tables(load_tables(str(seed_dir)), load_tables(str(fast_dir)))
    assert [c.table for c in changes] == sorted(c.table for c in changes)
    fetch_cols = [c.column for c in changes if c.table == "fetch"]
    assert fetch_cols == ["bandwidth_GBps", "fetch_us", "hardware", "basis"]  # header order
    rows = [c.row for c in changes if c.table == "interior"]
    assert rows[0] == "upstream=resident, position_tokens=0"
    assert rows[-1] == "upstream=evicted, position_tokens=1000000"  # new table's row order
    assert changes == diff_tables(load_tables(str(seed_dir)), load_tables(str(fast_dir)))


def test_columns_tables_and_number_semantics(tmp_path: Path) -> None:
    old = write(
        tmp_path / "old",
        fetch="bracket,bandwidth_GBps,gone,note\nmid,64,1,a\nlow,0,2,b\nx,nan,3,c\n",
        extra="name,v\nq,1\n",
    )
    new = write(
        tmp_path / "new",
        # row order changed (rows follow the new table), 64 written as 64.0 (same number), a new column,
        # 0 -> 5 (no relative change from zero), nan stays text and unchanged, a new table.
        fetch="bracket,bandwidth_GBps,note,added\nlow,5,b,z\nmid,64.0,a,y\nx,nan,c,w\n",
        fresh="only\n1\n",
    )
    changes = diff_tables(load_tables(str(old)), load_tables(str(new)))
    assert changes == [
        Change("extra", "", "", "(1 row)", ABSENT),
        Change("fetch", "", "added", ABSENT, COLUMN),
        Change("fetch", "", "gone", COLUMN, ABSENT),
        Change("fetch", "bracket=low", "bandwidth_GBps", "0", "5", None),
        Change("fetch", "bracket=low", "added", ABSENT, "z"),
        Change("fetch", "bracket=low", "gone", "2", ABSENT),
        Change("fetch", "bracket=mid", "added", ABSENT, "y"),
        Change("fetch", "bracket=mid", "gone", "1", ABSENT),
        Change("fetch", "bracket=x", "added", ABSENT, "w"),
        Change("fetch", "bracket=x", "gone", "3", ABSENT),
        Change("fresh", "", "", ABSENT, "(1 row)"),
    ]
    assert [c.kind for c in changes[:4]] == ["table removed", "column added", "column removed", "number"]
    assert summary(changes) == (
        "1 number changed, 1 column added, 1 column removed, 1 table added, 1 table removed in 3 tables"
    )


def test_unknown_table_keys_on_first_column_and_repeats(tmp_path: Path) -> None:
    old = write(tmp_path / "old", custom="name,v\na,1\na,2\nb,3\n")
    new = write(tmp_path / "new", custom="name,v\na,1\na,4\nc,3\n")
    assert diff_tables(load_tables(str(old)), load_tables(str(new))) == [
        Change("custom", "name=a (#2)", "v", "2", "4", 1.0),
        Change("custom", "name=c", "v", ABSENT, "3"),
        Change("custom", "name=b", "v", "3", ABSENT),
    ]


def test_repeated_keys_never_collide_with_real_labels(tmp_path: Path) -> None:
    # Two rows keyed `a` and a third whose key is literally `a (#2)`: the second `a` must not be labelled
    # `name=a (#2)` and overwritten by the third row, which would leave a change to it unreported.
    old = write(tmp_path / "old", custom="name,v\na,1\na,2\na (#2),3\n")
    new = write(tmp_path / "new", custom="name,v\na,1\na,5\na (#2),3\n")
    assert diff_tables(load_tables(str(old)), load_tables(str(new))) == [
        Change("custom", "name=a (#2)", "v", "2", "5", 1.5),  # (5 - 2) / 2
    ]
    # The other way round: only the row literally named `a (#2)` changes; its label is quoted.
    other = write(tmp_path / "other", custom="name,v\na,1\na,2\na (#2),4\n")
    assert diff_tables(load_tables(str(old)), load_tables(str(other))) == [
        Change("custom", 'name="a (#2)"', "v", "3", "4", pytest.approx(1 / 3)),  # (4 - 3) / 3
    ]
    # Key values with commas cannot fake a second key column. ratio.csv is keyed by two columns; unquoted,
    # ("mid, mfu_bracket=low", "high") and ("mid", "low, mfu_bracket=high") would both read
    # "bandwidth_bracket=mid, mfu_bracket=low, mfu_bracket=high".
    text = 'bandwidth_bracket,mfu_bracket,v\n"mid, mfu_bracket=low",high,10\nmid,"low, mfu_bracket=high",20\n'
    changes = diff_tables(
        load_tables(str(write(tmp_path / "two_old", ratio=text))),
        load_tables(str(write(tmp_path / "two_new", ratio=text.replace(",20", ",21")))),
    )
    row = 'bandwidth_bracket=mid, mfu_bracket="low, mfu_bracket=high"'
    assert changes == [Change("ratio", row, "v", "20", "21", pytest.approx(0.05))]  # (21 - 20) / 20


def test_cells_are_exact_text(tmp_path: Path) -> None:
    old = write(tmp_path / "old", t='k,v\na,"1,000"\nb," x"\n')
    new = write(tmp_path / "new", t='k,v\na,"1,000"\nb,x\n')
    (c,) = diff_tables(load_tables(str(old)), load_tables(str(new)))
    assert (c.old, c.new, c.kind) == (" x", "x", "text")
