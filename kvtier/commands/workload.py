"""``kvtier workload TRACE``: how big a KV tier a serving trace needs, and what it saves.

Registered on the command line by :func:`add_parser`; :func:`run` prints the analysis of
:func:`kvtier.formulas.cache.report.report` as text or JSON (SI base units).  A bad trace raises
:class:`~kvtier.errors.KvtierError` naming the file and line; the command line prints it on
one line and exits with status 2, having printed nothing else.
"""

from __future__ import annotations

import argparse
import json
import math
import os
from typing import Any

from kvtier import analysis as trace_analysis
from kvtier.commands import replays
from kvtier.commands.options import add_assumption_options, add_weight_dtype_option, alias, weight_dtype_sets
from kvtier.commands.output import num as _num
from kvtier.commands.output import pct as _pct
from kvtier.data import SHIPPED_TRACES
from kvtier.errors import KvtierError, show
from kvtier.formulas.cache import fleet
from kvtier.formulas.cache.curve import LruHistogram, curve_error
from kvtier.formulas.cache.regen import RegenCosts
from kvtier.formulas.cache.report import SAMPLED_FIGURES, LinkSpec, report
from kvtier.formulas.cache.trace import HIT_COUNTS
from kvtier.inputs import distributed, traces
from kvtier.inputs.assumptions import load_assumptions, parse_set_options
from kvtier.inputs.keys import SCHEMA
from kvtier.report.words import no_duration, nothing_to_cache, priced_sentence
from kvtier.scenario import Scenario
from kvtier.units import format_bytes, format_time, parse_quantity, plural


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register ``workload TRACE [--format F] [--model SPEC] [--block-tokens N] [--count C] [--sample R]
    [--sample-blocks N] [--over-time CAPACITY [--every N | --every-s S]] [--json]``."""
    p = subparsers.add_parser(
        "workload",
        help="size a KV tier from a serving trace: block reuse, exact LRU hit ratio, what each tier saves",
        description="Analyse a request trace (one JSON object per request: timestamp, input_length,"
        " output_length, hash_ids): block reuse, the exact LRU hit ratio against capacity, reuse intervals, the"
        " prefill work the hits avoid in both regeneration regimes, and for each link preset the time to fetch"
        " them. Exit status 2 on a bad trace, with one line naming file and line.",
    )
    p.add_argument(
        "trace",
        metavar="TRACE",
        help=f"a shipped trace ({', '.join(SHIPPED_TRACES)}) or the path of a JSONL trace;"
        " a file of that name here wins over a shipped trace, and the output says so",
    )
    p.add_argument(
        "--format",
        choices=tuple(traces.TRACE_FORMATS),
        help=f"the trace's format (default: the set's workload.trace_format, {traces.DEFAULT_FORMAT}): "
        + "; ".join(f"{f.name} = {f.summary}" for f in traces.TRACE_FORMATS.values())
        + ". Sets the block size too, unless --block-tokens is given",
    )
    p.add_argument("--model", metavar="SPEC", help="preset name or config.json path (default: the set's model)")
    add_weight_dtype_option(p)
    p.add_argument(
        "--block-tokens",
        metavar="N",
        help="prompt tokens per hash id in the trace (default: the format's, else the set's"
        " workload.block_tokens, 512)",
    )
    add_assumption_options(p)
    p.add_argument(
        "--count",
        choices=HIT_COUNTS,
        help="how a request's hits are counted (default: the set's workload.hit_count, prefix): prefix = up to"
        " its first miss, as a serving engine's prefix cache serves them; per-block = every cached block",
    )
    p.add_argument(
        "--sample",
        metavar="R",
        help="measure the LRU curve on a share R of the blocks (spatially hashed sampling, SHARDS), distances"
        " scaled by 1/R (default: the set's workload.sample_rate, 1 = exact)",
    )
    p.add_argument(
        "--sample-blocks",
        metavar="N",
        type=int,
        help="fixed-size sampling: hold at most N sampled blocks, lowering the rate as needed (with --sample, from"
        " that rate; alone, from 1)",
    )
    p.add_argument(
        "--over-time",
        metavar="CAPACITY",
        help="also the hit ratio over the trace of an LRU tier of CAPACITY (blocks, or bytes with a unit: 2TiB),"
        " per --every requests or per --every-s seconds",
    )
    p.add_argument(
        "--capacity",
        metavar="CAPACITY",
        help="also replay an LRU tier of CAPACITY (blocks, or bytes with a unit) request by request: the tokens it"
        " serves; with --instances, each instance's tier",
    )
    p.add_argument(
        "--instances",
        metavar="N",
        type=int,
        help="with --capacity: spread the trace over N serving instances, each with its own tier, routed by"
        " --routing, against one pooled tier of N times the capacity read over RDMA (fleet.pool_bandwidth)",
    )
    p.add_argument(
        "--routing",
        choices=fleet.ROUTINGS,
        help="with --instances: how a request picks its instance (default: the set's fleet.routing, prefix)",
    )
    p.add_argument(
        "--commit",
        choices=fleet.COMMITS,
        default="head-first",
        help="with --capacity: the order a prompt's blocks are touched after its lookup (head-first, as the book's"
        " LRU; tail-first, as LiteHit commits, so that an eviction takes a leaf)",
    )
    p.add_argument(
        "--admission",
        action="store_true",
        help="with --capacity: replay the tier with each admission filter (every miss, the second or third"
        " reference, TinyLFU) and with a time to live from the five-minute rule: hit ratio, writes, NVMe drive"
        " writes per day, and the hit ratio each filter gives up per drive write it saves",
    )
    p.add_argument(
        "--policies",
        action="store_true",
        help="also replay LRU, leaf-first LRU, S3-FIFO, SIEVE and Belady's MIN at each tier's capacity: each one's hit"
        " ratio, counted per block and up to each request's first miss",
    )
    p.add_argument("--every", metavar="N", type=int, help="requests per point of --over-time (1000)")
    p.add_argument("--every-s", metavar="S", type=float, help="seconds per point of --over-time instead (e.g. 60)")
    p.add_argument(
        "--parts",
        action="store_true",
        help="TRACE is a directory or a glob pattern of files, parts of one trace (one per hour or server): parsed"
        " in parallel on Dask (a LocalCluster, or --scheduler), then replayed in the order of their timestamps",
    )
    p.add_argument("--scheduler", metavar="ADDRESS", help="with --parts: a Dask scheduler (tcp://host:8786)")
    p.add_argument(
        "--workers", metavar="N", type=int, help="with --parts: LocalCluster workers, at most this machine's cores (2)"
    )
    p.add_argument(
        "--window",
        metavar="S",
        type=float,
        help="with --parts: replay time windows of S seconds in parallel, each after --warmup, histograms added; the"
        " output gives the curve's gap to the single pass",
    )
    p.add_argument("--warmup", metavar="S", type=float, help="with --window: warm-up seconds (0)")
    p.add_argument(
        "--stream",
        action="store_true",
        help="accepted for compatibility: the trace is always read line by line, in memory proportional to its"
        " distinct blocks",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output, SI base units")
    p.set_defaults(func=run)
    return p


def _block_tokens_option(text: str) -> str:
    """``--block-tokens``'s value checked as the option the user typed: whole tokens in the key's range."""
    spec = SCHEMA["workload.block_tokens"]
    try:
        value = parse_quantity(text, "tokens")
    except KvtierError as exc:
        raise KvtierError(f"--block-tokens: {exc}") from None
    if not (math.isfinite(value) and value in spec.bounds and float(value).is_integer()):
        raise KvtierError(f"--block-tokens {show(text, quote=True)}: allowed: {spec.allowed()}")
    return text


def _scenario(args: argparse.Namespace) -> Scenario:
    sets = parse_set_options(getattr(args, "set", None))
    if getattr(args, "model", None):
        alias(sets, "--model", args.model, "model")
    sets.update(weight_dtype_sets(args, sets))
    for option, dest, key in (
        ("--count", "count", "workload.hit_count"),
        ("--sample", "sample", "workload.sample_rate"),
        ("--format", "format", "workload.trace_format"),
    ):
        if getattr(args, dest, None) is not None:
            alias(sets, option, getattr(args, dest), key)
    for option, dest, key in (
        ("--routing", "routing", "fleet.routing"),
        ("--instances", "instances", "fleet.instances"),
    ):
        if getattr(args, dest, None) is not None:  # checked, not set: the fleet's replay takes the option itself
            alias(dict(sets), option, getattr(args, dest), key)
    if getattr(args, "block_tokens", None) is not None:
        alias(sets, "--block-tokens", _block_tokens_option(str(args.block_tokens)), "workload.block_tokens")
    fmt = getattr(args, "format", None)
    if fmt is not None:  # the format's own block size, unless one is given
        sets.setdefault("workload.block_tokens", str(traces.TRACE_FORMATS[fmt].block_tokens))
    # priced as the workload page prices the trace: for workload.deployment, the build's own set if it names a model
    return trace_analysis.priced(Scenario(load_assumptions(getattr(args, "assumptions", None), sets)))


def _format(s: Scenario) -> str:
    """The set's ``workload.trace_format``."""
    return str(s.assumptions.value("workload.trace_format"))


