"""The measured page (``notebooks/11_measured.md``): the model against one real H200, with residuals.

Everything measured comes from :mod:`kvtier.inputs.measurements` (the shipped set, provenance
``measured``); everything fitted from its fits (``derived``).  Only the illustrative
point's "this assumption set" rows read the assumption set being built, so that the
measured ratio stands next to the book's own two regimes under any rerun.
"""

from __future__ import annotations

import math
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from kvtier.formulas import costs, roofline
from kvtier.inputs import chapter, hardware
from kvtier.inputs import measurements as ms
from kvtier.inputs.assumptions import load_assumptions
from kvtier.inputs.provenance import Record
from kvtier.report.figures import PALETTE, finish, new_figure, plain_log_ticks
from kvtier.report.pages import Page, page_of
from kvtier.scenario import POINT_KEYS, Scenario, seed_scenario
from kvtier.units import MIB

if TYPE_CHECKING:
    from matplotlib.figure import Figure

NOTEBOOK = "11_measured"
"""The page's text notebook, ``notebooks/NOTEBOOK.md``."""
TITLE = "measured on a GPU"
"""The page's name as another page writes it mid-sentence (the registry's ``Page.title``)."""

KEYS: tuple[str, ...] = POINT_KEYS
"""The assumption keys the page reads; its notebook's ``parameters`` cell declares exactly these."""

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


def _m() -> ms.Measurements:
    return ms.load()


def _f() -> ms.Fits:
    return ms.shipped_fits()


def _err(model: float, measured: float) -> float:
    """Error of a model value against a measured one (percent; negative: the model is short)."""
    return (model / measured - 1.0) * 100.0


def _fetch_model_s(transfers: float, n_bytes: float, kind: str = "h2d_pinned") -> float:
    """The fetch model at the fitted latency and bandwidth of ``kind``: ``transfers x latency + bytes / bandwidth`` (s).

    :func:`kvtier.formulas.costs.fetch_time_s`, the one fetch time, with the H200's fitted
    per-transfer latency (s) and bandwidth (B/s) of the copy ``kind``.
    """
    latency, bw = _f().fetch[kind]
    return float(costs.fetch_time_s(n_bytes, bw, latency, transfers))


def _h200_records() -> list[Record]:
    acc = hardware.accelerator("h200")
    return [acc.peak_record, acc.mem_bandwidth_record]


# ---------------------------------------------------------------------------
# tables of record
# ---------------------------------------------------------------------------


def fetch_table(s: Scenario) -> pd.DataFrame:
    """Every measured copy from host memory (and back) against the fitted ``latency + bytes / bandwidth``.

    Pinned copies get the fit of their own direction; pageable copies have no fit of their
    own and are set against the host-to-device pinned fit, to show what staging through
    pageable memory costs.  ``in_fit`` marks the points the fit was made from.
    """
    m = _m()
    rows = []
    for kind in ("h2d_pinned", "d2h_pinned", "h2d_pageable"):
        fit_kind = kind if kind in _f().fetch else "h2d_pinned"
        for c in m.copies_of(kind):
            model = _fetch_model_s(1, c.n_bytes, fit_kind)
            rows.append(
                {
                    "kind": kind,
                    "bytes": c.n_bytes,
                    "size": f"{c.n_bytes / 2**10:,.0f} KiB" if c.n_bytes < MIB else f"{c.n_bytes / MIB:,.0f} MiB",
                    "measured_us": c.timing.median_s * 1e6,
                    "min_us": c.timing.min_s * 1e6,
                    "max_us": c.timing.max_s * 1e6,
                    "measured_GBps": c.n_bytes / c.timing.median_s / 1e9,
                    "model_us": model * 1e6,
                    "error_pct": _err(model, c.timing.median_s),
                    "in_fit": bool(kind == fit_kind and c.n_bytes >= ms.FETCH_FIT_MIN_BYTES),
                    "provenance": "measured; model derived",
                }
            )
    return pd.DataFrame(rows)


def _layouts() -> list[dict[str, Any]]:
    m = _m()
    chunk_all = m.chunks * m.chunk_bytes
    blocks = int(m.v("batching_blocks"))
    return [
        ("contiguous (size sweep)", 1, BLOCK_BYTES, m.v("fetch_5mib_h2d_pinned"), "probe1.json"),
        ("contiguous (layout probe)", 1, chunk_all, m.v("block_contiguous"), "probe1.json"),
        ("one strided 2-D copy", 1, chunk_all, m.v("block_strided"), "probe2.json"),
        (
            "a copy per chunk, run 1",
            m.chunks,
            chunk_all,
            m.v("block_per_chunk_probe1"),
            "probe1.json",
        ),
        (
            "a copy per chunk, run 2",
            m.chunks,
            chunk_all,
            m.v("block_per_chunk_probe2"),
            "probe2.json",
        ),
        (f"{blocks} blocks, one copy", 1, blocks * BLOCK_BYTES, m.v("batching_one_copy"), "probe3.json"),
        (
            f"{blocks} blocks, a copy each",
            blocks,
            blocks * BLOCK_BYTES,
            m.v("batching_copy_per_block"),
            "probe3.json",
        ),
    ]  # type: ignore[return-value]


def layout_table(s: Scenario) -> pd.DataFrame:
    """The block moved in each layout: transfers, measured time, the fitted model and the ratios it gives.

    The model charges the fitted per-transfer latency once per transfer:
    ``transfers x latency + bytes / bandwidth``.  The ratios divide the measured lone-block
    (CUDA graph) and in-batch regeneration times by the measured fetch time of one block.
    """
    m, f = _m(), _f()
    lone = m.v("forward16_llama-3-70b_graph")
    in_batch = f.slope_s_per_token * BLOCK_TOKENS
    rows = []
    for layout, transfers, n_bytes, measured, file in _layouts():
        model = _fetch_model_s(transfers, n_bytes)
        per_block = measured * BLOCK_BYTES / n_bytes
        rows.append(
            {
                "layout": layout,
                "transfers": transfers,
                "bytes": n_bytes,
                "measured_us": measured * 1e6,
                "model_us": model * 1e6,
                "error_pct": _err(model, measured),
                "per_block_us": per_block * 1e6,
                "lone_block_ratio": lone / per_block,
                "in_batch_ratio": in_batch / per_block,
                "source": f"{ms.DATA_DIR}/{file}",
            }
        )
    return pd.DataFrame(rows)


def knee_probe_tokens() -> int:
    """The 70B eager sweep point where max(compute, floor) misses most: the pass nearest the knee (tokens)."""
    df = pd.DataFrame(_forward_rows())
    sweep = df[(df["shape"] == SHAPE70) & (df["runner"] == "eager")]
    return int(sweep.loc[sweep["roofline_error_pct"].abs().idxmax(), "tokens"])


def _forward_rows() -> list[dict[str, Any]]:
    m, f = _m(), _f()
    rows = []
    runs: list[tuple[str, str, str, tuple[ms.Pass, ...]]] = []
    for shape in ms.SHAPES:
        runs.append((shape, "eager", "eager", m.sweeps[shape]))
        graph = m.tail16[(shape, "graph")]
        runs.append((shape, "CUDA graph", "graph", (ms.Pass(BLOCK_TOKENS, 0, graph),)))
        runs.append((shape, "transformers eager (cross-check)", "eager", m.hf_sweeps[shape]))
    for shape, runner, mode, passes in runs:
        for p in passes:
            model = ms.forward_model_s(m, f, shape, p.tokens, mode)
            t = p.timing.median_s
            rows.append(
                {
                    "shape": shape,
                    "runner": runner,
                    "tokens": p.tokens,
                    "measured_ms": t * 1e3,
                    "min_ms": p.timing.min_s * 1e3,
                    "max_ms": p.timing.max_s * 1e3,
                    "compute_ms": float(model["compute"]) * 1e3,
                    "floor_ms": float(model["floor"]) * 1e3,
                    "roofline_ms": float(model["roofline"]) * 1e3,
                    "blended_ms": float(model["blended"]) * 1e3,
                    "roofline_error_pct": _err(float(model["roofline"]), t),
                    "blended_error_pct": _err(float(model["blended"]), t),
                    "bound": "compute" if model["compute"] > model["floor"] else "floor",
                }
            )
    return rows


def forward_table(s: Scenario) -> pd.DataFrame:
    """Every measured forward pass against the compute-only, roofline and blended models, fitted.

    ``compute_ms`` is FLOPs at the fitted MFU; ``floor_ms`` the weight stream at the fitted
    memory efficiency, or in eager mode the fitted launch floor where that is slower;
    ``roofline_ms`` their maximum; ``blended_ms`` the package's model,
    :func:`kvtier.formulas.roofline.blended_time_s`.  The transformers cross-check (probe4) is set
    against the eager model fitted to the plain-PyTorch passes, not fitted itself.
    """
    return pd.DataFrame(_forward_rows())


