"""The measured page's residuals: each fitted model against every measurement it was not fitted on, and the fits."""

from __future__ import annotations

from typing import Any

import pandas as pd

from kvtier.formulas import costs
from kvtier.inputs import measurements as ms
from kvtier.report.columns import Column, declare, named
from kvtier.report.pages.measured.fetch import layouts
from kvtier.report.pages.measured.forward import EVICTED, RESIDENT, attention_table, interior_table, knee_probe_tokens
from kvtier.report.pages.measured.shipped import (
    BLOCK_BYTES,
    BLOCK_TOKENS,
    SHAPE8,
    SHAPE70,
    error_pct,
    fetch_model_s,
    fits,
    measurements,
)
from kvtier.report.words import listed
from kvtier.scenario import Scenario, seed_scenario
from kvtier.units import MIB


def residual_rows() -> list[dict[str, Any]]:
    """Each model quantity against what was measured: kvtier's fits, the seed set and the peers."""
    m, f = measurements(), fits()
    seed = seed_scenario()
    rows: list[tuple[str, str, str, float, float]] = []
    fetch = m.v("fetch_5mib_h2d_pinned")
    rows.append(
        (
            "5 MiB block, pinned host to device",
            "source chapter: bytes / 64 GB/s, no latency",
            "assumed",
            float(seed.fetch_s(seed.bandwidth("mid"))),
            fetch,
        )
    )
    rows.append(
        (
            "5 MiB block, pinned host to device",
            "kvtier: fitted latency + bytes / bandwidth",
            "derived",
            fetch_model_s(1, BLOCK_BYTES),
            fetch,
        )
    )
    for layout, transfers, n_bytes, measured, _file in layouts()[2:]:
        rows.append(
            (
                f"5 MiB block, {layout}" if "blocks" not in layout else f"{layout}, 5 MiB each",
                f"kvtier: {transfers} × fitted latency + bytes / bandwidth",
                "derived",
                fetch_model_s(transfers, n_bytes),
                measured,
            )
        )
    each = m.v("bidirectional_bytes")
    rows.append(
        (
            f"{each / MIB:.0f} MiB host to device while device to host runs",
            "kvtier: full duplex, as alone (fitted)",
            "derived",
            fetch_model_s(1, each),
            m.v("bidirectional_h2d_together_s"),
        )
    )
    graph16 = m.v("forward16_llama-3-70b_graph")
    rows.append(
        (
            "16-token pass, 70B shapes, CUDA graph",
            "source chapter: 2 N n / (500 TFLOP/s × 25 %)",
            "assumed",
            float(seed.regen_s(seed.mfu("conservative"))),
            graph16,
        )
    )
    rows.append(
        (
            "16-token pass, 70B shapes, CUDA graph",
            "roofline at the datasheet: weights / 4.8 TB/s",
            "derived",
            m.shapes[SHAPE70].weight_bytes / ms.H200_MEM_BANDWIDTH,
            graph16,
        )
    )
    sweep70 = {p.tokens: p.timing.median_s for p in m.sweeps[SHAPE70]}
    for tool, version, _shape, tokens, rec in ms.peer_predictions():
        measured = graph16 if tokens == BLOCK_TOKENS else sweep70[tokens]
        what = "CUDA graph" if tokens == BLOCK_TOKENS else "eager"
        rows.append(
            (
                f"{tokens:,}-token pass, 70B shapes, {what}",
                f"{tool} {version} at efficiency 1.0",
                "derived",
                float(rec.value),
                measured,
            )
        )  # type: ignore[arg-type]
    for shape, tokens, mode, measured in (
        (SHAPE70, BLOCK_TOKENS, "graph", graph16),
        (SHAPE70, BLOCK_TOKENS, "eager", m.v("forward16_llama-3-70b_eager")),
        (SHAPE70, knee_probe_tokens(), "eager", sweep70[knee_probe_tokens()]),
        (SHAPE70, 4096, "eager", sweep70[4096]),
        (SHAPE8, BLOCK_TOKENS, "graph", m.v("forward16_llama-3-8b_graph")),
    ):
        model = ms.forward_model_s(m, f, shape, tokens, mode)
        what = "CUDA graph" if mode == "graph" else "eager"
        label = f"{tokens:,}-token pass, {'70B' if shape == SHAPE70 else '8B'} shapes, {what}"
        if tokens == knee_probe_tokens():
            rows.append((label, "kvtier: max(compute, floor), fitted", "derived", float(model["roofline"]), measured))
        rows.append((label, "kvtier: blended roofline, fitted", "derived", float(model["blended"]), measured))
    shape = m.shapes[SHAPE70]
    in_sample = sorted(
        set(ms.SLOPE_TOKENS) & {p.tokens for p in m.sweeps[SHAPE70] if p.tokens >= ms.COMPUTE_FIT_MIN_TOKENS}
    )
    slope_row = (
        "16 more tokens inside a compute-bound 70B pass (in-sample: the slope and the MFU are both fitted to the"
        f" passes of {listed([f'{n:,}' for n in in_sample])} tokens)"
    )
    rows.append(
        (
            slope_row,
            "kvtier: marginal FLOPs at the fitted MFU",
            "derived",
            float(costs.compute_time_s(shape.flops(BLOCK_TOKENS), ms.H200_PEAK_FLOP_PER_S, f.mfu[SHAPE70])),
            f.slope_s_per_token * BLOCK_TOKENS,
        )
    )
    reference = {slope_row: "derived: least-squares slope of the measured passes, not a measurement"}
    interior = interior_table(seed).set_index(["upstream", "position"])
    for case, position in (
        (RESIDENT, max(p.position for p in m.resident)),
        (EVICTED, max(p.position for p in m.evicted)),
    ):
        row = interior.loc[(case, position)]
        rows.append(
            (
                f"16-token block at position {position:,}, {case} (eager)",
                "kvtier: blended roofline, fitted",
                "derived",
                row["model_ms"] / 1e3,
                row["measured_ms"] / 1e3,
            )
        )
    far = attention_table(seed).iloc[-1]
    rows.append(
        (
            f"one layer's attention, 16 queries over {int(far['position']):,} positions, no mask",
            "kvtier: KV bytes / fitted memory rate",
            "derived",
            far["model_us"] / 1e6,
            far["no_mask_us"] / 1e6,
        )
    )
    rows.append(
        (
            "16-token pass, 70B shapes, while a second stream fetches blocks",
            "kvtier: a fetch costs the GPU nothing, as alone",
            "derived",
            m.v("overlap_forward_alone"),
            m.v("overlap_forward_with_copies"),
        )
    )
    return [
        {
            "quantity": q,
            "model": model,
            "model_provenance": prov,
            "model_ms": value * 1e3,
            "measured_ms": measured * 1e3,
            "measured_provenance": reference.get(q, "measured"),
            "error_pct": error_pct(value, measured),
        }
        for q, model, prov, value, measured in rows
    ]


