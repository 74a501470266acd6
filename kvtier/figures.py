"""Figures: house style, an assumptions footer on every figure, deterministic output.

Every figure of the book states the assumptions behind it twice: in a footer line drawn
on the figure itself and in its caption (see :func:`assumption_text`).  Output is
deterministic: a fixed SVG hash salt, no dates in SVG metadata, no software tag in PNG.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable
from pathlib import Path

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from kvtier import costs
from kvtier.assumptions import BANDWIDTH_LABELS, MFU_LABELS, Assumption
from kvtier.scenario import Scenario

HASH_SALT = "kvtier"
SVG_METADATA = {"Date": None, "Creator": None}
PNG_METADATA = {"Software": None}
PALETTE = ("#1b6ca8", "#d1495b", "#edae49", "#66a182", "#6a4c93", "#2e4057", "#8d96a3", "#00798c")

STYLE = {
    "svg.hashsalt": HASH_SALT,
    "svg.fonttype": "path",
    "figure.figsize": (7.5, 4.6),
    "figure.dpi": 100,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.prop_cycle": mpl.cycler(color=PALETTE),
    "font.size": 10,
    "legend.frameon": False,
}


def apply_style() -> None:
    """Set the house style and the deterministic-output settings on matplotlib."""
    mpl.rcParams.update(STYLE)


def setup_notebook() -> None:
    """House style plus inline SVG output without dates, for executed notebooks."""
    apply_style()
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython ships with the notebook stack
        return
    ip = get_ipython()
    if ip is None:
        return
    ip.run_line_magic("config", "InlineBackend.figure_formats = ['svg']")
    ip.run_line_magic(
        "config", "InlineBackend.print_figure_kwargs = {'bbox_inches': 'tight', 'metadata': {'Date': None}}"
    )


def assumption_text(records: Iterable[Assumption], extra: str = "") -> str:
    """One line naming each assumption with its value and provenance class."""
    parts = [rec.label() for rec in records]
    if extra:
        parts.append(extra)
    return "Assumptions: " + "; ".join(parts)


def new_figure(width_in: float = 7.5, height_in: float = 4.6) -> tuple[Figure, plt.Axes]:
    """A styled figure with one axes."""
    apply_style()
    fig, ax = plt.subplots(figsize=(width_in, height_in))
    return fig, ax


def add_footer(fig: Figure, records: Iterable[Assumption], extra: str = "", width_chars: int = 130) -> None:
    """Draw the assumptions line(s) at the bottom of ``fig``, below the axes."""
    text = "\n".join(textwrap.wrap(assumption_text(records, extra), width_chars))
    n_lines = text.count("\n") + 1
    fig.text(0.01, 0.005, text, fontsize=6.5, color="#444444", ha="left", va="bottom", family="monospace")
    fig.subplots_adjust(bottom=0.12 + 0.03 * n_lines)


def save(fig: Figure, path: str | Path) -> Path:
    """Save ``fig`` deterministically as SVG or PNG (by suffix); return the path."""
    path = Path(path)
    apply_style()
    metadata = SVG_METADATA if path.suffix == ".svg" else PNG_METADATA
    fig.savefig(path, metadata=metadata, bbox_inches="tight")
    return path


# ---------------------------------------------------------------------------
# the book's figures: each returns the figure and its caption
# ---------------------------------------------------------------------------


def _caption(text: str, records: Iterable[Assumption]) -> str:
    return f"{text} {assumption_text(records)}."


def _finish(fig: Figure, records: list[Assumption], caption: str, extra: str = "") -> tuple[Figure, str]:
    """Draw the assumptions footer and return the figure with its caption (which names them too)."""
    add_footer(fig, records, extra=extra)
    return fig, _caption(caption, records)


def _bracket_records(s: Scenario, prefix: str, labels: Iterable[str]) -> list[Assumption]:
    return [s.a(f"{prefix}.{label}") for label in labels]


def fetch_vs_bandwidth(s: Scenario) -> tuple[Figure, str]:
    """Fetch time of one block against link bandwidth, the brackets marked."""
    fig, ax = new_figure()
    bw = np.logspace(0, 3, 200) * 1e9
    ax.loglog(bw / 1e9, s.fetch_s(bw) * 1e6, color=PALETTE[0], label="fetch time = latency + block bytes / bandwidth")
    for i, (label, fetch_s) in enumerate(s.fetch_by_label().items()):
        b = s.bandwidth(label)
        ax.plot(
            b / 1e9,
            fetch_s * 1e6,
            "o",
            color=PALETTE[1 + i],
            label=f"{label}: {b / 1e9:g} GB/s, {fetch_s * 1e6:.1f} µs",
        )
    ax.set_xlabel("link bandwidth, one direction (GB/s, decimal)")
    ax.set_ylabel("fetch time of one block (µs)")
    ax.set_title(f"Fetching one {s.block_tokens}-token block of {s.model.name} ({s.block_bytes / 2**20:.2f} MiB)")
    ax.legend(loc="upper right")
    records = s.used(
        "model", "kv_dtype", "block_tokens", "fetch_latency", *[f"bandwidth.{b}" for b in BANDWIDTH_LABELS]
    )
    return _finish(
        fig, records, "Fetch time of one KV block against link bandwidth; dots mark the three bracketing bandwidths."
    )


def ratio_heatmap(s: Scenario) -> tuple[Figure, str]:
    """The regenerate/fetch ratio over every bandwidth x MFU bracket, the claimed band outlined."""
    grid = s.ratio_grid()
    data = np.array([[grid[(b, m)] for m in MFU_LABELS] for b in BANDWIDTH_LABELS])
    fig, ax = new_figure(7.5, 4.8)
    logs = np.log10(data)
    im = ax.imshow(logs, cmap="viridis", vmin=min(1.5, logs.min()), vmax=max(3.5, logs.max()), aspect="auto")
    ax.grid(False)
    ax.set_xticks(range(len(MFU_LABELS)), [f"{m}\n{s.mfu(m) * 100:g} % MFU" for m in MFU_LABELS])
    ax.set_yticks(range(len(BANDWIDTH_LABELS)), [f"{b}\n{s.bandwidth(b) / 1e9:g} GB/s" for b in BANDWIDTH_LABELS])
    point = s.illustrative
    for i, b in enumerate(BANDWIDTH_LABELS):
        for j, m in enumerate(MFU_LABELS):
            r = data[i, j]
            inside = 100 <= r <= 1000
            text = f"{r:.1f}x" + ("" if inside else "\noutside 100-1000x")
            if (b, m) == (point["bandwidth_label"], point["mfu_label"]):
                text += "\n(illustrative)"
            ax.text(j, i, text, ha="center", va="center", color="white" if r < 300 else "black", fontsize=9)
    cbar = fig.colorbar(im, ax=ax)
    cbar.set_label("log10(regenerate time / fetch time)")
    ax.set_title("How many times longer regenerating a tail block takes than fetching it")
    records = s.used(
        "model",
        "kv_dtype",
        "param_count",
        "block_tokens",
        "peak_flops",
        "flops_per_param_token",
        "fetch_latency",
        *[f"bandwidth.{b}" for b in BANDWIDTH_LABELS],
        *[f"mfu.{m}" for m in MFU_LABELS],
    )
    return _finish(
        fig,
        records,
        "Regenerate/fetch ratio for each pair of bracketing assumptions; cells outside the source chapter's "
        "'two to three orders of magnitude' (100x to 1000x) are marked.",
    )


def regen_vs_position(s: Scenario) -> tuple[Figure, str]:
    """Regeneration time of a block against its position, both upstream cases, the fetch time beside."""
    point = s.illustrative
    positions = np.logspace(0, 6, 400)
    fig, ax = new_figure()
    for i, upstream in enumerate(("resident", "evicted")):
        t = s.interior_regen_s(positions, upstream, point["mfu"])
        ax.loglog(positions, t * 1e3, color=PALETTE[i], label=f"regenerate, upstream KV {upstream}")
    ax.axhline(point["regen_s"] * 1e3, color=PALETTE[6], ls=":", label="tail block, parameter FLOPs only (the chapter)")
    ax.axhline(
        point["fetch_s"] * 1e3,
        color=PALETTE[3],
        ls="--",
        label=f"fetch at {point['bandwidth_bytes_per_s'] / 1e9:g} GB/s",
    )
    p = s.v("interior.position")
    for i, upstream in enumerate(("resident", "evicted")):
        t = float(s.interior_regen_s(p, upstream, point["mfu"]))
        ax.plot(p, t * 1e3, "o", color=PALETTE[i])
        ax.annotate(f"{t * 1e3:,.1f} ms", (p, t * 1e3), textcoords="offset points", xytext=(6, -12), fontsize=8)
    ax.axvline(p, color="#999999", lw=0.8)
    fetch_ms = point["fetch_s"] * 1e3
    ratio_axis = ax.secondary_yaxis("right", functions=(lambda t: t / fetch_ms, lambda r: r * fetch_ms))
    ratio_axis.set_ylabel("ratio to the fetch time (regenerate / fetch)")
    ax.set_xlabel("position of the block's first token in the sequence (tokens)")
    ax.set_ylabel("time (ms)")
    ax.set_title(f"Regenerating a {s.block_tokens}-token block at {point['mfu'] * 100:g} % MFU, by position")
    ax.legend(loc="upper left", fontsize=8)
    records = s.used(
        "model",
        "param_count",
        "block_tokens",
        "peak_flops",
        "flops_per_param_token",
        "kv_dtype",
        "fetch_latency",
        f"mfu.{point['mfu_label']}",
        f"bandwidth.{point['bandwidth_label']}",
        "interior.position",
        "interior.anchor_every",
    )
    return _finish(
        fig,
        records,
        "Regeneration time of one block against its position, attention term included, with the upstream KV "
        "resident (only the block is recomputed) or evicted (the prefix is recomputed from the nearest anchor); "
        "the right axis reads the same curves as a ratio to the fetch time; the vertical line marks the example "
        "position.",
    )


def capacity_vs_context(s: Scenario) -> tuple[Figure, str]:
    """KV bytes of one sequence against context length, the weights and the crossover marked."""
    contexts = np.logspace(np.log10(1024), np.log10(2**20), 200)
    fig, ax = new_figure()
    gib = 2.0**30
    ax.loglog(contexts, s.kv_bytes(contexts) / gib, color=PALETTE[0], label="KV cache of one sequence")
    ax.axhline(s.weight_bytes / gib, color=PALETTE[1], ls="--", label=f"weights ({s.weight_bytes / gib:.1f} GiB)")
    x = s.crossover_tokens
    ax.axvline(x, color="#777777", lw=0.8)
    ax.annotate(
        f"crossover\n{x:,.0f} tokens",
        (x, s.weight_bytes / gib),
        textcoords="offset points",
        xytext=(-80, 12),
        fontsize=8,
    )
    for key in ("context.short", "context.long"):
        c = s.v(key)
        ax.plot(c, float(s.kv_bytes(c)) / gib, "o", color=PALETTE[2])
        ax.annotate(
            f"{c:,.0f} tokens: {float(s.kv_bytes(c)) / gib:.1f} GiB ({float(s.kv_share(c)) * 100:.0f} %)",
            (c, float(s.kv_bytes(c)) / gib),
            textcoords="offset points",
            xytext=(6, -12),
            fontsize=8,
        )
    share = ax.secondary_yaxis(
        "right", functions=(lambda y: y * gib / s.weight_bytes * 100, lambda p: p / 100 * s.weight_bytes / gib)
    )
    share.set_ylabel("share of the weights (%)")
    ax.set_xlabel("context length of one sequence (tokens)")
    ax.set_ylabel("KV cache (GiB)")
    ax.set_title(f"KV cache of one {s.model.name} sequence against its weights")
    ax.legend(loc="upper left")
    records = s.used("model", "kv_dtype", "weight_dtype", "param_count", "context.short", "context.long")
    return _finish(
        fig,
        records,
        "KV-cache size of a single sequence against context length (log axes), with the weight footprint and "
        "the context at which the two are equal.",
    )


def roofline_vs_batch(s: Scenario) -> tuple[Figure, str]:
    """Regeneration time of the tail block against the tokens sharing its forward pass, per device."""
    from kvtier import hardware

    point = s.illustrative
    batch = np.logspace(np.log10(s.block_tokens), np.log10(max(8192, 4 * s.block_tokens)), 200)
    devices = [("this assumption set", s.v("peak_flops"), s.v("regen.mem_bandwidth"))]
    devices += [(n, a.peak_flop_per_s, a.mem_bandwidth_bytes_per_s) for n, a in hardware.load_accelerators().items()]
    fig, ax = new_figure()
    i = 0
    for name, peak, bw in devices:
        if peak is None or (name == "chapter-implied" and (peak, bw) == devices[0][1:]):
            continue
        kw = {"peak_flop_per_s": peak, "mem_bandwidth_bytes_per_s": bw}
        t = s.regen_time_s(0, "resident", point["mfu"], model="roofline", batch_tokens=batch, **kw)
        c = float(s.regen_time_s(0, "resident", point["mfu"], model="mfu", **kw))
        color = PALETTE[i % len(PALETTE)]
        ax.loglog(batch, t * 1e3, color=color, label=f"{name} ({peak / 1e12:g} TFLOP/s, {bw / 1e12:g} TB/s)")
        ax.axhline(c * 1e3, color=color, ls=":", lw=0.8)
        i += 1
    ax.set_xlabel("tokens processed in the same forward pass as the block (batch)")
    ax.set_ylabel("regeneration time on the block's account (ms)")
    ax.set_title(f"Roofline regeneration of a {s.block_tokens}-token tail block at {point['mfu'] * 100:g} % MFU")
    ax.legend(loc="upper right", fontsize=7)
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
    return _finish(
        fig,
        records,
        "Regeneration time of the tail block under the roofline model against the number of tokens sharing its "
        "forward pass; solid lines are max(compute, memory), dotted lines the compute-only time of the source "
        "chapter's model on the same device. Where a solid line lies above its dotted line the block is memory-bound.",
        extra="accelerator presets: see the roofline table (published-spec, derived, assumed)",
    )


def tiers_vs_position(s: Scenario) -> tuple[Figure, str]:
    """Break-even bandwidth against block position, each tier's bandwidth as a horizontal line."""
    from kvtier import hardware

    point = s.illustrative
    positions = np.logspace(0, 6, 300)
    fig, ax = new_figure(8.5, 5.2)
    for i, upstream in enumerate(("resident", "evicted")):
        t = s.regen_time_s(positions, upstream, point["mfu"])
        ax.loglog(
            positions,
            costs.bandwidth_for_ratio(s.block_bytes, t) / 1e9,
            color=PALETTE[i],
            lw=2,
            label=f"break-even bandwidth, upstream {upstream}",
        )
    by_bandwidth: dict[float, list[str]] = {}
    for name, link in hardware.load_links().items():
        by_bandwidth.setdefault(link.bandwidth_bytes_per_s / 1e9, []).append(name)
    clusters: list[list[tuple[float, list[str]]]] = []
    for gbps, names in sorted(by_bandwidth.items()):
        ax.axhline(gbps, color="#888888", lw=0.6, ls="--")
        if clusters and gbps / clusters[-1][0][0] < 1.4:  # labels closer than this would overlap
            clusters[-1].append((gbps, names))
        else:
            clusters.append([(gbps, names)])
    for cluster in clusters:
        label = "; ".join(f"{'/'.join(names)} {gbps:g}" for gbps, names in cluster)
        y = float(np.exp(np.mean([np.log(g) for g, _ in cluster])))
        ax.text(1.01, y, label, transform=ax.get_yaxis_transform(), fontsize=6, va="center")
    ax.set_xlabel("position of the block's first token (tokens)")
    ax.set_ylabel("link bandwidth (GB/s, decimal, one direction)")
    ax.set_title("Fetching wins on every link above the break-even curve")
    ax.legend(loc="lower left", fontsize=8)
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
        "interior.anchor_every",
    )
    return _finish(
        fig,
        records,
        "Link bandwidth at which fetching a block takes as long as regenerating it, against the block's position "
        "(latency left out), with each tier's bandwidth as a dashed line: a tier above the curve fetches faster "
        "than the block can be regenerated.",
        extra="link presets: see the tiers table (published-spec, derived, assumed)",
    )


