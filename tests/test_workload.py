"""The trace analysis (kvtier.formulas.reuse), its command (commands.workload) and the workload page's numbers."""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import OrderedDict
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvtier.commands import workload as workload_cli
from kvtier.errors import KvtierError
from kvtier.formulas import reuse as workload
from kvtier.scenario import Scenario

# ---------------------------------------------------------------------------
# a hand-made trace of five requests, 4 tokens a block
# ---------------------------------------------------------------------------

HAND = [
    {"timestamp": 0, "input_length": 8, "output_length": 5, "hash_ids": [1, 2]},
    {"timestamp": 1000, "input_length": 10, "output_length": 6, "hash_ids": [1, 2, 3]},
    {"timestamp": 2000, "input_length": 4, "output_length": 7, "hash_ids": [4]},
    {"timestamp": 3000, "input_length": 7, "output_length": 8, "hash_ids": [1, 5]},
    {"timestamp": 5000, "input_length": 10, "output_length": 9, "hash_ids": [1, 2, 3]},
]
# references in order: 1 2 | 1 2 3 | 4 | 1 5 | 1 2 3   (11 references, 5 distinct blocks)
# stack distance = distinct other blocks used since the block's last use (-1: first use):
#   idx 2 (1): since idx 0, {2}          -> 1      idx 3 (2): since idx 1, {1}        -> 1
#   idx 6 (1): since idx 2, {2, 3, 4}    -> 3      idx 8 (1): since idx 6, {5}        -> 1
#   idx 9 (2): since idx 3, {3, 4, 1, 5} -> 4      idx 10 (3): since idx 4, {4, 1, 5, 2} -> 4
HAND_DISTANCES = [-1, -1, 1, 1, -1, -1, 3, -1, 1, 4, 4]
HAND_BLOCK_TOKENS = 4