RESIDENT = "upstream resident"
EVICTED = "upstream evicted: prefill to it"


def interior_table(s: Scenario) -> pd.DataFrame:
    """Interior 16-token blocks of the 70B shapes (eager), measured against the fitted blended model.

    ``upstream resident``: the block attends over ``position`` cached positions;
    ``upstream evicted``: the whole prefix is recomputed with it, logits for the last token only.
    """
    m, f = _m(), _f()
    rows = []
    for p in m.resident:
        model = float(ms.forward_model_s(m, f, SHAPE70, BLOCK_TOKENS, "eager", position=p.position)["blended"])
        rows.append((RESIDENT, p.position, p.tokens, p.timing.median_s, model))
    for p in m.evicted:
        model = float(ms.forward_model_s(m, f, SHAPE70, p.tokens, "eager", logits_tokens=1)["blended"])
        rows.append((EVICTED, p.position, p.tokens, p.timing.median_s, model))
    return pd.DataFrame(
        [
            {
                "upstream": case,
                "position": position,
                "tokens_computed": tokens,
                "measured_ms": t * 1e3,
                "model_ms": model * 1e3,
                "error_pct": _err(model, t),
            }
            for case, position, tokens, t, model in rows
        ]
    )


def attention_table(s: Scenario) -> pd.DataFrame:
    """One layer's attention of 16 queries over ``position`` cached positions, against the KV read at the fitted rate.

    The model reads the layer's K and V once at the 70B pass's fitted memory efficiency of
    4.8 TB/s; ``no_mask`` is the flash path (the block sees all of its prefix), ``causal``
    the masked call a forward pass makes.
    """
    m, f = _m(), _f()
    eff = f.mem_efficiency[SHAPE70]
    rate = ms.H200_MEM_BANDWIDTH * eff  # the model's read rate (B/s): measured x rate / bytes = measured / model
    rows = []
    for position, kv_bytes, masked, unmasked in m.attention:
        model = float(roofline.memory_time_s(kv_bytes, ms.H200_MEM_BANDWIDTH, eff))
        rows.append(
            {
                "position": position,
                "kv_MiB_one_layer": kv_bytes / MIB,
                "no_mask_us": unmasked.median_s * 1e6,
                "causal_us": masked.median_s * 1e6,
                "model_us": model * 1e6,
                "no_mask_over_model": unmasked.median_s * rate / kv_bytes,
                "causal_over_model": masked.median_s * rate / kv_bytes,
                "no_mask_GBps": kv_bytes / unmasked.median_s / 1e9,
            }
        )
    return pd.DataFrame(rows)


def _ratio_rows(s: Scenario, with_set: bool) -> list[dict[str, Any]]:
    m, f = _m(), _f()
    seed = seed_scenario().illustrative
    point = s.illustrative
    set_lone = float(s.lone_regen_s(0, "resident", point["mfu"]))
    fetch = m.v("fetch_5mib_h2d_pinned")
    in_batch = f.slope_s_per_token * BLOCK_TOKENS
    model_fetch = _fetch_model_s(1, BLOCK_BYTES)
    model_lone = float(ms.forward_model_s(m, f, SHAPE70, BLOCK_TOKENS, "graph")["blended"])
    shape = m.shapes[SHAPE70]
    model_batch = float(costs.compute_time_s(shape.flops(BLOCK_TOKENS), ms.H200_PEAK_FLOP_PER_S, f.mfu[SHAPE70]))
    chunk_worst, chunk_best = m.v("block_per_chunk_probe1"), m.v("block_per_chunk_probe2")
    rows = [
        ("source chapter", "in batch", "contiguous", seed["regen_s"], seed["fetch_s"], "seed assumptions"),
        *(
            [
                ("this assumption set", "in batch", "contiguous", point["regen_s"], point["fetch_s"], "assumption set"),
                ("this assumption set", "lone block", "contiguous", set_lone, point["fetch_s"], "assumption set"),
            ]
            if with_set
            else []
        ),
        (
            "H200 measured, CUDA graph",
            "lone block",
            "contiguous",
            m.v("forward16_llama-3-70b_graph"),
            fetch,
            "measured",
        ),
        ("H200 measured, eager", "lone block", "contiguous", m.v("forward16_llama-3-70b_eager"), fetch, "measured"),
        (SLOPE_CASE, "in batch", "contiguous", in_batch, fetch, SLOPE_PROVENANCE),
        (
            "H200 measured, CUDA graph",
            "lone block",
            "one strided copy",
            m.v("forward16_llama-3-70b_graph"),
            m.v("block_strided"),
            "measured",
        ),
        (
            "H200 measured, CUDA graph",
            "lone block",
            "per-chunk copies, fastest run",
            m.v("forward16_llama-3-70b_graph"),
            chunk_best,
            "measured",
        ),
        (
            "H200 measured, CUDA graph",
            "lone block",
            "per-chunk copies, slowest run",
            m.v("forward16_llama-3-70b_graph"),
            chunk_worst,
            "measured",
        ),
        (
            SLOPE_CASE,
            "in batch",
            "per-chunk copies, fastest run",
            in_batch,
            chunk_best,
            SLOPE_PROVENANCE,
        ),
        (
            SLOPE_CASE,
            "in batch",
            "per-chunk copies, slowest run",
            in_batch,
            chunk_worst,
            SLOPE_PROVENANCE,
        ),
        ("H200 model, fitted", "lone block", "contiguous", model_lone, model_fetch, "derived"),
        ("H200 model, fitted", "in batch", "contiguous", model_batch, model_fetch, "derived"),
    ]
    return [
        {
            "case": case,
            "regime": regime,
            "layout": layout,
            "regen_ms": regen * 1e3,
            "fetch_us": fetch_s * 1e6,
            "ratio": regen / fetch_s,
            "provenance": prov,
        }
        for case, regime, layout, regen, fetch_s, prov in rows
    ]


def ratio_table(s: Scenario) -> pd.DataFrame:
    """The illustrative point measured: regenerate / fetch on the H200 beside the chapter's, its table of record.

    Every row names its regime: *lone block* (the block's 16 tokens are the whole pass)
    or *in batch* (its marginal cost inside a compute-bound pass: the slope of the
    measured sweep, or the chapter's compute-only model).  The rows do not depend on the
    assumption set being built (the chapter's is the seed's), so that a rerun leaves this
    record alone; :func:`comparison_table` adds the set's own two rows for the page.
    """
    return pd.DataFrame(_ratio_rows(s, with_set=False))


def comparison_table(s: Scenario) -> pd.DataFrame:
    """:func:`ratio_table` with this assumption set's in-batch and lone-block ratios after the chapter's row."""
    return pd.DataFrame(_ratio_rows(s, with_set=True))


def _residual_rows() -> list[dict[str, Any]]:
    m, f = _m(), _f()
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
            _fetch_model_s(1, BLOCK_BYTES),
            fetch,
        )
    )
    for layout, transfers, n_bytes, measured, _file in _layouts()[2:]:
        rows.append(
            (
                f"5 MiB block, {layout}" if "blocks" not in layout else f"{layout}, 5 MiB each",
                f"kvtier: {transfers} × fitted latency + bytes / bandwidth",
                "derived",
                _fetch_model_s(transfers, n_bytes),
                measured,
            )
        )
    each = m.v("bidirectional_bytes")
    rows.append(
        (
            f"{each / MIB:.0f} MiB host to device while device to host runs",
            "kvtier: full duplex, as alone (fitted)",
            "derived",
            _fetch_model_s(1, each),
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
        f" passes of {_and([f'{n:,}' for n in in_sample])} tokens)"
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
            "error_pct": _err(value, measured),
        }
        for q, model, prov, value, measured in rows
    ]


def residual_table(s: Scenario) -> pd.DataFrame:
    """Each modelled quantity: the model (and its provenance), its value, the measured value, the error in percent.

    Negative errors: the model is short of the measurement.  Peer tools' rows are their
    predictions (``derived``, tool and version named), less those the peer file excludes
    (:func:`kvtier.inputs.measurements.peer_exclusions`); kvtier's rows use the fits.
    ``measured_provenance`` says what ``measured_ms`` is: a measured median, except the
    in-batch row, whose reference is the slope fitted to the measured sweep (``derived``),
    compared in-sample with a model fitted to the same passes.
    """
    return pd.DataFrame(_residual_rows())