def models_crossover(s: Scenario) -> tuple[Figure, str]:
    """Each model's KV per token and the context at which one sequence's KV equals its weights."""
    from kvtier.tables import models as models_table

    df = models_table(s).iloc[::-1].reset_index(drop=True)
    fig, ax = new_figure(7.5, 4.8)
    colors = {"MHA": PALETTE[0], "GQA": PALETTE[1], "MLA": PALETTE[3]}
    y = np.arange(len(df))
    ax.barh(y, df["crossover_tokens"], color=[colors.get(a, PALETTE[6]) for a in df["attention"]])
    ax.set_xscale("log")
    ax.set_yticks(
        y,
        [
            f"{m} ({a}{', MoE' if moe else ''})"
            for m, a, moe in zip(df["model"], df["attention"], df["moe"], strict=True)
        ],
    )
    for yi, (x, kv) in enumerate(zip(df["crossover_tokens"], df["kv_KiB_per_token"], strict=True)):
        ax.annotate(
            f"{x:,.0f} tokens; {kv:g} KiB/token", (x, yi), xytext=(4, -3), textcoords="offset points", fontsize=7
        )
    ax.set_xlabel("context at which one sequence's KV cache equals the weights (tokens, log scale)")
    ax.set_xlim(right=df["crossover_tokens"].max() * 30)
    ax.grid(axis="y", visible=False)
    ax.set_title("KV cache against weights, model by model")
    records = s.used("kv_dtype", "weight_dtype")
    return _finish(
        fig,
        records,
        "Crossover context of every model preset (exact parameter counts from their configurations), with each "
        "model's KV bytes per token; colour marks the attention type.",
        extra="parameters and geometry from each published config.json [published-spec]",
    )