def write_trace(path: Path, rows: list[dict] | list[str]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


@pytest.fixture
def hand(tmp_path) -> Path:
    return write_trace(tmp_path / "hand.jsonl", HAND)


def test_hand_trace_stack_distances_and_hit_ratios(hand):
    r = workload.Reuse.of(workload.read_trace(hand, HAND_BLOCK_TOKENS))
    assert r.distance.tolist() == HAND_DISTANCES
    assert (r.trace.n_requests, r.trace.n_refs, r.trace.n_unique) == (5, 11, 5)
    # infinite cache: the 6 references with a distance >= 0 hit: 6 / 11
    assert float(r.hit_ratio()) == pytest.approx(6 / 11)
    # LRU of C blocks hits distances < C: C=1 none; C=2 idx 2, 3, 8; C=4 adds idx 6; C=5 all six
    assert r.hit_ratio(np.array([1, 2, 3, 4, 5, 100])).tolist() == pytest.approx(
        [0, 3 / 11, 3 / 11, 4 / 11, 6 / 11, 6 / 11]
    )
    # tokens: blocks of 4 but the last of a 10-token prompt holds 2 and of a 7-token prompt 3; 39 tokens in all;
    # hits: idx 2, 3, 6, 8, 9 hold 4 each, idx 10 holds 2: 22 / 39
    assert r.trace.ref_tokens.tolist() == [4, 4, 4, 4, 2, 4, 4, 3, 4, 4, 2]
    assert float(r.hit_ratio(weighting="tokens")) == pytest.approx(22 / 39)
    # capacity for a share of the 6 achievable hits (sorted distances 1 1 1 3 4 4): 50 % needs 3 hits -> C = 1 + 1;
    # 80 % needs 4.8 -> 5 hits -> C = 4 + 1; 95 % and 100 % the same
    assert [r.capacity_for(x) for x in (0.5, 0.6, 0.8, 0.95, 1.0)] == [2, 4, 5, 5, 5]
    # reuse intervals (s): idx 2, 3: 1 - 0; idx 6: 3 - 1; idx 8: 5 - 3; idx 9, 10: 5 - 1
    assert r.reuse_interval_s.tolist() == pytest.approx([1, 1, 2, 2, 4, 4])
    # hits form a prefix of every prompt, and distances never fall along one (R2: 1 1 -; R4: 3 -; R5: 1 4 4)
    assert (r.requests_with_a_hit_after_a_miss, r.requests_with_a_distance_that_falls) == (0, 0)
    # per request at C = 2: R2 hits blocks 1, 2 (8 tokens), R5 hits block 1 (4 tokens)
    blocks, tokens = r.hit_tokens(2)
    assert blocks.tolist() == [0, 2, 0, 0, 1] and tokens.tolist() == [0, 8, 0, 0, 4]


def test_the_prefix_checks_can_fail():
    # a block that hits after its predecessor missed: request 2 reuses block 9 under a new first block 7
    trace = workload.parse_trace(
        "\n".join(
            json.dumps(r)
            for r in [
                {"timestamp": 0, "input_length": 2, "output_length": 1, "hash_ids": [8, 9]},
                {"timestamp": 1, "input_length": 2, "output_length": 1, "hash_ids": [7, 9]},
            ]
        ),
        "broken-chain",
        1,
    )
    r = workload.Reuse.of(trace)
    assert r.distance.tolist() == [-1, -1, -1, 1]
    assert (r.requests_with_a_hit_after_a_miss, r.requests_with_a_distance_that_falls) == (1, 1)


def lru_brute(blocks: list[int]) -> list[int]:
    """Stack distances by moving each block to the top of an explicit stack."""
    stack: list[int] = []
    out = []
    for b in blocks:
        if b in stack:
            out.append(len(stack) - 1 - stack.index(b))
            stack.remove(b)
        else:
            out.append(-1)
        stack.append(b)
    return out


def lru_hits(blocks: list[int], capacity: int) -> int:
    """Hits of a direct simulation of an LRU cache of ``capacity`` blocks."""
    cache: OrderedDict[int, None] = OrderedDict()
    hits = 0
    for b in blocks:
        if b in cache:
            hits += 1
            cache.move_to_end(b)
        else:
            cache[b] = None
            if len(cache) > capacity:
                cache.popitem(last=False)
    return hits


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 12), min_size=1, max_size=80))
def test_stack_distances_equal_a_direct_lru_simulation(blocks):
    arr = np.array(blocks)
    d = workload.stack_distances(arr)
    assert d.tolist() == lru_brute(blocks)
    for capacity in (1, 2, 3, 5, 8, 13):
        assert int(((d >= 0) & (d < capacity)).sum()) == lru_hits(blocks, capacity)


def test_stack_distances_on_a_larger_random_trace():
    rng = np.random.default_rng(7)
    blocks = (rng.zipf(1.3, 3000) % 400).tolist()
    d = workload.stack_distances(np.array(blocks))
    assert d.tolist() == lru_brute(blocks)
    trace = workload.Trace(
        "t", 1, np.zeros(1), np.array([3000]), np.zeros(1, int), np.array([0, 3000]), np.array(blocks)
    )
    r = workload.Reuse(trace, workload.previous_reference(trace.blocks), d)
    for capacity in (1, 10, 50, 200):
        assert float(r.hit_ratio(capacity)) == pytest.approx(lru_hits(blocks, capacity) / 3000)


# ---------------------------------------------------------------------------
# bad traces: one line naming file and line, exit status 2, nothing written
# ---------------------------------------------------------------------------

GOOD = {"timestamp": 0, "input_length": 1000, "output_length": 10, "hash_ids": [1, 2]}
BAD = {
    "malformed": (['{"timestamp": 0, "input_length": 10'], 1, "malformed JSON"),
    "not an object": (["[1, 2]"], 1, "expected a JSON object"),
    "missing field": ([{k: v for k, v in GOOD.items() if k != "hash_ids"}], 1, "missing field 'hash_ids'"),
    "negative length": ([GOOD, {**GOOD, "output_length": -3}], 2, "'output_length' is negative (-3)"),
    "fractional length": ([{**GOOD, "input_length": 10.5}], 1, "'input_length' must be a whole number"),
    # 1000 tokens at 512 a block need ceil(1000 / 512) = 2 ids
    "hash_ids length": ([GOOD, GOOD, {**GOOD, "hash_ids": [1, 2, 3]}], 3, "has 3 ids but input_length 1000"),
    "hash_ids not ints": ([{**GOOD, "hash_ids": [1, "x"]}], 1, "'hash_ids' must be a list of integers"),
    "timestamp backwards": ([{**GOOD, "timestamp": 5}, {**GOOD, "timestamp": 4}], 2, "goes backwards"),
    "hash id too large": ([{**GOOD, "hash_ids": [1, 2**70]}], 1, "a hash id does not fit in 64 bits"),
    "timestamp not a number": ([{**GOOD, "timestamp": "now"}], 1, "'timestamp' must be a finite number"),
}


