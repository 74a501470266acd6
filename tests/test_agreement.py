"""One answer: every quantity shown in more than one place is the same number everywhere it is shown.

For four assumption sets (the seed, the H200's measured set, a third with another model, the
paged layout and another NVMe latency), each quantity that more than one page or command shows is
collected from every page table and command that shows it and compared with the one resolved
deployment (:class:`kvtier.deployment.Deployment`): block bytes, per-transfer latency and transfer
count per tier, fetch time per tier and layout, regeneration time per regime, the recomputation a
trace's reuses cost, the LRU tier's capacity for a hit target (its peak occupancy), and its read and
write traffic.  A page that computed one of them its own way would fail here.
"""

from __future__ import annotations

import pytest

from kvtier import analysis
from kvtier.deployment import Deployment
from kvtier.inputs.assumptions import load_assumptions
from kvtier.report.pages import answer, cost, ratio, regenerate, tiers, workload
from kvtier.scenario import Scenario
from tests.conftest import MEASURED_SET, run_cli_json

OTHER = {
    "model": "qwen2.5-72b",
    "param_count": "null",
    "fetch_layout": "per-layer",
    "tier_latency.nvme": "40us",
}
"""The third set: another model (its own parameter count), the paged layout, a faster NVMe read."""

PLACED = {"parallel.tp": "4", "parallel.pp": "2", "parallel.gpus_per_link": "2"}
"""A fourth set: the seed model over 8 accelerators (TP 4 x PP 2), two sharing each link."""

SETS = {
    "seed": ((), None, {}),
    "placed": (tuple(arg for k, v in PLACED.items() for arg in ("--set", f"{k}={v}")), None, PLACED),
    "measured": (("--assumptions", str(MEASURED_SET)), MEASURED_SET, {}),
    "other": (tuple(arg for k, v in OTHER.items() for arg in ("--set", f"{k}={v}")), None, OTHER),
}
REL = 1e-9
"""Tables of record keep ten significant figures; the same computation agrees to far better than that."""


@pytest.fixture(scope="module", params=sorted(SETS))
def case(request):
    args, path, sets = SETS[request.param]
    s = Scenario(load_assumptions(path, sets=sets))
    return request.param, args, s, Deployment.of(s)


def _layout(s: Scenario) -> str:
    return str(s.assumptions.value("fetch_layout"))


def test_block_bytes_and_transfers(case):
    _, args, s, d = case
    compare, ladder = run_cli_json("compare", *args), run_cli_json("tiers", *args)
    assert compare["block_bytes"] == pytest.approx(d.block.block_bytes, rel=REL)
    assert ladder["block_bytes"] == pytest.approx(d.block.block_bytes, rel=REL)
    assert compare["fetch_transfers"] == d.transfers[_layout(s)] == d.block.transfers
    assert ladder["layer_chunks"] == d.transfers["per-layer"]
    blocks = cost.block_table(s)
    own = blocks[blocks["block_tokens"] == d.block.tokens]
    assert (own["block_MiB"] * 2**20).tolist() == pytest.approx([d.block.block_bytes] * len(own), rel=REL)


def test_latency_and_fetch_time_per_tier_and_layout(case):
    _, args, s, d = case
    decision = answer.decision_table(s)
    ladder = tiers.table(s).set_index("link")
    links = workload.links_table(s)
    cli = {row["link"]: row for row in run_cli_json("tiers", *args)["tiers"]}
    layout = _layout(s)
    for i, tier in enumerate(d.tiers.names):
        latency_us = float(d.tiers.latency_s[i]) * 1e6
        assert ladder.loc[tier, "latency_us"] == pytest.approx(latency_us, rel=REL, abs=1e-12)
        assert cli[tier]["latency_s"] == pytest.approx(latency_us / 1e6, rel=REL, abs=1e-18)
        shown = links[links["link"] == tier]
        assert len(shown) and shown["latency_us"].tolist() == pytest.approx([latency_us] * len(shown), abs=1e-9)
        assert set(shown["transfers"]) == {d.transfers[layout]}
        for each, suffix in tiers.LAYOUT_SUFFIX.items():
            fetch_us = float(d.fetch_s(each)[i]) * 1e6
            rows = decision[(decision["tier"] == tier) & (decision["layout"] == each)]
            assert rows["fetch_us"].tolist() == pytest.approx([fetch_us] * 2, rel=REL)  # both regimes
            assert ladder.loc[tier, f"fetch_us_{suffix}"] == pytest.approx(fetch_us, rel=REL)
        own_us = float(d.fetch_s(layout)[i]) * 1e6
        assert ladder.loc[tier, "fetch_us"] == pytest.approx(own_us, rel=REL)
        assert cli[tier]["fetch_time_s"] == pytest.approx(own_us / 1e6, rel=REL)
    fetch = cost.table(s).set_index("tier")["fetch_us"]
    for i, tier in enumerate(d.tiers.names):
        if tier in fetch.index:
            assert fetch[tier] == pytest.approx(float(d.fetch_s(layout)[i]) * 1e6, rel=REL)


