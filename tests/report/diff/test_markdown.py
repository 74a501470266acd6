"""kvtier.report.diff.markdown: the pull request's form at display precision, SI duplicates left out, text inert."""

from __future__ import annotations

import re
from pathlib import Path

from kvtier.report.diff import Change, diff_tables, format_markdown, load_tables, loading, markdown
from tests.conftest import write_tables


def test_markdown_two_keys_reads_at_display_precision(seed_dir: Path, tmp_path: Path) -> None:
    # The example: peak 500 -> 989 TFLOP/s and the mid bandwidth 64 -> 100 GB/s.
    both = tmp_path / "both"
    write_tables(both, **{"peak_flops": "989TFLOP/s", "bandwidth.mid": "100GB/s"})
    old, new = load_tables(str(seed_dir)), load_tables(str(both))
    changes = diff_tables(old, new)
    # 736 numbers and 40 text cells, by table: the chapter's pages 150 (assumptions 2 value_si, capacity 20, fetch
    # 2, interior 42, models 10, ratio 39, regenerate 6, roofline 9, tornado 19, uncertainty 1); the tier ladder 177
    # (every link's fetch, ratios and break-evens in both layouts and regimes: the peak moves every regeneration, the
    # bracket moves the mid row); the decision page 347 (decision 98: every regeneration time, ratio and break-even
    # of 10 tiers x 2 regimes x 2 layouts that the peak moves; margins 118; prices 21, 6 of them flips_at_si, energy
    # flipping no tier once the accelerator hour moves with it; the named deployments 11, all of this build's row
    # (its split's largest gain among them), the named rows taking their own accelerators; the inputs tried 35,
    # each try's verdicts flipped and closest
    # call against the build's, which the peak moves; the split per tier 64: the tokens computed and the gain of the
    # 32 rows whose best split moves once the head computes twice as fast, the other 8 fetching whole both ways);
    # the trace pages 62. They price the named deployment
    # Llama-3.1-70B on 4 H100s (workload.deployment), regenerated on its measured kernel tables, which the peak does
    # not enter (989 TFLOP/s is the H100's own): the workload, cost, TTFT and split tables do not move, and the
    # serving page's placements 12 and DeepSeek-V3's 15 do, fetched at the mid bracket, and the workload page's
    # fleet 16, each instance's tier read at it, and the cost page's fleet priced 19
    # (tests/report/diff/test_changes.py). 150 + 177 + 347 + 62 = 736
    assert sum(c.kind == "number" for c in changes) == 736 and sum(c.kind == "text" for c in changes) == 40
    out = format_markdown(changes, old, new)
    lines = out.splitlines()
    # the deployment first: one accelerator with its own link on both sides (assumptions.csv's parallel.* rows),
    # and the named deployment the trace pages price
    assert lines[4:9] == [
        "| deployment: tensor-parallel size (parallel.tp) | 1 | 1 | unchanged |",
        "| deployment: pipeline-parallel size (parallel.pp) | 1 | 1 | unchanged |",
        "| deployment: expert-parallel size (parallel.ep) | 1 | 1 | unchanged |",
        "| deployment: accelerators sharing one link (parallel.gpus_per_link) | 1 | 1 | unchanged |",
        "| deployment: the one the trace pages price (workload.deployment) | llama-3.1-70b-h100 | llama-3.1-70b-h100"
        " | unchanged |",
    ]
    lines = lines[:4] + lines[9:]  # the rest as before the deployment lines
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
        # the LRU tier's size comes from the trace alone; its saving is the H100 deployment's, on its kernel tables
        "| LRU host-DRAM tier for 90 % of the achievable hits, the trace pages' deployment (GiB) | 4,935.8 | 4,935.8 |"
        " unchanged |",
        "| its net saving against recomputing in a batch, the trace pages' deployment (USD/h) | 11.215 | 11.215 |"
        " unchanged |",
    ]
    assert lines[12:24] == [
        # 2,240,356,515,840 FLOP / (0.25 x 989e12) = 9.0611 ms; / 52.4288 µs = 172.83; 500/989 x 100/64 - 1 = -21.01 %
        "| ratio, regeneration / fetch (compute-only regeneration: the chapter's in-batch model)"
        " | 218.78 | 172.83 | -21.01% |",
        "| ratio within the chapter's two to three orders of magnitude | yes | yes | unchanged |",
        # now below 100x: mid/optimistic 4.53 ms / 52.43 µs = 86.4, pessimistic/conservative 9.06 / 163.84 = 55.3
        "| bracket combinations within the chapter's claim | 7 of 9 | 5 of 9 | changed |",
        # a lone block stays memory-bound at the higher peak: 52.24 ms / 52.4288 µs = 996.4, still below 1000x
        "| ratio, regeneration / fetch (lone block: roofline on the set's device) | 637.68 | 996.38 | +56.25% |",
        "| bracket combinations within the chapter's claim, lone block | 6 of 9 | 6 of 9 | unchanged |",
        "| Monte Carlo draws below 100x (%) | 51.62 | 51.62 | unchanged |",
        "| Monte Carlo draws below 100x, lone block (%) | 0 | 0 | unchanged |",
        "| Monte Carlo draws above 1000x (%) | 0 | 0 | unchanged |",
        # regeneration takes 500/989 the time, so fetch breaks even at 989/500 the bandwidth: +97.80 %
        "| break-even bandwidth, tail block (GB/s) | 0.29252 | 0.57861 | +97.80% |",
        "| fetch (µs) | 81.92 | 52.429 | -36.00% |",
        "| regeneration, compute only (ms) | 17.923 | 9.0611 | -49.44% |",  # 17.92 x 500/989
        # a lone block is bound by reading the weights, whatever the peak
        "| regeneration of a lone block under the roofline (ms) | 52.239 | 52.239 | unchanged |",
    ]
    # 728 numbers besides the 8 SI duplicates (2 value_si, 6 flips_at_si), in 21 tables with the serving page's 2,
    # the decision page's named deployments, inputs tried and split per tier, the workload page's fleet and the cost
    # page's
    assert lines[25] == "**728 numbers changed, 40 text cells changed in 21 tables**"
    # 21 per-table lines, then 728 + 40 = 768 cells folded away
    assert lines[51].startswith("<details><summary>All 768 changed cells,") and len(lines) == 55 + 768 + 2
    # no SI duplicates, no raw CSV precision
    assert "500000000000000" not in out and "17.92285213" not in out and "value_si |" not in out
    # five significant figures, not the CSV's ten (0.00094598 has five: its leading zeros are not figures)
    assert not re.search(r"(?<![\d.])(?:[1-9]\d*\.\d{7,}|0\.0*[1-9]\d{6,})", out)
    assert "| regenerate | bracket=conservative | regen_ms | 17.923 | 9.0611 | -49.44% |" in lines


