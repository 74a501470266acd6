"""The tier-ladder page (``notebooks/08_tiers.md``): every link preset against regeneration."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from kvtier.formulas import transfer
from kvtier.inputs import hardware
from kvtier.inputs.keys import BANDWIDTH_LABELS, LAYOUTS, TIER_LATENCY_KEYS, tier_latency_key
from kvtier.report import words
from kvtier.report.columns import LAYOUT_LABELS, REGIME_LABELS, VERDICT, Column, declare, phrase
from kvtier.report.figures import PALETTE, finish, new_figure
from kvtier.scenario import POINT_KEYS, Scenario
from kvtier.units import format_bandwidth, format_time

if TYPE_CHECKING:
    from matplotlib.figure import Figure

NOTEBOOK = "08_tiers"
"""The page's text notebook, ``notebooks/NOTEBOOK.md``."""
TITLE = "the tier ladder"
"""The page's name as another page writes it mid-sentence (the registry's ``Page.title``)."""

KEYS: tuple[str, ...] = (
    *POINT_KEYS,
    "interior.position",
    *TIER_LATENCY_KEYS,
)
"""The assumption keys the page reads; its notebook's ``parameters`` cell declares exactly these."""

LAYOUT_SUFFIX: dict[str, str] = {"contiguous": "contiguous", "per-layer": "per_layer"}
"""The column suffix of each layout (:data:`kvtier.inputs.keys.LAYOUTS`): ``fetch_us_per_layer`` ..."""
LAYOUT_WORDS: dict[str, str] = {"contiguous": "as one contiguous transfer", "per-layer": "per layer chunk"}
"""Each layout as the prose and the figure name it."""
REGIME_PREFIX: dict[str, str] = {"batch": "", "lone": "lone_"}
"""The column prefix of each regime: none inside a batch (the block's marginal compute), ``lone_`` for a lone block."""
REGIME_WORDS: dict[str, str] = {"batch": "inside a batch", "lone": "as a lone block"}
"""Each regime as the prose and the figure name it."""
HOST_TIER = "pcie5-x16"
"""The tier the prose follows for the host link: host DRAM over PCIe 5.0 x16, the link the H200 was measured on."""
NVME_TIER = "nvme-gen4-x4"
"""The tier the prose follows for flash: the NVMe drive of the cost page's ladders."""


