"""The serving page: the deployment in words, the fewest accelerators, the tables' headers, the TTFT figures."""

from __future__ import annotations

import numpy as np
import pytest

from kvtier.inputs.assumptions import load_assumptions
from kvtier.report import pages, words
from kvtier.report.columns import column_of
from kvtier.report.pages import answer, serving
from kvtier.scenario import Scenario


def test_the_seed_deployment_needs_two_80_gb_accelerators_at_its_own_window():
    # one accelerator must hold 70e9 x 2 B = 140 GB of weights plus one sequence of Llama-3-70B's own 8,192-token
    # window (context.long, 131,072, is past it) at 327,680 B/token = 2.68 GB: 142.68 GB. cost.hbm_capacity is 80 GB
    # (the seed leaves parallel.hbm_capacity unset): TP 2 holds 70 + 1.34 = 71.3 GB each: 2 accelerators
    s = Scenario()
    assert serving.capacity_key(s) == "cost.hbm_capacity"
    mins = serving.min_table(s).set_index("model")
    assert int(mins.loc["llama-3-70b", "accelerators"]) == 2
    assert mins.loc["llama-3-70b", "sequence_tokens"] == 8192
    # Llama-3.1-70B holds the whole 131,072: 141.1 GB + 42.95 GB = 184.06 GB; TP 2 holds 92.0 GB, TP 4 46.0 GB: 4
    assert (int(mins.loc["llama-3.1-70b", "accelerators"]), mins.loc["llama-3.1-70b", "sequence_tokens"]) == (
        4,
        131_072,
    )
    assert int(mins.loc["llama-3-8b", "accelerators"]) == 1  # 16 GB + 8,192 x 131,072 B = 17.1 GB < 80 GB
    sentence = serving.numbers(s)["deployment_sentence"]
    # the module's function of the seed set itself: every page prices that deployment
    assert sentence.startswith(
        "This page serves llama-3-70b on one accelerator with its own link, and every other page of the book prices"
    )
    assert "takes at least 2 of them" in sentence and "80 GB per accelerator (the cost page's memory)" in sentence
    assert "one 8,192-token sequence's cache" in sentence


def test_a_placed_build_names_its_placement_on_this_page_and_on_the_landing_page():
    s = Scenario(load_assumptions(None, {"parallel.tp": "8", "parallel.gpus_per_link": "2"}))
    assert words.deployment_words(s) == "8 accelerators (tensor-parallel 8), 2 sharing each link"
    # more sharing a link than the deployment has: other instances' accelerators (issue 43: "one accelerator, 64
    # sharing each link" read as a contradiction)
    one = Scenario(load_assumptions(None, {"parallel.gpus_per_link": "64"}))
    assert words.deployment_words(one) == "one accelerator, 64 sharing each link (other instances' among them)"
    assert serving.numbers(s)["deployment_sentence"].startswith(
        "This page serves llama-3-70b on 8 accelerators (tensor-parallel 8), 2 sharing each link"
    )
    # the page as the book presents it: the seed's named deployment, which the chapter's pages do not price
    presented = pages.page_of("15_serving").numbers(Scenario())["deployment_sentence"]
    assert presented.startswith(
        "This page serves llama-3.1-70b on 4 accelerators (tensor-parallel 4), 2 sharing each link, as the workload"
        " and cost pages do (the named deployment they price); the pages that recompute the source chapter price its"
        " single accelerator."
    )
    assert answer.rule_sentence(s).startswith("Served on 8 accelerators (tensor-parallel 8), 2 sharing each link,")


def test_the_in_batch_columns_read_as_the_twins_of_the_lone_ones():
    df = serving.placement_table(Scenario())
    columns = list(df.columns)
    assert {"ratio", "lone_ratio", "regen_ms", "lone_regen_ms"} <= set(columns)
    assert column_of(df, "ratio").header() == "regeneration / fetch, in a batch (×)"
    assert column_of(df, "lone_ratio").header() == "regeneration / fetch, lone block (×)"
    # TP 1 is the seed's single accelerator: the chapter's 218.78x in a batch, 637.68x alone
    one = df.set_index("tp").loc[1]
    assert one["ratio"] == pytest.approx(218.78, abs=0.01) and one["lone_ratio"] == pytest.approx(637.68, abs=0.01)


