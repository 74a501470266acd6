"""Exact LRU stack distances, by one algorithm: a sweep over Fenwick trees, in memory or chunk by chunk.

A reference hits an LRU cache of ``C`` blocks exactly when its stack distance is below ``C``, so one
pass gives the hit ratio at every capacity.  :func:`stack_distances` for a trace in memory,
:class:`StackDistanceStream` for one fed in chunks (memory proportional to its distinct blocks); both
run the same kernels (:func:`_sweep_py`, :func:`_last_uses_py`), compiled where numba is
(:mod:`kvtier.formulas.jit`) and plain Python where it is not.  :func:`hit_distances` turns stack
distances into the distances that decide a hit under either hit count.
"""

from __future__ import annotations

import numpy as np

from kvtier.formulas.cache.trace import DEFAULT_HIT_COUNT, HIT_COUNTS
from kvtier.formulas.jit import jit

# ---------------------------------------------------------------------------
# stack distances
# ---------------------------------------------------------------------------


def hit_distances(distance: np.ndarray, starts: np.ndarray, count: str = DEFAULT_HIT_COUNT) -> np.ndarray:
    """Per reference, the stack distance that decides whether it is counted a hit (blocks; -1: never).

    A reference counts as a hit of an LRU cache of ``C`` blocks when its hit distance is in
    ``[0, C)``.  ``per-block``: its own stack distance.  ``prefix``: the largest stack distance
    of its request's blocks up to and including it, -1 once one of them is a first reference,
    so that at every capacity a request's hits stop at its first miss.  The two agree wherever
    no stack distance falls along a prompt (:attr:`Reuse.requests_with_a_distance_that_falls`).

    Parameters
    ----------
    distance : ndarray of int
        Stack distance per reference (blocks, -1 for a first reference), requests one after another.
    starts : ndarray of int
        Where each request's references begin, and the total at the end.
    count : str
        One of :data:`HIT_COUNTS`.
    """
    if count not in HIT_COUNTS:
        raise ValueError(f"count must be one of {HIT_COUNTS}, got {count!r}")
    distance = np.asarray(distance, dtype=np.int64)
    if count == "per-block" or not distance.size:
        return distance
    never = int(distance.max()) + 1  # above every distance: a first reference misses at every capacity
    span = never + 1
    request = np.repeat(np.arange(len(starts) - 1, dtype=np.int64), np.diff(starts))
    key = np.where(distance < 0, never, distance) + request * span  # keys grow from one request to the next
    running = np.maximum.accumulate(key) - request * span
    return np.where(running == never, -1, running)


def previous_reference(blocks: np.ndarray) -> np.ndarray:
    """For each reference, the index of the previous reference to the same block (-1 for the first).

    Parameters
    ----------
    blocks : ndarray of int
        Block ids in reference order.
    """
    blocks = np.asarray(blocks)
    order = np.argsort(blocks, kind="stable")
    ranked = blocks[order]  # one sorted copy, not two
    same = ranked[1:] == ranked[:-1]
    del ranked
    prev = np.full(blocks.size, -1, dtype=np.int64)
    prev[order[1:][same]] = order[:-1][same]
    return prev


# ---- the Fenwick-tree kernel (compiled where numba is: kvtier.formulas.jit) ----------------------------------------


@jit
def _sweep_py(local: np.ndarray, cross: np.ndarray, rank: np.ndarray, above: np.ndarray, out: np.ndarray) -> None:
    """Stack distances of one chunk by a sweep over two Fenwick trees (binary indexed trees); fills ``out``.

    ``local[t]``: the previous reference to ``t``'s block inside the chunk (-1: none).  ``cross``: the
    first touches of blocks seen before the chunk, ascending; ``rank``: the rank of each one's
    previous use among theirs; ``above``: how many blocks were last used before the chunk after it.
    Marks sit at the chunk positions that are the last use so far of their block, so a repeat's
    distance is the marks after its previous use; a cross reference's is ``above``, less the blocks
    last used after its previous use that the chunk touched before it, plus every block it touched
    before it.  O(k log k) for a chunk of k references.
    """
    k, m = local.size, cross.size
    marks = np.zeros(k + 1, dtype=np.int64)
    ranks = np.zeros(m + 1, dtype=np.int64)
    marked = inserted = c = 0
    for t in range(k):
        p = local[t]
        if p >= 0:
            s, i = 0, p + 1
            while i > 0:  # marks at positions 0 .. p
                s += marks[i]
                i -= i & -i
            out[t] = marked - s
            i = p + 1
            while i <= k:  # p is no longer its block's last use
                marks[i] -= 1
                i += i & -i
        else:
            if c < m and cross[c] == t:
                r = rank[c]
                s, i = 0, r
                while i > 0:  # earlier cross references whose previous use came before this one's
                    s += ranks[i]
                    i -= i & -i
                out[t] = above[c] - (inserted - s) + marked
                i = r + 1
                while i <= m:
                    ranks[i] += 1
                    i += i & -i
                inserted += 1
                c += 1
            marked += 1
        i = t + 1
        while i <= k:  # t is now its block's last use
            marks[i] += 1
            i += i & -i


@jit
def _last_uses_py(blocks: np.ndarray, last: np.ndarray, offset: int, local: np.ndarray, before: np.ndarray) -> None:
    """Each reference's previous one inside the chunk (``local``, -1: none) and, for a first touch, its block's
    last use before the chunk (``before``, -1: never; -1 too for a repeat), updating ``last`` to the chunk's."""
    for t in range(blocks.size):
        b = blocks[t]
        g = last[b]
        if g >= offset:
            local[t] = g - offset
            before[t] = -1
        else:
            local[t] = -1
            before[t] = g
        last[b] = offset + t


