"""The options every command that reads an assumption set shares: ``--assumptions`` and ``--set``.

Declared here once, so that ``compare``, ``tiers``, ``build``, ``workload`` and ``cost``
spell and explain them the same way; the placement options ``--tp``, ``--pp``, ``--ep``,
``--gpus-per-link`` that ``compare`` and ``tiers`` share (each an alias of ``--set`` on its
``parallel.*`` key); ``--weight-dtype`` (``weight_dtype``), which every command that places
and regenerates a model takes; and ``--regen-model`` with ``--accelerator``, which ``compare`` and ``tiers`` share.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

from kvtier.errors import KvtierError, show
from kvtier.inputs import hardware
from kvtier.inputs.assumptions import AssumptionSet, same_value, value_of
from kvtier.inputs.deployments import accelerator_records
from kvtier.inputs.keys import SCHEMA
from kvtier.scenario import Scenario

ENGINE_CHOICES: tuple[str, ...] = SCHEMA["engine"].choices


def add_assumption_options(p: argparse.ArgumentParser) -> None:
    """``--assumptions FILE`` and repeatable ``--set KEY=VALUE``, shared by every command that reads a set."""
    p.add_argument("--assumptions", metavar="FILE", help="YAML assumption set layered on the seed set")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="override one assumption (repeatable)")


WEIGHT_DTYPE_CHOICES: tuple[str, ...] = SCHEMA["weight_dtype"].choices


def add_weight_dtype_option(p: argparse.ArgumentParser) -> None:
    """``--weight-dtype D``: the element type the weights are counted in (an alias of ``--set weight_dtype=D``).

    Shared by the commands that place and regenerate a model (``compare``, ``tiers``, ``cost``, ``workload``),
    so that the fit check, the placement and the bytes a regeneration reads take the same weights.
    """
    p.add_argument(
        "--weight-dtype",
        metavar="D",
        help="element type of the weights (weight_dtype): auto, the model's published one (its config.json's"
        " quantization_config, else torch_dtype, else bf16), or one of "
        + ", ".join(d for d in WEIGHT_DTYPE_CHOICES if d != "auto")
        + "; default: the set's (a --model or --set model=... brings auto)",
    )


def weight_dtype_sets(args: argparse.Namespace, sets: Mapping[str, str] | None = None) -> dict[str, str]:
    """``{"weight_dtype": D}`` when ``--weight-dtype D`` is given, else nothing; refused where a ``--set`` in
    ``sets`` gives ``weight_dtype`` another value (:func:`alias`)."""
    value = getattr(args, "weight_dtype", None)
    if value is None:
        return {}
    alias(dict(sets or {}), "--weight-dtype", value, "weight_dtype")
    return {"weight_dtype": str(value)}


PLACEMENT_OPTIONS: dict[str, str] = {
    "tp": "parallel.tp",
    "pp": "parallel.pp",
    "ep": "parallel.ep",
    "gpus_per_link": "parallel.gpus_per_link",
    "engine": "engine",
}
"""Each placement option's ``argparse`` destination and the assumption key it sets."""


ENGINE_SPELLINGS: dict[str, str] = {"trtllm": "tensorrt-llm"}
"""Other spellings ``--engine`` takes for an engine preset: TensorRT-LLM's kernel-table name (``regen.engine``)."""


def _engine_name(text: str) -> str:
    """An ``--engine`` value as the ``engine`` key spells it (:data:`ENGINE_SPELLINGS`)."""
    return ENGINE_SPELLINGS.get(text, text)


def add_placement_options(p: argparse.ArgumentParser) -> None:
    """``--tp N``, ``--pp N``, ``--ep N``, ``--gpus-per-link N``, ``--engine NAME``: the deployment served."""
    g = p.add_argument_group("the deployment: placement across accelerators and engine (aliases of --set KEY=VALUE)")
    g.add_argument("--tp", metavar="N", help="tensor-parallel size (parallel.tp)")
    g.add_argument("--pp", metavar="N", help="pipeline-parallel size (parallel.pp)")
    g.add_argument("--ep", metavar="N", help="expert-parallel size of an MoE model (parallel.ep)")
    g.add_argument(
        "--gpus-per-link", metavar="N", help="accelerators sharing one link to the tier (parallel.gpus_per_link)"
    )
    g.add_argument(
        "--engine",
        metavar="NAME",
        type=_engine_name,
        help="a serving engine's block layout: its tokens per block, copies per block and layer overlap (engine;"
        " one of " + ", ".join(ENGINE_CHOICES) + "; trtllm is read as tensorrt-llm)",
    )


def alias(sets: dict[str, str], option: str, value: Any, key: str) -> None:
    """Set ``key`` to ``value`` as ``option`` gives it, refusing a ``--set`` of the same key to another value.

    Raises
    ------
    KvtierError
        ``OPTION VALUE and --set KEY=OTHER both set KEY: give one``: neither silently wins.
    """
    value_of(key, str(value), f"{option} {show(value)}")  # a bad value is the option's, not "--set"'s
    if key in sets and not same_value(key, sets[key], value):
        raise KvtierError(f"{option} {show(value)} and --set {key}={show(sets[key])} both set {key}: give one")
    sets[key] = str(value)


