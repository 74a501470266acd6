"""The in-browser calculator's data: the build's assumption set and presets, as a script the book ships.

The landing page and the tier page carry a calculator (``book/_static/kvtier-calculator.js``, its
formulas in ``book/_static/kvtier-formulas.js``) that answers the headline decision for the values a
reader types, offline and from ``file://``.  It reads its starting values and its presets from a
global, ``window.KVTIER_PRESETS``, which :func:`presets_js` writes for the build's own assumption
set: the model presets (the counts the arithmetic reads, from :mod:`kvtier.inputs.models`), the
accelerator presets (peak, memory bandwidth and memory per accelerator) and the link presets
(:mod:`kvtier.inputs.hardware`), the serving engines (:mod:`kvtier.inputs.engines`) and every
assumption key the calculator reads, each with its value in SI base units, its text, the seed's text
and its bounds.  ``kvtier build`` writes it over the seed copy committed at
``book/_static/kvtier-presets.js`` (:data:`FILE`), so the book built from any set
starts from that set; a plain ``jupyter-book build`` ships the seed's.

Deterministic: the same set gives the same bytes (keys sorted, no time, no path but the model's as
the set names it).
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np

from kvtier import analysis
from kvtier.data import ENGINE_PRESETS
from kvtier.errors import KvtierError
from kvtier.formulas import tiering
from kvtier.inputs import engines, hardware, kernels
from kvtier.inputs.assumptions import AssumptionSet, seed
from kvtier.inputs.keys import (
    BANDWIDTH_LABELS,
    COLLECTIVE_RANGES,
    MFU_LABELS,
    PARALLEL_KEYS,
    SCHEMA,
    TIER_LATENCY_KEYS,
    UNCERTAIN_POINTS,
    tier_latency_key,
)
from kvtier.inputs.models import PRESETS, ModelSpec, load_model
from kvtier.report.named import MEDIUM_WORDS
from kvtier.scenario import FORWARD_KEYS, TRANSFER_KEYS, Scenario
from kvtier.units import DTYPE_BYTES, WEIGHT_DTYPE_BYTES, parse_quantity

FILE = "kvtier-presets.js"
"""The script's name under ``_static/`` (``book/_static/`` in the sources, ``html/_static/`` in a build)."""

GLOBAL = "KVTIER_PRESETS"
"""The global the script assigns (``window.KVTIER_PRESETS``)."""

FORWARD_TERMS: tuple[str, ...] = tuple(
    key for key in FORWARD_KEYS if key not in ("regen.mem_bandwidth", "regen.mem_efficiency")
)
"""The forward-pass model's terms beyond the plain roofline (:func:`kvtier.formulas.roofline.forward_pass_time_s`),
read where the schema has them; a set without them is the plain roofline, which the calculator assumes then."""

KEYS: tuple[str, ...] = (
    "model",
    "kv_dtype",
    "weight_dtype",
    "param_count",
    "block_tokens",
    "flops_per_param_token",
    "peak_flops",
    "fetch_latency",
    "fetch_layout",
    "engine",
    *(f"bandwidth.{b}" for b in BANDWIDTH_LABELS),
    *(f"mfu.{m}" for m in MFU_LABELS),
    "illustrative.bandwidth",
    "illustrative.mfu",
    "regen.model",
    "regen.system",
    "regen.engine",
    "regen.mem_bandwidth",
    "regen.mem_efficiency",
    *PARALLEL_KEYS,
    "parallel.activation_dtype",
    "parallel.hbm_capacity",
    "context.long",
    "interior.position",
    *(f"{key}{end}" for key in COLLECTIVE_RANGES for end in ("", "_low", "_high")),
    *TIER_LATENCY_KEYS,
    *(f"uncertainty.{name}_{end}" for name in UNCERTAIN_POINTS for end in ("low", "high")),
    *(key for key in FORWARD_TERMS if key in SCHEMA),
    *(key for key in TRANSFER_KEYS if key in SCHEMA),
)
"""The assumption keys the calculator reads or must keep consistent in the command it writes (the
brackets and the uncertainty ranges that ``kvtier build`` checks against the values typed)."""


def _finite(x: float) -> float:
    if not math.isfinite(x):
        raise ValueError(f"a calculator preset value is not finite: {x!r}")
    return x