def cli(argv: list[str], capsys) -> tuple[int, str, str]:
    """``kvtier workload ARGV`` through add_parser and run, with the command line's error contract."""
    parser = argparse.ArgumentParser(prog="kvtier")
    workload_cli.add_parser(parser.add_subparsers())
    args = parser.parse_args(["workload", *argv])
    try:
        status = args.func(args)
    except KvtierError as exc:  # what kvtier.commands.main does with every user error
        print(f"kvtier: error: {exc}", file=sys.stderr)
        status = 2
    out = capsys.readouterr()
    return status, out.out, out.err


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_bad_trace_is_one_line_naming_file_and_line(case, tmp_path, capsys):
    rows, line, message = BAD[case]
    path = write_trace(tmp_path / "bad.jsonl", rows)
    with pytest.raises(KvtierError) as err:
        workload.read_trace(path)
    text = str(err.value)
    assert text.startswith(f"{path}: line {line}: ") and message in text and "\n" not in text, text
    status, out, err_text = cli([str(path)], capsys)
    assert (status, out) == (2, "")
    assert err_text == f"kvtier: error: {text}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.jsonl"]  # nothing written


@pytest.mark.parametrize(
    ("content", "message"),
    [("", "the trace holds no requests"), ("\n\n", "the trace holds no requests")],
)
def test_an_empty_trace_is_refused(tmp_path, content, message):
    path = tmp_path / "empty.jsonl"
    path.write_text(content)
    with pytest.raises(KvtierError, match=f"^{path}: {message}$"):
        workload.read_trace(path)


def test_an_unknown_trace_names_the_shipped_ones(tmp_path, capsys):
    status, out, err = cli([str(tmp_path / "nope.jsonl")], capsys)
    assert (status, out) == (2, "")
    assert (
        err == f"kvtier: error: {tmp_path / 'nope.jsonl'}: trace not found; name a file or a shipped trace:"
        " conversation, synthetic\n"
    )


def test_the_real_command_line_exits_2_once_wired(tmp_path, capsys):
    from kvtier import commands as kvtier_cli

    if "workload" not in kvtier_cli.build_parser().format_help():
        pytest.skip("kvtier.commands does not register `workload` yet")
    path = write_trace(tmp_path / "bad.jsonl", [GOOD, {**GOOD, "timestamp": -1}])
    assert kvtier_cli.main(["workload", str(path)]) == 2
    out = capsys.readouterr()
    assert (
        out.out == ""
        and out.err == f"kvtier: error: {path}: line 2: timestamp -1 ms goes backwards (the line before: 0)\n"
    )


# ---------------------------------------------------------------------------
# the command
# ---------------------------------------------------------------------------