def links(s: Scenario) -> list[LinkSpec]:
    """The tiers of :attr:`Scenario.tier_links`, fastest first, as :class:`~kvtier.formulas.cache.report.LinkSpec`:
    each link preset's bandwidth and the set's per-transfer latency (``tier_latency.*``)."""
    tiers = s.tier_links
    order = sorted(range(len(tiers.names)), key=lambda i: (-tiers.bandwidth_bytes_per_s[i], tiers.names[i]))
    return [LinkSpec(tiers.names[i], float(tiers.bandwidth_bytes_per_s[i]), float(tiers.latency_s[i])) for i in order]


MIN_SAMPLE_BLOCKS = 1_000
"""Fewest blocks ``--sample-blocks`` may hold (SHARDS' fixed-size variant is meant for thousands: Waldspurger et
al. hold 8,192)."""

MAX_CAPACITY_BLOCKS = 2**53
"""Most blocks a capacity option may name (the largest whole number a float holds exactly)."""


def _capacity(text: str, s: Scenario, option: str) -> float:
    """A capacity option's value in blocks: a whole count (``1000``, ``1e3``), or bytes with a unit over the set's
    block bytes, rounded down to whole blocks (a tier holds whole blocks)."""
    said = f"{option} {show(text, quote=True)}"
    if not any(c.isalpha() for c in text.replace("e", "").replace("E", "")):
        # no unit: a count of blocks, exponent or not ("1e3" was read as 1,000 bytes, "1,000" too)
        whole = text.strip().lstrip("+-").isdigit()
        try:
            cap = float(int(text)) if whole else float(text)
        except ValueError:
            raise KvtierError(f"{said}: a whole number of blocks (no separators), or bytes with a unit") from None
        if math.isfinite(cap) and cap != math.floor(cap):
            raise KvtierError(f"{said}: a whole number of blocks, or bytes with a unit (e.g. 4TiB)")
        exact = int(text) if whole else cap  # 2**53 + 1 read as itself
    else:
        block = s.tier_bytes_per_token * s.v("workload.block_tokens")
        try:
            n_bytes = parse_quantity(text, "bytes")
        except KvtierError:
            raise KvtierError(f"{said}: a capacity in blocks, or bytes with a unit") from None
        if 0 < n_bytes < block:
            raise KvtierError(f"{said}: less than one block ({format_bytes(block)}); a tier holds whole blocks")
        cap = math.floor(n_bytes / block) if math.isfinite(n_bytes) else n_bytes
        exact = cap
    if not (math.isfinite(cap) and 0 <= exact <= MAX_CAPACITY_BLOCKS):
        raise KvtierError(f"{said}: a capacity from 0 to 2**53 blocks ({MAX_CAPACITY_BLOCKS:,})")
    return cap + 0.0  # -0 is 0


