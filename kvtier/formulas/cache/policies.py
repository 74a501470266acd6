"""Eviction policies besides LRU, and the offline optimum, replayed on a trace's block references.

LRU's hit ratio at every capacity comes from one pass of stack distances
(:func:`kvtier.formulas.cache.distances.stack_distances`, :func:`lru_hits`).  The other policies are not
stack algorithms in that sense, so each is replayed once per capacity (:func:`hit_counts` runs a
list), in O(n log n) or O(n) per capacity, by loops over arrays compiled with numba
(:mod:`kvtier.formulas.jit`; ``tests/oracles.py`` holds the same policies written with dicts and heaps, which
the tests check them against):

- **leaf-first LRU** (:func:`leaf_lru_hits`), as radix-tree prefix caches evict (SGLang's
  RadixAttention, vLLM's prefix caching): a block is evicted only when no block chained after it
  is cached, the least recently used such leaf first.  A block's parent is the block before it
  in the prompts that reference it (:func:`parents`).
- **S3-FIFO** (:func:`s3fifo_hits`; Yang et al., "FIFO queues are all you need for cache
  eviction", SOSP 2023, Algorithm 1, with the sizes and thresholds libCacheSim defaults to): a small FIFO of 10 % of the
  capacity that new blocks enter, a main FIFO of the rest with a 2-bit reinsertion counter, and
  a ghost FIFO of as many ids as the main one holds; a block leaving the small FIFO moves to the
  main one when it was hit at least twice there, else its id goes to the ghost, and a miss on a
  ghost id enters the main FIFO directly.  Scan-resistant: a block used once passes through the
  small FIFO without displacing the main one.  libCacheSim 0.3.5's ``S3FIFO`` differs from
  Algorithm 1 in four ways (:data:`S3FIFO_VARIANTS`), the first of which moves Mooncake's
  conversation trace at 31,589 blocks from 31.37 % to 25.76 % of blocks hit: until its first
  eviction, a miss that finds the small FIFO full enters the main FIFO (a warm-up that fills main
  with the trace's first blocks); its ghost holds ``int(0.9 C)`` ids, not ``C - small``; a ghost
  id is looked up before the eviction the miss causes (which can drop it); and it admits no
  block as large as its small FIFO, so below 20 blocks it caches nothing.
  ``s3fifo_hits(..., variant="libcachesim")`` replays those, and a test holds it to the library.
- **SIEVE** (:func:`sieve_hits`; Zhang et al., "SIEVE is simpler than LRU", NSDI 2024): one FIFO queue
  with a visited bit per block, set by a hit; a hand moves from the oldest block towards the newest,
  clearing the bits it passes, and evicts the first block it finds unvisited, staying there for the next
  eviction; a new block enters at the newest end.  As libCacheSim 0.3.5's ``Sieve`` runs it, which a test
  holds it to.
- **Belady's MIN** (:func:`min_hits`): with the whole trace known, on a miss keep the blocks
  used soonest, evicting the one whose next use is farthest (the incoming block included: an
  offline cache need not keep a block it will not use before the others).  No policy, with or
  without a say in what it admits, hits more at the same capacity: the upper bound.

Every policy counts a reference as a hit when its block is cached at that moment (per-block
hits), and a cache of ``C`` blocks holds at most ``C``.  Counts are references (blocks).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from kvtier.formulas.cache.distances import hit_distances
from kvtier.formulas.cache.trace import HIT_COUNTS
from kvtier.formulas.jit import jit

POLICIES: tuple[str, ...] = ("lru", "leaf_lru", "s3fifo", "sieve", "min")
"""The policies compared, by the names the tables use: LRU, leaf-first LRU, S3-FIFO, SIEVE, Belady's MIN."""
POLICY_NAMES: dict[str, str] = {
    "lru": "LRU",
    "leaf_lru": "leaf-first LRU",
    "s3fifo": "S3-FIFO",
    "sieve": "SIEVE",
    "min": "Belady's MIN",
}
"""The policies of :data:`POLICIES` in words, as the pages and the command line name them."""

