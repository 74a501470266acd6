"""kvtier.commands.replays through ``kvtier workload``: a fleet against a pool, one tier request by request (LiteHit's
worked example), the policies on a user's trace, admission filters and TTLs."""

from __future__ import annotations

import json

import pytest

from kvtier.commands import replays
from kvtier.formulas.cache import fleet
from kvtier.inputs import traces
from tests.commands.test_workload import cli
from tests.conftest import write_trace

# LiteHit's worked example (alibaba/tair-kvcache, kv_cache_manager/optimizer/liteHit/README.md, section 11): keys
# A..E chained, 4-token blocks, full blocks only: [A B C] 13 tokens, [A B D] 12, [A B C] 13, [A E] 8, [A E] 8
LITEHIT = [
    {"timestamp": t, "input_length": n, "output_length": 1, "hash_ids": ids}
    for t, (n, ids) in enumerate([(13, [1, 2, 3]), (12, [1, 2, 4]), (13, [1, 2, 3]), (8, [1, 5]), (8, [1, 5])])
]


@pytest.mark.parametrize(
    ("extra", "line"),
    [
        # committed tail first, as LiteHit does: 7 blocks of 4 tokens hit at 2 and at 3 blocks, 28 of 54 (51.85 %)
        (["--capacity", "2", "--commit", "tail-first"], "28 of 54 prompt tokens hit (51.9 %)"),
        (["--capacity", "3", "--commit", "tail-first"], "28 of 54 prompt tokens hit (51.9 %)"),
        # the book's LRU, head first: at 2 blocks a prompt's head is evicted before its tail, 2 blocks hit, 8 tokens
        (["--capacity", "2"], "8 of 54 prompt tokens hit (14.8 %)"),
        # unbounded: 8 blocks, 32 of 54 (59.26 %), whatever the order
        (["--capacity", "100"], "32 of 54 prompt tokens hit (59.3 %)"),
        # a count with an exponent is blocks too (issue 43: "2e0" was read as 2 bytes, a tier of 0 blocks)
        (["--capacity", "2e0"], "an LRU tier of 2 blocks"),
        (["--capacity", "1E2"], "32 of 54 prompt tokens hit (59.3 %)"),
    ],
)
def test_the_litehit_worked_example(tmp_path, capsys, extra, line):
    path = write_trace(tmp_path / "litehit.jsonl", LITEHIT)
    status, out, err = cli([str(path), "--format", "full-blocks", "--block-tokens", "4", *extra], capsys)
    assert status == 0, err
    assert line in out


def test_the_litehit_example_unbounded_is_the_infinite_cache(tmp_path, capsys):
    # without --capacity: the stack distances' infinite cache, 32 of the 54 prompt tokens (59.26 %), the
    # 2 tail tokens of the 13-token prompts in no block but counted in the denominator
    path = write_trace(tmp_path / "litehit.jsonl", LITEHIT)
    status, out, err = cli([str(path), "--format", "full-blocks", "--block-tokens", "4", "--json"], capsys)
    assert status == 0, err
    blocks = json.loads(out)["blocks"]
    assert blocks["hit_ratio_infinite_tokens"] == pytest.approx(32 / 54, rel=1e-12)
    assert blocks["references"] == 13  # 3 + 3 + 3 + 2 + 2 full blocks


def test_a_fleet_against_one_pooled_tier(capsys):
    # the synthetic trace over 4 instances of 1,000 blocks each, round robin, against one pool of 4,000 blocks
    status, out, err = cli(
        ["synthetic", "--capacity", "1000", "--instances", "4", "--routing", "round-robin", "--json"], capsys
    )
    assert status == 0, err
    ft = json.loads(out)["fleet"]
    # round robin: request r to instance r mod 4; the synthetic trace's 3,993 requests: 999, 998, 998, 998
    assert ft["per_instance"]["requests"] == [999, 998, 998, 998]
    assert ft["pooled"]["capacity_blocks"] == 4000
    # a pool holds every block any instance would, and more: a higher hit ratio than four separate quarters
    assert ft["pooled"]["hit_ratio_tokens"] > ft["node"]["hit_ratio_tokens"] > 0
    assert ft["none"]["ttft_mean_s"] > ft["pooled"]["ttft_mean_s"]


