"""kvtier.formulas.cache.policies by hand: LRU, leaf-first LRU, S3-FIFO and Belady's MIN, and MIN as the bound."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvtier.formulas.cache import policies
from kvtier.formulas.cache.distances import stack_distances
from tests.oracles import leaf_lru_dict, lru_hits, min_dict, optimum_hits, s3fifo_dict, sieve_dict

A, B, C, D = 0, 1, 2, 3


def starts_of(lengths: list[int]) -> np.ndarray:
    return np.r_[0, np.cumsum(lengths)].astype(np.int64)


def all_hits(blocks: list[int], lengths: list[int], capacity: int) -> dict[str, int]:
    b = np.array(blocks, dtype=np.int64)
    got = policies.hit_counts(b, starts_of(lengths), stack_distances(b), [capacity])
    return {k: int(v[0]) for k, v in got.items()}


def test_a_scan_after_a_hot_block():
    # one block per request: a a a b c a, capacity 2 (S3-FIFO: small FIFO 1 block, main 1, ghost 1)
    # LRU:  a miss, a hit, a hit, b miss, c miss (evicts a, the least recent of a@2 and b@3), a miss -> 2
    # leaf-first: no block has a child, so every block is a leaf and it is LRU -> 2
    # S3-FIFO: a enters small (0); two hits: counter 2; b enters small (size 2, the cache is full);
    #   c: evict from small: a was hit twice -> moves to main (counter 0), then b (0 hits) -> ghost;
    #   c enters small: cache {a (main), c (small)}; a hits -> 3
    # SIEVE: a hits twice (visited); b fills the queue; c: the hand at a (visited) clears it and moves on to b, not
    #   visited: b leaves; a hits -> 3
    # MIN: a hits twice; b and c are never used again, so they are not kept; a hits -> 3
    got = all_hits([A, A, A, B, C, A], [1] * 6, 2)
    assert got == {"lru": 2, "leaf_lru": 2, "s3fifo": 3, "sieve": 3, "min": 3}


def test_leaf_first_keeps_the_shared_prefix():
    # requests [a b] [c] [a b]: b is chained after a; capacity 2
    # LRU: a, b, c (evicts a), a (evicts b), b (evicts c): 0 hits
    # leaf-first: a, b (a now has a cached child, b is the only leaf), c: evicts b (the LRU leaf),
    #   a becomes a leaf again; cache {a, c}; a hits; b: the leaves are c (used at 2) and a (at 3): evicts c -> 1
    # S3-FIFO (small 1, main 1, ghost 1): a, b into small; c: a (0 hits) -> ghost [a]; small [b, c];
    #   a: b -> ghost [a, b], over 1 id: drops a; a is no longer a ghost -> small [c, a]; b: c -> ghost, drops b;
    #   b enters small: 0 hits
    # SIEVE: nothing is visited before it leaves: c evicts a, a evicts b, b evicts c -> 0
    # MIN: c is never used again and is not kept; a and b hit -> 2
    got = all_hits([A, B, C, A, B], [2, 1, 2], 2)
    assert got == {"lru": 0, "leaf_lru": 1, "s3fifo": 0, "sieve": 0, "min": 2}


def test_loop_larger_than_the_cache():
    # a b c a b c, capacity 2, one block per request
    # LRU: each block is evicted just before it comes back: 0
    # MIN: at c, the cached a (next at 3) and b (next at 4) are used before c (next at 5): c is not kept;
    #   a and b hit; c misses -> 2
    got = all_hits([A, B, C, A, B, C], [1] * 6, 2)
    assert got["lru"] == 0 and got["leaf_lru"] == 0 and got["min"] == 2


def test_s3fifo_ghost_sends_a_block_to_main():
    # capacity 4: small 1 block (10 %, at least 1), main 3, ghost 3 ids; a b c d e a f a d
    # a b c d fill small (4 blocks: the cache is full); e: evict from small: a (0 hits) -> ghost [a];
    #   small [b c d e]; a: evict b -> ghost [a b]; a is a ghost: enters main, its id leaves the ghost;
    #   f: main holds 1 <= 3 -> evict from small: c -> ghost [b c]; small [d e f]; a hits (main); d hits -> 2
    # LRU: a..d, e evicts a, a evicts b, f evicts c, a hits (distance 1), d hits (distance 3 < 4) -> 2
    blocks = [A, B, C, D, 4, A, 5, A, D]
    assert policies.s3fifo_hits(np.array(blocks), 4) == 2
    # a b c d e a f g a: as above until a enters main; f: c -> ghost; g: d -> ghost [b c d]; small [e f g];
    #   a hits in main -> 1 (LRU: a's distance is 2, {f, g}, below 4 -> 1 too)
    assert policies.s3fifo_hits(np.array([A, B, C, D, 4, A, 5, 6, A]), 4) == 1


def test_s3fifo_main_reinserts_a_hit_block():
    # capacity 2 (small 1, main 1, ghost 1): a a a b c a b d a
    # as in the scan test, after c: main [a] (counter 0), small [c]; a hits (counter 1);
    # b: full -> main holds 1 (not over 1) and small is not empty: evict small's c (0 hits) -> ghost [c],
    #   b is not a ghost -> small [b]; d: evict small's b -> ghost [b] (c dropped); small [d]; a hits -> 4 hits
    assert policies.s3fifo_hits(np.array([A, A, A, B, C, A, B, D, A]), 2) == 4


def test_parents_are_the_block_before():
    # requests [a b c] [a d] [e]: b's parent a, c's b, d's a; a and e start a prompt
    par = policies.parents(np.array([A, B, C, A, D, 4]), starts_of([3, 2, 1]))
    assert par.tolist() == [-1, A, B, A, -1]


def test_next_reference():
    # a b a b c: a at 0 -> 2, b at 1 -> 3, then none (5)
    assert policies.next_reference(np.array([A, B, A, B, C])).tolist() == [2, 3, 5, 5, 5]


def test_lru_hits_from_distances():
    # distances of a b a c b a d a: -1 -1 1 -1 2 2 -1 1; capacity 2 takes d < 2 (2 hits), 3 takes all 4
    d = stack_distances(np.array([A, B, A, C, B, A, D, A]))
    assert policies.lru_hits(d, [1, 2, 3]).tolist() == [0, 2, 4]


def test_refuses_a_capacity_too_small():
    with pytest.raises(ValueError, match="at least 2"):
        policies.s3fifo_hits(np.array([A]), 1)
    with pytest.raises(ValueError, match="at least 1"):
        policies.min_hits(np.array([A]), 0)
    with pytest.raises(ValueError, match="unknown policies"):
        policies.hit_counts(np.array([A]), starts_of([1]), np.array([-1]), [2], ("arc",))


requests = st.lists(st.lists(st.integers(0, 7), min_size=1, max_size=4), min_size=1, max_size=14)


@settings(max_examples=200, deadline=None)
@given(reqs=requests, capacity=st.integers(2, 6))
def test_min_is_at_least_every_policy(reqs, capacity):
    blocks = [b for r in reqs for b in r]
    got = all_hits(blocks, [len(r) for r in reqs], capacity)
    assert got["lru"] == lru_hits(blocks, capacity)
    for name in ("lru", "leaf_lru", "s3fifo"):
        assert got["min"] >= got[name], name


@settings(max_examples=120, deadline=None)
@given(blocks=st.lists(st.integers(0, 4), min_size=0, max_size=10), capacity=st.integers(1, 3))
def test_min_is_the_optimum(blocks, capacity):
    assert policies.min_hits(np.array(blocks, dtype=np.int64), capacity) == optimum_hits(tuple(blocks), capacity)


@settings(max_examples=100, deadline=None)
@given(blocks=st.lists(st.integers(0, 9), min_size=1, max_size=40), capacity=st.integers(1, 5))
def test_leaf_first_without_chains_is_lru(blocks, capacity):
    # one block per request: no block has a parent, every cached block is a leaf
    par = policies.parents(np.array(blocks), starts_of([1] * len(blocks)))
    assert policies.leaf_lru_hits(np.array(blocks), par, capacity) == lru_hits(blocks, capacity)


chained = st.lists(
    st.tuples(st.integers(0, 11), st.integers(1, 5)), min_size=1, max_size=40
)  # (first block, length): a request references first, first + 1, ... as a prefix-chained prompt would


@settings(max_examples=150, deadline=None)
@given(reqs=chained, capacity=st.integers(2, 12))
def test_compiled_loops_equal_the_plain_simulations(reqs, capacity):
    # the compiled loops, the same loops run as written (numba missing), and the dict-and-heap oracles agree
    lists = [list(range(f, f + k)) for f, k in reqs]
    blocks = [b for r in lists for b in r]
    arr = np.array(blocks, dtype=np.int64)
    par = policies.parents(arr, starts_of([len(r) for r in lists]))
    nxt = policies.next_reference(arr)
    slots = int(arr.max()) + 1
    small = max(1, int(capacity * policies.S3FIFO_SMALL_SHARE))
    expected = {
        "min": min_dict(blocks, capacity),
        "leaf_lru": leaf_lru_dict(blocks, par.tolist(), capacity),
        "s3fifo": s3fifo_dict(blocks, capacity),
    }
    compiled = {
        "min": policies.min_hits(arr, capacity),
        "leaf_lru": policies.leaf_lru_hits(arr, par, capacity),
        "s3fifo": policies.s3fifo_hits(arr, capacity),
    }
    plain = {
        "min": policies._min_loop.py_func(arr, nxt, capacity, slots, np.zeros(arr.size, np.int8)),
        "leaf_lru": policies._leaf_lru_loop.py_func(arr, par, capacity, np.zeros(arr.size, np.int8)),
        "s3fifo": policies._s3fifo_loop.py_func(
            arr, capacity, small, slots, capacity - small, False, np.zeros(arr.size, np.int8)
        ),
    }
    assert compiled == plain == expected


def test_compiled_loops_on_a_long_skewed_trace():
    # 4,000 requests, each a prefix chain first, first + 1, ... of 1-7 blocks, the first drawn from 2,000 with a
    # Zipf-like skew (about 16,000 references), at three capacities: the compiled loops against the plain
    # simulations (the ring buffers wrap, the ghost FIFO drops ids, leaves change as chains are evicted)
    rng = np.random.default_rng(7)
    firsts, lengths = rng.zipf(1.3, 4_000) % 2_000, rng.integers(1, 8, 4_000)
    blocks = np.concatenate([np.arange(f, f + k) for f, k in zip(firsts, lengths, strict=True)]).astype(np.int64)
    par = policies.parents(blocks, np.r_[0, np.cumsum(lengths)])
    assert (par >= 0).sum() > 1_000  # chains: many blocks have a parent
    for c in (3, 50, 400):
        assert policies.min_hits(blocks, c) == min_dict(blocks.tolist(), c)
        assert policies.s3fifo_hits(blocks, c) == s3fifo_dict(blocks.tolist(), c)
        assert policies.leaf_lru_hits(blocks, par, c) == leaf_lru_dict(blocks.tolist(), par.tolist(), c)


def _libcachesim_hits(blocks: np.ndarray, capacity: int, policy: str = "S3FIFO") -> int:
    """Hits of libCacheSim's own ``policy`` at ``capacity`` (S3FIFO with its defaults: small 0.1, ghost 0.9, move
    at 2; or Sieve), one request a block of size 1."""
    import libcachesim

    cache, req = getattr(libcachesim, policy)(capacity), libcachesim.Request()
    req.obj_size = 1
    hits = 0
    for b in blocks:
        req.obj_id = int(b)
        hits += cache.get(req)
    return hits


def test_s3fifo_libcachesim_variant_is_the_library():
    # 400 random traces of 1-200 references over 1-60 blocks at 10-60 blocks (libCacheSim refuses fewer than 10):
    # kvtier's libcachesim variant and the library's C code hit the same references, every one
    rng = np.random.default_rng(1)
    for _ in range(400):
        n, u, c = int(rng.integers(1, 200)), int(rng.integers(1, 60)), int(rng.integers(10, 60))
        blocks = rng.integers(0, u, n)
        assert policies.s3fifo_hits(blocks, c, "libcachesim") == _libcachesim_hits(blocks, c), (blocks.tolist(), c)


def test_sieve_by_hand():
    # capacity 3: A B C fill the queue (oldest A); A hits (visited). D misses: the hand at A clears it and moves
    # on to B, not visited: B leaves, the hand stays at C. A hits. E misses: the hand at C, not visited: C leaves.
    # B misses: the hand wraps past the newest to the oldest, A (visited again): cleared, then D, not visited,
    # leaves. A hits: 3 hits in all, where LRU (A B C A D A E B A) hits A three times too but keeps B out
    E = 4
    blocks = np.array([A, B, C, A, D, A, E, B, A])
    assert policies.sieve_hits(blocks, 3) == 3 == sieve_dict(blocks.tolist(), 3)
    flags = np.zeros(blocks.size, dtype=np.int8)
    policies.sieve_hits(blocks, 3, flags)
    assert flags.tolist() == [0, 0, 0, 1, 0, 1, 0, 0, 1]
    # one block: every other reference evicts it
    assert policies.sieve_hits(np.array([A, A, B, A]), 1) == 1


def test_sieve_is_its_oracle_and_the_library():
    # 300 random traces of 1-300 references over 1-80 blocks at 1-60 blocks: the compiled loop, the list-based
    # oracle (tests/oracles.py) and libCacheSim 0.3.5's Sieve in C hit the same number of references
    rng = np.random.default_rng(2)
    for _ in range(300):
        n, u, c = int(rng.integers(1, 300)), int(rng.integers(1, 80)), int(rng.integers(1, 60))
        blocks = rng.integers(0, u, n)
        got = policies.sieve_hits(blocks, c)
        assert got == sieve_dict(blocks.tolist(), c) == _libcachesim_hits(blocks, c, "Sieve"), (blocks.tolist(), c)


def test_sieve_on_the_conversation_trace():
    # Mooncake's conversation trace at the decision's 31,589 blocks: 81,611 of 288,500 references (28.29 %), the
    # library's count too, between libCacheSim's S3-FIFO (74,315) and the paper's (90,511)
    from kvtier.inputs import traces

    blocks = traces.read_trace("conversation", 512).blocks
    assert policies.sieve_hits(blocks, 31_589) == 81_611 == _libcachesim_hits(blocks, 31_589, "Sieve")


def test_s3fifo_variants_differ_at_warm_up():
    # the smallest trace found where they part: 23 distinct blocks 0..22, then 20 again, at 20 blocks
    # paper: every miss enters the small FIFO, which runs past its 2 blocks until the cache is full: 0..19 fill
    #   it; 20, 21 and 22 evict 0, 1 and 2, so 20 is still held when it returns: 1 hit
    # libcachesim: small (2 blocks) fills with 0 and 1, then 2..19 enter main until the first eviction; 20, 21
    #   and 22 each evict from small (0, 1, then 20 itself, to the ghost), so 20 has left by its return: 0 hits
    blocks = np.r_[np.arange(23), 20]
    assert policies.s3fifo_hits(blocks, 20) == 1
    assert policies.s3fifo_hits(blocks, 20, "libcachesim") == 0 == _libcachesim_hits(blocks, 20)
    with pytest.raises(ValueError, match="variant"):
        policies.s3fifo_hits(blocks, 20, "clock")


def test_s3fifo_variants_on_the_conversation_trace():
    # what the docs and the module say: Mooncake's conversation trace at the decision's 31,589 blocks (per-block
    # hits of its 288,500 references): the paper's algorithm 90,511 (31.37 %), libCacheSim's 74,315 (25.76 %)
    from kvtier.inputs import traces

    blocks = traces.read_trace("conversation", 512).blocks
    assert blocks.size == 288_500
    assert policies.s3fifo_hits(blocks, 31_589) == 90_511
    assert policies.s3fifo_hits(blocks, 31_589, "libcachesim") == 74_315 == _libcachesim_hits(blocks, 31_589)
    assert (round(90_511 / 288_500 * 100, 2), round(74_315 / 288_500 * 100, 2)) == (31.37, 25.76)
    # a prefix cache serves fewer of the paper's hits: those before each request's first miss
    d = stack_distances(blocks)
    starts = traces.read_trace("conversation", 512).starts
    usable = policies.hit_counts(blocks, starts, d, [31_589], ("s3fifo",), "prefix")["s3fifo"][0]
    assert round(usable / 288_500 * 100, 2) == 31.15


def test_prefix_hits_stop_at_each_requests_first_miss():
    # three requests: hit miss hit -> 1 (the hit after the miss is recomputed with it); hit hit miss -> 2;
    # miss hit -> 0: 3 of the 5 hits a prefix cache serves
    flags = np.array([1, 0, 1, 1, 1, 0, 0, 1], dtype=np.int8)
    assert policies.prefix_hits(flags, np.array([0, 3, 6, 8])) == 3


def test_hit_counts_by_either_rule():
    # [a b] [c] [a b] [a c']: c' chained after a, so a new block. Capacity 2, LRU: a b miss; c miss (evicts a);
    # a miss (evicts b), b miss (evicts c); a hits, c' misses: 1 hit, the request's first block, under both rules
    blocks = np.array([0, 1, 2, 0, 1, 0, 3])
    starts = np.array([0, 2, 3, 5, 7])
    d = stack_distances(blocks)
    for count in ("per-block", "prefix"):
        assert policies.hit_counts(blocks, starts, d, [2], ("lru",), count)["lru"].tolist() == [1]
    with pytest.raises(ValueError, match="count"):
        policies.hit_counts(blocks, starts, d, [2], ("lru",), "usable")


def test_lru_replayed_is_lru_read_off_the_stack_distances_and_int32_ids_replay_alike():
    # 300 random traces of 1-300 references over 1-80 blocks at 1-60 blocks: LRU replayed reference by reference
    # (for a trace too long for its stack distances) hits what the distances say; and every policy replays int32
    # ids (traces.read_dense's, 4 B a reference) as it replays int64 ones, with both hit rules from one replay
    rng = np.random.default_rng(3)
    for _ in range(300):
        n, u, c = int(rng.integers(1, 300)), int(rng.integers(1, 80)), int(rng.integers(2, 60))
        blocks = rng.integers(0, u, n)
        assert policies.lru_replay_hits(blocks, c) == int(policies.lru_hits(stack_distances(blocks), [c])[0])
        starts = np.array([0, *sorted(rng.choice(np.arange(1, n), size=min(5, n - 1), replace=False)), n])
        wide = policies.hit_counts_by_rule(blocks, starts, stack_distances(blocks), [c])
        narrow = policies.hit_counts_by_rule(blocks.astype(np.int32), starts, None, [c])
        assert {r: {k: v.tolist() for k, v in h.items()} for r, h in wide.items()} == {
            r: {k: v.tolist() for k, v in h.items()} for r, h in narrow.items()
        }, (blocks.tolist(), starts.tolist(), c)
