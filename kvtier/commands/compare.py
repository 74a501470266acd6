"""``kvtier compare``: fetch against regenerate for one block (default: the illustrative point)."""

from __future__ import annotations

import argparse
import math
from typing import Any

import numpy as np

from kvtier.commands.options import (
    add_assumption_options,
    add_placement_options,
    add_regeneration_options,
    add_weight_dtype_option,
    alias,
    placement_json,
    placement_sets,
    regeneration_sets,
    weight_dtype_sets,
    with_accelerator,
)
from kvtier.commands.output import emit, record_json
from kvtier.errors import KvtierError
from kvtier.formulas import split, transfer
from kvtier.inputs import kernels
from kvtier.inputs.assumptions import AssumptionSet, load_assumptions, parse_set_options
from kvtier.report import serving
from kvtier.scenario import Scenario
from kvtier.units import format_bytes, format_quantity, format_time, parse_quantity, plural


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register ``compare [--assumptions FILE] [--set KEY=VALUE] [point options] [--json]`` on ``subparsers``."""
    p = subparsers.add_parser("compare", help="fetch vs regenerate for one point (default: the illustrative point)")
    add_assumption_options(p)
    p.add_argument("--model", metavar="SPEC", help="preset name or config.json path")
    p.add_argument("--bandwidth", help="link bandwidth, e.g. 64GB/s")
    p.add_argument("--mfu", help="model FLOPs utilization, e.g. 25%% or 0.25")
    p.add_argument("--peak-flops", help="accelerator dense peak, e.g. 500TFLOP/s")
    p.add_argument("--tokens", help="tokens per block, e.g. 16")
    p.add_argument("--kv-dtype", help="KV-cache dtype: bf16, fp16, fp32, fp8")
    add_weight_dtype_option(p)
    p.add_argument("--latency", help="fixed per-transfer latency, e.g. 2us")
    p.add_argument(
        "--layout",
        choices=("contiguous", "per-layer"),
        help="one transfer per block, or one per layer chunk as a paged cache (each pays the latency)",
    )
    p.add_argument("--position", metavar="P", help="regenerate the block starting at token P (attention included)")
    p.add_argument("--upstream", choices=("resident", "evicted"), help="is the KV before the block still cached?")
    p.add_argument("--anchor-every", metavar="N", help="resident anchors every N tokens for --upstream evicted")
    add_regeneration_options(p)
    p.add_argument("--batch-tokens", metavar="N", help="tokens sharing the regenerating forward pass")
    p.add_argument(
        "--host-memory",
        choices=HOST_MEMORY_CHOICES,
        help="host memory fetched from: pinned, pageable (a KV pool, staged from DRAM: fetch.pageable_efficiency),"
        " or pageable-warm (a buffer the host cache holds: fetch.pageable_warm_efficiency)",
    )
    add_placement_options(p)
    p.add_argument(
        "--split",
        action="store_true",
        help="also serve a reused prefix by computing its head while its tail is fetched, against both pure ways",
    )
    p.add_argument("--prefix", metavar="N", help="--split: tokens of the prefix the tier holds (default: see docs)")
    p.add_argument("--suffix", metavar="N", help="--split: new tokens after it (default: one block)")
    p.add_argument("--json", action="store_true", help="machine-readable output, SI base units")
    p.set_defaults(func=run)
    return p


HOST_MEMORY_CHOICES = ("pinned", "pageable", "pageable-warm")
"""``--host-memory``: pinned, pageable from a KV pool (the cold share every page uses), or pageable from a
buffer the host CPU's cache holds (the warm share, as the measured probe copied one buffer again and again)."""


def _warm_share(args: argparse.Namespace, base: AssumptionSet) -> AssumptionSet:
    """Under ``--host-memory pageable-warm``, the set whose ``fetch.pageable_efficiency`` is the warm share.

    The one share a pageable fetch reads (:attr:`Scenario.link_efficiency`) becomes the record of
    ``fetch.pageable_warm_efficiency``, adopted under the key it stands for (its basis names it).
    """
    if getattr(args, "host_memory", None) != "pageable-warm":
        return base
    return base.with_records({"fetch.pageable_efficiency": base["fetch.pageable_warm_efficiency"]})


