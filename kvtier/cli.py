"""The ``kvtier`` command line: quick answers, the book build, and diffs of results.

User errors print one line, ``kvtier: error: ...``, and exit with status 2.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sys
import threading
from collections.abc import Sequence
from typing import Any

from kvtier import __version__, capacity, cost_cli, costs, diff, hardware, measure, roofline, workload_cli
from kvtier.assumptions import Assumption, load_assumptions, parse_set_options
from kvtier.errors import KvtierError
from kvtier.models import ModelSpec, dtype_bytes, load_model
from kvtier.scenario import Scenario
from kvtier.units import format_bytes, format_quantity, format_time


class _Parser(argparse.ArgumentParser):
    """argparse, but usage errors are one line and exit 2 like every other user error."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise KvtierError(f"{self.prog}: {message}")


def _record_json(rec: Assumption) -> dict[str, Any]:
    return {
        "value": rec.value,
        "unit": rec.unit,
        "text": rec.text,
        "provenance": rec.provenance,
        "basis": rec.basis,
        "source": rec.source,
    }


def _finite(value: Any) -> Any:
    """``value`` with every non-finite float replaced by None, so that the JSON is valid."""
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _emit(as_json: bool, payload: dict[str, Any], lines: list[str]) -> None:
    if as_json:
        print(json.dumps(_finite(payload), indent=2, sort_keys=True, allow_nan=False))
    else:
        print("\n".join(lines))


# ---------------------------------------------------------------------------
# kvtier model
# ---------------------------------------------------------------------------


def _attention_geometry(model: ModelSpec) -> dict[str, int]:
    """The widths that shape ``model``'s attention (element counts): MLA's own under MLA, else heads."""
    if model.attention == "MLA":
        return {
            "kv_lora_rank": model.kv_lora_rank,
            "q_lora_rank": model.q_lora_rank,
            "qk_rope_head_dim": model.qk_rope_head_dim,
            "qk_nope_head_dim": model.qk_nope_head_dim,
            "v_head_dim": model.v_head_dim,
        }
    return {"kv_heads": model.n_kv_heads, "head_dim": model.head_dim}


def model_summary(model: ModelSpec, kv_dtype: str, weight_dtype: str) -> dict[str, Any]:
    """The derived quantities of ``model`` as a JSON-ready dict (SI base units).

    Under MLA the attention geometry is MLA's own (``kv_lora_rank``, ``q_lora_rank``,
    ``qk_rope_head_dim``, ``qk_nope_head_dim``, ``v_head_dim``); ``kv_heads`` and
    ``head_dim`` are left out, since hidden size over heads describes no tensor there.
    """
    total, active = model.param_counts()
    kv = model.kv_bytes_per_token(kv_dtype)
    out: dict[str, Any] = {
        "name": model.name,
        "source": model.source,
        "model_type": model.model_type,
        "attention": model.attention,
        "layers": model.n_layers,
        "hidden_size": model.hidden_size,
        "attention_heads": model.n_heads,
        **_attention_geometry(model),
        "intermediate_size": model.intermediate_size,
        "vocab_size": model.vocab_size,
        "max_position_embeddings": model.max_positions or None,
        "sliding_window": model.sliding_window or None,
        "tied_embeddings": model.tie_embeddings,
        "kv_dtype": kv_dtype,
        "kv_bytes_per_token": kv,
        "total_params": total,
        "active_params": active,
        "weight_dtype": weight_dtype,
        "weight_bytes": float(capacity.weight_bytes(total, dtype_bytes(weight_dtype, "--weight-dtype"))),
        "param_flops_per_token": float(costs.forward_flops(1, active)),
        "attention_flops_per_token_per_position": model.attention_flops_per_position(),
    }
    if model.is_moe:
        out.update(
            routed_experts=model.n_routed_experts,
            shared_experts=model.n_shared_experts,
            experts_per_token=model.experts_per_token,
            moe_layers=model.n_moe_layers,
        )
    return out


