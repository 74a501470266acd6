"""The ``kvtier`` command line: quick answers, the book build, and diffs of results.

User errors print one line, ``kvtier: error: ...``, and exit with status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from kvtier import diff
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


def _emit(as_json: bool, payload: dict[str, Any], lines: list[str]) -> None:
    if as_json:
        print(json.dumps(payload, indent=2, sort_keys=True))
    else:
        print("\n".join(lines))


# ---------------------------------------------------------------------------
# kvtier model
# ---------------------------------------------------------------------------


def model_summary(model: ModelSpec, kv_dtype: str, weight_dtype: str) -> dict[str, Any]:
    """The derived quantities of ``model`` as a JSON-ready dict (SI base units)."""
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
        "kv_heads": model.n_kv_heads,
        "head_dim": model.head_dim,
        "intermediate_size": model.intermediate_size,
        "vocab_size": model.vocab_size,
        "tied_embeddings": model.tie_embeddings,
        "kv_dtype": kv_dtype,
        "kv_bytes_per_token": kv,
        "total_params": total,
        "active_params": active,
        "weight_dtype": weight_dtype,
        "weight_bytes": total * dtype_bytes(weight_dtype, "--weight-dtype"),
        "param_flops_per_token": 2 * active,
        "attention_flops_per_token_per_position": model.attention_flops_per_position(),
    }
    if model.attention == "MLA":
        out.update(kv_lora_rank=model.kv_lora_rank, qk_rope_head_dim=model.qk_rope_head_dim)
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
        f"heads (q / kv)      {s['attention_heads']} / {s['kv_heads']}, head_dim {s['head_dim']}",
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
    ):
        if option is not None:
            sets[key] = option
    return sets


def cmd_compare(args: argparse.Namespace) -> int:
    base = Scenario(load_assumptions(args.assumptions))
    sets = _compare_overrides(args, base)
    scenario = Scenario(base.assumptions.with_values(sets, source="command line")) if sets else base
    point = scenario.illustrative
    used_keys = [
        "model",
        "kv_dtype",
        "block_tokens",
        f"bandwidth.{point['bandwidth_label']}",
        "fetch_latency",
        "param_count",
        "flops_per_param_token",
        "peak_flops",
        f"mfu.{point['mfu_label']}",
    ]
    used = scenario.used(*used_keys)
    payload = {
        "model": scenario.model.name,
        "kv_bytes_per_token": scenario.kv_bytes_per_token,
        "block_tokens": scenario.block_tokens,
        "block_bytes": scenario.block_bytes,
        "params": scenario.params,
        "regen_flops": scenario.block_flops,
        "bandwidth_bytes_per_s": point["bandwidth_bytes_per_s"],
        "mfu": point["mfu"],
        "fetch_time_s": point["fetch_s"],
        "regen_time_s": point["regen_s"],
        "regen_to_fetch_ratio": point["ratio"],
        "regen_case": "tail block, parameter FLOPs only (attention term excluded)",
        "assumptions": {rec.key: _record_json(rec) for rec in used},
    }
    lines = [
        f"block            {scenario.block_tokens} tokens x {format_bytes(scenario.kv_bytes_per_token)}/token"
        f" = {format_bytes(scenario.block_bytes)} ({scenario.block_bytes:,.0f} B)",
        f"fetch            {format_time(point['fetch_s'])}"
        f"  at {format_quantity(point['bandwidth_bytes_per_s'], 'bandwidth')}",
        f"regenerate       {format_time(point['regen_s'])}"
        f"  ({scenario.block_flops:.4g} FLOP at {format_quantity(point['mfu'], 'fraction')} MFU"
        f" of {format_quantity(scenario.v('peak_flops'), 'flop_rate')}; tail block)",
        f"ratio            {point['ratio']:.2f}x  (regenerate / fetch)",
        "",
        "assumptions used:",
    ]
    width = max(len(rec.key) for rec in used)
    lines += [f"  {rec.key:<{width}}  {rec.display:<18} [{rec.provenance}]  {rec.basis}" for rec in used]
    _emit(args.json, payload, lines)
    return 0


# ---------------------------------------------------------------------------
# kvtier build
# ---------------------------------------------------------------------------


def cmd_build(args: argparse.Namespace) -> int:
    from pathlib import Path

    from kvtier import pipeline

    assumptions = load_assumptions(args.assumptions, parse_set_options(args.set))
    if args.jobs is not None and args.jobs < 1:
        raise KvtierError(f"--jobs must be at least 1, got {args.jobs}")
    out = Path(args.out) if args.out else None
    root = pipeline.project_root()
    if out is not None and out.resolve() == (root / "_build").resolve():
        raise KvtierError(f"--out {args.out}: that is the default book's directory; choose another")
    pipeline.build(assumptions, out=out, jobs=args.jobs, log=lambda line: print(line, file=sys.stderr, flush=True))
    return 0


# ---------------------------------------------------------------------------
# entry point
# ---------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``kvtier`` command."""
    parser = _Parser(prog="kvtier", description="KV-cache tiering economics: fetch vs regenerate, capacity.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p = sub.add_parser("model", help="derived quantities of a model (preset name or config.json path)")
    p.add_argument("spec", help="preset name or path to a Hugging Face config.json")
    p.add_argument("--kv-dtype", default="bf16", help="KV-cache dtype: bf16, fp16, fp32, fp8 (default bf16)")
    p.add_argument("--weight-dtype", default="bf16", help="weight dtype (default bf16)")
    p.add_argument("--json", action="store_true", help="machine-readable output, SI base units")
    p.set_defaults(func=cmd_model)

    p = sub.add_parser("compare", help="fetch vs regenerate for one point (default: the illustrative point)")
    p.add_argument("--assumptions", metavar="FILE", help="YAML assumption set layered on the seed set")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="override one assumption (repeatable)")
    p.add_argument("--model", metavar="SPEC", help="preset name or config.json path")
    p.add_argument("--bandwidth", help="link bandwidth, e.g. 64GB/s")
    p.add_argument("--mfu", help="model FLOPs utilization, e.g. 25%% or 0.25")
    p.add_argument("--peak-flops", help="accelerator dense peak, e.g. 500TFLOP/s")
    p.add_argument("--tokens", help="tokens per block, e.g. 16")
    p.add_argument("--kv-dtype", help="KV-cache dtype: bf16, fp16, fp32, fp8")
    p.add_argument("--latency", help="fixed per-transfer latency, e.g. 2us")
    p.add_argument("--json", action="store_true", help="machine-readable output, SI base units")
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser("build", help="execute the notebooks, write the tables of record, build the HTML book")
    p.add_argument("--assumptions", metavar="FILE", help="YAML assumption set layered on the seed set")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="override one assumption (repeatable)")
    p.add_argument(
        "--out", metavar="DIR", help="write DIR/{html,tables,figures,notebooks} (default: _build and book/tables)"
    )
    p.add_argument("--jobs", type=int, metavar="N", help="notebooks executed in parallel (default: CPU cores)")
    p.set_defaults(func=cmd_build)

    diff.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the exit status (0 ok, 2 user error)."""
    try:
        args = build_parser().parse_args(argv)
        return int(args.func(args))
    except KvtierError as exc:
        print(f"kvtier: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # output piped into `head` and closed early
        sys.stderr.close()
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
