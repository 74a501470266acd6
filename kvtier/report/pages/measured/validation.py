"""The measured page's validation: each model's error on held-out measurements, and the peers' calibration."""

from __future__ import annotations

import math
from functools import cache
from typing import Any

import numpy as np
import pandas as pd

from kvtier.formulas import roofline
from kvtier.inputs import measurements as ms
from kvtier.inputs.measurements import forms
from kvtier.report.columns import Column, declare, named
from kvtier.report.pages.measured.shipped import ACCURACY_PCT, BLOCK_BYTES, fits, measurements
from kvtier.report.words import listed
from kvtier.scenario import Scenario
from kvtier.units import MIB

HELD_OUT_PCT = 15.0
"""The issue's goal for a shape predicted from another shape's fits (percent either way)."""


P8_MISS_TOKENS = 64
"""The 8B eager pass the 70B fits miss, slower than the pass of twice its tokens: reported with its spread."""


GOAL_COPY_BYTES = 256 * 2**10
"""The issue's goal for copies: every copy of at least this size within :data:`ACCURACY_PCT` out of sample (B)."""


def case_bytes(case: str) -> float:
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
    ms.POOL_GROUP: "pool",
    "small copies, h2d pageable": "small_pageable",
    "a block in per-layer chunks": "chunks",
    "both directions at once": "duplex",
}
"""Each validation group's short name in the page's glue keys (``val_<slug>_<sample>_...``)."""


@cache
def model_checks() -> tuple[ms.Check, ...]:
    """Every check of the models on the shipped measurements: forward passes, copies, transfers."""
    m = measurements()
    return ms.forward_checks(m) + ms.copy_checks(m) + ms.transfer_checks(m)


VALIDATION_COLUMNS = (
    *named("group", "case", "sample"),
    Column("measured_ms", "measured", "ms"),
    Column("fastest_ms", "fastest", "ms"),
    Column("slowest_ms", "slowest", "ms"),
    Column("repetitions", "repetitions"),
    Column("model_ms", "model", "ms"),
    Column("error_pct", "error", "%"),
)
"""The columns of :func:`validation_table`, in words with their units."""


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
            "fastest_ms": c.spread.min_s * 1e3 if c.spread else math.nan,
            "slowest_ms": c.spread.max_s * 1e3 if c.spread else math.nan,
            "repetitions": c.spread.reps if c.spread else 0,
            "model_ms": c.model_s * 1e3,
            "error_pct": c.error_pct,
        }
        for c in model_checks()
    ]
    return declare(pd.DataFrame(rows), VALIDATION_COLUMNS)


SUMMARY_COLUMNS = (
    *named("group", "sample", "points"),
    Column("within_10_pct", "points within 10 %"),
    Column("within_15_pct", "points within 15 %"),
    Column("worst_error_pct", "worst error", "%"),
    Column("worst_case", "worst case"),
)
"""The columns of :func:`validation_summary`, in words with their units."""


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
    return declare(pd.DataFrame(rows), SUMMARY_COLUMNS)


PEER_COLUMNS = (
    *named("tool", "tokens"),
    Column("measured_ms", "measured", "ms"),
    Column("default_ms", "default", "ms"),
    Column("default_error_pct", "default error", "%"),
    Column("calibrated_ms", "calibrated", "ms"),
    Column("calibrated_error_pct", "calibrated error", "%"),
    *named("calibration", "sample"),
    Column("kvtier_ms", "kvtier", "ms"),
    Column("kvtier_error_pct", "kvtier error", "%"),
    Column("kvtier_sample", "kvtier sample"),
    *named("command"),
)
"""The columns of :func:`peer_calibration_table`, in words with their units."""


def peer_calibration_table(s: Scenario) -> pd.DataFrame:
    """The peers' figures at their defaults and calibrated the way kvtier is, beside kvtier's model.

    A peer's figure assumes every peak is reached; calibrated, it is divided by the efficiency
    fitted to the measurements the same way: the MFU of the 70B eager passes refitted without the
    pass (leave-one-out) where the pass is compute-bound, and the single memory efficiency of the
    70B CUDA-graph pass where it is memory-bound (in sample: that pass is the only one measuring it).
    kvtier's model beside it is the one :func:`validation_table` holds for the same pass.
    """
    m, checks = measurements(), model_checks()
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
            eff = fits().mem_efficiency[shape_name]
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
    eff = fits().mem_efficiency[ms.FIT_SHAPE]
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
    return declare(pd.DataFrame(rows), PEER_COLUMNS)


