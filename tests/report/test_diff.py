"""kvtier.report.diff: every changed cell of two sets of tables of record, the headline numbers, precision."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from kvtier.errors import KvtierError
from kvtier.report import diff
from kvtier.report.diff import ABSENT, COLUMN, Change, diff_tables, format_markdown, load_tables
from tests.conftest import by_cell, write_tables


def write(directory: Path, **tables: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in tables.items():
        (directory / f"{name}.csv").write_text(text, encoding="utf-8", newline="\n")
    return directory


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
    # Old ratio 17.92 ms / 81.92 µs = 218.75; new 17.92 ms / 52.4288 µs = 341.796875 (x 100/64 = +56.25 %).
    r = cells[("ratio", "bandwidth_bracket=mid, mfu_bracket=conservative", "ratio")]
    assert (r.old, r.new) == ("218.75", "341.796875")
    assert r.rel_change == pytest.approx(0.5625, rel=1e-9)
    # Orders of magnitude: log10(218.75) = 2.33995 -> log10(341.797) = 2.53377, +log10(1.5625) = +0.19382.
    oom = cells[("ratio", "bandwidth_bracket=mid, mfu_bracket=conservative", "orders_of_magnitude")]
    assert oom.rel_change == pytest.approx(math.log10(1.5625) / math.log10(218.75), rel=1e-8)
    # Only the three mid rows change, six numbers each (bandwidth, fetch, and the ratio and its orders in
    # both regimes); regen_ms and lone_regen_ms do not. within_claim stays True for all three in-batch
    # (109.4 / 136.7 / 218.75 -> 170.9 / 213.6 / 341.8), and so does lone_within_claim: a lone block
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
    }
    assert not [c for c in changes if c.table in {"block_unit", "regenerate", "roofline", "uncertainty"}]
    # assumptions 1 + fetch 2 + interior 24 (two regimes) + ratio 18 + models 9 (one illustrative ratio per
    # preset) + tiers 20 (the mid bracket's bandwidth, fetch and three ratios in each regime, 8; its fetch in
    # each layout, 2, and ratio in each regime and layout, 4; its break-even latency in each regime in the set's
    # layout and in each layout, 6; its break-even bandwidths stay: no latency) + capacity 12
    # (six rows, the last block's ratio in each regime) + tornado 16 (in-batch: the mfu and peak rows are
    # taken at the illustrative bandwidth, two ratios and a swing each, 6; lone block: mem_efficiency and
    # mem_bandwidth 3 each, mfu and peak 2 each, their swing staying 0 on a memory-bound block, 10)
    # + the serving page's placements at the illustrative (mid) bandwidth: the fetch and both ratios of
    # 4 tensor-parallel sizes, 12, and of 5 DeepSeek-V3 placements, 15
    # = 129 numbers; assumptions 3 + fetch 2 (basis, and the hardware the bracket names) = 5 text cells.
    assert sum(c.kind == "number" for c in changes) == 129
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


def test_markdown_two_keys_reads_at_display_precision(seed_dir: Path, tmp_path: Path) -> None:
    # The example: peak 500 -> 989 TFLOP/s and the mid bandwidth 64 -> 100 GB/s.
    both = tmp_path / "both"
    write_tables(both, **{"peak_flops": "989TFLOP/s", "bandwidth.mid": "100GB/s"})
    old, new = load_tables(str(seed_dir)), load_tables(str(both))
    changes = diff_tables(old, new)
    # 981 numbers and 39 text cells, by table: the chapter's pages 151 (assumptions 2 value_si, capacity 20,
    # fetch 2, interior 42, models 9, ratio 39, regenerate 6, roofline 9, tornado 19, uncertainty 1, ... as before);
    # the tier ladder 177 (every link's fetch, ratios and break-evens in both layouts and regimes: the peak moves
    # every regeneration, the bracket moves the mid row); the workload page 240 (the prefill avoided in both regimes
    # for 2 traces x 5 targets, recompute / fetch in both regimes for 2 x 5 x 11 links); the cost page 172 (blocks 9,
    # intervals 66, the LRU tiers 36, the mixes 61); the decision page 243 (decision 98: every regeneration time,
    # ratio and break-even of 10 tiers x 2 regimes x 2 layouts that the peak moves; margins 118; prices 27, 9 of them
    # flips_at_si); the cost page's hierarchy 112 (every recompute cost the peak moves); the serving page 264
    # (placements 16 and DeepSeek-V3's 20: fetch at the mid bracket, regeneration in a batch and both ratios;
    # shared links 40: the in-batch ratio of 10 tiers x 4 counts; TTFT 188: every prefill the peak shortens)
    assert sum(c.kind == "number" for c in changes) == 1357 and sum(c.kind == "text" for c in changes) == 39
    out = format_markdown(changes, old, new)
    lines = out.splitlines()
    # the deployment first: one accelerator with its own link on both sides (assumptions.csv's parallel.* rows)
    assert lines[4:8] == [
        "| deployment: tensor-parallel size (parallel.tp) | 1 | 1 | unchanged |",
        "| deployment: pipeline-parallel size (parallel.pp) | 1 | 1 | unchanged |",
        "| deployment: expert-parallel size (parallel.ep) | 1 | 1 | unchanged |",
        "| deployment: accelerators sharing one link (parallel.gpus_per_link) | 1 | 1 | unchanged |",
    ]
    lines = lines[:4] + lines[8:]  # the rest as before the deployment lines
    assert lines[4:12] == [
        # the decision: inside a batch per layer chunk, regeneration at 989 TFLOP/s takes 17.92 x 500/989 = 9.061 ms;
        # NVMe Gen4's 160 x 92 us + 748.98 us = 15.47 ms now loses (0.586), and so does Gen5's (0.600); the closest
        # call moves to Gen5, the one nearer 1
        "| tiers that fetch faster than a lone block regenerates, one copy | 10 of 10 | 10 of 10 | unchanged |",
        "| tiers that fetch faster than a block regenerates in a batch, one copy | 10 of 10 | 10 of 10 | unchanged |",
        "| tiers that fetch faster than a lone block regenerates, a copy per layer chunk | 10 of 10 | 10 of 10 |"
        " unchanged |",
        "| tiers that fetch faster than a block regenerates in a batch, a copy per layer chunk | 10 of 10 | 8 of 10 |"
        " changed |",
        "| closest call: the tier | nvme-gen4-x4 | nvme-gen5-x4 | changed |",
        "| closest call: regeneration / fetch | 1.1586 | 0.60029 | -48.19% |",
        # the LRU tier's size comes from the trace alone; its saving halves with the accelerator's time per reuse
        "| LRU host-DRAM tier for 90 % of the achievable hits (GiB) | 4,935.8 | 4,935.8 | unchanged |",
        "| its net saving against recomputing in a batch (USD/h) | 56.233 | 27.689 | -50.76% |",
    ]
    assert lines[12:24] == [
        # 2.24e12 FLOP / (0.25 x 989e12) = 9.0597 ms; / 52.4288 µs = 172.80; 500/989 x 100/64 - 1 = -21.01 %
        "| ratio, regeneration / fetch (compute-only regeneration: the chapter's in-batch model)"
        " | 218.75 | 172.8 | -21.01% |",
        "| ratio within the chapter's two to three orders of magnitude | yes | yes | unchanged |",
        # now below 100x: mid/optimistic 4.53 ms / 52.43 µs = 86.4, pessimistic/conservative 9.06 / 163.84 = 55.3
        "| bracket combinations within the chapter's claim | 7 of 9 | 5 of 9 | changed |",
        # a lone block stays memory-bound at the higher peak: 52.24 ms / 52.4288 µs = 996.4, still below 1000x
        "| ratio, regeneration / fetch (lone block: roofline on the set's device) | 637.68 | 996.38 | +56.25% |",
        "| bracket combinations within the chapter's claim, lone block | 6 of 9 | 6 of 9 | unchanged |",
        "| Monte Carlo draws below 100x (%) | 44.887 | 44.887 | unchanged |",
        "| Monte Carlo draws below 100x, lone block (%) | 0 | 0 | unchanged |",
        "| Monte Carlo draws above 1000x (%) | 0 | 0 | unchanged |",
        # regeneration takes 500/989 the time, so fetch breaks even at 989/500 the bandwidth: +97.80 %
        "| break-even bandwidth, tail block (GB/s) | 0.29252 | 0.57861 | +97.80% |",
        "| fetch (µs) | 81.92 | 52.429 | -36.00% |",
        "| regeneration, compute only (ms) | 17.92 | 9.0597 | -49.44% |",  # 17.92 x 500/989
        # a lone block is bound by reading the weights, whatever the peak
        "| regeneration of a lone block under the roofline (ms) | 52.239 | 52.239 | unchanged |",
    ]
    # 1,346 numbers besides the 11 SI duplicates (2 value_si, 9 flips_at_si), in 25 tables with the hierarchy and
    # the serving page's 4
    assert lines[25] == "**1346 numbers changed, 39 text cells changed in 25 tables**"
    # 25 per-table lines, then 1,346 + 39 = 1,385 cells folded away
    assert lines[55].startswith("<details><summary>All 1385 changed cells,") and len(lines) == 59 + 1385 + 2
    # no SI duplicates, no raw CSV precision
    assert "500000000000000" not in out and "17.92285213" not in out and "value_si |" not in out
    # five significant figures, not the CSV's ten (0.00094598 has five: its leading zeros are not figures)
    assert not re.search(r"(?<![\d.])(?:[1-9]\d*\.\d{7,}|0\.0*[1-9]\d{6,})", out)
    assert "| regenerate | bracket=conservative | regen_ms | 17.92 | 9.0597 | -49.44% |" in lines


def test_display_precision() -> None:
    assert diff.display_number("17.92285213") == "17.923"
    assert diff.display_number("5242880") == "5,242,880"  # an integer is shown exactly
    assert diff.display_number("1004023.735") == "1,004,024"
    assert diff.display_number("0.2925248706") == "0.29252"
    assert diff.display_number("2.339948062") == "2.3399"
    assert diff.display_number("500000000000000.0") == "5e+14"
    assert diff.display_number("52554367.37") == "52,554,367"
    assert diff.display_number("0.00001234") == "1.234e-05"
    assert diff.display_number("-0.0") == "0"
    # More digits only where 4 would show two different numbers alike.
    assert diff.display_pair("0.2925248706", "0.2925330315") == ("0.29252", "0.29253")
    assert diff.display_pair("64", "100") == ("64", "100")
    assert diff.display_pair("1", "1.000000001") == ("1", "1.000000001")  # not "1" and "1.000"


def test_si_duplicate_columns(seed_dir: Path) -> None:
    tables = load_tables(str(seed_dir))
    # assumptions.csv: value_si restates value in SI base units, unit_si is its unit
    assert diff.si_columns(tables, "assumptions") == {"value_si", "unit_si"}
    assert diff.si_columns(tables, "fetch") == set()
    # a *_si column that restates no column of its table is no duplicate: it stays
    lone = {"t": diff.parse_csv("k,rate_si\na,1\n", "t.csv")}
    assert diff.si_columns(lone, "t") == set()


def test_headline_numbers_need_the_tables(tmp_path: Path) -> None:
    old = write(tmp_path / "old", custom="name,v\na,1\n")
    new = write(tmp_path / "new", custom="name,v\na,2\n")
    a, b = load_tables(str(old)), load_tables(str(new))
    lines = format_markdown(diff_tables(a, b), a, b).splitlines()
    # no table of record, so no headline section: the summary comes first
    assert lines[:5] == [
        "**1 number changed in 1 table**",
        "",
        "| table | cells changed | largest relative change |",
        "|:--|:--|:--|",
        "| custom | 1 | +100.00% (v at name=a) |",  # (2 - 1) / 1
    ]


def test_headline_present_on_one_side(seed_dir: Path, tmp_path: Path) -> None:
    # The new side has no roofline table: its headline reads as removed, the others as they were.
    fewer = tmp_path / "fewer"
    write_tables(fewer)
    (fewer / "roofline.csv").unlink()
    old, new = load_tables(str(seed_dir)), load_tables(str(fewer))
    lines = format_markdown(diff_tables(old, new), old, new).splitlines()
    assert "| regeneration of a lone block under the roofline (ms) | 52.239 | (absent) | removed |" in lines
    assert "| roofline | 1: 1 table removed | — |" in lines


def test_markdown_escapes_pipes_and_html_and_shows_empty_cells() -> None:
    out = format_markdown([Change("t", "k=a|b", "c", "", "x|<b>y</b>", None)])
    assert out.splitlines() == [
        "**0 numbers changed, 1 text cell changed in 1 table**",
        "",
        "| table | cells changed | largest relative change |",
        "|:--|:--|:--|",
        "| t | 1: 1 text cell changed | — |",
        "",
        "<details><summary>All 1 changed cell, numbers to 5 significant figures</summary>",
        "",
        "| table | row | column | old | new | change |",
        "|:--|:--|:--|--:|--:|--:|",
        '| t | k=a\\|b | c | "" | x\\|&lt;b&gt;y&lt;/b&gt; | text |',
        "",
        "</details>",
    ]


def test_percent_format() -> None:
    assert diff.format_rel(Change("t", "r", "c", "64", "100", 0.5625)) == "+56.25%"
    assert diff.format_rel(Change("t", "r", "c", "100", "64", -0.36)) == "-36.00%"
    assert diff.format_rel(Change("t", "r", "c", "1", "1.000000001", 1e-9)) == "+1.00e-07%"
    assert diff.format_rel(Change("t", "r", "c", "0", "3", None)) == "from 0"


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
    assert diff.summary(changes) == (
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


# ---------------------------------------------------------------------------
# sources: build directories, git revisions, errors
# ---------------------------------------------------------------------------


def test_build_output_dir_with_tables_subdir(seed_dir: Path, tmp_path: Path) -> None:
    write_tables(tmp_path / "site" / "tables")
    assert diff_tables(load_tables(str(seed_dir)), load_tables(str(tmp_path / "site"))) == []


def test_directory_wins_over_revision(git_repo: Path, seed_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(git_repo)
    write_tables(git_repo / "HEAD")  # a directory named like a revision
    assert diff_tables(load_tables(str(seed_dir)), load_tables("HEAD")) == []


def test_malformed_csv_names_file(tmp_path: Path) -> None:
    bad = write(tmp_path / "bad", t="k,v\na,1,2\n")
    with pytest.raises(KvtierError, match=r"t\.csv: record 2 has 3 cells, the header has 2"):
        load_tables(str(bad))
    dup = write(tmp_path / "dup", t="k,k\na,1\n")
    with pytest.raises(KvtierError, match=r"t\.csv: duplicate column name"):
        load_tables(str(dup))


def test_markdown_headline_names_the_deployment(seed_dir: Path, tmp_path: Path) -> None:
    # the placement is read from assumptions.csv, the table of record that lists every key: tp 1 -> 8
    import shutil

    new_dir = tmp_path / "tp8"
    shutil.copytree(seed_dir, new_dir)
    path = new_dir / "assumptions.csv"
    text = path.read_text()
    row = next(line for line in text.splitlines() if line.startswith("parallel.tp,"))
    path.write_text(text.replace(row, row.replace("parallel.tp,1,1.0,", "parallel.tp,8,8.0,", 1)))
    old, new = load_tables(str(seed_dir)), load_tables(str(new_dir))
    lines = format_markdown(diff_tables(old, new), old, new).splitlines()
    # (8 - 1) / 1 = +700 %
    assert "| deployment: tensor-parallel size (parallel.tp) | 1 | 8 | +700.00% |" in lines
    assert "| deployment: pipeline-parallel size (parallel.pp) | 1 | 1 | unchanged |" in lines
    # tables of record from before the placement keys have no such rows: the lines are left out
    for tables in (old, new):
        tables.pop("assumptions")
    assert not [li for li in format_markdown(diff_tables(old, new), old, new).splitlines() if "deployment" in li]
