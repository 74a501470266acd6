"""The decision page (``notebooks/14_answer.md``): fetch or regenerate, from which tier, and what would change it.

Everything here reads one :class:`~kvtier.deployment.Deployment`: the block, the tiers with
their per-transfer latency, the fetch time in each layout and the regeneration time in each
regime.  The landing page glues this page's three decision sentences and its figure; the
measured H200 points come from the measured page's table of record ``measured_layouts``
(through the registry), so that a measured ratio is computed once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from kvtier import analysis
from kvtier.deployment import Deployment
from kvtier.inputs import hardware
from kvtier.inputs import measurements as ms
from kvtier.inputs.keys import LAYOUTS, TIER_LATENCY_KEYS, keys_in
from kvtier.report import fleet, flips, pages, serving, words
from kvtier.report import named as named_answer
from kvtier.report.columns import VERDICT, Column, declare, named
from kvtier.report.figures import MIN_FONT_PT, PALETTE, finish, new_figure
from kvtier.report.tables import row_anchor, table_anchor
from kvtier.scenario import POINT_KEYS, PRICE_KEYS, Scenario
from kvtier.units import format_number, format_quantity, plural

if TYPE_CHECKING:
    from matplotlib.figure import Figure

NOTEBOOK = "14_answer"
"""The page's text notebook, ``notebooks/NOTEBOOK.md``."""
TITLE = "what would change the answer"
"""The page's name as another page writes it mid-sentence (the registry's ``Page.title``)."""

KEYS: tuple[str, ...] = (
    *POINT_KEYS,
    "decision.hit_target",
    *keys_in("trace"),
    "workload.deployment",  # which row of the named table the trace pages derive (trace_pages_row)
    *PRICE_KEYS,
    "nvme.write_bandwidth",
    "nvme.endurance_dwpd",
    "nvme.endurance_period",
    "nvme.drive_capacity",
    *TIER_LATENCY_KEYS,
    "interior.position",  # the reused prefix the split verdict serves (serving.split_prefix)
    *keys_in("fleet"),  # the decision's tier over a fleet, per node or pooled (kvtier.report.fleet)
)
"""The assumption keys the page reads; its notebook's ``parameters`` cell declares exactly these."""

DECISION_KEYS: tuple[str, ...] = tuple(
    key for key in KEYS if key not in ("workload.deployment", "interior.position", *keys_in("fleet"))
)
"""The inputs the decision reads, counted by provenance on the landing: the page's keys but the one that only names
which row of the named table the trace pages derive, the prefix the split beside the decision serves and the fleet
priced beside it."""

HOST_TIER = "pcie5-x16"
"""The tier whose per-transfer latency the figure's lines use: host DRAM over a PCIe 5.0 x16 link, the path
by which an H100 or H200 reaches host or CXL memory, and the one tier measured."""

REGIME_WORDS = {"lone": "regenerated alone", "batch": "regenerated inside a batch"}
LAYOUT_WORDS = {"contiguous": "in one copy", "per-layer": "as one copy per layer chunk"}
MEASURED_LAYOUTS = {"contiguous": "contiguous (size sweep)", "per-layer": "a copy per chunk"}
"""How the measured page's ``measured_layouts`` rows start for each layout."""


def _tier_titles() -> dict[str, str]:
    return {name: link.title for name, link in hardware.load_links().items()}


DECISION_COLUMNS = (
    *named("tier", "medium", "regime", "layout", "transfers"),
    Column("bandwidth_GBps", "bandwidth", "GB/s"),
    Column("latency_us", "latency", "µs"),
    Column("fetch_us", "fetch time", "µs"),
    Column("regen_ms", "regeneration time", "ms"),
    Column("ratio", "regeneration / fetch", "×"),
    Column("fetch_wins", "verdict", words=VERDICT),
    Column("break_even_GBps", "break-even bandwidth", "GB/s"),
    Column("break_even_latency_us", "break-even latency", "µs"),
    Column("break_even_transfers", "break-even transfers"),
)
"""The columns of :func:`decision_table`, in words with their units (each row names its regime and layout)."""


