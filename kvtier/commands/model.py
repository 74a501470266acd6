"""``kvtier model SPEC``: the derived quantities of a model (a preset name or a config.json path)."""

from __future__ import annotations

import argparse
from typing import Any

from kvtier.commands.output import emit
from kvtier.errors import KvtierError
from kvtier.formulas import capacity, costs
from kvtier.inputs.models import ModelSpec, dtype_bytes, load_model, resolve_weight_dtype, weight_dtype_bytes
from kvtier.units import AUTO_DTYPE, WEIGHT_DTYPE_BYTES, format_bytes


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register ``model SPEC [--kv-dtype D] [--weight-dtype D] [--json]`` on ``subparsers``."""
    p = subparsers.add_parser("model", help="derived quantities of a model (preset name or config.json path)")
    p.add_argument("spec", help="preset name or path to a Hugging Face config.json")
    p.add_argument("--kv-dtype", default="bf16", help="KV-cache dtype: bf16, fp16, fp32, fp8 (default bf16)")
    p.add_argument(
        "--weight-dtype",
        default=AUTO_DTYPE,
        help="weight dtype: auto (default: the published one, from the config's quantization_config, else its"
        " torch_dtype, else bf16) or one of " + ", ".join(WEIGHT_DTYPE_BYTES),
    )
    p.add_argument("--json", action="store_true", help="machine-readable output, SI base units")
    p.set_defaults(func=run)
    return p


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


def model_summary(model: ModelSpec, kv_dtype: str, weight_dtype: str = AUTO_DTYPE) -> dict[str, Any]:
    """The derived quantities of ``model`` as a JSON-ready dict (SI base units).

    ``weight_dtype`` ``auto`` counts the weights in the model's published element type
    (:func:`kvtier.inputs.models.resolve_weight_dtype`); ``weight_dtype_source`` says where the
    type came from (the config's field, or ``--weight-dtype``).

    Under MLA the attention geometry is MLA's own (``kv_lora_rank``, ``q_lora_rank``,
    ``qk_rope_head_dim``, ``qk_nope_head_dim``, ``v_head_dim``); ``kv_heads`` and
    ``head_dim`` are left out, since hidden size over heads describes no tensor there.
    """
    total, active = model.param_counts()
    kv = model.kv_bytes_per_token(kv_dtype)
    dtype = resolve_weight_dtype(model, weight_dtype, "--weight-dtype")
    if weight_dtype != AUTO_DTYPE:
        source = "--weight-dtype"
    elif model.weight_dtype_provenance == "published-spec":
        source = f"published: {model.weight_dtype_basis}"
    else:
        source = model.weight_dtype_basis
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
        "weight_dtype": dtype,
        "weight_dtype_source": source,
        "weight_bytes": float(capacity.weight_bytes(total, weight_dtype_bytes(dtype, "--weight-dtype"))),
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


def run(args: argparse.Namespace) -> int:
    if not str(args.spec).strip():  # "" would be read as the directory here, and its config.json named instead
        raise KvtierError("model: name a preset or a config.json (or the directory holding one), got ''")
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
        f" = {format_bytes(s['weight_bytes'])} ({s['weight_dtype']}; {s['weight_dtype_source']})",
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
    emit(args.json, s, lines)
    return 0
