"""kvtier.inputs.traces.sample: a trace's spatially hashed sample in memory, and the sampled curve's error."""

from __future__ import annotations

import numpy as np
import pytest

from kvtier.formulas.cache.sampling import block_hash, sample_threshold
from kvtier.inputs import traces
from tests.conftest import write_trace


def test_at_rate_one_the_sample_is_the_whole_trace(hand):
    # the hand trace: 1 2 | 1 2 3 | 4 | 1 5 | 1 2 3, 11 references to 5 blocks in 5 requests, at 4 tokens a block
    whole, sample = traces.read_trace(hand, 4), traces.read_sample(hand, 1.0, 4)
    assert (sample.n_refs, sample.n_requests, sample.n_unique) == (11, 5, 5)
    for name in ("blocks", "starts", "timestamps_s", "input_tokens", "output_tokens"):
        assert getattr(sample, name).tolist() == getattr(whole, name).tolist(), name


@pytest.mark.parametrize("rate", [0.5, 0.1])
def test_a_sample_keeps_every_reference_to_a_kept_block_and_only_the_requests_that_hold_one(tmp_path, rate):
    trace = traces.generate_trace(400, seed=5, new_blocks=(1, 6))
    path = write_trace(tmp_path / "g.jsonl", list(traces.to_jsonl(trace)))
    sample = traces.read_sample(path, rate)
    # Mooncake ids are prefix-chained as written: a reference is kept when its id hashes below the rate
    kept = block_hash(trace.blocks) < sample_threshold(rate)
    per_request = np.add.reduceat(kept, trace.starts[:-1]) * (np.diff(trace.starts) > 0)
    # issue 43: a request that keeps no block is dropped, with its timestamp and lengths (memory follows the rate)
    held = per_request > 0
    assert sample.n_requests == int(held.sum()) < 400 and sample.n_refs == int(kept.sum()) > 0
    assert np.diff(sample.starts).tolist() == per_request[held].tolist()
    assert sample.timestamps_s.tolist() == trace.timestamps_s[held].tolist()
    assert sample.input_tokens.tolist() == trace.input_tokens[held].tolist()
    assert sample.n_unique == np.unique(trace.blocks[kept]).size


def test_the_error_at_rate_one_is_zero_in_memory_and_streamed(hand):
    # rate 1 is the exact pass again: no error, and no reference counted as sampled (an exact stream samples none)
    generated = traces.generate_trace(300, seed=2, new_blocks=(1, 6))
    for source, block_tokens, refs in ((generated, 512, generated.n_refs), (hand, 4, 11)):
        [row] = traces.sampling_error(source, (1.0,), block_tokens)
        assert (row["rate"], row["rate_used"], row["mean_abs"], row["max_abs"]) == (1.0, 1.0, 0.0, 0.0)
        assert (row["refs"], row["sampled_refs"]) == (refs, 0)


def test_the_error_is_measured_at_each_rate_asked():
    # three rates, one row each, in the order asked; a sampled pass holds fewer references than the exact one
    rows = traces.sampling_error(traces.generate_trace(2000, seed=4), traces.SAMPLE_RATES)
    assert [r["rate"] for r in rows] == [0.1, 0.01, 0.001]
    assert all(r["sampled_refs"] < r["refs"] and 0 <= r["mean_abs"] <= r["max_abs"] <= 1 for r in rows)


def test_every_figure_is_measured_on_a_generated_trace():
    # a generated trace in memory, priced by the hand costs: each figure's error at 10 % is a number, 0 where the
    # sample is the whole trace
    from kvtier.formulas.cache.report import SAMPLED_FIGURES
    from kvtier.inputs.traces.generate import generate_trace
    from tests.oracles import HAND_RC, hand_link

    t = generate_trace(n_requests=400, seed=3)
    whole, tenth = traces.sampling_error(t, (1.0, 0.1), rc=HAND_RC, links=[hand_link()])
    assert set(whole["figures"]) == set(SAMPLED_FIGURES) == set(tenth["figures"])
    assert all(v == 0 for v in whole["figures"].values())
    assert tenth["figures"]["hit_ratio_pts"] == pytest.approx(tenth["max_abs"] * 100)
    assert all(v >= 0 for v in tenth["figures"].values())