def placement_sets(args: argparse.Namespace, sets: Mapping[str, str] | None = None) -> dict[str, str]:
    """The ``parallel.*`` values the placement options give, by key (only those given).

    Raises
    ------
    KvtierError
        When an option and a ``--set`` in ``sets`` give the same key two different values: neither silently wins.
    """
    out: dict[str, str] = {}
    for dest, key in PLACEMENT_OPTIONS.items():
        value = getattr(args, dest, None)
        if value is not None:
            alias(dict(sets or {}), "--" + dest.replace("_", "-"), value, key)
            out[key] = str(value)
    return out


def placement_json(scenario: Scenario) -> dict[str, Any]:
    """The placement and what it does to the block, for ``--json`` (counts; bytes in B; seconds).

    ``tp``, ``pp``, ``ep``, ``gpus_per_link``, ``accelerators``; the share of the block one
    accelerator fetches, its bytes and the bytes over one shared link; the collectives a lone
    block's pass adds; what one accelerator must hold (weights and one sequence of
    ``context.long`` tokens); and the fewest accelerators of ``parallel.hbm_capacity`` that hold it
    (null when that key is null).
    """
    p = scenario.placement
    cap = scenario.assumptions.value("parallel.hbm_capacity")
    fewest = None
    if cap is not None:
        n, tp, pp = scenario.min_accelerators()
        fewest = {"accelerators": n, "tp": tp, "pp": pp} if n else None
    return {
        "tp": p.tp,
        "pp": p.pp,
        "ep": p.ep,
        "gpus_per_link": p.gpus_per_link,
        "accelerators": p.accelerators,
        "shard_share": scenario.shard_share,
        "shard_bytes": scenario.shard_bytes,
        "link_bytes": scenario.fetch_bytes,
        "lone_collectives_s": float(scenario.collectives_s(scenario.block_tokens)),
        "rank_memory_bytes": scenario.rank_memory_bytes(),
        "hbm_capacity_bytes": cap,
        "min_accelerators": fewest,
    }


def add_regeneration_options(p: argparse.ArgumentParser) -> None:
    """``--regen-model``, ``--accelerator`` and ``--beyond-grid``: how regeneration is timed, on which accelerator."""
    p.add_argument(
        "--regen-model",
        choices=SCHEMA["regen.model"].choices,
        help="compute-only (the chapter), roofline, or an engine's measured kernels (--accelerator, --engine)",
    )
    p.add_argument(
        "--accelerator",
        metavar="NAME",
        help="accelerator preset for peak, memory bandwidth, memory (fit check) and kernel tables (engine model)",
    )
    p.add_argument(
        "--beyond-grid",
        choices=SCHEMA["regen.beyond_grid"].choices,
        help="engine model: refuse a pass beyond the kernel tables' measured grid (default), or extrapolate it",
    )


def regeneration_sets(args: argparse.Namespace, sets: Mapping[str, str] | None = None) -> dict[str, str]:
    """The ``regen.*`` values ``--regen-model`` and ``--beyond-grid`` set (:func:`add_regeneration_options`),
    refused where a ``--set`` in ``sets`` gives the same key another value (:func:`alias`)."""
    out: dict[str, str] = {}
    for option, value, key in (
        ("--regen-model", args.regen_model, "regen.model"),
        ("--beyond-grid", args.beyond_grid, "regen.beyond_grid"),
    ):
        if value is not None:
            alias(dict(sets or {}), option, value, key)
            out[key] = str(value)
    return out


def with_accelerator(base: AssumptionSet, args: argparse.Namespace) -> AssumptionSet:
    """``base`` with the ``--accelerator`` preset's records: its peak, memory bandwidth, memory and kernel tables.

    The peak (``peak_flops``) and memory bandwidth (``regen.mem_bandwidth``) always; its memory as
    ``parallel.hbm_capacity`` unless the set gives one, so that a placement that does not fit is refused;
    ``regen.system`` where the preset has kernel tables (:data:`kvtier.inputs.kernels.ACCELERATOR_SYSTEMS`).

    Raises
    ------
    KvtierError
        A preset with no published peak and no ``--peak-flops``; the engine model on a preset with no kernel tables.
    """
    name = getattr(args, "accelerator", None)
    if not name:
        return base
    regen_model = getattr(args, "regen_model", None) or str(base.value("regen.model"))
    records = accelerator_records(name, regen_model=regen_model, via="--accelerator")
    if "peak_flops" not in records and getattr(args, "peak_flops", None) is None:
        hardware.accelerator(name).require_peak()  # raises: this preset publishes no peak, --peak-flops is required
    if base.value("parallel.hbm_capacity") is not None:
        records.pop("parallel.hbm_capacity", None)  # the set's own memory stands
    return base.with_records(records)
