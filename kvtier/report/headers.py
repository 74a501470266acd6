"""Column headers a reader can read: words and a unit, derived from a table of record's column names.

The tables of record (``book/tables/*.csv``) name their columns as code does, with the unit as
a suffix (``fetch_us``, ``break_even_tail_GBps_per_layer``); the book shows each as words
with the unit in parentheses ("fetch time (µs)", "break-even bandwidth, in a batch, per-layer
transfers (GB/s)") and keeps the name in the cell's ``title`` (shown on hover).

:func:`header` reads a name in four steps: the unit suffix (:data:`UNITS`), the layout suffix
(:data:`LAYOUTS`), the regime (a ``lone_`` prefix, ``in_batch`` or ``lone`` or ``batch``
inside the name; a name whose ``lone_`` twin sits in the same table is the in-batch one),
then the stem in words (:data:`STEMS`, else word by word with :data:`WORDS`).  Names no rule
makes readable are spelled out whole in :data:`OVERRIDES`.  Cell words for booleans come from
:func:`bool_words`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

UNITS: tuple[tuple[str, str], ...] = (
    ("_usd_per_TB_month", "USD per TB-month"),
    ("_usd_per_1M", "USD per million"),
    ("_usd_per_h", "USD/h"),
    ("_mW_per_GB", "mW/GB"),
    ("_KiB_per_token", "KiB/token"),
    ("_TFLOPps", "TFLOP/s"),
    ("_TFLOP", "TFLOP"),
    ("_GBps", "GB/s"),
    ("_TBps", "TB/s"),
    ("_KiB", "KiB"),
    ("_MiB", "MiB"),
    ("_GiB", "GiB"),
    ("_TiB", "TiB"),
    ("_us", "µs"),
    ("_ms", "ms"),
    ("_s", "s"),
    ("_h", "h"),
    ("_pct", "%"),
    ("_J", "J"),
    ("_W", "W"),
    ("_tokens", "tokens"),
    ("_B", "billions"),
)
"""Unit suffixes of column names and the unit as shown, longest first where one ends another."""

LAYOUTS: dict[str, str] = {"_contiguous": "contiguous", "_per_layer": "per-layer transfers"}
"""Layout suffixes (after the unit) and their words."""

LONE = "lone block"
BATCH = "in a batch"

STEMS: dict[str, str] = {
    "fetch": "fetch time",
    "regen": "regeneration time",
    "ratio": "regeneration / fetch",
    "ratio_tail": "regeneration / fetch",
    "ratio_resident": "regeneration / fetch, interior block, upstream resident",
    "ratio_evicted": "regeneration / fetch, interior block, upstream evicted",
    "ratio_to_fetch": "regeneration / fetch",
    "ratio_illustrative": "regeneration / fetch, illustrative point",
    "break_even": "break-even bandwidth",
    "break_even_tail": "break-even bandwidth",
    "break_even_latency": "break-even latency",
    "break_even_latency_tail": "break-even latency",
    "break_even_transfers": "break-even transfers",
    "fetch_wins": "verdict",
    "fetch_wins_tail": "verdict",
    "within_claim": "within the chapter's claim",
    "orders_of_magnitude": "orders of magnitude",
    "bound": "bound by",
    "block": "regeneration time",
    "mfu": "MFU",
    "peak": "peak compute",
    "mem": "memory bandwidth",
    "compute": "compute time",
    "memory": "memory time",
    "floor": "floor time",
    "roofline": "roofline time",
    "blended": "blended time",
    "measured": "measured",
    "model": "model",
    "min": "fastest",
    "max": "slowest",
    "error": "error",
    "bandwidth": "bandwidth",
    "latency": "latency",
    "kv": "KV cache",
    "kv_fp8": "KV cache in FP8",
    "weights": "weights",
    "kv_share_of_weights": "KV cache / weights",
    "context": "context",
    "position": "position",
    "crossover": "crossover context",
    "crossover_fp8_kv": "crossover context, FP8 KV cache",
    "max_positions": "longest context",
    "total_params": "parameters",
    "active_params": "active parameters",
    "kv_heads": "KV heads",
    "head_dim": "head dimension",
    "moe": "experts",
    "last_block": "regeneration time of the last block",
    "last_block_ratio": "regeneration / fetch, last block",
    "last_block_bound": "last block bound by",
    "hold": "holding cost",
    "recompute": "one recomputation",
    "capacity": "capacity",
    "hit_blocks": "hits, share of blocks",
    "hit_tokens": "hits, share of tokens",
    "hit": "hits",
    "capacity_blocks": "capacity in blocks",
    "recompute_over_fetch": "recompute / fetch",
    "prefill_avoided_gpus": "accelerators saved",
    "memory_bound": "memory-bound",
    "saving": "saving",
    "swing": "swing",
    "swing_usd": "swing, by dollars",
    "swing_J": "swing, by energy",
    "no_mask": "attention, no mask",
    "causal": "attention, causal mask",
    "no_mask_over_model": "no mask / model",
    "causal_over_model": "causal mask / model",
    "tokens_computed": "tokens computed",
    "flips_at": "flips at",
    "ratio_at_low": "regeneration / fetch, input at its low end",
    "ratio_at_high": "regeneration / fetch, input at its high end",
    "bandwidth_margin": "bandwidth / break-even",
    "latency_margin": "break-even / latency",
    "saved": "saved",
    "raw_or_net": "raw or net bandwidth",
    "latency_key": "latency assumption",
    "value_si": "value in SI units",
    "unit_si": "SI unit",
    "in_fit": "in the fit",
    "mfu_provenance": "MFU provenance",
    "peak_provenance": "peak provenance",
    "mem_provenance": "memory bandwidth provenance",
    "largest_tier": "tier holding most",
    "mix": "mix cost",
    "read_busy": "reads busy",
    "write_busy": "writes busy",
    "nvme_wear": "NVMe wear",
    "device_read": "device read bandwidth",
    "device_write": "device write bandwidth",
    "read": "read bandwidth",
    "write": "write bandwidth",
    "drive_writes_per_day": "drive writes per day",
}
"""Stems (a name without unit, layout and regime) spelled out in words."""

WORDS: dict[str, str] = {
    "mfu": "MFU",
    "kv": "KV",
    "hbm": "HBM",
    "cxl": "CXL",
    "dram": "DRAM",
    "nvme": "NVMe",
    "usd": "USD",
    "fp8": "FP8",
    "gpus": "accelerators",
    "regen": "regeneration",
    "J": "J",
}
"""Single words of a stem shown otherwise (acronyms, abbreviations)."""

_END_WORDS = {"at_low": "at the low end", "at_high": "at the high end", "base": "at the base value"}

OVERRIDES: dict[str, str] = {
    "tp": "tensor-parallel size",
    "pp": "pipeline stages",
    "ep": "expert-parallel size",
    "shard_share": "share of the block per accelerator",
    "shard_KiB": "shard per accelerator (KiB)",
    "link_KiB": "bytes over one link (KiB)",
    "lone_collectives_ms": "collectives, lone block (ms)",
    "lone_collectives_share": "collectives' share, lone block",
    "rank_memory_GB": "memory per accelerator (GB)",
    "fits": "fits in memory",
    "experts_touched": "experts touched per MoE layer",
    "lone_weights_read_GB": "weights read per accelerator, lone block (GB)",
    "weights_GB": "weights (GB)",
    "bandwidth_per_gpu_GBps": "bandwidth per accelerator (GB/s)",
    "block_bytes": "block (bytes)",
    "layer_overlap": "loads layer by layer under the pass",
    "hit_share": "share of achievable hits",
    "capacity_bytes": "tier capacity (bytes)",
    "prefix_hit_token_share": "prompt tokens from the tier",
    "ttft_p50_s": "time to first token, median (s)",
    "ttft_p90_s": "time to first token, p90 (s)",
    "ttft_p99_s": "time to first token, p99 (s)",
    "ttft_mean_s": "time to first token, mean (s)",
    "fetch_mean_s": "fetch, mean (s)",
    "gpu_saved_s": "accelerator time saved (s)",
    "gpu_saved_s_per_s": "accelerators saved",
    "fetch_per_token_us.pcie5-x16": "fetch per token, pcie5-x16 (µs)",
    "fetch_block_us.pcie5-x16": "fetch of one block, pcie5-x16 (µs)",
    "fetch_per_token_us.cxl2-x8": "fetch per token, cxl2-x8 (µs)",
    "fetch_block_us.cxl2-x8": "fetch of one block, cxl2-x8 (µs)",
    "fetch_per_token_us.nvme-gen4-x4": "fetch per token, nvme-gen4-x4 (µs)",
    "fetch_block_us.nvme-gen4-x4": "fetch of one block, nvme-gen4-x4 (µs)",
    "lru_hit_pct": "LRU hits (%)",
    "leaf_lru_hit_pct": "leaf-first LRU hits (%)",
    "s3fifo_hit_pct": "S3-FIFO hits (%)",
    "min_hit_pct": "Belady's MIN hits (%)",
    "lru_of_min_pct": "LRU's share of MIN's hits (%)",
    "sample_rate_pct": "sampling rate (%)",
    "sampled_references": "sampled references",
    "mean_abs_error_pts": "mean absolute error of the hit ratio (points)",
    "max_abs_error_pts": "largest absolute error of the hit ratio (points)",
    "window_min": "window (min)",
    "warmup_min": "warm-up before each window (min)",
    "mean_gap_pts": "mean gap to the single pass (points)",
    "max_gap_pts": "largest gap to the single pass (points)",
    "per_accelerator_GiB": "capacity per accelerator (GiB)",
    "hierarchy_hit_blocks_pct": "whole hierarchy's hits (%)",
    "hierarchy_usd_per_h": "whole hierarchy's cost (USD/h)",
    "compute_bound_batch_tokens": "smallest compute-bound batch (tokens)",
    "batch_tokens": "batch (tokens)",
    "batched_ms": "block inside the batch (ms)",
    "lone_block_ms": "regeneration time, lone block (ms)",
    "lone_block_ratio": "regeneration / fetch, lone block (×)",
    "in_batch_ratio": "regeneration / fetch, in a batch (×)",
    "lone_regen_ms": "regeneration time, lone block (ms)",
    "hbm_over_tier_small_s": "worth keeping in HBM over this tier, small block (s)",
    "hbm_over_tier_large_s": "worth keeping in HBM over this tier, large block (s)",
    "hbm_over_tier_small": "worth keeping in HBM over this tier, small block",
    "hbm_over_tier_large": "worth keeping in HBM over this tier, large block",
    "recompute_usd_per_1M": "one million recomputations (USD)",
    "recompute_J": "one recomputation (J)",
    "fetch_usd_per_h": "fetching (USD/h)",
    "hold_usd_per_h": "holding (USD/h)",
    "recompute_all_usd_per_h": "recomputing every reuse (USD/h)",
    "hold_usd_per_TB_month": "holding (USD per TB-month)",
    "hold_mW_per_GB": "holding power (mW/GB)",
    "prefill_batch_accelerators": "accelerators prefilling, in a batch",
    "saved_batch_accelerators": "accelerators saved, in a batch",
    "low_si": "low end (SI units)",
    "high_si": "high end (SI units)",
    "flips_at_si": "flips at (SI units)",
    "flips_at_times": "flips at (× the value)",
    "kv_MiB_one_layer": "KV cache, one layer (MiB)",
    "regen_TFLOP": "regeneration work (TFLOP)",
    "block_TFLOP": "work per block (TFLOP)",
    "block_MiB": "block (MiB)",
    "block_tokens": "block (tokens)",
    "model_provenance": "model provenance",
    "measured_provenance": "measured provenance",
    "bandwidth_provenance": "bandwidth provenance",
    "latency_provenance": "latency provenance",
    "requests_per_second": "requests per second",
    "block_references": "block references",
    "unique_blocks": "unique blocks",
    "requests_hit_after_miss": "requests hit after a miss",
    "requests_distance_falls": "requests whose reuse distance falls",
    "bandwidth_bracket": "bandwidth bracket",
    "mfu_bracket": "MFU bracket",
}
"""Whole names (with their unit) that the rules would not make readable."""

_KEEP = re.compile(r"^keep_(usd|J)_(small|large)_(lone|batch)_h$")
_KEEP_END = re.compile(r"^keep_(usd|J)_(at_low|at_high|base)_h$")
_MIX_END = re.compile(r"^mix_usd_per_h_(at_low|at_high|base)$")
_LARGEST_END = re.compile(r"^largest_tier_(at_low|at_high|base)$")
_SHARE = re.compile(r"^share_(\w+)_pct$")
_PEAK = re.compile(r"^(hbm|dram|cxl|nvme)(_peak)?_GiB$")


def _patterned(name: str) -> str | None:
    """The header of a name in one of the cost page's families (a tier, an end, a regime per name)."""
    by = {"usd": "dollars", "J": "energy"}
    if m := _KEEP.match(name):
        regime = LONE if m[3] == "lone" else BATCH
        return f"worth keeping by {by[m[1]]}, {m[2]} block, {regime} (h)"
    if m := _KEEP_END.match(name):
        return f"worth keeping by {by[m[1]]}, {_END_WORDS[m[2]]} (h)"
    if m := _MIX_END.match(name):
        return f"mix cost, {_END_WORDS[m[1]]} (USD/h)"
    if m := _LARGEST_END.match(name):
        return f"tier holding most, {_END_WORDS[m[1]]}"
    if m := _SHARE.match(name):
        return f"served by {WORDS.get(m[1], m[1])} (%)"
    if m := _PEAK.match(name):
        return f"{WORDS[m[1]]} held{', peak' if m[2] else ', mean'} (GiB)"
    return None