def numbers(s: Scenario) -> dict[str, Any]:
    """The tier ladder: break-even bandwidths and latencies, and the links' ratios in both regimes and layouts."""

    df = table(s)
    presets = _fetched(df)
    point = s.illustrative
    p = s.v("interior.position")
    regen = {
        case: float(s.in_batch_regen_s(pos, up, point["mfu"]))
        for case, pos, up in (("tail", 0, "resident"), ("resident", p, "resident"), ("evicted", p, "evicted"))
    }
    slowest = presets.loc[presets["fetch_us"].idxmax()]
    out: dict[str, Any] = {
        "regen_model": "the block's marginal compute (FLOPs over peak × MFU, the source chapter's model)",
        "lone_device": words.lone_device(s),
        "copy_method_sentence": words.copy_method_sentence(s),
        "lone_n_fetch_wins": int(presets["lone_fetch_wins_tail"].sum()),
        "lone_min_ratio_tail": float(presets["lone_ratio_tail"].min()),
        "lone_max_ratio_tail": float(presets["lone_ratio_tail"].max()),
        "lone_slowest_ratio_tail": float(slowest["lone_ratio_tail"]),
        "mfu_pct": point["mfu"] * 100,
        "bracket_label": f"bracket {point['bandwidth_label']}",
        "position_tokens": int(p),
        "n_links": len(presets),
        "n_fetch_wins": int(presets["fetch_wins_tail"].sum()),
        "slowest_link": str(slowest["link"]),
        "slowest_fetch_us": float(slowest["fetch_us"]),
        "slowest_ratio_tail": float(slowest["ratio_tail"]),
        "min_ratio_tail": float(presets["ratio_tail"].min()),
        "max_ratio_tail": float(presets["ratio_tail"].max()),
        "fetch_layout": LAYOUT_WORDS[str(s.assumptions.value("fetch_layout"))],
        "layer_chunks": s.layer_chunks,
    }
    faster = out["slowest_ratio_tail"] >= 1
    out["slowest_sentence"] = (
        f"The slowest, {out['slowest_link']}, fetches the block in {out['slowest_fetch_us']:,.0f} µs"
        f" ({out['fetch_layout']}, the set's layout),"
        + (
            f" still {out['slowest_ratio_tail']:.1f} times faster than regenerating it."
            if faster
            else f" {1 / out['slowest_ratio_tail']:.1f} times slower than regenerating it: there recomputing wins."
        )
    )
    lone = {
        case: float(s.lone_regen_s(pos, up, point["mfu"]))
        for case, pos, up in (("tail", 0, "resident"), ("resident", p, "resident"), ("evicted", p, "evicted"))
    }
    for prefix, times in (("", regen), ("lone_", lone)):
        for case, t in times.items():
            out[f"{prefix}regen_{case}_ms"] = t * 1e3
            bw = float(
                transfer.break_even_bandwidth(
                    s.fetch_bytes,
                    t,
                    s.transfer_latency_s,
                    s.fetch_transfers,
                    s.v("fetch.min_transfer_time"),
                    s.link_efficiency,
                    s.link_overhead_s,
                )
            )
            out[f"{prefix}break_even_{case}_gbps"] = bw / 1e9
            out[f"{prefix}break_even_{case}"] = (
                format_bandwidth(bw, 3) if np.isfinite(bw) else "unreachable (latency too long)"
            )
    out.update(layout_numbers(s, presets))
    out["ladder_sentence"] = _ladder_sentence(out, presets)
    return out


def _fetched(df: pd.DataFrame) -> pd.DataFrame:
    """The rows of :func:`table` a block is fetched over: every link preset but HBM (where it lies already).

    No bracket rows.  The counts and ranges of the prose are over these, the tiers of the decision page.
    """
    return df[~df["link"].str.startswith("bracket ") & (df["link"] != "hbm")]


def _ladder_sentence(n: dict[str, Any], presets: pd.DataFrame) -> str:
    """Whether every tier wins in both regimes and layouts, and where the margin is narrowest."""
    cases = [(regime, layout) for regime in REGIME_PREFIX for layout in LAYOUTS]
    column = {case: f"{REGIME_PREFIX[case[0]]}ratio_tail_{LAYOUT_SUFFIX[case[1]]}" for case in cases}
    narrowest = min(
        ((float(presets[column[c]].min()), str(presets.loc[presets[column[c]].idxmin(), "link"]), c) for c in cases),
        key=lambda item: item[0],
    )
    ratio, tier, (regime, layout) = narrowest
    where = f"{tier}'s {_times(ratio)} {REGIME_WORDS[regime]} {LAYOUT_WORDS[layout]}"
    every = all(n[f"{REGIME_PREFIX[r]}n_fetch_wins_{LAYOUT_SUFFIX[lay]}"] == n["n_links"] for r, lay in cases)
    if every:
        margin = (
            "under 2×, so there the answer rests on the per-transfer latency (the table gives each tier's"
            " break-even latency)"
            if ratio < 2
            else "at least 2×"
        )
        return (
            "Every tier clears the break-even in both regimes and both layouts, so on time alone fetching wins"
            f" throughout; the narrowest margin is {where}, {margin}. What the choice of tier decides is how much"
            " faster fetching is, next to what each tier costs per byte held."
        )
    return (
        "Not every tier clears the break-even in every regime and layout: where one does not, recomputing the tail"
        f" block is quicker (the narrowest, {where}), and the choice of tier and layout decides the answer."
    )


