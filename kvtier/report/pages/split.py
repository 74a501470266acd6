"""The split page: a reused prefix's head computed while its tail is fetched, against regenerating and fetching.

Every number is :func:`kvtier.formulas.split.best_split` for the deployment the trace pages price
(:func:`kvtier.analysis.priced`), over a ladder of prefix lengths and over the trace's requests at the hit target
(:func:`kvtier.report.serving.split_grid`, :func:`kvtier.report.serving.split_ttft_rows`). Nothing here is a formula.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from kvtier import analysis
from kvtier.formulas import costs, hidden, tiering
from kvtier.formulas import split as split_formulas
from kvtier.inputs import measurements as ms
from kvtier.inputs.models import PRESETS, load_model
from kvtier.inputs.published import published, setups
from kvtier.report import papers, serving, words
from kvtier.report.columns import Column, declare, named
from kvtier.report.figures import MIN_FONT_PT, PALETTE, finish, new_figure, plain_log_ticks
from kvtier.report.named import MEDIUM_WORDS
from kvtier.report.preview import shown_text
from kvtier.scenario import POINT_KEYS, Scenario

if TYPE_CHECKING:
    from matplotlib.figure import Figure

NOTEBOOK = "16_split"
"""The page's text notebook, ``notebooks/NOTEBOOK.md``."""
TITLE = "fetching and regenerating at once"
"""The page's name as another page writes it mid-sentence (the registry's ``Page.title``)."""

SCENARIO = analysis.priced
"""The page presents the deployment the trace pages price (``workload.deployment``)."""

REGIME = "lone"
"""The regime the lead sentences and the figure use: a request's prefill is its own forward pass (as the serving
page's TTFT); the tables hold both."""

KEYS: tuple[str, ...] = tuple(dict.fromkeys((*POINT_KEYS, *serving.KEYS, "context.long", "workload.deployment")))
"""The assumption keys the page reads."""

FIGURE_POINTS = 33
"""Prefix lengths the figure draws, evenly spaced on a log scale from one block to the model's window."""

GAIN_MARK = 1.01
"""The figure marks the shortest prefix the split serves at least 1 % faster than the better pure way."""

REGIME_WORDS = {"lone": "alone", "batch": "inside a batch"}
"""The regimes as the prose names them."""

GRID_COLUMNS = (
    Column("regime", "regime"),
    Column("tier", "tier"),
    Column("prefix_tokens", "prefix", "tokens"),
    Column("new_tokens", "new tokens", "tokens"),
    Column("regenerate_ms", "regenerate", "ms"),
    Column("fetch_ms", "fetch, then prefill", "ms"),
    Column("overlap_ms", "fetch layer by layer", "ms"),
    Column("split_tokens", "split, tokens computed", "tokens"),
    Column("split_ms", "split", "ms"),
    Column("gain", "split's gain", "×"),
    *named("fastest"),
)

TTFT_COLUMNS = (
    Column("regime", "regime"),
    Column("tier", "tier"),
    Column("hit_share", "share of the achievable hits the tier is sized for", "%"),
    *(Column(f"ttft_{q}_s", f"TTFT {q}, the engine's way", "s") for q in ("p50", "p90", "p99")),
    *(Column(f"ttft_{q}_s_split", f"TTFT {q}, with the split", "s") for q in ("p50", "p90", "p99")),
    Column("split_share_pct", "requests the split serves faster", "%"),
)


HIDDEN_COLUMNS = (
    Column("model", "model"),
    Column("attention", "attention"),
    Column("kv_KiB_per_token", "KV per token", "KiB"),
    Column("hidden_KiB_per_token", "hidden states per token", "KiB"),
    Column("hidden_to_kv", "hidden states / KV", "×"),
    Column("restore_flops_pct", "restore FLOPs, of a forward pass's", "%"),
    Column("restore_ms", "restore a block", "ms"),
    Column("fetch_ms", "fetch its KV", "ms"),
    Column("regenerate_ms", "regenerate it inside a batch", "ms"),
    *named("fastest"),
    Column("restore_beats_fetch_below_GBps", "restoring beats fetching the KV on links slower than", "GB/s"),
)

