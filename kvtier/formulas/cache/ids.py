"""Block ids: per-block ids chained into prefix ids, and ids ranked dense, in memory or chunk by chunk.

- :func:`chain_ids`, per-block ids chained into prefix ids, as a serving engine keys its prefix cache;
- :func:`dense_ids`, ids ranked ``0 .. n_unique - 1``, and :class:`DenseIds`, the same for a stream
  fed in chunks, in order of first appearance;
- :func:`mix64`, the 64-bit mixer both chaining and sampling hash with.
"""

from __future__ import annotations

import numpy as np

# ---- chaining per-block ids into prefix ids ---------------------------------------------------------------

_MIX = (np.uint64(0x9E3779B97F4A7C15), np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB))


def mix64(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finalizer on each 64-bit word: a bijection that scatters every input bit over the output."""
    x = x + _MIX[0]
    x = (x ^ (x >> np.uint64(30))) * _MIX[1]
    x = (x ^ (x >> np.uint64(27))) * _MIX[2]
    return x ^ (x >> np.uint64(31))


def chain_ids(ids: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Per-block ids chained into prefix ids, as a serving engine's prefix cache keys its blocks.

    Within each request ``r`` (``ids[starts[r]:starts[r + 1]]``), block ``j``'s chained id
    is a 64-bit hash of (block ``j - 1``'s chained id, block ``j``'s own id):
    ``c[j] = mix(c[j - 1] XOR mix(id[j]))`` with ``c[-1] = 0`` and ``mix`` SplitMix64's
    finalizer.  Equal chained ids then mean an equal prefix, up to a 64-bit collision (for
    ``n`` distinct prefixes a chance of about ``n**2 / 2**65``: 3e-4 for 10**8).  Vectorized
    over the requests: one numpy step per block position.

    Parameters
    ----------
    ids : ndarray of int64
        Every block's own id, requests one after another.
    starts : ndarray of int
        Where each request's ids begin, and the total at the end (``len = requests + 1``).

    Returns
    -------
    ndarray of int64
        The chained ids, same shape (the 64-bit hashes' bit patterns).
    """
    own = mix64(np.ascontiguousarray(ids, dtype=np.int64).view(np.uint64))
    out = np.empty_like(own)
    counts = np.diff(np.asarray(starts, dtype=np.int64))
    order = np.argsort(-counts, kind="stable")  # longest first: the requests still going are a prefix of it
    first, longest = np.asarray(starts, dtype=np.int64)[order], counts[order]
    previous = np.zeros(int((longest > 0).sum()), dtype=np.uint64)
    ascending = -longest
    for j in range(int(longest[0]) if longest.size else 0):
        going = int(np.searchsorted(ascending, -j, side="left"))  # requests with more than j blocks
        at = first[:going] + j
        previous = mix64(previous[:going] ^ own[at])
        out[at] = previous
    return out.view(np.int64)


def dense_ids(raw: np.ndarray) -> np.ndarray:
    """Each id's rank among the distinct ids, ``0 .. n_unique - 1`` (``np.unique``'s inverse, in less memory).

    Holds the ids, their sorting permutation and one sorted copy (24 B an id at the peak),
    where ``np.unique(..., return_inverse=True)`` holds about 40.
    """
    order = np.argsort(raw, kind="stable")
    ranked = raw[order]
    if ranked.size:
        new = ranked[1:] != ranked[:-1]
        ranked[0] = 0
        np.cumsum(new, out=ranked[1:])  # the sorted copy becomes the ranks
        del new
    dense = np.empty_like(ranked)
    dense[order] = ranked
    return dense


class DenseIds:
    """Maps hash ids to dense ids ``0, 1, 2, ...`` in order of first appearance, chunk by chunk.

    Holds the distinct hashes seen so far as two sorted int64 arrays (16 B a distinct block).
    """

    def __init__(self) -> None:
        self.keys = np.empty(0, dtype=np.int64)
        self.values = np.empty(0, dtype=np.int64)

    def __len__(self) -> int:
        return int(self.keys.size)

    def map(self, raw: np.ndarray) -> np.ndarray:
        """The dense ids of ``raw`` (int64 hashes), assigning new ids to hashes never seen."""
        uniq, first, inverse = np.unique(raw, return_index=True, return_inverse=True)
        pos = np.searchsorted(self.keys, uniq)
        known = pos < self.keys.size
        known[known] = self.keys[pos[known]] == uniq[known]
        ids = np.empty(uniq.size, dtype=np.int64)
        ids[known] = self.values[pos[known]]
        new = np.flatnonzero(~known)
        # new hashes take the next ids in the order the chunk first names them
        ids[new[np.argsort(first[new], kind="stable")]] = len(self) + np.arange(new.size)
        if new.size:
            # the new hashes, sorted as np.unique gives them, merged in: O(distinct) a chunk, not a sort of them all
            at = np.searchsorted(self.keys, uniq[new])
            self.keys, self.values = np.insert(self.keys, at, uniq[new]), np.insert(self.values, at, ids[new])
        return ids[inverse.reshape(-1)]

    def keep(self, kept: np.ndarray) -> None:
        """Forget every id whose ``kept[dense id]`` is False; the others take dense ids ``0 ..`` in their order."""
        renumber = np.cumsum(kept) - 1
        stay = kept[self.values]
        self.keys, self.values = self.keys[stay], renumber[self.values[stay]]
