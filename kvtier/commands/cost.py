"""``kvtier cost``: how long a KV block is worth keeping in each tier, in dollars and joules.

Registered on the command line by :func:`add_parser`; :func:`run` prints, for an
assumption set, each tier's break-even holding interval against recomputation for the
set's block and the larger block, in both regimes of regeneration (a lone block and a
block inside a batch), the tier mix the workload page's trace calls for (GiB per tier,
cost per hour against recomputing every reuse), and which price moves the CXL tier's
interval most.  ``--json``
prints the same in SI base units (seconds, USD, J).  A trace with no reuse has nothing to
cache (0 GiB, 0 USD/h, no shares to give); one that lasts 0 s has no GiB held or cost per
hour but its costs over the whole trace and its saving; the text says so in words, and
``--json`` gives ``null`` with ``notes`` saying why.  The trace is read in two streamed passes
(:func:`kvtier.analysis.stream`), in memory bounded by its distinct blocks and
distinct instants, whatever its length.  Bad input (a price without its
currency, a negative or zero price, an unknown key) raises
:class:`~kvtier.errors.KvtierError`, which the command line prints on one line.
"""

from __future__ import annotations

import argparse
import json
import math
from types import ModuleType
from typing import TYPE_CHECKING, Any

from kvtier import analysis
from kvtier.commands.options import add_assumption_options, add_weight_dtype_option, weight_dtype_sets
from kvtier.formulas import tiering
from kvtier.inputs.assumptions import check_consistency, load_assumptions, parse_set_options
from kvtier.report.words import no_duration, nothing_to_cache, priced_sentence, saves
from kvtier.scenario import TORNADO_KEYS, Scenario
from kvtier.units import format_time, plural

if TYPE_CHECKING:
    from kvtier.formulas.cache.curve import LruHistogram
    from kvtier.formulas.economics import Mix


def _page() -> ModuleType:
    """The cost page's module, for its words and formats (regimes, media, durations), imported when the command
    runs: it loads pandas, which other commands do not need."""
    from kvtier.report.pages import cost

    return cost


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register ``cost [--assumptions FILE] [--set KEY=VALUE] [--json]`` on ``subparsers``."""
    p = subparsers.add_parser(
        "cost",
        help="how long a KV block is worth keeping in each tier, in dollars and joules (a five-minute rule)",
        description="For each tier preset: how long a block may wait for its next use before holding it there"
        " costs more than recomputing it, in dollars and in joules, for the set's block and the larger block"
        " (cost.large_block_tokens), with regeneration as a lone block and inside a batch. Prices are assumption"
        " keys (cost.*, energy.*), e.g. --set cost.accelerator_hour=4USD/h.",
    )
    add_assumption_options(p)
    add_weight_dtype_option(p)
    p.add_argument("--json", action="store_true", help="machine-readable output, SI base units")
    p.set_defaults(func=run)
    return p


def report(s: Scenario) -> dict[str, Any]:
    """The command's output for ``s`` as plain data in SI base units, from :mod:`kvtier.formulas.tiering`."""
    cost = _page()
    grid = tiering.interval_grid(s.tier_prices(), s.tier_links, s.cost_blocks)
    first = next(iter(grid.values()))
    tiers: dict[str, Any] = {}
    for name, medium in zip(first.tiers, first.media, strict=True):
        tiers[name] = {
            "medium": medium,
            "hold_usd_per_byte_s": first.at(name)["hold_usd_per_byte_s"],
            "hold_w_per_byte": first.at(name)["hold_w_per_byte"],
            "keep_s": {
                f"{tokens}_{regime}": {"usd": iv.at(name)["keep_usd_s"], "J": iv.at(name)["keep_j_s"]}
                for (tokens, regime), iv in grid.items()
            },
        }
    blocks = {
        f"{tokens}_{regime}": {"regen_s": iv.regen_s, "recompute_usd": iv.recompute_usd, "recompute_J": iv.recompute_j}
        for (tokens, regime), iv in grid.items()
    }
    top = tiering.interval_tornado(
        s.tier_prices(), s.price_ends(TORNADO_KEYS), s.tier_links, s.tier_block(), tiering.CXL_TIER, "lone"
    )[0]
    own = str(s.assumptions.value("model"))
    mix = {
        f"{cost.REGIMES[regime]}, {ladder}": _mix(m, tiering.LADDERS[ladder])
        for (_, regime, ladder), (m, _) in cost.trace_mixes(s, (own,)).items()
    }
    lru = {
        f"{target}%": [
            {
                **vars(b),
                "drives": None if b.drives is None else vars(b.drives),  # NVMe: the drives it buys
                "saved_lone_usd_per_s": lone.saved_usd_per_s,
            }
            for b, lone in zip(
                analysis.lru_plan(s, target / 100, "batch"), analysis.lru_plan(s, target / 100, "lone"), strict=True
            )
        ]
        for target in cost.LRU_TARGETS
    }
    return {
        "trace": str(s.assumptions.value("workload.trace")),
        "trace_format": str(s.assumptions.value("workload.trace_format")),
        "block_tokens": int(s.v("workload.block_tokens")),
        "lru": _finite(lru),
        "mix_model": own,
        "mix": mix,
        "notes": _notes(analysis.curve(s)),
        "assumption_set": s.assumptions.name,
        "priced_for": priced_sentence(s),
        "regimes": cost.REGIMES,
        "blocks": blocks,
        "tiers": tiers,
        "decisive_input": {"key": top["input"], "swing": top["swing_usd"], "tier": tiering.CXL_TIER},
    }