def _split_regime(stem: str) -> tuple[str, str]:
    """``stem`` without its regime words, and the regime ("" when the name names none)."""
    for prefix, regime in (("lone_", LONE), ("in_batch_", BATCH)):
        if stem.startswith(prefix):
            return stem[len(prefix) :], regime
    for word, regime in (("in_batch", BATCH), ("lone", LONE), ("batch", BATCH)):
        parts = stem.split("_")
        words = word.split("_")
        for i in range(1, len(parts) - len(words) + 1):
            if parts[i : i + len(words)] == words:
                return "_".join(parts[:i] + parts[i + len(words) :]), regime
    return stem, ""


def header(name: str, columns: Iterable[str] = (), unit: bool = True) -> str:
    """The header a reader sees for column ``name`` of a table with ``columns``.

    Parameters
    ----------
    name : str
        The column's name in the table of record.
    columns : iterable of str
        Every column of the table (a name whose ``lone_`` twin is among them is the in-batch one).
    unit : bool
        Whether the unit goes in the header (False where each cell carries its own unit).

    Returns
    -------
    str
        Words, the regime and layout after commas, the unit in parentheses; never an underscore.
    """
    name = str(name)
    if " " in name:  # already words (a page's display name)
        return name
    found = OVERRIDES.get(name) or _patterned(name)
    if found is not None:
        return found if unit else re.sub(r" \([^)]*\)$", "", found)
    stem, shown_unit = name, ""
    for suffix, words in LAYOUTS.items():
        if stem.endswith(suffix):
            layout, stem = words, stem[: -len(suffix)]
            break
    else:
        layout = ""
    for suffix, text in UNITS:
        if stem.endswith(suffix) and len(stem) > len(suffix):
            stem, shown_unit = stem[: -len(suffix)], text
            break
    if stem in ("ratio", "ratio_tail") or "ratio" in stem.split("_") or stem.endswith("_over_model"):
        shown_unit = shown_unit or "×"
    base, regime = _split_regime(stem)
    if not regime and f"lone_{name}" in set(map(str, columns)):
        regime = BATCH
    words = STEMS.get(base) or " ".join(WORDS.get(w, w) for w in base.split("_") if w)
    text = ", ".join(part for part in (words, regime, layout) if part)
    return f"{text} ({shown_unit})" if unit and shown_unit else text


