"""The cost page's numbers: every figure its prose quotes, by glue name, gathered from its parts."""

from __future__ import annotations

import math
from typing import Any

from kvtier.inputs import measurements as ms
from kvtier.inputs.keys import SCHEMA
from kvtier.report import words
from kvtier.report.fleet import fleet_cost_numbers
from kvtier.report.pages.cost.hierarchy import hierarchy_numbers
from kvtier.report.pages.cost.intervals import CXL_TIER, REGIMES, block_sizes, duration, finite_or_nan, intervals, mfu
from kvtier.report.pages.cost.mix import mix_numbers
from kvtier.report.pages.cost.tiers import lru_numbers
from kvtier.report.pages.cost.tornado import tornado
from kvtier.report.pages.cost.words import finding_sentence
from kvtier.report.words import capitalized
from kvtier.scenario import Scenario


def numbers(s: Scenario) -> dict[str, Any]:
    """The page's numbers: block costs, the CXL and HBM intervals, the tornado's verdict, the trace's mix.

    A figure a trace leaves undefined (a rate of a trace that lasts 0 s, a share of no reuse)
    is ``None``, never NaN; the prose quotes the sentences that say why.
    """
    grid = intervals(s)
    small, large = block_sizes(s)
    out: dict[str, Any] = {
        "small_tokens": small,
        "window_sentence": words.window_sentence(s),
        "priced_sentence": words.priced_sentence(s),
        "large_tokens": large,
        "mfu_pct": mfu(s) * 100,
        "lone_device": words.lone_device(s),
        **{f"regen_{k}": v for k, v in words.regen_pricing(s).items()},
        "n_tiers": len(grid[(small, "lone")].tiers),
        "accelerator_hour_text": s.a("cost.accelerator_hour").text,
        "hbm_share_pct": s.v("cost.hbm_share") * 100,
        "hbm_capacity_text": s.a("cost.hbm_capacity").text,
        "forward16_measured_j": s.v("reference.h200_forward16_energy"),
        "power_lone_w": s.v("energy.power_lone"),
        "power_batch_w": s.v("energy.power_batch"),
    }
    for tokens, label in ((small, "small"), (large, "large")):
        for regime in REGIMES:
            iv = grid[(tokens, regime)]
            out[f"{label}_{regime}_regen_ms"] = iv.regen_s * 1e3
            out[f"{label}_{regime}_recompute_usd"] = iv.recompute_usd
            out[f"{label}_{regime}_recompute_j"] = iv.recompute_j
            for unit in ("usd", "j"):
                for tier in ("hbm", CXL_TIER, "pcie5-x16", "nvme-gen4-x4"):
                    name = tier.replace("-", "_")
                    out[f"{label}_{regime}_{name}_keep_{unit}"] = duration(iv.at(tier)[f"keep_{unit}_s"])
    out["large_lone_bound"] = grid[(large, "lone")].block.bound_in("lone")
    out["small_lone_model_j"] = out["small_lone_recompute_j"]
    off = (out["small_lone_recompute_j"] / out["forward16_measured_j"] - 1) * 100
    out["energy_model_vs_measured_pct"] = off
    out["energy_model_vs_measured"] = f"{abs(off):.1f} % {'below' if off < 0 else 'above'}"
    held = ms.energy_check(ms.load())
    out["energy_held_out"] = (
        f"{abs(held['held_out_error_pct']):.1f} % {'below' if held['held_out_error_pct'] < 0 else 'above'}"
    )
    out["energy_held_out_j"] = held["held_out_measured_j"]
    small_lone = grid[(small, "lone")]
    out["hbm_over_cxl"] = duration(small_lone.at(CXL_TIER)["hbm_over_tier_s"])
    out["hbm_over_nvme"] = duration(small_lone.at("nvme-gen4-x4")["hbm_over_tier_s"])
    t = tornado(s)
    top, second = t[0], t[1]
    out["tornado_top_key"] = str(top["input"])
    out["tornado_top_words"] = SCHEMA[str(top["input"])].help
    out["tornado_top_words_cap"] = capitalized(out["tornado_top_words"])
    out["tornado_top_swing"] = finite_or_nan(top["swing_usd"])
    ends = (finite_or_nan(top["keep_usd_at_low_s"]), finite_or_nan(top["keep_usd_at_high_s"]))
    out["tornado_top_low"] = duration(min(ends))
    out["tornado_top_high"] = duration(max(ends))
    out["tornado_second_key"] = str(second["input"])
    out["tornado_second_words"] = SCHEMA[str(second["input"])].help
    out["tornado_second_swing"] = finite_or_nan(second["swing_usd"])
    jt = max(t, key=lambda r: -math.inf if r["swing_j"] is None else r["swing_j"])  # the first of the widest
    out["tornado_top_j_key"] = str(jt["input"])
    out["tornado_top_j_words"] = SCHEMA[str(jt["input"])].help
    out["tornado_top_j_swing"] = finite_or_nan(jt["swing_j"])
    out["cxl_shortest_keep"] = duration(min(iv.at(CXL_TIER)["keep_usd_s"] for iv in grid.values()))
    out.update(mix_numbers(s))
    out.update(lru_numbers(s, out))
    out.update(hierarchy_numbers(s))
    out.update(fleet_cost_numbers(s))
    out["mix_finding_sentence"] = finding_sentence(out)
    out["lead_sentence"] = capitalized(out["mix_finding_sentence"]) + "."  # the page's answer, on its first screen
    return {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in out.items()}
