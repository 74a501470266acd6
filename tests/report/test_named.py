"""kvtier.report.named: the landing's answer per named deployment, beside the build and the measured set."""

from __future__ import annotations

import pytest

from kvtier.deployment import Deployment
from kvtier.inputs.assumptions import load_assumptions
from kvtier.report import named
from kvtier.report.pages import answer
from kvtier.scenario import Scenario, seed_scenario


@pytest.fixture(scope="module")
def table():
    return named.named_table(seed_scenario()).set_index("deployment")


def test_the_rows_this_build_four_named_deployments_and_the_measured_set(table):
    assert list(table.index) == [
        "this build",
        "llama-3.1-70b-h100",
        "llama-3.1-70b-h200",
        "deepseek-v3-h200",
        "llama-3.1-8b-h100",
        "h200-measured",
    ]
    assert list(table["kind"]) == ["this build", "named", "named", "named", "named", "measured set"]
    assert (table["refused"] == "").all()
    assert table.loc["this build", "title"].startswith("the source chapter's world: llama-3-70b")


def test_the_builds_row_is_the_decisions_plan(table):
    s = seed_scenario()
    best, _ = Deployment.of(s).best_tier("batch")
    row = table.loc["this build"]
    # the plan sentence's numbers: 56.2 USD/h saved by the 59.9 accelerators the prefill keeps busy,
    # 56.2104682 / 59.9201798 = 0.938 USD/h each, and 82.4 GiB each
    assert row["saved_usd_h"] == pytest.approx(best.saved_usd_per_s * 3600, rel=1e-12)
    assert row["saved_usd_h"] == pytest.approx(56.2104682, rel=1e-8)
    assert row["busy_accelerators"] == pytest.approx(59.9201798, rel=1e-8)
    assert row["saved_usd_h_per_accelerator"] == pytest.approx(56.2104682 / 59.9201798, rel=1e-8)
    assert "0.938 USD/h" in answer.plan_sentence(s) and "82.4 GiB per accelerator" in answer.plan_sentence(s)
    assert row["tier_gib_per_accelerator"] == pytest.approx(82.3726042, rel=1e-8)
    # one accelerator, one server of it; the chapter's 3 USD/h; 80 layers x K and V = 160 chunk copies
    assert row["tier_gib_per_server"] == row["tier_gib_per_accelerator"]
    assert (row["accelerator_hour_usd"], row["engine_copies"], row["chunk_copies"]) == (3.0, 1, 160)
    # fetch wins from every tier in the three (regime, copies) shown; the in-batch per-chunk closest call 1.16x
    assert row["fetch_wins"] == "10/10/10"
    assert row["min_ratio_batch_chunks"] == pytest.approx(answer.closest_calls(s).iloc[0]["ratio"], rel=1e-12)


def test_each_named_row_is_priced_at_its_own_accelerator_per_accelerator_and_per_server(table):
    # the H100 rows at 3 USD/h, the H200 rows at 4 USD/h (the presets' hour prices)
    assert list(table["accelerator_hour_usd"].iloc[1:5]) == [3.0, 4.0, 4.0, 3.0]
    for name in ("llama-3.1-70b-h100", "llama-3.1-70b-h200", "deepseek-v3-h200"):
        row = table.loc[name]
        # per server: eight accelerators, each as busy as the trace keeps its accelerators (12.9, 11.8 and 21.6 busy:
        # more than a server's 8)
        assert row["busy_accelerators"] > 8
        assert row["tier_gib_per_server"] == pytest.approx(8 * row["tier_gib_per_accelerator"], rel=1e-12)
        assert row["saved_usd_h_per_server"] == pytest.approx(8 * row["saved_usd_h_per_accelerator"], rel=1e-12)
        assert row["saved_usd_h"] == pytest.approx(row["saved_usd_h_per_accelerator"] * row["busy_accelerators"])
    # Llama-3.1-8B keeps 1.38 accelerators busy: all within one server, so per server is the whole tier and saving
    # (1,974 GiB and 0.595 USD/h), never 8 x the per-accelerator 1,434.6 GiB = 11,477 GiB, 5.8 x the whole tier
    # (issue 43); per accelerator divides by the 1.38
    row = table.loc["llama-3.1-8b-h100"]
    assert row["busy_accelerators"] == pytest.approx(1.376, abs=5e-4)
    whole = row["tier_gib_per_accelerator"] * row["busy_accelerators"]
    assert row["tier_gib_per_server"] == pytest.approx(whole, rel=1e-12)
    assert row["saved_usd_h_per_server"] == pytest.approx(row["saved_usd_h"], rel=1e-12)
    # vLLM copies a GQA block in one piece and an MLA block layer by layer (61 layers); chunks: layers x K, V
    assert list(table["engine_copies"].iloc[1:5]) == [1, 1, 61, 1]
    assert list(table["chunk_copies"].iloc[1:5]) == [160, 160, 61, 64]


