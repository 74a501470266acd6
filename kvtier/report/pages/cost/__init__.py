"""The cost page (``notebooks/13_cost.md``): how long a KV block is worth keeping in each tier.

The five-minute rule for KV caches (:mod:`kvtier.formulas.economics`): a block is worth holding in
a tier while its next use comes sooner than the cost of re-obtaining it (recomputing it,
in either regime, or fetching it from a slower tier) divided by the cost of holding its
bytes there for a second, in dollars and in joules.  Every link preset is a tier; the
medium behind it (HBM, host DRAM, a CXL expander, NVMe flash) sets its holding cost.
With the workload page's trace (:mod:`kvtier.formulas.cache`), each reuse of a block is served the
cheapest way, which gives the GiB each tier must hold at the trace's rate and the mix's
cost per hour against recomputing every reuse, for several models.  A trace with no reuse
has nothing to cache (the mix is empty and costs nothing); one that lasts 0 s has no GiB
held or cost per hour, only costs over the whole trace; the page says which in words.

The arithmetic is the tier-pricing model's (:mod:`kvtier.formulas.tiering`, in SI units, its
inputs gathered by the scenario); this page converts its values to display units, lays them
out in tables and figures and says what they mean.

The page is a package, one module per job: :mod:`.intervals` (the break-even intervals and the
inputs), :mod:`.tornado`, :mod:`.tiers` (LRU tiers), :mod:`.hierarchy` (hierarchies replayed),
:mod:`.mix` (the trace's cheapest mix), :mod:`.figures`, :mod:`.words` (its sentences) and
:mod:`.glue` (every number the prose quotes); this module is the page contract.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kvtier import analysis
from kvtier.inputs.keys import TIER_LATENCY_KEYS, keys_in
from kvtier.report.fleet import fleet_cost_table, shown_fleet_cost
from kvtier.report.pages.cost.figures import interval_figure, mix_figure, tornado_figure
from kvtier.report.pages.cost.glue import numbers
from kvtier.report.pages.cost.hierarchy import hierarchy_table
from kvtier.report.pages.cost.intervals import CXL_TIER, MEDIA, REGIMES, block_table, duration, inputs_table, table
from kvtier.report.pages.cost.mix import mix_table, mix_tornado_table, trace_mixes
from kvtier.report.pages.cost.tiers import LRU_TARGETS, lru_table
from kvtier.report.pages.cost.tornado import tornado_table
from kvtier.scenario import ENGINE_KEYS, Scenario

NOTEBOOK = "13_cost"
"""The page's text notebook, ``notebooks/NOTEBOOK.md``."""

TITLE = "what it costs"
"""The page's name as another page writes it mid-sentence (the registry's ``Page.title``)."""

SCENARIO = analysis.priced
"""The page presents the trace priced for ``workload.deployment`` (a named deployment, or the build's set)."""


KEYS: tuple[str, ...] = tuple(
    dict.fromkeys(
        (
            *keys_in("price", "trace", "placement", "forward", "transfer", "fleet"),
            *TIER_LATENCY_KEYS,
            "block_tokens",
            "decision.hit_target",
            "workload.deployment",  # SCENARIO: the deployment the trace is priced for
            "engine",
            "fetch_layout",
            "flops_per_param_token",
            "illustrative.mfu",
            "illustrative.bandwidth",  # the fleet: each instance's tier read at this bracket
            "bandwidth.optimistic",
            "bandwidth.mid",
            "bandwidth.pessimistic",
            "interior.anchor_every",
            "kv_dtype",
            "mfu.conservative",
            "mfu.optimistic",
            "mfu.typical",
            "model",
            "param_count",
            "peak_flops",
            "reference.h200_forward16_energy",
            "weight_dtype",
            *ENGINE_KEYS,
        )
    )
)
"""The assumption keys the page reads; its notebook's ``parameters`` cell declares exactly these."""


TABLES = (
    ("cost_inputs", inputs_table, ("input",), ("input", "value", "low", "high", "provenance", "what")),
    (
        "cost_intervals",
        table,
        ("tier",),
        (
            "tier",
            "hold_usd_per_TB_month",
            "fetch_us",
            "keep_usd_small_lone_h",
            "keep_usd_small_batch_h",
            "keep_usd_large_lone_h",
            "keep_J_small_lone_h",
            "keep_J_small_batch_h",
            "hbm_over_tier_small_s",
        ),
    ),
    ("cost_blocks", block_table, ("block_tokens", "regime")),
    (
        "cost_tornado",
        tornado_table,
        ("input",),
        (
            "input",
            "keep_usd_at_low_h",
            "keep_usd_at_high_h",
            "swing_usd",
            "keep_J_at_low_h",
            "keep_J_at_high_h",
            "swing_J",
        ),
    ),
    (
        "cost_lru",
        lru_table,
        ("target", "tier"),
        (
            "target",
            "tier",
            "capacity_GiB",
            "hold_usd_per_h",
            "fetch_usd_per_h",
            "saved_batch_usd_per_h",
            "saved_lone_usd_per_h",
            "read_busy_pct",
            "write_busy_pct",
            "nvme_wear_pct",
        ),
    ),
    (
        "cost_hierarchy",
        hierarchy_table,
        ("hierarchy", "mode", "tier"),
        (
            "hierarchy",
            "mode",
            "tier",
            "per_accelerator_GiB",
            "hit_blocks_pct",
            "write_GBps",
            "drive_writes_per_day",
            "hierarchy_usd_per_h",
        ),
    ),
    ("cost_fleet", fleet_cost_table, ("tier", "routing")),
    (
        "cost_mix",
        mix_table,
        ("model", "regime", "ladder"),
        (
            "model",
            "regime",
            "ladder",
            "dram_GiB",
            "dram_peak_GiB",
            "cxl_GiB",
            "nvme_GiB",
            "nvme_peak_GiB",
            "mix_usd_per_h",
            "recompute_all_usd_per_h",
            "saving_pct",
        ),
    ),
    (
        "cost_mix_tornado",
        mix_tornado_table,
        ("input",),
        (
            "input",
            "mix_usd_per_h_at_low",
            "mix_usd_per_h_at_high",
            "swing",
            "largest_tier_at_low",
            "largest_tier_at_high",
        ),
    ),
)
"""The page's tables of record: (name, builder, key columns)."""


FIGURES: tuple[tuple[str, Callable[[Scenario], tuple[Any, str]]], ...] = (
    ("fig_cost_intervals", interval_figure),
    ("fig_cost_mix", mix_figure),
    ("fig_cost_tornado", tornado_figure),
)
"""The page's figures: (glue name, function returning the figure and its caption)."""

__all__ = [
    "CXL_TIER",
    "FIGURES",
    "KEYS",
    "LRU_TARGETS",
    "MEDIA",
    "NOTEBOOK",
    "REGIMES",
    "TABLES",
    "TITLE",
    "block_table",
    "duration",
    "fleet_cost_table",
    "hierarchy_table",
    "inputs_table",
    "interval_figure",
    "lru_table",
    "mix_figure",
    "mix_table",
    "mix_tornado_table",
    "numbers",
    "shown_fleet_cost",
    "table",
    "tornado_figure",
    "tornado_table",
    "trace_mixes",
]
