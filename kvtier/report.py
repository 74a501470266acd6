"""The bridge between the build and the notebooks: parameters in, numbers out.

A notebook declares the assumptions it depends on in its cell tagged ``parameters``:
one variable per assumption key (``.`` written as ``_``, e.g. ``bandwidth_mid``)
holding the value as text, defaulting to the seed set, plus ``provenance``, a mapping
``key -> {provenance, basis, source}`` for the keys whose records differ from the
seed.  :func:`notebook_parameters` computes those parameters for the build;
:func:`scenario_from_parameters` turns them back into a :class:`~kvtier.scenario.Scenario`
inside the notebook, which refuses to read any undeclared key so that the build's
re-execution bookkeeping cannot miss a dependency.

The ``*_numbers`` functions compute every number a page's prose quotes (glued with
myst-nb); the notebooks only present them.  Names carry units (``_us``, ``_ms``,
``_gib``, ``_pct``, ``_tokens``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from functools import cache
from typing import Any

import numpy as np

from kvtier import capacity, chapter, costs, preview
from kvtier.assumptions import (
    MFU_LABELS,
    SCHEMA,
    AssumptionSet,
    RestrictedAssumptionSet,
    make_assumption,
    seed,
)
from kvtier.errors import KvtierError
from kvtier.models import dtype_bytes
from kvtier.scenario import Scenario
from kvtier.tables import ratio as ratio_table
from kvtier.units import format_bandwidth

PROVENANCE_PARAM = "provenance"
"""The parameter holding provenance records of keys that differ from the seed."""
SET_NAME_PARAM = "set_name"
"""The parameter holding the assumption set's name (declared by the assumptions page)."""

GIB = 2.0**30
MIB = 2.0**20


def param_name(key: str) -> str:
    """The notebook parameter name of assumption ``key`` (``bandwidth.mid`` -> ``bandwidth_mid``)."""
    return key.replace(".", "_")


PARAM_KEYS: dict[str, str] = {param_name(key): key for key in SCHEMA}
"""Notebook parameter name -> assumption key."""


@cache
def _seed() -> AssumptionSet:
    return seed()


@cache
def seed_scenario() -> Scenario:
    """The seed set's scenario: what the source chapter's printed figures are compared with.

    A page compares the chapter only with the seed values, whatever the build assumes, so
    that a sentence such as "the chapter prints this rounded" stays true under any rerun.
    """
    return Scenario(_seed())


def notebook_parameters(declared: Iterable[str], assumptions: AssumptionSet, owner: str) -> dict[str, Any]:
    """The papermill parameters for a notebook that declares ``declared``.

    Parameters
    ----------
    declared : iterable of str
        Parameter names found in the notebook's ``parameters`` cell.
    assumptions : AssumptionSet
        The assumption set of this build.
    owner : str
        Notebook name, for error messages.

    Returns
    -------
    dict
        Each declared assumption's value text (None for a null optional key), and
        ``provenance`` for the declared keys whose record differs from the seed.
    """
    base = _seed()
    params: dict[str, Any] = {}
    prov: dict[str, dict[str, str]] = {}
    for name in sorted(declared):
        if name == SET_NAME_PARAM:
            params[name] = assumptions.name
            continue
        if name == PROVENANCE_PARAM:
            continue
        key = PARAM_KEYS.get(name)
        if key is None:
            raise KvtierError(f"{owner}: parameter '{name}' is not an assumption key; known: {', '.join(PARAM_KEYS)}")
        rec = assumptions[key]
        params[name] = None if rec.value is None else rec.text
        if rec != base[key]:
            prov[key] = {"provenance": rec.provenance, "basis": rec.basis, "source": rec.source}
    params[PROVENANCE_PARAM] = prov
    return params