def model_record(m: ModelSpec) -> dict[str, Any]:
    """What the calculator reads of a model: the counts :class:`~kvtier.scenario.Scenario` reads (dimensionless).

    ``kv_elements_per_token`` times the KV dtype's bytes is
    :meth:`~kvtier.inputs.models.ModelSpec.kv_bytes_per_token`; the parameter counts are
    :meth:`~kvtier.inputs.models.ModelSpec.param_counts` and
    :meth:`~kvtier.inputs.models.ModelSpec.routed_param_counts`; ``weight_dtype`` is the published
    element type ``weight_dtype: auto`` resolves to (:attr:`~kvtier.inputs.models.ModelSpec.weight_dtype`,
    empty when kvtier cannot read it).
    """
    total, active = m.param_counts()
    routed, routed_active = m.routed_param_counts()
    return {
        "name": m.name,
        "attention": m.attention,
        "mla": m.attention == "MLA",
        "layers": m.n_layers,
        "hidden_size": m.hidden_size,
        "heads": m.n_heads,
        "kv_heads": m.n_kv_heads,
        "kv_elements_per_token": m.kv_elements_per_token(),
        "total_params": total,
        "active_params": active,
        "routed_params": routed,
        "routed_active_params": routed_active,
        "routed_experts": m.n_routed_experts,
        "experts_per_token": m.experts_per_token,
        "moe_layers": m.n_moe_layers,
        "attention_flops_per_position": m.attention_flops_per_position(),
        "max_positions": m.max_positions,
        "weight_dtype": m.weight_dtype,
    }


def _key_record(a: AssumptionSet, base: AssumptionSet, key: str) -> dict[str, Any]:
    """One key: its value (SI; text for a choice), its text, the seed's value and text, its bounds (SI)."""
    rec, spec = a[key], SCHEMA[key]
    out: dict[str, Any] = {
        "value": rec.value,
        "text": rec.text if rec.value is not None else None,
        "seed_text": base[key].text if base[key].value is not None else None,
        "seed_value": base[key].value,
        "kind": spec.kind,
        "integer": spec.integer,
        "optional": spec.optional,
    }
    if spec.kind in ("choice", "text"):
        out["choices"] = list(spec.choices)
    else:
        bounds = spec.bounds
        out["low"] = _finite(parse_quantity(bounds.low, bounds.kind))
        out["high"] = _finite(parse_quantity(bounds.high, bounds.kind))
        for name in ("value", "seed_value"):
            if out[name] is not None:
                out[name] = _finite(float(out[name]))
    return out


KERNEL_ENGINES_SHOWN: tuple[str, ...] = ("vllm", "sglang", "trtllm")
"""The engines whose measured kernels the calculator offers for each accelerator with tables."""


def engine_kernels(s: Scenario) -> list[dict[str, Any]]:
    """The engine model's regeneration curves for the build's model and placement, one per accelerator and engine.

    For each accelerator preset with kernel tables (:data:`kvtier.inputs.kernels.ACCELERATOR_SYSTEMS`) and each
    of :data:`KERNEL_ENGINES_SHOWN` whose tables time the build's model, :meth:`kvtier.scenario.Scenario.engine_curves`
    as :class:`~kvtier.formulas.cache.regen.RegenCosts` holds them, at ``tokens`` (tokens) up to the grid: a lone
    pass's operations other than attention (``linear``, s) and its attention (``attention``, s), and a prefix's
    share of a ``regen.step_tokens`` step (``batch``, s); and the build's block timed exactly at position 0
    (``block``: its ``tokens``, alone, ``lone``, the estimator's pass, and inside a batch, ``batch``, s; ``None``
    past the grid).  The calculator interpolates between them
    (:meth:`kvtier.formulas.cache.regen.RegenCosts.engine_curve`): a block alone is ``linear + attention`` with the
    build's block inserted exactly, and a prompt after a cached prefix (its split) is
    :meth:`~kvtier.formulas.cache.regen.RegenCosts.rest_wall_s` of the curves; for the model, placement and element
    types they were tabulated for (``for``), and refuses others.  A table set that
    cannot time the model (an element type or an architecture it lacks) is left out.
    """
    out = []
    block = s.block_tokens
    for accelerator, system in kernels.ACCELERATOR_SYSTEMS.items():
        for engine in KERNEL_ENGINES_SHOWN:
            sets = {"regen.model": "engine", "regen.system": system, "regen.engine": engine}
            sc = Scenario(s.assumptions.with_values(sets, source="the calculator's kernel presets"))
            try:
                c = sc.engine_curves()
                exact = {
                    "lone": float(sc.lone_regen_s(0, "resident", 1.0)),
                    "batch": float(sc.in_batch_regen_s(0, "resident", 1.0)),
                }
            except KvtierError:
                continue
            tokens = [float(x) for x in c["engine_tokens"]]
            t = sc.kernel_tables
            p = sc.placement
            out.append(
                {
                    "accelerator": accelerator,
                    "system": system,
                    "engine": engine,
                    "version": t.version,
                    "package": f"{kernels.PACKAGE} {t.package_version}",
                    "for": {
                        "model": str(s.assumptions.value("model")),
                        "tp": p.tp,
                        "pp": p.pp,
                        "ep": p.ep,
                        "kv_dtype": sc.kv_dtype,
                        "weight_dtype": sc.weight_dtype,
                        "step_tokens": int(sc.v("regen.step_tokens")),
                    },
                    "tokens": tokens,
                    "linear": [_finite(x) for x in c["engine_linear_s"]],
                    "attention": [_finite(x) for x in c["engine_attention_s"]],
                    "batch": [_finite(x) for x in c["engine_batch_s"]],
                    # the build's block exactly, as kvtier compare times it, where the curves reach it
                    "block": {"tokens": float(block), **exact} if block <= tokens[-1] else None,
                }
            )
    return out