def _sweep(local: np.ndarray, cross: np.ndarray, rank: np.ndarray, above: np.ndarray) -> np.ndarray:
    """:func:`_sweep_py` into a new array (-1 for a first reference)."""
    out = np.full(local.size, -1, dtype=np.int64)
    _sweep_py(
        np.ascontiguousarray(local, dtype=np.int64),
        np.ascontiguousarray(cross, dtype=np.int64),
        np.ascontiguousarray(rank, dtype=np.int64),
        np.ascontiguousarray(above, dtype=np.int64),
        out,
    )
    return out


def stack_distances(blocks: np.ndarray, prev: np.ndarray | None = None) -> np.ndarray:
    """The LRU stack distance of every reference: distinct other blocks referenced since its block's last use.

    A reference hits an LRU cache holding ``C`` blocks exactly when its stack distance is
    below ``C``; a first reference (a cold miss) has distance -1 and hits no finite or
    infinite cache.  Exact, by the identity ``distance(t) = #{i in (p, t) : prev(i) <= p}``
    (``p`` the previous reference to the block, ``prev(i)`` that of reference ``i``): the
    references in between that are the first of their block since ``p`` each name one
    distinct block.

    Parameters
    ----------
    blocks : ndarray of int
        Block ids in reference order.
    prev : ndarray of int, optional
        :func:`previous_reference` of ``blocks``, if already computed.

    Returns
    -------
    ndarray of int64
        Stack distance per reference (blocks), -1 for a first reference.
    """
    blocks = np.asarray(blocks)
    prev = previous_reference(blocks) if prev is None else prev
    none = np.zeros(0, dtype=np.int64)
    return _sweep(prev, none, none, none)


class StackDistanceStream:
    """Exact LRU stack distances of a reference stream fed in chunks, in memory proportional to its distinct blocks.

    The state is each block's last reference (8 B a distinct block).  For a reference ``t``
    whose block was last used at ``p``:

    - ``p`` inside the current chunk: the references between are all in the chunk, and
      :func:`stack_distances`'s identity applies to it;
    - ``p`` before the chunk: the distinct blocks used since ``p`` are the blocks whose last use
      before the chunk is after ``p`` and that the chunk has not touched before ``t``, plus
      the distinct blocks the chunk has touched before ``t``.
    """

    def __init__(self) -> None:
        self.last = np.full(1024, -1, dtype=np.int64)
        self.seen = np.empty(0, dtype=np.int64)  # the last uses of the blocks seen, sorted
        self.offset = 0

    def keep(self, kept: np.ndarray) -> None:
        """Forget every block whose ``kept`` is False; the others take dense ids ``0 ..`` in their order."""
        n = kept.size
        last = self.last[:n][kept]
        self.last = np.full(max(1024, last.size), -1, dtype=np.int64)
        self.last[: last.size] = last
        self.seen = np.sort(last[last >= 0])

    def feed(self, blocks: np.ndarray, local: np.ndarray | None = None) -> np.ndarray:
        """Stack distances of the next chunk of dense block ids (-1 for a first reference).

        ``local`` is :func:`previous_reference` of ``blocks``, if already computed (the compiled
        kernel finds it itself, in one pass over the state).
        """
        return self.feed_local(blocks, local)[0]

    def _grow(self, top: int) -> None:
        if top >= self.last.size:
            grown = np.full(max(2 * self.last.size, top + 1), -1, dtype=np.int64)
            grown[: self.last.size] = self.last
            self.last = grown

    def feed_local(self, blocks: np.ndarray, local: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`feed`, and :func:`previous_reference` of ``blocks`` with it: ``(distances, local)``.

        A Fenwick-tree sweep in O(k log k) for a chunk of k references (:func:`_sweep_py`), each
        block's previous use found in the same pass over the state (:func:`_last_uses_py`).
        """
        blocks = np.asarray(blocks, dtype=np.int64)
        k, a = blocks.size, self.offset
        if not k:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
        self._grow(int(blocks.max()))
        local = np.empty(k, dtype=np.int64)
        before = np.empty(k, dtype=np.int64)
        _last_uses_py(blocks, self.last, a, local, before)  # self.last becomes the chunk's last uses
        cross = np.flatnonzero(before >= 0)
        seen = self.seen
        at = np.searchsorted(seen, before[cross])  # each cross reference's previous use, in the sorted last uses
        rank = np.empty(cross.size, dtype=np.int64)
        rank[np.argsort(at, kind="stable")] = np.arange(cross.size)
        out = _sweep(local, cross, rank, seen.size - 1 - at)
        self._update_seen(at, local, a)
        self.offset += k
        return out, local

    def _update_seen(self, gone_at: np.ndarray, local: np.ndarray, a: int) -> None:
        """The sorted last uses: those of the blocks the chunk touched leave, the chunk's own (all later) come after."""
        is_last = np.ones(local.size, dtype=bool)
        is_last[local[local >= 0]] = False
        if gone_at.size:
            keep = np.ones(self.seen.size, dtype=bool)
            keep[gone_at] = False
            self.seen = self.seen[keep]
        self.seen = np.concatenate((self.seen, a + np.flatnonzero(is_last)))
