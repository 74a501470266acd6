"""Column headers and boolean words: a table's identifiers shown as words with units."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from kvtier.report.headers import header, soft_hyphenated
from kvtier.report.tables import formatted
from tests.conftest import ROOT


def test_booleans_show_words_that_say_what_they_mean():
    df = pd.DataFrame(
        {
            "fetch_wins": [True, False],
            "lone_fetch_wins_tail_per_layer": [False, True],
            "within_claim": [True, False],
            "in_fit": [True, None],
        }
    )
    out = formatted(df)
    assert out["fetch_wins"].tolist() == ["fetch", "regenerate"]
    assert out["lone_fetch_wins_tail_per_layer"].tolist() == ["regenerate", "fetch"]  # regime and layout stripped
    assert out["within_claim"].tolist() == ["yes", "no"]
    assert out["in_fit"].tolist() == ["in the fit", "n/a"]


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("fetch_us", "fetch time (µs)"),  # µs, not "us"
        ("bandwidth_GBps", "bandwidth (GB/s)"),
        ("mfu_pct", "MFU (%)"),
        ("lone_regen_ms", "regeneration time, lone block (ms)"),
        ("fetch_us_per_layer", "fetch time, per-layer transfers (µs)"),  # the layout after the unit in the name
        ("lone_break_even_tail_GBps_contiguous", "break-even bandwidth, lone block, contiguous (GB/s)"),
        ("recompute_avoided_batch_usd_per_h", "recompute avoided, in a batch (USD/h)"),
        ("last_block_in_batch_ms", "regeneration time of the last block, in a batch (ms)"),
        ("keep_J_small_lone_h", "worth keeping by energy, small block, lone block (h)"),
        ("share_nvme_pct", "served by NVMe (%)"),
        ("compute_bound_batch_tokens", "smallest compute-bound batch (tokens)"),  # an override: "batch" is no regime
        ("tier", "tier"),
        ("capacity (TiB)", "capacity (TiB)"),  # a page's display name is already words
    ],
)
def test_a_header_is_words_with_the_unit(name, text):
    assert header(name) == text


def test_a_name_whose_lone_twin_is_in_the_table_names_the_batch_regime():
    # the ratio table has regen_ms and lone_regen_ms: the unprefixed one is the in-batch regeneration
    assert header("regen_ms", ["regen_ms", "lone_regen_ms"]) == "regeneration time, in a batch (ms)"
    assert header("break_even_tail_GBps", ["lone_break_even_tail_GBps"]) == "break-even bandwidth, in a batch (GB/s)"
    assert header("regen_ms", ["regen_ms"]) == "regeneration time (ms)"  # no twin: no regime claimed
    # a time column shown with a unit per cell has lost its suffix; its header has no unit
    assert header("regen", ["regen", "lone_regen"], unit=False) == "regeneration time, in a batch"


def test_no_column_of_any_table_of_record_reads_as_an_identifier():
    for path in sorted((ROOT / "book" / "tables").glob("*.csv")):
        columns = list(pd.read_csv(path, nrows=0).columns)
        for column in columns:
            shown = header(column, columns)
            assert "_" not in shown and not re.search(r"\b(us|GBps|pct|TFLOPps)\b", shown), (path.name, column, shown)


def test_long_header_words_may_break_without_changing_what_is_read():
    text = soft_hyphenated("regeneration / fetch, contiguous (×)")
    assert text == "regen\u00aderation / fetch, con\u00adtiguous (×)"
    assert text.replace("\u00ad", "") == "regeneration / fetch, contiguous (×)"