PAPERS_COLUMNS = (
    Column("paper", "paper"),
    Column("setup", "setup"),
    Column("prefix_tokens", "prefix", "tokens"),
    Column("new_tokens", "new tokens", "tokens"),
    Column("bandwidth_GBps", "link", "GB/s"),
    Column("regenerate_ms", "compute alone", "ms"),
    Column("fetch_ms", "load the KV alone", "ms"),
    Column("split_ms", "split", "ms"),
    Column("restore_ms", "restore from hidden states", "ms"),
    Column("method", "the paper's way"),
    Column("method_vs_regenerate", "its gain over computing alone", "×"),
    Column("method_vs_fetch", "its gain over loading alone", "×"),
    Column("split_vs_better", "split's gain over the faster pure way", "×"),
    Column("hidden_to_kv", "hidden states / KV", "×"),
)

HIDDEN_TIER = tiering.LRU_TIERS[0]
"""The tier the hidden-state table fetches from: host DRAM over the host link."""


def hidden_table(s: Scenario) -> pd.DataFrame:
    """Per shipped model: hidden states against KV per token, the restore's FLOPs, and one block three ways.

    Both held in the KV's element type; the restore (:func:`kvtier.formulas.hidden.restore_s`: the hidden states'
    transfer overlapped with the K and V projections) and the KV's fetch over :data:`HIDDEN_TIER` at its latency
    per copy (one copy each), the regeneration the block's FLOPs inside a batch
    (:func:`kvtier.formulas.costs.regen_flops` with its attention over itself), all at the set's peak and
    illustrative MFU; each model's block is the set's ``block_tokens``.  Where the hidden states are the smaller,
    ``restore_beats_fetch_below_GBps``: the link bandwidth below which restoring beats fetching the KV, the block's
    KV bytes over the projections' time (latency aside; NaN where the hidden states are not smaller).
    """
    links = s.tier_links.pick((HIDDEN_TIER,))
    bw, lat = float(links.bandwidth_bytes_per_s[0]), float(links.latency_s[0])
    peak, mfu = s.v("peak_flops"), s.illustrative["mfu"]
    block = float(s.block_tokens)
    rows = []
    for name in PRESETS:
        m = load_model(name)
        kv_bytes = m.kv_bytes_per_token(s.kv_dtype)
        hidden_bytes = hidden.hidden_bytes_per_token(m.hidden_size, m.n_layers, kv_bytes, m.kv_elements_per_token())
        restore_flops = hidden.restore_flops_per_token(m.hidden_size, m.kv_elements_per_token())
        active = m.param_counts()[1]
        compute_s = float(costs.compute_time_s(block * restore_flops, peak, mfu))
        flops = costs.regen_flops(0.0, block, active, m.attention_flops_per_position())
        times = {
            "restore": float(hidden.restore_s(np.array(block), hidden_bytes, restore_flops, bw, peak, mfu, lat)),
            "fetch": float(costs.fetch_time_s(block * kv_bytes, bw, lat)),
            "regenerate": float(costs.compute_time_s(flops, peak, mfu)),
        }
        rows.append(
            {
                "model": name,
                "attention": m.attention,
                "kv_KiB_per_token": kv_bytes / 1024,
                "hidden_KiB_per_token": hidden_bytes / 1024,
                "hidden_to_kv": hidden_bytes / kv_bytes,
                "restore_flops_pct": restore_flops / (2.0 * active) * 100,
                **{f"{k}_ms": v * 1e3 for k, v in times.items()},
                "fastest": min(times, key=lambda k: times[k]),
                # smaller hidden states win once the link is slow enough that the KV's bytes outlast the projections
                "restore_beats_fetch_below_GBps": block * kv_bytes / compute_s / 1e9
                if hidden_bytes < kv_bytes
                else np.nan,
            }
        )
    return declare(pd.DataFrame(rows), HIDDEN_COLUMNS)


def papers_table(s: Scenario) -> pd.DataFrame:
    """kvtier's four ways in the setups of Cake and HCache (:func:`kvtier.report.papers.rows`), times in ms."""
    df = pd.DataFrame(papers.rows(s))
    for way in ("regenerate", "fetch", "split", "restore"):
        df[f"{way}_ms"] = df.pop(f"{way}_s") * 1e3
    return declare(df, PAPERS_COLUMNS)