FLEET = ["--capacity", "600", "--instances", "4", "--routing", "prefix", "--admission", "--json"]


def same(got, want) -> None:
    """``got`` is ``want``: texts and whole numbers equal, other numbers to 1e-12 (sums taken chunk by chunk)."""
    if isinstance(want, dict):
        assert sorted(got) == sorted(want)
        for k in want:
            same(got[k], want[k])
    elif isinstance(want, list):
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            same(g, w)
    elif isinstance(want, float):
        assert got == pytest.approx(want, rel=1e-12)
    else:
        assert got == want


def fleet_of(argv: list[str], capsys) -> dict:
    """The fleet and the admission replay of ``kvtier workload ARGV --json``."""
    status, out, err = cli(argv, capsys)
    assert status == 0, err
    rep = json.loads(out)
    return {"fleet": rep["fleet"], "admission": rep["admission"]}


def test_a_fleet_read_in_chunks_is_the_fleet_read_whole(capsys, monkeypatch):
    # the conversation trace's 12,031 requests read a chunk of about 5,000 references at a time (a chunk ends
    # with a batch of at most 2,048 lines): the tiers, the requests in flight and the admission filters' counts
    # carry over, nothing changes
    whole = fleet_of(["conversation", *FLEET], capsys)
    monkeypatch.setattr(replays, "FLEET_CHUNK_REFS", 5000)
    fed = []
    real = fleet.FleetStream.feed

    def counted(self, blocks, *rest, **kw):
        fed.append(len(rest[0]) - 1)  # the chunk's requests (the fleet's feeds; admission reads the same chunks)
        return real(self, blocks, *rest, **kw)

    monkeypatch.setattr(fleet.FleetStream, "feed", counted)
    got = fleet_of(["conversation", *FLEET], capsys)
    same(got, whole)
    assert len(fed) >= 5 and sum(fed) == 12031
    assert sum(whole["fleet"]["per_instance"]["requests"]) == 12031
    assert whole["admission"]["rows"][0]["writes"] > 0


def test_a_fleet_of_a_trace_split_into_files_is_the_fleet_of_the_whole(tmp_path, capsys):
    pytest.importorskip("distributed")
    # the conversation trace cut into 3 files of consecutive requests, read on a one-worker LocalCluster and fed
    # in the order of their timestamps: the same fleet and admission replays, request for request
    lines = traces.trace_path("conversation")[1].read_text().splitlines()
    parts = tmp_path / "parts"
    parts.mkdir()
    for k, lo in enumerate(range(0, len(lines), 4100)):
        (parts / f"hour-{k}.jsonl").write_text("\n".join(lines[lo : lo + 4100]) + "\n")
    whole = fleet_of(["conversation", *FLEET], capsys)
    got = fleet_of([str(parts), "--parts", "--workers", "1", *FLEET], capsys)
    same(got, whole)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--instances", "4"], "--instances and --routing spread the trace over a fleet: add --capacity"),
        (["--capacity", "10", "--instances", "0"], "--instances 0: key 'fleet.instances' = '0' is out of range"),
        (["--capacity", "lots"], "--capacity 'lots': a capacity in blocks, or bytes with a unit"),
        (["--capacity", "-1"], "--capacity '-1': a capacity from 0 to 2**53 blocks"),
        (["--parts", "--policies"], "--policies replays a trace in one file: leave out --parts"),
    ],
)
def test_bad_fleet_options_are_named(capsys, argv, message):
    status, out, err = cli(["synthetic", *argv], capsys)
    assert status == 2 and out == ""
    assert message in err