S3FIFO_SMALL_SHARE = 0.10
"""The small FIFO's share of an S3-FIFO cache (Yang et al. 2023: 10 %, chosen on 10 traces)."""
S3FIFO_MOVE_AT = 2
"""Hits in the small FIFO that move a block to the main one (libCacheSim's S3FIFO.c, ``move-to-main-threshold=2``)."""
S3FIFO_FREQ_MAX = 3
"""The cap of S3-FIFO's 2-bit access counter."""
S3FIFO_VARIANTS: tuple[str, ...] = ("paper", "libcachesim")
"""S3-FIFO as the paper's Algorithm 1 states it (``paper``: what the book's tables show) and as libCacheSim 0.3.5's
``S3FIFO`` runs it (``libcachesim``: warm-up into main, a ghost of ``int(0.9 C)`` ids looked up before the
eviction, nothing cached below 20 blocks)."""
S3FIFO_GHOST_SHARE = 0.9
"""libCacheSim's ghost FIFO, as a share of the capacity (``ghost-size-ratio``)."""


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
    """For each reference, the index of the next reference to the same block (``len(blocks)`` for none).

    Dense ids (``0 ..``), one backward pass with the last index seen per block: O(n), 4 B a reference and a
    block for int32 ids (a trace of fewer than 2**31 references), else 8.
    """
    b, slots = _dense(blocks)
    n = b.size
    nxt = np.empty(n, dtype=np.int32 if b.dtype == np.int32 and n < 2**31 - 1 else np.int64)
    _next_loop(b, slots, nxt)
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


def _flags(flags: np.ndarray | None, n: int) -> np.ndarray:
    """Where a loop marks its hits: the caller's int8 array of ``n`` (cleared), or a scratch one."""
    if flags is None:
        return np.zeros(n, dtype=np.int8)
    if flags.dtype != np.int8 or flags.size != n:
        raise ValueError(f"flags must be an int8 array of {n}, one per reference")
    flags[:] = 0
    return flags


def prefix_hits(flags: np.ndarray, starts: np.ndarray) -> int:
    """The hits of ``flags`` (1 per reference that hits) that come before their request's first miss.

    What a prefix cache can serve of a policy's hits: a block after a miss is recomputed with it.  One pass
    over each request's leading hits, compiled, with no array of its own (a long trace's replays hold only
    their ids and state).
    """
    return int(_prefix_loop(np.ascontiguousarray(flags, dtype=np.int8), np.ascontiguousarray(starts, dtype=np.int64)))


def _check(capacity: int, least: int = 1) -> int:
    c = int(capacity)
    if c < least:
        raise ValueError(f"capacity must be at least {least} blocks, got {capacity!r}")
    return c


def _dense(blocks: np.ndarray) -> tuple[np.ndarray, int]:
    """The ids as int32 (kept so, for the memory a long trace's replay takes) or int64, and how many slots a
    per-block array needs (the largest id + 1)."""
    b = np.ascontiguousarray(blocks, dtype=np.int32 if np.asarray(blocks).dtype == np.int32 else np.int64)
    if b.size and int(b.min()) < 0:
        raise ValueError("block ids must be dense, from 0")
    return b, int(b.max()) + 1 if b.size else 0


def min_hits(blocks: np.ndarray, capacity: int, nxt: np.ndarray | None = None, flags: np.ndarray | None = None) -> int:
    """Hits of Belady's MIN at ``capacity`` blocks: the most any policy can hit (references).

    On a miss with the cache full, the block whose next use is farthest among the cached ones and
    the incoming one is left out (a block never used again is farthest).  A heap keyed on next use,
    with stale entries skipped: O(n log n), compiled (:func:`_min_loop`).

    Parameters
    ----------
    blocks : ndarray of int
        Dense block ids in reference order.
    capacity : int
        Cache size (blocks, >= 1).
    nxt : ndarray of int, optional
        :func:`next_reference` of ``blocks``, when the caller has it.
    flags : ndarray of int8, optional
        Set to 1 at each reference that hits (:func:`_flags`).
    """
    c = _check(capacity)
    b, slots = _dense(blocks)
    nxt = next_reference(b) if nxt is None else np.ascontiguousarray(nxt)
    return int(_min_loop(b, nxt, c, slots, _flags(flags, b.size)))