def papers_numbers(s: Scenario) -> dict[str, Any]:
    """What the page says of the papers' setups: the range of each way's gains beside the published figures."""
    df = papers_table(s)
    p = published()
    cake, hc = df[df["paper"] == "Cake"], df[df["paper"] == "HCache"]
    slow, fast = hc["bandwidth_GBps"].min(), hc["bandwidth_GBps"].max()
    at_slow, at_fast = hc[hc["bandwidth_GBps"] == slow].iloc[0], hc[hc["bandwidth_GBps"] == fast].iloc[0]
    titles = {row["paper"]: row["setup"] for _, row in df.iterrows()}
    both = np.concatenate([cake["method_vs_regenerate"], cake["method_vs_fetch"]])
    n_beats = int(((cake["method_vs_regenerate"] > 1) & (cake["method_vs_fetch"] > 1)).sum())
    m = load_model(setups()["cake"].model)
    return {
        "cake_beats_both": "in every row" if n_beats == len(cake) else f"in {n_beats} of its {len(cake)} rows",
        "cake_faster_sentence": _faster_sentence(
            int((cake["fetch_ms"] < cake["regenerate_ms"]).sum()),
            len(cake),
            # the model's KV per token against a multi-head model's of its width (a key and a value per query head)
            m.kv_elements_per_token() / (2.0 * m.hidden_size * m.n_layers) * 100,
        ),
        "cake_setup": titles["Cake"],
        "cake_prefixes": words.listed([f"{n:,}" for n in sorted(set(cake["prefix_tokens"]))]),
        "cake_links": words.listed([f"{g:g}" for g in sorted(set(cake["bandwidth_GBps"]))]),
        "cake_vs_regen_min": float(cake["method_vs_regenerate"].min()),
        "cake_vs_regen_max": float(cake["method_vs_regenerate"].max()),
        "cake_vs_fetch_min": float(cake["method_vs_fetch"].min()),
        "cake_vs_fetch_max": float(cake["method_vs_fetch"].max()),
        "cake_vs_better_max": float(cake["split_vs_better"].max()),
        "cake_mean": float(np.exp(np.mean(np.log(both)))),
        # a largest reduction r of the time is a gain of 1 / (1 - r)
        "cake_vs_compute_published": 1.0 / (1.0 - p["cake_reduction_vs_compute"].value),
        "cake_vs_io_published": 1.0 / (1.0 - p["cake_reduction_vs_io"].value),
        "cake_reduction_compute_pct": p["cake_reduction_vs_compute"].value * 100,
        "cake_reduction_io_pct": p["cake_reduction_vs_io"].value * 100,
        "hcache_setup": titles["HCache"],
        "hcache_prefix": int(hc["prefix_tokens"].iloc[0]),
        "hcache_slow_GBps": float(slow),
        "hcache_vs_fetch_slow": float(at_slow["method_vs_fetch"]),
        "hcache_vs_regen_slow": float(at_slow["method_vs_regenerate"]),
        "hcache_vs_fetch_fast": float(at_fast["method_vs_fetch"]),
        "hcache_storage_saving": 1.0 / float(hc["hidden_to_kv"].iloc[0]),
        "hcache_vs_recompute_published": p["hcache_ttft_vs_recompute"].value,
        "hcache_fast_sentence": _fast_link_sentence(float(fast), float(at_fast["method_vs_fetch"]), s),
    }


def _count_words(n: int, of: int) -> str:
    """``n`` of ``of`` rows in words: "all 15 rows", "none of the 15 rows", "4 of the 15 rows"."""
    if n == of:
        return f"all {of:,} rows"
    return f"none of the {of:,} rows" if n == 0 else f"{n:,} of the {of:,} rows"


def _faster_sentence(n_load_faster: int, n_rows: int, kv_share_pct: float) -> str:
    """Which pure way is the faster in Cake's kind of setup, and so which of the split's gains are the large ones."""
    if 2 * n_load_faster >= n_rows:
        return (
            f"Loading alone is the faster pure way in {_count_words(n_load_faster, n_rows)}, the model's grouped-query"
            f" KV being {kv_share_pct:.0f} % of a multi-head model's of its width, so the gains against computing are"
            " the large ones"
        )
    return (
        f"Computing alone is the faster pure way in {_count_words(n_rows - n_load_faster, n_rows)}, so the gains"
        " against loading are the large ones"
    )