def test_policies_on_the_command_line_agree_with_the_replays(capsys):
    # --policies replays each policy at each tier's capacity; at the 90 % tier of the conversation trace
    # (31,589 blocks, as the decision) S3-FIFO hits 90,511 of the 288,500 references per block and 89,868 before
    # each request's first miss (tests/formulas/cache/test_policies.py counts them)
    status, out, err = cli(["conversation", "--policies", "--json"], capsys, deployment="llama-3.1-70b-h100")
    assert status == 0, err
    pol = json.loads(out)["policies"]
    at = pol["capacity_blocks"].index(31_589)
    assert pol["per-block"]["s3fifo"][at] == pytest.approx(90_511 / 288_500, rel=1e-12)
    assert pol["prefix"]["s3fifo"][at] == pytest.approx(89_868 / 288_500, rel=1e-12)
    # leaf-first LRU evicts leaves only, so its hits always form a prefix: the two rules agree
    assert pol["prefix"]["leaf_lru"] == pol["per-block"]["leaf_lru"]
    # MIN bounds every policy's per-block hits at every capacity (not their prefix hits: it does not aim at them)
    for name in ("lru", "leaf_lru", "s3fifo"):
        assert all(m >= p for m, p in zip(pol["per-block"]["min"], pol["per-block"][name], strict=True))


def test_admission_filters_and_ttls_on_the_command_line(capsys):
    # --admission replays the tier with each filter and each TTL tier: admitting every miss is the tier's LRU
    status, out, err = cli(
        ["synthetic", "--capacity", "2000", "--admission", "--json"], capsys, deployment="llama-3.1-70b-h100"
    )
    assert status == 0, err
    rep = json.loads(out)
    rows = {r["filter"]: r for r in rep["admission"]["rows"]}
    assert list(rows) == ["always", "second", "third", "tinylfu", "ttl pcie5-x16", "ttl nvme-gen4-x4"]
    assert rows["always"]["hit_ratio_tokens"] == pytest.approx(rep["fleet"]["node"]["hit_ratio_tokens"], rel=1e-12)
    # a filter writes no more than admitting every miss, and its loss per drive write saved is points over DWPD
    for name in ("second", "third", "tinylfu"):
        r = rows[name]
        assert r["writes"] <= rows["always"]["writes"]
        saved = rows["always"]["drive_writes_per_day"] - r["drive_writes_per_day"]
        lost = (rows["always"]["hit_ratio_tokens"] - r["hit_ratio_tokens"]) * 100
        assert r["points_lost_per_dwpd_saved"] == pytest.approx(lost / saved, rel=1e-12)
    status, out, err = cli(["synthetic", "--admission"], capsys)
    assert status == 2 and "--admission replays one tier: add --capacity" in err


def test_the_five_minute_ttls_expire_nothing_the_decisions_tier_keeps(capsys):
    # what book/using/workload.md says: the conversation trace at the decision's 31,589 blocks, priced for the named
    # deployment, keeps no block as long as host DRAM's or NVMe's five-minute-rule residency, so the TTLs match LRU
    status, out, err = cli(
        ["conversation", "--capacity", "31589", "--admission", "--json"], capsys, deployment="llama-3.1-70b-h100"
    )
    assert status == 0, err
    rows = {r["filter"]: r for r in json.loads(out)["admission"]["rows"]}
    for ttl in ("ttl pcie5-x16", "ttl nvme-gen4-x4"):
        assert rows[ttl]["expired"] == 0 and rows[ttl]["hit_ratio_tokens"] == rows["always"]["hit_ratio_tokens"]


def test_points_lost_below_zero_read_as_a_gain():
    # issue 43: the admission table printed -0.01 under "pts lost / DWPD saved"
    from kvtier.commands.replays import _lost

    assert (_lost(-0.0132), _lost(0.5), _lost(None)) == ("gains 0.01", "0.50", "n/a")