def test_the_command_reports_the_hand_trace_in_json(hand, capsys):
    status, out, err = cli([str(hand), "--block-tokens", "4", "--json"], capsys)
    assert (status, err) == (0, "")
    rep = json.loads(out)
    assert rep["trace"]["requests"] == 5 and rep["trace"]["duration_s"] == 5.0
    assert rep["trace"]["requests_per_s"] == 1.0  # 5 requests over 5 s
    assert (rep["blocks"]["references"], rep["blocks"]["unique"]) == (11, 5)
    assert rep["blocks"]["hit_ratio_infinite_blocks"] == pytest.approx(6 / 11)
    # Llama-3 70B in bf16: 2 x 80 layers x 8 KV heads x 128 x 2 B = 327,680 B a token; x 4 tokens a block
    assert rep["block_bytes"] == 327_680 * 4
    tiers = {t["target_pct"]: t for t in rep["tiers"]}
    assert sorted(tiers) == [50, 80, 90, 95, 100]
    assert [tiers[t]["capacity_blocks"] for t in (50, 80, 100)] == [2, 5, 5]
    # at C = 2: 12 hit tokens over 5 s; inside a batch each prefix costs 2 x 70e9 x h + 2,621,440 x h (h + 1) / 2
    # FLOP at 25 % of 500 TFLOP/s: R2 h = 8 and R5 h = 4
    flops = sum(2 * 70e9 * h + 2_621_440 * h * (h + 1) / 2 for h in (8, 4))
    assert tiers[50]["hit_tokens_per_s"] == pytest.approx(12 / 5)
    assert tiers[50]["in_batch_gpu_s_per_s"] == pytest.approx(flops / (500e12 * 0.25) / 5)
    # alone, each prefix streams 140e9 B of weights at 3.35 TB/s x 80 %: 52.24 ms, far above its compute
    assert tiers[50]["lone_gpu_s_per_s"] == pytest.approx(2 * 140e9 / (3.35e12 * 0.8) / 5)
    assert tiers[50]["lone_memory_bound_share"] == 1.0
    # the CXL 2.0 x8 expander preset: 31.5 GB/s net; 12 tokens x 327,680 B / 31.5e9 over 5 s (latency per block)
    link = next(k for k in tiers[50]["links"] if k["link"] == "cxl2-x8")
    from kvtier.inputs import hardware

    lat = hardware.link("cxl2-x8").latency_s
    assert link["fetch_link_s_per_s"] == pytest.approx((12 * 327_680 / 31.5e9 + 3 * lat) / 5)


def test_the_command_prints_text_and_takes_another_model(hand, capsys):
    status, out, _ = cli([str(hand), "--block-tokens", "4", "--model", "llama-3-8b"], capsys)
    assert status == 0
    # Llama-3 8B: 2 x 32 layers x 8 x 128 x 2 B = 131,072 B a token, x 4 = 512 KiB a block
    assert "llama-3-8b, bf16 KV: 512.00 KiB a block" in out
    assert "blocks: 11 references, 5 unique; an infinite cache hits 54.5 % of blocks, 56.4 % of tokens" in out
    assert "5 of 5 requests have stack distances that never fall" in out


def test_the_command_runs_the_shipped_trace_by_name(capsys):
    status, out, _ = cli(["synthetic"], capsys)
    assert status == 0 and out.startswith("trace synthetic: 3,993 requests over 17.03 min")


# ---------------------------------------------------------------------------
# the shipped traces and the page
# ---------------------------------------------------------------------------


def test_the_shipped_traces_counted_directly_agree_and_hits_are_prefixes():
    for name, n_requests in (("conversation", 12_031), ("synthetic", 3_993)):
        _, path = workload.trace_path(name)
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        ids = [h for row in rows for h in row["hash_ids"]]
        r = workload.analyse(name)
        assert (r.trace.n_requests, r.trace.n_refs, r.trace.n_unique) == (n_requests, len(ids), len(set(ids)))
        # an infinite cache misses each distinct block once: hit ratio = 1 - unique / references
        assert float(r.hit_ratio()) == pytest.approx(1 - len(set(ids)) / len(ids))
        assert (r.requests_with_a_hit_after_a_miss, r.requests_with_a_distance_that_falls) == (0, 0)