def leaf_lru_hits(blocks: np.ndarray, parent: np.ndarray, capacity: int, flags: np.ndarray | None = None) -> int:
    """Hits of leaf-first LRU at ``capacity`` blocks: evict the least recently used block with no cached child.

    A heap of leaves keyed on last use, stale entries skipped: O(n log n), compiled (:func:`_leaf_lru_loop`).

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
    b, _ = _dense(blocks)
    return int(_leaf_lru_loop(b, np.ascontiguousarray(parent, dtype=np.int64), c, _flags(flags, b.size)))


def s3fifo_hits(blocks: np.ndarray, capacity: int, variant: str = "paper", flags: np.ndarray | None = None) -> int:
    """Hits of S3-FIFO at ``capacity`` blocks (>= 2): small FIFO 10 % (at least 1 block), main FIFO, ghost FIFO.

    As the paper's Algorithm 1 states it (``variant="paper"``), below; ``"libcachesim"`` as
    libCacheSim 0.3.5 runs it (:data:`S3FIFO_VARIANTS`).

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

    O(n) amortized, compiled (:func:`_s3fifo_loop`).
    """
    if variant not in S3FIFO_VARIANTS:
        raise ValueError(f"variant must be one of {S3FIFO_VARIANTS}, got {variant!r}")
    c = _check(capacity, 2)
    b, slots = _dense(blocks)
    if variant == "paper":
        small_cap = max(1, int(c * S3FIFO_SMALL_SHARE))
        return int(_s3fifo_loop(b, c, small_cap, slots, c - small_cap, False, _flags(flags, b.size)))
    small_cap = int(c * S3FIFO_SMALL_SHARE)
    if small_cap <= 1:  # a block of size 1 is as large as the small FIFO: libCacheSim inserts nothing
        return 0
    return int(_s3fifo_loop(b, c, small_cap, slots, int(c * S3FIFO_GHOST_SHARE), True, _flags(flags, b.size)))


def lru_replay_hits(blocks: np.ndarray, capacity: int, flags: np.ndarray | None = None) -> int:
    """Hits of LRU at ``capacity`` blocks replayed reference by reference: a doubly linked list, O(n).

    What :func:`lru_hits` reads off the stack distances, for a trace too long to hold them
    (``tests/formulas/cache/test_policies.py`` holds the two equal), marking ``flags`` as the other
    replays do so that both hit rules come from one pass.
    """
    c = _check(capacity)
    b, slots = _dense(blocks)
    return int(_lru_loop(b, c, slots, _flags(flags, b.size)))


def sieve_hits(blocks: np.ndarray, capacity: int, flags: np.ndarray | None = None) -> int:
    """Hits of SIEVE at ``capacity`` blocks: a FIFO queue, a visited bit a hit sets, a hand that evicts.

    On a miss with the cache full, the hand (at the oldest block the first time) clears each visited
    block's bit and moves towards the newer end, wrapping to the oldest, until it finds a block not
    visited: that block leaves, and the hand stays at the next newer one.  The new block enters at the
    newer end, not visited.  O(n) amortized, compiled (:func:`_sieve_loop`).
    """
    c = _check(capacity)
    b, slots = _dense(blocks)
    return int(_sieve_loop(b, c, slots, _flags(flags, b.size)))


# ---- the replay loops, compiled where numba is (kvtier.formulas.jit) -------------------------------------------
# (kvtier.formulas.jit compiles each loop on its first call, so one loop cannot call another: LRU's and SIEVE's
# queues each put a block at the newest end in their own six lines)
# Per-block state lives in arrays indexed by the dense id; a heap is two arrays (key, block) with entries that
# disagree with the state skipped when they reach the top.  Keys are reference indices, unique per entry that can
# be current, so the order of equal keys never decides an eviction.


@jit
def _min_loop(blocks: np.ndarray, nxt: np.ndarray, capacity: int, slots: int, flags: np.ndarray) -> int:
    n = blocks.size
    cached = np.full(slots, -1, dtype=np.int64)  # a cached block's next use; -1: not cached
    key = np.empty(n + 1, dtype=nxt.dtype)  # max-heap on next use (int32 for a trace under 2**31 references)
    val = np.empty(n + 1, dtype=blocks.dtype)
    size = 0
    held = 0
    hits = 0
    for i in range(n):
        b = blocks[i]
        nx = nxt[i]
        if cached[b] >= 0:
            hits += 1
            flags[i] = 1
        elif held >= capacity:
            evicted = False
            while not evicted:  # pop stale tops, then the farthest cached block unless the incoming one is farther
                if key[0] == cached[val[0]]:
                    if nx >= key[0]:  # the incoming block is used last (or never): do not keep it
                        break
                    cached[val[0]] = -1
                    held -= 1
                    evicted = True
                size -= 1  # pop the top
                k, v, j = key[size], val[size], 0
                while 2 * j + 1 < size:
                    m = 2 * j + 1
                    if m + 1 < size and key[m + 1] > key[m]:
                        m += 1
                    if key[m] <= k:
                        break
                    key[j], val[j] = key[m], val[m]
                    j = m
                key[j], val[j] = k, v
            if not evicted:
                continue
        if nx >= n:  # never used again: nothing to gain by keeping it
            if cached[b] >= 0:
                cached[b] = -1
                held -= 1
            continue
        if cached[b] < 0:
            held += 1
        cached[b] = nx
        j = size  # push (nx, b)
        size += 1
        while j > 0 and key[(j - 1) // 2] < nx:
            key[j], val[j] = key[(j - 1) // 2], val[(j - 1) // 2]
            j = (j - 1) // 2
        key[j], val[j] = nx, b
    return hits


@jit
def _leaf_lru_loop(blocks: np.ndarray, parent: np.ndarray, capacity: int, flags: np.ndarray) -> int:
    n = blocks.size
    slots = parent.size
    last = np.full(slots, -1, dtype=np.int64)  # a cached block's last reference; -1: not cached
    children = np.zeros(slots, dtype=np.int64)  # cached children per block
    key = np.empty(2 * n + 1, dtype=blocks.dtype)  # min-heap of leaves on last use (int32 ids: int32 positions)
    val = np.empty(2 * n + 1, dtype=blocks.dtype)
    size = 0
    held = 0
    hits = 0
    for t in range(n):
        b = blocks[t]
        if last[b] >= 0:
            hits += 1
            flags[t] = 1
        else:
            if held >= capacity:
                x = -1
                while x < 0:
                    used, cand = key[0], val[0]  # pop the top
                    size -= 1
                    k, v, j = key[size], val[size], 0
                    while 2 * j + 1 < size:
                        m = 2 * j + 1
                        if m + 1 < size and key[m + 1] < key[m]:
                            m += 1
                        if key[m] >= k:
                            break
                        key[j], val[j] = key[m], val[m]
                        j = m
                    key[j], val[j] = k, v
                    if last[cand] == used and children[cand] == 0:
                        x = cand
                last[x] = -1
                held -= 1
                p = parent[x]
                if p >= 0:
                    children[p] -= 1
                    if children[p] == 0 and last[p] >= 0:
                        j = size  # push (last[p], p)
                        size += 1
                        while j > 0 and key[(j - 1) // 2] > last[p]:
                            key[j], val[j] = key[(j - 1) // 2], val[(j - 1) // 2]
                            j = (j - 1) // 2
                        key[j], val[j] = last[p], p
            p = parent[b]
            if p >= 0:
                children[p] += 1
            held += 1
        last[b] = t
        if children[b] == 0:
            j = size  # push (t, b)
            size += 1
            while j > 0 and key[(j - 1) // 2] > t:
                key[j], val[j] = key[(j - 1) // 2], val[(j - 1) // 2]
                j = (j - 1) // 2
            key[j], val[j] = t, b
    return hits


@jit
def _s3fifo_loop(
    blocks: np.ndarray,
    capacity: int,
    small_cap: int,
    slots: int,
    ghost_cap: int,
    libcachesim: bool,
    flags: np.ndarray,
) -> int:
    n = blocks.size
    main_cap = capacity - small_cap
    evicted = False  # libcachesim: until the first eviction a miss that finds the small FIFO full enters main
    freq = np.full(slots, -1, dtype=np.int64)  # a cached block's counter; -1: not cached
    ghost_at = np.full(slots, -1, dtype=np.int64)  # where a ghost id's entry is in `ghost`; -1: not a ghost
    small = np.empty(capacity, dtype=np.int64)  # ring buffers, oldest at the head
    main = np.empty(capacity, dtype=np.int64)
    ghost = np.empty(n, dtype=blocks.dtype)  # ids in the order they entered; entries no longer current are skipped
    s_head = s_len = m_head = m_len = g_head = g_end = g_len = 0
    hits = 0
    for i in range(n):
        b = blocks[i]
        if freq[b] >= 0:
            hits += 1
            flags[i] = 1
            if freq[b] < S3FIFO_FREQ_MAX:
                freq[b] += 1
            continue
        ghost_hit = False
        if libcachesim and ghost_at[b] >= 0:  # looked up before the eviction, which cannot drop it then
            ghost_at[b] = -1
            g_len -= 1
            ghost_hit = True
        while s_len + m_len >= capacity:
            evicted = True
            if m_len > main_cap or s_len == 0:  # evict from the main FIFO
                while m_len > 0:
                    x = main[m_head]
                    m_head = (m_head + 1) % capacity
                    m_len -= 1
                    if freq[x] > 0:  # reinsert, one count less
                        main[(m_head + m_len) % capacity] = x
                        m_len += 1
                        freq[x] -= 1
                    else:
                        freq[x] = -1
                        break
            else:  # evict from the small FIFO
                while s_len > 0:
                    x = small[s_head]
                    s_head = (s_head + 1) % capacity
                    s_len -= 1
                    if freq[x] >= S3FIFO_MOVE_AT:  # to the main FIFO
                        main[(m_head + m_len) % capacity] = x
                        m_len += 1
                        freq[x] = 0
                    else:  # out, its id to the ghost FIFO
                        freq[x] = -1
                        ghost[g_end] = x
                        ghost_at[x] = g_end
                        g_end += 1
                        g_len += 1
                        if g_len > ghost_cap:  # drop the oldest current id
                            while ghost_at[ghost[g_head]] != g_head:
                                g_head += 1
                            ghost_at[ghost[g_head]] = -1
                            g_head += 1
                            g_len -= 1
                        break
        if not libcachesim and ghost_at[b] >= 0:
            ghost_at[b] = -1
            g_len -= 1
            ghost_hit = True
        if ghost_hit or (libcachesim and not evicted and s_len >= small_cap):
            main[(m_head + m_len) % capacity] = b
            m_len += 1
        else:
            small[(s_head + s_len) % capacity] = b
            s_len += 1
        freq[b] = 0
    return hits


@jit
def _prefix_loop(flags: np.ndarray, starts: np.ndarray) -> int:
    total = 0
    for r in range(starts.size - 1):
        for i in range(starts[r], starts[r + 1]):
            if not flags[i]:
                break
            total += 1
    return total


@jit
def _next_loop(blocks: np.ndarray, slots: int, out: np.ndarray) -> None:
    n = blocks.size
    last = np.full(slots, n, dtype=out.dtype)  # the next reference to each block after the one at hand
    for i in range(n - 1, -1, -1):
        b = blocks[i]
        out[i] = last[b]
        last[b] = i


@jit
def _lru_loop(blocks: np.ndarray, capacity: int, slots: int, flags: np.ndarray) -> int:
    cached = np.zeros(slots, dtype=np.int8)
    newer = np.full(slots, -1, dtype=blocks.dtype)  # the neighbour towards the most recent end; -1: none
    older = np.full(slots, -1, dtype=blocks.dtype)  # the neighbour towards the least recent end; -1: none
    head = tail = -1  # most and least recently used
    size = hits = 0
    for i in range(blocks.size):
        b = blocks[i]
        if cached[b]:
            hits += 1
            flags[i] = 1
            if b == head:
                continue
            if older[b] != -1:  # unlink b, to move it to the head
                newer[older[b]] = newer[b]
            else:
                tail = newer[b]
            older[newer[b]] = older[b]  # b is not the head, so it has a newer neighbour
        else:
            if size >= capacity:  # evict the least recently used
                x = tail
                tail = newer[x]
                if tail != -1:
                    older[tail] = -1
                else:
                    head = -1
                cached[x] = 0
                size -= 1
            cached[b] = 1
            size += 1
        older[b] = head
        newer[b] = -1
        if head != -1:
            newer[head] = b
        head = b
        if tail == -1:
            tail = b
    return hits


@jit
def _sieve_loop(blocks: np.ndarray, capacity: int, slots: int, flags: np.ndarray) -> int:
    cached = np.zeros(slots, dtype=np.int8)
    visited = np.zeros(slots, dtype=np.int8)
    newer = np.full(slots, -1, dtype=blocks.dtype)  # the neighbour towards the newest end; -1: none
    older = np.full(slots, -1, dtype=blocks.dtype)  # the neighbour towards the oldest end; -1: none
    head = tail = hand = -1  # newest, oldest, and where the hand is (-1: at the oldest)
    size = hits = 0
    for i in range(blocks.size):
        b = blocks[i]
        if cached[b]:
            hits += 1
            flags[i] = 1
            visited[b] = 1
            continue
        if size >= capacity:
            x = tail if hand == -1 else hand
            while visited[x]:
                visited[x] = 0
                x = newer[x]
                if x == -1:
                    x = tail
            hand = newer[x]
            if newer[x] != -1:  # unlink x
                older[newer[x]] = older[x]
            else:
                head = older[x]
            if older[x] != -1:
                newer[older[x]] = newer[x]
            else:
                tail = newer[x]
            cached[x] = 0
            size -= 1
        cached[b] = 1
        visited[b] = 0
        older[b] = head
        newer[b] = -1
        if head != -1:
            newer[head] = b
        head = b
        if tail == -1:
            tail = b
        size += 1
    return hits


def hit_counts(
    blocks: np.ndarray,
    starts: np.ndarray,
    distance: np.ndarray,
    capacities: Sequence[int],
    policies: Sequence[str] = POLICIES,
    count: str = "per-block",
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
    count : str
        ``per-block``: every reference whose block is cached; ``prefix``: only those before their
        request's first miss (:func:`prefix_hits`), what a prefix cache serves.
    """
    if count not in HIT_COUNTS:
        raise ValueError(f"count must be one of {HIT_COUNTS}, got {count!r}")
    return hit_counts_by_rule(blocks, starts, distance, capacities, policies)[count]