EVERY_S_RANGE = (1e-3, 1e12)
"""Seconds a point of ``--over-time --every-s`` may span: a millisecond (the finest timestamps a trace carries) to
about 30,000 years."""

MAX_EVERY = 2**53
"""Most requests a point of ``--over-time --every`` may hold (the largest whole number a float holds exactly)."""

DEPENDS: dict[str, tuple[str, str]] = {
    "--every": ("--over-time", "groups --over-time's points"),
    "--every-s": ("--over-time", "groups --over-time's points"),
    "--workers": ("--parts", "sizes the Dask cluster that reads a trace split into files"),
    "--warmup": ("--window", "warms up each time window"),
}
"""Options that act only with another: ``option -> (the other, what it does)``."""


def _over_time(
    text: str | None, s: Scenario, every: int, every_s: float | None
) -> tuple[float, int | None, float | None] | None:
    """``--over-time``'s capacity in blocks (a count, or bytes with a unit), with its grouping."""
    if text is None:
        return None
    cap = _capacity(text, s, "--over-time")
    if every_s is not None and not (math.isfinite(every_s) and EVERY_S_RANGE[0] <= every_s <= EVERY_S_RANGE[1]):
        raise KvtierError(
            f"--every-s {every_s:g}: a number of seconds from {EVERY_S_RANGE[0]:g} to {EVERY_S_RANGE[1]:g}"
        )
    if every_s is None and not 1 <= every <= MAX_EVERY:
        raise KvtierError(f"--every {every}: a number of requests from 1 to {MAX_EVERY:,}")
    return cap, (None if every_s is not None else every), every_s


def _option_pairs(args: argparse.Namespace) -> None:
    """Refuse an option that would do nothing without the one it serves, or two that would do the same, by name."""

    def given(option: str) -> Any:
        return getattr(args, option.lstrip("-").replace("-", "_"), None)

    for option, (needs, what) in DEPENDS.items():
        if given(option) is not None and not given(needs):
            raise KvtierError(f"{option} {what}: add {needs}")
    if given("--every") is not None and given("--every-s") is not None:
        raise KvtierError("--every and --every-s both group --over-time's points: give one")