def scenario_from_parameters(namespace: Mapping[str, Any], owner: str) -> Scenario:
    """The scenario a notebook's parameters describe, limited to the keys it declares.

    Parameters
    ----------
    namespace : mapping
        The notebook's globals after the parameters (and papermill's injected) cell.
    owner : str
        Notebook name, for error messages.
    """
    base = _seed()
    prov = namespace.get(PROVENANCE_PARAM) or {}
    declared = {key for name, key in PARAM_KEYS.items() if name in namespace}
    records = {}
    for key in sorted(declared):
        raw = namespace[param_name(key)]
        old = base[key]
        text = "null" if raw is None else str(raw)
        if key in prov or text != old.text:
            info = prov.get(key, {})
            records[key] = make_assumption(
                key,
                raw,
                basis=info.get("basis", f"notebook parameter (the seed has {old.display})"),
                provenance=info.get("provenance", "assumed"),
                source=info.get("source", f"{owner} parameter"),
                where=f"{owner}: parameter '{param_name(key)}'",
            )
    full = base.with_records(records, name=str(namespace.get(SET_NAME_PARAM, base.name)))
    return Scenario(RestrictedAssumptionSet(full, declared, owner))


# ---------------------------------------------------------------------------
# numbers quoted in each page's prose
# ---------------------------------------------------------------------------


def block_unit_numbers(s: Scenario) -> dict[str, Any]:
    """The block unit: the model's attention geometry, KV bytes per token, the block."""
    m = s.model
    elem = dtype_bytes(s.kv_dtype, "kv_dtype")
    if m.attention == "MLA":
        formula = f"{m.n_layers} layers x ({m.kv_lora_rank} latent + {m.qk_rope_head_dim} rope) elements x {elem} B"
    else:
        formula = f"2 (K and V) x {m.n_layers} layers x {m.n_kv_heads} KV heads x {m.head_dim} head_dim x {elem} B"
    block_bytes = s.block_bytes
    return {
        "model_name": m.name,
        "attention": m.attention,
        "layers": m.n_layers,
        "attention_heads": m.n_heads,
        "kv_heads": m.n_kv_heads,
        "head_dim": m.head_dim,
        "query_heads_per_kv_head": m.n_heads / m.n_kv_heads,
        "kv_dtype": s.kv_dtype,
        "kv_element_bytes": elem,
        "kv_formula": formula,
        "kv_bytes_per_token": s.kv_bytes_per_token,
        "kv_kib_per_token": s.kv_bytes_per_token / 1024,
        "block_tokens": s.block_tokens,
        "block_bytes": block_bytes,
        "block_mib": block_bytes / MIB,
        "block_mb": block_bytes / 1e6,
        "mib_over_mb_pct": (MIB / 1e6 - 1) * 100,
    }


def fetch_numbers(s: Scenario) -> dict[str, Any]:
    """Fetch time of one block for each bandwidth bracket, beside the chapter's figures."""
    out: dict[str, Any] = {"block_mib": s.block_bytes / MIB, "latency_us": s.v("fetch_latency") * 1e6}
    for label, fetch_s in s.fetch_by_label().items():
        out[f"bandwidth_{label}_gbps"] = s.bandwidth(label) / 1e9
        out[f"fetch_{label}_us"] = fetch_s * 1e6
        out[f"chapter_fetch_{label}_us"] = chapter.FETCH_S[label].value * 1e6
        out[f"seed_fetch_{label}_us"] = seed_scenario().fetch_by_label()[label] * 1e6
    return out


@cache
def implied_peak_tflops() -> tuple[float, float]:
    """The peak FLOP/s range (TFLOP/s) that the chapter's printed regeneration times allow.

    Solved with the chapter's own FLOP count (the seed set), whatever this build assumes.
    """
    s = seed_scenario()
    quotes = chapter.IMPLIED_PEAK_QUOTES
    low, high = costs.implied_peak_interval(
        s.block_flops,
        [s.mfu(label) for label, _ in quotes],
        [q.value for _, q in quotes],
        [q.half_width for _, q in quotes],
    )
    return low / 1e12, high / 1e12