def test_regeneration_per_regime(case):
    _, args, s, d = case
    decision = answer.decision_table(s)
    # the cost page and `kvtier cost` price the trace pages' deployment (analysis.priced): the seed's named one
    # for the seed and placed sets, the set itself for the measured set and the one with its own model
    traced = Deployment.of(analysis.priced(s))
    blocks = cost.block_table(traced.scenario).set_index(["block_tokens", "regime"])
    cli = run_cli_json("cost", *args)["blocks"]
    ladder = tiers.table(s).set_index("link")
    for regime, words, prefix in (("lone", "lone block", "lone_"), ("batch", "in batch", "")):
        regen_ms = d.regen_s(regime) * 1e3
        shown = decision.loc[decision["regime"] == words, "regen_ms"].tolist()
        assert shown == pytest.approx([regen_ms] * len(shown), rel=REL)
        traced_ms = traced.regen_s(regime) * 1e3
        assert blocks.loc[(traced.block.tokens, regime), "regen_ms"] == pytest.approx(traced_ms, rel=REL)
        assert cli[f"{traced.block.tokens}_{regime}"]["regen_s"] == pytest.approx(traced_ms / 1e3, rel=REL)
        # the tier ladder's ratio is the same regeneration over the same fetch
        tier = d.tiers.names[0]
        ratio = ladder.loc[tier, f"{prefix}ratio_tail"] * ladder.loc[tier, "fetch_us"] / 1e3
        assert ratio == pytest.approx(regen_ms, rel=REL)


def test_the_illustrative_ratio_is_one_computation(case):
    # the ratio page's grid cell, the tier ladder's bracket row, the regenerate page's bracket, `compare`
    # and the decision's in-batch regeneration time are one number: the tail block at position 0, its attention
    # over its own tokens counted (once 218.75 on the ratio page and in `compare`, 218.78 on the tier ladder)
    _, args, s, d = case
    point = s.illustrative
    grid = ratio.table(s)
    cell = grid[grid["illustrative"]].iloc[0]
    ladder = tiers.table(s).set_index("link")
    mid = ladder.loc[f"bracket {point['bandwidth_label']}"]
    regen = regenerate.table(s).set_index("bracket")
    shown = run_cli_json("compare", *args)
    assert cell["ratio"] == pytest.approx(point["ratio"], rel=REL)
    assert cell["regen_ms"] == pytest.approx(d.regen_s("batch") * 1e3, rel=REL)
    assert regen.loc[point["mfu_label"], "regen_ms"] == pytest.approx(d.regen_s("batch") * 1e3, rel=REL)
    # `compare` times the regime its case names: a pass of regen.batch_tokens (the measured set's 16: a lone block)
    regime = "lone" if "a lone pass" in shown["regen_case"] else "batch"
    assert shown["regen_time_s"] == pytest.approx(d.regen_s(regime), rel=REL)
    if regime == "batch":
        assert shown["regen_to_fetch_ratio"] == pytest.approx(cell["ratio"], rel=REL)
    if s.assumptions.value("fetch_layout") == "contiguous":  # the ladder's bracket rows are fetched in the set's layout
        assert mid["ratio_tail"] == pytest.approx(cell["ratio"], rel=REL)