def cmd_model(args: argparse.Namespace) -> int:
    model = load_model(args.spec)
    dtype_bytes(args.kv_dtype, "--kv-dtype")
    s = model_summary(model, args.kv_dtype, args.weight_dtype)
    lines = [
        f"model               {s['name']}  ({s['model_type']}, {s['attention']})",
        f"config              {s['source']}",
        f"layers              {s['layers']}",
        f"hidden size         {s['hidden_size']}",
        (
            # under MLA the cache holds a latent and a rope key per layer: hidden/heads means nothing there
            f"heads (q)           {s['attention_heads']}; MLA caches a latent of {s['kv_lora_rank']}"
            f" + a rope key of {s['qk_rope_head_dim']} per layer (q/k heads {s['qk_nope_head_dim']}"
            f" + {s['qk_rope_head_dim']}, v heads {s['v_head_dim']}"
            + (f", q latent {s['q_lora_rank']})" if s["q_lora_rank"] else ")")
            if model.attention == "MLA"
            else f"heads (q / kv)      {s['attention_heads']} / {s['kv_heads']}, head_dim {s['head_dim']}"
        ),
        "context window      "
        + (f"{s['max_position_embeddings']:,} positions" if s["max_position_embeddings"] else "not stated")
        + (f", sliding window {s['sliding_window']:,}" if s["sliding_window"] else ""),
        f"KV per token        {s['kv_bytes_per_token']:,} B = {format_bytes(s['kv_bytes_per_token'])}"
        f" ({args.kv_dtype})",
        f"parameters          {s['total_params']:,} total, {s['active_params']:,} active",
        f"weights             {format_bytes(s['weight_bytes'], binary=False)}"
        f" = {format_bytes(s['weight_bytes'])} ({args.weight_dtype})",
        f"FLOPs per token     {s['param_flops_per_token']:.4g} (2 x active parameters)"
        f" + {s['attention_flops_per_token_per_position']:,} per cached position (attention term)",
    ]
    if model.is_moe:
        lines.append(
            f"MoE                 {s['routed_experts']} routed + {s['shared_experts']} shared experts,"
            f" {s['experts_per_token']} per token, {s['moe_layers']} MoE layers"
        )
    if model.attention == "MLA":
        lines.append(f"MLA                 kv_lora_rank {s['kv_lora_rank']} + rope {s['qk_rope_head_dim']}")
    _emit(args.json, s, lines)
    return 0


# ---------------------------------------------------------------------------
# kvtier compare
# ---------------------------------------------------------------------------


def _compare_overrides(args: argparse.Namespace, base: Scenario) -> dict[str, str]:
    """Map the compare options onto the assumption keys they replace."""
    sets = parse_set_options(args.set)
    bw_label = base.assumptions.value("illustrative.bandwidth")
    mfu_label = base.assumptions.value("illustrative.mfu")
    for option, key in (
        (args.model, "model"),
        (args.bandwidth, f"bandwidth.{bw_label}"),
        (args.mfu, f"mfu.{mfu_label}"),
        (args.peak_flops, "peak_flops"),
        (args.tokens, "block_tokens"),
        (args.kv_dtype, "kv_dtype"),
        (args.latency, "fetch_latency"),
        (args.layout, "fetch_layout"),
        (args.position, "interior.position"),
        (args.anchor_every, "interior.anchor_every"),
        (args.regen_model, "regen.model"),
        (args.batch_tokens, "regen.batch_tokens"),
    ):
        if option is not None:
            sets[key] = option
    return sets