def _compare_overrides(args: argparse.Namespace, base: Scenario) -> dict[str, str]:
    """Map the compare options onto the assumption keys they replace."""
    sets = parse_set_options(args.set)
    bw_label = base.assumptions.value("illustrative.bandwidth")
    mfu_label = base.assumptions.value("illustrative.mfu")
    for name, option, key in (
        ("--model", args.model, "model"),
        ("--bandwidth", args.bandwidth, f"bandwidth.{bw_label}"),
        ("--mfu", args.mfu, f"mfu.{mfu_label}"),
        ("--peak-flops", args.peak_flops, "peak_flops"),
        ("--tokens", args.tokens, "block_tokens"),
        ("--kv-dtype", args.kv_dtype, "kv_dtype"),
        ("--latency", args.latency, "fetch_latency"),
        ("--layout", args.layout, "fetch_layout"),
        ("--position", args.position, "interior.position"),
        ("--anchor-every", args.anchor_every, "interior.anchor_every"),
        ("--batch-tokens", args.batch_tokens, "regen.batch_tokens"),
        (
            "--host-memory",
            None if args.host_memory is None else args.host_memory.removesuffix("-warm"),
            "fetch.host_memory",
        ),
    ):
        if option is not None:
            alias(sets, name, option, key)
    sets.update(regeneration_sets(args, sets))
    sets.update(placement_sets(args, sets))
    sets.update(weight_dtype_sets(args, sets))
    return sets


def _scenario_from_args(args: argparse.Namespace) -> Scenario:
    """The assumption set of a quick-answer command: file, accelerator preset, then options."""
    base = _warm_share(args, with_accelerator(load_assumptions(args.assumptions), args))
    sets = _compare_overrides(args, Scenario(base))
    return Scenario(base.with_values(sets, source="command line")) if sets else Scenario(base)


def copies_line(scenario: Scenario) -> list[str]:
    """The line saying how many copies a fetch takes and how each is issued; none where no copy method applies.

    ``copies  1 per block (one-unless-mla, engine vllm), batched-dma: 6 µs each (fetch.copy_cost.batched_dma)``.
    """
    method = scenario.copy_method
    if method == "none":
        return []
    n = scenario.fetch_transfers
    engine = scenario.engine
    layout = f"{engine.transfers}, engine {engine.name}" if engine is not None else "fetch_layout"
    return [
        f"copies           {n:,} per block ({layout}), {method}:"
        f" {format_time(scenario.transfer_latency_s)} each ({scenario.transfer_latency_key})"
    ]


