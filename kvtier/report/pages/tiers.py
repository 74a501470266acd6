"""The tier-ladder page (``notebooks/08_tiers.md``): every link preset against regeneration."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from kvtier.formulas import costs, roofline
from kvtier.inputs import hardware
from kvtier.inputs.assumptions import BANDWIDTH_LABELS
from kvtier.report import words
from kvtier.report.figures import PALETTE, finish, new_figure
from kvtier.scenario import POINT_KEYS, Scenario
from kvtier.units import format_bandwidth

if TYPE_CHECKING:
    from matplotlib.figure import Figure

NOTEBOOK = "08_tiers"
"""The page's text notebook, ``notebooks/NOTEBOOK.md``."""
TITLE = "the tier ladder"
"""The page's name as another page writes it mid-sentence (the registry's ``Page.title``)."""

KEYS: tuple[str, ...] = (*POINT_KEYS, "interior.position", "regen.batch_tokens", "regen.model")
"""The assumption keys the page reads; its notebook's ``parameters`` cell declares exactly these."""

ORDINALS = {1: "first", 2: "second", 3: "third", 4: "fourth", 5: "fifth", 6: "sixth", 7: "seventh", 8: "eighth"}


def first_differing_digit(a: float, b: float, max_digits: int = 10) -> int:
    """The first significant digit (1-based) at which ``a`` and ``b`` differ; 0 when they agree to ``max_digits``.

    Both are written with the same number of significant digits, counted from the larger
    one's leading digit, so 218.78 and 218.75 differ at the fifth.
    """
    if a == b:
        return 0
    scale = int(np.floor(np.log10(max(abs(a), abs(b)))))
    for n in range(1, max_digits + 1):
        step = 10.0 ** (scale - n + 1)
        if np.floor(abs(a) / step + 1e-9) != np.floor(abs(b) / step + 1e-9) or (a < 0) != (b < 0):
            return n
    return 0


def numbers(s: Scenario) -> dict[str, Any]:
    """The tier ladder: break-even bandwidths and the extremes of the links' ratios."""

    df = table(s)
    presets = df[~df["link"].str.startswith("bracket ")]
    point = s.illustrative
    p = s.v("interior.position")
    regen = {
        case: float(s.regen_time_s(pos, up, point["mfu"]))
        for case, pos, up in (("tail", 0, "resident"), ("resident", p, "resident"), ("evicted", p, "evicted"))
    }
    slowest = presets.loc[presets["fetch_us"].idxmax()]
    out: dict[str, Any] = {
        "regen_model": {
            "mfu": "the block's marginal compute (FLOPs over peak × MFU, the source chapter's model)",
            "roofline": f"the roofline with {s.batch_tokens:,} tokens sharing the forward pass",
        }[str(s.assumptions.value("regen.model"))],
        "lone_device": words.lone_device(s),
        "lone_n_fetch_wins": int(presets["lone_fetch_wins_tail"].sum()),
        "lone_min_ratio_tail": float(presets["lone_ratio_tail"].min()),
        "lone_max_ratio_tail": float(presets["lone_ratio_tail"].max()),
        "lone_slowest_ratio_tail": float(slowest["lone_ratio_tail"]),
        "mfu_pct": point["mfu"] * 100,
        "position_tokens": int(p),
        "n_links": len(presets),
        "n_fetch_wins": int(presets["fetch_wins_tail"].sum()),
        "slowest_link": str(slowest["link"]),
        "slowest_fetch_us": float(slowest["fetch_us"]),
        "slowest_ratio_tail": float(slowest["ratio_tail"]),
        "min_ratio_tail": float(presets["ratio_tail"].min()),
        "max_ratio_tail": float(presets["ratio_tail"].max()),
    }
    bracket = df.loc[df["link"] == f"bracket {point['bandwidth_label']}"].iloc[0]
    digit = first_differing_digit(float(bracket["ratio_tail"]), float(point["ratio"]))
    out["bracket_link"] = str(bracket["link"])
    out["bracket_ratio_tail"] = float(bracket["ratio_tail"])
    out["ratio_page_ratio"] = float(point["ratio"])
    places = max(digit - 1 - int(np.floor(np.log10(abs(out["ratio_page_ratio"])))), 0) if digit else 0
    out["ratio_digit_sentence"] = (
        f"which is why its in-batch ratio at the {point['bandwidth_label']} bracket differs from the ratio page's"
        f" at the {ORDINALS.get(digit, f'{digit}th')} significant digit"
        f" ({out['bracket_ratio_tail']:.{places}f} against {out['ratio_page_ratio']:.{places}f})."
        if digit
        else f"yet its in-batch ratio at the {point['bandwidth_label']} bracket equals the ratio page's"
        " to ten significant digits."
    )
    faster = out["slowest_ratio_tail"] >= 1
    out["slowest_sentence"] = (
        f"The slowest, {out['slowest_link']}, fetches the block in {out['slowest_fetch_us']:,.0f} µs,"
        + (
            f" still {out['slowest_ratio_tail']:.1f} times faster than regenerating it."
            if faster
            else f" {1 / out['slowest_ratio_tail']:.1f} times slower than regenerating it: there recomputing wins."
        )
    )
    out["ladder_sentence"] = (
        "Every tier clears the break-even bandwidth here, so the source chapter's question changes: whether to"
        " fetch or recompute is settled, and what the choice of tier decides is how much faster fetching is, next"
        " to what each tier costs per byte held."
        if out["n_fetch_wins"] == out["n_links"]
        else f"Only {out['n_fetch_wins']} of the {out['n_links']} tiers clear the break-even bandwidth here; on the"
        " others recomputing the tail block is quicker, and the choice between tiers decides the answer."
    )
    lone = {
        case: float(s.lone_regen_s(pos, up, point["mfu"]))
        for case, pos, up in (("tail", 0, "resident"), ("resident", p, "resident"), ("evicted", p, "evicted"))
    }
    for prefix, times in (("", regen), ("lone_", lone)):
        for case, t in times.items():
            out[f"{prefix}regen_{case}_ms"] = t * 1e3
            bw = float(roofline.break_even_bandwidth(s.block_bytes, t, s.block_latency_s))
            out[f"{prefix}break_even_{case}_gbps"] = bw / 1e9
            out[f"{prefix}break_even_{case}"] = (
                format_bandwidth(bw, 3) if np.isfinite(bw) else "unreachable (latency too long)"
            )
    return out