def test_the_page_numbers():
    from kvtier.report.pages import workload as page

    n = page.numbers(Scenario())
    # conversation: 288,500 references to 182,790 blocks; 160 MiB a block (327,680 B x 512)
    assert (n["references"], n["unique_blocks"], n["block_mib"]) == (288_500, 182_790, 160.0)
    assert n["hit_inf_blocks_pct"] == pytest.approx((1 - 182_790 / 288_500) * 100)
    assert n["unique_tib"] == pytest.approx(182_790 * 160 / 2**20)
    assert n["cap95_tib"] == pytest.approx(n["cap95_blocks"] * 160 / 2**20)
    assert (n["hit_after_miss_requests"], n["falling_requests"], n["prefix_ok_requests"]) == (0, 0, 12_031)
    # a lone 512-token block: 2 x 70e9 x 512 FLOP at 125 TFLOP/s = 573.4 ms (plus attention) against
    # 140e9 B / (3.35e12 x 0.8) = 52.24 ms; they meet at 52.24 ms x 125e12 / 140e9 = 46.6 tokens
    assert n["lone_weights_read_ms"] == pytest.approx(140e9 / 2.68e12 * 1e3)
    assert n["lone_block_compute_ms"] == pytest.approx((2 * 70e9 * 512 + 2_621_440 * 512 * 513 / 2) / 125e12 * 1e3)
    assert n["lone_meet_tokens"] == pytest.approx(140e9 / 2.68e12 * 125e12 / 140e9)
    # every hit prefix is whole 512-token blocks, past 46.6 tokens: compute-bound alone, so the regimes agree
    assert n["lone_memory_bound_pct"] == 0.0 and n["lone_over_in_batch"] == pytest.approx(1.0)
    assert n["cap50_tib"] < n["cap80_tib"] < n["cap90_tib"] < n["cap95_tib"] < n["unique_tib"]
    assert n["contrast"] == "synthetic" and n["contrast_prefix_ok_requests"] == 3_993


def test_the_page_sizes_another_trace_when_the_set_names_it(tmp_path):
    from kvtier.inputs.assumptions import seed
    from kvtier.report.pages import workload as page

    path = write_trace(tmp_path / "hand.jsonl", HAND)
    s = Scenario(seed().with_values({"workload.trace": str(path), "workload.block_tokens": "4"}, source="test"))
    n = page.numbers(s)
    assert (n["requests"], n["references"], n["unique_blocks"], n["contrast"]) == (5, 11, 5, "synthetic")
    assert n["cap50_blocks"] == 2


# ---------------------------------------------------------------------------
# the generator
# ---------------------------------------------------------------------------


def test_generated_traces_are_seeded_valid_and_prefix_shaped():
    a = workload.generate_trace(300, seed=3)
    b = workload.generate_trace(300, seed=3)
    assert np.array_equal(a.blocks, b.blocks) and np.array_equal(a.timestamps_s, b.timestamps_s)
    assert not np.array_equal(a.blocks, workload.generate_trace(300, seed=4).blocks)
    again = workload.parse_trace("\n".join(workload.to_jsonl(a)), "generated", a.block_tokens)
    assert np.array_equal(again.blocks, a.blocks) and np.array_equal(again.input_tokens, a.input_tokens)
    r = workload.Reuse.of(again)
    assert r.requests_with_a_distance_that_falls == 0 and 0 < float(r.hit_ratio()) < 1
    assert math.isclose(float(r.hit_ratio(r.capacity_for(1.0))), float(r.hit_ratio()))


def test_editing_the_trace_file_re_executes_only_the_pages_that_read_it(tmp_path):
    from kvtier.inputs.assumptions import seed
    from kvtier.pipeline.build import plan
    from tests.conftest import ROOT

    path = write_trace(tmp_path / "hand.jsonl", HAND)
    a = seed().with_values({"workload.trace": str(path), "workload.block_tokens": "4"}, source="test")
    before = {job.name: job.inputs_hash for job in plan(ROOT, a)}
    write_trace(path, HAND[:4])
    after = {job.name: job.inputs_hash for job in plan(ROOT, a)}
    # the assumptions page shows the key; the workload page analyses the trace; the cost page sizes its mix
    assert sorted(name for name in before if before[name] != after[name]) == [
        "00_assumptions",
        "12_workload",
        "13_cost",
    ]


# ---------------------------------------------------------------------------
# streaming: the same curve in memory proportional to the distinct blocks
# ---------------------------------------------------------------------------


def first_seen_dense(values: np.ndarray) -> np.ndarray:
    """Dense ids in order of first appearance, computed the obvious way."""
    ids: dict[int, int] = {}
    return np.array([ids.setdefault(int(v), len(ids)) for v in values], dtype=np.int64)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(-3, 12), min_size=1, max_size=80),
    st.lists(st.integers(0, 80), max_size=5),
)
def test_the_stream_in_any_chunks_equals_the_whole(values, cuts):
    raw = np.array(values, dtype=np.int64) * 1_000_003
    cuts = sorted(c for c in cuts if c <= raw.size)
    dense_ids = workload.DenseIds()
    mapped = np.concatenate([dense_ids.map(part) for part in np.split(raw, cuts)])
    assert mapped.tolist() == first_seen_dense(raw).tolist()
    kernel = workload.StackDistanceStream()
    streamed = np.concatenate([kernel.feed(part) for part in np.split(mapped, cuts)])
    assert streamed.tolist() == lru_brute(values)