def test_a_faster_accelerator_halves_the_chapters_saving():
    # the issue's figure: the chapter's world at an H100's 989 TFLOP/s saves about 27.7 USD/h, not 56.2
    s = Scenario(load_assumptions(sets={"peak_flops": "989TFLOP/s"}))
    row = named.named_table(s).set_index("deployment").loc["this build"]
    assert row["saved_usd_h"] == pytest.approx(27.6668299, rel=1e-8)
    # the named rows take their own accelerators: the build's peak does not reach them
    seed = named.named_table(seed_scenario()).set_index("deployment")
    assert named.named_table(s).set_index("deployment").loc["llama-3.1-70b-h100", "saved_usd_h"] == pytest.approx(
        seed.loc["llama-3.1-70b-h100", "saved_usd_h"], rel=1e-12
    )


def test_the_spread_and_the_confidence_in_words():
    s = seed_scenario()
    assert named.spread_sentence(s) == (
        "Across this build, 4 named deployments and the book's measured set, fetching a block beats regenerating it"
        " inside a batch from 8 to 10 of 10 tiers when it is copied the engine's way and from 7 to 10 copied layer"
        " chunk by layer chunk (alone, from 10 of 10); the tier the trace calls for saves 0.43 to 1.24 USD/h per"
        " accelerator."
    )
    text = named.confidence_sentence(s, answer.DECISION_KEYS)
    # the 81 inputs the decision page reads (80, and how a tensor-parallel group stores a block, parallel.kv_storage,
    # assumed): 2 measured (the trace, a lone pass's board power) ... 62 assumed; the fleet priced beside the
    # decision is not among them
    assert text.startswith("How sure: of the 81 inputs this build's decision reads, 2 measured, 12 published-spec,")
    assert "62 assumed" in text and "no CXL link was measured" in text


def test_a_deployment_the_package_cannot_time_is_refused_in_its_row():
    s = Scenario(load_assumptions(sets={"regen.engine_version": "0.1"}))
    df = named.named_table(s).set_index("deployment")
    refused = df[df["refused"] != ""]
    assert list(refused.index) == ["llama-3.1-70b-h100", "llama-3.1-70b-h200", "deepseek-v3-h200", "llama-3.1-8b-h100"]
    assert refused["refused"].str.contains("has no vllm 0.1 tables").all()
    assert refused["saved_usd_h"].isna().all()
    # the build and the measured set still answer, and the sentence says which rows were refused
    assert named.spread_sentence(s).startswith(
        "Across this build and the book's measured set (4 refused: llama-3.1-70b-h100, llama-3.1-70b-h200,"
    )


def test_per_server_is_a_share_of_one_pool_and_says_so(table):
    row = table.loc["llama-3.1-70b-h100"]
    text = named.pool_sentence(seed_scenario())
    # 381.9 GiB per accelerator x 12.92 busy / 1,024 = 4.82 TiB (Llama-3.1-70B stores Llama-3-70B's 320 KiB a token,
    # so the chapter's row needs the same 4.82 TiB); 12.92 / 8 = 1.62 servers; 8 x 381.9 = 3,056 GiB a server
    assert row["tier_gib_per_accelerator"] * row["busy_accelerators"] / 1024 == pytest.approx(4.82, abs=0.005)
    assert (
        "For llama-3.1-70b-h100 that is 4.82 TiB for the 12.9 accelerators the trace keeps busy, 1.62 servers" in text
    )
    assert "each server's 3,056 GiB keeps the same hits only if the router sends every turn" in text


