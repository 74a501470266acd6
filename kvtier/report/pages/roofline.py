"""The roofline page (``notebooks/07_roofline.md``): regeneration bounded by compute and by memory reads."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from kvtier.formulas import roofline as rl
from kvtier.inputs import hardware
from kvtier.inputs.keys import MFU_LABELS
from kvtier.report.columns import Column, declare
from kvtier.report.figures import PALETTE, finish, new_figure, plain_log_ticks
from kvtier.scenario import POINT_KEYS, Scenario

if TYPE_CHECKING:
    from matplotlib.figure import Figure

NOTEBOOK = "07_roofline"
"""The page's text notebook, ``notebooks/NOTEBOOK.md``."""
TITLE = "the roofline"
"""The page's name as another page writes it mid-sentence (the registry's ``Page.title``)."""

KEYS: tuple[str, ...] = (*POINT_KEYS, "regen.batch_tokens", "regen.model")
"""The assumption keys the page reads; its notebook's ``parameters`` cell declares exactly these."""
FIG_WIDTH_IN = 4.8
"""Figure width (in): under :data:`~kvtier.report.figures.MAX_WIDTH_IN` with room for the tight bounding box's
padding, so that 9 pt text is still 9 px where a 420 px screen shows the figure 370 px wide."""


def numbers(s: Scenario) -> dict[str, Any]:
    """A lone tail block under the roofline on the set's own device, and the presets' range."""
    df = table(s)
    own = df[df["device"] == "this assumption set"].set_index("mfu_bracket")
    presets = df[df["device"] != "this assumption set"]
    known = presets.dropna(subset=["lone_block_ms"])
    out: dict[str, Any] = {
        "peak_tflops": s.v("peak_flops") / 1e12,
        "mem_tbps": s.v("regen.mem_bandwidth") / 1e12,
        "mem_efficiency_pct": s.v("regen.mem_efficiency") * 100,
        "weights_gb": s.weight_bytes / 1e9,
        "block_tokens": s.block_tokens,
        "batch_tokens": s.batch_tokens,
        "memory_ms": float(own["memory_ms"].iloc[0]),
        "n_devices": int(presets["device"].nunique()),
        "n_memory_bound": int((known["bound"] == "memory").sum()),
        "n_device_points": len(known),
        "preset_lone_min_ms": float(known["lone_block_ms"].min()),
        "preset_lone_max_ms": float(known["lone_block_ms"].max()),
        "preset_batch_min_tokens": int(known["compute_bound_batch_tokens"].min()),
        "preset_batch_max_tokens": int(known["compute_bound_batch_tokens"].max()),
    }
    for label in MFU_LABELS:
        row = own.loc[label]
        out[f"compute_{label}_ms"] = float(row["compute_ms"])
        out[f"lone_{label}_ms"] = float(row["lone_block_ms"])
        out[f"bound_{label}"] = str(row["bound"])
        out[f"batch_{label}_tokens"] = int(row["compute_bound_batch_tokens"])
        out[f"batched_{label}_ms"] = float(row["batched_ms"])
        out[f"mfu_{label}_pct"] = s.mfu(label) * 100
    out["lone_over_compute_conservative"] = out["lone_conservative_ms"] / out["compute_conservative_ms"]
    memory_at = [label for label in MFU_LABELS if out[f"bound_{label}"] == "memory"]
    if len(memory_at) == len(MFU_LABELS):
        lone = sorted({round(out[f"lone_{label}_ms"], 1) for label in MFU_LABELS})
        takes = f"{lone[0]:.1f} ms whatever the MFU" if len(lone) == 1 else f"{lone[0]:.1f} to {lone[-1]:.1f} ms"
        out["lone_verdict"] = (
            f"memory-bound at every MFU bracket: reading the weights takes longer than the compute at any of them,"
            f" so regenerating it takes {takes} (the table's lone-block time),"
            f" {out['lone_over_compute_conservative']:.1f} times the compute-only time at"
            f" {out['mfu_conservative_pct']:g} % MFU"
        )
    elif not memory_at:
        out["lone_verdict"] = "compute-bound at every MFU bracket, so the source chapter's compute-only model stands"
    else:
        compute_at = [label for label in MFU_LABELS if label not in memory_at]
        out["lone_verdict"] = (
            f"memory-bound at the {', '.join(memory_at)} MFU bracket(s) and compute-bound at the"
            f" {', '.join(compute_at)} one(s)"
        )
    return out