def layout_numbers(s: Scenario, presets: pd.DataFrame | None = None) -> dict[str, Any]:
    """Both layouts in both regimes: the tiers that win, the host link's and NVMe's fetch and ratio, the break-evens.

    ``presets`` is :func:`table` without its bracket rows (computed here when not given).
    """
    if presets is None:
        presets = _fetched(table(s))
    rows = presets.set_index("link")
    out: dict[str, Any] = {}
    for suffix in LAYOUT_SUFFIX.values():
        for prefix in REGIME_PREFIX.values():
            ratio = presets[f"{prefix}ratio_tail_{suffix}"]
            out[f"{prefix}n_fetch_wins_{suffix}"] = int(presets[f"{prefix}fetch_wins_tail_{suffix}"].sum())
            out[f"{prefix}min_ratio_tail_{suffix}"] = float(ratio.min())
    for tag, tier in (("host", HOST_TIER), ("nvme", NVME_TIER)):
        row = rows.loc[tier]
        key = tier_latency_key(tier)
        out[f"{tag}_tier"] = tier
        out[f"{tag}_latency_us"] = float(row["latency_us"])
        out[f"{tag}_latency_key"] = key
        out[f"{tag}_latency_provenance"] = s.a(key).provenance
        out[f"{tag}_per_layer_latency_us"] = float(row["latency_us"]) * s.layer_chunks
        for suffix in LAYOUT_SUFFIX.values():
            out[f"{tag}_fetch_us_{suffix}"] = float(row[f"fetch_us_{suffix}"])
            for prefix in REGIME_PREFIX.values():
                out[f"{prefix}{tag}_ratio_tail_{suffix}"] = float(row[f"{prefix}ratio_tail_{suffix}"])
                out[f"{prefix}{tag}_break_even_latency_us_{suffix}"] = float(
                    row[f"{prefix}break_even_latency_tail_us_{suffix}"]
                )
                gbps = float(row[f"{prefix}break_even_tail_GBps_{suffix}"])
                # None where no bandwidth breaks even (the transfers' latency alone outlasts regeneration)
                out[f"{prefix}{tag}_break_even_gbps_{suffix}"] = gbps if np.isfinite(gbps) else None
        out[f"{tag}_sentence"] = _tier_sentence(out, tag, s.layer_chunks)
    out["wins_sentence"] = _wins_sentence(out, len(presets))
    out["break_even_latency_sentence"] = _break_even_latency_sentence(out, "host")
    out["nvme_break_even_latency_sentence"] = _break_even_latency_sentence(out, "nvme")
    return out


def _wins_sentence(n: dict[str, Any], tiers: int) -> str:
    """On how many tiers fetching the tail block wins, by regime and layout, said once when it is all of them."""
    counts = {
        (regime, layout): n[f"{prefix}n_fetch_wins_{LAYOUT_SUFFIX[layout]}"]
        for regime, prefix in REGIME_PREFIX.items()
        for layout in LAYOUTS
    }
    if all(count == tiers for count in counts.values()):
        return f"Fetching the tail block beats regenerating it on all {tiers} tiers, in both regimes and both layouts."
    return (
        f"Fetching the tail block beats regenerating it {REGIME_WORDS['batch']} on {counts['batch', 'contiguous']}"
        f" of the {tiers} tiers {LAYOUT_WORDS['contiguous']} and on {counts['batch', 'per-layer']}"
        f" {LAYOUT_WORDS['per-layer']}; {REGIME_WORDS['lone']}, on {counts['lone', 'contiguous']} and"
        f" {counts['lone', 'per-layer']}."
    )


def _times(ratio: float) -> str:
    """A ratio as the prose writes it: ``12.3×``, with fewer digits when large."""
    return f"{ratio:,.0f}×" if ratio >= 100 else f"{ratio:.1f}×" if ratio >= 10 else f"{ratio:.2f}×"


