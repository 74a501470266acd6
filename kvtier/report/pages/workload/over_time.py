"""The workload page's trace over time: reuse and capacity per window of the trace, and the windows table."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

import numpy as np
import pandas as pd

from kvtier import analysis, store
from kvtier.analysis import WINDOWS_MIN
from kvtier.formulas.cache.curve import curve_error
from kvtier.inputs import traces
from kvtier.report.columns import Column, declare, named
from kvtier.report.figures import MIN_FONT_PT, PALETTE, finish, new_figure
from kvtier.report.pages.workload.curve import footer_records
from kvtier.report.pages.workload.summary import trace_name
from kvtier.report.pages.workload.words import first_window, over_time_sentence
from kvtier.scenario import Scenario

if TYPE_CHECKING:
    from matplotlib.figure import Figure


OVER_TIME_MAX_WINDOWS = 240
"""The most windows the over-time series draws: a window is a minute, or as many whole minutes as keep below it."""


def over_time_window_s(duration_s: float) -> float:
    """The series' window (s): one minute, or the fewest whole minutes that cut the trace into at most
    :data:`OVER_TIME_MAX_WINDOWS` windows (a week-long trace: 42 minutes)."""
    return 60.0 * max(1, math.ceil(duration_s / 60 / OVER_TIME_MAX_WINDOWS))


_OVER_TIME_CACHE: WeakKeyDictionary[Scenario, dict[str, Any]] = WeakKeyDictionary()


def over_time_series(s: Scenario) -> dict[str, Any]:
    """The build's trace's hit ratio per window at the decision's capacity, and an infinite cache's (kept with ``s``).

    The streamed curve over time (:func:`kvtier.inputs.traces.stream_lru`) with windows of
    :func:`over_time_window_s`.
    Returns ``window_s``, ``capacity_blocks`` (:func:`kvtier.analysis.decision_blocks`), ``start_s`` (each window's
    start from the first request), ``references``, ``hit_ratio`` and ``infinite_hit_ratio`` (fractions;
    NaN with no references), and ``whole`` (the whole trace's hit ratio at the capacity).
    """
    found = _OVER_TIME_CACHE.get(s)
    if found is not None:
        return found
    r = analysis.curve(s)
    window = over_time_window_s(r.duration_s)
    cap = analysis.decision_blocks(s)
    value = s.assumptions.value

    def series(capacity_blocks: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        h = traces.stream_lru(
            trace_name(s),
            r.block_tokens,
            trace_format=str(value("workload.trace_format")),
            count=str(value("workload.hit_count")),
            over_time=(capacity_blocks, None, window),
        )
        assert h.over_time is not None
        return h.over_time

    def both() -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray], np.ndarray]:
        return series(cap), series(math.inf)[2]

    key = {"trace": analysis.trace_key(s), "capacity_blocks": cap, "window_s": window}
    (start, refs, ratio), infinite = both() if key["trace"] is None else store.memoized("over-time", key, both)
    found = {
        "window_s": window,
        "capacity_blocks": cap,
        "start_s": start,
        "references": refs,
        "hit_ratio": ratio,
        "infinite_hit_ratio": infinite,
        "whole": float(r.hit_ratio(cap)),
        "duration_s": r.duration_s,
        "block_bytes": s.tier_bytes_per_token * r.block_tokens,  # as a tier stores it
    }
    _OVER_TIME_CACHE[s] = found
    return found


def _weighted(ratio: np.ndarray, refs: np.ndarray) -> float:
    """The hit ratio of windows together: their hits over their references (NaN: none)."""
    n = float(refs.sum())
    return float(np.nansum(ratio * refs)) / n if n else math.nan


def over_time_numbers(s: Scenario) -> dict[str, Any]:
    """The series in numbers: first window, second half, whole trace, and the sentence a reader concludes from.

    The second half is the windows that start at or after half the trace's span: the tier is warm
    there, and the spread of its windows is the drift.
    """
    o = over_time_series(s)
    start, refs, ratio = o["start_s"], o["references"], o["hit_ratio"]
    late = start >= o["duration_s"] / 2 if start.size else np.zeros(0, dtype=bool)
    late_ratio = ratio[late & (refs > 0)]
    out: dict[str, Any] = {
        "over_time_window_min": o["window_s"] / 60,
        "over_time_windows": int(start.size),
        "over_time_capacity_gib": o["capacity_blocks"] * o["block_bytes"] / 2**30,
        "over_time_first_pct": float(ratio[0]) * 100 if start.size else math.nan,
        "over_time_first_inf_pct": float(o["infinite_hit_ratio"][0]) * 100 if start.size else math.nan,
        "over_time_late_pct": _weighted(ratio[late], refs[late]) * 100,
        "over_time_late_low_pct": float(late_ratio.min()) * 100 if late_ratio.size else math.nan,
        "over_time_late_high_pct": float(late_ratio.max()) * 100 if late_ratio.size else math.nan,
        "over_time_whole_pct": o["whole"] * 100,
    }
    out["over_time_sentence"] = over_time_sentence(trace_name(s), out)
    return {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in out.items()}


def over_time_figure(s: Scenario) -> tuple[Figure, str]:
    """The build's trace's hit ratio per window at the decision's capacity, with an infinite cache's beside it."""
    o = over_time_series(s)
    n = over_time_numbers(s)
    minutes = o["start_s"] / 60
    width = o["window_s"] / 60
    fig, ax = new_figure(4.8, 3.6)
    if minutes.size:
        x = np.r_[minutes, minutes[-1] + width]
        for key, color, lw, ls, label in (
            ("hit_ratio", PALETTE[0], 2.0, "-", f"LRU, {n['over_time_capacity_gib']:,.0f} GiB"),
            ("infinite_hit_ratio", PALETTE[6], 1.2, "--", "infinite cache"),
        ):
            y = np.r_[o[key], o[key][-1]] * 100
            ax.step(x, y, where="post", color=color, lw=lw, ls=ls, label=label)
        ax.axhline(
            o["whole"] * 100, color=PALETTE[0], lw=0.8, ls=":", label=f"LRU, whole trace: {o['whole'] * 100:.1f} %"
        )
    ax.set_ylim(0, 100)
    ax.legend(loc="upper right", fontsize=MIN_FONT_PT, frameon=False)
    ax.set_xlabel("time since the trace's first request (min)")
    ax.set_ylabel(f"hit ratio per {width:g}-min window (%)")
    name = trace_name(s)
    if n["over_time_windows"] >= 2 and n["over_time_late_pct"] is not None:
        lead = (
            f"At the decision's capacity the {name} trace's tier hits {n['over_time_first_pct']:.1f} % in its"
            f" {first_window(width)} and {n['over_time_late_pct']:.1f} % over the second half; the gap to the"
            " dashed line is the tier's size, the rest warm-up and drift."
        )
    else:
        lead = f"The {name} trace fits in one window: it shows no change over time."
    return finish(
        fig,
        footer_records(s, "model", "kv_dtype", "decision.hit_target"),
        "Solid: each window's hit ratio at the decision's capacity; dashed: an infinite cache's; dotted: the whole"
        " trace's at that capacity.",
        lead=lead,
        drivers=("workload.trace", "decision.hit_target"),
    )


WINDOWS_COLUMNS = (
    Column("window_min", "window", "min"),
    Column("warmup_min", "warm-up before each window", "min"),
    Column("mean_gap_pts", "mean gap to the single pass", "points"),
    Column("max_gap_pts", "largest gap to the single pass", "points"),
    *named("provenance"),
)
"""The columns of :func:`windows_table`, in words with their units."""


def windows_table(s: Scenario) -> pd.DataFrame:
    """Per (window, warm-up) of :data:`kvtier.analysis.WINDOWS_MIN`: the windowed exact curve's gap to the single pass.

    The trace replayed window by window, each cache emptied before its warm-up and the histograms added
    (:func:`kvtier.inputs.distributed.windowed`'s curve; tallied in the trace's second streamed pass,
    :class:`kvtier.formulas.cache.replay.WindowTally`) against the single pass (:func:`kvtier.analysis.curve`), by
    :func:`kvtier.formulas.cache.curve.curve_error`: the mean and largest gap in points of hit ratio.  A
    reuse that reaches back past a window's warm-up is a miss, so the gap is a loss.
    """
    single = analysis.curve(s)
    windows = analysis.stream(s, windows_s=[(w * 60, u * 60) for w, u in WINDOWS_MIN]).windows
    rows = []
    for window, warmup in WINDOWS_MIN:
        gap = curve_error(single, windows[(window * 60, warmup * 60)])
        rows.append(
            {
                "window_min": window,
                "warmup_min": warmup,
                "mean_gap_pts": gap["mean_abs"] * 100,
                "max_gap_pts": gap["max_abs"] * 100,
                "provenance": "derived",
            }
        )
    return declare(pd.DataFrame(rows), WINDOWS_COLUMNS)


def window_numbers(s: Scenario) -> dict[str, Any]:
    """The windows' sentence and its numbers: the shortest window cold and warmed up, the longest cold."""
    df = windows_table(s)
    cold = df[df["warmup_min"] == 0]
    short = df["window_min"] == df["window_min"].min()
    first, warm = df[short & (df["warmup_min"] == 0)].iloc[0], df[short & (df["warmup_min"] > 0)].iloc[0]
    long = cold[cold["window_min"] == cold["window_min"].max()].iloc[0]
    sentence = (
        f"Replayed in {first['window_min']:g}-minute windows that each start cold, the {trace_name(s)} trace's curve"
        f" falls {first['mean_gap_pts']:.2g} points below the single pass on average ({first['max_gap_pts']:.2g} at"
        f" most): every reuse that reaches back into an earlier window is lost. A {warm['warmup_min']:g}-minute"
        f" warm-up before each window brings that to {warm['mean_gap_pts']:.2g} ({warm['max_gap_pts']:.2g}), and"
        f" {long['window_min']:g}-minute windows to {long['mean_gap_pts']:.2g} ({long['max_gap_pts']:.2g}) with no"
        " warm-up: a warm-up should span the reuse intervals that matter (the next section gives them)."
    )
    return {"windows_sentence": sentence}