def fits_table(s: Scenario) -> pd.DataFrame:
    """Every fitted value with its provenance (derived), its basis (the fit and the fields) and source."""
    rows = []
    for rec in _f().records.values():
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
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------
# the page's numbers
# ---------------------------------------------------------------------------


def _misses_text(df: pd.DataFrame) -> str:
    """The passes the blended model misses by more than :data:`ACCURACY_PCT`, in words."""
    miss = df[df["blended_error_pct"].abs() > ACCURACY_PCT]
    if miss.empty:
        return "none"
    parts = [
        f"{'70B' if r['shape'] == SHAPE70 else '8B'} shapes, {r['tokens']:,} token{'s' if r['tokens'] != 1 else ''}"
        f" ({r['runner']}):"
        f" {r['blended_error_pct']:+.1f} %"
        for _, r in miss.iterrows()
    ]
    return "; ".join(parts)


MEASURED_SET = "h200-measured.yaml"
"""The assumption set the H200 measurements support, shipped in ``kvtier/data``."""


def measured_set() -> Scenario:
    """The shipped assumption set of the H200 measurements (:data:`MEASURED_SET`), layered on the seed."""
    with resources.as_file(resources.files("kvtier.data").joinpath(MEASURED_SET)) as path:
        return Scenario(load_assumptions(path))