def test_stream_lru_equals_the_in_memory_analysis(hand):
    for name, block, chunk in (("synthetic", 512, 700), (str(hand), 4, 2)):
        whole = workload.analyse(name, block)
        h = workload.stream_lru(name, block, chunk_refs=chunk)
        assert (h.n_requests, h.n_refs, h.n_unique) == (
            whole.trace.n_requests,
            whole.trace.n_refs,
            whole.trace.n_unique,
        )
        for weighting in ("blocks", "tokens"):
            for capacity in (1, 2, 5, 100, 5_000, math.inf):
                assert h.hit_ratio(capacity, weighting) == pytest.approx(float(whole.hit_ratio(capacity, weighting)))
            shares = (0.5, 0.8, 0.9, 0.95, 1.0)
            assert [h.capacity_for(x, weighting) for x in shares] == [whole.capacity_for(x, weighting) for x in shares]
        assert h.requests_with_a_distance_that_falls == whole.requests_with_a_distance_that_falls == 0


@pytest.mark.parametrize("case", ["missing field", "timestamp backwards", "hash_ids length"])
def test_stream_lru_refuses_bad_lines_like_the_reader(case, tmp_path):
    rows, line, message = BAD[case]
    path = write_trace(tmp_path / "bad.jsonl", rows)
    with pytest.raises(KvtierError) as err:
        workload.stream_lru(path)
    assert str(err.value).startswith(f"{path}: line {line}: ") and message in str(err.value)


def test_the_command_streams_the_same_curve(hand, capsys):
    status, out, _ = cli([str(hand), "--block-tokens", "4", "--json"], capsys)
    whole = json.loads(out)
    status_s, out_s, _ = cli([str(hand), "--block-tokens", "4", "--json", "--stream"], capsys)
    streamed = json.loads(out_s)
    assert status == status_s == 0
    assert streamed["blocks"] == {k: whole["blocks"][k] for k in streamed["blocks"]}
    keys = ("target_pct", "capacity_blocks", "capacity_bytes", "hit_ratio_blocks", "hit_ratio_tokens")
    assert streamed["tiers"] == [{k: t[k] for k in keys} for t in whole["tiers"]]
    status, out, err = cli([str(write_trace(hand, HAND[1:] + HAND[:1])), "--block-tokens", "4", "--stream"], capsys)
    assert (status, out) == (2, "") and err.startswith(f"kvtier: error: {hand}: line 5: timestamp 0 ms goes backwards")


# ---------------------------------------------------------------------------
# trace formats: Alibaba's Qwen traces (timestamps in s, one id per 16-token block, not chained)
# ---------------------------------------------------------------------------

QWEN = [
    # the fields of qwen-bailian-usagetraces-anon's README (ATC'25): chat_id, parent_chat_id, timestamp (s since the
    # trace's start), input_length, output_length, type, turn, hash_ids (one salted SipHash per 16-token block)
    {"chat_id": 0, "parent_chat_id": -1, "timestamp": 0.0, "input_length": 40, "output_length": 10, "type": "text",
     "turn": 1, "hash_ids": [10, 11, 12]},
    {"chat_id": 1, "parent_chat_id": 0, "timestamp": 1.5, "input_length": 70, "output_length": 12, "type": "text",
     "turn": 2, "hash_ids": [10, 11, 12, 13, 14]},
    {"chat_id": 2, "parent_chat_id": -1, "timestamp": 4.0, "input_length": 32, "output_length": 5, "type": "search",
     "turn": 1, "hash_ids": [99, 11]},
    {"chat_id": 3, "parent_chat_id": 1, "timestamp": 6.0, "input_length": 90, "output_length": 7, "type": "text",
     "turn": 3, "hash_ids": [10, 11, 12, 13, 14, 15]},
]  # fmt: skip
# lengths at 16 tokens a block: ceil(40/16) = 3, ceil(70/16) = 5, ceil(32/16) = 2, ceil(90/16) = 6 ids: 16 references.
# Chained, block 11 after 99 (request 3) is another prefix than 11 after 10. Naming the chained ids
# A=(10) B=(10,11) C=(..12) D=(..13) E=(..14) X=(99) Y=(99,11) F=(..15), the references are
#   A B C | A B C D E | X Y | A B C D E F
# stack distances: A B C again after {B,C}, {C,A}, {A,B}: 2 2 2; in request 4 each of A..E has six others since: 6
QWEN_DISTANCES = [-1, -1, -1, 2, 2, 2, -1, -1, -1, -1, 6, 6, 6, 6, 6, -1]