def _fast_link_sentence(gbps: float, gain: float, s: Scenario) -> str:
    """What restoring from hidden states does over HCache's setup's fastest link, worded by which way wins."""
    if gain > 1:
        return (
            f"Over {gbps:g} GB/s restoring is still {shown_text(gain)} times faster than loading the KV, by less, as"
            " the link catches up with the key and value projections."
        )
    return (
        f"Over {gbps:g} GB/s restoring takes {shown_text(1.0 / gain)} times as long as loading the KV: at this"
        f" book's MFU of {s.illustrative['mfu'] * 100:g} % the key and value projections outlast the KV's bytes."
        " HCache's scheduler then loads some layers' KV instead of their hidden states, a mix the restore here"
        " does not make."
    )


def grid_table(s: Scenario) -> pd.DataFrame:
    """Per regime, LRU medium and prefix length: the four ways' times to the first token (ms) and the split's gain."""
    rows = []
    for r in serving.split_grid(s):
        rows.append(
            {
                "regime": r["regime"],
                "tier": r["tier"],
                "prefix_tokens": r["prefix_tokens"],
                "new_tokens": r["new_tokens"],
                **{f"{k}_ms": r[f"{k}_s"] * 1e3 for k in ("regenerate", "fetch", "overlap", "split")},
                "split_tokens": r["split_tokens"],
                "gain": r["gain"],
                "fastest": r["fastest"],
            }
        )
    return declare(pd.DataFrame(rows), GRID_COLUMNS)


def ttft_table(s: Scenario) -> pd.DataFrame:
    """Per regime and LRU medium at the hit target: the trace's TTFT percentiles the engine's way and with a split."""
    df = pd.DataFrame(serving.split_ttft_rows(s))
    df["hit_share"] = df["hit_share"] * 100
    df["split_share_pct"] = df.pop("split_share") * 100
    return declare(df, TTFT_COLUMNS)


def numbers(s: Scenario) -> dict[str, Any]:
    """Every number and sentence the page quotes."""
    grid = grid_table(s)
    tt = ttft_table(s)
    mine = grid[grid["regime"] == REGIME]
    longest = int(mine["prefix_tokens"].max())
    at = mine[mine["prefix_tokens"] == longest].set_index("tier")
    nvme, dram = tiering.LRU_TIERS[-1], tiering.LRU_TIERS[0]
    trace = tt[tt["regime"] == REGIME].set_index("tier")
    out: dict[str, Any] = {
        "priced_sentence": words.priced_sentence(s),
        "regime_words": REGIME_WORDS[REGIME],
        "new_tokens": int(grid["new_tokens"].iloc[0]),
        "longest_prefix": longest,
        "nvme_gain": float(at.loc[nvme, "gain"]),
        "nvme_split_tokens": int(at.loc[nvme, "split_tokens"]),
        "nvme_split_ms": float(at.loc[nvme, "split_ms"]),
        "nvme_fetch_ms": float(at.loc[nvme, "fetch_ms"]),
        "dram_gain_pct": (float(at.loc[dram, "gain"]) - 1) * 100,
        # loading the same fetch layer by layer, against the better pure way (the split's own yardstick)
        "dram_overlap_gain_pct": (
            min(float(at.loc[dram, "fetch_ms"]), float(at.loc[dram, "regenerate_ms"]))
            / float(at.loc[dram, "overlap_ms"])
            - 1
        )
        * 100,  # fmt: skip
        "n_cases": len(grid),
        "n_split_fastest": int((grid["fastest"] == "split").sum()),
        "max_gain": float(grid["gain"].max()),
        "hit_target_pct": float(trace["hit_share"].iloc[0]),
        "nvme_p50_s": float(trace.loc[nvme, "ttft_p50_s"]),
        "nvme_p50_split_s": float(trace.loc[nvme, "ttft_p50_s_split"]),
        "nvme_p90_s": float(trace.loc[nvme, "ttft_p90_s"]),
        "nvme_p90_split_s": float(trace.loc[nvme, "ttft_p90_s_split"]),
        "nvme_split_share_pct": float(trace.loc[nvme, "split_share_pct"]),
        "dram_p50_change_pct": (float(trace.loc[dram, "ttft_p50_s_split"] / trace.loc[dram, "ttft_p50_s"]) - 1) * 100,
    }
    hid = hidden_table(s)
    smaller = hid[hid["hidden_to_kv"] < 1]
    out |= {
        "n_models": len(hid),
        "n_hidden_smaller": len(smaller),
        "hidden_smaller_models": words.listed(list(smaller["model"])) if len(smaller) else "none",
        "hidden_ratio_min": float(hid["hidden_to_kv"].min()),
        "hidden_ratio_max": float(hid["hidden_to_kv"].max()),
        "hidden_ratio_max_model": str(hid.loc[hid["hidden_to_kv"].idxmax(), "model"]),
        "n_restore_fastest": int((hid["fastest"] == "restore").sum()),
        # where the transfer binds, restoring moves hidden / KV of the bytes: at most KV / hidden times sooner
        "hidden_max_gain": 1.0 / float(hid["hidden_to_kv"].min()),
        "hidden_break_even_GBps": float(smaller["restore_beats_fetch_below_GBps"].min()) if len(smaller) else np.nan,
        "hidden_tier": HIDDEN_TIER,
    }
    out |= cited_numbers()
    out |= papers_numbers(s)
    # the measured slowdown applied to the head while its tail's copies run: NVMe's split at the longest prefix
    links = s.tier_links.pick((nvme,))
    fetch = serving.fetch_of(s, float(links.bandwidth_bytes_per_s[0]), float(links.latency_s[0]))
    n = np.array([float(longest)])
    slowed = split_formulas.best_split(
        s.regen_costs(), fetch, n, n + out["new_tokens"], REGIME, out["copy_slowdown_pct"] / 100
    )
    out["nvme_gain_slowed"] = float(slowed.gain[0])
    out["lead"] = _lead(s, out)
    return out


