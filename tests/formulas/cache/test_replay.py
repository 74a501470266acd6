"""The second pass's tallies: each reuse seen once, in any chunks, adding up to the in-memory figures."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvtier.formulas import economics
from kvtier.formulas.cache import hierarchy, replay
from kvtier.formulas.cache.stream import ChunkReuse, LruStream
from kvtier.inputs import distributed
from tests.conftest import trace_of

# Four requests of 512-token blocks, prefix-chained ids: (1 2) at 0 s, (1 3) at 10 s, (1) at 10 s, (1 2) at 30 s.
REQUESTS = [[1, 2], [1, 3], [1], [1, 2]]
STAMPS = [0.0, 10.0, 10.0, 30.0]


class Tokens:
    """A recompute cost of 1 ms a token, whatever the prefix before it (RegenCosts.share_s's signature)."""

    def share_s(self, upto: np.ndarray, tokens: np.ndarray, regime: str) -> np.ndarray:
        return tokens * (1e-3 if regime == "batch" else 2e-3)


def _stream(cut: int, *observers) -> LruStream:
    stream = LruStream(observers=observers)
    for part in (slice(0, cut), slice(cut, len(REQUESTS))):
        chunk = REQUESTS[part]
        starts = np.r_[0, np.cumsum([len(r) for r in chunk])].astype(np.int64)
        flat = np.array([b for r in chunk for b in r], dtype=np.int64)
        inputs = np.array([512 * len(r) for r in chunk], dtype=np.int64)
        stream.feed(flat, starts, inputs, 512, timestamps_s=np.array(STAMPS[part]))
    return stream


@pytest.mark.parametrize("cut", [0, 1, 2, 3, 4])
def test_the_chunks_show_each_reuse_with_its_instants_wherever_the_trace_is_cut(cut):
    seen: list[ChunkReuse] = []
    _stream(cut, seen.append)
    cat = {k: np.concatenate([getattr(c, k) for c in seen]) for k in ("reused", "at_s", "from_s", "at_rank")}
    cat["from_rank"] = np.concatenate([c.from_rank for c in seen])
    cat["hit_distance"] = np.concatenate([c.hit_distance for c in seen])
    # references 1 2 | 1 3 | 1 | 1 2: the second 1 is back from 0 s, the third from 10 s (the same instant),
    # the fourth from 10 s, the last 2 from 0 s; instants 0, 10, 30 s rank 0, 1, 2 even when a cut splits 10 s
    assert cat["reused"].tolist() == [False, False, True, False, True, True, True]
    assert cat["at_s"].tolist() == [0, 0, 10, 10, 10, 30, 30]
    assert np.nan_to_num(cat["from_s"], nan=-1).tolist() == [-1, -1, 0, -1, 10, 10, 0]
    assert cat["at_rank"].tolist() == [0, 0, 1, 1, 1, 2, 2]
    assert cat["from_rank"].tolist() == [-1, -1, 0, -1, 1, 1, 0]
    # stack distances: the second 1 has 2 between (1), the third 3 (1), the fourth nothing (0); the last 2 has
    # 1 and 3 since (2), and a request's hits end at its first miss: its distance is the largest so far
    assert cat["hit_distance"].tolist() == [-1, -1, 1, -1, 1, 0, 2]


@pytest.mark.parametrize("cut", [0, 2, 3])
def test_requests_are_counted_by_their_hit_prefix_at_each_capacity(cut):
    prefixes = replay.HitPrefixes([1, 3])
    _stream(cut, prefixes)
    # capacity 1: only the last request's first block (distance 0) hits: 512 tokens; the other three hit nothing
    assert [x.tolist() for x in prefixes.at(1)] == [[0, 1], [0, 512], [3, 1]]
    # capacity 3: the second and third requests hit their first block, the last both (1,024 tokens)
    assert [x.tolist() for x in prefixes.at(3)] == [[0, 1, 2], [0, 512, 1024], [1, 2, 1]]


@pytest.mark.parametrize("cut", [0, 1, 2, 4])
def test_the_mix_tallied_chunk_by_chunk_is_the_hand_mix(cut):
    # one tier: holding a block 0.01 USD/s, a fetch 0.3 USD; recomputing a 512-token block 0.512 s x 1 USD/s.
    # Held while 0.01 dt + 0.3 < 0.512: dt < 21.2 s.  The reuses after 10, 0 and 20 s are held, the one after
    # 30 s (block 2) recomputed
    tally = economics.MixTally(1.0, [0.01], [0.3], peak=True)
    _stream(cut, replay.MixObserver(Tokens(), 1.0, {"batch": [tally]}))
    mix = tally.mix(30.0)
    assert mix.reuses == 4 and mix.share.tolist() == [0.75, 0.25]
    assert mix.byte_s_held.tolist() == [30.0, 0.0]  # 10 + 0 + 20 s of one byte
    assert mix.hold_usd == pytest.approx(0.3)  # 30 s x 0.01
    assert mix.fetch_usd == pytest.approx(0.9)  # 3 x 0.3
    assert mix.recompute_usd == pytest.approx(0.512)
    assert mix.recompute_all_usd == pytest.approx(4 * 0.512)
    # held: [0, 10) then [10, 30) for block 1 (handed over at 10 s, not counted twice), and [10, 10) for none: 1
    assert mix.peak_bytes_held.tolist() == [1.0, 0.0]
    # the same reuses all at once, as the in-memory path gives them
    whole = economics.tier_mix([10.0, 0.0, 20.0, 30.0], 30.0, 1.0, [0.01], [0.3], 0.512, [10.0, 10.0, 30.0, 30.0])
    assert (whole.share.tolist(), whole.byte_s_held.tolist(), whole.peak_bytes_held.tolist()) == (
        mix.share.tolist(),
        mix.byte_s_held.tolist(),
        mix.peak_bytes_held.tolist(),
    )
    assert (whole.hold_usd, whole.fetch_usd, whole.recompute_usd) == pytest.approx(
        (mix.hold_usd, mix.fetch_usd, mix.recompute_usd)
    )


def test_a_cheaper_hold_keeps_both_blocks_at_once():
    # fetch 0.1 USD: held while dt < 41.2 s, so every reuse; block 2 is held from 0 to 30 s beside block 1: peak 2
    tally = economics.MixTally(2.0, [0.005], [0.1], peak=True)  # 2-byte blocks: 0.01 USD/s each
    _stream(2, replay.MixObserver(Tokens(), 1.0, {"batch": [tally]}))
    mix = tally.mix(30.0)
    assert mix.share.tolist() == [1.0, 0.0]
    assert mix.peak_bytes_held.tolist() == [4.0, 0.0]  # 2 blocks x 2 B
    assert mix.byte_s_held.tolist() == [120.0, 0.0]  # (10 + 0 + 20 + 30) s x 2 B


def test_observers_need_an_exact_stream():
    with pytest.raises(ValueError, match="exact stream"):
        LruStream(sample_rate=0.5, observers=[replay.HitPrefixes([1])])
    with pytest.raises(ValueError, match="instants"):
        economics.MixTally(1.0, [0.01], [0.3], peak=True).add([1.0], 1.0)


@pytest.mark.parametrize("cut", [0, 1, 3])
def test_the_distance_histogram_replays_a_hierarchy_as_the_distances_do(cut):
    # stack distances of 1 2 | 1 3 | 1 | 1 2: -1 -1 1 -1 1 0 2 (three first references; reuses at 0, 1, 1, 2)
    tally = replay.DistanceTally(Tokens(), "batch")
    _stream(cut, tally)
    assert (tally.counts.tolist(), tally.first_refs) == ([1, 2, 1], 3)
    # each reuse is one 512-token block: 0.512 s inside a batch; at 2 or more, one of them
    assert tally.seconds.tolist() == pytest.approx([0.512, 1.024, 0.512])
    assert tally.seconds_beyond(2) == pytest.approx(0.512) and tally.seconds_beyond(3) == 0.0
    d = np.array([-1, -1, 1, -1, 1, 0, 2])
    for mode, caps in (("inclusive", [1, 2]), ("exclusive", [1, 1]), ("exclusive", [0, 2, 1])):
        whole, counted = hierarchy.replay(d, caps, mode), hierarchy.replay_counts(tally.counts, 3, caps, mode)
        for field in ("hits", "admissions", "demotions"):
            assert getattr(counted, field).tolist() == getattr(whole, field).tolist()
    # by hand, inclusive [1, 2]: tier 0 serves distance 0 (1), tier 1 distance 1 (2); tier 0 admits the 3 first
    # references and the 3 reuses at 1 or more, tier 1 the 3 first and the 1 at 2
    inc = hierarchy.replay_counts(tally.counts, 3, [1, 2], "inclusive")
    assert (inc.hits.tolist(), inc.admissions.tolist(), inc.n_refs) == ([1, 2], [6, 4], 7)
    # exclusive [1, 1] (bounds 1, 2): tier 1 takes what tier 0 pushes out: the reuses at 1 or more (3) and the
    # first references of rank 1 or more (2 of 3)
    exc = hierarchy.replay_counts(tally.counts, 3, [1, 1], "exclusive")
    assert (exc.hits.tolist(), exc.admissions.tolist(), exc.demotions.tolist()) == ([1, 2], [6, 0], [0, 5])


def test_a_tally_fed_more_than_a_slice_at_once_adds_it_in_slices(monkeypatch):
    # four reuses priced two at a time give what the four give at once: the hand mix above
    monkeypatch.setattr(economics, "TALLY_SLICE", 2)
    tally = economics.MixTally(1.0, [0.01], [0.3], peak=True)
    tally.add(np.array([10.0, 0.0, 20.0, 30.0]), 0.512, np.array([0, 1, 1, 0]), np.array([1, 1, 2, 2]))
    mix = tally.mix(30.0)
    assert (mix.share.tolist(), mix.byte_s_held.tolist(), mix.peak_bytes_held.tolist()) == (
        [0.75, 0.25],
        [30.0, 0.0],
        [1.0, 0.0],
    )
    assert mix.recompute_usd == pytest.approx(0.512) and mix.fetch_usd == pytest.approx(0.9)


def test_prefix_hits_stop_at_a_request_s_first_miss_whatever_the_stream_counts():
    # counted per block, the request (1 3) at 10 s hits its 1 and misses its 3; a request (3 1) would hit its 1
    # after a miss: per block 1 block, up to the first miss none.  Here: requests (1 2) (3 1) at 0 and 10 s
    stream = LruStream(
        "per-block", observers=[per_block := replay.HitPrefixes([5]), prefix := replay.HitPrefixes([5], prefix=True)]
    )
    stream.feed(
        np.array([1, 2, 3, 1]), np.array([0, 2, 4]), np.array([1024, 1024]), 512, timestamps_s=np.array([0.0, 10.0])
    )
    # per block: the second request hits 1 block (512 tokens); up to its first miss (3, new) it hits none
    assert [x.tolist() for x in per_block.by_prompt(5)] == [[0, 1], [0, 512], [1024, 1024], [1, 1]]
    assert [x.tolist() for x in prefix.by_prompt(5)] == [[0], [0], [1024], [2]]
    assert [x.tolist() for x in prefix.at(5)] == [[0], [0], [2]]


def test_windows_by_hand():
    # REQUESTS (1 2) at 0 s, (1 3) at 10 s, (1) at 10 s, (1 2) at 30 s; windows of 20 s from 0 s, no warm-up:
    # window 0 [0, 20): 1 2 | 1 3 | 1 -> 1 hits at distance 1 (2 came after it), then 1 at distance 1 (3 after it)
    # window 1 [20, 40): 1 2 -> both first references in the window (their last use, 10 s and 0 s, is before 20 s)
    # so 2 hits at distance 1 out of 7 references; with a 10 s warm-up window 1 starts its cache at 10 s, where 1
    # was used: 1 hits at distance 0 (the most recent), 2 (last used at 0 s) still misses
    cold = replay.WindowTally(0.0, 20.0, 0.0, "per-block")
    warm = replay.WindowTally(0.0, 20.0, 10.0, "per-block")
    _stream(2, cold, warm)
    assert cold.counts.tolist() == [0, 2] and cold.total == 7
    assert warm.counts.tolist() == [1, 2] and warm.total == 7
    assert cold.hit_ratio(1) == 0.0 and cold.hit_ratio(2) == pytest.approx(2 / 7)
    assert warm.hit_ratio(1) == pytest.approx(1 / 7) and warm.hit_ratio() == pytest.approx(3 / 7)


@settings(max_examples=60, deadline=None)
@given(
    reqs=st.lists(st.lists(st.integers(0, 6), min_size=1, max_size=4), min_size=1, max_size=25),
    gaps=st.lists(st.sampled_from([0.0, 1.0, 2.5, 5.0]), min_size=25, max_size=25),
    window=st.sampled_from([1.0, 2.5, 4.0, 7.0]),
    warmup=st.sampled_from([0.0, 1.0, 2.5, 6.0]),
    count=st.sampled_from(["per-block", "prefix"]),
)
def test_windows_equal_replaying_each_window_on_its_own(reqs, gaps, window, warmup, count):
    # distributed.windowed replays each window in its own cache after its warm-up; the tally reads the whole stream
    times = np.cumsum(gaps[: len(reqs)]) * 1000.0  # ms
    t = trace_of(reqs, times.tolist())
    whole = distributed.windowed([distributed.part_of(t)], window, warmup, 1, count=count)
    tally = replay.WindowTally(float(t.timestamps_s[0]), window, warmup, count)
    stream = LruStream(count, observers=[tally])
    stream.feed(t.blocks, t.starts, t.input_tokens, 1, timestamps_s=t.timestamps_s)
    n = max(whole.counts["blocks"].size, tally.counts.size)
    assert (
        np.pad(tally.counts, (0, n - tally.counts.size)).tolist()
        == np.pad(whole.counts["blocks"], (0, n - whole.counts["blocks"].size)).tolist()
    )
    assert tally.total == whole.total["blocks"]