def regenerate_numbers(s: Scenario) -> dict[str, Any]:
    """Tail-block regeneration for each MFU bracket, the implied peak, exact vs nominal parameters."""
    exact_total, exact_active = s.model.param_counts()
    low, high = implied_peak_tflops()
    out: dict[str, Any] = {
        "params_b": s.params / 1e9,
        "params_source": s.params_source,
        "exact_params": exact_total,
        "exact_params_b": exact_total / 1e9,
        "exact_over_nominal_pct": (exact_total / s.params - 1) * 100,
        "flops_per_param_token": s.v("flops_per_param_token"),
        "block_tokens": s.block_tokens,
        "block_tflop": s.block_flops / 1e12,
        "peak_tflops": s.v("peak_flops") / 1e12,
        "implied_peak_low_tflops": low,
        "implied_peak_high_tflops": high,
    }
    for label, regen_s in s.regen_by_label().items():
        out[f"mfu_{label}_pct"] = s.mfu(label) * 100
        out[f"regen_{label}_ms"] = regen_s * 1e3
        out[f"chapter_regen_{label}_ms"] = chapter.REGEN_S[label].value * 1e3
        out[f"seed_regen_{label}_ms"] = seed_scenario().regen_by_label()[label] * 1e3
        out[f"seed_mfu_{label}_pct"] = seed_scenario().mfu(label) * 100
        exact = costs.tail_regen_time_s(
            s.block_tokens, exact_active, s.v("peak_flops"), s.mfu(label), s.v("flops_per_param_token")
        )
        out[f"regen_exact_{label}_ms"] = float(exact) * 1e3
    out["chapter_regen_unrounded_ms"] = chapter.REGEN_CONSERVATIVE_UNROUNDED_S.value * 1e3
    out["params_note"] = (
        f"the published configuration gives {exact_total:,} parameters, {out['exact_over_nominal_pct']:.2f} per cent"
        f" more, which at the conservative MFU means {out['regen_exact_conservative_ms']:.2f} ms instead of"
        f" {out['regen_conservative_ms']:.2f} ms: small, but worth knowing when figures are compared digit by digit"
        if s.params_source == "assumption"
        else "the published configuration's exact count"
    )
    out["seed_params_b"] = seed_scenario().params / 1e9
    out["seed_peak_tflops"] = seed_scenario().v("peak_flops") / 1e12
    out["peak_provenance"] = s.a("peak_flops").provenance
    out["seed_model"] = seed_scenario().model.name
    return out


