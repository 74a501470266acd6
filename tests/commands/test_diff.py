"""`kvtier diff`: what it prints for two runs, text and Markdown, from directories and git revisions."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from kvtier.commands import diff as diff_command
from kvtier.errors import KvtierError
from kvtier.report.diff import ABSENT, diff_tables, format_markdown, format_text, load_tables
from tests.conftest import by_cell, git, write_tables


@pytest.fixture(scope="module")
def moved_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The seed with the example interior block at position 20,000 (a position not in the grid)."""
    out = tmp_path_factory.mktemp("moved")
    write_tables(out, **{"interior.position": "20000"})
    return out


def cli(*argv: str) -> int:
    """Run ``kvtier diff ARGV`` through argparse as the main CLI does."""
    parser = argparse.ArgumentParser(prog="kvtier")
    sub = parser.add_subparsers(dest="command", required=True)
    diff_command.add_parser(sub)
    args = parser.parse_args(["diff", *argv])
    return args.func(args)


# ---------------------------------------------------------------------------
# formats and exit status
# ---------------------------------------------------------------------------


def test_identical_sources_are_silent(seed_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    again = tmp_path / "again"
    write_tables(again)  # written again: byte-identical, so no change at all
    assert diff_tables(load_tables(str(seed_dir)), load_tables(str(again))) == []
    assert format_text([]) == "" and format_markdown([]) == ""
    assert cli(str(seed_dir), str(again)) == 0
    assert cli(str(seed_dir), str(again), "--format", "md") == 0
    assert capsys.readouterr().out == ""


def test_text_output(seed_dir: Path, fast_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(str(seed_dir), str(fast_dir)) == 1
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].split() == ["table", "row", "column", "old", "new", "change"]
    assert set(lines[1].replace(" ", "")) == {"-"}
    assert len(lines) == 2 + 170  # header, rule, and the 165 + 5 changes counted in tests/report/diff/test_changes.py
    fetch = next(line for line in lines if line.startswith("fetch") and "fetch_us" in line)
    assert fetch.split() == ["fetch", "bracket=mid", "fetch_us", "81.92", "52.4288", "-36.00%"]
    bw = next(line for line in lines if line.startswith("fetch") and "bandwidth_GBps" in line)
    assert bw.endswith("+56.25%")
    # Aligned: the change column ends in the same place on every line.
    assert len({len(line) for line in lines if line.endswith("%")}) == 1


def test_markdown_opens_with_the_headline_numbers(
    seed_dir: Path, fast_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli(str(seed_dir), str(fast_dir), "--format", "md") == 1
    lines = capsys.readouterr().out.splitlines()
    # the deployment first (assumptions.csv's parallel.* rows): one accelerator with its own link on both sides,
    # and the named deployment the trace pages price
    assert [line for line in lines[4:9] if line.startswith("| deployment: ")] == lines[4:9]
    assert lines[4] == "| deployment: tensor-parallel size (parallel.tp) | 1 | 1 | unchanged |"
    assert lines[8] == (
        "| deployment: the one the trace pages price (workload.deployment) | llama-3.1-70b-h100 | llama-3.1-70b-h100"
        " | unchanged |"
    )
    lines = lines[:4] + lines[9:]  # the rest as before the deployment lines
    assert lines[:25] == [
        "**Headline numbers** at the illustrative point (mid bandwidth, conservative MFU)",
        "",
        "| | before | after | change |",
        "|:--|--:|--:|--:|",
        # the decision reads the tiers' own links, not the brackets: nothing there moves with bandwidth.mid;
        # its closest call is NVMe Gen4 per layer chunk in a batch, 17.9229 ms / (160 x 92 us + 748.98 us) = 1.1586
        "| tiers that fetch faster than a lone block regenerates, one copy | 10 of 10 | 10 of 10 | unchanged |",
        "| tiers that fetch faster than a block regenerates in a batch, one copy | 10 of 10 | 10 of 10 | unchanged |",
        "| tiers that fetch faster than a lone block regenerates, a copy per layer chunk | 10 of 10 | 10 of 10 |"
        " unchanged |",
        "| tiers that fetch faster than a block regenerates in a batch, a copy per layer chunk | 10 of 10 | 10 of 10 |"
        " unchanged |",
        "| closest call: the tier | nvme-gen4-x4 | nvme-gen4-x4 | unchanged |",
        "| closest call: regeneration / fetch | 1.1586 | 1.1586 | unchanged |",
        # the trace pages' Llama-3.1-70B on 4 H100s: its KV per token is Llama-3-70B's, so the tier's bytes are
        # the chapter's (31,589 blocks x 512 tokens x 327,680 B = 4,935.8 GiB); its saving is the named table's
        # H100 row (12.92 accelerators' prefill on the kernel tables, 11.215 USD/h, test_agreement)
        "| LRU host-DRAM tier for 90 % of the achievable hits, the trace pages' deployment (GiB) | 4,935.8 | 4,935.8 |"
        " unchanged |",
        "| its net saving against recomputing in a batch, the trace pages' deployment (USD/h) | 11.215 | 11.215 |"
        " unchanged |",
        # 17.92285 ms / 81.92 µs = 218.784816 -> / 52.4288 µs = 341.851275, x 100/64 = +56.25 %
        "| ratio, regeneration / fetch (compute-only regeneration: the chapter's in-batch model)"
        " | 218.78 | 341.85 | +56.25% |",
        "| ratio within the chapter's two to three orders of magnitude | yes | yes | unchanged |",
        # the mid row's 109.4 / 136.8 / 218.8 -> 170.9 / 213.7 / 341.9 stay in 100..1000; the two
        # pessimistic-bandwidth rows below 100x (54.7, 68.4) are untouched
        "| bracket combinations within the chapter's claim | 7 of 9 | 7 of 9 | unchanged |",
        # lone block: 140e9 B / (3.35e12 B/s x 80 %) = 52.24 ms; / 81.92 µs = 637.7 -> / 52.4288 µs = 996.4
        "| ratio, regeneration / fetch (lone block: roofline on the set's device) | 637.68 | 996.38 | +56.25% |",
        # 319 / 638 / 1,206 -> the mid row's 996.4 is still below 1000x
        "| bracket combinations within the chapter's claim, lone block | 6 of 9 | 6 of 9 | unchanged |",
        # the Monte Carlo draws its own bandwidth range, not the brackets
        "| Monte Carlo draws below 100x (%) | 51.62 | 51.62 | unchanged |",
        "| Monte Carlo draws below 100x, lone block (%) | 0 | 0 | unchanged |",
        "| Monte Carlo draws above 1000x (%) | 0 | 0 | unchanged |",
        # fetch = regeneration: 5,242,880 B / 17.9229 ms (tail block, attention included) = 0.2925 GB/s,
        # whatever the link
        "| break-even bandwidth, tail block (GB/s) | 0.29252 | 0.29252 | unchanged |",
        "| fetch (µs) | 81.92 | 52.429 | -36.00% |",  # 5,242,880 B / 64e9 -> / 100e9 B/s
        "| regeneration, compute only (ms) | 17.923 | 17.923 | unchanged |",  # 2.24e12 FLOP / (0.25 x 500e12)
        # memory-bound: 140e9 B of weights / (3.35e12 B/s x 80 %) = 52.24 ms
        "| regeneration of a lone block under the roofline (ms) | 52.239 | 52.239 | unchanged |",
        "",
    ]
    # Then one line per table. The 165 numbers of test_unaffected_tables_report_nothing less value_si
    # (an SI duplicate of `value`) = 164; 5 text cells (fetch basis and hardware; assumptions value, basis,
    # source).
    assert lines[25:42] == [
        "**164 numbers changed, 5 text cells changed in 12 tables**",
        "",
        "| table | cells changed | largest relative change |",
        "|:--|:--|:--|",
        "| assumptions | 3: 3 text cells changed | — |",
        "| capacity | 12 | +56.25% (last_block_in_batch_ratio at point=context=1024) |",
        # the fleet priced: least-loaded's tier per instance fetches its hits faster (and, routed otherwise, fewer)
        "| cost_fleet | 19 | -34.72% (fetch_usd_per_h at tier=per instance, routing=least-loaded) |",
        "| fetch | 4: 2 numbers changed, 2 text cells changed | +56.25% (bandwidth_GBps at bracket=mid) |",
        "| interior | 24 | +56.25% (ratio_to_fetch at upstream=resident, position_tokens=0) |",
        "| models | 10 | +56.25% (ratio_illustrative at model=llama-2-7b) |",
        "| ratio | 18 | +56.25% (bandwidth_GBps at bandwidth_bracket=mid, mfu_bracket=optimistic) |",
        # the serving page's placements, of the trace pages' deployment: vLLM's batched copy costs 3.53 us a copy
        # beside the bytes at the mid bracket. Llama-3.1-70B at TP 1, two sharing the link: 10,485,760 B / 64 GB/s
        # + 3.53 us = 167.37 us -> / 100 GB/s = 108.3876 us, ratio x 1.5442; DeepSeek-V3 at TP 8, 61 copies:
        # 2,248,704 B / 64 GB/s + 61 x 3.53 us = 250.466 us -> 237.817 us, x 1.0532
        "| serving_moe | 15 | +5.32% (lone_ratio at tp=8, pp=1, ep=1) |",
        "| serving_placement | 12 | +54.42% (lone_ratio at tp=1) |",
        "| tiers | 20 | +56.25% (bandwidth_GBps at link=bracket mid) |",
        "| tornado | 16 | +56.25% (ratio_at_low at input=mfu) |",
        # the fleet: prefix routing's busiest instance prefills 1.0759 -> 1.1327 times the mean (the CSV)
        "| workload_fleet | 16 | +5.28% (busiest_prefill_x at trace=conversation, tier=per instance, routing=prefix) |",
        "",
    ]
    # Then every cell, folded: 164 + 5 = 169 rows at display precision.
    assert lines[42] == (
        "<details><summary>All 169 changed cells, numbers to 5 significant figures;"
        " 1 cell of SI duplicate columns (value_si) left out</summary>"
    )
    assert lines[43:46] == ["", "| table | row | column | old | new | change |", "|:--|:--|:--|--:|--:|--:|"]
    assert lines[-2:] == ["", "</details>"] and len(lines) == 46 + 169 + 2
    assert "| fetch | bracket=mid | fetch_us | 81.92 | 52.429 | -36.00% |" in lines
    assert "| assumptions | key=bandwidth.mid | value | 64 GB/s | 100 GB/s | text |" in lines
    assert not [line for line in lines if "| value_si |" in line or "64000000000" in line]


def test_markdown_numbers_only(seed_dir: Path, fast_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(str(seed_dir), str(fast_dir), "--format", "md", "--numbers-only") == 1
    lines = capsys.readouterr().out.splitlines()
    assert "**164 numbers changed in 11 tables**" in lines  # the assumptions table had only value_si left
    assert not [line for line in lines if line.endswith("| text |")]


# ---------------------------------------------------------------------------
# rows, columns and tables added or removed
# ---------------------------------------------------------------------------


def test_added_and_removed_rows(seed_dir: Path, moved_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # interior.position = 20,000 is not one of the fixed positions (0, 1e3, 1e4, 5e4, 1e5, 1e6), so the
    # interior table gains a row per upstream case; 50,000 is in the fixed grid, so none is lost.
    changes = diff_tables(load_tables(str(seed_dir)), load_tables(str(moved_dir)))
    interior = [c for c in changes if c.table == "interior"]
    assert {c.row for c in interior} == {
        "upstream=resident, position_tokens=20000",
        "upstream=evicted, position_tokens=20000",
    }
    assert all(c.old == ABSENT and c.kind == "cell added" and c.rel_change is None for c in interior)
    assert [c.column for c in interior[:7]] == [
        "regen_TFLOP",
        "regen_ms",
        "ratio_to_fetch",
        "lone_regen_ms",
        "lone_bound",
        "lone_ratio_to_fetch",
        "provenance",
    ]
    # Resident upstream: the block's 2.24e12 parameter FLOPs + attention over 20,000 cached positions;
    # new cells are the exact CSV text.
    cells = by_cell(changes)
    assert cells[("interior", "upstream=resident, position_tokens=20000", "regen_TFLOP")].new == "3.079217316"
    # The removed side: the same rows, reported as removed, after the new table's rows.
    back = diff_tables(load_tables(str(moved_dir)), load_tables(str(seed_dir)))
    removed = [c for c in back if c.table == "interior"]
    assert all(c.new == ABSENT and c.kind == "cell removed" for c in removed) and len(removed) == 14
    assert cli(str(seed_dir), str(moved_dir), "--format", "md") == 1
    lines = capsys.readouterr().out.splitlines()
    # the tiers table's resident and evicted ratios of its 14 links in both regimes (56 numbers; assumptions'
    # value_si, an SI duplicate of its value, is left out of the Markdown form), and the named deployments' split
    # of the reused prefix, now 20,000 tokens within their 131,072-token windows (the build's stays capped at
    # 8,176 by Llama-3-70B's window): 4 prefixes and 4 largest gains, and 2 rows' tiers the split wins from
    assert "**64 numbers changed, 5 text cells changed, 2 rows added in 4 tables**" in lines
    assert "| interior | 14: 2 rows added | — |" in lines


def test_git_revisions(
    git_repo: Path, seed_dir: Path, fast_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from_git = diff_tables(load_tables("HEAD~1", git_repo), load_tables("HEAD", git_repo))
    from_dirs = diff_tables(load_tables(str(seed_dir)), load_tables(str(fast_dir)))
    assert from_git == from_dirs and len(from_git) == 170
    assert cli("HEAD~1", "HEAD", "--repo", str(git_repo)) == 1
    assert "-36.00%" in capsys.readouterr().out
    # Default repository: the one holding the current directory (here from a subdirectory).
    monkeypatch.chdir(git_repo / "book")
    assert cli("HEAD", "HEAD") == 0
    assert capsys.readouterr().out == ""
    # A directory and a revision mix.
    assert cli(str(fast_dir), "HEAD") == 0


def test_numbers_only(seed_dir: Path, fast_dir: Path, capsys) -> None:
    parser = argparse.ArgumentParser()
    diff_command.add_parser(parser.add_subparsers())
    args = parser.parse_args(["diff", str(seed_dir), str(fast_dir), "--numbers-only"])
    assert args.func(args) == 1
    lines = capsys.readouterr().out.splitlines()
    # header and rule, then the 165 numeric changes only (the 5 text cells are left out)
    assert len(lines) == 2 + 165 and not any(line.rstrip().endswith("text") for line in lines)


def test_bad_sources(tmp_path: Path, git_repo: Path, seed_dir: Path) -> None:
    with pytest.raises(KvtierError, match=r"^no-such-thing: not a directory of tables nor a git revision"):
        load_tables("no-such-thing", git_repo)
    with pytest.raises(KvtierError, match=r"^v9: not a directory of tables nor a git revision"):
        cli(str(seed_dir), "v9", "--repo", str(git_repo))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(KvtierError, match=r"empty: no tables \(\*\.csv\)"):
        load_tables(str(empty))
    not_repo = tmp_path / "plain"
    not_repo.mkdir()
    with pytest.raises(KvtierError, match=r"^HEAD: not a directory of tables nor a git revision"):
        load_tables("HEAD", not_repo)
    # A revision without book/tables/.
    empty_tree = git(git_repo, "mktree")
    git(git_repo, "tag", "bare", git(git_repo, "commit-tree", "-m", "no tables", empty_tree))
    with pytest.raises(KvtierError, match=r"^bare: no tables \(book/tables/\*\.csv\) at commit"):
        load_tables("bare", git_repo)