def table(s: Scenario) -> pd.DataFrame:
    """Every link preset (and the set's three brackets): fetch time, ratio, break-even bandwidth.

    Regeneration follows the set's ``regen.model`` at the illustrative MFU (for the seed
    set, ``mfu``: the in-batch regime), for the tail block and for the block at
    ``interior.position`` with the upstream resident or evicted; the ``lone_`` columns are
    the lone-block regime, the roofline on the set's device with no other tokens in the pass.
    """

    point = s.illustrative
    mfu = point["mfu"]
    p = s.v("interior.position")
    regen = {
        "tail": float(s.regen_time_s(0, "resident", mfu)),
        "resident": float(s.regen_time_s(p, "resident", mfu)),
        "evicted": float(s.regen_time_s(p, "evicted", mfu)),
    }
    lone = {
        "tail": float(s.lone_regen_s(0, "resident", mfu)),
        "resident": float(s.lone_regen_s(p, "resident", mfu)),
        "evicted": float(s.lone_regen_s(p, "evicted", mfu)),
    }
    links = [
        (
            f"bracket {label}",
            f"the assumption set's {label} bandwidth",
            s.bandwidth(label),
            "as stated",
            s.v("fetch_latency"),
            s.a(f"bandwidth.{label}").provenance,
            s.a("fetch_latency").provenance,
        )
        for label in BANDWIDTH_LABELS
    ]
    for name, link in hardware.load_links().items():
        links.append(
            (
                name,
                link.title,
                link.bandwidth_bytes_per_s,
                link.raw_or_net,
                link.latency_s,
                link.bandwidth_record.provenance,
                link.latency_record.provenance,
            )
        )
    rows = []
    transfers = s.fetch_transfers
    for name, title, bw, raw_or_net, per_transfer, bw_prov, lat_prov in links:
        fetch_s = float(costs.fetch_time_s(s.block_bytes, bw, per_transfer, transfers))
        latency = per_transfer * transfers  # what one block's fetch pays in latency
        rows.append(
            {
                "link": name,
                "title": title,
                "bandwidth_GBps": bw / 1e9,
                "raw_or_net": raw_or_net,
                "latency_us": per_transfer * 1e6,
                "transfers": transfers,
                "fetch_us": fetch_s * 1e6,
                "ratio_tail": regen["tail"] / fetch_s,
                "ratio_resident": regen["resident"] / fetch_s,
                "ratio_evicted": regen["evicted"] / fetch_s,
                "break_even_tail_GBps": float(roofline.break_even_bandwidth(s.block_bytes, regen["tail"], latency))
                / 1e9,
                "fetch_wins_tail": fetch_s < regen["tail"],
                "lone_ratio_tail": lone["tail"] / fetch_s,
                "lone_ratio_resident": lone["resident"] / fetch_s,
                "lone_ratio_evicted": lone["evicted"] / fetch_s,
                "lone_break_even_tail_GBps": float(roofline.break_even_bandwidth(s.block_bytes, lone["tail"], latency))
                / 1e9,
                "lone_fetch_wins_tail": fetch_s < lone["tail"],
                "bandwidth_provenance": bw_prov,
                "latency_provenance": lat_prov,
            }
        )
    return pd.DataFrame(rows)