def decision_table(s: Scenario) -> pd.DataFrame:
    """Every tier in every regime and layout: fetch time, ratio, verdict and the values that would flip it.

    ``break_even_GBps`` is the bandwidth at which the ratio is 1 at the tier's own per-transfer
    latency (``inf``: no bandwidth is enough); ``break_even_latency_us`` the per-transfer
    latency at which it is 1 at the tier's bandwidth (0: even none is small enough);
    ``break_even_transfers`` how many transfers a block may take before it is 1.
    """
    d = Deployment.of(s)
    rows = []
    for regime in ("lone", "batch"):
        for layout in LAYOUTS:
            fetch = d.fetch_s(layout)
            ratio = d.ratio(regime, layout)
            bw = d.break_even_bandwidth(regime, layout)
            lat = d.break_even_latency(regime, layout)
            n = d.break_even_transfers(regime)
            for i, tier in enumerate(d.tiers.names):
                rows.append(
                    {
                        "tier": tier,
                        "medium": d.media[i],
                        "regime": "lone block" if regime == "lone" else "in batch",
                        "layout": layout,
                        "transfers": d.transfers[layout],
                        "bandwidth_GBps": float(d.tiers.bandwidth_bytes_per_s[i]) / 1e9,
                        "latency_us": float(d.tiers.latency_s[i]) * 1e6,
                        "fetch_us": float(fetch[i]) * 1e6,
                        "regen_ms": d.regen_s(regime) * 1e3,
                        "ratio": float(ratio[i]),
                        "fetch_wins": bool(ratio[i] > 1.0),
                        "break_even_GBps": float(bw[i]) / 1e9,
                        "break_even_latency_us": float(lat[i]) * 1e6,
                        "break_even_transfers": float(n[i]),
                    }
                )
    return declare(pd.DataFrame(rows), DECISION_COLUMNS)


def measured_points(s: Scenario) -> dict[tuple[str, str], tuple[float, float]]:
    """The H200's measured ratios, by (regime, layout): the lowest and highest of its runs.

    Read from the measured page's table of record ``measured_layouts`` (lone block: the CUDA
    graph's 16-token pass; in a batch: the fitted per-token slope of the 70B sweep), each over
    the block's measured fetch in that layout.
    """
    df = pages.table_of("measured_layouts").build(s)
    out = {}
    for layout, start in MEASURED_LAYOUTS.items():
        rows = df[df["layout"].str.startswith(start)]
        for regime, column in (("lone", "lone_block_ratio"), ("batch", "in_batch_ratio")):
            out[(regime, layout)] = (float(rows[column].min()), float(rows[column].max()))
    return out


def measured_bandwidth_bytes_per_s() -> float:
    """The bandwidth fitted to the H200's pinned host-to-device copies (B/s): where its points sit."""
    return float(ms.shipped_fits().fetch["h2d_pinned"][1])


def _tiers_word(k: int, n: int) -> str:
    if k == 0:
        return f"none of the {n} tiers"
    if k == n:
        return f"all {n} tiers"
    return f"{k} of the {n} tiers"


def _span(lo: float, hi: float, fmt: str) -> str:
    if lo < 1:  # never "0×": ratios below 1 to two figures (kvtier.report.words.times)
        a, b = words.times(lo).removesuffix("×"), words.times(hi).removesuffix("×")
    else:
        a, b = format(lo, fmt), format(hi, fmt)
    return f"{a}×" if a == b else f"{a}–{b}×"


MARGIN_COLUMNS = (
    Column("bandwidth_margin", "bandwidth / break-even"),
    Column("latency_margin", "break-even / latency"),
)
"""The columns :func:`closest_calls` adds to :data:`DECISION_COLUMNS`: how far each verdict is from flipping."""


def closest_calls(s: Scenario) -> pd.DataFrame:
    """Every tier, regime and layout, the verdict nearest to flipping first (ratio nearest 1 on a log scale).

    Beside each: how far the tier's bandwidth sits from the break-even bandwidth and its
    per-transfer latency from the break-even latency, as factors (``bandwidth_margin``:
    bandwidth over break-even, ``latency_margin``: break-even latency over latency; above 1
    fetching wins with room to spare, ``inf`` where nothing can flip it).
    """
    df = decision_table(s)
    with np.errstate(divide="ignore", invalid="ignore"):
        df["bandwidth_margin"] = df["bandwidth_GBps"] / df["break_even_GBps"]
        df["latency_margin"] = np.where(
            df["latency_us"] > 0, df["break_even_latency_us"] / df["latency_us"].where(df["latency_us"] > 0), np.inf
        )
    df["distance"] = np.abs(np.log(df["ratio"]))
    df = df.sort_values(["distance", "tier", "regime", "layout"], kind="stable").drop(columns="distance")
    columns = ["tier", "regime", "layout", "ratio", "fetch_wins", "break_even_GBps", "bandwidth_margin"]
    out = df[[*columns, "break_even_latency_us", "latency_margin", "break_even_transfers"]].reset_index(drop=True)
    return declare(out, (*(c for c in DECISION_COLUMNS if c.name in out.columns), *MARGIN_COLUMNS))