def uncertainty_histogram(s: Scenario) -> tuple[Figure, str]:
    """Distribution of the Monte Carlo ratio, the source chapter's band shaded."""
    from kvtier.report import uncertainty_draws

    ratios = uncertainty_draws(s)
    fig, ax = new_figure()
    bins = np.logspace(np.log10(ratios.min()), np.log10(ratios.max()), 60)
    ax.hist(ratios, bins=bins, color=PALETTE[0], alpha=0.85)
    ax.set_xscale("log")
    ax.axvspan(100, 1000, color=PALETTE[3], alpha=0.15, label="the source chapter's 100x to 1000x")
    for q in (5, 50, 95):
        v = float(np.percentile(ratios, q))
        ax.axvline(v, color="#333333", lw=0.8, ls="--")
        ax.annotate(
            f"p{q}: {v:.0f}x", (v, ax.get_ylim()[1] * 0.9), xytext=(3, 0), textcoords="offset points", fontsize=8
        )
    ax.set_xlabel("regenerate time / fetch time (tail block)")
    ax.set_ylabel("draws")
    ax.set_title(f"{len(ratios):,} draws of bandwidth, MFU and peak")
    ax.legend(loc="upper right", fontsize=8)
    records = s.used(
        "uncertainty.distribution",
        "uncertainty.bandwidth_low",
        "uncertainty.bandwidth_high",
        "uncertainty.mfu_low",
        "uncertainty.mfu_high",
        "uncertainty.peak_low",
        "uncertainty.peak_high",
        "uncertainty.draws",
        "uncertainty.seed",
        "model",
        "param_count",
        "kv_dtype",
        "block_tokens",
        "flops_per_param_token",
        "fetch_latency",
    )
    return _finish(fig, records, "Monte Carlo distribution of the tail block's regenerate/fetch ratio.")