def test_the_trace_s_reuses_tier_capacity_and_traffic(case):
    _, args, built, _ = case
    d = Deployment.of(analysis.priced(built))  # what the trace pages and commands price
    s = d.scenario
    target = s.v("decision.hit_target")
    plan = {t.tier: t for t in d.plan()}
    trace = str(s.assumptions.value("workload.trace"))
    wl = run_cli_json("workload", trace, *args)
    by_target = {round(t["target_pct"]): t for t in wl["tiers"]}
    tiers_table = workload.tiers_table(s)
    row = tiers_table[(tiers_table["trace"] == trace) & (tiers_table["target"] == f"{target * 100:g}%")].iloc[0]
    cli = run_cli_json("cost", *args)["lru"][f"{target * 100:g}%"]
    accel_usd_per_s = s.v("cost.accelerator_hour")
    for tier in plan.values():
        # the capacity for the target (the workload page's LRU curve) is the cost page's tier and its peak occupancy
        assert tier.capacity_bytes == pytest.approx(by_target[round(target * 100)]["capacity_bytes"], rel=REL)
        assert tier.capacity_bytes / 2**40 == pytest.approx(row["capacity_TiB"], rel=REL)
        # the recomputation the hits avoid inside a batch: the workload page's accelerators, priced
        avoided = tier.recompute_avoided_usd_per_s / accel_usd_per_s
        assert avoided == pytest.approx(row["prefill_avoided_in_batch_gpus"], rel=REL)
        assert avoided == pytest.approx(by_target[round(target * 100)]["in_batch_gpu_s_per_s"], rel=REL)
        # what the tier reads is what the hits bring back
        assert tier.read_bytes_per_s == pytest.approx(row["hit_GBps"] * 1e9, rel=REL)
        assert tier.read_bytes_per_s == pytest.approx(by_target[round(target * 100)]["hit_bytes_per_s"], rel=REL)
        shown = next(t for t in cli if t["tier"] == tier.tier)
        for field in ("capacity_bytes", "read_bytes_per_s", "write_bytes_per_s", "saved_usd_per_s"):
            assert shown[field] == pytest.approx(getattr(tier, field), rel=REL)


def test_an_lru_tier_and_the_same_tier_in_a_hierarchy_write_alike(case):
    # the cost page's LRU tier for the hit target and the hierarchy's inclusive host-DRAM tier of the same size see
    # the same misses (an inclusive tier misses what it would miss alone) and admit each as one whole block:
    # once 8.90 GB/s (prompt tokens) against 9.17 GB/s (whole 512-token blocks) for the seed's 90 % tier
    _, _, s, _ = case
    target = f"{s.v('decision.hit_target') * 100:g}%"
    lru = cost.lru_table(s)
    lru = lru[(lru["target"] == target) & (lru["medium"] == "dram")].iloc[0]
    hier = cost.hierarchy_table(s)
    tier = hier[(hier["mode"] == "inclusive") & (hier["medium"] == "dram")].iloc[0]
    assert tier["capacity_GiB"] == pytest.approx(lru["capacity_GiB"], rel=REL)
    assert tier["write_GBps"] == pytest.approx(lru["write_GBps"], rel=REL)
    assert tier["drive_writes_per_day"] == pytest.approx(lru["drive_writes_per_day"], rel=REL)


def test_the_counts_of_tiers_that_win(case):
    _, _, s, d = case
    ladder, decision = tiers.numbers(s), answer.numbers(s)
    # the ladder's prose and the decision count the same tiers (every preset below HBM) and the same winners
    assert ladder["n_links"] == decision["n_tiers"] == len(d.tiers.names)
    for layout, suffix in tiers.LAYOUT_SUFFIX.items():
        tag = layout.replace("-", "_")
        assert ladder[f"n_fetch_wins_{suffix}"] == decision[f"n_wins_batch_{tag}"] == d.n_fetch_wins("batch", layout)
        assert ladder[f"lone_n_fetch_wins_{suffix}"] == decision[f"n_wins_lone_{tag}"] == d.n_fetch_wins("lone", layout)