def test_every_shown_header_is_words():
    s = Scenario()
    for name, build, _key, *shown in serving.TABLES:
        df = build(s)
        for c in [c for c in shown[0] if c in df.columns] if shown else df.columns:
            assert "_" not in column_of(df, c).header(), (name, c, column_of(df, c).header())


def test_the_ttft_numbers_are_the_tables():
    s = Scenario()
    n = serving.numbers(s)
    tt = serving.ttft_table(s)
    lone = tt[tt["regime"] == "lone"]
    none = lone[lone["tier"] == "none"].iloc[0]
    at = lone[(lone["tier"] == "pcie5-x16") & np.isclose(lone["hit_share"], 0.9)].iloc[0]
    assert n["ttft_none_p50_s"] == none["ttft_p50_s"] and n["ttft_tier_p99_s"] == at["ttft_p99_s"]
    # the cut is (1 - with / without) x 100: a tier never makes a request slower to first token here
    assert n["ttft_p50_cut_pct"] == pytest.approx((1 - at["ttft_p50_s"] / none["ttft_p50_s"]) * 100)
    assert 0 < n["ttft_p99_cut_pct"] < n["ttft_p50_cut_pct"] < 100
    assert n["ttft_capacity_tib"] == pytest.approx(at["capacity_bytes"] / 2**40)


def test_the_ttft_follows_the_placement():
    # a lone prefill of a long prompt is compute-bound: on 4 tensor-parallel ranks each computes a quarter
    # of it, plus 2 x 80 all-reduces a pass, so the median TTFT with no tier falls to well under half
    one = serving.numbers(Scenario())
    placed_set = Scenario(load_assumptions(None, {"parallel.tp": "4"}))
    placed = serving.numbers(placed_set)
    # the figure's caption names the deployment the prefill ran on, and only when it is placed
    assert "its prefill alone on 4 accelerators (tensor-parallel 4)" in serving.ttft_figure(placed_set)[1]
    assert "its prefill alone." in serving.ttft_figure(Scenario())[1]
    assert "alone on the accelerator." in one["ttft_sentence"]
    assert (
        "alone on its 4 accelerators (the busiest one's share of the pass, plus the collectives)"
        in (placed["ttft_sentence"])
    )
    assert placed["ttft_none_p50_s"] < one["ttft_none_p50_s"] / 2
    # the accelerator time saved counts all 4: about what one accelerator saves (the same FLOPs), within 25 %
    assert placed["ttft_gpu_saved_per_s"] == pytest.approx(one["ttft_gpu_saved_per_s"], rel=0.25)


def test_the_ttft_sentence_says_how_much_of_the_trace_is_past_the_models_window():
    import gzip
    import json as json_

    from tests.conftest import ROOT

    # the conversation trace's prompts, counted straight from the shipped file: those past Llama-3-70B's 8,192
    path = next((ROOT / "kvtier" / "data" / "traces" / "mooncake-fast25").glob("conversation*"))
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        lengths = [json_.loads(line)["input_length"] for line in f if line.strip()]
    share = sum(n > 8192 for n in lengths) / len(lengths) * 100  # 45.0 %
    sentence = serving.numbers(Scenario())["ttft_sentence"]
    assert (
        f"{share:.1f} % of the trace's prompts are longer than llama-3-70b's 8,192-token window, so with no tier"
        f" every percentile above the {100 - share:.1f}th is the time of a prefill this model cannot run"
    ) in sentence
    assert f"{share:.1f}" == "45.0"
    # Llama-3.1-70B's 131,072 positions hold every prompt (the longest is below it)
    assert max(lengths) <= 131_072
    longer = serving.numbers(Scenario(load_assumptions(None, {"model": "llama-3.1-70b"})))["ttft_sentence"]
    assert longer.endswith("Every prompt of the trace fits llama-3.1-70b's 131,072-token window.")