SOFT_BREAKS: dict[str, str] = {
    "regeneration": "regen-eration",
    "recomputation": "recom-putation",
    "recomputations": "recom-putations",
    "recomputing": "recom-puting",
    "contiguous": "con-tiguous",
    "transfers": "trans-fers",
    "provenance": "prov-enance",
    "accelerators": "accel-erators",
    "interior": "inte-rior",
    "prefilling": "pre-filling",
    "crossover": "cross-over",
    "parameters": "param-eters",
    "evicted": "evict-ed",
    "resident": "resi-dent",
}
"""Long header words and where they may break (``-``), so that a narrow column need not widen for them."""


def soft_hyphenated(text: str) -> str:
    """``text`` with a soft hyphen (U+00AD) where each long word of :data:`SOFT_BREAKS` may break."""
    return re.sub(
        r"[A-Za-z]+",
        lambda m: SOFT_BREAKS.get(m[0], m[0]).replace("-", "\u00ad") if m[0] in SOFT_BREAKS else m[0],
        text,
    )


BOOL_WORDS: dict[str, tuple[str, str]] = {
    "fetch_wins": ("fetch", "regenerate"),
    "within_claim": ("yes", "no"),
    "in_fit": ("in the fit", "left out"),
    "moe": ("mixture of experts", "dense"),
    "illustrative": ("the illustrative point", ""),
    "decision": ("the decision's capacity", ""),
}
"""Words for True and False per column (its name without regime, layout and position words)."""

DEFAULT_BOOL_WORDS = ("yes", "no")


def bool_words(name: str) -> tuple[str, str]:
    """The words a boolean column ``name`` shows for True and for False."""
    stem = re.sub(r"^(lone_|in_batch_)", "", str(name))
    stem = re.sub(r"(_tail)?(_contiguous|_per_layer)?$", "", stem)
    return BOOL_WORDS.get(stem, DEFAULT_BOOL_WORDS)