def cited_numbers() -> dict[str, Any]:
    """The published gains the page sets beside its own (:mod:`kvtier.inputs.published`), with their sources, and
    the one measured slowdown of a forward pass while copies run beside it (the H200 session's probe 3, %)."""
    p = published()
    m = ms.load()
    alone, busy = m.v("overlap_forward_alone"), m.v("overlap_forward_with_copies")
    return {
        "cake_gain": p["cake_ttft"].value,
        "cake_source": p["cake_ttft"].source,
        "hcache_gain": p["hcache_ttft_vs_offload"].value,
        "hcache_storage_low": p["hcache_storage_low"].value,
        "hcache_storage_high": p["hcache_storage_high"].value,
        "hcache_source": p["hcache_ttft_vs_offload"].source,
        "copy_slowdown_pct": (busy / alone - 1) * 100,
    }


def _lead(s: Scenario, n: dict[str, Any]) -> str:
    """The page's answer in two sentences, its comparisons chosen by the numbers."""
    nvme_words, dram_words = MEDIUM_WORDS["nvme"], MEDIUM_WORDS["dram"]
    if n["nvme_gain"] > 1:
        nvme = (
            f"From {nvme_words}, a {n['longest_prefix']:,}-token prefix reaches its first token"
            f" {shown_text(n['nvme_gain'])} times sooner split than by the better pure way: the accelerator computes"
            f" its first {n['nvme_split_tokens']:,} tokens while the rest arrives ({shown_text(n['nvme_split_ms'])} ms"
            f" against {shown_text(n['nvme_fetch_ms'])} ms fetched whole)."
        )
    else:
        nvme = f"From {nvme_words}, no split of a {n['longest_prefix']:,}-token prefix beats the better pure way."
    if n["dram_gain_pct"] <= 0:
        dram = f" From {dram_words} the split gains nothing."
    else:
        than = "more than" if n["dram_gain_pct"] > n["dram_overlap_gain_pct"] else "less than"
        dram = (
            f" From {dram_words} over the host link it gains {shown_text(n['dram_gain_pct'])} %, {than} loading the"
            f" fetch layer by layer under the prefill ({shown_text(n['dram_overlap_gain_pct'])} %), where an engine"
            " does that."
        )
    return f"{nvme}{dram}"