def _tier_sentence(n: dict[str, Any], tag: str, chunks: int) -> str:
    """One tier's fetch in both layouts and its ratio in both regimes, with the verdict computed."""
    tier = n[f"{tag}_tier"]
    ratios = {
        (regime, layout): n[f"{REGIME_PREFIX[regime]}{tag}_ratio_tail_{LAYOUT_SUFFIX[layout]}"]
        for regime in REGIME_PREFIX
        for layout in LAYOUTS
    }
    losing = [f"{REGIME_WORDS[r]} {LAYOUT_WORDS[lay]}" for (r, lay), x in ratios.items() if x < 1]
    (r, lay), narrowest = min(ratios.items(), key=lambda item: item[1])
    verdict = (
        f" Recomputing wins {' and '.join(losing)}."
        if losing
        else f" Fetching wins in all four; at the narrowest, {REGIME_WORDS[r]} {LAYOUT_WORDS[lay]},"
        f" by {_times(narrowest)}."
    )
    return (
        f"Over {tier} ({format_time(n[f'{tag}_latency_us'] * 1e-6)} per transfer, {n[f'{tag}_latency_provenance']})"
        f" the block takes {format_time(n[f'{tag}_fetch_us_contiguous'] * 1e-6)} to fetch as one transfer and"
        f" {format_time(n[f'{tag}_fetch_us_per_layer'] * 1e-6)} as {chunks:,} layer chunks, of which"
        f" {format_time(n[f'{tag}_per_layer_latency_us'] * 1e-6)} is latency alone. Regenerating it takes"
        f" {_times(ratios['batch', 'contiguous'])} (one transfer) and {_times(ratios['batch', 'per-layer'])} (per"
        f" layer chunk) as long as fetching it {REGIME_WORDS['batch']}, and {_times(ratios['lone', 'contiguous'])}"
        f" and {_times(ratios['lone', 'per-layer'])} {REGIME_WORDS['lone']}." + verdict
    )


def _break_even_latency_sentence(n: dict[str, Any], tag: str) -> str:
    """The per-transfer latency at which the tier's fetch takes as long as regenerating, per regime and layout."""
    tier, latency = n[f"{tag}_tier"], n[f"{tag}_latency_us"]
    shown, above = {}, []
    for regime, prefix in REGIME_PREFIX.items():
        for layout, suffix in LAYOUT_SUFFIX.items():
            be = n[f"{prefix}{tag}_break_even_latency_us_{suffix}"]
            shown[regime, layout] = format_time(be * 1e-6) if be > 0 else "none (the bytes alone take longer)"
            if latency >= be:
                above.append(f"{REGIME_WORDS[regime]} {LAYOUT_WORDS[layout]}")
    verdict = (
        f"; its {format_time(latency * 1e-6)} is past the break-even {' and '.join(above)}, where recomputing wins."
        if above
        else f"; its {format_time(latency * 1e-6)} is below all four."
    )
    return (
        # the paragraph defines the break-even latency just before: each tier's sentence gives its values only
        f"For {tier} it is {shown['batch', 'contiguous']} (one transfer) and"
        f" {shown['batch', 'per-layer']} (per layer chunk) {REGIME_WORDS['batch']}, {shown['lone', 'contiguous']}"
        f" and {shown['lone', 'per-layer']} {REGIME_WORDS['lone']}" + verdict
    )


def _ladder(s: Scenario) -> list[tuple[str, str, float, str, float, str, str, str]]:
    """Each row of the ladder: the set's three brackets, then every link preset (name, title, bandwidth in B/s,
    raw or net, per-transfer latency in s, bandwidth provenance, latency provenance, latency key)."""
    rows = [
        (
            f"bracket {label}",
            f"the assumption set's {label} bandwidth",
            s.bandwidth(label),
            "as stated",
            s.transfer_latency_s,
            s.a(f"bandwidth.{label}").provenance,
            s.a(s.transfer_latency_key).provenance,
            s.transfer_latency_key,
        )
        for label in BANDWIDTH_LABELS
    ]
    tiers = s.tier_links
    presets = hardware.load_links()
    for name, latency in zip(tiers.names, tiers.latency_s, strict=True):
        link = presets[name]
        key = tier_latency_key(name)
        rows.append(
            (
                name,
                link.title,
                link.bandwidth_bytes_per_s,
                link.raw_or_net,
                float(latency),
                link.bandwidth_record.provenance,
                s.a(key).provenance,
                key,
            )
        )
    return rows