def regen_point(scenario: Scenario, position: float | None, upstream: str) -> dict[str, Any]:
    """Fetch vs regenerate for one block at the illustrative bandwidth and MFU (SI base units).

    With no position and the MFU model this is the source chapter's tail block inside a batch
    (:meth:`~kvtier.scenario.Scenario.regen_s`, every page's tail-block time); otherwise the block
    at ``position`` with the attention term, under ``regen.model``.
    """
    point = scenario.illustrative
    model = str(scenario.assumptions.value("regen.model"))
    out: dict[str, Any] = {
        "bandwidth_bytes_per_s": point["bandwidth_bytes_per_s"],
        "mfu": point["mfu"],
        "fetch_time_s": point["fetch_s"],
        "fetch_transfers": scenario.fetch_transfers,
        "copy_method": scenario.copy_method,
        "transfer_latency_s": scenario.transfer_latency_s,
        "regen_model": model,
    }
    if model == "engine":
        p = 0.0 if position is None else position
        regen_s = float(scenario.engine_regen_s(p, upstream, strict=True))  # a pass outside the grid: refused
        first, n = (float(x) for x in scenario.recompute_span(p, upstream))
        batch = scenario.v("regen.batch_tokens")
        regime = (
            f"a lone pass of {n:,.0f} tokens after {first:,.0f} cached"
            if batch <= n
            else f"inside a batch: its share of a {batch:,.0f}-token step, its own attention after {first:,.0f} cached"
        )
        tables = scenario.kernel_tables
        beyond = scenario.engine_extrapolated(p, upstream)  # empty inside the grid (a refusal above otherwise)
        out.update(
            regen_case=f"block at position {p:,.0f}, upstream {upstream}: {regime}",
            beyond_grid=beyond or None,
            regen_regime="lone" if batch <= n else "batch",
            position_tokens=p,
            upstream=upstream,
            recomputed_tokens=n,
            batch_tokens=batch,
            kernel_tables={
                "system": tables.system,
                "engine": tables.engine,
                "engine_version": tables.version,
                "package": f"{kernels.PACKAGE} {tables.package_version}",
                "files": [{"path": path, "sha256": digest} for path, digest in tables.files],
                "timed_as": scenario.kernel_estimator.timed_as,
            },
        )
        flops = float(scenario.interior_flops(p, upstream))
    elif position is None and model == "mfu":
        regen_s = point["regen_s"]
        flops = float(scenario.interior_flops(0, "resident"))
        out.update(regen_case="tail block inside a batch, its attention over itself included", position_tokens=None)
    else:
        p = 0.0 if position is None else position
        regen_s = float(scenario.regen_time_s(p, upstream, point["mfu"]))
        flops = float(scenario.interior_flops(p, upstream))
        n = float(scenario.recompute_span(p, upstream)[1])
        regime = (
            "inside a batch"
            if model == "mfu"
            else f"a lone pass of {n:,.0f} tokens"
            if scenario.batch_tokens <= n
            else f"in a pass of {scenario.batch_tokens:,} tokens"
        )
        out.update(
            regen_case=f"block at position {p:,.0f}, upstream {upstream}, attention term included: {regime}",
            position_tokens=p,
            upstream=upstream,
        )
        if model == "roofline":
            compute_s = float(scenario.regen_time_s(p, upstream, point["mfu"], model="mfu"))
            out.update(
                bytes_read=float(scenario.regen_bytes(p, upstream)),
                batch_tokens=scenario.batch_tokens,
                compute_time_s=compute_s,
                bound=str(scenario.regen_bound(p, upstream, point["mfu"])),
            )
    out.update(
        regen_flops=flops,
        regen_time_s=regen_s,
        regen_to_fetch_ratio=regen_s / point["fetch_s"],
        # under the set's transfer model: a pageable pool's overhead per transfer, the floor and the share reached
        break_even_bandwidth_bytes_per_s=float(
            transfer.break_even_bandwidth(
                scenario.fetch_bytes,
                regen_s,
                scenario.transfer_latency_s,
                scenario.fetch_transfers,
                scenario.v("fetch.min_transfer_time"),
                scenario.link_efficiency,
                scenario.link_overhead_s,
            )
        ),
    )
    return out


def _tokens_option(flag: str, text: str | None) -> int | None:
    """A whole number of tokens from ``--prefix`` or ``--suffix`` (``None`` when not given); one line when bad."""
    if text is None:
        return None
    try:
        n = parse_quantity(text, "tokens")
    except (KvtierError, ValueError):
        raise KvtierError(f"{flag} {text!r}: not a number of tokens (e.g. 8192 or 8K)") from None
    low = 1 if flag == "--suffix" else 0  # an engine computes at least the prompt's last token
    if not (n >= low and float(n).is_integer() and n <= 10_000_000):
        raise KvtierError(f"{flag} {text!r}: must be a whole number of tokens from {low} to 10,000,000")
    return int(n)


def split_tokens(scenario: Scenario, prefix: int | None, suffix: int | None) -> tuple[int, int, str]:
    """The prefix and new tokens ``--split`` serves, and how the prefix was chosen (words).

    By default :func:`kvtier.report.serving.split_prefix`: the chapter's interior position, capped so that the
    prompt fits the model's context window, then one block of new tokens.
    """
    window = scenario.model.max_positions
    if prefix is not None:
        new, how = (scenario.block_tokens if suffix is None else suffix), "as asked"
    else:
        prefix, new, capped = serving.split_prefix(scenario, suffix)
        how = "the chapter's interior position" + (f", capped by the model's {window:,}-token window" if capped else "")
    if window and prefix + new > window:
        how += f"; past the model's {window:,}-token window"
    return prefix, new, how