RESIDUAL_COLUMNS = (
    *named("quantity", "model"),
    Column("model_provenance", "model provenance"),
    Column("model_ms", "model", "ms"),
    Column("measured_ms", "measured", "ms"),
    Column("measured_provenance", "measured provenance"),
    Column("error_pct", "error", "%"),
)
"""The columns of :func:`residual_table`, in words with their units."""


def residual_table(s: Scenario) -> pd.DataFrame:
    """Each modelled quantity: the model (and its provenance), its value, the measured value, the error in percent.

    Negative errors: the model is short of the measurement.  Peer tools' rows are their
    predictions (``derived``, tool and version named), less those the peer file excludes
    (:func:`kvtier.inputs.measurements.peer_exclusions`); kvtier's rows use the fits.
    ``measured_provenance`` says what ``measured_ms`` is: a measured median, except the
    in-batch row, whose reference is the slope fitted to the measured sweep (``derived``),
    compared in-sample with a model fitted to the same passes.
    """
    return declare(pd.DataFrame(residual_rows()), RESIDUAL_COLUMNS)


FITS_COLUMNS = (
    *named("parameter", "value"),
    Column("value_si", "value in SI units"),
    *named("unit", "provenance", "basis", "source"),
)
"""The columns of :func:`fits_table`, in words."""


def fits_table(s: Scenario) -> pd.DataFrame:
    """Every fitted value with its provenance (derived), its basis (the fit and the fields) and source."""
    rows = []
    for rec in fits().records.values():
        rows.append(
            {
                "parameter": rec.key,
                "value": rec.display,
                "value_si": float(rec.value),  # type: ignore[arg-type]
                "unit": rec.unit,
                "provenance": rec.provenance,
                "basis": rec.basis,
                "source": rec.source,
            }
        )
    return declare(pd.DataFrame(rows), FITS_COLUMNS)
