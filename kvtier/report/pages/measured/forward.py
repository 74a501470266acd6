"""The measured page's forward passes: the sweeps against the fitted model, interior blocks and attention."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from kvtier.formulas import roofline
from kvtier.inputs import measurements as ms
from kvtier.report.columns import Column, declare, named
from kvtier.report.figures import PALETTE, new_figure
from kvtier.report.pages.measured.shipped import (
    ACCURACY_PCT,
    BLOCK_TOKENS,
    SHAPE8,
    SHAPE70,
    error_pct,
    finish_figure,
    fits,
    h200_records,
    measurements,
)
from kvtier.report.pages.measured.words import misses_text, peer_exclusions_sentence
from kvtier.scenario import Scenario
from kvtier.units import MIB

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def knee_probe_tokens() -> int:
    """The 70B eager sweep point where max(compute, floor) misses most: the pass nearest the knee (tokens)."""
    df = pd.DataFrame(forward_rows())
    sweep = df[(df["shape"] == SHAPE70) & (df["runner"] == "eager")]
    return int(sweep.loc[sweep["roofline_error_pct"].abs().idxmax(), "tokens"])


def forward_rows() -> list[dict[str, Any]]:
    """Every measured forward pass, per shape and runner, against the fitted roofline and the blended model."""
    m, f = measurements(), fits()
    rows = []
    runs: list[tuple[str, str, str, tuple[ms.Pass, ...]]] = []
    for shape in ms.SHAPES:
        runs.append((shape, "eager", "eager", m.sweeps[shape]))
        graph = m.tail16[(shape, "graph")]
        runs.append((shape, "CUDA graph", "graph", (ms.Pass(BLOCK_TOKENS, 0, graph),)))
        runs.append((shape, "transformers eager (cross-check)", "eager", m.hf_sweeps[shape]))
    # a launch floor belongs to its software stack: transformers' passes get transformers' own, refitted on them
    per_layer = ms.fit_stack_floor(m, ms.shipped_forward_fit())
    hf = replace(f, eager_floor_s={name: per_layer * m.shapes[name].layers for name in ms.SHAPES})
    for shape, runner, mode, passes in runs:
        for p in passes:
            model = ms.forward_model_s(m, hf if runner.startswith("transformers") else f, shape, p.tokens, mode)
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
                    "roofline_error_pct": error_pct(float(model["roofline"]), t),
                    "blended_error_pct": error_pct(float(model["blended"]), t),
                    "bound": "compute" if model["compute"] > model["floor"] else "floor",
                }
            )
    return rows


FORWARD_COLUMNS = (
    *named("shape", "runner", "tokens"),
    Column("measured_ms", "measured", "ms"),
    Column("min_ms", "fastest", "ms"),
    Column("max_ms", "slowest", "ms"),
    Column("compute_ms", "compute time", "ms"),
    Column("floor_ms", "floor time", "ms"),
    Column("roofline_ms", "roofline time", "ms"),
    Column("blended_ms", "blended time", "ms"),
    Column("roofline_error_pct", "roofline error", "%"),
    Column("blended_error_pct", "blended error", "%"),
    Column("bound", "bound by"),
)
"""The columns of :func:`forward_table`, in words with their units."""


def forward_table(s: Scenario) -> pd.DataFrame:
    """Every measured forward pass against the compute-only, roofline and blended models, fitted.

    ``compute_ms`` is FLOPs at the fitted MFU; ``floor_ms`` the weight stream at the fitted
    memory efficiency, or in eager mode the fitted launch floor where that is slower;
    ``roofline_ms`` their maximum; ``blended_ms`` the package's model,
    :func:`kvtier.formulas.roofline.blended_time_s`.  The transformers cross-check (probe4) is set
    against the eager model with transformers' own launch floor, refitted on its passes
    (:func:`kvtier.inputs.measurements.fit_stack_floor`): plain PyTorch's floor is not carried onto it.
    """
    return declare(pd.DataFrame(forward_rows()), FORWARD_COLUMNS)


RESIDENT = "upstream resident"


EVICTED = "upstream evicted: prefill to it"


INTERIOR_COLUMNS = (
    *named("upstream", "position"),
    Column("tokens_computed", "tokens computed"),
    Column("measured_ms", "measured", "ms"),
    Column("model_ms", "model", "ms"),
    Column("error_pct", "error", "%"),
)
"""The columns of :func:`interior_table`, in words with their units."""


def interior_table(s: Scenario) -> pd.DataFrame:
    """Interior 16-token blocks of the 70B shapes (eager), measured against the fitted blended model.

    ``upstream resident``: the block attends over ``position`` cached positions;
    ``upstream evicted``: the whole prefix is recomputed with it, logits for the last token only.
    """
    m, f = measurements(), fits()
    rows = []
    for p in m.resident:
        model = float(ms.forward_model_s(m, f, SHAPE70, BLOCK_TOKENS, "eager", position=p.position)["blended"])
        rows.append((RESIDENT, p.position, p.tokens, p.timing.median_s, model))
    for p in m.evicted:
        model = float(ms.forward_model_s(m, f, SHAPE70, p.tokens, "eager", logits_tokens=1)["blended"])
        rows.append((EVICTED, p.position, p.tokens, p.timing.median_s, model))
    return declare(
        pd.DataFrame(
            [
                {
                    "upstream": case,
                    "position": position,
                    "tokens_computed": tokens,
                    "measured_ms": t * 1e3,
                    "model_ms": model * 1e3,
                    "error_pct": error_pct(model, t),
                }
                for case, position, tokens, t, model in rows
            ]
        ),
        INTERIOR_COLUMNS,
    )


ATTENTION_COLUMNS = (
    Column("position", "position"),
    Column("kv_MiB_one_layer", "KV cache, one layer", "MiB"),
    Column("no_mask_us", "attention, no mask", "µs"),
    Column("causal_us", "attention, causal mask", "µs"),
    Column("model_us", "model", "µs"),
    Column("no_mask_over_model", "no mask / model", "×"),
    Column("causal_over_model", "causal mask / model", "×"),
    Column("no_mask_GBps", "attention, no mask", "GB/s"),
)
"""The columns of :func:`attention_table`, in words with their units."""


def attention_table(s: Scenario) -> pd.DataFrame:
    """One layer's attention of 16 queries over ``position`` cached positions, against the KV read at the fitted rate.

    The model reads the layer's K and V once at the 70B pass's fitted memory efficiency of
    4.8 TB/s; ``no_mask`` is the flash path (the block sees all of its prefix), ``causal``
    the masked call a forward pass makes.
    """
    m, f = measurements(), fits()
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
    return declare(pd.DataFrame(rows), ATTENTION_COLUMNS)


def forward_figure(s: Scenario) -> tuple[Figure, str]:
    """Forward-pass time against tokens for both shapes: measured, compute-only, roofline and blended models."""
    m, f = measurements(), fits()
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
        *h200_records(),
        f.records[f"mfu_{SHAPE70}"],
        f.records[f"mem_efficiency_{SHAPE70}"],
        f.records["sharpness"],
    ]
    plain = df[df["runner"] != "transformers eager (cross-check)"]
    within = int((plain["blended_error_pct"].abs() <= ACCURACY_PCT).sum())
    peer_errors = [
        error_pct(
            float(rec.value),
            float(
                plain[(plain["shape"] == shp) & (plain["tokens"] == n)]["measured_ms"].min()  # type: ignore[arg-type]
            )
            / 1e3,
        )
        for _tool, _version, shp, n, rec in peers
    ]
    fig, caption = finish_figure(
        fig,
        records,
        (f.records[f"mfu_{SHAPE70}"].key, f.records[f"mem_efficiency_{SHAPE70}"].key),
        f"A forward pass costs a floor until about {ms.knee_tokens(m, f, SHAPE70, 'eager'):,.0f} tokens (70B shapes),"
        f" its FLOPs after; the blended model is within {ACCURACY_PCT:g} % of {within} of the {len(plain)} measured"
        f" passes, where the peer tools {misses(peer_errors)}. Points: measured medians; lines: fitted models."
        " Eager passes rest on the launch floor, CUDA-graph ones on the weight stream.",
    )
    fig.subplots_adjust(bottom=0.3)
    return fig, caption


def misses(errors: list[float]) -> str:
    """How models with ``errors`` (percent, negative: short) miss the measurement, the verb chosen by their signs."""
    low, high = min(errors), max(errors)
    if high < 0:
        return f"fall {-high:.0f} to {-low:.0f} % short"
    if low > 0:
        return f"overshoot by {low:.0f} to {high:.0f} %"
    return f"land {low:+.0f} to {high:+.0f} % off"


def forward_numbers(s: Scenario) -> dict[str, Any]:
    """The forward passes the page quotes: the shapes, the fits, the knee, the misses and the peers' predictions.

    Times in ms, rates in TFLOP/s or TB/s, errors in percent of the measured time.
    """
    m, f = measurements(), fits()
    fwd = forward_table(s)
    plain = fwd[fwd["runner"] != "transformers eager (cross-check)"]
    hf = fwd[fwd["runner"] == "transformers eager (cross-check)"]
    sweep70 = plain[(plain["shape"] == SHAPE70) & (plain["runner"] == "eager")].set_index("tokens")
    shape70, shape8 = m.shapes[SHAPE70], m.shapes[SHAPE8]
    knee_probe = knee_probe_tokens()
    eager8 = plain[(plain["shape"] == SHAPE8) & (plain["runner"] == "eager")]
    worst8 = eager8.loc[eager8["blended_error_pct"].abs().idxmax()]
    graph70, graph8 = m.v("forward16_llama-3-70b_graph"), m.v("forward16_llama-3-8b_graph")
    out: dict[str, Any] = dict(
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
        misses=misses_text(plain),
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
        out[f"peer_{key}_{tokens}_error_pct"] = error_pct(float(rec.value), measured)  # type: ignore[arg-type]
    out["sweep70_4096_ms"] = float(sweep70.loc[4096, "measured_ms"])
    out["peer_excluded_sentence"] = peer_exclusions_sentence(m)
    return out


def interior_numbers(s: Scenario) -> dict[str, Any]:
    """Interior blocks and attention the page quotes: upstream resident or evicted, and attention far and near."""
    shape70 = measurements().shapes[SHAPE70]
    inter = interior_table(s)
    res = inter[inter["upstream"] == RESIDENT]
    ev = inter[inter["upstream"] == EVICTED]
    att = attention_table(s)
    far, near = att.iloc[-1], att.iloc[0]
    return dict(
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
