"""What the measured page holds its numbers to: the shipped H200 measurements and their fits.

The measured set and its fits are read once (:func:`kvtier.inputs.measurements.load`,
:func:`~kvtier.inputs.measurements.shipped_fits`); the block, the shapes and the accuracy the
forward-pass model is held to are the page's constants.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvtier.formulas import costs
from kvtier.inputs import hardware
from kvtier.inputs import measurements as ms
from kvtier.inputs.provenance import Record
from kvtier.report.figures import finish
from kvtier.units import MIB

if TYPE_CHECKING:
    from matplotlib.figure import Figure


BLOCK_BYTES = 5 * MIB
"""The measured block: 16 tokens of Llama-3-70B's bf16 KV (B)."""


BLOCK_TOKENS = 16
"""Tokens in the measured block and the lone pass (tokens)."""


SHAPE70, SHAPE8 = ms.SHAPES


ACCURACY_PCT = 10.0
"""The accuracy the forward-pass model is held to (percent of each measured time)."""


PEERS_OF_NOTE = (16, 4096)
"""Token counts at which the peers' predictions are quoted."""


SLOPE_CASE = "H200 slope fitted to measured passes"
"""The ratio table's in-batch H200 case: its regeneration time is the least-squares slope of the measured
70B sweep (:data:`kvtier.inputs.measurements.SLOPE_TOKENS`) times 16 tokens, a fit, not a measurement."""


SLOPE_PROVENANCE = "derived: slope fitted to measured passes"
"""Provenance of the ratio table's :data:`SLOPE_CASE` rows."""


def measurements() -> ms.Measurements:
    """The shipped H200 measurements (read once, :func:`kvtier.inputs.measurements.load`)."""
    return ms.load()


def fits() -> ms.Fits:
    """The fits of the shipped measurements (computed once, :func:`kvtier.inputs.measurements.shipped_fits`)."""
    return ms.shipped_fits()


def error_pct(model: float, measured: float) -> float:
    """Error of a model value against a measured one (percent; negative: the model is short)."""
    return (model / measured - 1.0) * 100.0


def fetch_model_s(transfers: float, n_bytes: float, kind: str = "h2d_pinned") -> float:
    """The fetch model at the fitted latency and bandwidth of ``kind``: ``transfers x latency + bytes / bandwidth`` (s).

    :func:`kvtier.formulas.costs.fetch_time_s`, the one fetch time, with the H200's fitted
    per-transfer latency (s) and bandwidth (B/s) of the copy ``kind``.
    """
    latency, bw = fits().fetch[kind]
    return float(costs.fetch_time_s(n_bytes, bw, latency, transfers))


def h200_records() -> list[Record]:
    """The H200's datasheet peak FLOP/s and memory bandwidth, as records a figure's footer cites."""
    acc = hardware.accelerator("h200")
    return [acc.peak_record, acc.mem_bandwidth_record]


def finish_figure(fig: Figure, records: list[Record], drivers: tuple[str, ...], words: str) -> tuple[Figure, str]:
    """:func:`~kvtier.report.figures.finish` with ``words``' first sentence as the caption's lead."""
    lead, _, text = words.partition(". ")
    return finish(fig, records, text, lead=f"{lead}.", drivers=drivers)
