"""The workload page (``notebooks/12_workload.md``): how big a tier a real serving trace needs, and what it saves.

The page is a package, one module per job: :mod:`.summary` (the sized trace and its contrast,
reported and summarised once), :mod:`.curve` (the LRU curve, its tiers and links), :mod:`.policies`,
:mod:`.fleet` (the tier split over a fleet's instances under each router, against one pooled tier),
:mod:`.admission` (the tier by what it admits and how long it keeps a block),
:mod:`.sampling`, :mod:`.over_time`, :mod:`.mooncake` (the traces' published cache figures, recomputed),
:mod:`.words` (its sentences) and :mod:`.glue` (every number the
prose quotes); this module is the page contract.
"""

from __future__ import annotations

from kvtier import analysis
from kvtier.inputs.keys import TIER_LATENCY_KEYS, keys_in
from kvtier.report.pages.workload.admission import admission_table, shown_admission
from kvtier.report.pages.workload.curve import (
    links_table,
    lru_curve,
    reuse_intervals,
    shown_links,
    shown_tiers,
    tiers_table,
)
from kvtier.report.pages.workload.fleet import fleet_table, shown_fleet
from kvtier.report.pages.workload.glue import numbers
from kvtier.report.pages.workload.mooncake import mooncake_table
from kvtier.report.pages.workload.over_time import over_time_figure, windows_table
from kvtier.report.pages.workload.policies import policies_figure, policies_table
from kvtier.report.pages.workload.sampling import sampled_figure, sampling_table
from kvtier.report.pages.workload.summary import contrast_name, report, trace_name, traces_table
from kvtier.scenario import ENGINE_KEYS, FORWARD_KEYS, PLACEMENT_KEYS, TRANSFER_KEYS

NOTEBOOK = "12_workload"
"""The page's text notebook, ``notebooks/NOTEBOOK.md``."""

TITLE = "the workload"
"""The page's name as another page writes it mid-sentence (the registry's ``Page.title``)."""

SCENARIO = analysis.priced
"""The page presents the trace priced for ``workload.deployment`` (a named deployment, or the build's set)."""


KEYS: tuple[str, ...] = tuple(
    dict.fromkeys(
        (
            "block_tokens",  # the serving engine's block: a hit prefix is fetched in its blocks (RegenCosts.fetch_s)
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
            "kv_dtype",
            "mfu.conservative",
            "mfu.optimistic",
            "mfu.typical",
            "model",
            "param_count",
            "peak_flops",
            *FORWARD_KEYS,
            "weight_dtype",
            *keys_in("trace"),
            *keys_in("fleet"),
            *keys_in("price"),  # admission: the five-minute rule's residencies as TTLs, the NVMe drives it wears
            *TIER_LATENCY_KEYS,
            *PLACEMENT_KEYS,
            *TRANSFER_KEYS,
            *ENGINE_KEYS,
        )
    )
)
"""The assumption keys the page reads; its notebook's ``parameters`` cell declares exactly these."""


TABLES = (
    ("workload_traces", traces_table, ("trace",)),
    ("workload_tiers", tiers_table, ("trace", "target")),
    ("workload_links", links_table, ("trace", "target", "link")),
    (
        "workload_policies",
        policies_table,
        ("trace", "capacity_blocks"),
        (
            "capacity_GiB",
            "decision",
            "lru_hit_pct",
            "leaf_lru_hit_pct",
            "s3fifo_hit_pct",
            "s3fifo_prefix_hit_pct",
            "sieve_hit_pct",
            "min_hit_pct",
            "min_prefix_hit_pct",
            "lru_of_min_pct",
        ),
    ),
    ("workload_fleet", fleet_table, ("trace", "tier", "routing")),
    ("workload_admission", admission_table, ("trace", "filter")),
    (
        "workload_sampling",
        sampling_table,
        ("trace", "sample_rate_pct"),
        (
            "trace",
            "sample_rate_pct",
            "sampled_references",
            "mean_abs_error_pts",
            "max_abs_error_pts",
            "capacity_error_pct",
            "saving_error_pct",
            "reuse_interval_error_pct",
        ),
    ),
    ("workload_windows", windows_table, ("window_min", "warmup_min")),
    ("workload_mooncake", mooncake_table, ("trace", "quantity")),
)
"""The page's tables of record: (name, builder, key columns)."""


FIGURES = (
    ("fig_workload_lru", lru_curve),
    ("fig_workload_reuse", reuse_intervals),
    ("fig_workload_policies", policies_figure),
    ("fig_workload_sampled", sampled_figure),
    ("fig_workload_over_time", over_time_figure),
)
"""The page's figures: (glue name, function returning the figure and its caption)."""

__all__ = [
    "FIGURES",
    "KEYS",
    "NOTEBOOK",
    "TABLES",
    "TITLE",
    "admission_table",
    "contrast_name",
    "fleet_table",
    "links_table",
    "lru_curve",
    "mooncake_table",
    "numbers",
    "over_time_figure",
    "policies_figure",
    "policies_table",
    "report",
    "reuse_intervals",
    "sampled_figure",
    "sampling_table",
    "shown_admission",
    "shown_fleet",
    "shown_links",
    "shown_tiers",
    "tiers_table",
    "trace_name",
    "traces_table",
    "windows_table",
]