def trace_tier(s: Scenario) -> dict[str, Any]:
    """The build's trace for the calculator's tier: its LRU capacity for the hit target, and what it holds and saves.

    The capacity in blocks of ``workload.block_tokens`` tokens does not depend on the model (the trace names blocks
    by hash), so the calculator sizes it for any model and KV dtype typed, as :func:`kvtier.analysis.lru_traffic`
    does: blocks x block tokens x KV bytes per token.  With it go what the calculator needs to price the tier as
    :func:`kvtier.analysis.lru_plan` does in each medium of :data:`kvtier.formulas.tiering.LRU_TIERS`, recomputation
    inside a batch: the requests' hit prefixes at that capacity (each distinct pair of hit blocks and hit tokens,
    ``hits``, with its requests), the two sums the analytic prefill of every prompt needs (``prompt_tokens``, the
    prompts' tokens, and ``prompt_attention``, the positions their tokens attend to, sum of ``T (T + 1) / 2``), the
    tokens the tier writes, the trace's length (s), its longest prompt (tokens), and the build's prices: the
    accelerator's (USD/s), each medium's holding (:func:`kvtier.formulas.tiering.hold_usd_per_byte_s`, USD/(B s))
    and the NVMe drive that :func:`kvtier.formulas.flash.flash_drives` counts.
    """
    target = s.v("decision.hit_target")
    prices = s.tier_prices()
    hold = tiering.hold_usd_per_byte_s(prices)
    # the capacity and the hits need no recomputation priced: under the engine model they are read with the MFU
    # model's costs, which never refuse a prompt past the kernel tables' grid
    sizing = (
        s
        if s.assumptions.value("regen.model") == "mfu"
        else Scenario(s.assumptions.with_values({"regen.model": "mfu"}, source="the calculator's tier size"))
    )
    traffic = analysis.lru_traffic(sizing, target)
    prompts, per_prompt = (np.asarray(x, dtype=float) for x in analysis.curve(sizing).input_tokens)
    return {
        "name": str(s.assumptions.value("workload.trace")),
        "block_tokens": int(s.v("workload.block_tokens")),
        "hit_target": target,
        "capacity_blocks": int(analysis.curve(sizing).capacity_for(target)),
        "duration_s": _finite(traffic.duration_s),
        "written_tokens": _finite(traffic.written_tokens),
        "hits": {
            "blocks": [float(x) for x in traffic.hit_blocks],
            "tokens": [float(x) for x in traffic.hit_tokens],
            "requests": [float(x) for x in traffic.weights],
        },
        "prompt_tokens": _finite(float(np.sum(prompts * per_prompt))),
        "prompt_attention": _finite(float(np.sum(prompts * (prompts + 1.0) / 2.0 * per_prompt))),
        "longest_prompt": float(np.max(prompts, initial=0.0)),
        "tiers": list(tiering.LRU_TIERS),
        "medium_words": {m: MEDIUM_WORDS[m] for m in tiering.MEDIA if m != "hbm"},
        "accelerator_usd_per_s": prices.accelerator_usd_per_s,
        "hold_usd_per_byte_s": {m: hold[m] for m in tiering.MEDIA if m != "hbm"},
        "nvme": {
            "drive_bytes": s.v("nvme.drive_capacity"),
            "write_bandwidth": s.v("nvme.write_bandwidth"),
            "endurance_dwpd": s.v("nvme.endurance_dwpd"),
            "endurance_period_s": s.v("nvme.endurance_period"),
        },
    }