COLUMNS = (
    Column("device", "device"),
    Column("mfu_bracket", "MFU bracket"),
    Column("mfu_pct", "MFU", "%"),
    Column("peak_TFLOPps", "peak compute", "TFLOP/s"),
    Column("mem_TBps", "memory bandwidth", "TB/s"),
    Column("compute_ms", "compute time", "ms"),
    Column("memory_ms", "memory time", "ms"),
    Column("lone_block_ms", "regeneration time, lone block", "ms"),
    Column("bound", "bound by"),
    Column("compute_bound_batch_tokens", "smallest compute-bound batch", "tokens"),
    Column("batch_tokens", "batch", "tokens"),
    Column("batched_ms", "block inside the batch", "ms"),
    Column("peak_provenance", "peak provenance"),
    Column("mem_provenance", "memory bandwidth provenance"),
)
"""The columns of :func:`table`, in words with their units."""


def table(s: Scenario) -> pd.DataFrame:
    """A lone tail block under the roofline, for each accelerator preset and MFU bracket.

    The first device is the assumption set's own (``peak_flops``, ``regen.mem_bandwidth``);
    the others are the presets of :mod:`kvtier.inputs.hardware`, each with its own peak and memory
    bandwidth.  Position 0, upstream resident: the source chapter's tail block.
    ``compute_bound_batch_tokens`` is the smallest whole batch that is compute-bound (rounded
    up here, once; the prose reads it from this column).
    """
    devices = [
        (
            "this assumption set",
            s.v("peak_flops"),
            s.v("regen.mem_bandwidth"),
            s.a("peak_flops").provenance,
            s.a("regen.mem_bandwidth").provenance,
        )
    ]
    for name, acc in hardware.load_accelerators().items():
        devices.append(
            (
                name,
                acc.peak_flop_per_s,
                acc.mem_bandwidth_bytes_per_s,
                acc.peak_record.provenance,
                acc.mem_bandwidth_record.provenance,
            )
        )
    eff = s.v("regen.mem_efficiency")
    lone = s.block_tokens
    memory_bytes = float(s.regen_bytes(0, "resident", lone))
    batch = s.batch_tokens
    rows = []
    for device, peak, bw, peak_prov, bw_prov in devices:
        memory = float(rl.memory_time_s(memory_bytes, bw, eff))
        for label in MFU_LABELS:
            mfu = s.mfu(label)
            row = {
                "device": device,
                "mfu_bracket": label,
                "mfu_pct": mfu * 100,
                "peak_TFLOPps": np.nan if peak is None else peak / 1e12,
                "mem_TBps": bw / 1e12,
                "compute_ms": np.nan,
                "memory_ms": memory * 1e3,
                "lone_block_ms": np.nan,
                "bound": "unknown: no published dense bf16 peak",
                "compute_bound_batch_tokens": np.nan,
                "batch_tokens": batch,
                "batched_ms": np.nan,
                "peak_provenance": peak_prov,
                "mem_provenance": bw_prov,
            }
            if peak is not None:
                kw = {"peak_flop_per_s": peak, "mem_bandwidth_bytes_per_s": bw}
                compute = float(s.regen_time_s(0, "resident", mfu, model="mfu", **kw))
                row.update(
                    compute_ms=compute * 1e3,
                    lone_block_ms=float(s.regen_time_s(0, "resident", mfu, model="roofline", batch_tokens=lone, **kw))
                    * 1e3,
                    bound=str(s.regen_bound(0, "resident", mfu, batch_tokens=lone, **kw)),
                    # the smallest whole batch that is compute-bound: rounded up once, here
                    compute_bound_batch_tokens=float(
                        math.ceil(
                            rl.compute_bound_batch_tokens(
                                s.weight_bytes, lone, s.kv_bytes_per_token, 0, compute, bw, eff
                            )
                        )
                    ),
                    batched_ms=float(s.regen_time_s(0, "resident", mfu, model="roofline", batch_tokens=batch, **kw))
                    * 1e3,
                )
            rows.append(row)
    return declare(pd.DataFrame(rows), COLUMNS)