def flip_position(s: Scenario, tier: str, regime: str, layout: str) -> float | None:
    """The block position (tokens) from which fetching from ``tier`` beats regenerating the block (upstream resident).

    Regenerating a block deeper in a sequence also pays attention over the positions before
    it, so its time grows with the position while the fetch stays the same.  Returns 0 where
    fetching already wins for the tail block, and None where it does not win within the
    model's context window (or ten million positions when the config states none).
    """
    d = Deployment.of(s)
    fetch = float(d.fetch_s(layout)[d.tiers.names.index(tier)])
    mfu = s.mfu(str(s.assumptions.value("illustrative.mfu")))
    limit = s.model.max_positions or 10_000_000

    def wins(position: int) -> bool:
        regen = s.lone_regen_s if regime == "lone" else s.in_batch_regen_s
        return float(regen(position, "resident", mfu)) > fetch

    lo, hi = 0, limit - d.block.tokens  # the last block that fits the window starts at hi
    if wins(lo):
        return 0.0
    if not wins(hi):
        return None
    while hi - lo > 1:  # regeneration grows with position: the first winning position, by bisection
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if wins(mid) else (mid, hi)
    return float(hi)


def _context_sentence(s: Scenario, near: pd.Series, where: float | None) -> str:
    """What the block's position in the sequence does to the closest call, in words."""
    call = f"{near['tier']} ({near['regime']}, {near['layout']})"
    limit = s.model.max_positions
    window = f"{s.model.name}'s {limit:,}-position window" if limit else "ten million positions"
    if where is None:
        return (
            f"A block deeper in the sequence costs more to regenerate, but not enough to turn {call} around within"
            f" {window}."
        )
    if where == 0:
        return (
            f"A block deeper in the sequence costs more to regenerate, so {call} only gains with position: the"
            " tail block is the hardest case for fetching."
        )
    return (
        f"A block deeper in the sequence costs more to regenerate: from position {where:,.0f}, {call} fetches faster."
    )


def _wins_words(d: Deployment) -> str:
    n = len(d.tiers.names)
    k = {(r, lay): d.n_fetch_wins(r, lay) for r in ("lone", "batch") for lay in LAYOUTS}
    chunks = d.transfers["per-layer"]
    if len(set(k.values())) == 1:
        return (
            f"from {_tiers_word(k[('lone', 'contiguous')], n)}, alone or inside a batch, copied in one piece or as"
            f" {chunks} layer chunks (as a paged cache stores it)"
        )
    losing = []
    for regime, lay in k:
        lost = [t for t, wins in zip(d.tiers.names, d.fetch_wins(regime, lay), strict=True) if not wins]
        if lost:
            where = f"{'alone' if regime == 'lone' else 'inside a batch'} {LAYOUT_WORDS[lay]}"
            losing.append(f"{_names(lost)} {where}")
    return (
        f"from {_tiers_word(k[('lone', 'contiguous')], n)} when it is regenerated alone and"
        f" {k[('batch', 'contiguous')]} inside a batch if it is copied in one piece, and from"
        f" {k[('lone', 'per-layer')]} and {k[('batch', 'per-layer')]} as {chunks} layer chunks (as a paged cache"
        f" stores it; regenerating is quicker than fetching from {'; from '.join(losing)})"
    )