def _scenario_from_args(args: argparse.Namespace) -> Scenario:
    """The assumption set of a quick-answer command: file, accelerator preset, then options."""
    base = load_assumptions(args.assumptions)
    if getattr(args, "accelerator", None):
        acc = hardware.accelerator(args.accelerator)
        records = {"regen.mem_bandwidth": acc.mem_bandwidth_record}
        if acc.peak_flop_per_s is not None:
            records["peak_flops"] = acc.peak_record
        elif args.peak_flops is None:
            acc.require_peak()  # raises: this preset publishes no peak, --peak-flops is required
        base = base.with_records(records)
    sets = _compare_overrides(args, Scenario(base))
    return Scenario(base.with_values(sets, source="command line")) if sets else Scenario(base)


def regen_point(scenario: Scenario, position: float | None, upstream: str) -> dict[str, Any]:
    """Fetch vs regenerate for one block at the illustrative bandwidth and MFU (SI base units).

    With no position and the MFU model this is the source chapter's tail block (parameter
    FLOPs only); otherwise the block at ``position`` with the attention term, under
    ``regen.model``.
    """
    point = scenario.illustrative
    model = str(scenario.assumptions.value("regen.model"))
    out: dict[str, Any] = {
        "bandwidth_bytes_per_s": point["bandwidth_bytes_per_s"],
        "mfu": point["mfu"],
        "fetch_time_s": point["fetch_s"],
        "fetch_transfers": scenario.fetch_transfers,
        "regen_model": model,
    }
    if position is None and model == "mfu":
        regen_s = point["regen_s"]
        flops = scenario.block_flops
        out.update(regen_case="tail block, parameter FLOPs only (attention term excluded)", position_tokens=None)
    else:
        p = 0.0 if position is None else position
        regen_s = float(scenario.regen_time_s(p, upstream, point["mfu"]))
        flops = float(scenario.interior_flops(p, upstream))
        out.update(
            regen_case=f"block at position {p:,.0f}, upstream {upstream}, attention term included",
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
        break_even_bandwidth_bytes_per_s=float(
            roofline.break_even_bandwidth(scenario.block_bytes, regen_s, scenario.block_latency_s)
        ),
    )
    return out


def cmd_compare(args: argparse.Namespace) -> int:
    if args.upstream is not None and args.position is None:
        raise KvtierError("--upstream needs --position (the block's position in tokens)")
    scenario = _scenario_from_args(args)
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
    if position is not None:
        used_keys += ["interior.position", "interior.anchor_every"]
    if result["regen_model"] == "roofline":
        used_keys += ["regen.batch_tokens", "regen.mem_bandwidth", "regen.mem_efficiency", "weight_dtype"]
    used = scenario.used(*used_keys)
    payload = {
        "model": scenario.model.name,
        "kv_bytes_per_token": scenario.kv_bytes_per_token,
        "block_tokens": scenario.block_tokens,
        "block_bytes": scenario.block_bytes,
        "params": scenario.params,
        **result,
        "assumptions": {rec.key: _record_json(rec) for rec in used},
    }
    regen_detail = (
        f"{result['regen_flops']:.4g} FLOP at {format_quantity(point['mfu'], 'fraction')} MFU"
        f" of {format_quantity(scenario.v('peak_flops'), 'flop_rate')}"
    )
    if result["regen_model"] == "roofline":
        regen_detail += (
            f"; roofline: {format_bytes(result['bytes_read'])} read at"
            f" {format_quantity(scenario.v('regen.mem_bandwidth'), 'bandwidth')}"
            f" x {format_quantity(scenario.v('regen.mem_efficiency'), 'fraction')},"
            f" batch of {result['batch_tokens']} tokens: {result['bound']}-bound"
        )
    lines = [
        f"block            {scenario.block_tokens} tokens × {format_bytes(scenario.kv_bytes_per_token)}/token"
        f" = {format_bytes(scenario.block_bytes)} ({scenario.block_bytes:,.0f} B)",
        f"fetch            {format_time(point['fetch_s'])}"
        f"  at {format_quantity(point['bandwidth_bytes_per_s'], 'bandwidth')}"
        + (
            f", {scenario.fetch_transfers} transfers × {format_time(scenario.v('fetch_latency'))}"
            if scenario.fetch_transfers > 1
            else ""
        ),
        f"regenerate       {format_time(result['regen_time_s'])}  ({regen_detail})",
        f"case             {result['regen_case']}",
        f"ratio            {result['regen_to_fetch_ratio']:.2f}×  (regenerate / fetch)",
        f"break-even       {format_quantity(result['break_even_bandwidth_bytes_per_s'], 'bandwidth')}"
        "  (links slower than this make regenerating faster)",
        "",
        "assumptions used:",
    ]
    width = max(len(rec.key) for rec in used)
    lines += [f"  {rec.key:<{width}}  {rec.display:<18} [{rec.provenance}]  {rec.basis}" for rec in used]
    _emit(args.json, payload, lines)
    return 0