def tornado_chart(s: Scenario) -> tuple[Figure, str]:
    """One-at-a-time sensitivity of the ratio to each uncertain input."""
    from kvtier import uncertainty
    from kvtier.report import uncertainty_inputs

    ranges, base = uncertainty_inputs(s)
    rows = uncertainty.tornado(s.block_bytes, s.block_flops, base, ranges, s.v("fetch_latency"))[::-1]
    point = s.illustrative
    fig, ax = new_figure(7.5, 3.6)
    for i, r in enumerate(rows):
        lo, hi = sorted((r.ratio_at_low, r.ratio_at_high))
        ax.barh(i, hi - lo, left=lo, color=PALETTE[i % len(PALETTE)])
        ax.annotate(f"{lo:.0f}x to {hi:.0f}x", (hi, i), xytext=(4, -3), textcoords="offset points", fontsize=8)
    ax.axvline(point["ratio"], color="#333333", lw=0.8, ls="--")
    ax.set_yticks(range(len(rows)), [r.name for r in rows])
    ax.set_xlabel("regenerate/fetch ratio when one input spans its range, the others at the illustrative point")
    ax.set_title("Which assumption moves the answer most")
    ax.grid(axis="y", visible=False)
    records = s.used(
        "uncertainty.bandwidth_low",
        "uncertainty.bandwidth_high",
        "uncertainty.mfu_low",
        "uncertainty.mfu_high",
        "uncertainty.peak_low",
        "uncertainty.peak_high",
        f"bandwidth.{point['bandwidth_label']}",
        f"mfu.{point['mfu_label']}",
        "peak_flops",
        "model",
        "param_count",
        "kv_dtype",
        "block_tokens",
        "flops_per_param_token",
        "fetch_latency",
    )
    return _finish(
        fig,
        records,
        "Tornado chart: the range of the ratio as each input alone moves across its range; the dashed line is the "
        "illustrative point.",
    )