def test_display_precision() -> None:
    assert markdown.display_number("17.92285213") == "17.923"
    assert markdown.display_number("5242880") == "5,242,880"  # an integer is shown exactly
    assert markdown.display_number("1004023.735") == "1,004,024"
    assert markdown.display_number("0.2925248706") == "0.29252"
    assert markdown.display_number("2.339948062") == "2.3399"
    assert markdown.display_number("500000000000000.0") == "5e+14"
    assert markdown.display_number("52554367.37") == "52,554,367"
    assert markdown.display_number("0.00001234") == "1.234e-05"
    assert markdown.display_number("-0.0") == "0"
    # More digits only where 4 would show two different numbers alike.
    assert markdown.display_pair("0.2925248706", "0.2925330315") == ("0.29252", "0.29253")
    assert markdown.display_pair("64", "100") == ("64", "100")
    assert markdown.display_pair("1", "1.000000001") == ("1", "1.000000001")  # not "1" and "1.000"


def test_si_duplicate_columns(seed_dir: Path) -> None:
    tables = load_tables(str(seed_dir))
    # assumptions.csv: value_si restates value in SI base units, unit_si is its unit
    assert markdown.si_columns(tables, "assumptions") == {"value_si", "unit_si"}
    assert markdown.si_columns(tables, "fetch") == set()
    # a *_si column that restates no column of its table is no duplicate: it stays
    lone = {"t": loading.parse_csv("k,rate_si\na,1\n", "t.csv")}
    assert markdown.si_columns(lone, "t") == set()


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