def test_a_trace_that_lasts_no_time_prices_no_tier_and_says_so(tmp_path):
    trace = tmp_path / "instant.jsonl"
    line = '{"timestamp": 0, "input_length": 1024, "output_length": 10, "hash_ids": [1, 2]}\n'
    trace.write_text(line * 2, encoding="utf-8")
    s = Scenario(load_assumptions(sets={"workload.trace": str(trace)}))
    df = named.named_table(s).set_index("deployment")
    # every row, the measured set's too, prices the build's trace: two requests at one instant have no rate
    assert df["saved_usd_h"].isna().all() and (df["refused"] == "").all()
    assert named.spread_sentence(s).startswith("The trace has no rate per second (it lasts no time)")
    assert named.pool_sentence(s) == (
        "The trace keeps no accelerator busy or reuses nothing, so there is no tier to share or split."
    )


def test_the_split_per_deployment_is_the_decisions_split_with_the_engines_copies(table):
    from kvtier.report import serving

    s = seed_scenario()
    # this build has no engine: its copies are the chapter's contiguous layout, one a block, so its split per tier
    # is the decision's split table's contiguous rows, tier by tier and regime by regime
    mine = {(r["tier"], r["regime"]): r for r in serving.engine_split(s)}
    ladder = [r for r in serving.split_ladder(s) if r["layout"] == "contiguous"]
    assert len(mine) == len(ladder) == 20
    for r in ladder:
        m = mine[(r["tier"], r["regime"])]
        assert (m["split_tokens"], m["gain"], m["fastest"]) == (r["split_tokens"], r["gain"], r["fastest"])
    build = table.loc["this build"]
    n_split = [sum(1 for r in ladder if r["regime"] == g and r["fastest"] == "split") for g in ("lone", "batch")]
    assert build["split_tiers"] == f"{n_split[0]}/{n_split[1]}" == "4/9"
    # the chapter's interior position (50,000) capped by Llama-3-70B's 8,192-token window, less one 16-token block
    assert build["split_prefix_tokens"] == 8176
    assert build["split_gain_max"] == max(r["gain"] for r in ladder)
    # the named deployments' 131,072-token windows hold the interior position whole
    named_rows = table[table["kind"] == "named"]
    assert (named_rows["split_prefix_tokens"] == 50_000).all()
    sentence = named.split_spread_sentence(s)
    assert sentence.startswith("Serving a reused prefix (8,176 to 50,000 tokens) with the engine's own copies")
    best = table.loc[table["split_gain_max"].idxmax()]
    assert f"by at most {best['split_gain_max']:.3g} times over the better pure way ({best.name})" in sentence


def test_a_trace_that_keeps_under_one_accelerator_busy_is_priced_per_whole_accelerator(tmp_path):
    # issue 43: a trace that keeps 0.0087 of an accelerator busy printed its saving "per accelerator" as 1/0.0087 = 114
    # times the total; an accelerator is whole, so below one the figure per accelerator is the total itself
    from tests.conftest import hand_scenario_in

    df = named.named_table(hand_scenario_in(tmp_path))
    row = df[df["deployment"] == "this build"].iloc[0]
    assert 0 < row["busy_accelerators"] < 1
    assert row["saved_usd_h_per_accelerator"] == pytest.approx(row["saved_usd_h"])


def test_a_fleet_within_one_server_has_no_tier_per_server_to_split(tmp_path):
    # issue 43: twelve requests ten minutes apart keep a fraction of one accelerator busy; "0.000371 servers of 8"
    # and "each server's 85 GiB" (8 x the whole tier) were printed. Within one server, the pool is the server's tier
    trace = tmp_path / "sparse.jsonl"
    rows = [
        f'{{"timestamp": {k * 600_000}, "input_length": 2048, "output_length": 10, "hash_ids": [1, 2, 3, {10 + k}]}}\n'
        for k in range(12)
    ]
    trace.write_text("".join(rows), encoding="utf-8")
    s = Scenario(load_assumptions(sets={"workload.trace": str(trace)}))
    row = named.named_table(s).set_index("deployment").loc["llama-3.1-70b-h100"]
    assert row["busy_accelerators"] < 1
    # per accelerator and per server are both the whole tier and the whole saving: at least one of each
    assert row["tier_gib_per_accelerator"] == row["tier_gib_per_server"]
    assert row["saved_usd_h_per_accelerator"] == row["saved_usd_h_per_server"] == pytest.approx(row["saved_usd_h"])
    text = named.pool_sentence(s)
    assert text.endswith(", all within one server of 8, so a tier per server is the pool itself.")
    assert "servers of" not in text