def ratio_numbers(s: Scenario) -> dict[str, Any]:
    """The ratio grid's extremes, the illustrative point, and the verdict on the chapter's claim."""
    df = ratio_table(s)
    point = s.illustrative
    lo_claim, hi_claim = chapter.CLAIM_LOW, chapter.CLAIM_HIGH
    low_row = df.loc[df["ratio"].idxmin()]
    high_row = df.loc[df["ratio"].idxmax()]
    below = df[df["ratio"] < lo_claim]
    above = df[df["ratio"] > hi_claim]
    regen = s.regen_by_label()
    latency = s.v("fetch_latency")
    out: dict[str, Any] = {
        "n_points": len(df),
        "n_within_claim": int(df["within_claim"].sum()),
        "n_below_claim": len(below),
        "n_above_claim": len(above),
        "claim_low": lo_claim,
        "claim_high": hi_claim,
        "ratio_min": float(low_row["ratio"]),
        "ratio_min_point": f"{low_row['bandwidth_GBps']:g} GB/s with {low_row['mfu_pct']:g} % MFU",
        "ratio_max": float(high_row["ratio"]),
        "ratio_max_point": f"{high_row['bandwidth_GBps']:g} GB/s with {high_row['mfu_pct']:g} % MFU",
        "orders_min": float(np.log10(low_row["ratio"])),
        "orders_max": float(np.log10(high_row["ratio"])),
        "illustrative_bandwidth_gbps": point["bandwidth_bytes_per_s"] / 1e9,
        "illustrative_mfu_pct": point["mfu"] * 100,
        "illustrative_fetch_us": point["fetch_s"] * 1e6,
        "illustrative_regen_ms": point["regen_s"] * 1e3,
        "ratio_illustrative": point["ratio"],
        "chapter_ratio": chapter.ILLUSTRATIVE_RATIO.value,
        "seed_ratio_illustrative": seed_scenario().illustrative["ratio"],
        # the chapter's own division: its unrounded conservative time over its rounded mid-bandwidth fetch
        "chapter_rounded_inputs_ratio": chapter.REGEN_CONSERVATIVE_UNROUNDED_S.value / chapter.FETCH_S["mid"].value,
        "optimistic_ends_ratio": regen["optimistic"] / s.fetch_by_label()["optimistic"],
    }
    for label in MFU_LABELS:
        out[f"mfu_{label}_pct"] = s.mfu(label) * 100
        need = costs.bandwidth_for_ratio(s.block_bytes, regen[label], lo_claim, latency)
        out[f"claim_min_bandwidth_{label}_gbps"] = float(need) / 1e9
    if len(below) == 0 and len(above) == 0:
        verdict = f"holds at all {len(df)} combinations of the bracketed assumptions"
    else:
        parts = []
        if len(below):
            pts = "; ".join(
                f"{r.bandwidth_GBps:g} GB/s at {r.mfu_pct:g} % MFU ({r.ratio:.1f}x)" for r in below.itertuples()
            )
            parts.append(f"falls below {lo_claim:g}x at {len(below)} ({pts})")
        if len(above):
            pts = "; ".join(
                f"{r.bandwidth_GBps:g} GB/s at {r.mfu_pct:g} % MFU ({r.ratio:.1f}x)" for r in above.itertuples()
            )
            parts.append(f"exceeds {hi_claim:g}x at {len(above)} ({pts})")
        verdict = f"holds at {int(df['within_claim'].sum())} of {len(df)} combinations; it " + " and ".join(parts)
    out["verdict"] = verdict
    out["top_verdict"] = (
        f"no combination reaches {hi_claim:,.0f}x: the largest ratio is {out['orders_max']:.2f} orders of magnitude,"
        " so the upper end of the claimed band is not approached by the tail block"
        if not len(above) and out["ratio_max"] < hi_claim
        else f"{len(above)} combination(s) exceed {hi_claim:,.0f}x"
    )
    return out


def interior_numbers(s: Scenario) -> dict[str, Any]:
    """The chapter's interior example (a block mid-sequence), both upstream cases."""
    point = s.illustrative
    p = s.v("interior.position")
    tail_ms = point["regen_s"] * 1e3
    resident_s = float(s.interior_regen_s(p, "resident", point["mfu"]))
    evicted_s = float(s.interior_regen_s(p, "evicted", point["mfu"]))
    anchor = s.v("interior.anchor_every")
    _, n_evicted = costs.recompute_span(p, s.block_tokens, "evicted", anchor)
    prefix_fetch_s = float(s.fetch_s(point["bandwidth_bytes_per_s"])) / s.block_tokens * float(n_evicted)
    parity = costs.attention_parity_position(
        s.active_params, s.model.attention_flops_per_position(), s.block_tokens, s.v("flops_per_param_token")
    )
    return {
        "position_tokens": int(p),
        "context_tokens": int(s.v("interior.context")),
        "position_share_pct": p / s.v("interior.context") * 100,
        "anchor_every_tokens": int(anchor),
        "block_tokens": s.block_tokens,
        "mfu_pct": point["mfu"] * 100,
        "fetch_us": point["fetch_s"] * 1e6,
        "tail_regen_ms": tail_ms,
        "resident_regen_ms": resident_s * 1e3,
        "evicted_regen_ms": evicted_s * 1e3,
        "evicted_regen_s": evicted_s,
        "resident_over_tail": resident_s * 1e3 / tail_ms,
        "evicted_over_tail": evicted_s * 1e3 / tail_ms,
        "resident_ratio": resident_s / point["fetch_s"],
        "evicted_ratio": evicted_s / point["fetch_s"],
        "evicted_tokens_recomputed": int(n_evicted),
        # the fair comparison when the whole prefix had been tiered too: fetch all the recomputed tokens
        "evicted_prefix_fetch_ms": prefix_fetch_s * 1e3,
        "evicted_amortised_ratio": evicted_s / prefix_fetch_s,
        "attention_flops_per_position": s.model.attention_flops_per_position(),
        "attention_parity_tokens": float(parity),
    }