def roofline_vs_batch(s: Scenario) -> tuple[Figure, str]:
    """Regeneration time of the tail block against the tokens sharing its forward pass, per device."""
    from matplotlib.ticker import LogLocator

    point = s.illustrative
    batch = np.logspace(np.log10(s.block_tokens), np.log10(max(8192, 4 * s.block_tokens)), 200)
    devices = [("this assumption set", s.v("peak_flops"), s.v("regen.mem_bandwidth"))]
    devices += [(n, a.peak_flop_per_s, a.mem_bandwidth_bytes_per_s) for n, a in hardware.load_accelerators().items()]
    devices = [
        (name, peak, bw)
        for name, peak, bw in devices
        if peak is not None and not (name == "chapter-implied" and (peak, bw) == devices[0][1:])
    ]
    # the legend sits below the axes, one line a device: the figure grows with it (6.2 in held five)
    fig, ax = new_figure(FIG_WIDTH_IN, 6.2 + 0.3 * max(0, len(devices) - 5))
    markers = ("o", "s", "^", "D", "v", "P", "X", "*")  # each device its marker too, not its colour alone
    i = 0
    for name, peak, bw in devices:
        kw = {"peak_flop_per_s": peak, "mem_bandwidth_bytes_per_s": bw}
        t = s.regen_time_s(0, "resident", point["mfu"], model="roofline", batch_tokens=batch, **kw)
        c = float(s.regen_time_s(0, "resident", point["mfu"], model="mfu", **kw))
        color = PALETTE[i % len(PALETTE)]
        # the set's own device is drawn dashed and on top: a preset with the same figures lies under it
        style = {"ls": (0, (5, 3)), "lw": 2.2, "zorder": 3} if i == 0 else {"lw": 1.5}
        ax.loglog(
            batch,
            t * 1e3,
            color=color,
            marker=markers[i % len(markers)],
            markevery=(6 * i, 40),
            ms=5,
            label=f"{name} ({peak / 1e12:g} TFLOP/s, {bw / 1e12:g} TB/s)",
            **style,
        )
        ax.axhline(c * 1e3, color=color, ls=":", lw=0.8)
        i += 1
    ax.set_xlabel("tokens in the block's forward pass")
    plain_log_ticks(ax.yaxis)
    plain_log_ticks(ax.xaxis)
    ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 3.0)))  # 1, 2, 5 crowd 5,000 and 10,000 together
    ax.set_ylabel("regeneration time of the block (ms)")
    ax.set_title(
        f"Roofline regeneration of a {s.block_tokens}-token tail block\nat {point['mfu'] * 100:g} % MFU", fontsize=10
    )
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=1, fontsize=9)
    fig.subplots_adjust(left=0.15, right=0.96)
    records = s.used(
        "model",
        "param_count",
        "weight_dtype",
        "block_tokens",
        "peak_flops",
        "flops_per_param_token",
        f"mfu.{point['mfu_label']}",
        "regen.mem_bandwidth",
        "regen.mem_efficiency",
    )
    n = numbers(s)
    label = point["mfu_label"]
    lead = (
        f"A lone block is {n['bound_' + label]}-bound on this set's device: its {n['block_tokens']}-token pass takes"
        f" {n['lone_' + label + '_ms']:.1f} ms against {n['compute_' + label + '_ms']:.1f} ms of compute at"
        f" {n['mfu_' + label + '_pct']:g} % MFU, and the pass turns compute-bound from about"
        f" {n['batch_' + label + '_tokens']:,} tokens."
    )
    fig, text = finish(
        fig,
        records,
        "Left edge: a lone block; to the right, more tokens share its pass. Each device's roofline (this set's"
        " dashed) above its compute-only time (dotted).",
        lead=lead,
        drivers=("regen.mem_bandwidth", "peak_flops"),
    )
    # room between the axis label and the footer for the legend: 1.2 in held five devices, 0.3 in a device more
    legend_in = 1.2 + 0.3 * max(0, len(devices) - 5)
    fig.subplots_adjust(bottom=fig.subplotpars.bottom + legend_in / fig.get_size_inches()[1])
    return fig, text


TABLES = (
    (
        "roofline",
        table,
        ("device", "mfu_bracket"),
        (
            "device",
            "mfu_bracket",
            "peak_TFLOPps",
            "mem_TBps",
            "compute_ms",
            "memory_ms",
            "lone_block_ms",
            "bound",
            "compute_bound_batch_tokens",
        ),
    ),
)
"""The page's tables of record: (name, builder, key columns)."""
FIGURES = (("fig_roofline", roofline_vs_batch),)
"""The page's figures: (glue name, function returning the figure and its caption)."""
