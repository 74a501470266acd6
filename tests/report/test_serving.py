"""kvtier.report.serving: the TTFT rows a page shows, by hand on a four-request trace and against the seed's trace."""

from __future__ import annotations

import numpy as np
import pytest

from kvtier import Scenario, analysis, load_assumptions
from kvtier.formulas.cache.curve import percentiles
from kvtier.inputs.assumptions import RestrictedAssumptionSet
from kvtier.report import serving
from tests.conftest import trace_text
from tests.formulas.test_ttft import ROWS  # r0 [1, 2], r1 [1, 2, 3], r2 [5, 1], r3 [1, 2]; 4 tokens a block


@pytest.fixture(scope="module")
def hand(tmp_path_factory) -> Scenario:
    path = tmp_path_factory.mktemp("trace") / "hand.jsonl"
    path.write_text(trace_text(ROWS))
    sets = {"workload.trace": str(path), "workload.block_tokens": "4", "engine": "vllm"}
    return Scenario(load_assumptions(sets=sets))


def _row(rows: list[dict], regime: str, tier: str, share: float) -> dict:
    (found,) = [r for r in rows if (r["regime"], r["tier"], r["hit_share"]) == (regime, tier, share)]
    return found


def test_one_row_per_regime_tier_and_share(hand: Scenario) -> None:
    rows = serving.ttft_rows(hand)
    # shares 50, 80, 90 (the decision's target), 95, 100 %: 2 regimes x (no tier + 3 media x 5 sizes) = 32 rows
    assert serving.shares(hand) == (0.5, 0.8, 0.9, 0.95, 1.0)
    assert len(rows) == 32
    assert [r["tier"] for r in rows[:6]] == ["none", "pcie5-x16", "pcie5-x16", "pcie5-x16", "pcie5-x16", "pcie5-x16"]


def test_the_hand_trace_with_vllms_layout(hand: Scenario) -> None:
    rows = serving.ttft_rows(hand)
    row = _row(rows, "batch", "pcie5-x16", 1.0)
    kv = hand.kv_bytes_per_token  # Llama-3-70B bf16: 327,680 B a token
    bw, lat = 63e9, 9.049e-6  # PCIe 5.0 x16 net, the seed's host-link latency per transfer
    # every hit: the largest stack distance is 3, so 4 blocks of 4 tokens: 4 x 4 x 327,680 B
    assert row["capacity_blocks"] == 4 and row["capacity_bytes"] == 4 * 4 * kv
    # r1 takes 8 tokens, r3 7 of its 8 (the last is computed): 15 of the 34 prompt tokens
    assert row["prefix_hit_token_share"] == pytest.approx(15 / 34)
    # vLLM >= 0.12: 16-token blocks in one cross-layer copy: 8 or 7 tokens are one block, 1 transfer of the
    # tier's own latency (the copy method replaces only the brackets' fetch_latency)
    f1, f3 = lat + 8 * kv / bw, lat + 7 * kv / bw
    assert row["fetch_mean_s"] == pytest.approx((f1 + f3) / 4)
    # batch: the hit prefix's FLOPs are what the tier saves, prefix_flops(8) + prefix_flops(7) at peak x MFU
    rc = hand.regen_costs()
    saved = float(rc.in_batch_s(np.array([8.0, 7.0])).sum())
    assert row["gpu_saved_s"] == pytest.approx(saved)
    assert row["gpu_saved_s_per_s"] == pytest.approx(saved / 3.0)  # the trace lasts 3 s
    # no tier: every prompt prefilled whole; its distribution is RegenCosts.regen_s of the prompts
    none = _row(rows, "lone", "none", 0.0)
    full = rc.regen_s(np.array([8.0, 10.0, 8.0, 8.0]), "lone")
    assert none["ttft_p50_s"] == pytest.approx(percentiles(full)["p50"])
    assert none["gpu_saved_s"] == 0 and none["capacity_bytes"] == 0


def test_the_engine_sets_the_fetch(hand: Scenario) -> None:
    # LMCache moves its 256-token chunk in one copy: 1 transfer per request instead of 160
    lm = Scenario(hand.assumptions.with_values({"engine": "lmcache"}, source="test"))
    f = serving.fetch_of(lm, 63e9, 9.049e-6)
    assert (f.block_tokens, f.transfers_per_block, f.overlap, f.layers) == (256, 1, False, 80)
    row = _row(serving.ttft_rows(lm, ("batch",)), "batch", "pcie5-x16", 1.0)
    kv = lm.kv_bytes_per_token
    assert row["fetch_mean_s"] == pytest.approx((2 * 9.049e-6 + 15 * kv / 63e9) / 4)
    # SGLang overlaps layer by layer: 80 layers
    assert serving.fetch_of(Scenario(load_assumptions(sets={"engine": "sglang"})), 1.0, 0.0).overlap