def capacity_numbers(s: Scenario) -> dict[str, Any]:
    """KV footprint at the reference contexts, the weights, and the crossover."""
    short, long = s.v("context.short"), s.v("context.long")
    exact_total, _ = s.model.param_counts()
    weight_elem = dtype_bytes(str(s.assumptions.value("weight_dtype")), "weight_dtype")
    exact_crossover = float(
        capacity.crossover_context_tokens(capacity.weight_bytes(exact_total, weight_elem), s.kv_bytes_per_token)
    )
    window = s.model.max_positions
    if window and s.crossover_tokens > window:
        window_note = (
            f"lies beyond the {window:,} positions this model's configuration allows: for this model it is a"
            " sizing yardstick (or a statement about a long-context variant with the same cache geometry),"
            " not a state a deployment reaches"
        )
    elif window:
        window_note = f"lies within the {window:,} positions this model's configuration allows"
    else:
        window_note = "cannot be checked against a context limit: the configuration states none"
    params_note = (
        f"With the configuration's exact parameter count instead ({exact_total:,}) the crossover moves to"
        f" {exact_crossover:,.0f} tokens."
        if s.params_source == "assumption"
        else "The parameter count is the configuration's own."
    )
    return {
        "window_note": window_note,
        "params_note": params_note,
        "kv_kib_per_token": s.kv_bytes_per_token / 1024,
        "params_b": s.params / 1e9,
        "weights_gb": s.weight_bytes / 1e9,
        "weights_gib": s.weight_bytes / GIB,
        "context_short_tokens": int(short),
        "context_long_tokens": int(long),
        "kv_short_gib": float(s.kv_bytes(short)) / GIB,
        "kv_long_gib": float(s.kv_bytes(long)) / GIB,
        "share_short_pct": float(s.kv_share(short)) * 100,
        "share_long_pct": float(s.kv_share(long)) * 100,
        "crossover_tokens": s.crossover_tokens,
        "crossover_exact_tokens": exact_crossover,
        "crossover_shift_tokens": exact_crossover - s.crossover_tokens,
        "weight_dtype": str(s.assumptions.value("weight_dtype")),
        "chapter_crossover_tokens": chapter.CROSSOVER_TOKENS.value,
        "seed_crossover_tokens": seed_scenario().crossover_tokens,
        "seed_share_short_pct": float(seed_scenario().kv_share(seed_scenario().v("context.short"))) * 100,
        "seed_share_long_pct": float(seed_scenario().kv_share(seed_scenario().v("context.long"))) * 100,
        "chapter_share_short_pct": chapter.SHARE_SHORT.value * 100,
        "chapter_share_long_pct": chapter.SHARE_LONG.value * 100,
    }


def assumption_numbers(s: Scenario) -> dict[str, Any]:
    """How many assumptions of each provenance class the set holds."""
    records = list(s.assumptions.values())
    out: dict[str, Any] = {
        "n_assumptions": len(records),
        "set_name": s.assumptions.name,
        "dgx_spark_gbps": s.v("reference.dgx_spark_hbm") / 1e9,
    }
    for cls in ("measured", "published-spec", "assumed", "implied", "derived"):
        out[f"n_{cls.replace('-', '_')}"] = sum(rec.provenance == cls for rec in records)
    return out


