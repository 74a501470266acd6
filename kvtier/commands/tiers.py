"""``kvtier tiers``: the tier ladder, every link preset against regeneration."""

from __future__ import annotations

import argparse

from kvtier.commands.options import (
    add_assumption_options,
    add_placement_options,
    add_regeneration_options,
    add_weight_dtype_option,
    placement_json,
    placement_sets,
    regeneration_sets,
    weight_dtype_sets,
    with_accelerator,
)
from kvtier.commands.output import emit
from kvtier.inputs.assumptions import load_assumptions, parse_set_options
from kvtier.inputs.keys import LAYOUTS
from kvtier.scenario import Scenario
from kvtier.units import format_bytes, format_quantity


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register ``tiers [--layout L] [--split] [--assumptions FILE] [--set KEY=VALUE] [--json]`` on ``subparsers``."""
    p = subparsers.add_parser("tiers", help="the tier ladder: every link preset against regeneration")
    add_assumption_options(p)
    p.add_argument(
        "--layout",
        choices=("both", *LAYOUTS),
        default="both",
        help="the layouts whose fetch, ratios and break-even latency the text shows (default both; --json has all)",
    )
    add_placement_options(p)
    add_weight_dtype_option(p)
    add_regeneration_options(p)
    p.add_argument(
        "--split",
        action="store_true",
        help="a third verdict per tier: a reused prefix's head computed while its tail is fetched (compare --split)",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output, SI base units")
    p.set_defaults(func=run)
    return p


TIER_JSON = {
    "bandwidth_GBps": ("bandwidth_bytes_per_s", 1e9),
    "latency_us": ("latency_s", 1e-6),
    "fetch_us": ("fetch_time_s", 1e-6),
    "break_even_tail_GBps": ("break_even_tail_bytes_per_s", 1e9),
    "lone_break_even_tail_GBps": ("lone_break_even_tail_bytes_per_s", 1e9),
    "break_even_latency_tail_us": ("break_even_latency_tail_s", 1e-6),
    "lone_break_even_latency_tail_us": ("lone_break_even_latency_tail_s", 1e-6),
    **{
        f"{prefix}{column}_{suffix}": (f"{prefix}{si}_{suffix}", scale)
        for suffix in ("contiguous", "per_layer")
        for prefix in ("", "lone_")
        for column, si, scale in (
            ("break_even_tail_GBps", "break_even_tail_bytes_per_s", 1e9),
            ("break_even_latency_tail_us", "break_even_latency_tail_s", 1e-6),
        )
    },
    "fetch_us_contiguous": ("fetch_time_s_contiguous", 1e-6),
    "fetch_us_per_layer": ("fetch_time_s_per_layer", 1e-6),
}
"""Columns of the tiers table of record whose SI names and scales --json uses (the others keep their names)."""


def _json_value(column: str, value: object) -> object:
    """A cell of the tiers table as --json writes it: SI base units, booleans as booleans."""
    name_scale = TIER_JSON.get(column)
    if name_scale is not None:
        return float(value) * name_scale[1]  # type: ignore[arg-type]
    if "fetch_wins" in column:
        return bool(value)
    return value


def run(args: argparse.Namespace) -> int:
    # Imported here for start-up time only (no cycle: the pages sit below the commands): the page
    # modules import pandas and matplotlib, which `kvtier compare` and `kvtier model` never need.
    from kvtier.report.pages import tiers

    sets = parse_set_options(args.set)
    sets.update(placement_sets(args, sets))
    sets.update(weight_dtype_sets(args, sets))
    sets.update(regeneration_sets(args, sets))
    base = with_accelerator(load_assumptions(args.assumptions), args)
    scenario = Scenario(base.with_values(sets, source="command line") if sets else base)
    scenario.check_fit()
    df = tiers.table(scenario)
    rows = [
        {TIER_JSON.get(col, (col, None))[0]: _json_value(col, value) for col, value in record.items()}
        for record in df.to_dict(orient="records")
    ]
    point = scenario.illustrative
    payload = {
        "block_bytes": scenario.block_bytes,
        "position_tokens": scenario.v("interior.position"),
        "mfu": point["mfu"],
        "fetch_layout": str(scenario.assumptions.value("fetch_layout")),
        "layer_chunks": scenario.layer_chunks,
        "placement": placement_json(scenario),
        "tiers": rows,
    }
    layouts = LAYOUTS if args.layout == "both" else (args.layout,)
    if scenario.assumptions.value("regen.model") == "engine":
        how = (
            f" regeneration from {scenario.kernel_tables.label}'s measured kernels: inside a batch its share of a"
            f" {scenario.v('regen.step_tokens'):,.0f}-token step, alone the engine's pass"
        )
    else:
        how = (
            f" regeneration at {format_quantity(point['mfu'], 'fraction')} MFU: inside a batch its marginal compute,"
            " alone the roofline"
        )
    lines = [
        f"{scenario.block_tokens}-token block of {scenario.model.name} ({format_bytes(scenario.block_bytes)});{how}",
        f"placement: {scenario.placement.label}; each accelerator fetches {scenario.shard_share:.4g} of the"
        f" block, {format_bytes(scenario.fetch_bytes)} over each shared link",
        f"layouts: contiguous = 1 transfer per block; per-layer = {scenario.layer_chunks} transfers"
        " (a paged cache's layer chunks), each paying the link's latency",
        "",
    ]
    header = f"{'link':<20} {'GB/s':>8} {'latency':>10}"
    for layout in layouts:
        tag = "contig" if layout == "contiguous" else "per-layer"
        header += f" | {tag + ' fetch':>16} {'x batch':>8} {'x lone':>8} {'b-e lat batch':>13} {'b-e lat lone':>12}"
    lines.append(header)
    for record in df.to_dict(orient="records"):
        line = f"{record['link']:<20} {record['bandwidth_GBps']:>8.1f} {_us(record['latency_us']):>10}"
        for layout in layouts:
            suffix = tiers.LAYOUT_SUFFIX[layout]
            line += (
                f" | {_us(record[f'fetch_us_{suffix}']):>16} {_x(record[f'ratio_tail_{suffix}']):>8}"
                f" {_x(record[f'lone_ratio_tail_{suffix}']):>8}"
                f" {_us(record[f'break_even_latency_tail_us_{suffix}']):>13}"
                f" {_us(record[f'lone_break_even_latency_tail_us_{suffix}']):>12}"
            )
        lines.append(line)
    lines += [
        "",
        "x batch / x lone: regenerate time / fetch time of the tail block, inside a batch"
        + (
            " (its share of the step)"
            if scenario.assumptions.value("regen.model") == "engine"
            else " (its marginal compute)"
        )
        + " and as a lone block; b-e lat: the per-transfer latency at which the fetch takes as long as regenerating"
        " (the break-even latency; break-even bandwidths are in --json); latency per transfer: the set's"
        " tier_latency.* keys (fetch_latency for the brackets)",
    ]
    if args.split:
        from kvtier.report import serving

        ladder = serving.split_ladder(scenario)
        payload["split"] = ladder
        lines += ["", *split_lines(ladder, layouts)]
    emit(args.json, payload, lines)
    return 0


def split_lines(ladder: list[dict[str, object]], layouts: tuple[str, ...]) -> list[str]:
    """``tiers --split``'s lines: per tier and layout, the best split in each regime (tokens computed, gain)."""
    first = ladder[0]
    out = [
        f"split: a reused prefix of {first['prefix_tokens']:,} tokens and {first['new_tokens']:,} new ones, its head"
        " computed while its tail is fetched (tokens computed, and the gain over the better of fetching and"
        " regenerating; '-' where a pure way is fastest)",
        f"{'link':<20}" + "".join(f" | {layout + ' batch':>22} {layout + ' lone':>22}" for layout in layouts),
    ]
    cells = {(r["tier"], r["layout"], r["regime"]): r for r in ladder}
    for tier in dict.fromkeys(r["tier"] for r in ladder):
        line = f"{tier:<20}"
        for layout in layouts:
            for regime in ("batch", "lone"):
                r = cells[(tier, layout, regime)]
                gain = f"{r['gain']:#.3g}x" if r["gain"] >= 1.01 else f"+{(r['gain'] - 1) * 100:.2g}%"  # not "1.00x"
                text = f"{r['split_tokens']:,} tok, {gain}" if r["fastest"] == "split" else "-"
                line += f" | {text:>22}" if regime == "batch" else f" {text:>22}"
        out.append(line)
    return out


def _us(value_us: float) -> str:
    """A time given in µs, written with the unit that keeps it readable."""
    return format_quantity(float(value_us) * 1e-6, "time")


def _x(ratio: float) -> str:
    """A ratio with three significant digits below 100 and none after the point above."""
    return f"{ratio:,.0f}" if ratio >= 100 else f"{ratio:.3g}"