def _names(items: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + f" and {items[-1]}"


def rule_sentence(s: Scenario) -> str:
    """Which tiers fetch faster than regeneration in each regime and layout, and the call nearest to flipping."""
    d = Deployment.of(s)
    near = closest_calls(s).iloc[0]
    regime = "alone" if near["regime"] == "lone block" else "inside a batch"
    layout = "in one copy" if near["layout"] == "contiguous" else f"as {d.transfers['per-layer']} chunk copies"
    i = d.tiers.names.index(str(near["tier"]))
    lat = float(d.tiers.latency_s[i])
    verb = "still wins" if near["fetch_wins"] else "loses"
    flips = []
    if np.isfinite(near["break_even_GBps"]):
        flips.append(f"{'below' if near['fetch_wins'] else 'above'} {format_number(near['break_even_GBps'], 3)} GB/s")
    if near["break_even_latency_us"] > 0:
        per = f"{'above' if near['fetch_wins'] else 'below'} {near['break_even_latency_us']:.3g} µs per transfer"
        flips.append(per + (f" (it has {lat * 1e6:.3g} µs)" if lat > 0 else ""))
    flip = " or ".join(flips) if flips else "at no bandwidth or latency"
    return (
        f"Served on {words.deployment_words(s)}, fetching a {d.block.tokens:,}-token block of {s.model.name} beats"
        f" regenerating it {words.regen_pricing(s)['pricing']} {_wins_words(d)}; the"
        f" closest call is {near['tier']} {layout}, regenerated {regime}, which {verb} at {near['ratio']:.3g}× and"
        f" flips {flip}."
    )


FLIP_NAMES = {
    "accelerator": "accelerator",
    "tensor-parallel size": "tp",
    "copy method": "copy_method",
    "engine kernels": "kernels",
    "peak": "peak",
}
"""The glue name's tail of each sentence of :func:`kvtier.report.flips.flip_sentences`."""

MARGINS_SHOWN = 8
"""How many of the verdicts nearest to flipping the page shows (the table of record holds them all)."""

MEDIUM_WORDS = {"dram": "host DRAM", "cxl": "a CXL expander", "nvme": "NVMe flash"}
PURCHASE_KEYS = {"dram": "cost.dram_gb", "cxl": "cost.cxl_gb", "nvme": "cost.nvme_gb"}
"""The purchase price of each medium an LRU tier can be built from."""
FLIP_KEYS = ("cost.accelerator_hour", "cost.energy_kwh")
"""The prices every tier's saving moves with, beside its medium's purchase price."""


def _usd_h(usd_per_s: float) -> str:
    return f"{usd_per_s * 3600:,.3g} USD/h"


def _tib(n_bytes: float) -> str:
    return f"{n_bytes / 2**40:,.3g} TiB" if n_bytes >= 2**40 else f"{n_bytes / 2**30:,.3g} GiB"


def plan_sentence(s: Scenario) -> str:
    """The LRU tier to buy for the build's trace: where, how big per accelerator, what it costs and saves."""
    d = Deployment.of(s)
    best, feasible = d.best_tier("batch")
    target = s.v("decision.hit_target")
    trace = str(s.assumptions.value("workload.trace"))
    if not np.isfinite(best.saved_usd_per_s):
        return f"The {trace} trace lasts no time, so no tier can be priced per hour for it."
    if best.capacity_bytes <= 0:
        return f"Nothing in the {trace} trace is used twice, so no tier would hold anything worth fetching."
    n_acc = best.accelerators  # at least one: "per accelerator" never exceeds the total (issue 43)
    per = best.capacity_bytes / n_acc
    cost = best.hold_usd_per_s + best.fetch_usd_per_s
    verb = "saves" if best.saved_usd_per_s > 0 else "loses"
    busy = best.prefill_accelerators
    whose = (
        f"{_tib(per)} per accelerator for the {busy:,.1f} its prefill keeps busy"
        if busy >= 1
        else f"all of it for the one accelerator its prefill keeps {busy * 100:.2g} % busy"
    )
    lead = (
        f"For the {trace} trace, an LRU tier of {_tib(best.capacity_bytes)} in {MEDIUM_WORDS[best.medium]}"
        f" ({whose}) serves"
        f" {target * 100:g} % of the achievable hits for {_usd_h(cost)} of holding and fetching and {verb}"
        f" {_usd_h(abs(best.saved_usd_per_s))} net against recomputing them inside a batch, or per accelerator"
        f" {_usd_h(cost / n_acc)} and {_usd_h(abs(best.saved_usd_per_s) / n_acc)}"
    )
    if not feasible:
        return lead + f", though its device cannot carry the traffic ({best.write_busy * 100:,.0f} % of its writes)."
    worn = [  # flash that must buy drives for its writes, beyond those that hold it
        t for t in d.plan("batch") if t is not best and t.drives is not None and t.drives.count > t.drives.for_capacity
    ]
    if worn:
        t = worn[0]
        return lead + (
            f"; on {MEDIUM_WORDS[t.medium]} the same tier would need {plural(t.drives.count, 'drive', ',.0f')} of"
            f" {s.a('nvme.drive_capacity').text} for its writes where {t.drives.for_capacity:,.0f} would hold it"
            f" (flash of its own size would wear out in {words.days(t.drives.wearout_s)}), and would"
            f" {'save' if t.saved_usd_per_s >= 0 else 'lose'} {_usd_h(abs(t.saved_usd_per_s))} with them."
        )
    others = [t for t in d.plan("batch") if t is not best and t.write_busy > 1.0]
    if others:
        worst = max(others, key=lambda t: t.write_busy)
        return (
            lead + f"; on {MEDIUM_WORDS[worst.medium]} the same tier would write {worst.write_busy * 100:,.0f} % of"
            " what one drive can take."
        )
    return lead + "."


PRICE_COLUMNS = (
    *named("tier", "input", "value"),
    Column("saved_usd_per_h", "saved", "USD/h"),
    Column("flips_at", "flips at"),
    Column("flips_at_times", "flips at", "× the value"),
    Column("flips_at_si", "flips at", "SI units"),
)
"""The columns of :func:`price_flips`, in words with their units."""


def moved_prices(s: Scenario, key: str, value: float) -> dict[str, float]:
    """The prices with ``key`` at ``value`` (SI), and every price that moves with it.

    An accelerator hour is a cloud rate, all in: it pays for the power its board draws, so an
    energy price moves it too, by the board's power in a compute-bound pass (``energy.power_batch``)
    times the change (USD/J x J/s = USD/s).  Every other price moves alone.
    """
    out = {key: value}
    if key == "cost.energy_kwh":
        out["cost.accelerator_hour"] = s.v("cost.accelerator_hour") + s.v("energy.power_batch") * (value - s.v(key))
    return out


def price_flips(s: Scenario) -> pd.DataFrame:
    """Per LRU tier and price: the tier's net saving now and the price at which it would fall to zero.

    The saving (recomputation avoided, less fetching and holding) moves in a straight line
    with each price, so two evaluations give the price that zeroes it.  Energy moves the
    accelerator hour with it (:func:`moved_prices`): a cloud's hour pays for its board's power.  ``flips_at`` is that
    price as the key is written (USD/GB, USD/h, USD/kWh) and ``flips_at_times`` it over today's;
    "never" (``inf``) where no positive price does.
    """
    d = Deployment.of(s)
    rows = []
    for tier in d.plan("batch"):
        for key in (PURCHASE_KEYS[tier.medium], *FLIP_KEYS):
            v0 = s.v(key)
            doubled = {t.tier: t for t in d.plan("batch", s.tier_prices(moved_prices(s, key, 2 * v0)))}[tier.tier]
            slope = (doubled.saved_usd_per_s - tier.saved_usd_per_s) / v0
            flip = v0 - tier.saved_usd_per_s / slope if slope != 0 else np.inf
            flip = float(flip) if flip > 0 else np.inf
            rows.append(
                {
                    "tier": tier.tier,
                    "input": key,
                    "value": s.a(key).display,
                    "saved_usd_per_h": tier.saved_usd_per_s * 3600,
                    "flips_at": format_quantity(flip, s.a(key).kind) if np.isfinite(flip) else "never",
                    "flips_at_times": flip / v0,
                    "flips_at_si": flip,
                }
            )
    return declare(pd.DataFrame(rows), PRICE_COLUMNS)


def prices_sentence(s: Scenario) -> str:
    """How far each price must move before the decision's tier stops paying for itself, in words."""
    d = Deployment.of(s)
    best, _ = d.best_tier("batch")
    if not (np.isfinite(best.saved_usd_per_s) and best.capacity_bytes > 0):
        return "With no tier to price, no price changes the answer."
    flips = price_flips(s)
    rows = flips[flips["tier"] == best.tier].set_index("input")
    parts = []
    for key, row in rows.iterrows():
        what = _price_words(str(key))
        if not np.isfinite(row["flips_at_si"]):
            parts.append(f"no {what.removeprefix('the ')} would")
        elif row["flips_at_times"] > 1:
            parts.append(f"{what} would have to rise {row['flips_at_times']:,.3g}-fold, to {row['flips_at']}")
        else:
            parts.append(
                f"{what} would have to fall to {row['flips_at']}, {row['flips_at_times'] * 100:.3g} % of today's"
            )
    return (
        f"For the {MEDIUM_WORDS[best.medium]} tier to stop paying for itself, " + "; ".join(parts) + " (the"
        " accelerator hour moving with the energy price, since it pays for its board's power)."
    )


def _price_words(key: str) -> str:
    return {
        "cost.dram_gb": "host DRAM's price per GB",
        "cost.cxl_gb": "CXL memory's price per GB",
        "cost.nvme_gb": "flash's price per GB",
        "cost.accelerator_hour": "the accelerator hour",
        "cost.energy_kwh": "the energy price",
    }[key]


def target_sentence(s: Scenario) -> str:
    """What the hit target does to the decision's tier: its size and saving at the target and at the ends."""
    d = Deployment.of(s)
    best, _ = d.best_tier("batch")
    if not (np.isfinite(best.saved_usd_per_s) and best.capacity_bytes > 0):
        return "With nothing reused, no hit target changes the answer."
    target = s.v("decision.hit_target")
    parts, gains = [], []
    for share in sorted({0.5, target, 0.99}):
        t = {x.tier: x for x in analysis.lru_plan(s, share, "batch")}[best.tier]
        size, saved_h = _tib(t.capacity_bytes), t.saved_usd_per_s * 3600
        said = words.saves(saved_h, "USD/h", ",.3g")  # a loss is "loses", never "saves -0.315"
        gains.append(saved_h >= 0)
        if not parts:
            parts.append(f"serving {share * 100:g} % of the achievable hits takes {size} and {said}")
        else:  # the verb again only where the sign changes
            parts.append(f"{share * 100:g} %, {size} and {said if gains[-1] != gains[0] else said.split(' ', 1)[1]}")
    return f"In {MEDIUM_WORDS[best.medium]}, " + "; ".join(parts) + "."


def measured_sentence(s: Scenario) -> str:
    """The H200's measured ratios in both regimes and both layouts, each named."""
    pts = measured_points(s)
    chunks = ms.load().chunks
    return (
        "Measured on one H200, regenerating a lone 16-token Llama-3-70B block as a CUDA-graph pass took"
        f" {_span(*pts[('lone', 'contiguous')], ',.0f')} as long as fetching it from pinned host memory in one copy"
        f" and {_span(*pts[('lone', 'per-layer')], ',.1f')} as {chunks} chunk copies; inside a batch, at the"
        " per-token slope fitted to the eager passes (no pass measured one block's marginal cost),"
        f" {_span(*pts[('batch', 'contiguous')], ',.1f')} and {_span(*pts[('batch', 'per-layer')], ',.1f')}."
    )


SPLIT_COLUMNS = (
    Column("tier", "tier"),
    Column("layout", "layout"),
    Column("regime", "regime"),
    Column("prefix_tokens", "prefix", "tokens"),
    Column("new_tokens", "new tokens", "tokens"),
    Column("split_tokens", "split, tokens computed", "tokens"),
    Column("gain", "split's gain over the better pure way", "×"),
    *named("fastest"),
)


def split_table(s: Scenario) -> pd.DataFrame:
    """The split as a third verdict per tier, layout and regime (:func:`kvtier.report.serving.split_ladder`)."""
    return declare(pd.DataFrame(serving.split_ladder(s)), SPLIT_COLUMNS)


def split_sentence(s: Scenario) -> str:
    """Where neither pure way is fastest for the decision's reused prefix: the tiers a split wins from, by how much."""
    df = split_table(s)
    n = df["tier"].nunique()
    prefix, new = int(df["prefix_tokens"].iloc[0]), int(df["new_tokens"].iloc[0])
    parts = []
    for layout, words_ in (("contiguous", "copied in one piece"), ("per-layer", "copied layer chunk by chunk")):
        rows = df[(df["layout"] == layout) & (df["regime"] == "batch")]
        wins = rows[rows["fastest"] == "split"]
        if wins.empty:
            parts.append(f"{words_}, from none of the {n} tiers")
            continue
        best = wins.loc[wins["gain"].idxmax()]
        parts.append(
            f"{words_}, from {len(wins)} of the {n} tiers, by at most {best['gain']:.3g} times ({best['tier']})"
        )
    return (
        f"For a reused prefix of {prefix:,} tokens and {new:,} new ones, computing its head while its tail is fetched"
        f" is faster inside a batch than either pure way {parts[0]}, and {parts[1]}; alone and per tier in the table"
        " below, on every tier and prefix length on the split page."
    )


def derived_links(s: Scenario) -> str:
    """The landing's "Where each number is derived", one HTML paragraph: each headline figure linked to the table
    row it is read from (:func:`kvtier.report.tables.row_anchor`; the whole table where no row holds it).

    The named rows: the answer page's table of them; the row the trace pages derive (:func:`words.trace_pages_row`):
    its tier's size on the workload page's row of the trace and the hit target, its cost and saving on the cost
    page's row of that target and the medium the decision picks (inside a batch), when the cost page prices that
    target (:data:`kvtier.analysis.LRU_TARGETS_PCT`); the counts of inputs by provenance on the assumptions page.
    Links are relative to the landing (``book/intro``).
    """
    from html import escape

    priced = analysis.priced(s)
    name = words.named_deployment(priced) or "this build"
    target = 100 * s.v("decision.hit_target")
    label, shown = f"{target:g}%", f"{target:g} %"  # as the workload and cost tables name a target; as prose writes it
    best, _ = Deployment.of(priced).best_tier("batch")
    trace = str(priced.assumptions.value("workload.trace"))

    def link(text: str, page: str | None, table: str | None = None, *keys: object) -> str:
        anchor = "" if table is None else "#" + (row_anchor(table, keys) if keys else table_anchor(table))
        return f'<a href="{"" if page is None else f"../notebooks/{page}.html"}{anchor}">{escape(text)}</a>'

    cost = (
        link(f"the cost page's row for {shown} in {MEDIUM_WORDS[best.medium]}", "13_cost", "cost_lru", label, best.tier)
        if target in analysis.LRU_TARGETS_PCT
        else link("the cost page's table of LRU tiers", "13_cost", "cost_lru")
    )
    # the workload page shows the sized trace's rows alone, keyed by their target
    workload = link(f"the workload page's row for the {trace} trace at {shown}", "12_workload", "workload_tiers", label)
    return (
        "<p>Where each number is derived: every row's verdicts, margins, tier and money in "
        + link("the table above", None, "decision_named")
        + f" are one computation, detailed on {link('the answer page', '14_answer')}; for "
        + link(words.trace_pages_row(s), None, "decision_named", name)
        + f", the pages that price the trace give the tier's size for the hit target in {workload} and its cost and"
        + f" saving in {cost}; the inputs are counted by provenance on "
        + link("the assumptions page", "00_assumptions")
        + ".</p>"
    )


def numbers(s: Scenario) -> dict[str, Any]:
    """Every number and sentence the decision page (and the landing page) quotes."""
    d = Deployment.of(s)
    df = decision_table(s)
    n = len(d.tiers.names)
    out: dict[str, Any] = {
        "decision_rule": rule_sentence(s),
        "decision_plan": plan_sentence(s),
        "decision_window": words.window_sentence(s, "this build's row"),
        "trace_pages_row": words.trace_pages_row(s),
        "prices_sentence": prices_sentence(s),
        "target_sentence": target_sentence(s),
        "decision_measured": measured_sentence(s),
        "copy_method_sentence": words.copy_method_sentence(s),
        "n_tiers": n,
        "block_mib": d.block.block_bytes / 2**20,
        "chunks": d.transfers["per-layer"],
        "lone_regen_ms": d.regen_s("lone") * 1e3,
        "batch_regen_ms": d.regen_s("batch") * 1e3,
    }
    near = closest_calls(s).iloc[0]
    regime_key = "lone" if near["regime"] == "lone block" else "batch"
    where = flip_position(s, str(near["tier"]), regime_key, str(near["layout"]))
    out["context_sentence"] = _context_sentence(s, near, where)
    out["named_lead"] = f"{named_answer.spread_sentence(s)} {named_answer.confidence_sentence(s, DECISION_KEYS)}"
    out["named_split"] = named_answer.split_spread_sentence(s)
    out["named_pool"] = named_answer.pool_sentence(s)
    out["decision_fleet"] = fleet.fleet_decision_sentence(fleet.fleet_cost_numbers(analysis.priced(s)))
    out["split_sentence"] = split_sentence(s)
    for what, text in flips.flip_sentences(s).items():
        out[f"flip_{FLIP_NAMES[what]}"] = text
    out["n_margins_shown"] = min(MARGINS_SHOWN, len(df))
    out["n_verdicts"] = len(df)
    for regime, r in (("lone", "lone block"), ("batch", "in batch")):
        for layout in LAYOUTS:
            rows = df[(df["regime"] == r) & (df["layout"] == layout)]
            tag = f"{regime}_{layout.replace('-', '_')}"
            out[f"n_wins_{tag}"] = int(rows["fetch_wins"].sum())
            out[f"min_ratio_{tag}"] = float(rows["ratio"].min())
            out[f"max_ratio_{tag}"] = float(rows["ratio"].max())
    return out


def decision_figure(s: Scenario) -> tuple[Figure, str]:
    """The regenerate/fetch ratio against link bandwidth, one line per regime and layout, tiers and H200 marked."""
    d = Deployment.of(s)
    host = d.tiers.names.index(HOST_TIER)
    latency = float(d.tiers.latency_s[host])
    bw = np.logspace(9, 12.5, 200)
    fig, ax = new_figure(4.4, 6.0)
    big = MIN_FONT_PT + 2
    styles = {"contiguous": "-", "per-layer": "--"}
    colours = {"lone": PALETTE[0], "batch": PALETTE[1]}
    widths = {"lone": 2.2, "batch": 1.2}  # the regime is keyed by width as well as colour
    lowest = {}
    for regime in ("lone", "batch"):
        for layout in LAYOUTS:
            fetch = d.transfers[layout] * latency + d.fetch_bytes / bw
            copies = "one copy" if layout == "contiguous" else f"{d.transfers[layout]} copies"
            label = f"{'lone block' if regime == 'lone' else 'in batch'}, {copies}"
            ratio = d.regen_s(regime) / fetch
            lowest[(regime, layout)] = float(ratio.min())
            ax.plot(bw / 1e9, ratio, color=colours[regime], ls=styles[layout], lw=widths[regime], label=label)
    ax.axhline(1.0, color="#444444", lw=1.0)
    ax.text(1.1, 1.2, "break-even: 1×", fontsize=big, color="#444444")
    shown = [t for t in (HOST_TIER, "cxl2-x8", "nvme-gen4-x4") if t in d.tiers.names]
    marks = [float(d.tiers.bandwidth_bytes_per_s[d.tiers.names.index(t)]) / 1e9 for t in shown]
    for x in marks:
        ax.axvline(x, color="#8d96a3", lw=0.8, ls=":")
    for x, name in zip(marks, shown, strict=True):  # named above the plot, clear of every line
        ax.text(
            x, 1.01, name, transform=ax.get_xaxis_transform(), rotation=90, ha="center", va="bottom", fontsize=big - 1
        )
    pts = measured_points(s)
    x = measured_bandwidth_bytes_per_s() / 1e9
    for (regime, layout), (lo, hi) in pts.items():
        marker = "o" if layout == "contiguous" else "s"
        ax.plot([x, x], [lo, hi], color=colours[regime], lw=widths[regime] + 1)
        ax.plot(
            [x],
            [np.sqrt(lo * hi)],
            marker=marker,
            color=colours[regime],
            markerfacecolor="white",
            markersize=7,
            ls="none",
        )
    ax.plot([], [], marker="o", color="#444444", markerfacecolor="white", ls="none", label="H200, one copy")
    ax.plot([], [], marker="s", color="#444444", markerfacecolor="white", ls="none", label="H200, chunk copies")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(1, 10**12.5 / 1e9)
    ax.set_ylim(0.5, None)
    ax.set_xlabel("link bandwidth, one direction (GB/s)", fontsize=big)
    ax.set_ylabel("regeneration time / fetch time", fontsize=big)
    ax.tick_params(labelsize=big)
    handles, labels = ax.get_legend_handles_labels()
    records = s.used(
        "model",
        "kv_dtype",
        "block_tokens",
        "param_count",
        "peak_flops",
        f"mfu.{s.illustrative['mfu_label']}",
        "regen.mem_bandwidth",
        "regen.mem_efficiency",
    )
    k_batch = d.n_fetch_wins("batch", "per-layer")
    alone = min(lowest[("lone", layout)] for layout in LAYOUTS)
    alone_words = "stays above it at every bandwidth drawn" if alone > 1 else "dips below it on the slowest links"
    lead = (
        f"Above the 1× line fetching wins. Alone, the ratio {alone_words}; inside a batch, in"
        f" {d.transfers['per-layer']} chunk copies, {_tiers_word(k_batch, len(d.tiers.names))} win."
    )
    text = (
        f"Lines: regeneration over fetch time against bandwidth at {HOST_TIER}'s {latency * 1e6:.3g} µs a copy;"
        " dotted: three tiers. Markers: measured on one H200 (a 16-token Llama-3-70B block, in every set)."
    )
    fig, caption = finish(fig, records, text, lead=lead, drivers=("peak_flops", "block_tokens"))
    # the legend goes under the axis label, above the footer: inside the axes it would hide the measured points
    height_pt = fig.get_size_inches()[1] * 72
    footer_top = fig.subplotpars.bottom - 44 / height_pt
    room = 50 / height_pt
    names_pt = max(map(len, shown), default=0) * 0.62 * (big - 1) + 8  # the tier names above the plot
    fig.subplots_adjust(bottom=fig.subplotpars.bottom + room, top=1 - names_pt / height_pt)
    fig.legend(
        handles,
        labels,
        loc="lower center",
        bbox_to_anchor=(0.5, footer_top + 2 / height_pt),
        ncol=2,
        fontsize=MIN_FONT_PT + 1,
        frameon=False,
        handlelength=1.8,
        columnspacing=1.0,
    )
    return fig, caption


TABLES = (
    (
        "decision",
        decision_table,
        ("tier", "regime", "layout"),
        ("tier", "regime", "layout", "fetch_us", "ratio", "fetch_wins", "break_even_GBps", "break_even_latency_us"),
    ),
    (
        "decision_margins",
        closest_calls,
        ("tier", "regime", "layout"),
        ("tier", "regime", "layout", "ratio", "break_even_GBps", "break_even_latency_us", "break_even_transfers"),
    ),
    ("decision_prices", price_flips, ("tier", "input")),
    ("decision_named", named_answer.named_table, ("deployment",), named_answer.SHOWN),
    ("decision_flip_inputs", flips.flip_inputs, ("input", "setting")),
    ("decision_split", split_table, ("tier", "layout", "regime")),
)
"""The page's tables of record: (name, builder, key columns, shown columns)."""
FIGURES = (("fig_decision", decision_figure),)
"""The page's figures: (glue name, function returning the figure and its caption)."""