def plain(value: Any) -> Any:
    """A glue-safe value: numpy scalars become Python ``float``/``int`` (myst-nb formats those)."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    return value


def glue_numbers(numbers: Mapping[str, Any]) -> None:
    """Glue every number (plain Python values) for the page's prose, without displaying them."""
    from myst_nb import glue

    for name, value in numbers.items():
        glue(name, plain(value), display=False)
        preview.GLUED[name] = plain(value)


def glue_figure(name: str, fig: Any, caption: str) -> None:
    """Glue a figure and its caption (``NAME_caption``) and close it."""
    import matplotlib.pyplot as plt
    from myst_nb import glue

    glue(name, fig, display=False)
    glue(f"{name}_caption", caption, display=False)
    preview.GLUED.update({name: fig, f"{name}_caption": caption})
    plt.close(fig)


def show_table(df: Any, digits: Mapping[str, int] | None = None) -> Any:
    """An HTML display of a table of record (rounded copy, no index, deterministic markup)."""
    from IPython.display import HTML

    from kvtier.tables import formatted

    return HTML(formatted(df, dict(digits or {})).to_html(index=False, border=0, classes="kvtier-table"))


def roofline_numbers(s: Scenario) -> dict[str, Any]:
    """A lone tail block under the roofline on the set's own device, and the presets' range."""
    from kvtier.tables import roofline as roofline_table

    df = roofline_table(s)
    own = df[df["device"] == "this assumption set"].set_index("mfu_bracket")
    presets = df[df["device"] != "this assumption set"]
    known = presets.dropna(subset=["lone_block_ms"])
    out: dict[str, Any] = {
        "peak_tflops": s.v("peak_flops") / 1e12,
        "mem_tbps": s.v("regen.mem_bandwidth") / 1e12,
        "mem_efficiency_pct": s.v("regen.mem_efficiency") * 100,
        "weights_gb": s.weight_bytes / 1e9,
        "block_tokens": s.block_tokens,
        "batch_tokens": s.batch_tokens,
        "memory_ms": float(own["memory_ms"].iloc[0]),
        "n_devices": int(presets["device"].nunique()),
        "n_memory_bound": int((known["bound"] == "memory").sum()),
        "n_device_points": len(known),
        "preset_lone_min_ms": float(known["lone_block_ms"].min()),
        "preset_lone_max_ms": float(known["lone_block_ms"].max()),
        "preset_batch_min_tokens": math.ceil(float(known["compute_bound_batch_tokens"].min())),
        "preset_batch_max_tokens": math.ceil(float(known["compute_bound_batch_tokens"].max())),
    }
    for label in MFU_LABELS:
        row = own.loc[label]
        out[f"compute_{label}_ms"] = float(row["compute_ms"])
        out[f"lone_{label}_ms"] = float(row["lone_block_ms"])
        out[f"bound_{label}"] = str(row["bound"])
        out[f"batch_{label}_tokens"] = math.ceil(float(row["compute_bound_batch_tokens"]))
        out[f"batched_{label}_ms"] = float(row["batched_ms"])
        out[f"mfu_{label}_pct"] = s.mfu(label) * 100
    out["lone_over_compute_conservative"] = out["lone_conservative_ms"] / out["compute_conservative_ms"]
    memory_at = [label for label in MFU_LABELS if out[f"bound_{label}"] == "memory"]
    if len(memory_at) == len(MFU_LABELS):
        out["lone_verdict"] = (
            f"memory-bound at every MFU bracket: reading the weights takes longer than the compute at any of them,"
            f" so regenerating it takes {out['memory_ms']:.1f} ms whatever the MFU,"
            f" {out['lone_over_compute_conservative']:.1f} times the compute-only time at"
            f" {out['mfu_conservative_pct']:g} % MFU"
        )
    elif not memory_at:
        out["lone_verdict"] = "compute-bound at every MFU bracket, so the source chapter's compute-only model stands"
    else:
        compute_at = [label for label in MFU_LABELS if label not in memory_at]
        out["lone_verdict"] = (
            f"memory-bound at the {', '.join(memory_at)} MFU bracket(s) and compute-bound at the"
            f" {', '.join(compute_at)} one(s)"
        )
    return out