@pytest.mark.parametrize("sets", [{}, OTHER, PLACED], ids=["seed", "other", "placed"])
def test_a_hit_prefix_is_fetched_alike_by_the_workload_cost_and_ttft_pages(sets):
    import numpy as np

    from kvtier.formulas import lru_tier, tiering, ttft
    from kvtier.report import serving

    s = Scenario(load_assumptions(sets=sets))
    links = s.tier_links.pick(tiering.LRU_TIERS)
    # prefixes of 0, 16, 512, 513 and 5,000 tokens, as hits of 0, 1, 1, 2 and 10 trace blocks of 512
    tokens = np.array([0.0, 16.0, 512.0, 513.0, 5000.0])
    blocks = np.ceil(tokens / 512)
    rc = s.regen_costs()
    traffic = lru_tier.LruTraffic(1.0, 0.5, blocks, tokens, 0.0, 0.0, 0.0, 1.0)
    plan = lru_tier.lru_tiers(
        s.tier_prices(),
        links,
        links.bandwidth_bytes_per_s,
        traffic,
        "batch",
        s.kv_bytes_per_token,
        s.fetch_transfers,
        1.0,
        86400.0,
        s.v("fetch.min_transfer_time"),
        s.link_efficiency,
        s.fetch_bytes / s.block_tokens,
        s.link_overhead_s,
        block_tokens=s.block_tokens,
    )
    for i, name in enumerate(links.names):
        bw, lat = float(links.bandwidth_bytes_per_s[i]), float(links.latency_s[i])
        # the workload page's fetch (RegenCosts.fetch_s) of each prefix
        workload_s = rc.fetch_s(blocks, tokens, bw, lat)
        # the TTFT page's (ttft.prefix_fetch_s through serving.fetch_of): ceil(tokens / block) x transfers copies
        f = serving.fetch_of(s, bw, lat)
        ttft_s = ttft.prefix_fetch_s(
            tokens,
            f.link_bytes_per_token,
            bw,
            lat,
            f.block_tokens,
            f.transfers_per_block,
            f.min_transfer_s,
            f.efficiency,
            f.overhead_s,
        )
        assert workload_s == pytest.approx(ttft_s, rel=1e-12), name
        # the cost page's LRU tier: the same fetches, summed over the requests in 1 s of trace
        assert plan[i].read_busy == pytest.approx(float(ttft_s.sum()), rel=1e-12), name


@pytest.mark.parametrize("sets", [{}, {"bandwidth.mid": "100GB/s", "cost.dram_gb": "5USD/GB"}], ids=["seed", "prices"])
def test_the_trace_pages_and_the_landing_s_row_of_their_deployment_are_one_computation(sets):
    from kvtier.report import named
    from kvtier.report.pages import page_of

    s = Scenario(load_assumptions(sets=sets))
    row = named.named_table(s).set_index("deployment").loc["llama-3.1-70b-h100"]
    # the cost page's table of record (the registry presents the priced deployment) and the workload page's numbers
    lru = next(t for t in page_of("13_cost").tables if t.name == "cost_lru").build(s)
    target = f"{s.v('decision.hit_target') * 100:g}%"
    dram = lru[(lru["target"] == target) & (lru["medium"] == "dram")].iloc[0]
    assert dram["saved_batch_usd_per_h"] == pytest.approx(row["saved_usd_h"], rel=REL)
    assert dram["capacity_GiB"] == pytest.approx(row["tier_gib_per_accelerator"] * row["busy_accelerators"], rel=REL)
    workload_numbers = page_of("12_workload").numbers(s)
    assert workload_numbers["model_name"] == "llama-3.1-70b"
    # the serving page places the deployment's model at its tensor-parallel size, 4
    serving_numbers = page_of("15_serving").numbers(s)
    assert (serving_numbers["model_name"], serving_numbers["tp"]) == ("llama-3.1-70b", 4)