def _finite(x: Any) -> Any:
    """``x`` with every NaN float (a rate of a trace of 0 s, the wear of memory that does not wear) as ``None``."""
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_finite(v) for v in x]
    return None if isinstance(x, float) and not math.isfinite(x) else x


def _and(first_usd_per_s: float, then_usd_per_s: float) -> str:
    """The second of two net savings after the first: its number alone where both are savings, else with its verb."""
    if first_usd_per_s >= 0 and then_usd_per_s >= 0:
        return f"{then_usd_per_s * 3600:.3g}"
    return saves(then_usd_per_s * 3600, "USD/h")


def _lru_lines(rep: dict[str, Any]) -> list[str]:
    """The LRU tiers as text, one line per target and tier: what the tier holds, costs, saves, reads and writes."""
    out = [
        f"LRU tier for the {rep['trace']} trace, read as {rep['trace_format']} in blocks of {rep['block_tokens']}"
        f" tokens ({rep['mix_model']}; the default: every miss admitted, least recently used evicted), per share of"
        " the achievable hits:"
    ]
    for target, tiers in rep["lru"].items():
        for t in tiers:
            if t["saved_usd_per_s"] is None:
                out.append(
                    f"  {target} {t['tier']:<13} {t['capacity_bytes'] / 2**40:,.2f} TiB; no rate: the trace lasts 0 s"
                )
                continue
            wear = "" if t["endurance_used"] is None else f", wear {t['endurance_used'] * 100:,.0f} % of rated"
            d = t["drives"]
            if d is not None and d["count"] is not None:  # NVMe: the drives bought, and why
                wear += (
                    f"; buys {plural(d['count'], 'drive', ',.0f')} ({d['for_capacity']:,.0f} to hold it,"
                    f" {d['for_bandwidth']:,.0f} for its writes, {d['for_endurance']:,.0f} for their wear); flash of"
                    f" its own size would wear out in {format_time(d['wearout_s'])}"
                )
            out.append(
                f"  {target} {t['tier']:<13} {t['capacity_bytes'] / 2**40:,.2f} TiB (peak occupancy);"
                f" holds {t['hold_usd_per_s'] * 3600:.3g} + fetches {t['fetch_usd_per_s'] * 3600:.3g} USD/h;"
                f" {saves(t['saved_usd_per_s'] * 3600, 'USD/h')} inside a batch,"
                f" {_and(t['saved_usd_per_s'], t['saved_lone_usd_per_s'])} as lone passes;"
                f" reads {t['read_bytes_per_s'] / 1e9:.2f} GB/s"
                f" ({t['read_busy'] * 100:.1f} % busy), writes {t['write_bytes_per_s'] / 1e9:.2f} GB/s"
                f" ({t['write_busy'] * 100:.1f} % of the device){wear}"
            )
    return out


def _mix(m: Mix, ladder: tuple[str, ...]) -> dict[str, Any]:
    """One mix over the tiers ``ladder`` in SI units (fractions, B, USD/s, USD): ``None`` where undefined."""
    share = tiering.by_medium(m.share, ladder)
    held = tiering.by_medium(m.bytes_held, ladder) if m.bytes_held is not None else {}
    return {
        "share": {k: share[k] if m.has_reuse else None for k in tiering.MIX_MEDIA},
        "bytes_held": {k: held.get(k) for k in tiering.MIX_MEDIA[:-1]},
        "peak_bytes_held": (
            {k: v for k, v in tiering.by_medium(m.peak_bytes_held, ladder).items() if k != "recompute"}
            if m.peak_bytes_held is not None
            else None
        ),
        "usd_per_s": m.usd_per_s,
        "recompute_all_usd_per_s": m.recompute_all_usd_per_s,
        "usd": m.usd,
        "recompute_all_usd": m.recompute_all_usd,
        "saving": m.saving,
    }