def tiers_numbers(s: Scenario) -> dict[str, Any]:
    """The tier ladder: break-even bandwidths and the extremes of the links' ratios."""
    from kvtier.tables import tiers as tiers_table

    df = tiers_table(s)
    presets = df[~df["link"].str.startswith("bracket ")]
    point = s.illustrative
    p = s.v("interior.position")
    regen = {
        case: float(s.regen_time_s(pos, up, point["mfu"]))
        for case, pos, up in (("tail", 0, "resident"), ("resident", p, "resident"), ("evicted", p, "evicted"))
    }
    slowest = presets.loc[presets["fetch_us"].idxmax()]
    out: dict[str, Any] = {
        "regen_model": {"mfu": "compute-only (FLOPs over peak x MFU)", "roofline": "roofline"}[
            str(s.assumptions.value("regen.model"))
        ],
        "mfu_pct": point["mfu"] * 100,
        "position_tokens": int(p),
        "n_links": len(presets),
        "n_fetch_wins": int(presets["fetch_wins_tail"].sum()),
        "slowest_link": str(slowest["link"]),
        "slowest_fetch_us": float(slowest["fetch_us"]),
        "slowest_ratio_tail": float(slowest["ratio_tail"]),
        "min_ratio_tail": float(presets["ratio_tail"].min()),
        "max_ratio_tail": float(presets["ratio_tail"].max()),
    }
    faster = out["slowest_ratio_tail"] >= 1
    out["slowest_sentence"] = (
        f"The slowest, {out['slowest_link']}, fetches the block in {out['slowest_fetch_us']:,.0f} µs,"
        + (
            f" still {out['slowest_ratio_tail']:.1f} times faster than regenerating it."
            if faster
            else f" {1 / out['slowest_ratio_tail']:.1f} times slower than regenerating it: there recomputing wins."
        )
    )
    out["ladder_sentence"] = (
        "Every tier clears the break-even bandwidth here, so the source chapter's question changes: whether to"
        " fetch or recompute is settled, and what the choice of tier decides is how much faster fetching is, next"
        " to what each tier costs per byte held."
        if out["n_fetch_wins"] == out["n_links"]
        else f"Only {out['n_fetch_wins']} of the {out['n_links']} tiers clear the break-even bandwidth here; on the"
        " others recomputing the tail block is quicker, and the choice between tiers decides the answer."
    )
    for case, t in regen.items():
        out[f"regen_{case}_ms"] = t * 1e3
        bw = float(costs.bandwidth_for_ratio(s.block_bytes, t, 1.0, s.v("fetch_latency")))
        out[f"break_even_{case}_gbps"] = bw / 1e9
        out[f"break_even_{case}"] = format_bandwidth(bw, 3) if np.isfinite(bw) else "unreachable (latency too long)"
    return out