CASES: dict[str, str] = {
    "tail": "",
    "resident": "interior block, upstream resident",
    "evicted": "interior block, upstream evicted",
}
"""The blocks the ratio columns regenerate (``ratio_tail``, ``ratio_resident``, ``ratio_evicted``), in words."""


def _columns() -> tuple[Column, ...]:
    """The columns of :func:`table` in words: the link, then each value per regime, then per regime and layout."""
    columns = [
        Column("link", "link"),
        Column("title", "title"),
        Column("bandwidth_GBps", "bandwidth", "GB/s"),
        Column("raw_or_net", "raw or net bandwidth"),
        Column("latency_us", "latency", "µs"),
        Column("latency_key", "latency assumption"),
        Column("layout", "layout"),
        Column("transfers", "transfers"),
        Column("fetch_us", "fetch time", "µs"),
    ]
    for regime, prefix in REGIME_PREFIX.items():
        r = REGIME_LABELS[regime]
        columns += [
            *(Column(f"{prefix}ratio_{case}", phrase("regeneration / fetch", c, r), "×") for case, c in CASES.items()),
            Column(f"{prefix}break_even_tail_GBps", phrase("break-even bandwidth", r), "GB/s"),
            Column(f"{prefix}break_even_latency_tail_us", phrase("break-even latency", r), "µs"),
            Column(f"{prefix}fetch_wins_tail", phrase("verdict", r), words=VERDICT),
        ]
    for each, suffix in LAYOUT_SUFFIX.items():
        layout = LAYOUT_LABELS[each]
        columns += [
            Column(f"transfers_{suffix}", phrase("transfers", layout)),
            Column(f"fetch_us_{suffix}", phrase("fetch time", layout), "µs"),
        ]
        for regime, prefix in REGIME_PREFIX.items():
            r = REGIME_LABELS[regime]
            columns += [
                Column(f"{prefix}ratio_tail_{suffix}", phrase("regeneration / fetch", r, layout), "×"),
                Column(f"{prefix}fetch_wins_tail_{suffix}", phrase("verdict", r, layout), words=VERDICT),
                Column(f"{prefix}break_even_tail_GBps_{suffix}", phrase("break-even bandwidth", r, layout), "GB/s"),
                Column(f"{prefix}break_even_latency_tail_us_{suffix}", phrase("break-even latency", r, layout), "µs"),
            ]
    return (
        *columns,
        Column("bandwidth_provenance", "bandwidth provenance"),
        Column("latency_provenance", "latency provenance"),
    )


COLUMNS = _columns()
"""The columns of :func:`table`, in words with their units."""