def test_the_all_reduce_split_the_weights_each_accelerator_reads_and_the_nvlink_domain():
    from kvtier.report.pages import serving as page
    from kvtier.scenario import seed_scenario

    s = seed_scenario()
    n = page.numbers(s)
    # at TP 8 a lone 16-token block's all-reduces, two a layer over 80 layers at 10 us each: 1.6 ms of latency; the
    # rest of the 1.76 ms is bytes (16 x 8,192 x 2 B a message); it said "1.76 ms is all-reduce latency"
    assert n["collectives_latency_ms_big"] == pytest.approx(80 * 2 * 10e-3, rel=1e-12)
    assert n["collectives_ms_big"] > n["collectives_latency_ms_big"]
    text = page._tp_sentence(n)
    assert "is all-reduce: 1.6 ms of it the operations' latency" in text and "is all-reduce latency" not in text
    # TP 8 x PP 2 x EP 8: the pass crosses two stages, each accelerator reads its own stage's share, half the sum
    moe = page.moe_table(s).set_index(["tp", "pp", "ep"])
    row = moe.loc[(8, 2, 8)]
    assert row["lone_weights_read_per_accelerator_GB"] == pytest.approx(row["lone_weights_read_GB"] / 2, rel=1e-12)
    assert row["lone_weights_read_per_accelerator_GB"] == pytest.approx(moe.loc[(16, 1, 16), "lone_weights_read_GB"])
    # the TP 16 group is timed as one NVLink domain, and the page says what that needs
    assert "A group of 16 is timed as one NVLink domain" in page._moe_sentence(n)


def test_the_link_sharing_sentence_names_its_layout_and_the_other():
    from kvtier.deployment import Deployment
    from kvtier.report.pages import serving as page
    from kvtier.scenario import seed_scenario

    s = seed_scenario()
    text = page._sharing_sentence(page.numbers(s))
    # eight behind a link, in one piece: every tier still wins; as 160 chunk copies inside a batch NVMe Gen4 x4
    # loses (each chunk pays 92 us, and the link's share is an eighth), which "all 10 tiers" alone hid
    most = Deployment.of(s.with_placement(gpus_per_link=8))
    nvme = most.tiers.names.index("nvme-gen4-x4")
    assert most.ratio("batch", "per-layer")[nvme] == pytest.approx(0.87, abs=0.01)
    assert (
        "With 8 sharing each link and the block copied in one piece, fetching still beats regenerating from all" in text
    )
    assert text.endswith("copied as 160 chunk copies, from 9 of the 10 inside a batch.")


def test_the_page_opens_with_its_answer_and_says_where_the_percentiles_pass_the_window(seed_scenario):
    from kvtier.report.pages import serving

    n = serving.numbers(seed_scenario)
    lead = n["lead_sentence"]
    # the TTFT sentence's own numbers, without and with the 90 % host-DRAM tier (4.82 TiB)
    assert lead.startswith(
        f"For the trace's requests, a 4.82 TiB tier in host DRAM brings the median time to first token from"
        f" {n['ttft_none_p50_s']:.3g} s to {n['ttft_tier_p50_s']:.3g} s and the 99th percentile from"
        f" {n['ttft_none_p99_s']:.3g} s to {n['ttft_tier_p99_s']:.3g} s (1 accelerator a replica"
    )
    # 5,411 of the 12,031 prompts (45.0 %) pass Llama-3-70B's 8,192 tokens: with no tier the percentiles above the
    # 55.0th are theirs, and the 99th percentile is one of them
    assert lead.endswith(
        "with no tier, every percentile above the 55.0th is a prompt longer than llama-3-70b's 8,192-token window"
        " (45.0 % of them), timed as if the model could run it."
    )
    # a model whose window holds every prompt says nothing of the kind
    other = serving.numbers(Scenario(load_assumptions(sets={"model": "llama-3.1-70b", "param_count": "null"})))[
        "lead_sentence"
    ]
    assert "window" not in other and other.endswith("as placed below).")