def test_a_split_fetches_one_block_as_compare_fetches_the_block(case):
    # the split's tail of one block over the compare link is compare's fetch of the block, copies and placement
    # included (one computation: the transfer model of the engine's blocks), in every set
    from kvtier.report import serving

    name, args, s, _ = case
    out = run_cli_json("compare", *args, "--split", "--prefix", str(s.block_tokens))
    fetch = serving.fetch_of(s, s.illustrative["bandwidth_bytes_per_s"], s.transfer_latency_s)
    one = float(fetch.time_s(float(s.block_tokens)))
    assert one == pytest.approx(out["fetch_time_s"], rel=REL), name


def test_the_decisions_split_verdict_is_compare_s_split_for_the_same_tier():
    # the decision's third verdict for NVMe Gen4 copied per layer chunk, inside a batch, and compare --split over
    # that tier's link (7 GB/s, its 92 us a copy, 160 copies a block): one computation, 3,712 tokens and 1.83 times
    split = answer.split_table(Scenario()).set_index(["tier", "layout", "regime"])
    row = split.loc[("nvme-gen4-x4", "per-layer", "batch")]
    out = run_cli_json("compare", "--split", "--bandwidth", "7GB/s", "--latency", "92us", "--layout", "per-layer")
    assert row["split_tokens"] == out["split"]["batch"]["split_tokens"] == 3712
    assert row["gain"] == pytest.approx(out["split"]["batch"]["gain_over_better_pure"], rel=REL)
    assert row["prefix_tokens"] == out["split"]["prefix_tokens"] == 8176


MLA_TP8 = {"model": "deepseek-v3", "param_count": "null", "parallel.tp": "8"}
"""DeepSeek-V3 over TP 8: its MLA latent is whole on every rank, so stored per rank a tier holds it 8 times."""


def test_every_capacity_counts_the_copies_a_tier_stores():
    from kvtier.report.pages.cost.hierarchy import hierarchy_sizes
    from kvtier.report.pages.workload.fleet import fleet_table
    from kvtier.report.pages.workload.policies import policies_table

    once = Scenario(load_assumptions(sets={**MLA_TP8, "parallel.kv_storage": "once"}))
    per_rank = Scenario(load_assumptions(sets={**MLA_TP8, "parallel.kv_storage": "per-rank"}))
    # per rank: tp = 8 copies of the latent; once: 1
    assert (once.stored_copies, per_rank.stored_copies) == (1.0, 8.0)
    # the same blocks hit (bytes do not move a block), each takes 8 times the bytes in every tier on every page
    assert per_rank.tier_block().stored_bytes == 8 * once.tier_block().stored_bytes
    for a, b in zip(analysis.lru_plan(once, 0.5), analysis.lru_plan(per_rank, 0.5), strict=True):
        assert b.capacity_bytes == pytest.approx(8 * a.capacity_bytes, rel=REL)
        assert b.write_bytes_per_s == pytest.approx(8 * a.write_bytes_per_s, rel=REL)
    assert hierarchy_sizes(per_rank)["block_bytes"] == pytest.approx(8 * hierarchy_sizes(once)["block_bytes"], rel=REL)
    for table, column in (
        (workload.tiers_table, "capacity_TiB"),
        (cost.lru_table, "capacity_GiB"),
        (fleet_table, "capacity_GiB"),
        (policies_table, "capacity_GiB"),
    ):
        assert list(table(per_rank)[column]) == pytest.approx([8 * x for x in table(once)[column]], rel=REL)
    # a tier given in bytes on the command line holds an eighth of the blocks: a 512-token block of 70,272 B a token
    # is 35,979,264 B, so 1 TiB = 1,099,511,627,776 B holds 30,559.6 -> 30,559 whole blocks once, 3,819.9 -> 3,819
    # stored 8 times (287,834,112 B a block)
    args = [arg for k, v in MLA_TP8.items() for arg in ("--set", f"{k}={v}")]
    trace = str(once.assumptions.value("workload.trace"))
    blocks = {
        st: run_cli_json("workload", trace, "--capacity", "1TiB", *args, "--set", f"parallel.kv_storage={st}")["fleet"][
            "capacity_blocks"
        ]
        for st in ("once", "per-rank")
    }
    assert blocks == {"once": 30_559, "per-rank": 3_819}