def table(s: Scenario) -> pd.DataFrame:
    """Every link preset (and the set's three brackets): fetch time, ratio, break-even bandwidth and latency.

    Regeneration inside a batch is the block's marginal compute at the illustrative MFU
    (:meth:`~kvtier.scenario.Scenario.in_batch_regen_s`, as on the decision page), for the
    tail block and for the block at ``interior.position`` with the upstream resident or
    evicted; the ``lone_`` columns are the lone-block regime, the roofline on the set's device
    with no other tokens in the pass.
    Each link pays its per-transfer latency (``latency_us``, the key ``latency_key``) once per
    transfer: the unsuffixed fetch and ratio columns in the set's ``fetch_layout``
    (``layout``, ``transfers``), the ``_contiguous`` and ``_per_layer`` columns in each layout
    (one transfer, or one per layer chunk).  ``break_even_tail_GBps*`` is the bandwidth at
    which the link's fetch of the tail block takes as long as its regeneration, at the link's
    latency; ``break_even_latency_tail_us*`` the per-transfer latency at which it does, at the
    link's bandwidth (0 where the bytes alone take longer).
    """

    point = s.illustrative
    mfu = point["mfu"]
    p = s.v("interior.position")
    regen = {
        "tail": float(s.in_batch_regen_s(0, "resident", mfu)),
        "resident": float(s.in_batch_regen_s(p, "resident", mfu)),
        "evicted": float(s.in_batch_regen_s(p, "evicted", mfu)),
    }
    lone = {
        "tail": float(s.lone_regen_s(0, "resident", mfu)),
        "resident": float(s.lone_regen_s(p, "resident", mfu)),
        "evicted": float(s.lone_regen_s(p, "evicted", mfu)),
    }
    by_regime = {"batch": regen, "lone": lone}
    rows = []
    transfers = s.fetch_transfers
    floor, eff, over = s.v("fetch.min_transfer_time"), s.link_efficiency, s.link_overhead_s  # the transfer model
    layout = str(s.assumptions.value("fetch_layout"))
    for name, title, bw, raw_or_net, per_transfer, bw_prov, lat_prov, lat_key in _ladder(s):
        fetch_s = float(s.link_fetch_s(s.fetch_bytes, bw, per_transfer, transfers))
        row: dict[str, Any] = {
            "link": name,
            "title": title,
            "bandwidth_GBps": bw / 1e9,
            "raw_or_net": raw_or_net,
            "latency_us": per_transfer * 1e6,
            "latency_key": lat_key,
            "layout": layout,
            "transfers": transfers,
            "fetch_us": fetch_s * 1e6,
        }
        for regime, prefix in REGIME_PREFIX.items():
            times = by_regime[regime]
            for case in ("tail", "resident", "evicted"):
                row[f"{prefix}ratio_{case}"] = times[case] / fetch_s
            row[f"{prefix}break_even_tail_GBps"] = (
                float(
                    transfer.break_even_bandwidth(
                        s.fetch_bytes, times["tail"], per_transfer, transfers, floor, eff, over
                    )
                )
                / 1e9
            )
            lat_be = float(transfer.break_even_latency(s.fetch_bytes, bw, times["tail"], transfers, floor, eff, over))
            row[f"{prefix}break_even_latency_tail_us"] = lat_be * 1e6  # the tier's own share
            row[f"{prefix}fetch_wins_tail"] = fetch_s < times["tail"]
        for each, suffix in LAYOUT_SUFFIX.items():
            n = s.transfers(each)
            fetch_each = float(s.link_fetch_s(s.fetch_bytes, bw, per_transfer, n))
            row[f"transfers_{suffix}"] = n
            row[f"fetch_us_{suffix}"] = fetch_each * 1e6
            for regime, prefix in REGIME_PREFIX.items():
                tail = by_regime[regime]["tail"]
                row[f"{prefix}ratio_tail_{suffix}"] = tail / fetch_each
                row[f"{prefix}fetch_wins_tail_{suffix}"] = fetch_each < tail
                row[f"{prefix}break_even_tail_GBps_{suffix}"] = (
                    float(transfer.break_even_bandwidth(s.fetch_bytes, tail, per_transfer, n, floor, eff, over)) / 1e9
                )
                lat_be = float(transfer.break_even_latency(s.fetch_bytes, bw, tail, n, floor, eff, over))
                row[f"{prefix}break_even_latency_tail_us_{suffix}"] = lat_be * 1e6
        row["bandwidth_provenance"] = bw_prov
        row["latency_provenance"] = lat_prov
        rows.append(row)
    return declare(pd.DataFrame(rows), COLUMNS)