def hit_counts_by_rule(
    blocks: np.ndarray,
    starts: np.ndarray,
    distance: np.ndarray | None,
    capacities: Sequence[int],
    policies: Sequence[str] = POLICIES,
) -> dict[str, dict[str, np.ndarray]]:
    """:func:`hit_counts` under both hit rules of :data:`HIT_COUNTS` from one replay per policy and capacity.

    ``distance`` None: LRU too is replayed (:func:`lru_replay_hits`), for a trace held as int32 ids alone.
    """
    unknown = set(policies) - set(POLICIES)
    if unknown:
        raise ValueError(f"unknown policies {sorted(unknown)}; known: {POLICIES}")
    caps = [int(c) for c in capacities]
    flags = np.zeros(len(blocks), dtype=np.int8)
    out: dict[str, dict[str, np.ndarray]] = {count: {} for count in HIT_COUNTS}

    def both(replay: Callable[[int], int]) -> None:
        per, pre = [], []
        for c in caps:
            per.append(replay(c))
            pre.append(prefix_hits(flags, starts))
        out["per-block"][name] = np.array(per, dtype=np.int64)
        out["prefix"][name] = np.array(pre, dtype=np.int64)

    for name in policies:
        if name == "lru" and distance is None:  # a trace too long for its stack distances: replayed
            both(lambda c: lru_replay_hits(blocks, c, flags))
        elif name == "lru":
            for count in HIT_COUNTS:
                d = distance if count == "per-block" else hit_distances(distance, starts, count)
                out[count][name] = lru_hits(d, caps)
        elif name == "leaf_lru":
            par = parents(blocks, starts)
            both(lambda c, par=par: leaf_lru_hits(blocks, par, c, flags))
        elif name == "s3fifo":
            both(lambda c: s3fifo_hits(blocks, c, flags=flags))
        elif name == "sieve":
            both(lambda c: sieve_hits(blocks, c, flags))
        else:
            nxt = next_reference(blocks)
            both(lambda c, nxt=nxt: min_hits(blocks, c, nxt, flags))
    return out
