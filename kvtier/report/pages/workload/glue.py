"""The workload page's numbers: every figure its prose quotes, by glue name, gathered from its parts."""

from __future__ import annotations

import math
from typing import Any

from kvtier.formulas.cache.report import TARGETS_PCT
from kvtier.report import words
from kvtier.report.pages.workload.admission import admission_numbers
from kvtier.report.pages.workload.fleet import fleet_numbers
from kvtier.report.pages.workload.mooncake import mooncake_numbers
from kvtier.report.pages.workload.over_time import over_time_numbers, window_numbers
from kvtier.report.pages.workload.policies import policy_numbers
from kvtier.report.pages.workload.sampling import sampling_numbers
from kvtier.report.pages.workload.summary import (
    LINKS_NAMED,
    SHOWN_TARGET,
    TIB,
    contrast_name,
    curve,
    engine_grid_sentence,
    link_of,
    lone_numbers,
    lone_over_in_batch,
    report,
    tier_of,
    trace_name,
    trace_summary,
    zero_interval_pct,
)
from kvtier.report.pages.workload.words import page_words
from kvtier.scenario import Scenario


def numbers(s: Scenario) -> dict[str, Any]:
    """The trace, its reuse, the capacity per target and what the tier saves, in both regimes.

    A figure the trace leaves undefined is ``None``, never NaN: a reuse interval of a trace
    with no reuse, a rate of a trace that lasts 0 s.  The sentences the prose quotes
    (``*_sentence``, ``*_paragraph``, ``*_clause``) say what such a trace gives in words.
    """
    name, other = trace_name(s), contrast_name(s)
    rep, con = report(s, name), report(s, other)
    t, c = trace_summary(s, name), trace_summary(s, other)
    record = s.a("workload.trace")
    shown = tier_of(rep, SHOWN_TARGET)
    whole = tier_of(rep, 100)
    out: dict[str, Any] = {
        "trace": name,
        "trace_provenance": record.provenance,
        "trace_source": record.source,
        "contrast": other,
        "model_name": s.model.name,
        "window_sentence": words.window_sentence(s),
        "priced_sentence": words.priced_sentence(s),
        "kv_dtype": s.kv_dtype,
        "trace_block_tokens": rep["trace"]["block_tokens"],
        "requests": t["requests"],
        "duration_min": t["duration_s"] / 60,
        "requests_per_s": t["requests_per_second"],
        "input_p50_tokens": t["input_p50_tokens"],
        "input_p90_tokens": t["input_p90_tokens"],
        "input_p99_tokens": t["input_p99_tokens"],
        "output_p50_tokens": t["output_p50_tokens"],
        "references": t["block_references"],
        "unique_blocks": t["unique_blocks"],
        "refs_per_request": t["block_references"] / t["requests"],
        "hit_inf_blocks_pct": t["hit_infinite_blocks_pct"],
        "hit_inf_tokens_pct": t["hit_infinite_tokens_pct"],
        "prefix_ok_requests": t["requests"] - t["requests_distance_falls"],
        "hit_after_miss_requests": t["requests_hit_after_miss"],
        "falling_requests": t["requests_distance_falls"],
        "kv_kib_per_token": rep["kv_bytes_per_token"] / 1024,
        "block_mib": rep["block_bytes"] / 2**20,
        "unique_tib": t["unique_tib"],
        "reuse_p50_min": t["reuse_p50_s"] / 60,
        "reuse_p90_min": t["reuse_p90_s"] / 60,
        "reuse_p99_min": t["reuse_p99_s"] / 60,
        "reuse_max_min": t["reuse_max_s"] / 60,
        "reuse_zero_pct": zero_interval_pct(curve(s, name)),
        "mfu_pct": rep["regen"]["mfu"] * 100,
        "peak_tflops": rep["regen"]["peak_flop_per_s"] / 1e12,
        "lone_device": words.lone_device(s),
        **{f"regen_{k}": v for k, v in words.regen_pricing(s).items()},
        "engine_grid_sentence": engine_grid_sentence(rep),
        "inf_in_batch_gpus": whole["in_batch_gpu_s_per_s"],
        "inf_lone_gpus": whole["lone_gpu_s_per_s"],
        "lone_memory_bound_pct": whole["lone_memory_bound_share"] * 100,
        "lone_over_in_batch": lone_over_in_batch(s, name),
        **lone_numbers(s, rep),
        "cap100_tib": whole["capacity_bytes"] / TIB,
        "shown_target_pct": SHOWN_TARGET,
        "targets_text": ", ".join(f"{x:g}" for x in TARGETS_PCT[:-1]) + f" and {TARGETS_PCT[-1]:g} %",
        "shown_tib": shown["capacity_bytes"] / TIB,
        "shown_share_of_unique_pct": shown["capacity_blocks"] / t["unique_blocks"] * 100
        if t["unique_blocks"]
        else math.nan,
        "shown_in_batch_gpus": shown["in_batch_gpu_s_per_s"],
        "shown_lone_gpus": shown["lone_gpu_s_per_s"],
        "shown_hit_gbps": shown["hit_bytes_per_s"] / 1e9,
    }
    for target in TARGETS_PCT:
        tier = tier_of(rep, target)
        out[f"cap{target}_tib"] = tier["capacity_bytes"] / TIB
        out[f"cap{target}_blocks"] = int(tier["capacity_blocks"])
        out[f"cap{target}_hit_blocks_pct"] = tier["hit_ratio_blocks"] * 100
        out[f"cap{target}_in_batch_gpus"] = tier["in_batch_gpu_s_per_s"]
    for link in LINKS_NAMED:
        key = link.replace("-", "_")
        k = link_of(shown, link)
        out[f"{key}_busy_pct"] = k["fetch_link_s_per_s"] * 100
        out[f"{key}_in_batch_ratio"] = k["in_batch_over_fetch"]
        out[f"{key}_lone_ratio"] = k["lone_over_fetch"]
    out.update(
        {
            "contrast_requests": c["requests"],
            "contrast_duration_min": c["duration_s"] / 60,
            "contrast_hit_inf_blocks_pct": c["hit_infinite_blocks_pct"],
            "contrast_shown_tib": tier_of(con, SHOWN_TARGET)["capacity_bytes"] / TIB,
            "contrast_unique_tib": c["unique_tib"],
            "contrast_reuse_p50_min": c["reuse_p50_s"] / 60,
            "contrast_inf_in_batch_gpus": tier_of(con, 100)["in_batch_gpu_s_per_s"],
            "contrast_prefix_ok_requests": c["requests"] - c["requests_distance_falls"],
        }
    )
    out.update(page_words(s, rep, out))
    out.update(policy_numbers(s))
    out.update(sampling_numbers(s))
    out.update(over_time_numbers(s))
    out.update(window_numbers(s))
    out.update(mooncake_numbers(s))
    out.update(fleet_numbers(s))
    out.update(admission_numbers(s))
    return {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in out.items()}