def split_point(scenario: Scenario, bandwidth_bytes_per_s: float, prefix: int, suffix: int) -> dict[str, Any]:
    """A prefix of ``prefix`` tokens held behind the compare link, then ``suffix`` new tokens, served four ways.

    Per regime (:func:`kvtier.formulas.split.best_split`): regenerate the prompt, fetch the prefix then prefill the
    rest, the same fetch loaded layer by layer under the prefill, and the best split (its head computed while its
    tail is fetched); the split's tokens and time, its gain over the faster pure strategy, the fastest way (the
    engine's own fetch layer by layer where it overlaps, :meth:`kvtier.formulas.split.Split.fastest`) and, inside a
    batch with the analytic model, the closed form's crossing (SI base units; tokens).
    """
    rc = scenario.regen_costs()
    fetch = serving.fetch_of(scenario, bandwidth_bytes_per_s, scenario.transfer_latency_s)
    out: dict[str, Any] = {"prefix_tokens": prefix, "new_tokens": suffix, "prompt_tokens": prefix + suffix}
    for regime in ("batch", "lone"):
        r = split.best_split(rc, fetch, np.array([float(prefix)]), np.array([float(prefix + suffix)]), regime)
        closed = None
        if regime == "batch" and not rc.engine:
            closed = float(split.balanced_tokens_batch(rc, fetch, np.array([float(prefix)]))[0])
        pure = "fetch" if r.fetch_s[0] < r.regenerate_s[0] else "regenerate"
        out[regime] = {
            "regenerate_s": float(r.regenerate_s[0]),
            "fetch_s": float(r.fetch_s[0]),
            "layer_overlap_s": float(r.overlap_s[0]),
            "split_tokens": int(r.split_tokens[0]),
            "split_s": float(r.split_s[0]),
            "head_s": float(r.head_s[0]),
            "tail_s": float(r.tail_s[0]),
            "rest_s": float(r.rest_s[0]),
            "better_pure": pure,
            "gain_over_better_pure": float(r.gain[0]),
            "splits": bool(r.strict[0]),
            "fastest": r.fastest(scenario.layer_overlap)[0],
            "closed_form_tokens": closed,
        }
    return out


def _ratio(ratio: float) -> str:
    """The ratio as ``110.61×``; below 1 with two significant figures (``0.0034×``), never ``0.00×``."""
    return f"{ratio:,.2f}×" if ratio >= 1 else f"{ratio:.2g}×"


def _break_even_line(result: dict[str, Any]) -> str:
    """The bandwidth below which regenerating wins; where the link's latency alone outlasts regenerating, no
    bandwidth wins, said so (it printed "inf TB/s")."""
    bw = result["break_even_bandwidth_bytes_per_s"]
    if math.isfinite(bw):
        return f"break-even       {format_quantity(bw, 'bandwidth')}  (links slower than this make regenerating faster)"
    latency_s = result["transfer_latency_s"] * result["fetch_transfers"]
    return (
        f"break-even       none: the link's latency alone ({format_time(latency_s)}) outlasts regenerating"
        f" ({format_time(result['regen_time_s'])}), so regenerating is faster at any bandwidth"
    )


def split_lines(result: dict[str, Any], how: str) -> list[str]:
    """``compare --split``'s lines: the prefix, then per regime the four times and the split's gain."""
    lines = [
        f"split            a prefix of {plural(result['prefix_tokens'], 'token', ',')} held by the tier ({how}) and"
        f" {plural(result['new_tokens'], 'new token', ',')}: the head computed while the tail is fetched"
    ]
    for regime, words in (("batch", "inside a batch"), ("lone", "alone")):
        r = result[regime]
        if r["splits"]:
            gain = r["gain_over_better_pure"]  # under 1 % as a percentage: "1.00× faster" said nothing
            by = f"{gain:#.3g}×" if gain >= 1.01 else f"{(gain - 1) * 100:.2g} %"
            verdict = (
                f"split at {r['split_tokens']:,} tokens: {format_time(r['split_s'])},"
                f" {by} faster than the better pure way ({r['better_pure']})"
            )
        else:
            verdict = f"no split is faster than {r['better_pure']}"
        lines.append(
            f"  {words:<15}regenerate {format_time(r['regenerate_s'])}, fetch {format_time(r['fetch_s'])}"
            f" (layer by layer {format_time(r['layer_overlap_s'])}); {verdict}; fastest: {r['fastest']}"
        )
    return lines


