"""Oracles the tests share: a hand trace, and the obvious simulations the fast code is checked against.

- :data:`HAND_ROWS`, a hand trace of five requests at 4 tokens a block (its arithmetic beside it),
  and :func:`row`, one request as the reader takes it.
- :func:`lru_distances`, LRU stack distances by moving each block to the top of an explicit stack.
- :func:`lru_hits`, the hits of an LRU cache of a given size, simulated block by block;
  :func:`optimum_hits`, the most hits any cache of that size can get (every choice tried);
  :func:`simulate_hierarchy`, a hierarchy of LRU tiers replayed block by block.
- :func:`sieve_dict`: SIEVE with a Python list as its queue and a set of visited ids.
- :func:`min_dict`, :func:`leaf_lru_dict` and :func:`s3fifo_dict`: Belady's MIN, leaf-first LRU and
  S3-FIFO written plainly with Python's dicts, heaps and ordered dicts, against which the compiled
  array loops of :mod:`kvtier.formulas.cache.policies` are checked.
- :data:`HAND_RC`, recompute costs with round numbers, :func:`hand_link` a link with round numbers, and
  :func:`reuse_of`, a hand trace of block ids measured in memory.
"""

from __future__ import annotations

import heapq
from collections import OrderedDict
from functools import cache

from kvtier.formulas.cache.curve import Reuse
from kvtier.formulas.cache.hierarchy import INCLUSIVE
from kvtier.formulas.cache.regen import RegenCosts
from kvtier.formulas.cache.report import LinkSpec
from tests.conftest import trace_of


def row(ts: float, ids: list[int], n_in: int) -> dict:
    """One request of a trace: timestamp ``ts`` (ms), ``n_in`` prompt tokens, one output token, ``ids``."""
    return {"timestamp": ts, "input_length": n_in, "output_length": 1, "hash_ids": ids}


HAND_ROWS = [
    row(0, [-1, -2], 8),  # 2 full blocks: 4 + 4 tokens
    row(1, [-1, -2, 5], 9),  # 4 + 4 + 1
    "",  # a blank line is skipped, not the end
    row(2, [7, 7], 5),  # 4 + 1
    row(3, [-1, 7], 6),  # 4 + 2
    row(4, [], 0),  # no blocks
]
"""A hand trace at 4 tokens a block; a str is a line as it is."""


def lru_distances(blocks: list[int]) -> list[int]:
    """LRU stack distances, most recent block first: a block's depth in the stack when it is used again, -1 new."""
    stack: list[int] = []
    out = []
    for b in blocks:
        depth = stack.index(b) if b in stack else -1
        out.append(depth)
        if depth >= 0:
            del stack[depth]
        stack.insert(0, b)
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


