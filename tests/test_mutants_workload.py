"""Values of ``kvtier.formulas.reuse`` the trace tests leave unpinned (issue 15): reading, reuse, costs, the report.

Each expected number is worked out by hand in the comment beside it.  The streaming
kernel and the synthetic traces have their own file (``test_mutants_workload_stream.py``).
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import numpy as np
import pytest

from kvtier.errors import KvtierError
from kvtier.formulas import reuse as workload

FIELDS_TEXT = "timestamp, input_length, output_length, hash_ids"


def _text(rows: list[dict]) -> str:
    return "\n".join(json.dumps(r) for r in rows)


def _trace(blocks_per_request: list[list[int]], times_ms: list[float] | None = None, block_tokens: int = 1):
    """A trace of one request per list, each block full (``block_tokens`` tokens), one second apart by default."""
    times = times_ms if times_ms is not None else [1000.0 * i for i in range(len(blocks_per_request))]
    rows = [
        {"timestamp": t, "input_length": len(ids) * block_tokens, "output_length": 1, "hash_ids": ids}
        for t, ids in zip(times, blocks_per_request, strict=True)
    ]
    return workload.parse_trace(_text(rows), "t", block_tokens)


def _reuse(blocks_per_request, times_ms=None, block_tokens: int = 1) -> workload.Reuse:
    return workload.Reuse.of(_trace(blocks_per_request, times_ms, block_tokens))


# ---------------------------------------------------------------------------
# reading a trace: whole messages, boundaries
# ---------------------------------------------------------------------------

GOOD = {"timestamp": 0, "input_length": 2, "output_length": 1, "hash_ids": [1, 2]}


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("[1, 2]", f"expected a JSON object with {FIELDS_TEXT}"),
        (
            json.dumps({k: v for k, v in GOOD.items() if k != "output_length"}),
            f"missing field 'output_length' (a request needs {FIELDS_TEXT})",
        ),
        (json.dumps({**GOOD, "timestamp": "now"}), "'timestamp' must be a finite number of milliseconds, got 'now'"),
        (json.dumps({**GOOD, "input_length": "two"}), "'input_length' must be a whole number of tokens, got 'two'"),
        (json.dumps({**GOOD, "output_length": True}), "'output_length' must be a whole number of tokens, got True"),
        (json.dumps({**GOOD, "input_length": -1}), "'input_length' is negative (-1)"),
        # 2 tokens at 1 token a block need ceil(2 / 1) = 2 ids; at Mooncake's 512 a block ceil(2 / 512) = 1 would fit
        (
            json.dumps({**GOOD, "hash_ids": [1]}),
            "'hash_ids' has 1 ids but input_length 2 at 1 tokens a block needs 2;"
            " the mooncake format's 512 tokens a block would fit",
        ),
        # 2 tokens, 3 ids: neither 1 token a block (2 ids) nor 512 (1 id) fits, so no hint
        (
            json.dumps({**GOOD, "hash_ids": [1, 2, 3]}),
            "'hash_ids' has 3 ids but input_length 2 at 1 tokens a block needs 2",
        ),
        # Python refuses to read an integer of more than 4,300 digits
        ('{"timestamp": ' + "9" * 5000 + "}", "a value cannot be read"),
        ("{", "not a JSON object (malformed JSON)"),
    ],
)
def test_whole_messages_for_a_bad_request(row, message):
    with pytest.raises(KvtierError) as info:
        workload.parse_trace(row, "bad.jsonl", 1)
    assert str(info.value) == f"bad.jsonl: line 1: {message}"


def test_whole_messages_for_a_bad_trace():
    with pytest.raises(KvtierError) as info:
        workload.parse_trace(_text([{**GOOD, "timestamp": 5}, {**GOOD, "timestamp": 4.5}]), "t.jsonl", 1)
    assert str(info.value) == "t.jsonl: line 2: timestamp 4.5 ms goes backwards (the line before: 5)"
    with pytest.raises(KvtierError) as info:
        workload.parse_trace(_text([{**GOOD, "hash_ids": [1, 2**64]}]), "t.jsonl", 1)
    assert str(info.value) == "t.jsonl: line 1: a hash id does not fit in 64 bits"


@pytest.mark.parametrize(
    ("block_tokens", "shown"), [(0, "0"), (-4, "-4"), (2.5, "2.5"), ("4", "'4'"), (2**31 + 1, "2147483649")]
)
def test_block_tokens_must_be_a_whole_number_of_at_least_one(block_tokens, shown):
    with pytest.raises(KvtierError) as info:
        workload.parse_trace(_text([GOOD]), "t", block_tokens)
    assert str(info.value) == f"block tokens must be a whole number from 1 to 2,147,483,648, got {shown}"


def test_the_largest_block_holds_2_to_the_31_tokens():
    # 2 tokens in a block of 2**31 need ceil(2 / 2**31) = 1 id
    trace = workload.parse_trace(_text([{**GOOD, "hash_ids": [1]}]), "t", 2**31)
    assert trace.block_tokens == 2**31 and trace.ref_tokens.tolist() == [2]


def test_zero_lengths_are_requests_too():
    # an empty prompt has no blocks (ceil(0 / 4) = 0 ids); a request may produce no output
    trace = workload.parse_trace(
        _text([{"timestamp": 0, "input_length": 0, "output_length": 0, "hash_ids": []}, {**GOOD, "input_length": 8}]),
        "t",
        4,
    )
    assert trace.n_requests == 2 and trace.n_refs == 2
    assert trace.input_tokens.tolist() == [0, 8] and trace.output_tokens.tolist() == [0, 1]
    assert trace.starts.tolist() == [0, 0, 2]


def test_blank_lines_are_skipped_wherever_they_are():
    # three requests, lines 2 and 3 blank: line numbers still count them (the bad one is line 6)
    text = _text([GOOD]) + "\n\n  \n" + _text([{**GOOD, "timestamp": 1}, {**GOOD, "timestamp": 2}])
    assert workload.parse_trace(text, "t", 1).n_requests == 3
    with pytest.raises(KvtierError, match=r"^t: line 6: "):
        workload.parse_trace(text + "\n{", "t", 1)


def test_hash_ids_are_any_64_bit_integers_and_stay_distinct():
    # negative ids are ids: -1 and -2 are two blocks (as float64 bit patterns both would be NaN);
    # dense ids follow the sorted hash ids: -2 -> 0, -1 -> 1, 2**63 - 1 -> 2
    trace = _trace([[-1, 2**63 - 1], [-2, -1]])
    assert trace.n_unique == 3
    assert trace.blocks.tolist() == [1, 2, 0, 1]
    assert trace.blocks.dtype == np.int64
    # timestamps in ms become seconds: 0 and 1000 ms
    assert trace.timestamps_s.tolist() == [0.0, 1.0]


def test_a_directory_is_not_a_trace(tmp_path):
    with pytest.raises(KvtierError) as info:
        workload.read_trace(tmp_path)
    assert str(info.value) == f"{tmp_path}: trace is not a regular file"


def test_a_trace_larger_than_a_config_file_is_read(tmp_path):
    # the shipped conversation trace is well above the 1 MiB limit of the other files
    path = workload.trace_path("conversation")[1]
    assert path.stat().st_size > 1 << 20
    lines = [line for line in path.read_text().splitlines() if line.strip()]
    assert workload.read_trace("conversation").n_requests == len(lines)


def test_analyse_reads_the_file_again_when_its_size_or_time_changes(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text(_text([GOOD]))
    first = os.stat(path)
    assert workload.analyse(path, 1).trace.n_requests == 1
    # same modification time, one more request (a larger file): read again
    path.write_text(_text([GOOD, {**GOOD, "timestamp": 1}]))
    os.utime(path, ns=(first.st_atime_ns, first.st_mtime_ns))
    assert workload.analyse(path, 1).trace.n_requests == 2
    # same size, a later time, other content (output_length 1 -> 7): read again
    before = os.stat(path)
    path.write_text(_text([{**GOOD, "output_length": 7}, {**GOOD, "timestamp": 1}]))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns + 10**9))
    assert workload.analyse(path, 1).trace.output_tokens.tolist() == [7, 1]


def test_analyse_reads_through_read_trace_when_the_file_cannot_be_stat_ed(tmp_path, monkeypatch):
    # the first lookup finds a path that cannot be stat'ed, the second (read_trace's own) a real file:
    # read_trace gets the same name and block size (4 tokens a block: 8 tokens need 2 ids)
    real = tmp_path / "real.jsonl"
    real.write_text(_text([{**GOOD, "input_length": 8}]))
    paths = iter([tmp_path / "gone.jsonl", real])
    names = []

    def lookup(name):
        names.append(name)
        path = next(paths)
        return str(path), path

    monkeypatch.setattr(workload, "trace_path", lookup)
    r = workload.analyse("mine", 4)
    assert names == ["mine", "mine"] and r.trace.block_tokens == 4 and r.trace.n_refs == 2


def test_analyse_names_a_file_that_vanished_after_it_was_found(tmp_path, monkeypatch):
    path = tmp_path / "gone.jsonl"
    monkeypatch.setattr(workload, "trace_path", lambda name: (str(path), path))
    with pytest.raises(KvtierError) as info:
        workload.analyse("gone", 1)
    assert str(info.value) == f"{path}: trace not found"


# ---------------------------------------------------------------------------
# reuse: hit ratios, capacities, the curve, per request
# ---------------------------------------------------------------------------


def test_a_single_distance_below_the_capacity_counts():
    # references A A B C B: distances -1 0 -1 -1 1; a cache of 1 block hits only the distance 0: 1 / 5
    r = _reuse([[1], [1], [2], [3], [2]])
    assert r.distance.tolist() == [-1, 0, -1, -1, 1]
    assert r.hit_ratio(np.array([1.0, 2.0])).tolist() == [0.2, 0.4]
    # share 1 of the 2 achievable hits needs both: distance 1 + 1 = 2 blocks; half needs one: 0 + 1
    assert r.capacity_for(1.0) == 2 and r.capacity_for(0.5) == 1
    # an integer capacity gives a float ratio
    assert r.hit_ratio(1).dtype == np.float64


def test_a_trace_without_reuse_hits_nothing():
    r = _reuse([[1, 2], [3]])
    assert r.hit_ratio(5).tolist() == 0.0 and float(r.hit_ratio()) == 0.0
    assert r.capacity_for(1.0) == 0
    caps, ratios = r.curve()
    assert caps.tolist() == [1.0] and ratios.tolist() == [0.0]


def test_a_trace_without_references_has_ratio_zero():
    # empty prompts only: no references, no weight; the ratio is 0 (not 0 / 0), as floats
    r = workload.Reuse.of(
        workload.parse_trace(_text([{"timestamp": 0, "input_length": 0, "output_length": 3, "hash_ids": []}]), "t", 1)
    )
    ratio = r.hit_ratio(np.array([1, 2]))
    assert ratio.tolist() == [0.0, 0.0] and ratio.dtype == np.float64


@pytest.mark.parametrize("share", [0.0, -0.5, 1.5])
def test_a_share_outside_0_to_1_is_refused(share):
    r = _reuse([[1], [1]])
    with pytest.raises(ValueError) as info:
        r.capacity_for(share)
    assert str(info.value) == f"share must be in (0, 1], got {share!r}"


def test_an_unknown_weighting_is_refused():
    r = _reuse([[1], [1]])
    for ask in (lambda: r.hit_ratio(weighting="bytes"), lambda: r.capacity_for(1.0, "bytes"), lambda: r.curve("bytes")):
        with pytest.raises(ValueError) as info:
            ask()
        assert str(info.value) == "weighting must be 'blocks' or 'tokens', got 'bytes'"


def test_the_curve_steps_at_each_distinct_distance():
    # references 1 2 | 1 2 3 | 4 | 1 5 | 1 2 3 (the hand trace of test_workload): hit distances sorted
    # 1 1 1 3 4 4 of 11 references; the ratio steps at capacities 2 (3 hits), 4 (4) and 5 (6)
    r = _reuse([[1, 2], [1, 2, 3], [4], [1, 5], [1, 2, 3]])
    caps, ratios = r.curve()
    assert caps.tolist() == [2.0, 4.0, 5.0]
    assert ratios.tolist() == pytest.approx([3 / 11, 4 / 11, 6 / 11])
    # weighted by tokens at 2 tokens a block every block holds 2: the same fractions
    assert r.curve("tokens")[1].tolist() == pytest.approx([3 / 11, 4 / 11, 6 / 11])


def test_the_curve_with_one_hit_distance():
    # A A A: distances -1 0 0; one step, at capacity 1, to 2 of 3
    caps, ratios = _reuse([[1], [1], [1]]).curve()
    assert caps.tolist() == [1.0] and ratios.tolist() == pytest.approx([2 / 3])


def test_capacity_for_a_full_share_takes_the_farthest_hit():
    # one block reused at distance 50 among 199 reuses at distance 0 (200 hits): all of them need 51 blocks,
    # 99 % (198 hits) need 1
    blocks = [[1000], *[[i] for i in range(1, 51)], [1000], *[[7]] * 200]
    r = _reuse(blocks)
    assert r.capacity_for(1.0) == 51
    assert r.capacity_for(0.99) == 1


def test_hit_tokens_counts_distance_zero_and_every_request():
    # A | A | B: the second A hits at distance 0 in a 1-block cache; the last request has no hit
    # but still has its row (three requests, three rows)
    r = _reuse([[1], [1], [2]], block_tokens=4)
    blocks, tokens = r.hit_tokens(1)
    assert blocks.tolist() == [0, 1, 0] and tokens.tolist() == [0, 4, 0]
    # a last request with an empty prompt still has its row
    rows = [{"timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": [1]}] * 2
    rows.append({"timestamp": 1, "input_length": 0, "output_length": 1, "hash_ids": []})
    blocks, tokens = workload.Reuse.of(workload.parse_trace(_text(rows), "t", 1)).hit_tokens()
    assert blocks.tolist() == [0, 1, 0] and tokens.tolist() == [0, 1, 0]
    # distance 1 does not fit a 1-block cache: A B A
    blocks, _ = _reuse([[1], [2], [1]]).hit_tokens(1)
    assert blocks.tolist() == [0, 0, 0]


# ---------------------------------------------------------------------------
# what a hit is worth
# ---------------------------------------------------------------------------

# k = 2 FLOP per parameter-token, N = 1e9 parameters, no attention term; 1e15 FLOP/s at 50 %:
# compute(h) = 2e9 h / 5e14 = 4e-6 h s.  Weights 2e9 B at 1e12 B/s x 50 %: memory 2e9 / 5e11 = 4 ms
RC = workload.RegenCosts(
    kv_bytes_per_token=1000.0,
    active_params=1e9,
    flops_per_param_token=2.0,
    attention_flops_per_position=0.0,
    peak_flop_per_s=1e15,
    mfu=0.5,
    weight_bytes=2e9,
    mem_bandwidth_bytes_per_s=1e12,
    mem_efficiency=0.5,
)


def test_prefix_flops_use_the_flops_per_parameter_token():
    # k = 3 instead of 2: 3 x 1e9 x 4 = 1.2e10; with 1e6 FLOP a position: + 1e6 x 4 x 5 / 2 = 1e7
    rc = workload.RegenCosts(**{**vars(RC), "flops_per_param_token": 3.0, "attention_flops_per_position": 1e6})
    assert rc.prefix_flops(np.array([4.0])).tolist() == [1.2e10 + 1e7]


def test_lone_time_is_the_roofline_and_zero_without_tokens():
    # 0 tokens: 0; 1 and 500 tokens: memory-bound, 4 ms; 4000 tokens: compute 4e-6 x 4000 = 16 ms
    assert RC.lone_s(np.array([0, 1, 500, 4000])).tolist() == pytest.approx([0.0, 4e-3, 4e-3, 1.6e-2])
    # weights of 1e6 B (2 µs to read): one token is compute-bound at 4 µs, two at 8 µs
    light = workload.RegenCosts(**{**vars(RC), "weight_bytes": 1e6})
    assert light.lone_s(np.array([1, 2])).tolist() == pytest.approx([4e-6, 8e-6])


def test_lone_memory_bound_where_the_weights_outlast_the_compute():
    # 0 tokens is no pass at all; 1 and 500 tokens (2 ms of compute) are memory-bound (4 ms);
    # at 1000 tokens compute is 4 ms too, a tie, which is not memory-bound; 4000 tokens are compute-bound
    assert RC.lone_memory_bound(np.array([0, 1, 500, 1000, 4000])).tolist() == [False, True, True, False, False]


def test_saving_per_second_of_trace():
    # A | A | B over 0.5 s at 4 tokens a block: in an unbounded cache the second A hits, 4 tokens
    r = _reuse([[1], [1], [2]], times_ms=[0, 250, 500], block_tokens=4)
    sv = workload.saving(r, RC, 2)
    assert sv.capacity_blocks == 2.0 and isinstance(sv.capacity_blocks, float)
    assert sv.hit_ratio_blocks == pytest.approx(1 / 3)  # 1 hit of 3 references
    assert sv.hit_tokens_per_s == pytest.approx(8.0)  # 4 tokens / 0.5 s
    assert sv.hit_bytes_per_s == pytest.approx(8000.0)  # 4 tokens x 1000 B / 0.5 s
    # inside a batch: 4 x 4e-6 s / 0.5 s = 3.2e-5; alone: 4 ms / 0.5 s = 8e-3
    assert sv.in_batch_gpu_s_per_s == pytest.approx(3.2e-5)
    assert sv.lone_gpu_s_per_s == pytest.approx(8e-3)
    assert sv.lone_memory_bound_share == 1.0


def test_saving_with_no_hits_and_with_no_duration():
    # no hit: nothing memory-bound (0, not the mean of nothing)
    assert workload.saving(_reuse([[1], [2]]), RC).lone_memory_bound_share == 0.0
    # a trace whose requests all arrive at once has no rate: NaN per second
    sv = workload.saving(_reuse([[1], [1]], times_ms=[0, 0]), RC)
    assert math.isnan(sv.hit_tokens_per_s) and math.isnan(sv.lone_gpu_s_per_s)


def test_a_one_token_hit_is_counted_in_the_memory_bound_share():
    # 1 token a block; the single hit holds 1 token and is memory-bound alone (4e-6 s of compute < 4 ms)
    assert workload.saving(_reuse([[1], [1]]), RC).lone_memory_bound_share == 1.0


# ---------------------------------------------------------------------------
# percentiles and the report
# ---------------------------------------------------------------------------


def test_percentiles_by_hand():
    # numpy's linear interpolation over 1 2 3 4: p50 at rank 1.5 -> 2.5; p90 at 2.7 -> 3.7; p99 at 2.97 -> 3.97
    assert workload.percentiles(np.array([4, 1, 3, 2])) == pytest.approx(
        {"p50": 2.5, "p90": 3.7, "p99": 3.97, "max": 4}
    )
    assert workload.percentiles([1, 2, 3, 4], (25,)) == pytest.approx({"p25": 1.75, "max": 4.0})
    empty = workload.percentiles(np.array([]))
    assert list(empty) == ["p50", "p90", "p99", "max"] and all(math.isnan(v) for v in empty.values())


def _link(name: str = "l") -> workload.LinkSpec:
    # 1e6 B/s and 1 ms a block
    return workload.LinkSpec(name, 1e6, 1e-3)


def test_the_report_by_hand():
    # A | A | B over 0.5 s at 4 tokens a block (inputs 4 4 4, outputs 1 1 1)
    r = _reuse([[1], [1], [2]], times_ms=[0, 250, 500], block_tokens=4)
    rep = workload.report(r, RC, [_link()], targets_pct=(50, 100))
    assert [t["target_pct"] for t in rep["tiers"]] == [50, 100]  # 100 once, though asked for
    assert rep["trace"]["requests_per_s"] == 6.0  # 3 requests / 0.5 s
    assert rep["trace"]["input_tokens"] == {"p50": 4.0, "p90": 4.0, "p99": 4.0, "max": 4.0, "mean": 4.0}
    assert rep["blocks"]["hit_ratio_infinite_blocks"] == pytest.approx(1 / 3)
    assert rep["blocks"]["hit_ratio_infinite_tokens"] == pytest.approx(4 / 12)
    # the one reuse comes 0.25 s after its first reference
    assert rep["blocks"]["reuse_interval_s"]["mean"] == 0.25
    tier = rep["tiers"][1]
    assert list(tier) == [
        "target_pct",
        "capacity_blocks",
        "capacity_bytes",
        "hit_ratio_blocks",
        "hit_ratio_tokens",
        "hit_tokens_per_s",
        "hit_bytes_per_s",
        "in_batch_gpu_s_per_s",
        "lone_gpu_s_per_s",
        "lone_memory_bound_share",
        "links",
    ]
    assert tier["capacity_blocks"] == 1.0 and tier["capacity_bytes"] == 4000.0  # 1 block x 4 tokens x 1000 B
    # fetching the hit: 1 ms + 4,000 B / 1e6 B/s = 5 ms, over 0.5 s: 0.01 link-seconds a second
    link = tier["links"][0]
    assert link["fetch_link_s_per_s"] == pytest.approx(0.01)
    # saved per second inside a batch 3.2e-5 and alone 8e-3, over 0.01: 3.2e-3 and 0.8
    assert link["in_batch_over_fetch"] == pytest.approx(3.2e-3)
    assert link["lone_over_fetch"] == pytest.approx(0.8)


def test_the_report_of_a_trace_without_duration_or_hits():
    # both requests at once: no rates
    rep = workload.report(_reuse([[1], [1]], times_ms=[0, 0]), RC, [_link()], targets_pct=(50,))
    assert math.isnan(rep["trace"]["requests_per_s"])
    assert math.isnan(rep["tiers"][0]["links"][0]["fetch_link_s_per_s"])
    # no reuse at all: nothing to fetch, so no ratio to it; no interval to average
    rep = workload.report(_reuse([[1], [2]]), RC, [_link()], targets_pct=(50,))
    link = rep["tiers"][0]["links"][0]
    assert link["fetch_link_s_per_s"] == 0.0
    assert math.isnan(link["in_batch_over_fetch"]) and math.isnan(link["lone_over_fetch"])
    assert math.isnan(rep["blocks"]["reuse_interval_s"]["mean"])


def test_the_report_sizes_each_target_on_its_share():
    # the farthest-hit trace: 100 % needs 51 blocks; a share of 99 % needs 1 (see capacity_for above)
    blocks = [[1000], *[[i] for i in range(1, 51)], [1000], *[[7]] * 200]
    rep = workload.report(_reuse(blocks), RC, targets_pct=(99,))
    assert [(t["target_pct"], t["capacity_blocks"]) for t in rep["tiers"]] == [(99, 1.0), (100, 51.0)]


def test_a_half_second_trace_has_a_rate():
    # 2 requests 0.5 s apart: 4 a second (a duration under 1 s is still a duration)
    rep = workload.report(_reuse([[1], [1]], times_ms=[0, 500]), RC, [_link()], targets_pct=(50,))
    assert rep["trace"]["requests_per_s"] == 4.0
    # the hit: 1 ms + 1 token x 1000 B / 1e6 B/s = 2 ms, over 0.5 s = 4e-3
    assert rep["tiers"][0]["links"][0]["fetch_link_s_per_s"] == pytest.approx(4e-3)


def test_a_shipped_trace_path_is_a_real_file():
    where, path = workload.trace_path("synthetic")
    assert where == "synthetic" and Path(path).is_file()


@pytest.mark.parametrize("ids", [[], [5], [3, -1, 3, 2**63 - 1, -(2**63), -1]])
def test_dense_ids_are_the_ranks_np_unique_gives(ids):
    # [3, -1, 3, 2**63 - 1, -2**63, -1]: sorted distinct -2**63 < -1 < 3 < 2**63 - 1 -> ranks 2 1 2 3 0 1
    raw = np.array(ids, dtype=np.int64)
    dense = workload.dense_ids(raw)
    assert dense.dtype == np.int64 and dense.tolist() == np.unique(raw, return_inverse=True)[1].tolist()