def _and(words: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return " and ".join([", ".join(words[:-1]), words[-1]]) if len(words) > 1 else "".join(words)


def _lone_ratio(s: Scenario) -> float:
    """The illustrative tail block's lone-block regenerate/fetch ratio under ``s``."""
    point = s.illustrative
    return float(s.lone_regen_s(0, "resident", point["mfu"])) / point["fetch_s"]


COMPARED = ("04_ratio", "05_interior", "06_capacity", "07_roofline", "08_tiers", "09_models")
"""The pages :func:`changes_under_measured_set` counts, by notebook stem: the analytical pages whose
tables do not draw random numbers."""


def compared_pages() -> tuple[Page, ...]:
    """The pages of :data:`COMPARED`, from the registry (:data:`kvtier.report.pages.PAGES`)."""
    found = {stem: page_of(stem) for stem in COMPARED}
    missing = [stem for stem, page in found.items() if page is None]
    if missing:
        raise LookupError(f"the measured page compares {', '.join(missing)}, which the registry does not hold")
    return tuple(page for page in found.values() if page is not None)


def changes_under_measured_set() -> dict[str, Any]:
    """What rebuilding the book with :data:`MEASURED_SET` instead of the seed changes.

    For each page of :data:`COMPARED`, the number of cells of its tables of record that
    change (numbers beyond a relative 1e-9, or text), most first, by notebook stem; the
    pages' titles by stem; and the illustrative ratio in both regimes under each set.
    """
    seed, h200 = seed_scenario(), measured_set()
    counts = {}
    pages = compared_pages()
    for page in pages:
        changed = 0
        for table in page.tables:
            a, b = table.build(seed), table.build(h200)
            for col in a.columns:
                x, y = a[col], b[col]
                if pd.api.types.is_numeric_dtype(x) and pd.api.types.is_numeric_dtype(y):
                    changed += int((~np.isclose(x, y, rtol=1e-9, equal_nan=True)).sum())
                else:
                    changed += int((x.astype(str) != y.astype(str)).sum())
        counts[page.notebook] = changed
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return {
        "ranked": ranked,
        "titles": {page.notebook: page.title for page in pages},
        "seed_ratio": float(seed.illustrative["ratio"]),
        "h200_ratio": float(h200.illustrative["ratio"]),
        "seed_lone_ratio": _lone_ratio(seed),
        "h200_lone_ratio": _lone_ratio(h200),
    }


def _duplex_sentence(h2d_loss_pct: float) -> str:
    """What writing blocks out does to fetching others in, given the host-to-device rate lost with both busy (%)."""
    if h2d_loss_pct > 0.5:
        return (
            f"writing evicted blocks out slows fetching others in, by {h2d_loss_pct:.1f} % of the host-to-device"
            " rate, but does not stop it."
        )
    if h2d_loss_pct < -0.5:
        return f"fetching ran {-h2d_loss_pct:.1f} % faster with writes under way, so writing out does not slow it."
    return "writing evicted blocks out leaves fetching others in at its rate alone, to within half a percent."


def _peer_exclusions_sentence(m: ms.Measurements) -> str:
    """What the peer file leaves out of the comparison and why, computed: each excluded prediction's implied rate."""
    parts = []
    for (tool, version, shape_name, tokens, rec), reason in ms.peer_exclusions():
        shape = m.shapes[shape_name]
        value = float(rec.value)  # type: ignore[arg-type]
        embedding = shape.vocab * shape.hidden
        flop_rate = (float(shape.flops(tokens)) - 2.0 * embedding * tokens) / value
        byte_rate = 2.0 * (shape.params - embedding) / value
        if flop_rate > ms.H200_PEAK_FLOP_PER_S:
            peak = ms.H200_PEAK_FLOP_PER_S / 1e12
            over = f"{flop_rate / 1e12:,.0f} TFLOP/s, above the H200's {peak:g} TFLOP/s dense peak"
        else:
            over = f"{byte_rate / 1e12:.2f} TB/s of weights, above the H200's {ms.H200_MEM_BANDWIDTH / 1e12:g} TB/s"
        parts.append(
            f"{tool} {version}'s {tokens:,}-token figure, {value * 1e3:,.0f} ms, is left out: on the pass's own work it"
            f" implies {over} (the least time those peaks allow is {ms.peak_bound_s(shape, tokens) * 1e3:,.0f} ms),"
            f" because {reason[0].lower()}{reason[1:].rstrip('.')}."
        )
    if not parts:
        return "Every prediction in the peers' file is at or above the least time the H200's datasheet peaks allow."
    return " ".join(parts)


HELD_OUT_PCT = 15.0
"""The issue's goal for a shape predicted from another shape's fits (percent either way)."""

GOAL_COPY_BYTES = 256 * 2**10
"""The issue's goal for copies: every copy of at least this size within :data:`ACCURACY_PCT` out of sample (B)."""


def _case_bytes(case: str) -> float:
    """Bytes of a copy check's case, ``"256 KiB"`` or ``"5 MiB"``."""
    value, unit = case.split()
    return float(value) * {"KiB": 2**10, "MiB": MIB}[unit]


GROUP_SLUGS = {
    f"{ms.FIT_SHAPE} eager passes": "p70",
    f"{ms.FIT_SHAPE} CUDA-graph pass": "g70",
    "one layer's attention, 16 queries, masked": "attn",
    f"{ms.HELD_OUT_SHAPE} passes from {ms.FIT_SHAPE} fits": "p8",
    f"{ms.FIT_SHAPE} interior blocks": "interior",
    f"{ms.FIT_SHAPE} through transformers": "hf70",
    f"{ms.HELD_OUT_SHAPE} through transformers": "hf8",
    "copies, h2d pinned": "h2d",
    "copies, d2h pinned": "d2h",
    "small copies, h2d pinned": "small_h2d",
    "small copies, d2h pinned": "small_d2h",
    "copies, h2d pageable": "pageable",
    "small copies, h2d pageable": "small_pageable",
    "a block in per-layer chunks": "chunks",
    "both directions at once": "duplex",
}
"""Each validation group's short name in the page's glue keys (``val_<slug>_<sample>_...``)."""


@cache
def _checks() -> tuple[ms.Check, ...]:
    m = _m()
    return ms.forward_checks(m) + ms.copy_checks(m) + ms.transfer_checks(m)


def validation_table(s: Scenario) -> pd.DataFrame:
    """Every measurement against the package's model, in sample, leave-one-out and held out.

    The model is the one ``kvtier compare`` and every page use with ``h200-measured.yaml``
    (:func:`kvtier.inputs.measurements.pass_s`, :func:`kvtier.formulas.roofline.forward_pass_time_s`),
    fitted on the 70B shapes only (:func:`kvtier.inputs.measurements.fit_forward`); the copies under
    ``latency + bytes / bandwidth``.  Does not depend on the assumption set.
    """
    rows = [
        {
            "group": c.group,
            "case": c.case,
            "sample": c.sample,
            "measured_ms": c.measured_s * 1e3,
            "model_ms": c.model_s * 1e3,
            "error_pct": c.error_pct,
        }
        for c in _checks()
    ]
    return pd.DataFrame(rows)


def validation_summary(s: Scenario) -> pd.DataFrame:
    """Per group and sample: the points, those within :data:`ACCURACY_PCT` and :data:`HELD_OUT_PCT`, the worst error."""
    df = validation_table(s)
    rows = []
    for (group, sample), g in df.groupby(["group", "sample"], sort=False):
        err = g["error_pct"].to_numpy()
        worst = int(np.argmax(np.abs(err)))
        rows.append(
            {
                "group": group,
                "sample": sample,
                "points": len(g),
                "within_10_pct": int(np.sum(np.abs(err) <= ACCURACY_PCT)),
                "within_15_pct": int(np.sum(np.abs(err) <= HELD_OUT_PCT)),
                "worst_error_pct": float(err[worst]),
                "worst_case": str(g["case"].iloc[worst]),
            }
        )
    return pd.DataFrame(rows)


def peer_calibration_table(s: Scenario) -> pd.DataFrame:
    """The peers' figures at their defaults and calibrated the way kvtier is, beside kvtier's model.

    A peer's figure assumes every peak is reached; calibrated, it is divided by the efficiency
    fitted to the measurements the same way: the MFU of the 70B eager passes refitted without the
    pass (leave-one-out) where the pass is compute-bound, and the single memory efficiency of the
    70B CUDA-graph pass where it is memory-bound (in sample: that pass is the only one measuring it).
    kvtier's model beside it is the one :func:`validation_table` holds for the same pass.
    """
    m, checks = _m(), _checks()
    rows = []
    for tool, version, shape_name, tokens, rec in ms.peer_predictions():
        value = float(rec.value)  # type: ignore[arg-type]
        compute_bound = tokens >= ms.COMPUTE_FIT_MIN_TOKENS
        if compute_bound:
            measured = next(p.timing.median_s for p in m.sweeps[shape_name] if p.tokens == tokens)
            eff = ms.fit_forward(m, shape_name, frozenset({("sweep", tokens)})).mfu
            how, sample = "divided by the MFU fitted without this pass", ms.LEAVE_ONE_OUT
            kv = next(c for c in checks if c.case == f"{tokens:,} tokens" and c.sample == ms.LEAVE_ONE_OUT)
        else:
            measured = m.tail16[(shape_name, "graph")].median_s
            eff = _f().mem_efficiency[shape_name]
            how, sample = "divided by the memory efficiency of this pass", ms.IN_SAMPLE
            kv = next(c for c in checks if c.group == f"{ms.FIT_SHAPE} CUDA-graph pass")
        rows.append(
            {
                "tool": f"{tool} {version}",
                "tokens": tokens,
                "measured_ms": measured * 1e3,
                "default_ms": value * 1e3,
                "default_error_pct": (value / measured - 1) * 100,
                "calibrated_ms": value / eff * 1e3,
                "calibrated_error_pct": (value / eff / measured - 1) * 100,
                "calibration": how,
                "sample": sample,
                "kvtier_ms": kv.model_s * 1e3,
                "kvtier_error_pct": kv.error_pct,
                "kvtier_sample": kv.sample,
                "command": ms.peer_commands()[(tool, shape_name, tokens)],
            }
        )
    # the peers' form, one memory efficiency and no fixed time per layer, calibrated on the 70B graph pass
    # and applied to the 8B one it never saw (kvtier's formula in that form, not a peer's output)
    eff = _f().mem_efficiency[ms.FIT_SHAPE]
    s8 = m.shapes[ms.HELD_OUT_SHAPE]
    single = float(roofline.memory_time_s(s8.weight_bytes, ms.H200_MEM_BANDWIDTH, eff))
    measured = m.tail16[(ms.HELD_OUT_SHAPE, "graph")].median_s
    kv = next(c for c in checks if c.case == "16 tokens, graph")
    rows.append(
        {
            "tool": "one memory efficiency (the peers' form)",
            "tokens": 16,
            "measured_ms": measured * 1e3,
            "default_ms": float(roofline.memory_time_s(s8.weight_bytes, ms.H200_MEM_BANDWIDTH)) * 1e3,
            "default_error_pct": (float(roofline.memory_time_s(s8.weight_bytes, ms.H200_MEM_BANDWIDTH)) / measured - 1)
            * 100,
            "calibrated_ms": single * 1e3,
            "calibrated_error_pct": (single / measured - 1) * 100,
            "calibration": f"the {ms.HELD_OUT_SHAPE} graph pass at the efficiency of the {ms.FIT_SHAPE} one",
            "sample": ms.HELD_OUT,
            "kvtier_ms": kv.model_s * 1e3,
            "kvtier_error_pct": kv.error_pct,
            "kvtier_sample": kv.sample,
            "command": "kvtier.formulas.roofline.memory_time_s of the 8B weights at the 70B graph pass's efficiency",
        }
    )
    return pd.DataFrame(rows)


def validation_numbers(s: Scenario) -> dict[str, Any]:
    """The validation's glue: per group slug and sample, points, within 10 % and 15 %, the worst error."""
    out: dict[str, Any] = {"held_out_pct": HELD_OUT_PCT}
    samples = {ms.IN_SAMPLE: "in", ms.LEAVE_ONE_OUT: "loo", ms.HELD_OUT: "held"}
    for row in validation_summary(s).itertuples():
        key = f"val_{GROUP_SLUGS[row.group]}_{samples[row.sample]}"
        out[f"{key}_n"] = row.points
        out[f"{key}_within"] = row.within_10_pct
        out[f"{key}_within15"] = row.within_15_pct
        out[f"{key}_worst_pct"] = row.worst_error_pct
        out[f"{key}_worst_abs_pct"] = abs(row.worst_error_pct)
        out[f"{key}_worst_case"] = row.worst_case
    p8 = validation_table(s)
    p8 = p8[p8["group"] == f"{ms.HELD_OUT_SHAPE} passes from {ms.FIT_SHAPE} fits"]
    inside = p8[np.abs(p8["error_pct"]) <= HELD_OUT_PCT]
    outside = p8[np.abs(p8["error_pct"]) > HELD_OUT_PCT]
    out["val_p8_rest_worst_abs_pct"] = float(np.max(np.abs(inside["error_pct"])))
    out["val_p8_outliers"] = _and(
        [f"the {c} pass ({e:+.0f} %)" for c, e in zip(outside["case"], outside["error_pct"], strict=True)]
    )
    # how far each 8B sweep point's median sits above its fastest repetition: is a miss the model's or the timing's?
    sweep = {f"{p.tokens:,} tokens, eager": p.timing for p in _m().sweeps[ms.HELD_OUT_SHAPE]}
    odd = [sweep[c] for c in outside["case"] if c in sweep]
    out["val_p8_outlier_spread"] = _and(
        [
            f"over {t.reps} repetitions its median, {t.median_s * 1e3:.1f} ms, sits"
            f" {(t.median_s / t.min_s - 1) * 100:.0f} % above its fastest, {t.min_s * 1e3:.1f} ms"
            for t in odd
        ]
    )
    out["val_p8_outlier_spread_pct"] = max(((t.median_s / t.min_s - 1) * 100 for t in odd), default=math.nan)
    out["val_p8_rest_spread_pct"] = max(
        (t.median_s / t.min_s - 1) * 100 for c, t in sweep.items() if c in set(inside["case"])
    )
    ff = ms.shipped_forward_fit()
    out.update(
        stream_eff_pct=ff.mem_efficiency * 100,
        overhead_per_layer_us=ff.mem_overhead_per_layer_s * 1e6,
        launch_per_layer_us=ff.launch_floor_per_layer_s * 1e6,
        fwd_sharpness=ff.sharpness,
        attn_fixed_us=ff.attention_fixed_per_layer_s * 1e6,
        attn_gbps=ff.attention_efficiency * ms.H200_MEM_BANDWIDTH / 1e9,
    )
    m = _m()
    tf = ms.fit_transfer(m)
    sizes = [c.n_bytes for c in m.copies_of("h2d_pageable")]
    rate = {c.n_bytes: c.n_bytes / c.timing.median_s / 1e9 for c in m.copies_of("h2d_pageable")}
    peak = max(rate, key=rate.__getitem__)
    trough = min((n for n in rate if n > peak), key=rate.__getitem__)
    out.update(
        pageable_1mib_gbps=rate[MIB],
        pageable_peak_gbps=rate[peak],
        pageable_peak_mib=peak / MIB,
        pageable_big_gbps=rate[trough],
        pageable_big_mib=trough / MIB,
    )
    out.update(
        min_transfer_us=tf.min_transfer_s * 1e6,
        pageable_eff_pct=tf.pageable_efficiency * 100,
        pageable_cold_gbps=tf.pageable_efficiency * tf.bandwidth_bytes_per_s / 1e9,
        pageable_warm_eff_pct=tf.pageable_warm_efficiency * 100,
        pageable_warm_gbps=tf.pageable_warm_efficiency * tf.bandwidth_bytes_per_s / 1e9,
        pageable_overhead_us=tf.pageable_overhead_s * 1e6,
        host_cache_mib=tf.host_cache_bytes / MIB,
        cache_low_mib=max(n for n in sizes if n <= tf.host_cache_bytes) / MIB,
        cache_high_mib=min(n for n in sizes if n > tf.host_cache_bytes) / MIB,
        # a block from a pageable KV pool, far larger than the host cache: the cold share
        pageable_pool_block_us=tf.pageable_s(BLOCK_BYTES, math.inf) * 1e6,
        pageable_cache_block_us=tf.pageable_s(BLOCK_BYTES) * 1e6,
        duplex_eff_pct=tf.duplex_efficiency * 100,
    )
    pageable = validation_table(s)
    pageable = pageable[pageable["group"].str.endswith("h2d pageable") & (pageable["sample"] == ms.LEAVE_ONE_OUT)]
    sized = np.array([_case_bytes(c) for c in pageable["case"]])
    goal = pageable[sized >= GOAL_COPY_BYTES]
    worst = int(np.argmax(np.abs(goal["error_pct"].to_numpy())))
    out.update(
        pageable_goal_kib=GOAL_COPY_BYTES / 1024,
        pageable_goal_n=len(goal),
        pageable_goal_loo_worst_abs_pct=float(np.abs(goal["error_pct"]).max()),
        pageable_goal_loo_worst_case=str(goal["case"].iloc[worst]),
    )
    peers = peer_calibration_table(s)
    out["peer_cal_max_abs_pct"] = float(np.max(np.abs(peers["calibrated_error_pct"].iloc[:-1])))
    out["peer_single_8b_pct"] = float(peers["calibrated_error_pct"].iloc[-1])
    return out


def numbers(s: Scenario) -> dict[str, Any]:
    """Every number the measured page quotes: measurements, fits, residuals, the illustrative point."""
    m, f = _m(), _f()
    out: dict[str, Any] = {}
    # --- fetch ---
    fetch = fetch_table(s)
    pinned = fetch[fetch["kind"] == "h2d_pinned"]
    small = pinned[pinned["bytes"] < ms.FETCH_FIT_MIN_BYTES]
    block = pinned[pinned["bytes"] == BLOCK_BYTES].iloc[0]
    fitted = fetch[fetch["in_fit"]]
    seed = seed_scenario()
    latency, bw = f.fetch["h2d_pinned"]
    out.update(
        fetch_5mib_us=float(block["measured_us"]),
        fetch_5mib_gbps=float(block["measured_GBps"]),
        fetch_5mib_d2h_us=m.v("fetch_5mib_d2h_pinned") * 1e6,
        pageable_5mib_us=m.v("fetch_5mib_h2d_pageable") * 1e6,
        pageable_5mib_gbps=BLOCK_BYTES / m.v("fetch_5mib_h2d_pageable") / 1e9,
        fit_latency_us=latency * 1e6,
        fit_bandwidth_gbps=bw / 1e9,
        fit_d2h_latency_us=f.fetch["d2h_pinned"][0] * 1e6,
        fit_d2h_bandwidth_gbps=f.fetch["d2h_pinned"][1] / 1e9,
        fit_min_mib=ms.FETCH_FIT_MIN_BYTES / MIB,
        fit_5mib_us=float(block["model_us"]),
        fit_5mib_error_pct=float(block["error_pct"]),
        fit_max_abs_error_pct=float(fitted["error_pct"].abs().max()),
        small_min_us=float(small["measured_us"].min()),
        small_max_us=float(small["measured_us"].max()),
        small_max_kib=float(small["bytes"].max() / 2**10),
        small_worst_short_pct=-float(small["error_pct"].min()),
        chapter_fetch_us=float(seed.fetch_s(seed.bandwidth("mid"))) * 1e6,
        chapter_fetch_error_pct=_err(float(seed.fetch_s(seed.bandwidth("mid"))), float(block["measured_us"]) / 1e6),
        chapter_bandwidth_gbps=seed.bandwidth("mid") / 1e9,
    )
    # --- layouts ---
    lay = layout_table(s).set_index("layout")
    chunked = lay[lay["transfers"] == m.chunks]
    blocks = int(m.v("batching_blocks"))
    out.update(
        chunks=m.chunks,
        chunk_kib=m.chunk_bytes / 2**10,
        per_chunk_min_ms=float(chunked["measured_us"].min()) / 1e3,
        per_chunk_max_ms=float(chunked["measured_us"].max()) / 1e3,
        per_chunk_model_ms=float(chunked["model_us"].iloc[0]) / 1e3,
        per_copy_min_us=float(chunked["measured_us"].min()) / m.chunks,
        per_copy_max_us=float(chunked["measured_us"].max()) / m.chunks,
        strided_us=m.v("block_strided") * 1e6,
        per_chunk_lone_ratio_min=float(chunked["lone_block_ratio"].min()),
        per_chunk_lone_ratio_max=float(chunked["lone_block_ratio"].max()),
        per_chunk_in_batch_ratio_min=float(chunked["in_batch_ratio"].min()),
        per_chunk_in_batch_ratio_max=float(chunked["in_batch_ratio"].max()),
        batch_blocks=blocks,
        batch_one_copy_ms=m.v("batching_one_copy") * 1e3,
        batch_per_block_ms=m.v("batching_copy_per_block") * 1e3,
        batch_extra_per_copy_us=(m.v("batching_copy_per_block") - m.v("batching_one_copy")) / (blocks - 1) * 1e6,
    )
    # --- forward passes ---
    fwd = forward_table(s)
    plain = fwd[fwd["runner"] != "transformers eager (cross-check)"]
    hf = fwd[fwd["runner"] == "transformers eager (cross-check)"]
    sweep70 = plain[(plain["shape"] == SHAPE70) & (plain["runner"] == "eager")].set_index("tokens")
    shape70, shape8 = m.shapes[SHAPE70], m.shapes[SHAPE8]
    knee_probe = knee_probe_tokens()
    eager8 = plain[(plain["shape"] == SHAPE8) & (plain["runner"] == "eager")]
    worst8 = eager8.loc[eager8["blended_error_pct"].abs().idxmax()]
    graph70, graph8 = m.v("forward16_llama-3-70b_graph"), m.v("forward16_llama-3-8b_graph")
    out.update(
        params_70b=shape70.params,
        params_8b=shape8.params,
        weights_70b_gb=shape70.weight_bytes / 1e9,
        graph16_70b_ms=graph70 * 1e3,
        eager16_70b_ms=m.v("forward16_llama-3-70b_eager") * 1e3,
        graph16_8b_ms=graph8 * 1e3,
        eager16_8b_ms=m.v("forward16_llama-3-8b_eager") * 1e3,
        graph16_70b_tbps=shape70.weight_bytes / graph70 / 1e12,
        datasheet_lone_ms=shape70.weight_bytes / ms.H200_MEM_BANDWIDTH * 1e3,
        h200_peak_tflops=ms.H200_PEAK_FLOP_PER_S / 1e12,
        h200_mem_tbps=ms.H200_MEM_BANDWIDTH / 1e12,
        mfu_70b_pct=f.mfu[SHAPE70] * 100,
        mfu_8b_pct=f.mfu[SHAPE8] * 100,
        mfu_70b_tflops=f.mfu[SHAPE70] * ms.H200_PEAK_FLOP_PER_S / 1e12,
        eff_70b_pct=f.mem_efficiency[SHAPE70] * 100,
        eff_8b_pct=f.mem_efficiency[SHAPE8] * 100,
        floor_70b_ms=f.eager_floor_s[SHAPE70] * 1e3,
        floor_8b_ms=f.eager_floor_s[SHAPE8] * 1e3,
        floor_70b_per_layer_ms=f.eager_floor_s[SHAPE70] / shape70.layers * 1e3,
        floor_8b_per_layer_ms=f.eager_floor_s[SHAPE8] / shape8.layers * 1e3,
        sharpness=f.sharpness,
        knee_gain_pct=(2 ** (1 / f.sharpness) - 1) * 100,
        knee_70b_graph_tokens=ms.knee_tokens(m, f, SHAPE70, "graph"),
        knee_70b_eager_tokens=ms.knee_tokens(m, f, SHAPE70, "eager"),
        knee_8b_eager_tokens=ms.knee_tokens(m, f, SHAPE8, "eager"),
        knee_probe_measured_ms=float(sweep70.loc[knee_probe, "measured_ms"]),
        knee_probe_max_error_pct=float(sweep70.loc[knee_probe, "roofline_error_pct"]),
        knee_probe_blend_error_pct=float(sweep70.loc[knee_probe, "blended_error_pct"]),
        n_passes=len(plain),
        n_within=int((plain["blended_error_pct"].abs() <= ACCURACY_PCT).sum()),
        n_max_within=int((plain["roofline_error_pct"].abs() <= ACCURACY_PCT).sum()),
        accuracy_pct=ACCURACY_PCT,
        misses=_misses_text(plain),
        worst_70b_error_pct=float(plain[plain["shape"] == SHAPE70]["blended_error_pct"].abs().max()),
        hf_min_error_pct=float(hf["blended_error_pct"].min()),
        hf_max_error_pct=float(hf["blended_error_pct"].max()),
        matmul_tflops=m.v("matmul_flop_rate") / 1e12,
        matmul_pct=m.v("matmul_flop_rate") / ms.H200_PEAK_FLOP_PER_S * 100,
        hbm_copy_tbps=m.v("hbm_copy_rate") / 1e12,
        hbm_copy_pct=m.v("hbm_copy_rate") / ms.H200_MEM_BANDWIDTH * 100,
        worst8_tokens=int(worst8["tokens"]),
        worst8_ms=float(worst8["measured_ms"]),
        worst8_min_ms=float(worst8["min_ms"]),
        worst8_max_ms=float(worst8["max_ms"]),
    )
    for tool, version, _shape, tokens, rec in ms.peer_predictions():
        key = tool.lower().replace("-", "_")
        measured = graph70 if tokens == BLOCK_TOKENS else float(sweep70.loc[tokens, "measured_ms"]) / 1e3
        out[f"peer_{key}_version"] = version
        out[f"peer_{key}_{tokens}_ms"] = float(rec.value) * 1e3  # type: ignore[arg-type]
        out[f"peer_{key}_{tokens}_error_pct"] = _err(float(rec.value), measured)  # type: ignore[arg-type]
    out["sweep70_4096_ms"] = float(sweep70.loc[4096, "measured_ms"])
    out["peer_excluded_sentence"] = _peer_exclusions_sentence(m)
    # --- interior blocks ---
    inter = interior_table(s)
    res = inter[inter["upstream"] == RESIDENT]
    ev = inter[inter["upstream"] == EVICTED]
    att = attention_table(s)
    far, near = att.iloc[-1], att.iloc[0]
    out.update(
        resident_min_ms=float(res["measured_ms"].min()),
        resident_max_ms=float(res["measured_ms"].max()),
        resident_max_position=int(res["position"].max()),
        resident_model_ms=float(res["model_ms"].iloc[0]),
        resident_worst_short_pct=-float(res["error_pct"].min()),
        evicted_max_abs_error_pct=float(ev["error_pct"].abs().max()),
        evicted_max_position=int(ev["position"].max()),
        evicted_max_s=float(ev["measured_ms"].max()) / 1e3,
        attention_far_position=int(far["position"]),
        attention_far_us=float(far["no_mask_us"]),
        attention_far_model_us=float(far["model_us"]),
        attention_far_times=float(far["no_mask_over_model"]),
        attention_far_gbps=float(far["no_mask_GBps"]),
        attention_near_position=int(near["position"]),
        attention_masked_near_us=float(near["causal_us"]),
        attention_masked_near_all_layers_ms=float(near["causal_us"]) * shape70.layers / 1e3,
    )
    # --- the illustrative point ---
    ratios = comparison_table(s)

    def ratio(case: str, regime: str, layout: str = "contiguous") -> float:
        row = ratios[(ratios["case"] == case) & (ratios["regime"] == regime) & (ratios["layout"] == layout)]
        return float(row["ratio"].iloc[0])

    out.update(
        chapter_ratio=ratio("source chapter", "in batch"),
        set_in_batch_ratio=ratio("this assumption set", "in batch"),
        set_lone_ratio=ratio("this assumption set", "lone block"),
        set_name=s.assumptions.name,
        measured_lone_ratio=ratio("H200 measured, CUDA graph", "lone block"),
        measured_lone_eager_ratio=ratio("H200 measured, eager", "lone block"),
        measured_in_batch_ratio=ratio(SLOPE_CASE, "in batch"),
        measured_strided_ratio=ratio("H200 measured, CUDA graph", "lone block", "one strided copy"),
        model_lone_ratio=ratio("H200 model, fitted", "lone block"),
        model_in_batch_ratio=ratio("H200 model, fitted", "in batch"),
        in_batch_16_ms=f.slope_s_per_token * BLOCK_TOKENS * 1e3,
        slope_us_per_token=f.slope_s_per_token * 1e6,
    )
    # --- overlap ---
    alone, busy = m.v("overlap_forward_alone"), m.v("overlap_forward_with_copies")
    moved = m.v("overlap_copies_per_run") * busy / m.v("overlap_copies_s")
    h2d_alone, h2d_busy = m.v("bidirectional_h2d_alone_s"), m.v("bidirectional_h2d_together_s")
    d2h_busy = m.v("bidirectional_d2h_together_s")
    each = m.v("bidirectional_bytes")
    out.update(
        overlap_alone_ms=alone * 1e3,
        overlap_busy_ms=busy * 1e3,
        overlap_slowdown_pct=(busy / alone - 1) * 100,
        overlap_copy_gbps=m.v("overlap_copy_rate") / 1e9,
        overlap_blocks_per_pass=moved,
        overlap_cost_per_block_us=(busy - alone) / moved * 1e6,
        overlap_regen_over_cost=graph70 / ((busy - alone) / moved),
        duplex_mib=each / MIB,
        duplex_alone_gbps=each / h2d_alone / 1e9,
        duplex_h2d_gbps=each / h2d_busy / 1e9,
        duplex_d2h_gbps=each / d2h_busy / 1e9,
        duplex_total_gbps=(each / h2d_busy + each / d2h_busy) / 1e9,
        duplex_h2d_loss_pct=(1 - h2d_alone / h2d_busy) * 100,
    )
    out["duplex_sentence"] = _duplex_sentence(out["duplex_h2d_loss_pct"])
    # --- energy ---
    e70, e8, ef = (
        m.v("energy_forward16_llama-3-70b_j"),
        m.v("energy_forward16_llama-3-8b_j"),
        m.v("energy_fetch_5mib_j"),
    )
    out.update(
        energy_70b_j=e70,
        energy_70b_w=m.v("power_forward16_llama-3-70b_w"),
        energy_8b_j=e8,
        energy_fetch_mj=ef * 1e3,
        energy_fetch_w=m.v("power_fetch_w"),
        energy_idle_w=m.v("power_idle_w"),
        energy_ratio=e70 / ef,
        energy_ratio_8b=e8 / ef,
    )
    check = ms.energy_check(m)
    out.update(
        energy_in_sample_error_pct=abs(check["in_sample_error_pct"]),
        energy_held_out_j=check["held_out_j"],
        energy_held_out_measured_j=check["held_out_measured_j"],
        energy_held_out_error_pct=abs(check["held_out_error_pct"]),
        energy_held_out_direction="above" if check["held_out_error_pct"] > 0 else "below",
        energy_held_out_power_w=check["held_out_power_w"],
    )
    sweep_tokens = {shape: [p.tokens for p in m.sweeps[shape]] for shape in ms.SHAPES}
    out.update(
        block_mib=BLOCK_BYTES / MIB,
        lone_tokens=BLOCK_TOKENS,
        layers_70b=shape70.layers,
        sweep_min_tokens=min(min(t) for t in sweep_tokens.values()),
        sweep_70b_max_tokens=max(sweep_tokens[SHAPE70]),
        sweep_8b_max_tokens=max(sweep_tokens[SHAPE8]),
        compute_fit_min_tokens=ms.COMPUTE_FIT_MIN_TOKENS,
        matmul_n=int(m.v("matmul_n")),
        knee_probe_tokens=knee_probe,
        peer_far_tokens=max(p[3] for p in ms.peer_predictions()),
        pageable_loss_pct=(1 - m.v("fetch_5mib_h2d_pinned") / m.v("fetch_5mib_h2d_pageable")) * 100,
        n_per_chunk_runs=len(chunked),
        n_evicted=len(m.evicted),
    )
    change = changes_under_measured_set()
    top = [(change["titles"][name], count) for name, count in change["ranked"] if count][:4]
    out["measured_set_sentence"] = (
        f"Rebuilt with it instead of the seed set, the pages that change most are {_and([t for t, _ in top])}"
        f" ({_and([f'{c:,}' for _, c in top])} changed table cells); the illustrative block's ratio goes from"
        f" {change['seed_ratio']:.2f} to {change['h200_ratio']:.1f} inside a batch and from"
        f" {change['seed_lone_ratio']:.1f} to {change['h200_lone_ratio']:.1f} as a lone block."
    )
    out.update(validation_numbers(s))
    return out


# ---------------------------------------------------------------------------
# figures
# ---------------------------------------------------------------------------


def fetch_figure(s: Scenario) -> tuple[Figure, str]:
    """Fetch time against transfer size: measured copies, the fitted model, this set's model; residuals below."""
    import matplotlib.pyplot as plt

    df = fetch_table(s)
    fig, _ = new_figure(4.8, 6.4)
    fig.clf()
    top, bottom = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [2.2, 1]})
    styles = {
        "h2d_pinned": ("host to device, pinned", PALETTE[0], "o"),
        "d2h_pinned": ("device to host, pinned", PALETTE[3], "s"),
        "h2d_pageable": ("host to device, pageable", PALETTE[1], "^"),
    }
    for kind, (label, color, marker) in styles.items():
        rows = df[df["kind"] == kind]
        top.loglog(rows["bytes"], rows["measured_us"], marker, color=color, label=label, ms=5)
        if kind != "h2d_pageable":
            bottom.semilogx(rows["bytes"], rows["error_pct"], marker + "-", color=color, ms=4, lw=0.8, label=label)
    sizes = np.logspace(np.log10(df["bytes"].min()), np.log10(df["bytes"].max()), 200)
    latency, bw = _f().fetch["h2d_pinned"]
    top.loglog(
        sizes,
        costs.fetch_time_s(sizes, bw, latency) * 1e6,
        color=PALETTE[0],
        lw=1.2,
        label=f"fit: {latency * 1e6:.1f} µs + bytes / {bw / 1e9:.1f} GB/s",
    )
    tf = ms.fit_transfer(_m())
    top.loglog(
        sizes,
        [tf.pageable_s(n) * 1e6 for n in sizes],
        color=PALETTE[1],
        lw=1.0,
        ls="-.",
        label=f"pageable fit, cache to {tf.host_cache_bytes / MIB:g} MiB",
    )
    label = s.assumptions["illustrative.bandwidth"].value
    set_bw = s.bandwidth(str(label))
    top.loglog(
        sizes,
        costs.fetch_time_s(sizes, set_bw, s.v("fetch_latency")) * 1e6,
        color="#555555",
        lw=1.0,
        ls="--",
        label=f"this set: {s.v('fetch_latency') * 1e6:g} µs + bytes / {set_bw / 1e9:g} GB/s",
    )
    top.axvline(BLOCK_BYTES, color="#888888", lw=0.8, ls=":")
    top.annotate(
        f"{BLOCK_BYTES / MIB:g} MiB block",
        xy=(BLOCK_BYTES, 0.03),
        xycoords=top.get_xaxis_transform(),
        xytext=(3, 0),
        textcoords="offset points",
        fontsize=9.5,
        color="#555555",
    )
    top.set_ylim(bottom=float(df["measured_us"].min()) / 3)
    top.set_ylabel("copy time (µs)")
    top.set_ylim(top=float(df["measured_us"].max()) * 60)  # room above the points for the legend
    top.legend(
        fontsize=9.5,
        loc="upper left",
        title="One H200, PCIe 5.0 x16",
        title_fontsize=10,
        alignment="left",
        frameon=True,
        framealpha=1.0,
        edgecolor="none",
    )
    bottom.axhline(0, color="#444444", lw=0.8)
    bottom.axvspan(df["bytes"].min() / 1.5, ms.FETCH_FIT_MIN_BYTES / 1.4, color="#eeeeee", zorder=0)
    bottom.annotate(
        "not in the fit", xy=(0.02, 0.86), xycoords="axes fraction", va="top", fontsize=9.5, color="#555555"
    )
    bottom.set_ylabel("fit error (%)")
    bottom.set_xlabel("bytes per transfer")
    bottom.legend(fontsize=9.5, loc="lower right")
    fig.subplots_adjust(hspace=0.08, left=0.16, right=0.97, top=0.98)
    plt.setp(top.get_xticklabels(), visible=False)
    f = _f()
    records = [
        _m().record("fetch_5mib_h2d_pinned"),
        f.records["h2d_pinned_latency"],
        f.records["h2d_pinned_bandwidth"],
        *s.used("fetch_latency", f"bandwidth.{label}"),
    ]
    small = df[(df["kind"] == "h2d_pinned") & (df["bytes"] < ms.FETCH_FIT_MIN_BYTES)]["measured_us"]
    outside = df[df["kind"].str.endswith("_pinned") & ~df["in_fit"]]["error_pct"]
    small_error = float(outside.loc[outside.abs().idxmax()])  # the widest miss below the fitted sizes (signed)
    big = df[df["bytes"] >= ms.FETCH_FIT_MIN_BYTES]
    slow = (
        big[big["kind"] == "h2d_pageable"].set_index("bytes")["measured_us"]
        / big[big["kind"] == "h2d_pinned"].set_index("bytes")["measured_us"]
    )
    return _finish(
        fig,
        records,
        (f.records["h2d_pinned_latency"].key, f.records["h2d_pinned_bandwidth"].key),
        f"From {ms.FETCH_FIT_MIN_BYTES / MIB:g} MiB up, the fit predicts every pinned copy"
        f" within {numbers_fetch_max(df):.1f} %; smaller copies sit on a {small.min():.0f} to {small.max():.0f} µs"
        f" floor it {'undershoots' if small_error < 0 else 'overshoots'} by up to {abs(small_error):.0f} %;"
        f" pageable copies take {slow.min():.1f} to {slow.max():.1f} times as long. Points: medians of"
        f" {min(c.timing.reps for c in _m().copies)} to {max(c.timing.reps for c in _m().copies)} copies; lines:"
        " the fit (solid), the pageable fit (dash-dotted), this set's model (dashed).",
    )