@cache
def _forms() -> tuple[forms.FormCheck, ...]:
    return forms.form_checks(measurements())


FORM_COLUMNS = (
    *named("form", "key"),
    Column("introduced", "introduced after"),
    Column("group", "held-out group"),
    *named("points"),
    Column("repetitions", "repetitions each"),
    Column("without_worst_pct", "without the form, worst", "%"),
    Column("in_sample_worst_pct", "with it, in sample, worst", "%"),
    Column("left_out_min_pct", "group left out, from", "%"),
    Column("left_out_max_pct", "group left out, to", "%"),
    Column("refit", "the fit without the group"),
)
"""The columns of :func:`form_table`, in words with their units."""


def _worst(err: np.ndarray) -> float:
    return float(err[int(np.argmax(np.abs(err)))])


def form_table(s: Scenario) -> pd.DataFrame:
    """Each form of the model against the group it was chosen for (:func:`forms.form_checks`).

    The group's worst error without the form (the residual it was chosen after), with it fitted on
    every point, and the range of its errors with the whole group left out of the fit.  Does not
    depend on the assumption set.
    """
    rows = []
    for f in _forms():
        left = f.errors_pct("left_out")
        reps = sorted(set(f.reps))
        rows.append(
            {
                "form": f.form,
                "key": f.key,
                "introduced": f.introduced,
                "group": f.group,
                "points": len(f.cases),
                "repetitions": "–".join(str(r) for r in (reps[0], reps[-1])) if len(reps) > 1 else str(reps[0]),
                "without_worst_pct": _worst(f.errors_pct("without")),
                "in_sample_worst_pct": _worst(f.errors_pct("in_sample")),
                "left_out_min_pct": float(left.min()),
                "left_out_max_pct": float(left.max()),
                "refit": f.refit,
            }
        )
    return declare(pd.DataFrame(rows), FORM_COLUMNS)


PEER_FORM_COLUMNS = (
    *named("group", "sample", "points"),
    Column("kvtier_within", "kvtier within 10 %"),
    Column("peer_within", "peers' form within 10 %"),
    Column("kvtier_worst_pct", "kvtier worst", "%"),
    Column("peer_worst_pct", "peers' form worst", "%"),
)
"""The columns of :func:`peer_form_table`, in words with their units."""


@cache
def _peer_checks() -> tuple[forms.PeerCheck, ...]:
    return forms.peer_checks(measurements())


def peer_form_table(s: Scenario) -> pd.DataFrame:
    """kvtier against the peers' form given the same calibration data, per group of passes (counts, worst errors).

    :func:`kvtier.inputs.measurements.forms.peer_checks`: the peers' ``max(compute, memory)`` with
    kvtier's MFU, the 70B graph pass's memory efficiency and one eager floor per pass, each refitted
    the way kvtier's own values are.
    """
    df = pd.DataFrame(
        [
            {
                "group": c.group,
                "sample": c.sample,
                "kvtier": (c.kvtier_s / c.measured_s - 1) * 100,
                "peer": (c.peer_s / c.measured_s - 1) * 100,
            }
            for c in _peer_checks()
        ]
    )
    rows = []
    for group, g in df.groupby("group", sort=False):
        rows.append(
            {
                "group": group,
                "sample": listed(list(dict.fromkeys(g["sample"]))),
                "points": len(g),
                "kvtier_within": int((g["kvtier"].abs() <= ACCURACY_PCT).sum()),
                "peer_within": int((g["peer"].abs() <= ACCURACY_PCT).sum()),
                "kvtier_worst_pct": _worst(g["kvtier"].to_numpy()),
                "peer_worst_pct": _worst(g["peer"].to_numpy()),
            }
        )
    return declare(pd.DataFrame(rows), PEER_FORM_COLUMNS)