def test_the_seed_trace_agrees_with_the_workload_pages_recompute_cost() -> None:
    s = Scenario()
    rows = serving.ttft_rows(s)
    r = analysis.reuse(s)
    prompts = r.trace.input_tokens.astype(float)
    for regime in ("lone", "batch"):
        none = _row(rows, regime, "none", 0.0)
        assert none["ttft_p90_s"] == pytest.approx(percentiles(s.regen_costs().regen_s(prompts, regime))["p90"])
        # a tier can only shorten TTFT in the batch regime (it never adds compute), and more capacity never hurts
        p50 = [_row(rows, regime, "pcie5-x16", share)["ttft_p50_s"] for share in serving.shares(s)]
        if regime == "batch":
            assert all(p <= none["ttft_p50_s"] for p in p50)
        share = [_row(rows, regime, "pcie5-x16", x)["prefix_hit_token_share"] for x in serving.shares(s)]
        assert share == sorted(share) and share[-1] <= float(r.hit_ratio(np.inf, "tokens"))


def test_keys_name_everything_the_rows_read() -> None:
    s = Scenario(RestrictedAssumptionSet(load_assumptions(), set(serving.KEYS), "serving"))
    assert len(serving.ttft_rows(s, ("batch",))) == 16


def test_the_engines_side_by_side() -> None:
    rows = {r["engine"]: r for r in serving.engine_rows(Scenario())}
    assert list(rows) == [
        "vllm",
        "vllm-0.11",
        "sglang",
        "sglang-layer-first",
        "tensorrt-llm",
        "lmcache",
        "lmcache-layerwise",
        "mooncake",
    ]
    kv, bw, lat = 327_680, 63e9, 9.049e-6  # Llama-3-70B bf16 per token; PCIe 5.0 x16 net; the host-link latency
    old = rows["vllm-0.11"]
    # 0.11: 16 tokens = 5,242,880 B in 160 copies: 160 x 9.049 us + 5,242,880 / 63e9 = 1,447.84 + 83.22 = 1,531.06 us
    assert (old["block_tokens"], old["block_bytes"], old["transfers_per_block"], old["layer_overlap"]) == (
        16,
        16 * kv,
        160,
        False,
    )
    assert old["fetch_s.pcie5-x16"] == pytest.approx(160 * lat + 16 * kv / bw)
    # >= 0.12: the same block in one cross-layer copy: 9.049 + 83.22 = 92.27 us, issued back to back
    v = rows["vllm"]
    assert (v["transfers_per_block"], v["copy_method"], v["version"]) == (1, "batched-dma", ">= 0.12")
    assert v["fetch_s.pcie5-x16"] == pytest.approx(lat + 16 * kv / bw)
    # SGLang: page_first through its kernel, one launch per layer (80); layer_first + direct, K and V apart (160)
    assert (rows["sglang"]["transfers_per_block"], rows["sglang"]["copy_method"]) == (80, "kernel")
    assert (rows["sglang-layer-first"]["transfers_per_block"], rows["sglang-layer-first"]["copy_method"]) == (
        160,
        "batched-dma",
    )
    # LMCache: 256 tokens = 80 MiB in one copy: 9.049 us + 83,886,080 / 63e9 = 1,331.5 us, 5.2 us a token
    lm = rows["lmcache"]
    assert lm["fetch_s.pcie5-x16"] == pytest.approx(lat + 256 * kv / bw)
    assert lm["fetch_s_per_token.pcie5-x16"] == pytest.approx((lat + 256 * kv / bw) / 256)
    assert "lmcache/v1/config.py" in lm["source.block_tokens"]


def test_the_streamed_rows_are_the_per_request_figures() -> None:
    # the rows count requests by prompt and hit prefix as the trace streams past; the same from every request of
    # the trace held in memory (ttft.ttft): percentiles equal, sums and means to the order of the additions
    from kvtier.formulas import ttft

    s = Scenario()
    rows = serving.ttft_rows(s, ("batch",))
    r, rc = analysis.reuse(s), s.regen_costs()
    links = s.tier_links.pick(("pcie5-x16",))
    fetch = serving.fetch_of(s, float(links.bandwidth_bytes_per_s[0]), float(links.latency_s[0]))
    for share in serving.shares(s):
        row = _row(rows, "batch", "pcie5-x16", share)
        t = ttft.ttft(r, rc, "batch", fetch, row["capacity_blocks"])
        assert row["capacity_blocks"] == float(r.capacity_for(share))
        assert (row["ttft_p50_s"], row["ttft_p90_s"], row["ttft_p99_s"]) == pytest.approx(
            tuple(t.percentiles()[k] for k in ("p50", "p90", "p99")), rel=1e-12
        )
        assert row["ttft_mean_s"] == pytest.approx(float(t.ttft_s.mean()), rel=1e-12)
        assert row["gpu_saved_s"] == pytest.approx(float(t.gpu_s_saved.sum()), rel=1e-12)
        assert row["prefix_hit_token_share"] == pytest.approx(
            float(t.hit_tokens.sum()) / float(r.trace.input_tokens.sum()), rel=1e-12
        )