def presets(assumptions: AssumptionSet) -> dict[str, Any]:
    """The calculator's data for ``assumptions`` (JSON-ready; SI base units).

    Raises
    ------
    KvtierError
        As :class:`~kvtier.scenario.Scenario` does for a set whose model or engine cannot be read.
    """
    s = Scenario(assumptions)
    models = {name: model_record(load_model(name)) for name in PRESETS}
    model_key = str(assumptions.value("model"))
    if model_key not in models:  # a user's config.json: shown under the name the set gives it
        models[model_key] = model_record(s.model)
    links = hardware.load_links()
    tiers = [
        {
            "name": name,
            "title": link.title,
            "bandwidth": _finite(link.bandwidth_bytes_per_s),
            "latency_key": tier_latency_key(name),
            "medium": tiering.medium(name),
        }
        for name, link in links.items()
        if tiering.medium(name) != "hbm"  # a block in HBM is not fetched (kvtier.deployment.Deployment)
    ]
    accelerators = {  # memory: bytes per accelerator (None where the preset gives none), as `compare --accelerator`
        name: {
            "title": acc.title,
            "peak_flops": acc.peak_flop_per_s,
            "mem_bandwidth": acc.mem_bandwidth_bytes_per_s,
            "memory": None if acc.memory_bytes is None else _finite(float(acc.memory_bytes)),
        }
        for name, acc in hardware.load_accelerators().items()
    }
    engine_presets = {
        name: {
            "description": e.description,
            "block_tokens": e.block_tokens,
            "transfers": e.transfers,
            "copy_method": e.copy_method,
            "layer_overlap": e.layer_overlap,
        }
        for name, e in engines.load_engines().items()
    }
    base = seed()
    kernel_list = engine_kernels(s)
    start = None  # the build's own engine model, where it is one of the list
    if assumptions.value("regen.model") == "engine":
        mine = (s.kernel_tables.system, s.kernel_engine)
        start = next((j for j, c in enumerate(kernel_list) if (c["system"], c["engine"]) == mine), None)
    return {
        "set_name": assumptions.name,
        "dtype_bytes": dict(DTYPE_BYTES),
        "weight_dtype_bytes": dict(WEIGHT_DTYPE_BYTES),
        "bandwidth_labels": list(BANDWIDTH_LABELS),
        "mfu_labels": list(MFU_LABELS),
        "uncertain_points": {name: list(points) for name, points in UNCERTAIN_POINTS.items()},
        "models": models,
        "model_presets": list(PRESETS),
        "accelerators": accelerators,
        "engines": engine_presets,
        "engine_presets": list(ENGINE_PRESETS),
        "tiers": tiers,
        "trace": trace_tier(s),
        "engine_kernels": kernel_list,
        "engine_kernels_start": start,
        "keys": {key: _key_record(assumptions, base, key) for key in KEYS},
    }


def presets_js(assumptions: AssumptionSet) -> str:
    """The script ``_static/kvtier-presets.js`` for ``assumptions``: one assignment of :data:`GLOBAL`."""
    data = json.dumps(presets(assumptions), sort_keys=True, indent=1, ensure_ascii=True, allow_nan=False)
    return (
        "// Written by `kvtier build` (kvtier/pipeline/calculator.py) from the build's assumption set:\n"
        "// the calculator's starting values and presets, in SI base units. Do not edit by hand.\n"
        f"window.{GLOBAL} = {data};\n"
    )


if __name__ == "__main__":  # python -m kvtier.pipeline.calculator: rewrite the seed copy in the sources
    from pathlib import Path

    target = Path(__file__).resolve().parents[2] / "book" / "_static" / FILE
    target.write_text(presets_js(seed()), encoding="utf-8", newline="\n")
    print(f"wrote {target}")