def form_numbers(s: Scenario) -> dict[str, Any]:
    """The forms' glue: per form, its group's errors without it, in sample and left out; the peers on equal terms."""
    out: dict[str, Any] = {}
    slugs = ("floor", "knee", "overhead", "attention", "cache", "floor_knee")
    for slug, f in zip(slugs, _forms(), strict=True):
        left, without = f.errors_pct("left_out"), f.errors_pct("without")
        out.update(
            {
                f"form_{slug}_n": len(f.cases),
                f"form_{slug}_group": f.group,
                f"form_{slug}_without_min_pct": float(without.min()),
                f"form_{slug}_without_max_pct": float(without.max()),
                f"form_{slug}_out_min_pct": float(left.min()),
                f"form_{slug}_out_max_pct": float(left.max()),
                f"form_{slug}_out_worst_abs_pct": float(np.abs(left).max()),
            }
        )
    peers = peer_form_table(s)
    out.update(
        peer_eq_n=int(peers["points"].sum()),
        peer_eq_kvtier_within=int(peers["kvtier_within"].sum()),
        peer_eq_peer_within=int(peers["peer_within"].sum()),
        peer_eq_floor_ms=forms.fit_peer(measurements()).floor_s * 1e3,
    )
    lost = peers[peers["peer_within"] < peers["kvtier_within"]]
    out["peer_eq_lost_groups"] = listed(
        [
            f"{g} ({k} of {n} against {p})"
            for g, n, k, p in zip(
                lost["group"], lost["points"], lost["kvtier_within"], lost["peer_within"], strict=True
            )
        ]
    )
    return out


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
    out["val_p8_outliers"] = listed(
        [f"the {c} pass ({e:+.0f} %)" for c, e in zip(outside["case"], outside["error_pct"], strict=True)]
    )
    # how far each 8B sweep point's median sits above its fastest repetition: is a miss the model's or the timing's?
    sweep = {f"{p.tokens:,} tokens, eager": p.timing for p in measurements().sweeps[ms.HELD_OUT_SHAPE]}
    odd = [sweep[c] for c in outside["case"] if c in sweep]
    out["val_p8_outlier_spread"] = listed(
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
    m = measurements()
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
    sized = np.array([case_bytes(c) for c in pageable["case"]])
    goal = pageable[sized >= GOAL_COPY_BYTES]
    worst = int(np.argmax(np.abs(goal["error_pct"].to_numpy())))
    out.update(
        pageable_goal_kib=GOAL_COPY_BYTES / 1024,
        pageable_goal_n=len(goal),
        pageable_goal_loo_worst_abs_pct=float(np.abs(goal["error_pct"]).max()),
        pageable_goal_loo_worst_case=str(goal["case"].iloc[worst]),
    )
    pool = validation_table(s)
    pool = pool[(pool["group"] == ms.POOL_GROUP) & (pool["sample"] == ms.LEAVE_ONE_OUT)]
    big = pool[np.array([case_bytes(c) for c in pool["case"]]) >= GOAL_COPY_BYTES]
    warm = big[np.array([case_bytes(c) for c in big["case"]]) <= tf.host_cache_bytes]
    out.update(
        pool_warm_min_pct=float(warm["error_pct"].min()),
        pool_warm_max_pct=float(warm["error_pct"].max()),
        pool_warm_n=len(warm),
    )
    # what the out-of-sample claim rests on: distinct measured points, each a median of its repetitions
    table = validation_table(s)
    out_of_sample = table[(table["sample"] != ms.IN_SAMPLE) & (table["group"] != ms.POOL_GROUP)]
    distinct = out_of_sample.drop_duplicates(["group", "case"])
    counted = distinct[distinct["repetitions"] > 0]
    out.update(
        val_independent_points=len(distinct),
        val_reps_min=int(counted["repetitions"].min()),
        val_reps_max=int(counted["repetitions"].max()),
        hf_floor_per_layer_us=ms.fit_stack_floor(m, ff) * 1e6,
        pytorch_floor_per_layer_us=ff.launch_floor_per_layer_s * 1e6,
    )
    # the 8B 64-token pass: its miss and its repetitions, reported, not excluded
    p8_64 = table[(table["group"] == f"{ms.HELD_OUT_SHAPE} passes from {ms.FIT_SHAPE} fits")]
    p8_64 = p8_64[p8_64["case"] == f"{P8_MISS_TOKENS} tokens, eager"].iloc[0]
    out.update(
        p8_64_error_pct=float(p8_64["error_pct"]),
        p8_64_error_vs_fastest_pct=float((p8_64["model_ms"] / p8_64["fastest_ms"] - 1) * 100),
        p8_64_fastest_ms=float(p8_64["fastest_ms"]),
        p8_64_slowest_ms=float(p8_64["slowest_ms"]),
        p8_64_median_ms=float(p8_64["measured_ms"]),
        p8_64_reps=int(p8_64["repetitions"]),
        p8_64_tokens=P8_MISS_TOKENS,
    )
    out.update(form_numbers(s))
    peers = peer_calibration_table(s)
    out["peer_cal_max_abs_pct"] = float(np.max(np.abs(peers["calibrated_error_pct"].iloc[:-1])))
    out["peer_single_8b_pct"] = float(peers["calibrated_error_pct"].iloc[-1])
    return out