def models_numbers(s: Scenario) -> dict[str, Any]:
    """Extremes across the model presets."""
    from kvtier.tables import models as models_table

    df = models_table(s).set_index("model")
    kv = df["kv_KiB_per_token"]
    cross = df["crossover_tokens"]
    ratio = df["ratio_illustrative"]
    return {
        "n_models": len(df),
        "kv_max_model": str(kv.idxmax()),
        "kv_max_kib": float(kv.max()),
        "kv_min_model": str(kv.idxmin()),
        "kv_min_kib": float(kv.min()),
        "crossover_min_model": str(cross.idxmin()),
        "crossover_min_tokens": float(cross.min()),
        "crossover_max_model": str(cross.idxmax()),
        "crossover_max_tokens": float(cross.max()),
        "ratio_min_model": str(ratio.idxmin()),
        "ratio_min": float(ratio.min()),
        "ratio_max_model": str(ratio.idxmax()),
        "ratio_max": float(ratio.max()),
        "kv_dtype": s.kv_dtype,
        "block_tokens": s.block_tokens,
    }


def uncertainty_inputs(s: Scenario) -> tuple[dict[str, Any], dict[str, float]]:
    """The Monte Carlo ranges (bandwidth, MFU, peak) and the illustrative base point."""
    from kvtier.uncertainty import Range

    dist = str(s.assumptions.value("uncertainty.distribution"))
    ranges = {
        name: Range(s.v(f"uncertainty.{name}_low"), s.v(f"uncertainty.{name}_high"), dist, name=f"uncertainty.{name}")
        for name in ("bandwidth", "mfu", "peak")
    }
    point = s.illustrative
    base = {"bandwidth": point["bandwidth_bytes_per_s"], "mfu": point["mfu"], "peak": s.v("peak_flops")}
    return ranges, base


def uncertainty_draws(s: Scenario) -> np.ndarray:
    """The seeded Monte Carlo draws of the tail block's regenerate/fetch ratio."""
    from kvtier import uncertainty

    ranges, _ = uncertainty_inputs(s)
    draws = uncertainty.sample(ranges, int(s.v("uncertainty.draws")), int(s.v("uncertainty.seed")))
    return uncertainty.ratio_draws(s.block_bytes, s.block_flops, draws, s.v("fetch_latency"))


def uncertainty_numbers(s: Scenario) -> dict[str, Any]:
    """Percentiles of the ratio, the chance it leaves the chapter's band, and the top tornado input."""
    from kvtier import uncertainty

    ratios = uncertainty_draws(s)
    summary = uncertainty.summarize(ratios, threshold=chapter.CLAIM_LOW)
    ranges, base = uncertainty_inputs(s)
    rows = uncertainty.tornado(s.block_bytes, s.block_flops, base, ranges, s.v("fetch_latency"))
    out: dict[str, Any] = {
        "draws": summary["n"],
        "seed": int(s.v("uncertainty.seed")),
        "distribution": str(s.assumptions.value("uncertainty.distribution")),
        "mean": summary["mean"],
        "p_below_claim_pct": summary["p_below"] * 100,
        "p_below_claim_se_pct": summary["p_below_se"] * 100,
        "p_above_claim_pct": float(np.mean(ratios > chapter.CLAIM_HIGH)) * 100,
        "top_input": rows[0].name,
        "top_swing": rows[0].swing,
        "second_input": rows[1].name,
        "second_swing": rows[1].swing,
    }
    for q, value in summary["percentiles"].items():
        out[f"p{q:g}"] = value
    for name, unit, scale in (("bandwidth", "gbps", 1e9), ("mfu", "pct", 0.01), ("peak", "tflops", 1e12)):
        out[f"{name}_low_{unit}"] = ranges[name].low / scale
        out[f"{name}_high_{unit}"] = ranges[name].high / scale
    fixed = dict(ranges, peak=uncertainty.Range.fixed(base["peak"], name="peak_flops"))
    draws = uncertainty.sample(fixed, int(s.v("uncertainty.draws")), int(s.v("uncertainty.seed")))
    fixed_ratios = uncertainty.ratio_draws(s.block_bytes, s.block_flops, draws, s.v("fetch_latency"))
    out["p_below_claim_fixed_peak_pct"] = float(np.mean(fixed_ratios < chapter.CLAIM_LOW)) * 100
    out["peak_tflops"] = base["peak"] / 1e12
    return out
