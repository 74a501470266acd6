"""The measured page's sentences: the misses, the duplex loss and the peers left out, in words."""

from __future__ import annotations

from typing import Any

import pandas as pd

from kvtier.inputs import measurements as ms
from kvtier.report.pages.measured.shipped import ACCURACY_PCT, SHAPE70
from kvtier.report.words import listed
from kvtier.units import format_number


def misses_text(df: pd.DataFrame) -> str:
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


def duplex_sentence(h2d_loss_pct: float) -> str:
    """What writing blocks out does to fetching others in, given the host-to-device rate lost with both busy (%)."""
    if h2d_loss_pct > 0.5:
        return (
            f"writing evicted blocks out slows fetching others in, by {h2d_loss_pct:.1f} % of the host-to-device"
            " rate, but does not stop it."
        )
    if h2d_loss_pct < -0.5:
        return f"fetching ran {-h2d_loss_pct:.1f} % faster with writes under way, so writing out does not slow it."
    return "writing evicted blocks out leaves fetching others in at its rate alone, to within half a percent."


def peer_exclusions_sentence(m: ms.Measurements) -> str:
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


def measured_set_sentence(change: dict[str, Any]) -> str:
    """What rebuilding with the measured set changes most (:func:`changes_under_measured_set`), in words."""
    top = [(change["titles"][name], count) for name, count in change["ranked"] if count][:4]
    compared = len(change["titles"])
    return (
        f"Rebuilt with it instead of the seed set, of the {compared} analytical pages compared cell by cell (those that"
        " read no trace and draw no random numbers) the ones that change most are"
        f" {listed([t for t, _ in top])} ({listed([f'{c:,}' for _, c in top])} changed table cells), and the decision"
        " on the landing page changes as its measured-set row shows; the illustrative block's ratio goes from"
        f" {format_number(change['seed_ratio'], 3)} to {format_number(change['h200_ratio'], 3)} inside a batch and"
        f" from {format_number(change['seed_lone_ratio'], 3)} to {format_number(change['h200_lone_ratio'], 3)} as a"
        " lone block."
    )