def numbers_fetch_max(df: pd.DataFrame) -> float:
    """The largest error (percent, absolute) of the fetch fit over the points it was fitted to."""
    return float(df[df["in_fit"]]["error_pct"].abs().max())


def forward_figure(s: Scenario) -> tuple[Figure, str]:
    """Forward-pass time against tokens for both shapes: measured, compute-only, roofline and blended models."""
    m, f = _m(), _f()
    df = forward_table(s)
    fig, _ = new_figure(4.8, 10.6)
    fig.clf()
    axes = fig.subplots(2, 1)
    peers = ms.peer_predictions()
    tools = ", ".join(sorted({f"{tool} {version}" for tool, version, *_ in peers}))
    for ax, shape in zip(axes, ms.SHAPES, strict=True):
        rows = df[df["shape"] == shape]
        grid = np.logspace(0, np.log10(int(rows["tokens"].max())), 200)
        model = ms.forward_model_s(m, f, shape, grid, "eager")
        graph = ms.forward_model_s(m, f, shape, grid, "graph")
        ax.loglog(grid, model["compute"] * 1e3, color=PALETTE[2], lw=1.4, ls="--", label="compute only, fitted MFU")
        ax.loglog(grid, model["roofline"] * 1e3, color="#777777", lw=1.2, ls=":", label="max(compute, floor), eager")
        ax.loglog(grid, model["blended"] * 1e3, color=PALETTE[0], lw=1.8, label="blended model, eager")
        ax.loglog(grid, graph["blended"] * 1e3, color=PALETTE[4], lw=1.4, ls="-.", label="blended model, CUDA graph")
        for runner, marker, color, face, label in (
            ("eager", "o", PALETTE[0], PALETTE[0], "measured, eager"),
            ("CUDA graph", "D", PALETTE[4], PALETTE[4], "measured, CUDA graph"),
            ("transformers eager (cross-check)", "o", PALETTE[6], "none", "measured, transformers (cross-check)"),
        ):
            pts = rows[rows["runner"] == runner]
            ax.loglog(pts["tokens"], pts["measured_ms"], marker, color=color, mfc=face, ms=6, label=label)
        mine = [p for p in peers if p[2] == shape]
        for i, (_tool, _version, _shape, tokens, rec) in enumerate(mine):
            value = float(rec.value) * 1e3  # type: ignore[arg-type]
            ax.loglog(
                tokens,
                value,
                "x",
                color=PALETTE[1],
                ms=9,
                mew=2,
                label=f"peers at efficiency 1.0:\n{tools}" if i == 0 else None,
            )
        knee = ms.knee_tokens(m, f, shape, "eager")
        ax.axvline(knee, color="#999999", lw=0.8)
        # in the right part of the axis the label goes left of the line, at the top, clear of the curves
        right = np.log(knee) > 0.55 * np.log(float(grid[-1]))
        ax.annotate(
            f"knee ≈ {knee:,.0f} tokens",
            xy=(knee, 0.95 if right else 0.06),
            xycoords=ax.get_xaxis_transform(),
            xytext=(-5 if right else 5, 0),
            textcoords="offset points",
            ha="right" if right else "left",
            va="top" if right else "baseline",
            fontsize=9.5,
            color="#444444",
        )
        ax.set_ylim(bottom=float(rows["measured_ms"].min()) / 6)
        name = "Llama-3-70B" if shape == SHAPE70 else "Llama-3-8B"
        ax.set_title(
            f"{'ab'[axes.tolist().index(ax)]}. {name} shapes: MFU {f.mfu[shape] * 100:.1f} %,\nmemory"
            f" {f.mem_efficiency[shape] * 100:.1f} % of {ms.H200_MEM_BANDWIDTH / 1e12:g} TB/s, eager floor"
            f" {f.eager_floor_s[shape] * 1e3:.1f} ms",
            fontsize=10,
            loc="left",
        )
        ax.set_ylabel("forward-pass time (ms)")
    axes[1].set_xlabel("tokens in the forward pass")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower left", ncol=1, fontsize=9.5, bbox_to_anchor=(0.02, 0.055))
    fig.subplots_adjust(hspace=0.3, top=0.95, bottom=0.3, left=0.16, right=0.97)
    records = [
        *_h200_records(),
        f.records[f"mfu_{SHAPE70}"],
        f.records[f"mem_efficiency_{SHAPE70}"],
        f.records["sharpness"],
    ]
    plain = df[df["runner"] != "transformers eager (cross-check)"]
    within = int((plain["blended_error_pct"].abs() <= ACCURACY_PCT).sum())
    peer_errors = [
        _err(
            float(rec.value),
            float(
                plain[(plain["shape"] == shp) & (plain["tokens"] == n)]["measured_ms"].min()  # type: ignore[arg-type]
            )
            / 1e3,
        )
        for _tool, _version, shp, n, rec in peers
    ]
    fig, caption = _finish(
        fig,
        records,
        (f.records[f"mfu_{SHAPE70}"].key, f.records[f"mem_efficiency_{SHAPE70}"].key),
        f"A forward pass costs a floor until about {ms.knee_tokens(m, f, SHAPE70, 'eager'):,.0f} tokens (70B shapes),"
        f" its FLOPs after; the blended model is within {ACCURACY_PCT:g} % of {within} of the {len(plain)} measured"
        f" passes, where the peer tools {_misses(peer_errors)}. Points: measured medians; lines: fitted models."
        " Eager passes rest on the launch floor, CUDA-graph ones on the weight stream.",
    )
    fig.subplots_adjust(bottom=0.3)
    return fig, caption