@pytest.fixture
def qwen(tmp_path) -> Path:
    return write_trace(tmp_path / "qwen.jsonl", QWEN)


def test_a_qwen_trace_is_read_in_seconds_with_its_ids_chained(qwen):
    r = workload.Reuse.of(workload.read_trace(qwen, 16, "qwen"))
    assert r.trace.trace_format == "qwen"
    assert r.distance.tolist() == QWEN_DISTANCES
    # 8 hits of 16 references, 8 distinct prefixes; no block hits after a miss once chained
    assert (r.trace.n_refs, r.trace.n_unique, float(r.hit_ratio())) == (16, 8, 0.5)
    assert (r.requests_with_a_hit_after_a_miss, r.requests_with_a_distance_that_falls) == (0, 0)
    # timestamps are seconds: 0, 1.5, 4, 6 s (not 6 ms)
    assert r.trace.timestamps_s.tolist() == [0.0, 1.5, 4.0, 6.0] and r.trace.duration_s == 6.0
    # reuse intervals: A B C at 1.5 s after request 1; A B C D E at 6 - 1.5 = 4.5 s
    assert r.reuse_interval_s.tolist() == [1.5] * 3 + [4.5] * 5


def test_the_same_trace_read_as_mooncake_is_1000_times_shorter_and_unchained(qwen):
    r = workload.Reuse.of(workload.read_trace(qwen, 16))
    # 6.0 read as milliseconds: 0.006 s
    assert r.trace.duration_s == pytest.approx(0.006)
    # unchained, block 11 of request 3 "hits" after 99 missed: 9 hits, and one request with a hit after a miss
    assert float(r.hit_ratio()) == 9 / 16 and r.requests_with_a_hit_after_a_miss == 1


def test_the_command_declares_the_format_and_warns_when_hits_follow_a_miss(qwen, capsys):
    status, out, err = cli([str(qwen), "--format", "qwen", "--json"], capsys)
    assert (status, err) == (0, "")
    rep = json.loads(out)
    # --format qwen sets 16 tokens a block: 16 references over 6 s, 4 / 6 requests a second
    assert (rep["trace"]["format"], rep["trace"]["block_tokens"], rep["trace"]["duration_s"]) == ("qwen", 16, 6.0)
    assert rep["trace"]["requests_per_s"] == pytest.approx(4 / 6)
    assert rep["blocks"]["hit_ratio_infinite_blocks"] == 0.5
    note = "format qwen: timestamps in s, one id per block, chained here as a prefix cache does"
    assert rep["notes"] == {"format": note}
    # read as the default format the hits after a miss are warned of in the normal output, not only in --json
    status, out, err = cli([str(qwen), "--block-tokens", "16"], capsys)
    assert status == 0 and err == ""
    warning = out.splitlines()[0]
    assert warning.startswith("warning: in 1 of 4 requests a block hits after an earlier block of the same prompt")
    assert warning.endswith("declare a format that chains them (--format qwen)")
    status, out, _ = cli([str(qwen), "--block-tokens", "16", "--stream"], capsys)
    assert status == 0 and out.startswith("warning: in 1 of 4 requests")
    status, out, _ = cli([str(qwen), "--format", "qwen", "--stream", "--json"], capsys)
    streamed = json.loads(out)
    # the stream chains the same way: 8 distinct prefixes, half the references hit, none after a miss
    assert (streamed["blocks"]["unique"], streamed["blocks"]["hit_ratio_infinite_blocks"]) == (8, 0.5)
    assert streamed["prefix"]["requests_with_a_hit_after_a_miss"] == 0


