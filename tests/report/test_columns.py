"""Column specs: each table of record declares its columns' words and units where it builds them."""

from __future__ import annotations

import copy
import re

import pandas as pd
import pytest

from kvtier.inputs.assumptions import load_assumptions
from kvtier.report import notebook, pages
from kvtier.report.columns import Column, column_of, declare, declared, phrase, soft_hyphenated, twins
from kvtier.report.pages import answer, ratio, tiers
from kvtier.report.pages.measured import fetch as measured_fetch
from kvtier.report.tables import formatted, unit_in_cells
from kvtier.scenario import Scenario
from tests.conftest import MEASURED_SET, ROOT


@pytest.fixture(scope="module", params=["seed", "measured"])
def tables(request) -> dict[str, pd.DataFrame]:
    """Every table of record as its builder returns it, under the seed set and under the measured set."""
    s = Scenario() if request.param == "seed" else Scenario(load_assumptions(MEASURED_SET))
    return {table.name: table.build(s) for table in pages.TABLES}


@pytest.fixture(scope="module")
def seed_tables() -> dict[str, pd.DataFrame]:
    s = Scenario()
    return {table.name: table.build(s) for table in pages.TABLES}


def test_every_column_of_every_table_of_record_is_declared_in_words(tables):
    # 46, the measured page's engine measurements, their groups (inside and past the kernel tables' grid), forms,
    # peers' form and the stack against vLLM's kernels, the workload page's Mooncake figures, and the decision
    # page's named deployments and the inputs it tries (decision_named, decision_flip_inputs): 52 + 2, and the split
    # page's prefix ladder, its trace percentiles, its hidden-state restore and the papers' setups (split_grid,
    # split_ttft, split_hidden, split_papers), and the decision's split per tier (decision_split): 60; the workload
    # page's admission filters and TTLs (workload_admission) and the cost page's fleet priced (cost_fleet): 62
    assert len(tables) == len(pages.TABLES) == 62
    for name, df in tables.items():
        assert list(declared(df)) and set(declared(df)) == set(df.columns), name
        for column in df.columns:
            shown = column_of(df, column).header()
            assert "_" not in shown and not re.search(r"\b(us|GBps|pct|TFLOPps)\b", shown), (name, column, shown)


def test_the_declared_columns_are_the_committed_tables_columns(seed_tables):
    paths = sorted((ROOT / "book" / "tables").glob("*.csv"))
    assert [p.stem for p in paths] == sorted(seed_tables)
    for path in paths:
        df = seed_tables[path.stem]
        assert list(pd.read_csv(path, nrows=0).columns) == list(df.columns), path.name
        assert set(declared(df)) == set(df.columns), path.name


@pytest.mark.parametrize(
    ("table", "name", "text"),
    [
        ("fetch", "fetch_us", "fetch time (µs)"),  # µs, not "us"
        ("fetch", "bandwidth_GBps", "bandwidth (GB/s)"),
        ("ratio", "mfu_pct", "MFU (%)"),
        ("ratio", "lone_regen_ms", "regeneration time, lone block (ms)"),
        ("tiers", "fetch_us_per_layer", "fetch time, per-layer transfers (µs)"),  # the layout after the regime
        ("tiers", "lone_break_even_tail_GBps_contiguous", "break-even bandwidth, lone block, contiguous (GB/s)"),
        ("tiers", "break_even_latency_tail_us_per_layer", "break-even latency, in a batch, per-layer transfers (µs)"),
        ("cost_lru", "recompute_avoided_batch_usd_per_h", "recompute avoided, in a batch (USD/h)"),
        ("capacity", "last_block_in_batch_ms", "regeneration time of the last block, in a batch (ms)"),
        ("cost_intervals", "keep_J_small_lone_h", "worth keeping by energy, small block, lone block (h)"),
        ("cost_mix", "share_nvme_pct", "served by NVMe (%)"),
        ("roofline", "compute_bound_batch_tokens", "smallest compute-bound batch (tokens)"),  # "batch" is no regime
        ("models", "kv_KiB_per_token", "KV cache (KiB/token)"),
        ("serving_engines", "fetch_per_token_us.pcie5-x16", "fetch per token, pcie5-x16 (µs)"),  # one per link
        ("workload_tiers", "capacity_TiB", "capacity (TiB)"),  # the workload page's words for its columns
        ("workload_tiers", "hit_blocks_pct", "hits (% of blocks)"),
        ("decision", "tier", "tier"),
        # a ratio, a source and a count, which the old parser gave the units J, tokens and %
        ("cost_tornado", "swing_J", "swing, by energy"),
        ("serving_engines", "source.block_tokens", "source of the block size"),
        ("measured_validation_summary", "within_10_pct", "points within 10 %"),
    ],
)
def test_a_header_is_the_declared_words_with_the_unit(seed_tables, table, name, text):
    assert column_of(seed_tables[table], name).header() == text