def run(args: argparse.Namespace) -> int:
    if args.upstream is not None and args.position is None:
        raise KvtierError("--upstream needs --position (the block's position in tokens)")
    prefix_asked = _tokens_option("--prefix", args.prefix)
    suffix_asked = _tokens_option("--suffix", args.suffix)
    if not args.split and (prefix_asked is not None or suffix_asked is not None):
        raise KvtierError("--prefix and --suffix need --split (the reused prefix it serves)")
    scenario = _scenario_from_args(args)
    if scenario.assumptions.value("regen.model") == "engine":
        # an architecture the engine model cannot time is refused as such before the model is read for the fit check
        spec = str(scenario.assumptions.value("model"))
        kernels.engine_config(kernels.model_config(spec), spec)
    scenario.check_fit()
    position = scenario.v("interior.position") if args.position is not None else None
    upstream = args.upstream or "resident"
    result = regen_point(scenario, position, upstream)
    point = scenario.illustrative
    used_keys = [
        "model",
        "kv_dtype",
        "block_tokens",
        f"bandwidth.{point['bandwidth_label']}",
        "fetch_latency",
        "fetch_layout",
        "param_count",
        "flops_per_param_token",
        "peak_flops",
        f"mfu.{point['mfu_label']}",
        "regen.model",
    ]
    if result["regen_model"] == "roofline" or scenario.assumptions.value("parallel.hbm_capacity") is not None:
        used_keys += ["weight_dtype"]  # the bytes a regeneration reads, and what the fit check holds
    if position is not None:
        used_keys += ["interior.position", "interior.anchor_every"]
    if result["regen_model"] == "engine":
        used_keys.remove("peak_flops")
        used_keys.remove(f"mfu.{point['mfu_label']}")
        used_keys += ["regen.batch_tokens", *(["weight_dtype"] if "weight_dtype" not in used_keys else [])]
        used_keys += ["engine", "regen.system", "regen.engine"]
        used_keys += ["regen.engine_version", "regen.beyond_grid"]
    if result["regen_model"] == "roofline":
        used_keys += ["regen.batch_tokens", "regen.mem_bandwidth", "regen.mem_efficiency"]
        # the forward-pass model's other keys (kvtier.formulas.roofline.forward_pass_time_s)
        used_keys += ["regen.mem_overhead_per_layer", "regen.launch_floor_per_layer", "regen.knee_sharpness"]
        used_keys += ["regen.attention"]
        if scenario.assumptions.value("regen.attention") == "serial":
            used_keys += ["regen.attention_fixed_per_layer", "regen.attention_efficiency"]
    # the transfer model's keys (kvtier.formulas.transfer.fetch_time_s)
    used_keys += ["fetch.min_transfer_time", "fetch.host_memory", "fetch.contention"]
    if scenario.assumptions.value("fetch.host_memory") == "pageable":
        used_keys += ["fetch.pageable_efficiency", "fetch.pageable_overhead"]  # a pool beyond the host cache
    if scenario.assumptions.value("fetch.contention") == "duplex":
        used_keys += ["fetch.duplex_efficiency"]
    if scenario.engine is not None and "engine" not in used_keys:
        used_keys.insert(used_keys.index("fetch_layout"), "engine")
    if scenario.copy_method != "none":  # its per-copy cost replaces fetch_latency (Scenario.transfer_latency_s)
        used_keys[used_keys.index("fetch_latency")] = scenario.transfer_latency_key
        used_keys.insert(used_keys.index("fetch_layout"), "fetch.copy_method")
    if scenario.placement.accelerators > 1 or scenario.placement.gpus_per_link > 1:
        used_keys += [
            "parallel.tp",
            "parallel.pp",
            "parallel.ep",
            "parallel.gpus_per_link",
            "parallel.activation_dtype",
            "collective.nvlink_bandwidth",
            "collective.nvlink_latency",
            "collective.ib_bandwidth",
            "collective.ib_latency",
        ]
    used = scenario.used(*used_keys)
    if result["regen_model"] == "engine":
        used.append(scenario.kernel_tables.record)
    split_result = None
    if args.split:
        prefix, suffix, chosen = split_tokens(scenario, prefix_asked, suffix_asked)
        split_result = split_point(scenario, point["bandwidth_bytes_per_s"], prefix, suffix)
        result = {**result, "split": split_result}
    payload = {
        "model": scenario.model.name,
        "kv_bytes_per_token": scenario.kv_bytes_per_token,
        "block_tokens": scenario.block_tokens,
        "block_bytes": scenario.block_bytes,
        "kv_storage": scenario.kv_storage,
        "stored_copies": scenario.stored_copies,
        "params": scenario.params,
        "placement": placement_json(scenario),
        **result,
        "assumptions": {rec.key: record_json(rec) for rec in used},
    }
    regen_detail = (
        f"{result['regen_flops']:.4g} FLOP at {format_quantity(point['mfu'], 'fraction')} MFU"
        f" of {format_quantity(scenario.v('peak_flops'), 'flop_rate')}"
    )
    if result["regen_model"] == "engine":
        how = f"extrapolated beyond the measured grid: {result['beyond_grid']}" if result["beyond_grid"] else "measured"
        regen_detail = f"{scenario.kernel_tables.label} kernels, {how}; {result['regen_case'].split(': ', 1)[1]}"
    if result["regen_model"] == "roofline":
        regen_detail += (
            f"; roofline: {format_bytes(result['bytes_read'])} read"
            f"{' by each accelerator' if scenario.placement.accelerators > 1 else ''} at"
            f" {format_quantity(scenario.v('regen.mem_bandwidth'), 'bandwidth')}"
            f" x {format_quantity(scenario.v('regen.mem_efficiency'), 'fraction')},"
            f" batch of {result['batch_tokens']} tokens: {result['bound']}-bound"
        )
    placement = scenario.placement
    shard_line = []
    if placement.accelerators > 1 or placement.gpus_per_link > 1:
        shard_line = [
            f"placement        {placement.label}: each fetches {scenario.shard_share:.4g} of the block"
            f" ({format_bytes(scenario.shard_bytes)}), {format_bytes(scenario.fetch_bytes)} over each shared link;"
            f" a lone pass adds {format_time(float(scenario.collectives_s(scenario.block_tokens)))} of collectives;"
            f" a tier holds {scenario.stored_copies:g} cop{'y' if scenario.stored_copies == 1 else 'ies'} of each"
            f" block ({scenario.kv_storage})",
        ]
    lines = [
        f"block            {scenario.block_tokens} tokens × {format_bytes(scenario.kv_bytes_per_token)}/token"
        f" = {format_bytes(scenario.block_bytes)} ({scenario.block_bytes:,.0f} B)",
        *shard_line,
        f"fetch            {format_time(point['fetch_s'])}"
        f"  at {format_quantity(point['bandwidth_bytes_per_s'], 'bandwidth')}"
        + (
            f", {scenario.fetch_transfers} transfers × {format_time(scenario.transfer_latency_s)}"
            if scenario.fetch_transfers > 1
            else ""
        ),
        *copies_line(scenario),
        f"regenerate       {format_time(result['regen_time_s'])}  ({regen_detail})",
        f"case             {result['regen_case']}",
        *(
            [f"architecture     {result['kernel_tables']['timed_as']}"]
            if result["regen_model"] == "engine" and result["kernel_tables"]["timed_as"]
            else []
        ),
        f"ratio            {_ratio(result['regen_to_fetch_ratio'])}  (regenerate / fetch)",
        _break_even_line(result),
        *(split_lines(split_result, chosen) if split_result is not None else []),
        "",
        "assumptions used:",
    ]
    width = max(len(rec.key) for rec in used)
    lines += [f"  {rec.key:<{width}}  {rec.display:<18} [{rec.provenance}]  {rec.basis}" for rec in used]
    emit(args.json, payload, lines)
    return 0
