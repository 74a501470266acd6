"""Properties of the cost formulas, and agreement of the scalar and vectorized paths."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from kvtier.formulas import costs

bandwidths = st.floats(min_value=1e6, max_value=1e13, allow_nan=False)
sizes = st.floats(min_value=1.0, max_value=1e12, allow_nan=False)


@given(sizes, bandwidths, bandwidths)
def test_fetch_time_falls_as_bandwidth_rises(n_bytes, b1, b2):
    lo, hi = sorted((b1, b2))
    assert costs.fetch_time_s(n_bytes, hi) <= costs.fetch_time_s(n_bytes, lo)


@given(st.integers(1, 1_000_000), st.integers(1, 1_000_000), st.floats(1e9, 1e12), st.floats(0.01, 1.0))
def test_regeneration_grows_with_tokens(t1, t2, params, mfu):
    lo, hi = sorted((t1, t2))
    assert costs.tail_regen_time_s(lo, params, 500e12, mfu) <= costs.tail_regen_time_s(hi, params, 500e12, mfu)


@given(st.lists(st.tuples(bandwidths, st.floats(0.01, 1.0)), min_size=1, max_size=50))
def test_scalar_and_vectorized_paths_agree(points):
    bw = np.array([p[0] for p in points])
    mfu = np.array([p[1] for p in points])
    block = costs.block_bytes(327_680, 16)
    vector = costs.ratio(costs.tail_regen_time_s(16, 70e9, 500e12, mfu), costs.fetch_time_s(block, bw))
    scalar = [
        float(costs.ratio(costs.tail_regen_time_s(16, 70e9, 500e12, m), costs.fetch_time_s(block, b)))
        for b, m in points
    ]
    np.testing.assert_allclose(vector, scalar, rtol=1e-15)