SHORT_REGIME: dict[str, str] = {"batch": "in a batch", "lone": "lone block"}
SHORT_LAYOUT: dict[str, str] = {"contiguous": "one transfer", "per-layer": "per layer chunk"}
"""The regimes and layouts as the figure's legend names them."""
SERIES: tuple[tuple[str, str, str, str], ...] = (
    ("batch", "contiguous", "o", PALETTE[0]),
    ("batch", "per-layer", "o", PALETTE[0]),
    ("lone", "contiguous", "s", PALETTE[1]),
    ("lone", "per-layer", "s", PALETTE[1]),
)
"""The ratio panel's series: (regime, layout, marker, colour).  The regime is a marker shape and a colour
(circles in a batch, squares for a lone block), the layout a fill (open markers per layer chunk), so that
neither rests on colour alone."""
FETCH_MARKERS: dict[str, str] = {"contiguous": "o", "per-layer": "^"}
"""The fetch panel's marker per layout (filled one transfer, open per layer chunk)."""
REGEN_STYLES: dict[str, str] = {"batch": "-", "lone": "-."}
"""The line style of each regime's regeneration time on the fetch panel."""


def _narrowest(presets: pd.DataFrame) -> tuple[float, str, str, str, str]:
    """The narrowest margin over the tiers, regimes and layouts: (ratio, tier, regime, layout, latency key)."""
    cases = [(regime, layout) for regime in REGIME_PREFIX for layout in LAYOUTS]
    best = min(
        (
            (float(presets[col].min()), str(presets.loc[presets[col].idxmin(), "link"]), regime, layout)
            for regime, layout in cases
            for col in [f"{REGIME_PREFIX[regime]}ratio_tail_{LAYOUT_SUFFIX[layout]}"]
        ),
        key=lambda item: item[0],
    )
    key = str(presets.set_index("link").loc[best[1], "latency_key"])
    return (*best, key)


def _ladder_lead(n: dict[str, Any], presets: pd.DataFrame) -> str:
    """What to conclude from the tier ladder, the verb chosen by the counts of tiers that win."""
    ratio, tier, regime, layout, _ = _narrowest(presets)
    cases = [(r, lay) for r in REGIME_PREFIX for lay in LAYOUTS]
    counts = {(r, lay): n[f"{REGIME_PREFIX[r]}n_fetch_wins_{LAYOUT_SUFFIX[lay]}"] for r, lay in cases}
    where = f"{tier}, {REGIME_WORDS[regime]}, {LAYOUT_WORDS[layout]}"
    if all(c == n["n_links"] for c in counts.values()):
        return (
            f"Fetching the tail block beats regenerating it on all {n['n_links']} tiers below HBM, in both regimes"
            f" and both layouts; the narrowest margin is {_times(ratio)} ({where})."
        )
    if not any(counts.values()):
        return (
            "Regenerating the tail block beats fetching it on every tier below HBM, in both regimes and both layouts;"
            f" fetching comes closest at {_times(ratio)} ({where})."
        )
    return (
        f"Fetching the tail block beats regenerating it on {counts['batch', 'contiguous']} of the {n['n_links']}"
        f" tiers below HBM {REGIME_WORDS['batch']} as one transfer and {counts['batch', 'per-layer']} per layer"
        f" chunk; {REGIME_WORDS['lone']}, on {counts['lone', 'contiguous']} and {counts['lone', 'per-layer']}."
    )