def _notes(t: LruHistogram) -> dict[str, str]:
    """What the mix's null values mean, by condition (``no_reuse``, ``zero_duration``); empty when none."""
    out = {}
    empty = nothing_to_cache(t.n_refs, float(t.hit_ratio()))
    if empty:
        out["no_reuse"] = (
            f"nothing to cache: {empty}, so no tier holds a block and neither the mix nor recomputing every reuse"
            " costs anything (0 USD/h); the shares of the reuses and the saving (share, saving) are undefined"
        )
    still = no_duration(t.n_requests, t.duration_s)
    if still and not empty:
        out["zero_duration"] = (
            f"{still}, so GiB held and costs per hour (bytes_held, *_per_s) are undefined; the costs over the whole"
            " trace (usd, recompute_all_usd) and the saving stand"
        )
    return out


def lines(rep: dict[str, Any]) -> list[str]:
    """The report as text: one row per tier, the intervals readable."""
    cost = _page()
    keys = list(next(iter(rep["tiers"].values()))["keep_s"])
    empty = rep["notes"].get("no_reuse")  # the section is said to be empty, not left out without a word
    tier = (
        _lru_lines(rep)
        if empty is None
        else [f"LRU tier for the {rep['trace']} trace: none, {empty.split(', so ')[0]}."]
    )
    out = [rep["priced_for"], *tier, ""]
    out.append(f"Break-even holding interval per tier (assumption set: {rep['assumption_set']})")
    for case, b in rep["blocks"].items():
        tokens, regime = case.split("_")
        out.append(
            f"  {tokens}-token block {cost.REGIMES[regime]}: takes {cost.duration(b['regen_s'])},"
            f" {b['recompute_usd']:.3g} USD or {b['recompute_J']:.3g} J"
        )
    head = "  ".join(f"{k.replace('_', ' tokens, '):>18}" for k in keys)
    out.append(f"{'tier':<14}{'unit':<5}{head}")
    for name, t in rep["tiers"].items():
        for unit in ("usd", "J"):
            cells = "  ".join(f"{cost.duration(t['keep_s'][k][unit]):>18}" for k in keys)
            out.append(f"{name:<14}{unit:<5}{cells}")
    out += _mix_lines(rep)
    d = rep["decisive_input"]
    out.append(f"The input that moves the {d['tier']} interval most: {d['key']} (a factor of {d['swing']:.1f}).")
    return out


def _mix_lines(rep: dict[str, Any]) -> list[str]:
    """The trace's mix as text: GiB and USD/h per case, or why the trace leaves them undefined."""
    cost = _page()
    notes = rep["notes"]
    head = (
        f"Lower bound: the tier mix for the {rep['trace']} trace ({rep['mix_model']}, each reuse served the cheapest"
        " way with perfect knowledge of its next use; mean GiB)"
    )
    if "no_reuse" in notes:
        return [f"{head}: {notes['no_reuse']}."]
    out = [f"{head}:"]
    for case, m in rep["mix"].items():
        if m["usd_per_s"] is None:
            held = ", ".join(f"{cost.MEDIA.get(k, k)} ({v * 100:.0f} %)" for k, v in m["share"].items() if v)
            out.append(
                f"  {case}: {held}; over the trace {m['usd']:.3g} USD against {m['recompute_all_usd']:.3g} USD"
                f" recomputing every reuse ({m['saving'] * 100:.1f} % less)"
            )
            continue
        held = ", ".join(
            f"{cost.MEDIA[k]} {v / 2**30:,.1f} GiB ({m['share'][k] * 100:.0f} %)"
            for k, v in m["bytes_held"].items()
            if v or m["share"][k]
        )
        out.append(
            f"  {case}: {held}; {m['usd_per_s'] * 3600:.3g} USD/h against"
            f" {m['recompute_all_usd_per_s'] * 3600:.3g} USD/h recomputing every reuse"
        )
    if "zero_duration" in notes:
        out.append(f"  n/a: {notes['zero_duration']}")
    return out


def run(args: argparse.Namespace) -> int:
    """Run ``kvtier cost``; return the exit status (0), or raise KvtierError on bad input."""
    typed = parse_set_options(getattr(args, "set", None))
    sets = {**typed, **weight_dtype_sets(args, typed)}
    assumptions = load_assumptions(getattr(args, "assumptions", None), sets)
    check_consistency(assumptions)
    rep = report(analysis.priced(Scenario(assumptions)))  # priced as the cost page prices the trace
    rep["assumption_set"] = assumptions.name  # the set the user gave; `priced_for` says what priced the trace
    if args.json:
        print(json.dumps(rep, indent=2, sort_keys=True, allow_nan=False))
    else:
        print("\n".join(lines(rep)))
    return 0