def split_figure(s: Scenario) -> tuple[Figure, str]:
    """TTFT against the reused prefix's length, per LRU medium: regenerate, fetch, layer by layer, split."""
    rc = s.regen_costs()
    links = s.tier_links.pick(tiering.LRU_TIERS)
    window = s.model.max_positions or int(s.v("context.long"))
    new = s.block_tokens
    prefix = np.unique(np.round(np.geomspace(new, window - new, FIGURE_POINTS) / new) * new)
    fig, _ = new_figure(4.8, 6.4)
    fig.clf()
    axs = fig.subplots(len(links.names), 1, sharex=True)
    n_marked = 0
    for ax, name, bw, lat in zip(axs, links.names, links.bandwidth_bytes_per_s, links.latency_s, strict=True):
        r = split_formulas.best_split(rc, serving.fetch_of(s, bw, lat), prefix, prefix + new, REGIME)
        ax.plot(prefix, r.regenerate_s, color=PALETTE[1], ls="-", label="regenerate")
        ax.plot(prefix, r.fetch_s, color=PALETTE[0], ls="--", label="fetch, then prefill")
        ax.plot(prefix, r.overlap_s, color=PALETTE[0], ls=":", label="fetch layer by layer")
        ax.plot(prefix, r.split_s, color=PALETTE[3], ls="-", lw=2.2, label="split")
        marked = np.flatnonzero(r.gain >= GAIN_MARK)
        if marked.size:
            ax.axvline(prefix[marked[0]], color=PALETTE[5], lw=0.8, ls="-.", label="split gains 1 %")
            n_marked += 1
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(f"{MEDIUM_WORDS[tiering.medium(name)]} ({name})", fontsize=MIN_FONT_PT + 1, loc="left")
        ax.set_ylabel("TTFT (s)")
        plain_log_ticks(ax.yaxis, subs=(1.0,))
    plain_log_ticks(axs[-1].xaxis, subs=(1.0,))
    axs[-1].set_xlabel("reused prefix held by the tier (tokens)")
    seen: dict[str, Any] = {}
    for ax in axs:
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            seen.setdefault(lab, h)
    fig.legend(list(seen.values()), list(seen), loc="upper center", bbox_to_anchor=(0.5, 1.0), ncol=2,
               fontsize=MIN_FONT_PT, frameon=False)  # fmt: skip
    n = numbers(s)
    nvme = MEDIUM_WORDS["nvme"]
    lead = (
        f"From {nvme} a {n['longest_prefix']:,}-token prefix arrives {shown_text(n['nvme_gain'])} times sooner split"
        " than by the better pure way."
        if n["nvme_gain"] > 1
        else f"From {nvme} no split beats the better pure way."
    )
    text = (
        f"A prefix served {REGIME_WORDS[REGIME]}, then {new} new tokens, four ways; thick: the split; dash-dot: where"
        f" it first gains 1 % ({n_marked} of {len(links.names)} media)."
    )
    drivers = words.regen_drivers(s)
    records = s.used("model", *drivers, "workload.deployment")
    fig, caption = finish(fig, records, text, lead=lead, drivers=drivers)
    fig.subplots_adjust(left=0.14, right=0.97, top=1 - 0.85 / fig.get_size_inches()[1], hspace=0.4)
    return fig, caption


TABLES = (
    (
        "split_grid",
        grid_table,
        ("regime", "tier", "prefix_tokens"),
        (
            "regime",
            "tier",
            "prefix_tokens",
            "regenerate_ms",
            "fetch_ms",
            "overlap_ms",
            "split_tokens",
            "split_ms",
            "gain",
            "fastest",
        ),
    ),  # fmt: skip
    (
        "split_ttft",
        ttft_table,
        ("regime", "tier"),
        ("regime", "tier", "ttft_p50_s", "ttft_p50_s_split", "ttft_p90_s", "ttft_p90_s_split", "split_share_pct"),
    ),
    (
        "split_hidden",
        hidden_table,
        ("model",),
        (
            "model",
            "attention",
            "hidden_to_kv",
            "restore_flops_pct",
            "restore_ms",
            "fetch_ms",
            "regenerate_ms",
            "fastest",
        ),  # fmt: skip
    ),
    (
        "split_papers",
        papers_table,
        ("paper", "prefix_tokens", "bandwidth_GBps"),
        (
            "paper",
            "prefix_tokens",
            "bandwidth_GBps",
            "regenerate_ms",
            "fetch_ms",
            "split_ms",
            "restore_ms",
            "method_vs_regenerate",
            "method_vs_fetch",
        ),  # fmt: skip
    ),
)
"""The page's tables of record: (name, builder, key columns, shown columns)."""
FIGURES = (("fig_split", split_figure),)
"""The page's figures: (glue name, function returning the figure and its caption)."""