def tier_ladder(s: Scenario) -> tuple[Figure, str]:
    """Every tier's bandwidth as a labelled bar against the break-even bandwidths of both regimes."""
    point = s.illustrative
    n = numbers(s)
    links = sorted(hardware.load_links().items(), key=lambda item: (item[1].bandwidth_bytes_per_s, item[0]))
    names = [name for name, _ in links]
    gbps = np.array([link.bandwidth_bytes_per_s / 1e9 for _, link in links])
    tail = n["break_even_tail_gbps"]
    fig, ax = new_figure(8.5, 5.6)
    y = np.arange(len(links))
    colors = [PALETTE[3] if g > tail else PALETTE[1] for g in gbps]
    ax.barh(y, gbps, left=1e-6, color=colors, height=0.6)
    for yi, g in zip(y, gbps, strict=True):
        ax.text(g * 1.15, yi, format_bandwidth(g * 1e9), va="center", fontsize=8)
    ax.set_xscale("log")
    ax.set_yticks(y, names)
    lines = (
        (tail, PALETTE[0], "-", "tail block, inside a batch"),
        (n["lone_break_even_tail_gbps"], PALETTE[0], "-.", "tail block, lone"),
        (n["break_even_resident_gbps"], PALETTE[4], "-", f"position {n['position_tokens']:,}, upstream resident"),
        (n["break_even_evicted_gbps"], PALETTE[5], ":", f"position {n['position_tokens']:,}, upstream evicted"),
    )
    for value, color, style, label in lines:
        ax.axvline(value, color=color, ls=style, lw=1.4, label=f"break-even: {label} ({format_bandwidth(value * 1e9)})")
    ax.set_xlim(min(v for v, *_ in lines) / 3, float(gbps.max()) * 12)
    ax.set_xlabel("link bandwidth, one direction (GB/s, decimal; log scale)")
    fig.suptitle(
        f"{n['n_fetch_wins']} of {n['n_links']} tiers fetch faster than a tail block regenerates in a batch",
        fontsize=11,
    )
    ax.grid(axis="y", visible=False)
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=2, fontsize=8)
    fig.subplots_adjust(top=0.80)
    records = s.used(
        "model",
        "param_count",
        "kv_dtype",
        "block_tokens",
        "peak_flops",
        "flops_per_param_token",
        "weight_dtype",
        f"mfu.{point['mfu_label']}",
        "regen.model",
        "regen.batch_tokens",
        "regen.mem_bandwidth",
        "regen.mem_efficiency",
        "interior.position",
        "interior.anchor_every",
    )
    lead = (
        f"Every tier whose bar reaches past a break-even line fetches a block faster than it can be regenerated:"
        f" {n['n_fetch_wins']} of {n['n_links']} tiers beat the {n['break_even_tail']} a tail block needs inside a"
        f" batch, and {n['lone_n_fetch_wins']} of {n['n_links']} the {n['lone_break_even_tail']} of a lone block."
    )
    return finish(
        fig,
        records,
        "Each bar is a tier's link bandwidth (green where it beats the in-batch tail block's break-even, red where"
        " it does not); each vertical line is the bandwidth at which fetching a block takes as long as"
        " regenerating it (latency left out), for the tail block in both regimes and for the example interior"
        " block with its upstream KV resident or evicted. How the break-even falls with position is drawn on the"
        " interior-block page.",
        extra="link presets: see the tiers table (published-spec, derived, assumed)",
        lead=lead,
        drivers=("peak_flops", "regen.mem_bandwidth"),
    )


TABLES = (
    (
        "tiers",
        table,
        ("link",),
        (
            "link",
            "bandwidth_GBps",
            "latency_us",
            "fetch_us",
            "break_even_tail_GBps",
            "ratio_tail",
            "fetch_wins_tail",
            "lone_break_even_tail_GBps",
            "lone_ratio_tail",
            "lone_fetch_wins_tail",
        ),
    ),
)
"""The page's tables of record: (name, builder, key columns)."""
FIGURES = (("fig_tiers", tier_ladder),)
"""The page's figures: (glue name, function returning the figure and its caption)."""
