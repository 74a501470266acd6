"""The measured page (``notebooks/11_measured.md``): the model against one real H200, with residuals.

Everything measured comes from :mod:`kvtier.inputs.measurements` (the shipped set, provenance
``measured``); everything fitted from its fits (``derived``).  Only the illustrative
point's "this assumption set" rows read the assumption set being built, so that the
measured ratio stands next to the book's own two regimes under any rerun.

The page is a package, one module per job: :mod:`.shipped` (the measurements and fits it holds
its numbers to), :mod:`.fetch` (copies and layouts), :mod:`.forward` (passes, interior blocks,
attention), :mod:`.ratio`, :mod:`.residuals`, :mod:`.validation`, :mod:`.changes` (what the measured
set changes on other pages), :mod:`.words` and :mod:`.glue`; this module is the page contract.
"""

from __future__ import annotations

from kvtier.report.pages.measured.changes import changes_under_measured_set, compared_pages
from kvtier.report.pages.measured.engines import engine_group_table, engine_table, stack_table
from kvtier.report.pages.measured.fetch import fetch_figure, fetch_table, layout_table, numbers_fetch_max
from kvtier.report.pages.measured.forward import (
    attention_table,
    forward_figure,
    forward_table,
    interior_table,
    knee_probe_tokens,
)
from kvtier.report.pages.measured.glue import numbers
from kvtier.report.pages.measured.ratio import comparison_table, ratio_figure, ratio_table
from kvtier.report.pages.measured.residuals import fits_table, residual_table
from kvtier.report.pages.measured.validation import (
    form_table,
    peer_calibration_table,
    peer_form_table,
    validation_summary,
    validation_table,
)
from kvtier.scenario import POINT_KEYS

NOTEBOOK = "11_measured"
"""The page's text notebook, ``notebooks/NOTEBOOK.md``."""

TITLE = "measured on a GPU"
"""The page's name as another page writes it mid-sentence (the registry's ``Page.title``)."""


KEYS: tuple[str, ...] = POINT_KEYS
"""The assumption keys the page reads; its notebook's ``parameters`` cell declares exactly these."""


TABLES = (
    ("measured_fetch", fetch_table, ("kind", "bytes")),
    ("measured_layouts", layout_table, ("layout",)),
    ("measured_forward", forward_table, ("shape", "runner", "tokens")),
    ("measured_interior", interior_table, ("upstream", "position")),
    ("measured_attention", attention_table, ("position",)),
    ("measured_ratio", ratio_table, ("case", "regime", "layout")),
    ("measured_residuals", residual_table, ("quantity", "model")),
    ("measured_fits", fits_table, ("parameter",)),
    ("measured_validation", validation_table, ("group", "case", "sample")),
    (
        "measured_validation_summary",
        validation_summary,
        ("group", "sample"),
        ("group", "sample", "points", "within_10_pct", "within_15_pct", "worst_error_pct"),
    ),
    (
        "measured_stack",
        stack_table,
        ("shape", "runner", "tokens"),
        ("shape", "runner", "tokens", "measured_ms", "engine_ms", "slower"),
    ),
    (
        "measured_engines",
        engine_table,
        ("id",),
        ("id", "model", "tokens", "group", "measured_ms", "model_ms", "error_pct", "status"),
    ),
    (
        "measured_engine_groups",
        engine_group_table,
        ("group",),
        ("group", "points", "accelerators", "err_min_pct", "err_median_pct", "err_max_pct"),
    ),
    (
        "measured_forms",
        form_table,
        ("form",),
        ("form", "points", "without_worst_pct", "in_sample_worst_pct", "left_out_min_pct", "left_out_max_pct"),
    ),
    ("measured_peer_forms", peer_form_table, ("group",)),
    (
        "measured_peer_calibration",
        peer_calibration_table,
        ("tool", "tokens"),
        ("tool", "tokens", "measured_ms", "default_error_pct", "calibrated_error_pct", "kvtier_error_pct", "sample"),
    ),
)
"""The page's tables of record: (name, builder, key columns[, shown columns])."""


FIGURES = (
    ("fig_measured_fetch", fetch_figure),
    ("fig_measured_forward", forward_figure),
    ("fig_measured_ratio", ratio_figure),
)
"""The page's figures: (glue name, function returning the figure and its caption)."""

__all__ = [
    "FIGURES",
    "KEYS",
    "NOTEBOOK",
    "TABLES",
    "TITLE",
    "attention_table",
    "changes_under_measured_set",
    "compared_pages",
    "comparison_table",
    "fetch_figure",
    "fetch_table",
    "fits_table",
    "form_table",
    "forward_figure",
    "forward_table",
    "interior_table",
    "knee_probe_tokens",
    "layout_table",
    "numbers",
    "numbers_fetch_max",
    "engine_group_table",
    "engine_table",
    "stack_table",
    "peer_calibration_table",
    "peer_form_table",
    "ratio_figure",
    "ratio_table",
    "residual_table",
    "validation_summary",
    "validation_table",
]