def test_a_header_names_the_regime_its_column_is_in(seed_tables):
    # the ratio table has regen_ms and lone_regen_ms: the unprefixed one is the in-batch regeneration
    assert column_of(seed_tables["ratio"], "regen_ms").header() == "regeneration time, in a batch (ms)"
    assert column_of(seed_tables["tiers"], "break_even_tail_GBps").header() == "break-even bandwidth, in a batch (GB/s)"
    # the decision table names each row's regime in a column: its regeneration claims none
    assert column_of(seed_tables["decision"], "regen_ms").header() == "regeneration time (ms)"
    assert twins("regen_ms", "regeneration time", "ms") == (
        Column("regen_ms", "regeneration time, in a batch", "ms"),
        Column("lone_regen_ms", "regeneration time, lone block", "ms"),
    )
    assert phrase("break-even bandwidth", "", "contiguous") == "break-even bandwidth, contiguous"


def test_a_time_column_shown_with_a_unit_per_cell_has_none_in_its_header(seed_tables):
    # the interior table's regeneration reaches hours deep in a long sequence: each cell carries its unit
    df = seed_tables["interior"]
    assert unit_in_cells(df, "regen_ms") and unit_in_cells(df, "lone_regen_ms")
    assert column_of(df, "regen_ms").header(unit=False) == "regeneration time, in a batch"
    html = notebook.show_table(df, "interior").data
    assert 'title="regen_ms">regen\u00aderation time, in a batch</th>' in html
    assert 'title="regen_TFLOP">regen\u00aderation work (TFLOP)</th>' in html  # not a time: keeps its unit


def test_booleans_show_the_words_their_column_declares():
    def spec(columns: tuple[Column, ...], name: str) -> Column:
        return next(c for c in columns if c.name == name)

    df = declare(
        pd.DataFrame(
            {
                "fetch_wins": [True, False],
                "lone_fetch_wins_tail_per_layer": [False, True],
                "within_claim": [True, False],
                "in_fit": [True, None],
            }
        ),
        (
            spec(answer.DECISION_COLUMNS, "fetch_wins"),
            spec(tiers.COLUMNS, "lone_fetch_wins_tail_per_layer"),
            spec(ratio.COLUMNS, "within_claim"),
            spec(measured_fetch.FETCH_COLUMNS, "in_fit"),
        ),
    )
    out = formatted(df)
    assert out["fetch_wins"].tolist() == ["fetch", "regenerate"]
    assert out["lone_fetch_wins_tail_per_layer"].tolist() == ["regenerate", "fetch"]
    assert out["within_claim"].tolist() == ["yes", "no"]
    assert out["in_fit"].tolist() == ["in the fit", "n/a"]


def test_a_column_nobody_declared_is_an_error_not_a_guess():
    df = pd.DataFrame({"fetch_us": [81.92], "regen_ms": [17.92]})
    fetch, regen = Column("fetch_us", "fetch time", "µs"), Column("regen_ms", "regeneration time", "ms")
    with pytest.raises(TypeError, match="not declared: regen_ms;"):
        declare(df.copy(), (fetch,))
    with pytest.raises(TypeError, match="declared but not in the table: ratio;"):
        declare(df.copy(), (fetch, regen, Column("ratio", "regeneration / fetch", "×")))
    with pytest.raises(ValueError, match="declared twice"):
        declare(df.copy(), (fetch, regen, fetch))
    # the renderer refuses a frame whose builder declared nothing, and a column added after it did
    with pytest.raises(TypeError, match="declares none of them"):
        notebook.show_table(df, "fetch")
    with pytest.raises(TypeError, match="declares none of them"):
        formatted(df)
    late = declare(df.copy(), (fetch, regen)).assign(ratio=[218.75])
    with pytest.raises(TypeError, match="'ratio' has no declared label and unit"):
        notebook.table_html(late, ["fetch_us", "ratio"])
    # a label is words, never the identifier again
    with pytest.raises(ValueError, match="must be words"):
        Column("fetch_us", "fetch_us", "µs")
    assert Column("fetch_us", "fetch time", "µs").header(unit=False) == "fetch time"


def test_the_declaration_travels_with_the_rows_and_columns_a_page_selects(seed_tables):
    df = seed_tables["ratio"]
    # the notebooks pass a builder's frame, a selection of its columns, a mask of its rows or its head
    for part in (
        df[["bandwidth_bracket", "ratio"]],
        df[df["within_claim"]],
        df.head(2),
        df.loc[df.index[:2], ["ratio"]].reset_index(drop=True),
        df[lambda d: d["mfu_bracket"] == "typical"],
    ):
        assert column_of(part, "ratio").header() == "regeneration / fetch, in a batch (×)"
    # pandas deep-copies attrs into every derived frame and series: the declaration is immutable, its copy itself
    assert copy.deepcopy(declared(df)) is declared(df)
    # the CSV of record carries none of it
    assert "regeneration" not in df.to_csv(index=False).splitlines()[0]


def test_long_header_words_may_break_without_changing_what_is_read():
    text = soft_hyphenated("regeneration / fetch, contiguous (×)")
    assert text == "regen\u00aderation / fetch, con\u00adtiguous (×)"
    assert text.replace("\u00ad", "") == "regeneration / fetch, contiguous (×)"