# k = 2 FLOP per parameter-token, N = 1e9 parameters, no attention term; 1e15 FLOP/s at 50 %:
# compute(h) = 2e9 h / 5e14 = 4e-6 h s.  Weights 2e9 B at 1e12 B/s x 50 %: memory 2e9 / 5e11 = 4 ms
HAND_RC = RegenCosts(
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
"""Recompute costs with round numbers: 4e-6 s of compute a token, 4 ms to stream the weights."""


def hand_link(name: str = "l") -> LinkSpec:
    """A link of 1e6 B/s and 1 ms a transfer."""
    return LinkSpec(name, 1e6, 1e-3)


def reuse_of(blocks_per_request: list[list[int]], times_ms: list[float] | None = None, block_tokens: int = 1) -> Reuse:
    """A hand trace of block ids per request (:func:`tests.conftest.trace_of`) measured in memory."""
    return Reuse.of(trace_of(blocks_per_request, times_ms, block_tokens))


def optimum_hits(blocks: tuple[int, ...], capacity: int) -> int:
    """The most hits any cache of ``capacity`` can get, by trying every admission and eviction."""

    @cache
    def best(t: int, held: frozenset[int]) -> int:
        if t == len(blocks):
            return 0
        b = blocks[t]
        if b in held:
            return 1 + best(t + 1, held)
        options = [best(t + 1, held)]  # do not keep it
        if len(held) < capacity:
            options.append(best(t + 1, held | {b}))
        else:
            options += [best(t + 1, (held - {x}) | {b}) for x in held]
        return max(options)

    return best(0, frozenset())


def simulate_hierarchy(blocks: list[int], capacity: list[int], mode: str) -> tuple[list[int], list[int], list[int]]:
    """Replay a hierarchy block by block; per tier: hits, admissions, demotions.

    Inclusive: every tier is an LRU cache that sees every reference; the first tier holding the
    block serves it; every tier without it admits it and drops its own LRU block when over capacity.
    Exclusive: the block is taken out of the tier that holds it and put on top of tier 0; each
    tier over capacity pushes its LRU block down to the top of the next (a demotion); the last
    tier drops it.
    """
    k = len(capacity)
    tiers: list[OrderedDict[int, None]] = [OrderedDict() for _ in range(k)]  # last = most recent
    hits, adm, dem = [0] * k, [0] * k, [0] * k
    for b in blocks:
        where = next((i for i in range(k) if b in tiers[i]), None)
        if where is not None:
            hits[where] += 1
        if mode == INCLUSIVE:
            for i in range(k):
                if b in tiers[i]:
                    tiers[i].move_to_end(b)
                elif capacity[i] > 0:
                    adm[i] += 1
                    tiers[i][b] = None
                    if len(tiers[i]) > capacity[i]:
                        tiers[i].popitem(last=False)
                else:
                    adm[i] += 1  # a tier of 0 blocks misses and writes nothing it keeps; counted as the formula does
        else:
            if where is not None:
                del tiers[where][b]
            if where != 0:
                adm[0] += 1
            moving = [b]
            for i in range(k):
                for x in moving:
                    tiers[i][x] = None
                moving = []
                while len(tiers[i]) > capacity[i]:
                    x, _ = tiers[i].popitem(last=False)
                    moving.append(x)
                if i + 1 < k:
                    dem[i + 1] += len(moving)
    return hits, adm, dem


def min_dict(blocks: list[int], capacity: int) -> int:
    """Belady's MIN with a dict of cached blocks' next uses and a heap (stale entries skipped)."""
    n = len(blocks)
    nxt, seen = [n] * n, {}
    for i in range(n - 1, -1, -1):
        nxt[i] = seen.get(blocks[i], n)
        seen[blocks[i]] = i
    cached: dict[int, int] = {}
    heap: list[tuple[int, int]] = []
    hits = 0
    for b, nx in zip(blocks, nxt, strict=True):
        if b in cached:
            hits += 1
        elif len(cached) >= capacity:
            while -heap[0][0] != cached.get(heap[0][1], -1):
                heapq.heappop(heap)
            if nx >= -heap[0][0]:
                continue
            del cached[heapq.heappop(heap)[1]]
        if nx >= n:
            cached.pop(b, None)
            continue
        cached[b] = nx
        heapq.heappush(heap, (-nx, b))
    return hits


def leaf_lru_dict(blocks: list[int], parent: list[int], capacity: int) -> int:
    """Leaf-first LRU: scan the cached blocks for the least recently used one with no cached child."""
    last: dict[int, int] = {}
    hits = 0
    for t, b in enumerate(blocks):
        if b in last:
            hits += 1
        elif len(last) >= capacity:
            with_child = {parent[x] for x in last}
            leaf = min((u, x) for x, u in last.items() if x not in with_child)[1]
            del last[leaf]
        last[b] = t
    return hits


def s3fifo_dict(blocks: list[int], capacity: int, small_share: float = 0.1) -> int:
    """S3-FIFO with three ordered dicts (small, main, ghost) and a dict of counters."""
    small_cap = max(1, int(capacity * small_share))
    main_cap = capacity - small_cap
    small: OrderedDict[int, None] = OrderedDict()
    main: OrderedDict[int, None] = OrderedDict()
    ghost: OrderedDict[int, None] = OrderedDict()
    freq: dict[int, int] = {}
    hits = 0
    for b in blocks:
        if b in freq:
            hits += 1
            freq[b] = min(freq[b] + 1, 3)
            continue
        while len(small) + len(main) >= capacity:
            if len(main) > main_cap or not small:
                while main:
                    x, _ = main.popitem(last=False)
                    if freq[x] > 0:
                        main[x] = None
                        freq[x] -= 1
                    else:
                        del freq[x]
                        break
            else:
                while small:
                    x, _ = small.popitem(last=False)
                    if freq[x] >= 2:
                        main[x] = None
                        freq[x] = 0
                    else:
                        del freq[x]
                        ghost[x] = None
                        if len(ghost) > main_cap:
                            ghost.popitem(last=False)
                        break
        if b in ghost:
            del ghost[b]
            main[b] = None
        else:
            small[b] = None
        freq[b] = 0
    return hits


def sieve_dict(blocks: list[int], capacity: int) -> int:
    """SIEVE with a list (oldest first) as its queue, a set of visited ids and the hand as a list index."""
    queue: list[int] = []
    visited: set[int] = set()
    hand = 0  # an index into queue; the oldest at 0
    hits = 0
    for b in blocks:
        if b in queue:
            hits += 1
            visited.add(b)
            continue
        if len(queue) >= capacity:
            while queue[hand] in visited:
                visited.discard(queue[hand])
                hand = (hand + 1) % len(queue)
            del queue[hand]  # the next newer block slides into its place: the hand stays on it
            hand = hand % len(queue) if queue else 0
        queue.append(b)
    return hits
