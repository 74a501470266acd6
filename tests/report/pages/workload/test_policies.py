"""The workload page's eviction policies: replayed by hand, against the optimum, and on a sample."""

from __future__ import annotations

import pytest

from kvtier.report.pages.workload import policies
from kvtier.scenario import Scenario
from tests.conftest import HAND, write_trace


def test_the_policies_table_by_hand(tmp_path):
    from kvtier.inputs.assumptions import seed

    # HAND: 1 2 | 1 2 3 | 4 | 1 5 | 1 2 3, distances -1 -1 1 1 -1 -1 3 -1 1 4 4: 6 achievable hits of 11
    # decision.hit_target 90 %: 5.4 hits -> all 6, the largest distance 4 + 1 = 5 blocks; its fractions
    # 1/32, 1/8, 1/2 of 5 blocks round down below S3-FIFO's least, 2: capacities 2 and 5
    path = write_trace(tmp_path / "hand.jsonl", HAND)
    s = Scenario(seed().with_values({"workload.trace": str(path), "workload.block_tokens": "4"}, source="test"))
    df = policies.policies_table(s)
    assert df["capacity_blocks"].tolist() == [2, 5] and df["decision"].tolist() == [False, True]
    # at 2 blocks:
    #   LRU: the three distance-1 reuses -> 3
    #   leaf-first (2's parent 1, 3's 2, 5's 1): 1 and 2 hit at once (2); 3 evicts 2 (1 has a child), 4 evicts 1,
    #   1 evicts 3, 5 evicts 4, 1 hits (3); 2 evicts 5 (1 has a child), 3 evicts 2 -> 3
    #   S3-FIFO (small 1, main 1, ghost 1): 1 and 2 enter small and hit once each; every later miss pushes the
    #   oldest small block (at most one hit) to the ghost, and no ghost id comes back before it is dropped;
    #   1 hits once more after 5 -> 3
    #   MIN: 1 and 2 hit twice each; 3, 4 and 5 are not kept (each is used after the cached ones, or never);
    #   1 hits again after 5, then 2 once more -> 5
    # at 5 blocks every block fits: all 6
    hits = {
        k: (df[f"{k}_hit_pct"] * 11 / 100).round().astype(int).tolist() for k in ("lru", "leaf_lru", "s3fifo", "min")
    }
    assert hits == {"lru": [3, 6], "leaf_lru": [3, 6], "s3fifo": [3, 6], "min": [5, 6]}
    # counted up to each request's first miss, no policy gains, and leaf-first LRU, which never evicts a block whose
    # child is held, loses nothing: its held blocks are always a prompt's prefix
    for k in ("lru", "leaf_lru", "s3fifo", "min"):
        assert (df[f"{k}_prefix_hit_pct"] <= df[f"{k}_hit_pct"] + 1e-12).all()
    assert df["leaf_lru_prefix_hit_pct"].tolist() == df["leaf_lru_hit_pct"].tolist()
    assert df["lru_of_min_pct"].tolist() == pytest.approx([3 / 5 * 100, 100.0])
    n = policies.policy_numbers(s)
    assert n["policy_lru_pct"] == pytest.approx(6 / 11 * 100) and n["policy_lru_of_min_pct"] == pytest.approx(100.0)
    assert n["policy_smallest_lru_of_min_pct"] == pytest.approx(60.0)


def test_lru_stays_below_the_optimum_on_the_conversation_trace():

    df = policies.policies_table(Scenario())
    # the decision's capacity is the LRU tier for 90 % of the achievable hits: LRU gets 90 % of what an
    # infinite cache gets, and MIN, already at the infinite cache's 36.6 % there, no more than that
    at = df[df["decision"]].iloc[0]
    assert at["min_hit_pct"] == pytest.approx((1 - 182_790 / 288_500) * 100)
    assert at["lru_of_min_pct"] == pytest.approx(90.0, abs=0.1)
    for name in ("lru", "leaf_lru", "s3fifo"):
        assert (df[f"{name}_hit_pct"] <= df["min_hit_pct"]).all()


