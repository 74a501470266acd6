"""Tables of record: each table of the book as a DataFrame, and its CSV form.

Each builder takes a :class:`~kvtier.scenario.Scenario` and returns a DataFrame whose
column names carry units and which has a ``provenance`` (or ``basis``) column.  The same
builder feeds the book (through the notebooks) and the CSV files under ``tables/``, so
the two cannot disagree.  CSVs are deterministic: fixed row order, ``%.10g`` floats,
``\\n`` line ends.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from kvtier import capacity as capacity_formulas
from kvtier import chapter, costs
from kvtier.assumptions import BANDWIDTH_LABELS, MFU_LABELS
from kvtier.models import dtype_bytes
from kvtier.scenario import Scenario

GIB = 2.0**30
MIB = 2.0**20

INTERIOR_POSITIONS = (0, 1_000, 10_000, 50_000, 100_000, 1_000_000)
CAPACITY_CONTEXTS = (1_024, 4_096, 32_768, 131_072, 1_048_576)
UPSTREAM_CASES = ("resident", "evicted")


def block_unit(s: Scenario) -> pd.DataFrame:
    """The block unit derived step by step: KV bytes per token, then the block."""
    m = s.model
    kv_bytes = dtype_bytes(s.kv_dtype, "kv_dtype")
    # a shipped preset is a published configuration; a user's config.json carries the model record's class
    cls = "published-spec" if m.source.startswith("preset ") else s.a("model").provenance
    cfg = f"{cls} ({m.source})"
    if m.attention == "MLA":
        rows = [
            ("layers", m.n_layers, "count", "config num_hidden_layers", cfg),
            ("kv_lora_rank", m.kv_lora_rank, "elements", "compressed KV latent per layer", cfg),
            ("qk_rope_head_dim", m.qk_rope_head_dim, "elements", "decoupled rope key per layer", cfg),
        ]
        formula = "layers x (kv_lora_rank + qk_rope_head_dim) x bytes"
    else:
        rows = [
            ("layers", m.n_layers, "count", "config num_hidden_layers", cfg),
            ("kv_heads", m.n_kv_heads, "count", f"config num_key_value_heads ({m.attention})", cfg),
            ("head_dim", m.head_dim, "elements", "config head_dim, else hidden_size / heads", cfg),
            ("K and V", 2, "count", "one key and one value vector per head", "derived"),
        ]
        formula = "2 x layers x kv_heads x head_dim x bytes"
    rows += [
        ("bytes_per_element", kv_bytes, "B", f"kv_dtype = {s.kv_dtype}", s.a("kv_dtype").provenance),
        ("kv_per_token", s.kv_bytes_per_token, "B", formula, "derived"),
        ("block_tokens", s.block_tokens, "tokens", s.a("block_tokens").basis, s.a("block_tokens").provenance),
        ("block", s.block_bytes, "B", "kv_per_token x block_tokens", "derived"),
    ]
    return pd.DataFrame(rows, columns=["quantity", "value", "unit", "basis", "provenance"])


def fetch(s: Scenario) -> pd.DataFrame:
    """Fetch time of one block for each bandwidth bracket."""
    rows = []
    for label in BANDWIDTH_LABELS:
        rec = s.a(f"bandwidth.{label}")
        rows.append(
            {
                "bracket": label,
                "bandwidth_GBps": rec.value / 1e9,
                "block_MiB": s.block_bytes / MIB,
                "latency_us": s.v("fetch_latency") * 1e6,
                "fetch_us": float(s.fetch_s(rec.value)) * 1e6,
                "basis": rec.basis,
                "provenance": rec.provenance,
            }
        )
    return pd.DataFrame(rows)


def regenerate(s: Scenario) -> pd.DataFrame:
    """Tail-block regeneration time for each MFU bracket (parameter FLOPs only)."""
    peak = s.a("peak_flops")
    rows = []
    for label in MFU_LABELS:
        rec = s.a(f"mfu.{label}")
        rows.append(
            {
                "bracket": label,
                "mfu_pct": rec.value * 100,
                "peak_TFLOPps": peak.value / 1e12,
                "block_TFLOP": s.block_flops / 1e12,
                "regen_ms": float(s.regen_s(rec.value)) * 1e3,
                "mfu_provenance": rec.provenance,
                "peak_provenance": peak.provenance,
            }
        )
    return pd.DataFrame(rows)


def ratio(s: Scenario) -> pd.DataFrame:
    """Regenerate/fetch ratio over the cross product of bandwidth and MFU brackets."""
    fetch_s = s.fetch_by_label()
    regen_s = s.regen_by_label()
    point = s.illustrative
    rows = []
    for b in BANDWIDTH_LABELS:
        for m in MFU_LABELS:
            r = regen_s[m] / fetch_s[b]
            rows.append(
                {
                    "bandwidth_bracket": b,
                    "mfu_bracket": m,
                    "bandwidth_GBps": s.bandwidth(b) / 1e9,
                    "mfu_pct": s.mfu(m) * 100,
                    "fetch_us": fetch_s[b] * 1e6,
                    "regen_ms": regen_s[m] * 1e3,
                    "ratio": r,
                    "orders_of_magnitude": float(np.log10(r)),
                    "within_claim": bool(chapter.CLAIM_LOW <= r <= chapter.CLAIM_HIGH),
                    "illustrative": (b, m) == (point["bandwidth_label"], point["mfu_label"]),
                    "provenance": "derived",
                }
            )
    return pd.DataFrame(rows)


def interior(s: Scenario) -> pd.DataFrame:
    """Regeneration of a block by position, both upstream cases, attention included."""
    point = s.illustrative
    positions = np.array(sorted({*INTERIOR_POSITIONS, int(s.v("interior.position"))}), dtype=np.float64)
    rows = []
    for upstream in UPSTREAM_CASES:
        flops = s.interior_flops(positions, upstream)
        regen = s.interior_regen_s(positions, upstream, point["mfu"])
        for p, f, t in zip(positions, flops, regen, strict=True):
            rows.append(
                {
                    "upstream": upstream,
                    "position_tokens": int(p),
                    "regen_TFLOP": f / 1e12,
                    "regen_ms": t * 1e3,
                    "ratio_to_fetch": t / point["fetch_s"],
                    "provenance": "derived",
                }
            )
    return pd.DataFrame(rows)


def capacity(s: Scenario) -> pd.DataFrame:
    """KV footprint of one sequence against context length, and its share of the weights."""
    refs = {int(s.v("context.short")): "context.short", int(s.v("context.long")): "context.long"}
    contexts = sorted({*CAPACITY_CONTEXTS, *refs})
    rows = [
        {
            "point": f"context={c}",
            "context_tokens": c,
            "kv_GiB": float(s.kv_bytes(c)) / GIB,
            "weights_GiB": s.weight_bytes / GIB,
            "kv_share_of_weights_pct": float(s.kv_share(c)) * 100,
            "reference": refs.get(c, ""),
            "provenance": "derived",
        }
        for c in contexts
    ]
    rows.append(
        {
            "point": "crossover",
            "context_tokens": round(s.crossover_tokens),
            "kv_GiB": s.weight_bytes / GIB,
            "weights_GiB": s.weight_bytes / GIB,
            "kv_share_of_weights_pct": 100.0,
            "reference": "crossover",
            "provenance": "derived",
        }
    )
    return pd.DataFrame(rows).sort_values("context_tokens", kind="stable").reset_index(drop=True)


def assumptions(s: Scenario) -> pd.DataFrame:
    """Every assumption: value, unit, basis, provenance class and source."""
    rows = [
        {
            "key": rec.key,
            "value": rec.display,
            "value_si": "" if not isinstance(rec.value, float) else rec.value,
            "unit_si": rec.unit,
            "provenance": rec.provenance,
            "basis": rec.basis,
            "source": rec.source,
        }
        for rec in s.assumptions.values()
    ]
    return pd.DataFrame(rows)


def roofline(s: Scenario) -> pd.DataFrame:
    """A lone tail block under the roofline, for each accelerator preset and MFU bracket.

    The first device is the assumption set's own (``peak_flops``, ``regen.mem_bandwidth``);
    the others are the presets of :mod:`kvtier.hardware`, each with its own peak and memory
    bandwidth.  Position 0, upstream resident: the source chapter's tail block.
    """
    from kvtier import hardware
    from kvtier import roofline as rl

    devices = [
        (
            "this assumption set",
            s.v("peak_flops"),
            s.v("regen.mem_bandwidth"),
            s.a("peak_flops").provenance,
            s.a("regen.mem_bandwidth").provenance,
        )
    ]
    for name, acc in hardware.load_accelerators().items():
        devices.append(
            (
                name,
                acc.peak_flop_per_s,
                acc.mem_bandwidth_bytes_per_s,
                acc.peak_record.provenance,
                acc.mem_bandwidth_record.provenance,
            )
        )
    eff = s.v("regen.mem_efficiency")
    lone = s.block_tokens
    memory_bytes = float(s.regen_bytes(0, "resident", lone))
    batch = s.batch_tokens
    rows = []
    for device, peak, bw, peak_prov, bw_prov in devices:
        memory = float(rl.memory_time_s(memory_bytes, bw, eff))
        for label in MFU_LABELS:
            mfu = s.mfu(label)
            row = {
                "device": device,
                "mfu_bracket": label,
                "mfu_pct": mfu * 100,
                "peak_TFLOPps": np.nan if peak is None else peak / 1e12,
                "mem_TBps": bw / 1e12,
                "compute_ms": np.nan,
                "memory_ms": memory * 1e3,
                "lone_block_ms": np.nan,
                "bound": "unknown: no published dense bf16 peak",
                "compute_bound_batch_tokens": np.nan,
                "batch_tokens": batch,
                "batched_ms": np.nan,
                "peak_provenance": peak_prov,
                "mem_provenance": bw_prov,
            }
            if peak is not None:
                kw = {"peak_flop_per_s": peak, "mem_bandwidth_bytes_per_s": bw}
                compute = float(s.regen_time_s(0, "resident", mfu, model="mfu", **kw))
                row.update(
                    compute_ms=compute * 1e3,
                    lone_block_ms=float(s.regen_time_s(0, "resident", mfu, model="roofline", batch_tokens=lone, **kw))
                    * 1e3,
                    bound="compute" if compute >= memory else "memory",
                    compute_bound_batch_tokens=float(
                        rl.compute_bound_batch_tokens(s.weight_bytes, lone, s.kv_bytes_per_token, 0, compute, bw, eff)
                    ),
                    batched_ms=float(s.regen_time_s(0, "resident", mfu, model="roofline", batch_tokens=batch, **kw))
                    * 1e3,
                )
            rows.append(row)
    return pd.DataFrame(rows)


def tiers(s: Scenario) -> pd.DataFrame:
    """Every link preset (and the set's three brackets): fetch time, ratio, break-even bandwidth.

    Regeneration follows the set's ``regen.model`` at the illustrative MFU, for the tail
    block and for the block at ``interior.position`` with the upstream resident or evicted.
    """
    from kvtier import hardware

    point = s.illustrative
    mfu = point["mfu"]
    p = s.v("interior.position")
    regen = {
        "tail": float(s.regen_time_s(0, "resident", mfu)),
        "resident": float(s.regen_time_s(p, "resident", mfu)),
        "evicted": float(s.regen_time_s(p, "evicted", mfu)),
    }
    links = [
        (
            f"bracket {label}",
            f"the assumption set's {label} bandwidth",
            s.bandwidth(label),
            "as stated",
            s.v("fetch_latency"),
            s.a(f"bandwidth.{label}").provenance,
            s.a("fetch_latency").provenance,
        )
        for label in BANDWIDTH_LABELS
    ]
    for name, link in hardware.load_links().items():
        links.append(
            (
                name,
                link.title,
                link.bandwidth_bytes_per_s,
                link.raw_or_net,
                link.latency_s,
                link.bandwidth_record.provenance,
                link.latency_record.provenance,
            )
        )
    rows = []
    for name, title, bw, raw_or_net, latency, bw_prov, lat_prov in links:
        fetch_s = float(costs.fetch_time_s(s.block_bytes, bw, latency))
        rows.append(
            {
                "link": name,
                "title": title,
                "bandwidth_GBps": bw / 1e9,
                "raw_or_net": raw_or_net,
                "latency_us": latency * 1e6,
                "fetch_us": fetch_s * 1e6,
                "ratio_tail": regen["tail"] / fetch_s,
                "ratio_resident": regen["resident"] / fetch_s,
                "ratio_evicted": regen["evicted"] / fetch_s,
                "break_even_tail_GBps": float(costs.bandwidth_for_ratio(s.block_bytes, regen["tail"], 1.0, latency))
                / 1e9,
                "fetch_wins_tail": fetch_s < regen["tail"],
                "bandwidth_provenance": bw_prov,
                "latency_provenance": lat_prov,
            }
        )
    return pd.DataFrame(rows)


def models(s: Scenario) -> pd.DataFrame:
    """Every model preset side by side (exact parameter counts from the configs).

    The set's own model is included when it is not a preset (a config.json path).  The
    ratio is at the set's illustrative point with each model's block and FLOPs.
    """
    from kvtier.models import PRESETS

    names = list(PRESETS)
    own = str(s.assumptions.value("model"))
    if own not in names:
        names.append(own)
    rows = []
    for name in names:
        m = Scenario(s.assumptions.with_values({"model": name, "param_count": None}, source="models table"))
        total, active = m.model.param_counts()
        fp8 = m.model.kv_bytes_per_token("fp8")
        point = m.illustrative
        rows.append(
            {
                "model": name,
                "attention": m.model.attention,
                "moe": m.model.is_moe,
                "layers": m.model.n_layers,
                "kv_heads": None if m.model.attention == "MLA" else m.model.n_kv_heads,
                "head_dim": None if m.model.attention == "MLA" else m.model.head_dim,
                "total_params_B": total / 1e9,
                "active_params_B": active / 1e9,
                "kv_KiB_per_token": m.kv_bytes_per_token / 1024,
                "kv_fp8_KiB_per_token": fp8 / 1024,
                "block_MiB": m.block_bytes / MIB,
                "weights_GiB": m.weight_bytes / GIB,
                "crossover_tokens": m.crossover_tokens,
                "crossover_fp8_kv_tokens": float(capacity_formulas.crossover_context_tokens(m.weight_bytes, fp8)),
                "max_positions": m.model.max_positions or None,
                "ratio_illustrative": point["ratio"],
                "note": model_note(m),
                "provenance": f"published-spec ({m.model.source}); derived",
            }
        )
    return pd.DataFrame(rows)


def uncertainty(s: Scenario) -> pd.DataFrame:
    """Monte Carlo statistics of the tail block's ratio (seeded, so reproducible)."""
    from kvtier import report

    n = report.uncertainty_numbers(s)
    basis = f"{n['draws']:,} {n['distribution']} draws, seed {n['seed']}"
    rows = [(f"p{q}", n[f"p{q}"], "ratio") for q in (5, 25, 50, 75, 95)]
    rows += [
        ("mean", n["mean"], "ratio"),
        ("below_100x", n["p_below_claim_pct"], "% of draws"),
        ("below_100x_standard_error", n["p_below_claim_se_pct"], "percentage points"),
        ("above_1000x", n["p_above_claim_pct"], "% of draws"),
    ]
    return pd.DataFrame(
        [{"statistic": k, "value": v, "unit": u, "basis": basis, "provenance": "derived"} for k, v, u in rows]
    )


def tornado(s: Scenario) -> pd.DataFrame:
    """One-at-a-time sensitivity of the ratio, widest swing first."""
    from kvtier import report
    from kvtier import uncertainty as mc

    ranges, base = report.uncertainty_inputs(s)
    rows = mc.tornado(s.block_bytes, s.block_flops, base, ranges, s.v("fetch_latency"))
    units = {"bandwidth": ("GB/s", 1e9), "mfu": ("%", 0.01), "peak": ("TFLOP/s", 1e12)}
    return pd.DataFrame(
        [
            {
                "input": r.name,
                "unit": units[r.name][0],
                "low": r.low_value / units[r.name][1],
                "high": r.high_value / units[r.name][1],
                "ratio_at_low": r.ratio_at_low,
                "ratio_at_high": r.ratio_at_high,
                "swing": r.swing,
                "provenance": "derived",
            }
            for r in rows
        ]
    )


def model_note(s: Scenario) -> str:
    """What a reader must know before trusting a model's capacity row (empty if nothing)."""
    m = s.model
    notes = []
    if m.sliding_window and m.sliding_layers < m.n_layers:
        notes.append(
            f"sliding-window attention over {m.sliding_window:,} tokens on {m.sliding_layers} of {m.n_layers}"
            " layers: only those stop growing; the other layers' cache grows with the context"
        )
    elif m.sliding_window:
        capped = s.kv_bytes_per_token * m.sliding_window
        notes.append(
            f"sliding-window attention: the cache stops growing at {m.sliding_window:,} tokens"
            f" ({capped / GIB:.2f} GiB), so the crossover is never reached"
            if capped < s.weight_bytes
            else f"sliding-window attention over {m.sliding_window:,} tokens"
        )
    if m.max_positions and s.crossover_tokens > m.max_positions:
        notes.append(f"crossover beyond the {m.max_positions:,} positions the config allows")
    if m.weight_quantization:
        notes.append(
            f"weights published as {m.weight_quantization}; weights_GiB assumes"
            f" weight_dtype = {s.assumptions.value('weight_dtype')}"
        )
    return "; ".join(notes)


@dataclass(frozen=True)
class Table:
    """A table of record: its name, the notebook that presents it, its builder.

    ``key`` names the columns that identify a row, so that two runs can be compared
    row by row (:mod:`kvtier.diff`); every other column is a value.
    """

    name: str
    notebook: str
    build: Callable[[Scenario], pd.DataFrame]
    key: tuple[str, ...]


TABLES: tuple[Table, ...] = (
    Table("assumptions", "00_assumptions", assumptions, ("key",)),
    Table("block_unit", "01_block_unit", block_unit, ("quantity",)),
    Table("fetch", "02_fetch", fetch, ("bracket",)),
    Table("regenerate", "03_regenerate", regenerate, ("bracket",)),
    Table("ratio", "04_ratio", ratio, ("bandwidth_bracket", "mfu_bracket")),
    Table("interior", "05_interior", interior, ("upstream", "position_tokens")),
    Table("capacity", "06_capacity", capacity, ("point",)),
    Table("roofline", "07_roofline", roofline, ("device", "mfu_bracket")),
    Table("tiers", "08_tiers", tiers, ("link",)),
    Table("models", "09_models", models, ("model",)),
    Table("uncertainty", "10_uncertainty", uncertainty, ("statistic",)),
    Table("tornado", "10_uncertainty", tornado, ("input",)),
)


def to_csv_text(df: pd.DataFrame) -> str:
    """The CSV text of a table of record: ``%.10g`` floats, ``\\n`` line ends."""
    return df.to_csv(index=False, float_format="%.10g", lineterminator="\n")


def csv_texts(s: Scenario) -> dict[str, str]:
    """The CSV text of every table of record, by name (computing them validates the scenario)."""
    return {table.name: to_csv_text(table.build(s)) for table in TABLES}


def write_csv_texts(texts: dict[str, str], directory: str | Path) -> list[Path]:
    """Write ``NAME.csv`` for each table text under ``directory``; return the paths."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, text in texts.items():
        path = directory / f"{name}.csv"
        path.write_text(text, encoding="utf-8", newline="\n")
        paths.append(path)
    return paths


def write_tables(s: Scenario, directory: str | Path) -> list[Path]:
    """Write every table of record as ``NAME.csv`` under ``directory``; return the paths."""
    return write_csv_texts(csv_texts(s), directory)


def formatted(df: pd.DataFrame, digits: dict[str, int] | None = None) -> pd.DataFrame:
    """A display copy: floats rounded per column (default 2 decimals), thousands separators.

    A float column whose values are all whole numbers is shown as integers; a missing
    value (NaN, None) as "n/a".
    """
    digits = digits or {}
    out = df.copy()
    for col in out.columns:
        values = out[col]
        if pd.api.types.is_float_dtype(values) or (values.dtype == object and values.map(_is_number).all()):
            numbers = pd.to_numeric(values, errors="coerce")
            whole = bool(numbers.dropna().map(float.is_integer).all()) and col not in digits
            d = 0 if whole else digits.get(col, 2)
            out[col] = ["n/a" if pd.isna(x) else f"{x:,.{d}f}" for x in numbers]
        elif pd.api.types.is_integer_dtype(values) and col.endswith("tokens"):
            out[col] = [f"{x:,}" for x in values]
    return out


def _is_number(x: object) -> bool:
    return x is None or (isinstance(x, (int, float)) and not isinstance(x, bool))
