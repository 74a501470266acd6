"""Eviction policies besides LRU, and the offline optimum, replayed on a trace's block references.

LRU's hit ratio at every capacity comes from one pass of stack distances
(:func:`kvtier.formulas.cache.distances.stack_distances`, :func:`lru_hits`).  The other policies are not
stack algorithms in that sense, so each is replayed once per capacity (:func:`hit_counts` runs a
list), in O(n log n) or O(n) per capacity:

- **leaf-first LRU** (:func:`leaf_lru_hits`), as radix-tree prefix caches evict (SGLang's
  RadixAttention, vLLM's prefix caching): a block is evicted only when no block chained after it
  is cached, the least recently used such leaf first.  A block's parent is the block before it
  in the prompts that reference it (:func:`parents`).
- **S3-FIFO** (:func:`s3fifo_hits`; Yang et al., "FIFO queues are all you need for cache
  eviction", SOSP 2023, Algorithm 1, with libCacheSim's defaults): a small FIFO of 10 % of the
  capacity that new blocks enter, a main FIFO of the rest with a 2-bit reinsertion counter, and
  a ghost FIFO of as many ids as the main one holds; a block leaving the small FIFO moves to the
  main one when it was hit at least twice there, else its id goes to the ghost, and a miss on a
  ghost id enters the main FIFO directly.  Scan-resistant: a block used once passes through the
  small FIFO without displacing the main one.
- **Belady's MIN** (:func:`min_hits`): with the whole trace known, on a miss keep the blocks
  used soonest, evicting the one whose next use is farthest (the incoming block included: an
  offline cache need not keep a block it will not use before the others).  No policy, with or
  without a say in what it admits, hits more at the same capacity: the upper bound.

Every policy counts a reference as a hit when its block is cached at that moment (per-block
hits), and a cache of ``C`` blocks holds at most ``C``.  Counts are references (blocks).
"""

from __future__ import annotations

import heapq
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

POLICIES: tuple[str, ...] = ("lru", "leaf_lru", "s3fifo", "min")
"""The policies compared, by the names the tables use: LRU, leaf-first LRU, S3-FIFO, Belady's MIN."""

S3FIFO_SMALL_SHARE = 0.10
"""The small FIFO's share of an S3-FIFO cache (Yang et al. 2023: 10 %, chosen on 10 traces)."""
S3FIFO_MOVE_AT = 2
"""Hits in the small FIFO that move a block to the main one (libCacheSim's S3FIFO.c, ``move-to-main-threshold=2``)."""
S3FIFO_FREQ_MAX = 3
"""The cap of S3-FIFO's 2-bit access counter."""


def lru_hits(distance: np.ndarray, capacities: Sequence[int] | np.ndarray) -> np.ndarray:
    """Hits of an LRU cache at each capacity: references whose stack distance is below it (blocks), one pass.

    Parameters
    ----------
    distance : ndarray of int
        Stack distance per reference (-1: a first reference), :func:`kvtier.formulas.cache.distances.stack_distances`.
    capacities : sequence of int
        Cache sizes (blocks).
    """
    d = np.sort(np.asarray(distance)[np.asarray(distance) >= 0])
    return np.searchsorted(d, np.asarray(capacities, dtype=np.int64), side="left").astype(np.int64)


def next_reference(blocks: np.ndarray) -> np.ndarray:
    """For each reference, the index of the next reference to the same block (``len(blocks)`` for none)."""
    blocks = np.asarray(blocks)
    n = blocks.size
    order = np.argsort(blocks, kind="stable")
    ranked = blocks[order]
    same = ranked[1:] == ranked[:-1]
    nxt = np.full(n, n, dtype=np.int64)
    nxt[order[:-1][same]] = order[1:][same]
    return nxt