def _misses(errors: list[float]) -> str:
    """How models with ``errors`` (percent, negative: short) miss the measurement, the verb chosen by their signs."""
    low, high = min(errors), max(errors)
    if high < 0:
        return f"fall {-high:.0f} to {-low:.0f} % short"
    if low > 0:
        return f"overshoot by {low:.0f} to {high:.0f} %"
    return f"land {low:+.0f} to {high:+.0f} % off"


RATIO_LABELS = {
    "source chapter": "source chapter",
    "this assumption set": "this assumption set",
    "H200 measured, CUDA graph": "H200, CUDA graph",
    "H200 measured, eager": "H200, eager",
    SLOPE_CASE: "H200, fitted slope",
    "H200 model, fitted": "H200 model, fitted",
}
"""Short names of the ratio table's cases for the figure's axis."""


def ratio_figure(s: Scenario) -> tuple[Figure, str]:
    """Regenerate / fetch at the illustrative point: a lone block above, inside a batch below; measured bars solid."""
    from matplotlib.patches import Patch
    from matplotlib.ticker import LogLocator

    df = comparison_table(s)
    layouts = {
        "contiguous": "",
        "one strided copy": ", strided",
        "per-chunk copies, fastest run": ", chunks, fast",
        "per-chunk copies, slowest run": ", chunks, slow",
    }
    regimes = (("lone block", PALETTE[0], "a. a lone block"), ("in batch", PALETTE[2], "b. inside a batch"))
    counts = [int((df["regime"] == regime).sum()) for regime, _, _ in regimes]
    fig, ax0 = new_figure(4.8, 7.8)
    ax0.remove()
    axes = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": counts})
    for ax, (regime, color, title) in zip(axes, regimes, strict=True):
        rows = df[df["regime"] == regime]
        y = np.arange(len(rows))[::-1]
        for yi, (_, r) in zip(y, rows.iterrows(), strict=True):
            measured = str(r["case"]).startswith("H200 measured")  # solid: measured; hatched: fitted or assumed
            ax.barh(
                yi,
                r["ratio"],
                height=0.65,
                color=color if measured else "white",
                edgecolor=color,
                hatch=None if measured else "///",
                lw=1.0,
            )
            value = float(r["ratio"])
            text = f"{value:,.0f}×" if value >= 100 else f"{value:.1f}×"
            ax.annotate(text, xy=(value, yi), xytext=(3, 0), textcoords="offset points", va="center", fontsize=9.5)
        ax.set_yticks(y, [f"{RATIO_LABELS[r['case']]}{layouts[r['layout']]}" for _, r in rows.iterrows()])
        ax.set_ylim(-0.6, len(rows) - 0.4)
        ax.axvspan(chapter.CLAIM_LOW, chapter.CLAIM_HIGH, color="#eeeeee", zorder=0)
        ax.set_title(title, fontsize=10, loc="left")
        ax.grid(axis="y", visible=False)
    axes[1].set_xscale("log")
    axes[1].set_xlim(1, float(df["ratio"].max()) * 12)
    plain_log_ticks(axes[1].xaxis)
    axes[1].xaxis.set_major_locator(LogLocator(base=10, subs=(1.0,), numticks=5))  # every other decade past 4
    axes[1].set_xlabel("regenerate / fetch (log scale)")
    fig.legend(
        handles=[
            Patch(facecolor="#777777", edgecolor="#777777", label="measured on one H200"),
            Patch(facecolor="white", edgecolor="#777777", hatch="///", label="fitted, or an assumption"),
            Patch(facecolor="#eeeeee", label=f"the chapter's {chapter.CLAIM_LOW:g}× to {chapter.CLAIM_HIGH:,.0f}×"),
        ],
        loc="lower left",
        bbox_to_anchor=(0.02, 0.085),
        ncol=1,
        fontsize=9.5,
        borderaxespad=0.0,
    )
    fig.subplots_adjust(left=0.46, right=0.97, top=0.96, hspace=0.22)
    f = _f()
    point = s.illustrative
    records = [
        *s.used(f"bandwidth.{point['bandwidth_label']}", f"mfu.{point['mfu_label']}", "peak_flops"),
        _m().record("forward16_llama-3-70b_graph"),
        _m().record("fetch_5mib_h2d_pinned"),
        f.records["slope_s_per_token"],
    ]
    measured = df[df["case"].str.startswith("H200 measured") | (df["case"] == SLOPE_CASE)]

    def pick(regime: str, layout: str) -> pd.Series:
        return measured[(measured["regime"] == regime) & (measured["layout"].str.startswith(layout))]["ratio"]

    lone = float(pick("lone block", "contiguous").min())
    batch = float(pick("in batch", "contiguous").min())
    chunk_lone = (float(pick("lone block", "per-chunk").min()), float(pick("lone block", "per-chunk").max()))
    chunk_batch = (float(pick("in batch", "per-chunk").min()), float(pick("in batch", "per-chunk").max()))
    verb = "drop" if chunk_lone[1] < lone and chunk_batch[1] < batch else "move"
    fig, caption = _finish(
        fig,
        records,
        (_m().record("forward16_llama-3-70b_graph").key, _m().record("fetch_5mib_h2d_pinned").key),
        f"On one H200 a lone block costs {lone:,.0f} times its fetch and a block inside a batch {batch:,.0f} times;"
        f" fetched as one copy per layer chunk, the ratios {verb} to {chunk_lone[0]:,.0f} to {chunk_lone[1]:,.0f}"
        f" and {chunk_batch[0]:.1f} to {chunk_batch[1]:.1f}. Solid bars are measured; hatched ones are fitted (the"
        " in-batch slope, the models) or assumed; the shaded band is the chapter's claim.",
    )
    fig.subplots_adjust(bottom=0.27)
    return fig, caption


def _finish(fig: Figure, records: list[Record], drivers: tuple[str, ...], words: str) -> tuple[Figure, str]:
    """:func:`~kvtier.report.figures.finish` with ``words``' first sentence as the caption's lead."""
    lead, _, text = words.partition(". ")
    return finish(fig, records, text, lead=f"{lead}.", drivers=drivers)


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
