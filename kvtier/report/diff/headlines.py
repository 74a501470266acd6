"""The headline numbers a reviewer decides on, and where each is found in a set of tables of record."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from kvtier.report.diff.loading import CsvTable

ILLUSTRATIVE = ("ratio", (("illustrative", "True"),))
"""The illustrative point: the row of ``ratio.csv`` marked illustrative.  A headline's row
condition may name its brackets, ``{bandwidth_bracket}`` or ``{mfu_bracket}``, filled from
this row on the same side."""


@dataclass(frozen=True)
class Headline:
    """A headline number: ``column`` of the first row of ``table`` that meets every ``row`` condition.

    ``row`` holds (column, value) pairs.  With ``count`` set, the value is instead how many
    of the rows meeting ``row`` have ``count`` in ``column``, as ``"k of n"``.  ``shown``
    maps a cell's text to what the comment shows.  A headline that neither side's tables
    have (no such table, column or row) is left out.
    """

    label: str
    table: str
    row: tuple[tuple[str, str], ...]
    column: str
    shown: tuple[tuple[str, str], ...] = ()
    count: str | None = None


_AT_POINT = ILLUSTRATIVE[1]
_ROOFLINE_AT_POINT = (("device", "this assumption set"), ("mfu_bracket", "{mfu_bracket}"))

HEADLINES: tuple[Headline, ...] = (
    # The deployment every number below assumes: the model placed across accelerators (assumptions.csv's
    # parallel.* rows; tables of record older than the placement keys have none, and those lines are left out).
    Headline("deployment: tensor-parallel size (parallel.tp)", "assumptions", (("key", "parallel.tp"),), "value"),
    Headline("deployment: pipeline-parallel size (parallel.pp)", "assumptions", (("key", "parallel.pp"),), "value"),
    Headline("deployment: expert-parallel size (parallel.ep)", "assumptions", (("key", "parallel.ep"),), "value"),
    Headline("deployment: accelerators sharing one link (parallel.gpus_per_link)", "assumptions",
             (("key", "parallel.gpus_per_link"),), "value"),
    Headline("deployment: the one the trace pages price (workload.deployment)", "assumptions",
             (("key", "workload.deployment"),), "value"),
    # The decision (the landing page): how many tiers fetch faster, in each regime and layout, and the closest call.
    Headline("tiers that fetch faster than a lone block regenerates, one copy", "decision",
             (("regime", "lone block"), ("layout", "contiguous")), "fetch_wins", count="True"),
    Headline("tiers that fetch faster than a block regenerates in a batch, one copy", "decision",
             (("regime", "in batch"), ("layout", "contiguous")), "fetch_wins", count="True"),
    Headline("tiers that fetch faster than a lone block regenerates, a copy per layer chunk", "decision",
             (("regime", "lone block"), ("layout", "per-layer")), "fetch_wins", count="True"),
    Headline("tiers that fetch faster than a block regenerates in a batch, a copy per layer chunk", "decision",
             (("regime", "in batch"), ("layout", "per-layer")), "fetch_wins", count="True"),
    Headline("closest call: the tier", "decision_margins", (), "tier"),
    Headline("closest call: regeneration / fetch", "decision_margins", (), "ratio"),
    # the trace pages' tier and money: for the deployment they price (workload.deployment)
    Headline("LRU host-DRAM tier for 90 % of the achievable hits, the trace pages' deployment (GiB)", "cost_lru",
             (("target", "90%"), ("tier", "pcie5-x16")), "capacity_GiB"),
    Headline("its net saving against recomputing in a batch, the trace pages' deployment (USD/h)", "cost_lru",
             (("target", "90%"), ("tier", "pcie5-x16")), "saved_batch_usd_per_h"),
    # The ratio for each regeneration regime: ratio.csv carries the chapter's compute-only (in-batch)
    # regime in `ratio` and the lone block's roofline regime in `lone_ratio`; roofline.csv's lone-block
    # regeneration time is shown below, beside the compute-only time.
    Headline("ratio, regeneration / fetch (compute-only regeneration: the chapter's in-batch model)", "ratio",
             _AT_POINT, "ratio"),
    # The verdict on the source chapter's "two to three orders of magnitude" (100x to 1000x).
    Headline("ratio within the chapter's two to three orders of magnitude", "ratio", _AT_POINT, "within_claim",
             shown=(("True", "yes"), ("False", "no"))),
    Headline("bracket combinations within the chapter's claim", "ratio", (), "within_claim", count="True"),
    # the lone-block regime: the block's tokens are the whole forward pass (roofline on the set's device)
    Headline("ratio, regeneration / fetch (lone block: roofline on the set's device)", "ratio", _AT_POINT,
             "lone_ratio"),
    Headline("bracket combinations within the chapter's claim, lone block", "ratio", (), "lone_within_claim",
             count="True"),
    Headline("Monte Carlo draws below 100x (%)", "uncertainty", (("statistic", "below_100x"),), "value"),
    Headline("Monte Carlo draws below 100x, lone block (%)", "uncertainty",
             (("statistic", "lone_block_below_100x"),), "value"),
    Headline("Monte Carlo draws above 1000x (%)", "uncertainty", (("statistic", "above_1000x"),), "value"),
    Headline("break-even bandwidth, tail block (GB/s)", "tiers", (("link", "bracket {bandwidth_bracket}"),),
             "break_even_tail_GBps"),
    Headline("fetch (µs)", "ratio", _AT_POINT, "fetch_us"),
    Headline("regeneration, compute only (ms)", "ratio", _AT_POINT, "regen_ms"),
    Headline("regeneration of a lone block under the roofline (ms)", "roofline", _ROOFLINE_AT_POINT,
             "lone_block_ms"),
)  # fmt: skip
"""What a reviewer decides on, in the order the comment shows it; single cells are at the illustrative point."""


def _rows_by_column(table: CsvTable) -> Iterator[dict[str, str]]:
    """The rows of ``table``, each as a mapping of its columns to its cells."""
    for row in table.rows:
        yield dict(zip(table.header, row, strict=True))


def first_row(table: CsvTable | None, conditions: Sequence[tuple[str, str]]) -> dict[str, str] | None:
    """The first row of ``table`` that meets every ``(column, value)`` of ``conditions``, or None."""
    if table is None or any(c not in table.header for c, _ in conditions):
        return None
    return next((r for r in _rows_by_column(table) if all(r[c] == v for c, v in conditions)), None)


def headline_value(tables: Mapping[str, CsvTable], headline: Headline) -> str | None:
    """The text of ``headline``'s cell in ``tables``, or None when they do not have it."""
    point = first_row(tables.get(ILLUSTRATIVE[0]), ILLUSTRATIVE[1]) or {}
    try:
        conditions = [(c, v.format_map(point)) for c, v in headline.row]
    except KeyError:  # the condition names the illustrative point, and there is none
        return None
    table = tables.get(headline.table)
    if table is None or any(c not in table.header for c, _ in [*conditions, (headline.column, "")]):
        return None
    rows = [r for r in _rows_by_column(table) if all(r[c] == v for c, v in conditions)]
    if headline.count is not None:
        return f"{sum(r[headline.column] == headline.count for r in rows)} of {len(rows)}" if rows else None
    return rows[0][headline.column] if rows else None