def test_the_set_declares_the_format_for_the_command(qwen, capsys):
    status, out, _ = cli([str(qwen), "--set", "workload.trace_format=qwen", "--block-tokens", "16", "--json"], capsys)
    assert status == 0 and json.loads(out)["trace"]["duration_s"] == 6.0


def test_the_formats_are_the_keys_choices():
    from kvtier.inputs.assumptions import SCHEMA, seed

    assert SCHEMA["workload.trace_format"].choices == tuple(workload.TRACE_FORMATS)
    assert seed().value("workload.trace_format") == workload.DEFAULT_FORMAT
    # Mooncake: ms, chained, 512 tokens an id; Qwen: s, one id per 16-token block
    assert [(f.unit, f.units_per_s, f.chained, f.block_tokens) for f in workload.TRACE_FORMATS.values()] == [
        ("ms", 1e3, True, 512),
        ("s", 1.0, False, 16),
    ]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.integers(-3, 3), max_size=6), min_size=1, max_size=8))
def test_chained_ids_are_equal_exactly_when_the_prefixes_are(requests):
    ids = np.array([h for r in requests for h in r], dtype=np.int64)
    starts = np.r_[0, np.cumsum([len(r) for r in requests])].astype(np.int64)
    chained = workload.chain_ids(ids, starts).tolist()
    prefixes = [tuple(r[: j + 1]) for r in requests for j in range(len(r))]
    assert len(chained) == len(prefixes)
    for a in range(len(prefixes)):
        for b in range(len(prefixes)):
            assert (chained[a] == chained[b]) == (prefixes[a] == prefixes[b])


# ---------------------------------------------------------------------------
# one line splitter for both readers
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("size", [1, 2, 3, 7, 64, 1 << 20])
def test_split_lines_gives_the_same_lines_from_pieces_of_any_size(size):
    # \n ends a line; \r\n too (its \r dropped); a lone \r, \x0c, U+0085 and U+2028 do not; blanks count but are skipped
    data = "a\r\nb\rc\n\n  \t\nd\x0ce\u0085f\u2028g\n\nh".encode()
    pieces = [data[i : i + size] for i in range(0, len(data), size)]
    assert list(workload.split_lines(pieces, "t")) == [(1, "a"), (2, "b\rc"), (5, "d\x0ce\u0085f\u2028g"), (7, "h")]


def test_a_u2028_in_a_string_is_content_in_both_modes(tmp_path, capsys):
    path = tmp_path / "sep.jsonl"
    rows = [{**HAND[0], "type": "a\u2028b\u0085c"}, *HAND[1:]]
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    status, out, _ = cli([str(path), "--block-tokens", "4", "--json"], capsys)
    status_s, out_s, _ = cli([str(path), "--block-tokens", "4", "--json", "--stream"], capsys)
    # the five requests of HAND, 11 references, 5 distinct blocks, in both modes
    assert status == status_s == 0
    assert (json.loads(out)["trace"]["requests"], json.loads(out_s)["trace"]["requests"]) == (5, 5)
    assert json.loads(out)["blocks"]["references"] == json.loads(out_s)["blocks"]["references"] == 11


def test_the_in_memory_reader_stops_at_its_reference_limit_and_the_stream_does_not(hand, monkeypatch, capsys):
    # HAND holds 2 + 3 + 1 + 2 + 3 = 11 references; with a limit of 5, line 3 would bring 2 + 3 + 1 = 6
    monkeypatch.setattr(workload, "MAX_TRACE_REFS", 5)
    with pytest.raises(KvtierError) as err:
        workload.read_trace(hand, HAND_BLOCK_TOKENS)
    assert str(err.value) == (
        f"{hand}: line 3: more than 5 block references, the most the in-memory analysis holds (about 110 B each);"
        " use --stream"
    )
    assert workload.stream_lru(hand, HAND_BLOCK_TOKENS).n_refs == 11