# ---------------------------------------------------------------------------
# kvtier tiers
# ---------------------------------------------------------------------------

TIER_JSON = {
    "bandwidth_GBps": ("bandwidth_bytes_per_s", 1e9),
    "latency_us": ("latency_s", 1e-6),
    "fetch_us": ("fetch_time_s", 1e-6),
    "break_even_tail_GBps": ("break_even_tail_bytes_per_s", 1e9),
}
"""Columns of the tiers table of record and their SI names and scales for --json."""


def cmd_tiers(args: argparse.Namespace) -> int:
    # Imported here for start-up time only (no cycle: the pages sit below the cli): the page
    # modules import pandas and matplotlib, which `kvtier compare` and `kvtier model` never need.
    from kvtier.pages import tiers

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
    _emit(args.json, payload, lines)
    return 0


# ---------------------------------------------------------------------------
# kvtier build
# ---------------------------------------------------------------------------


def cmd_build(args: argparse.Namespace) -> int:
    from pathlib import Path

    # Imported here for start-up time only (no cycle): the build imports nbformat, pandas and matplotlib.
    from kvtier import pipeline

    assumptions = load_assumptions(args.assumptions, parse_set_options(args.set))
    if args.jobs is not None and args.jobs < 1:
        raise KvtierError(f"--jobs must be at least 1, got {args.jobs}")
    if args.out is not None and not args.out.strip():
        raise KvtierError("--out: empty path; leave --out out for the default book, or name a directory")
    out = Path(args.out) if args.out is not None else None
    log = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731
    pipeline.build(assumptions, out=out, jobs=args.jobs, log=log, force=args.force)
    return 0


# ---------------------------------------------------------------------------
# entry point
# ---------------------------------------------------------------------------


