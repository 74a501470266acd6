"""``kvtier tiers``: the tier ladder, every link preset against regeneration."""

from __future__ import annotations

import argparse

from kvtier.commands.options import add_assumption_options
from kvtier.commands.output import emit
from kvtier.inputs.assumptions import load_assumptions, parse_set_options
from kvtier.scenario import Scenario
from kvtier.units import format_bytes, format_quantity


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register ``tiers [--assumptions FILE] [--set KEY=VALUE] [--json]`` on ``subparsers``."""
    p = subparsers.add_parser("tiers", help="the tier ladder: every link preset against regeneration")
    add_assumption_options(p)
    p.add_argument("--json", action="store_true", help="machine-readable output, SI base units")
    p.set_defaults(func=run)
    return p


TIER_JSON = {
    "bandwidth_GBps": ("bandwidth_bytes_per_s", 1e9),
    "latency_us": ("latency_s", 1e-6),
    "fetch_us": ("fetch_time_s", 1e-6),
    "break_even_tail_GBps": ("break_even_tail_bytes_per_s", 1e9),
}
"""Columns of the tiers table of record and their SI names and scales for --json."""


def run(args: argparse.Namespace) -> int:
    # Imported here for start-up time only (no cycle: the pages sit below the commands): the page
    # modules import pandas and matplotlib, which `kvtier compare` and `kvtier model` never need.
    from kvtier.report.pages import tiers

    scenario = Scenario(load_assumptions(args.assumptions, parse_set_options(args.set)))
    df = tiers.table(scenario)
    rows = []
    for record in df.to_dict(orient="records"):
        row = {}
        for col, value in record.items():
            name, scale = TIER_JSON.get(col, (col, None))
            row[name] = value * scale if scale else (bool(value) if col == "fetch_wins_tail" else value)
        rows.append(row)
    point = scenario.illustrative
    payload = {
        "block_bytes": scenario.block_bytes,
        "position_tokens": scenario.v("interior.position"),
        "regen_model": str(scenario.assumptions.value("regen.model")),
        "mfu": point["mfu"],
        "tiers": rows,
    }
    lines = [
        f"{scenario.block_tokens}-token block of {scenario.model.name} ({format_bytes(scenario.block_bytes)});"
        f" regeneration: {payload['regen_model']} model at {format_quantity(point['mfu'], 'fraction')} MFU;"
        f" interior block at position {scenario.v('interior.position'):,.0f}",
        "",
        f"{'link':<20} {'GB/s':>8} {'raw/net':>9} {'latency':>9} {'fetch':>11} {'x tail':>9} {'x resident':>11}"
        f" {'x evicted':>11} {'break-even':>11}",
    ]
    for r in df.itertuples():
        lines.append(
            f"{r.link:<20} {r.bandwidth_GBps:>8.1f} {r.raw_or_net:>9} {r.latency_us:>7.1f}us {r.fetch_us:>9.2f}us"
            f" {r.ratio_tail:>9.1f} {r.ratio_resident:>11.1f} {r.ratio_evicted:>11.3g}"
            f" {r.break_even_tail_GBps:>7.3f}GB/s"
        )
    lines += ["", "x: regenerate time / fetch time; break-even: tail block, with the link's latency"]
    emit(args.json, payload, lines)
    return 0