def tier_ladder(s: Scenario) -> tuple[Figure, str]:
    """Every tier's fetch time in both layouts against regeneration (top), and its ratio in both regimes (below)."""
    point = s.illustrative
    n = numbers(s)
    df = table(s)
    presets = df[~df["link"].str.startswith("bracket ")].sort_values(["bandwidth_GBps", "link"])
    names = presets["link"].tolist()
    y = np.arange(len(names))
    fig, ax0 = new_figure(4.8, 9.4)
    ax0.remove()
    top, bottom = fig.subplots(2, 1, sharey=True)
    for layout, marker in FETCH_MARKERS.items():
        top.scatter(
            presets[f"fetch_us_{LAYOUT_SUFFIX[layout]}"],
            y,
            marker=marker,
            s=40,
            color=PALETTE[3],
            facecolors=PALETTE[3] if layout == "contiguous" else "none",
            label=f"fetch, {SHORT_LAYOUT[layout]}",
            zorder=3,
        )
    for regime, style in REGEN_STYLES.items():
        value = n[f"{REGIME_PREFIX[regime]}regen_tail_ms"] * 1e-3
        top.axvline(
            value * 1e6,
            color=PALETTE[5],
            ls=style,
            lw=1.4,
            label=f"regenerate, {SHORT_REGIME[regime]}: {format_time(value)}",
        )
    top.set_xscale("log")
    top.set_xlabel("time to fetch the tail block (µs, log scale)")
    for regime, layout, marker, color in SERIES:
        col = f"{REGIME_PREFIX[regime]}ratio_tail_{LAYOUT_SUFFIX[layout]}"
        bottom.scatter(
            presets[col],
            y,
            marker=marker,
            s=40,
            color=color,
            facecolors=color if layout == "contiguous" else "none",
            label=f"{SHORT_REGIME[regime]}, {SHORT_LAYOUT[layout]}",
            zorder=3,
        )
    ratios = presets[[f"{p}ratio_tail_{x}" for p in REGIME_PREFIX.values() for x in LAYOUT_SUFFIX.values()]]
    low, high = float(ratios.min().min()), float(ratios.max().max())
    bottom.set_xscale("log")
    bottom.set_xlim(min(low, 1.0) / 4, max(high, 1.0) * 3)
    bottom.axvspan(bottom.get_xlim()[0], 1.0, color="#eeeeee", zorder=0)
    bottom.axvline(1.0, color="black", lw=1.2)
    bottom.annotate(
        "fetching wins →",
        xy=(1.0, len(names) - 0.15),
        xytext=(4, 0),
        textcoords="offset points",
        fontsize=9.5,
        va="center",
    )
    bottom.set_xlabel("regenerate / fetch, tail block (log scale)")
    for ax, title in ((top, "a. fetch time against regeneration"), (bottom, "b. regenerate / fetch")):
        ax.set_yticks(y, names)
        ax.set_ylim(-0.7, len(names) + 0.4)  # a row above the tiers for the break-even's label
        ax.grid(axis="y", visible=False)
        ax.legend(
            loc="lower left",
            bbox_to_anchor=(0.0, 1.0),
            ncol=1,
            fontsize=9.5,
            handletextpad=0.3,
            columnspacing=0.8,
            borderaxespad=0.2,
            title=title,
            title_fontsize=10,
            alignment="left",
        )
    fig.subplots_adjust(hspace=0.62, top=0.87, left=0.25, right=0.96)
    records = s.used(
        "model",
        "param_count",
        "kv_dtype",
        "block_tokens",
        "peak_flops",
        "flops_per_param_token",
        "weight_dtype",
        f"mfu.{point['mfu_label']}",
        "regen.mem_bandwidth",
        "regen.mem_efficiency",
        *TIER_LATENCY_KEYS,
    )
    fetched = _fetched(df)
    latency_key = _narrowest(fetched)[4]
    return finish(
        fig,
        records,
        f"Filled markers fetch in one transfer, open ones in {n['layer_chunks']:,} layer chunks; lines mark"
        " regeneration. In b, circles are inside a batch, squares a lone block.",
        lead=_ladder_lead(n, fetched),
        drivers=("peak_flops", latency_key),
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
            "fetch_us_contiguous",
            "fetch_us_per_layer",
            "ratio_tail_contiguous",
            "ratio_tail_per_layer",
            "lone_ratio_tail_contiguous",
            "lone_ratio_tail_per_layer",
            "break_even_latency_tail_us_per_layer",
            "lone_break_even_latency_tail_us_per_layer",
        ),
    ),
)
"""The page's tables of record: (name, builder, key columns)."""
FIGURES = (("fig_tiers", tier_ladder),)
"""The page's figures: (glue name, function returning the figure and its caption)."""