def _add_assumption_options(p: argparse.ArgumentParser) -> None:
    """``--assumptions FILE`` and repeatable ``--set KEY=VALUE``, shared by every command that reads a set."""
    p.add_argument("--assumptions", metavar="FILE", help="YAML assumption set layered on the seed set")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="override one assumption (repeatable)")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``kvtier`` command."""
    parser = _Parser(prog="kvtier", description="KV-cache tiering economics: fetch vs regenerate, capacity.")
    parser.add_argument("--version", action="version", version=f"kvtier {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p = sub.add_parser("model", help="derived quantities of a model (preset name or config.json path)")
    p.add_argument("spec", help="preset name or path to a Hugging Face config.json")
    p.add_argument("--kv-dtype", default="bf16", help="KV-cache dtype: bf16, fp16, fp32, fp8 (default bf16)")
    p.add_argument("--weight-dtype", default="bf16", help="weight dtype (default bf16)")
    p.add_argument("--json", action="store_true", help="machine-readable output, SI base units")
    p.set_defaults(func=cmd_model)

    p = sub.add_parser("compare", help="fetch vs regenerate for one point (default: the illustrative point)")
    _add_assumption_options(p)
    p.add_argument("--model", metavar="SPEC", help="preset name or config.json path")
    p.add_argument("--bandwidth", help="link bandwidth, e.g. 64GB/s")
    p.add_argument("--mfu", help="model FLOPs utilization, e.g. 25%% or 0.25")
    p.add_argument("--peak-flops", help="accelerator dense peak, e.g. 500TFLOP/s")
    p.add_argument("--tokens", help="tokens per block, e.g. 16")
    p.add_argument("--kv-dtype", help="KV-cache dtype: bf16, fp16, fp32, fp8")
    p.add_argument("--latency", help="fixed per-transfer latency, e.g. 2us")
    p.add_argument(
        "--layout",
        choices=("contiguous", "per-layer"),
        help="one transfer per block, or one per layer chunk as a paged cache (each pays the latency)",
    )
    p.add_argument("--position", metavar="P", help="regenerate the block starting at token P (attention included)")
    p.add_argument("--upstream", choices=("resident", "evicted"), help="is the KV before the block still cached?")
    p.add_argument("--anchor-every", metavar="N", help="resident anchors every N tokens for --upstream evicted")
    p.add_argument("--regen-model", choices=("mfu", "roofline"), help="compute-only (the chapter) or roofline")
    p.add_argument("--accelerator", metavar="NAME", help="accelerator preset for peak and memory bandwidth")
    p.add_argument("--batch-tokens", metavar="N", help="tokens sharing the regenerating forward pass")
    p.add_argument("--json", action="store_true", help="machine-readable output, SI base units")
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser("tiers", help="the tier ladder: every link preset against regeneration")
    _add_assumption_options(p)
    p.add_argument("--json", action="store_true", help="machine-readable output, SI base units")
    p.set_defaults(func=cmd_tiers)

    p = sub.add_parser("build", help="execute the notebooks, write the tables of record, build the HTML book")
    _add_assumption_options(p)
    p.add_argument(
        "--out", metavar="DIR", help="write DIR/{html,tables,figures,notebooks} (default: _build and book/tables)"
    )
    p.add_argument("--jobs", type=int, metavar="N", help="notebooks executed in parallel (default: CPU cores)")
    p.add_argument("--force", action="store_true", help="execute every notebook and rebuild everything")
    p.set_defaults(func=cmd_build)

    diff.add_parser(sub)
    measure.add_parser(sub)
    workload_cli.add_parser(sub)
    cost_cli.add_parser(sub)
    return parser


class _Terminated(BaseException):
    """SIGTERM, raised in the main thread so that a build cleans up as it does on Ctrl-C."""


def _on_sigterm(signum: int, frame: object) -> None:
    raise _Terminated


def _stopped(word: str, status: int, exc: BaseException) -> int:
    """One line for Ctrl-C or SIGTERM, saying what was left: a build notes it on the exception
    (its kernels stopped, what it staged removed, or the new book already published); a
    command stopped before writing anything changed nothing.
    """
    what = "; ".join(getattr(exc, "__notes__", [])) or "nothing was changed"
    print(f"kvtier: {word}; {what}", file=sys.stderr, flush=True)
    if threading.active_count() > 1:
        os._exit(status)
    return status


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the exit status (0 ok, 1 a diff found changes, 2 user error, 130/143 stopped)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser()
    if not argv:
        parser.print_usage(sys.stderr)
        print("kvtier: error: name a command (kvtier --help lists them)", file=sys.stderr)
        return 2
    # Ctrl-C raises KeyboardInterrupt even where the caller started us with SIGINT ignored (a background job)
    previous = signal.signal(signal.SIGTERM, _on_sigterm), signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        args = parser.parse_args(argv)
        return int(args.func(args))
    except KvtierError as exc:
        print(f"kvtier: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        return _stopped("interrupted", 130, exc)
    except _Terminated as exc:
        return _stopped("terminated", 143, exc)
    except BrokenPipeError:  # output piped into `head` and closed early
        sys.stderr.close()
        return 0
    finally:
        signal.signal(signal.SIGTERM, previous[0])
        signal.signal(signal.SIGINT, previous[1])


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