def test_a_trace_past_the_exact_limit_has_its_policies_replayed_on_a_hashed_sample(monkeypatch):
    # the conversation trace's 288,500 references against limits of 100,000 (held in memory, and replayed exactly
    # on the ids alone): the policies replay a sample of 50,000 / 288,500 = 17.3 % of its blocks, at capacities
    # scaled by that rate, and the page says so
    import json

    import numpy as np

    from kvtier.formulas.cache.sampling import block_hash, sample_threshold
    from kvtier.inputs import traces

    exact = policies.policy_replays(Scenario())
    monkeypatch.setattr(traces, "MAX_TRACE_REFS", 100_000)  # what the page asks
    monkeypatch.setattr("kvtier.inputs.traces.load.MAX_TRACE_REFS", 100_000)  # what the reader holds
    monkeypatch.setattr(traces, "DENSE_MAX_REFS", 100_000)  # what the policies replay exactly
    monkeypatch.setattr(policies, "POLICY_SAMPLE_REFS", 50_000)
    s = Scenario()
    p = policies.policy_replays(s)
    rate = 50_000 / 288_500
    assert p["sample_rate"] == pytest.approx(rate) and p["capacities"] == exact["capacities"]
    # every reference to a kept block is replayed: those whose id (Mooncake's ids are prefix-chained already) hashes
    # below the rate, counted here from the file with the standard library's json; a request stays when it keeps one
    rows = [json.loads(line) for line in traces.trace_path("conversation")[1].read_text().splitlines()]
    ids = np.array([h for row in rows for h in row["hash_ids"]], dtype=np.int64)
    kept = int((block_hash(ids) < sample_threshold(rate)).sum())
    holding = sum(
        bool((block_hash(np.array(row["hash_ids"], dtype=np.int64)) < sample_threshold(rate)).any()) for row in rows
    )
    t = traces.read_sample("conversation", rate)
    # every request of the conversation trace opens with the same block, kept at this rate: all 12,031 stay
    assert (t.n_refs, t.n_requests) == (kept, holding) and holding == len(rows)
    # 60,204 references (20.9 %), more than 17.3 %: the kept blocks are hotter than most.  SHARDS_adj counts the
    # 10,204 beyond 50,000 as hits of the hottest: LRU's 12,152 hits at the smallest capacity count as 1,948
    assert kept == 60_204 and p["n_refs"] == pytest.approx(50_000)
    assert p["hits"]["lru"][0] == 1_948
    # so adjusted, the sample's hit ratios estimate the whole trace's within 1 point at every capacity (0.57 at
    # most measured: MIN 18.38 % against 18.96 % at the smallest); unadjusted, LRU's 20.2 % against 4.45 %
    for name in ("lru", "leaf_lru", "s3fifo", "min"):
        got = np.asarray(p["hits"][name]) / p["n_refs"]
        want = np.asarray(exact["hits"][name]) / exact["n_refs"]
        assert np.abs(got - want).max() < 0.01, name
    n = policies.policy_numbers(s)
    assert n["policy_sample_pct"] == pytest.approx(rate * 100)
    assert f"a spatially hashed sample of {rate * 100:.2g} % of its blocks" in n["policy_sentence"]


def test_a_trace_past_the_in_memory_reader_is_replayed_exactly_on_its_ids(tmp_path, monkeypatch):
    # the conversation trace copied (a new file, so a key of its own in kvtier.store) and the in-memory reader's
    # limit set below its 288,500 references: every policy, LRU included, is replayed on the ids alone
    # (traces.read_dense), and the table is the in-memory path's, every hit ratio equal
    import shutil

    from kvtier.inputs import traces
    from kvtier.inputs.assumptions import seed

    copy = tmp_path / "conversation-copy.jsonl"
    shutil.copyfile(traces.trace_path("conversation")[1], copy)
    memory = policies.policies_table(Scenario())
    monkeypatch.setattr(traces, "MAX_TRACE_REFS", 1000)
    dense = policies.policies_table(Scenario(seed().with_values({"workload.trace": str(copy)}, source="test")))
    numbers = [c for c in memory.columns if c.endswith("_pct") or c == "capacity_blocks"]
    assert dense[numbers].to_numpy().tolist() == memory[numbers].to_numpy().tolist()