def analysis(
    s: Scenario,
    trace: str,
    max_blocks: int | None = None,
    over_time: tuple[float, int | None, float | None] | None = None,
    parts: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The report of ``trace`` under scenario ``s``, with what priced it: the trace streamed, in bounded memory.

    ``parts`` (``scheduler``, ``workers``, ``window``, ``warmup``): ``trace`` names the files of a split trace,
    read on Dask (:mod:`kvtier.inputs.distributed`).

    Hits are counted as ``workload.hit_count`` says and the curve sampled at ``workload.sample_rate``
    (:class:`kvtier.formulas.cache.stream.LruStream`); ``max_blocks`` and ``over_time`` are its options.
    """
    mfu_label = str(s.assumptions.value("illustrative.mfu"))
    rc = s.regen_costs(mfu_label=mfu_label)
    if parts is not None:
        return _parts(s, trace, rc, mfu_label, max_blocks, parts)
    try:
        h = traces.stream_lru(
            trace,
            int(s.v("workload.block_tokens")),
            trace_format=_format(s),
            count=str(s.assumptions.value("workload.hit_count")),
            rc=rc,
            sample_rate=float(s.v("workload.sample_rate")),
            max_blocks=max_blocks,
            over_time=over_time,
        )
    except MemoryError:
        raise KvtierError(
            f"{show(trace)}: not enough memory for the trace's distinct blocks (about 100 B each); --sample R"
            " measures the curve on a share of them"
        ) from None
    _check_sample(h, trace, float(s.v("workload.sample_rate")))
    out = report(h, rc, links(s))
    if h.sample_rate < 1:
        out["sample_error"] = sample_errors(s, rc, float(s.v("workload.sample_rate")), max_blocks)
    if h.over_time is not None and over_time is not None:
        start, refs, ratio = h.over_time
        out["over_time"] = {
            "capacity_blocks": over_time[0],
            "every_requests": over_time[1],
            "every_s": over_time[2],
            "start": start.tolist(),
            "references": refs.tolist(),
            "hit_ratio": ratio.tolist(),
        }
    out["model"] = s.model.name
    out["kv_dtype"] = s.kv_dtype
    out["mfu_label"] = mfu_label
    return out


def sample_errors(s: Scenario, rc: RegenCosts, rate: float, max_blocks: int | None) -> dict[str, Any]:
    """How far each sampled figure lies from the exact one on the shipped traces, sampled as the user's trace was.

    :func:`kvtier.inputs.traces.sampling_error` of each shipped trace at ``rate`` (and ``max_blocks``), priced
    with ``rc`` over the set's links: per trace its figures' errors
    (:data:`kvtier.formulas.cache.report.SAMPLED_FIGURES`), and the largest of each over the traces.
    """
    count = str(s.assumptions.value("workload.hit_count"))
    per = {}
    for name in SHIPPED_TRACES:
        (row,) = traces.sampling_error(
            name, [rate], traces.TRACE_BLOCK_TOKENS, traces.DEFAULT_FORMAT, count, max_blocks, rc, links(s)
        )
        per[name] = {"rate_used": row["rate_used"], **row["figures"]}
    largest = {k: max(v[k] for v in per.values()) for k in SAMPLED_FIGURES}
    return {"rate": rate, "max_blocks": max_blocks, "traces": per, "largest": largest}


def _check_sample(h: LruHistogram, trace: str, rate: float) -> None:
    """Refuse a sampled curve that holds no block of a trace that has some: it would report 0 distinct blocks and
    an infinite cache hitting 100 %."""
    if h.sample_rate < 1 and h.sampled_refs == 0 and h.n_refs > 0:
        raise KvtierError(
            f"{show(trace)}: a sample at rate {rate:g} holds none of the trace's {h.n_refs:,} block references; raise"
            " --sample (or leave it out for the exact curve)"
        )


def _parts(
    s: Scenario, spec: str, rc: RegenCosts, mfu_label: str, max_blocks: int | None, opts: dict[str, Any]
) -> dict[str, Any]:
    """The report of the files ``spec`` names, parsed on Dask and replayed (or by windows, with their gap)."""
    bt, fmt = int(s.v("workload.block_tokens")), _format(s)
    count = str(s.assumptions.value("workload.hit_count"))
    if opts.get("window") is not None:  # checked before the files are listed and a cluster starts for them
        traces.check_window(float(opts["window"]), float(opts.get("warmup") or 0.0))
    names = distributed.files(spec)
    with distributed.client(opts.get("scheduler"), int(opts.get("workers") or 2)) as c:
        rate = float(s.v("workload.sample_rate"))
        # sampled on the workers, unless the exact windows need every reference; streamed, unless they need them
        # all at once
        read = distributed.Parts(names, bt, fmt, c, rate if opts.get("window") is None else 1.0)
        held = list(read) if opts.get("window") is not None else read
        single = distributed.replay(held, bt, fmt, count, rc, rate, max_blocks, name=show(spec))
        _check_sample(single, spec, rate)
        h = single
        if opts.get("window") is not None:
            h = distributed.windowed(
                held, float(opts["window"]), float(opts.get("warmup") or 0.0), bt, fmt, count, rc, c
            )
    out = report(h, rc, links(s))
    if h.sample_rate < 1:  # the caveat the one-file path prints (it was dropped here)
        out["sample_error"] = sample_errors(s, rc, float(s.v("workload.sample_rate")), max_blocks)
    out["parts"] = {
        "files": len(names),
        "names": read.names,
        "scheduler": opts.get("scheduler") or f"LocalCluster({opts.get('workers')})",
    }
    if h is not single:
        # the blocks, their reuse and the infinite cache are the trace's, seen in one pass; the windows' own (each
        # window a cache that forgets what lies before its warm-up) printed "5,046 unique" of 54,559 references
        # beside "an infinite cache hits 6.1 %"
        windowed_blocks = out["blocks"]
        out["blocks"] = report(single, rc, links(s))["blocks"]
        out["parts"].update(
            window_s=float(opts["window"]),
            warmup_s=float(opts.get("warmup") or 0.0),
            single_pass_gap=curve_error(single, h),
            windowed_hit_ratio_infinite_blocks=windowed_blocks["hit_ratio_infinite_blocks"],
        )
    out["model"] = s.model.name
    out["kv_dtype"] = s.kv_dtype
    out["mfu_label"] = mfu_label
    return out


def _notes(rep: dict[str, Any]) -> dict[str, str]:
    """What the report's null values mean, by condition (``no_reuse``, ``zero_duration``); empty when none."""
    tr, bl = rep["trace"], rep["blocks"]
    out = {}
    empty = nothing_to_cache(bl["references"], bl["hit_ratio_infinite_blocks"])
    if empty:
        out["no_reuse"] = f"nothing to cache: {empty}, so every tier's capacity is 0 and it saves nothing" + (
            "; reuse_interval_s and recompute / fetch (no hits to fetch) are null" if "duration_s" in tr else ""
        )
    still = no_duration(tr["requests"], tr.get("duration_s", 1.0))
    if still:
        out["zero_duration"] = (
            f"{still}, so requests_per_s is null"
            if empty
            else f"{still}, so requests_per_s and every other *_per_s rate are null; recompute / fetch compares"
            " totals over the trace"
        )
    return out


def _nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _nulls(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_nulls(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _finite(rep: dict[str, Any], said: dict[str, str] | None = None) -> dict[str, Any]:
    """The report as strict JSON: every undefined number ``null``, and ``notes`` saying why (by condition).

    ``said`` are the reader's notes (:func:`notes`), merged under their own keys.
    """
    return _nulls({**rep, "notes": {**(said or {}), **_notes(rep)}})


def _requests(n: int) -> str:
    return f"{n:,} request{'' if n == 1 else 's'}"


def _span(tr: dict[str, Any]) -> str:
    """How long the trace lasts and its rate, or that it has neither."""
    if tr["duration_s"] > 0:
        return f"over {format_time(tr['duration_s'])} ({tr['requests_per_s']:.2f} per s)"
    return "at one timestamp (0 s: no rate per second)" if tr["requests"] > 1 else "(0 s: no rate per second)"


def _regen_lines(rep: dict[str, Any]) -> list[str]:
    """How the report times a recomputed prefix: the MFU and the roofline, or an engine's measured kernels."""
    regen, engine = rep["regen"], rep.get("engine")
    head = f"{rep['model']}, {rep['kv_dtype']} KV: {format_bytes(rep['block_bytes'])} a block;"
    copies = rep.get("stored_copies", 1.0)
    if copies != 1:  # the tensor-parallel ranks each store their copy (parallel.kv_storage)
        stored = format_bytes(rep["tier_block_bytes"])
        head += f" {stored} in a tier (stored {copies:g} times: each rank writes its own);"
    if engine:
        return [
            f"{head} regeneration by {engine['tables']}'s measured kernels (regen.model engine)",
            "  in batch: the prefix's share of a batched step; lone: its own pass;"
            f" {_pct(engine['prompts_beyond_grid'])} of the prompts are longer than the {engine['grid_tokens']:,.0f}"
            " tokens the tables measured and are extrapolated",
        ]
    return [
        f"{head} regeneration at {regen['mfu'] * 100:g} % MFU of {regen['peak_flop_per_s'] / 1e12:g} TFLOP/s",
        "  in batch: marginal compute; lone: the request's hit prefix recomputed as its own pass, roofline with"
        f" {regen['mem_bandwidth_bytes_per_s'] / 1e12:g} TB/s × {regen['mem_efficiency'] * 100:g} %",
    ]


def _prefix_line(rep: dict[str, Any]) -> str:
    """The prefix property, checked on every request; not stated of a sample, whose error it has none measured."""
    tr, pf = rep["trace"], rep["prefix"]
    if rep.get("sample_rate", 1.0) < 1:
        return "prefix property: not checked on a sample (run without --sample to check it on every request)"
    held = tr["requests"] - pf["requests_with_a_distance_that_falls"]
    return (
        f"prefix property: {held:,} of {plural(tr['requests'], 'request', ',')} {'has' if held == 1 else 'have'} stack"
        " distances that never fall along the prompt (their LRU hits form a prefix at every capacity)"
    )


def lines(rep: dict[str, Any]) -> list[str]:
    """The report as text for a terminal; an undefined figure reads ``n/a``, with a line saying why."""
    tr, bl = rep["trace"], rep["blocks"]
    ins, outs, ri = tr["input_tokens"], tr["output_tokens"], bl["reuse_interval_s"]
    empty = nothing_to_cache(bl["references"], bl["hit_ratio_infinite_blocks"])
    reuse = (
        f"  reuse interval p50 {format_time(ri['p50'])}  p90 {format_time(ri['p90'])}  p99 {format_time(ri['p99'])}"
        f"  max {format_time(ri['max'])}"
        if not empty
        else "  reuse intervals: none"
    )
    out = [
        f"trace {tr['name']}: {_requests(tr['requests'])} {_span(tr)}; {tr['block_tokens']} tokens a block",
        f"  input tokens  p50 {ins['p50']:,.0f}  p90 {ins['p90']:,.0f}  p99 {ins['p99']:,.0f}  max {ins['max']:,.0f}",
        f"  output tokens p50 {outs['p50']:,.0f}  p90 {outs['p90']:,.0f}  p99 {outs['p99']:,.0f}"
        f"  max {outs['max']:,.0f}",
        (
            f"blocks: {bl['references']:,} references, {bl['unique']:,} unique; an infinite cache hits"
            f" {_pct(bl['hit_ratio_infinite_blocks'])} of blocks, {_pct(bl['hit_ratio_infinite_tokens'])} of tokens"
            if rep.get("sample_rate", 1.0) >= 1
            else f"blocks: {bl['references']:,} references; estimated from the sample, about {bl['unique']:,} unique"
            f" and an infinite cache hitting {_pct(bl['hit_ratio_infinite_blocks'])} of blocks,"
            f" {_pct(bl['hit_ratio_infinite_tokens'])} of tokens (two estimates, not one from the other)"
        ),
        reuse,
        _prefix_line(rep),
        *_count_lines(rep),
        *_parts_lines(rep),
        "",
        *_regen_lines(rep),
        "",
    ]
    if empty:
        return [*out, f"nothing to cache: {empty}, so a tier of any size hits nothing and saves no prefill"]
    out.append(
        f"{'target':>8} {'capacity':>16} {'hit blocks':>11} {'hit tokens':>11}"
        f" {'GPU-s/s in batch':>17} {'GPU-s/s lone':>13}"
    )
    for tier in rep["tiers"]:
        target = f"{tier['target_pct']:g} %"
        cap = format_bytes(tier["capacity_bytes"])
        out.append(
            f"{target:>8} {cap:>16} {_pct(tier['hit_ratio_blocks']):>11} {_pct(tier['hit_ratio_tokens']):>11}"
            f" {_num(tier['in_batch_gpu_s_per_s'], '.2f'):>17} {_num(tier['lone_gpu_s_per_s'], '.2f'):>13}"
        )
    last = rep["tiers"][-2] if len(rep["tiers"]) > 1 else rep["tiers"][-1]
    label = f"{last['target_pct']:g} % tier"
    out += [
        "",
        f"fetching the {label}'s hits: link busy (link-s per s) and recompute time / fetch time",
        f"{'link':<16} {'busy':>9} {'× in batch':>11} {'× lone':>9}",
    ]
    for link in last["links"]:
        out.append(
            f"{link['link']:<16} {_num(link['fetch_link_s_per_s'], '.3f'):>9}"
            f" {_num(link['in_batch_over_fetch'], '.1f'):>11} {_num(link['lone_over_fetch'], '.1f'):>9}"
        )
    out += [
        "",
        "GPU-s/s: accelerator-seconds of prefill avoided per second of traffic; busy > 1: the link cannot keep up",
    ]
    still = no_duration(tr["requests"], tr["duration_s"])
    if still:
        out.append(
            f"n/a: {still}; recompute / fetch compares the totals over the trace (each request's hit prefix"
            " recomputed against fetched)"
        )
    return [
        *out,
        *_over_time_lines(rep),
        *replays.policy_lines(rep),
        *replays.fleet_lines(rep),
        *replays.admission_lines(rep),
    ]


def _count_lines(rep: dict[str, Any]) -> list[str]:
    """How hits were counted and, where counting them the other way changes a tier's hit ratio, by how much."""
    hc = rep["hit_count"]
    out = [
        f"hits counted {'up to each request' + chr(39) + 's first miss' if hc['count'] == 'prefix' else 'per block'}"
    ]
    if rep.get("sample_rate", 1.0) < 1:
        out[0] += (
            f"; curve sampled at {rep['sample_rate']:.4g} of the blocks (SHARDS), distances scaled by"
            f" {1 / rep['sample_rate']:,.4g}"
        )
        out += _sample_error_lines(rep)
    diffs = [d for d in hc["other_minus_this"] if d]
    if diffs:
        worst = max(hc["other_minus_this"], key=abs)
        out.append(
            f"  counted {hc['other']} instead, a tier's block hit ratio would differ by up to {worst * 100:+.2f} points"
        )
    return out


def _sample_error_lines(rep: dict[str, Any]) -> list[str]:
    """What each sampled figure's error was on the shipped traces, sampled alike: the largest over them."""
    se = rep.get("sample_error")
    if not se:
        return []
    big = se["largest"]
    parts = [f"{SAMPLED_FIGURES['hit_ratio_pts']} within {big['hit_ratio_pts']:.1f} points"]
    parts += [
        f"{SAMPLED_FIGURES[k]} within {big[k] * 100:.0f} %"
        if math.isfinite(big[k])
        else f"{SAMPLED_FIGURES[k]} off by more than any share (an exact figure of 0 estimated above it)"
        for k in SAMPLED_FIGURES
        if k != "hit_ratio_pts"
    ]
    return [
        f"  the sampled figures are estimates; sampled alike, the shipped traces ({', '.join(se['traces'])}) came"
        " out, against their exact figures:",
        *(f"    {p}" for p in parts),
    ]


def _parts_lines(rep: dict[str, Any]) -> list[str]:
    """What the distributed path read, and the windows' gap to the single pass."""
    pt = rep.get("parts")
    if not pt:
        return []
    names = pt["names"]
    which = names[0] if len(names) == 1 else f"{names[0]} to {names[-1]}, in the order of their timestamps"
    out = [f"read {plural(pt['files'], 'file', ',')} on Dask ({pt['scheduler']}): {which}"]
    if "single_pass_gap" in pt:
        gap = pt["single_pass_gap"]
        out.append(
            f"  windows of {format_time(pt['window_s'])}, warm-up {format_time(pt['warmup_s'])}: the tiers below are"
            " the windows' curve, each window a cache of its own; it lies"
            f" {gap['mean_abs'] * 100:.2f} points below the single pass on average, {gap['max_abs'] * 100:.2f} at most,"
            f" and its infinite cache hits {_pct(pt['windowed_hit_ratio_infinite_blocks'])} of blocks (the single"
            " pass's above)"
        )
    return out


def _over_time_lines(rep: dict[str, Any]) -> list[str]:
    """The hit ratio over the trace at one capacity, one line a point."""
    ot = rep.get("over_time")
    if not ot:
        return []
    unit = f"per {plural(ot['every_requests'], 'request', ',')}" if ot["every_requests"] else f"per {ot['every_s']:g} s"
    out = [
        "",
        f"hit ratio over time at {ot['capacity_blocks']:,.0f} blocks, {unit}",
        f"{'from':>12} {'refs':>10} {'hits':>8}",
    ]
    for start, refs, ratio in zip(ot["start"], ot["references"], ot["hit_ratio"], strict=True):
        at = f"{start:,.0f}" if ot["every_requests"] else format_time(start)
        out.append(f"{at:>12} {refs:>10,} {_num(ratio * 100 if ratio is not None else None, '.1f'):>7}%")
    return out


def notes(rep: dict[str, Any], trace: str) -> dict[str, str]:
    """What the reader must know before the figures: which trace was read, its format, ids that are not chained.

    Parameters
    ----------
    rep : dict
        The report (in memory or streamed).
    trace : str
        The trace as the user named it.

    Returns
    -------
    dict of str to str
        One line each, keyed by what it is about (``trace``, ``format``, ``hits_after_a_miss``); empty for a
        shipped trace, or a file, read in the default format with chained ids.
    """
    tr, pf = rep["trace"], rep["prefix"]
    fmt = traces.TRACE_FORMATS[tr["format"]]
    out: dict[str, str] = {}
    if traces.shadows_shipped(trace):
        out["trace"] = (
            f"trace {show(trace)}: the file of that name in this directory, not the shipped trace {trace}"
            " (name the file otherwise, or run elsewhere, to read the shipped one)"
        )
    if tr["format"] != traces.DEFAULT_FORMAT:
        chained = "prefix-chained ids" if fmt.chained else "one id per block, chained here as a prefix cache does"
        out["format"] = f"format {fmt.name}: timestamps in {fmt.unit}, {chained}"
    late = pf.get("requests_with_a_hit_after_a_miss", 0)
    if late:
        advice = (
            "; if each id names one block's own tokens, declare a format that chains them (--format qwen)"
            if fmt.chained
            else ""
        )
        out["hits_after_a_miss"] = (
            f"warning: in {late:,} of {tr['requests']:,} requests a block hits after an earlier block of the same"
            f" prompt missed, which prefix-chained ids never do: the ids are not chained as the {fmt.name} format"
            f" says, and a prefix cache could not serve those hits{advice}"
        )
    return out


def _fleet_options(args: argparse.Namespace) -> str | None:
    """``--capacity``'s text, having checked that ``--instances`` and ``--routing`` come with it."""
    cap = getattr(args, "capacity", None)
    instances = getattr(args, "instances", None)
    if cap is None and (instances is not None or getattr(args, "routing", None) is not None):
        raise KvtierError("--instances and --routing spread the trace over a fleet: add --capacity, each tier's size")
    if instances is not None and not 1 <= instances <= 4096:
        raise KvtierError(f"--instances {instances}: a number of instances from 1 to 4096")
    return cap


def _check_parts(parts: dict[str, Any], over_time: bool, sampled: bool) -> None:
    """Refuse ``--parts`` options that contradict each other or that the Dask path would drop, by name; the
    LocalCluster's workers default to 2 (at most the machine's cores)."""
    cores = os.cpu_count() or 1
    workers = parts["workers"]
    if workers is not None and parts["scheduler"]:
        raise KvtierError("--workers sizes a new LocalCluster and --scheduler names a running cluster: give one")
    if workers is not None and not 1 <= workers <= cores:
        raise KvtierError(
            f"--workers {workers}: a number of LocalCluster workers from 1 to this machine's {cores} cores"
        )
    parts["workers"] = workers if workers is not None else min(2, cores)
    if parts["scheduler"]:
        distributed.check_scheduler(parts["scheduler"])
    if over_time:
        raise KvtierError("--over-time replays a trace in one file: leave out --parts")
    if parts["window"] is not None and sampled:
        raise KvtierError("--window replays every reference of each window exactly: leave out --sample")


def run(args: argparse.Namespace) -> int:
    """Run ``kvtier workload``; return the exit status (0), or raise KvtierError on bad input."""
    s = _scenario(args)
    trace = str(args.trace)
    if not trace:
        raise KvtierError("workload: name a trace")
    max_blocks = getattr(args, "sample_blocks", None)
    if max_blocks is not None and max_blocks < MIN_SAMPLE_BLOCKS:
        raise KvtierError(
            f"--sample-blocks {max_blocks}: at least {MIN_SAMPLE_BLOCKS:,} blocks (estimates from fewer sampled blocks"
            " are far off)"
        )
    _option_pairs(args)
    every = getattr(args, "every", None)
    over = _over_time(
        getattr(args, "over_time", None), s, 1000 if every is None else every, getattr(args, "every_s", None)
    )
    parts = None
    if getattr(args, "parts", False):
        parts = {k: getattr(args, k, None) for k in ("scheduler", "workers", "window", "warmup")}
        _check_parts(parts, over is not None, float(s.v("workload.sample_rate")) < 1 or max_blocks is not None)
    elif getattr(args, "window", None) is not None or getattr(args, "scheduler", None):
        raise KvtierError("--window and --scheduler read a trace split into files: add --parts")
    if over is not None and (float(s.v("workload.sample_rate")) < 1 or max_blocks is not None):
        raise KvtierError(
            "--over-time replays every block, and its error on a sample is not measured: leave out --sample"
        )
    cap = _fleet_options(args)
    if parts is not None and getattr(args, "policies", False):
        raise KvtierError("--policies replays a trace in one file: leave out --parts")
    rep = analysis(s, trace, max_blocks, over, parts)
    if cap is not None:
        blocks = int(_capacity(cap, s, "--capacity"))
        routing = getattr(args, "routing", None)
        instances = getattr(args, "instances", None)
        rep["fleet"] = replays.fleet_analysis(s, trace, blocks, instances, routing, args.commit, parts)
        if getattr(args, "admission", False):
            rep["admission"] = replays.admission_analysis(s, trace, rep["fleet"]["capacity_blocks"], parts)
    elif getattr(args, "admission", False):
        raise KvtierError("--admission replays one tier: add --capacity, its size")
    if getattr(args, "policies", False):
        rep["policies"] = replays.policy_analysis(s, trace, [t["capacity_blocks"] for t in rep["tiers"]])
    rep["priced_for"] = priced_sentence(s)
    said = notes(rep, trace)
    if args.json:
        print(json.dumps(_finite(rep, said), indent=2, sort_keys=True, allow_nan=False))
    else:
        print("\n".join([*said.values(), rep["priced_for"], *lines(rep)]))
    return 0