def parents(blocks: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Each distinct block's parent: the block before it in the first prompt that references it (-1: a first block).

    With prefix-chained ids (equal ids: equal prefix) every prompt that holds a block holds the same
    block before it, so the first prompt's is every prompt's.

    Parameters
    ----------
    blocks : ndarray of int
        Dense block ids ``0 .. n_unique - 1`` in reference order.
    starts : ndarray of int
        Where each request's references begin, and the total at the end.
    """
    blocks = np.asarray(blocks, dtype=np.int64)
    n_unique = int(blocks.max()) + 1 if blocks.size else 0
    first = np.zeros(blocks.size, dtype=bool)
    s = np.asarray(starts, dtype=np.int64)
    first[s[:-1][np.diff(s) > 0]] = True
    before = np.r_[-1, blocks[:-1]]
    before[first] = -1
    out = np.full(n_unique, -1, dtype=np.int64)
    # reversed assignment: the earliest reference's value is written last and stays
    out[blocks[::-1]] = before[::-1]
    return out


def _check(capacity: int, least: int = 1) -> int:
    c = int(capacity)
    if c < least:
        raise ValueError(f"capacity must be at least {least} blocks, got {capacity!r}")
    return c


def min_hits(blocks: np.ndarray, capacity: int, nxt: np.ndarray | None = None) -> int:
    """Hits of Belady's MIN at ``capacity`` blocks: the most any policy can hit (references).

    On a miss with the cache full, the block whose next use is farthest among the cached ones and
    the incoming one is left out (a block never used again is farthest).  A heap keyed on next use,
    with stale entries skipped: O(n log n).
    """
    c = _check(capacity)
    blocks = np.asarray(blocks, dtype=np.int64)
    nxt = next_reference(blocks) if nxt is None else nxt
    n = blocks.size
    cached_next: dict[int, int] = {}  # block -> its next use while cached
    heap: list[tuple[int, int]] = []  # (-next use, block); stale where it disagrees with cached_next
    hits = 0
    for b, nx in zip(blocks.tolist(), nxt.tolist(), strict=True):
        if b in cached_next:
            hits += 1
        elif len(cached_next) >= c:
            while -heap[0][0] != cached_next.get(heap[0][1], -1):
                heapq.heappop(heap)
            far = -heap[0][0]
            if nx >= far:  # the incoming block is used last (or never): do not keep it
                continue
            _, out = heapq.heappop(heap)
            del cached_next[out]
        if nx >= n:  # never used again: nothing to gain by keeping it (its slot is the first to go)
            cached_next.pop(b, None)
            continue
        cached_next[b] = nx
        heapq.heappush(heap, (-nx, b))
    return hits


def leaf_lru_hits(blocks: np.ndarray, parent: np.ndarray, capacity: int) -> int:
    """Hits of leaf-first LRU at ``capacity`` blocks: evict the least recently used block with no cached child.

    Parameters
    ----------
    blocks : ndarray of int
        Dense block ids in reference order.
    parent : ndarray of int
        Each distinct block's parent (:func:`parents`; -1 for none).
    capacity : int
        Cache size (blocks, >= 1).
    """
    c = _check(capacity)
    parent_of = np.asarray(parent, dtype=np.int64).tolist()
    last: dict[int, int] = {}  # cached block -> its last reference
    children = [0] * len(parent_of)  # cached children per block
    leaves: list[tuple[int, int]] = []  # (last use, block), stale where it disagrees
    hits = 0
    for t, b in enumerate(np.asarray(blocks, dtype=np.int64).tolist()):
        if b in last:
            hits += 1
        else:
            if len(last) >= c:
                while True:
                    used, x = heapq.heappop(leaves)
                    if last.get(x) == used and children[x] == 0:
                        break
                del last[x]
                p = parent_of[x]
                if p >= 0:
                    children[p] -= 1
                    if children[p] == 0 and p in last:
                        heapq.heappush(leaves, (last[p], p))
            p = parent_of[b]
            if p >= 0:
                children[p] += 1
        last[b] = t
        if children[b] == 0:
            heapq.heappush(leaves, (t, b))
    return hits


def s3fifo_hits(blocks: np.ndarray, capacity: int) -> int:
    """Hits of S3-FIFO at ``capacity`` blocks (>= 2): small FIFO 10 % (at least 1 block), main FIFO, ghost FIFO.

    - A hit adds one to the block's counter, capped at 3.
    - A miss, with ``small + main >= capacity``, evicts until there is room: from the main FIFO
      when it holds more than its share or the small one is empty, else from the small one.  Then
      a block whose id is in the ghost FIFO enters the main FIFO (its id leaves the ghost); any
      other enters the small FIFO; either with its counter at 0.
    - Evicting from the small FIFO takes its oldest block: hit at least twice, it moves to the
      main FIFO (counter cleared) and the next oldest is tried; else it leaves the cache and its
      id enters the ghost FIFO (which drops its oldest id beyond the main FIFO's share).
    - Evicting from the main FIFO takes its oldest block: with a counter above 0 it is reinserted
      with the counter less one and the next oldest is tried; else it leaves the cache.
    """
    c = _check(capacity, 2)
    small_cap = max(1, int(c * S3FIFO_SMALL_SHARE))
    main_cap = c - small_cap
    small: OrderedDict[int, None] = OrderedDict()  # oldest first
    main: OrderedDict[int, None] = OrderedDict()
    ghost: OrderedDict[int, None] = OrderedDict()
    freq: dict[int, int] = {}
    hits = 0

    def evict_small() -> None:
        while small:
            x, _ = small.popitem(last=False)
            if freq[x] >= S3FIFO_MOVE_AT:
                main[x] = None
                freq[x] = 0
            else:
                del freq[x]
                ghost[x] = None
                if len(ghost) > main_cap:
                    ghost.popitem(last=False)
                return

    def evict_main() -> None:
        while main:
            x, _ = main.popitem(last=False)
            if freq[x] > 0:
                main[x] = None
                freq[x] -= 1
            else:
                del freq[x]
                return

    for b in np.asarray(blocks, dtype=np.int64).tolist():
        if b in freq:
            hits += 1
            if freq[b] < S3FIFO_FREQ_MAX:
                freq[b] += 1
            continue
        while len(small) + len(main) >= c:
            if len(main) > main_cap or not small:
                evict_main()
            else:
                evict_small()
        if b in ghost:
            del ghost[b]
            main[b] = None
        else:
            small[b] = None
        freq[b] = 0
    return hits


def hit_counts(
    blocks: np.ndarray,
    starts: np.ndarray,
    distance: np.ndarray,
    capacities: Sequence[int],
    policies: Sequence[str] = POLICIES,
) -> dict[str, np.ndarray]:
    """Hits of each policy at each capacity (references), by policy name of :data:`POLICIES`.

    Parameters
    ----------
    blocks, starts : ndarray of int
        The trace's dense block ids in reference order and where each request's begin
        (:class:`kvtier.formulas.cache.trace.Trace`).
    distance : ndarray of int
        Their LRU stack distances (:func:`kvtier.formulas.cache.distances.stack_distances`).
    capacities : sequence of int
        Cache sizes (blocks, >= 2).
    """
    unknown = set(policies) - set(POLICIES)
    if unknown:
        raise ValueError(f"unknown policies {sorted(unknown)}; known: {POLICIES}")
    caps = [int(c) for c in capacities]
    out: dict[str, np.ndarray] = {}
    for name in policies:
        if name == "lru":
            out[name] = lru_hits(distance, caps)
        elif name == "leaf_lru":
            par = parents(blocks, starts)
            out[name] = np.array([leaf_lru_hits(blocks, par, c) for c in caps], dtype=np.int64)
        elif name == "s3fifo":
            out[name] = np.array([s3fifo_hits(blocks, c) for c in caps], dtype=np.int64)
        else:
            nxt = next_reference(blocks)
            out[name] = np.array([min_hits(blocks, c, nxt) for c in caps], dtype=np.int64)
    return out
