"""One LRU tier with an admission filter and a time to live, replayed in one compiled pass, chunk by chunk.

:class:`AdmissionState` keeps the tier's recency list and each block's last use, references so far and
whether it is held in arrays indexed by its dense id (21 B a distinct block), and for ``tinylfu`` a count-min
sketch of four rows of about four counters a cached block; the trace is fed chunk by chunk
(:meth:`AdmissionState.feed`) and only each request's hits come back.  The rules are
:func:`kvtier.formulas.cache.admission.replay_admission`'s; :mod:`kvtier.formulas.cache.admission_oracle`
replays the same with an ``OrderedDict`` in Python, and tests/formulas/cache/test_admission_loop.py holds the
two equal.  Blocks are numbered in the order they are first referenced, so the sketch's columns, which hash
the number, are the same whether a trace is fed at once or in chunks.
"""

from __future__ import annotations

import math

import numpy as np

from kvtier.formulas.jit import jit

ADMISSION_NEEDS: dict[str, int] = {"always": 1, "second": 2, "third": 3, "tinylfu": 1}
"""The reference on which a missed block may be written, per admission filter."""

SKETCH_MULTIPLIERS = np.array([0x9E3779B1, 0x85EBCA77, 0xC2B2AE3D, 0x27D4EB2F], dtype=np.int64)
"""Odd multipliers under 2**32 of the sketch's four rows: a column is ``((block + 1) x m >> 17) & mask``, under
2**63 for blocks below 2**31, so numba and Python agree without overflow."""


MAX_SKETCH_BITS = 22
"""The sketch's rows hold at most 2**22 counters (4 rows of 8 B each: 128 MiB): a tier of more than about a million
blocks shares counters rather than allocating with its capacity (a capacity of 1e9 blocks asked for 128 GiB)."""


def sketch_width(capacity_blocks: float) -> int:
    """Counters in each row of the sketch: the power of two at or above 4 x the capacity, at least 16 and at most
    ``2**MAX_SKETCH_BITS``."""
    bits = int(math.ceil(math.log2(max(min(capacity_blocks, 2.0**MAX_SKETCH_BITS), 1.0) * 4)))
    return 1 << min(max(4, bits), MAX_SKETCH_BITS)


def sketch_columns(block: int, width: int) -> list[int]:
    """The sketch's column of ``block`` in each row (the compiled loop's arithmetic, for the oracle)."""
    return [(((block + 1) * int(m)) >> 17) & (width - 1) for m in SKETCH_MULTIPLIERS]


class AdmissionState:
    """An LRU tier of ``capacity_blocks`` that writes what ``admission`` admits and drops what idles past ``ttl_s``.

    Parameters
    ----------
    capacity_blocks : float
        The tier (whole blocks, 0 or more; ``math.inf`` for unbounded, where no filter ever has to choose
        against a victim and the sketch is not kept).
    admission : str
        One of :data:`ADMISSION_NEEDS`.
    ttl_s : float
        Time to live of an idle block (s, above 0; ``math.inf`` for none).
    """

    def __init__(self, capacity_blocks: float, admission: str = "always", ttl_s: float = math.inf) -> None:
        self.capacity = -1 if math.isinf(capacity_blocks) else int(capacity_blocks)
        self.need = ADMISSION_NEEDS[admission]
        self.ttl_s = float(ttl_s)
        tiny = admission == "tinylfu" and self.capacity >= 0
        width = sketch_width(capacity_blocks) if tiny else 1
        self.rows = np.zeros((4 if tiny else 0, width), dtype=np.int64)
        self.sample = max(int(10 * capacity_blocks), 10) if tiny else 0
        self.st = np.array([-1, -1, 0, 0, 0, 0], dtype=np.int64)  # head, tail, held, writes, expired, sketch adds
        self.prev = np.empty(0, dtype=np.int32)
        self.next = np.empty(0, dtype=np.int32)
        self.at = np.empty(0, dtype=np.float64)
        self.held = np.empty(0, dtype=np.uint8)
        self.seen = np.empty(0, dtype=np.int32)

    @property
    def writes(self) -> int:
        """Blocks written to the tier so far."""
        return int(self.st[3])

    @property
    def expired(self) -> int:
        """Blocks found gone by their time to live so far."""
        return int(self.st[4])

    def feed(self, blocks: np.ndarray, starts: np.ndarray, timestamps_s: np.ndarray) -> np.ndarray:
        """Serve the next requests; return each one's hit blocks (up to its first miss).

        ``blocks`` are dense block ids (int32, numbered in order of first reference across every chunk fed),
        ``starts[r]:starts[r + 1]`` request ``r``'s, ``timestamps_s`` each request's arrival (s).
        """
        blocks = np.ascontiguousarray(blocks, dtype=np.int32)
        distinct = int(blocks.max()) + 1 if blocks.size else 0
        if distinct > self.held.size:
            grow = max(distinct, 2 * self.held.size) - self.held.size
            self.prev = np.concatenate([self.prev, np.full(grow, -1, dtype=np.int32)])
            self.next = np.concatenate([self.next, np.full(grow, -1, dtype=np.int32)])
            self.at = np.concatenate([self.at, np.zeros(grow)])
            self.held = np.concatenate([self.held, np.zeros(grow, dtype=np.uint8)])
            self.seen = np.concatenate([self.seen, np.zeros(grow, dtype=np.int32)])
        starts = np.ascontiguousarray(starts, dtype=np.int64)
        hits = np.empty(starts.size - 1, dtype=np.int64)
        _admission_loop(
            blocks,
            starts,
            np.ascontiguousarray(timestamps_s, dtype=np.float64),
            hits,
            self.prev,
            self.next,
            self.at,
            self.held,
            self.seen,
            self.rows,
            SKETCH_MULTIPLIERS,
            self.st,
            self.capacity,
            self.need,
            self.ttl_s,
            self.sample,
        )
        return hits


# Compiled where numba is (kvtier.formulas.jit: the loop cannot call another, so unlinking a block from the recency
# list is written out where it is needed).  head is the most recently used block, tail the least.
@jit
def _admission_loop(
    blocks: np.ndarray,
    starts: np.ndarray,
    stamps: np.ndarray,
    hits: np.ndarray,
    prev: np.ndarray,
    nxt: np.ndarray,
    at: np.ndarray,
    held: np.ndarray,
    seen: np.ndarray,
    rows: np.ndarray,
    mult: np.ndarray,
    st: np.ndarray,
    capacity: int,
    need: int,
    ttl: float,
    sample: int,
) -> None:
    mask = rows.shape[1] - 1
    tiny = rows.shape[0] > 0
    for r in range(starts.size - 1):
        lo = starts[r]
        hi = starts[r + 1]
        now = stamps[r]
        for j in range(lo, hi):  # what this prompt would find idle too long is gone
            b = int(blocks[j])
            if held[b] and now - at[b] > ttl:
                p = prev[b]
                q = nxt[b]
                if p >= 0:
                    nxt[p] = q
                else:
                    st[0] = q
                if q >= 0:
                    prev[q] = p
                else:
                    st[1] = p
                held[b] = 0
                st[2] -= 1
                st[4] += 1
        n = 0
        for j in range(lo, hi):
            if not held[blocks[j]]:
                break
            n += 1
        hits[r] = n
        for j in range(lo, hi):
            b = int(blocks[j])
            seen[b] += 1
            if tiny:
                for k in range(rows.shape[0]):
                    rows[k, (((b + 1) * mult[k]) >> 17) & mask] += 1
                st[5] += 1
                if st[5] >= sample:  # TinyLFU's reset: every count halved
                    for k in range(rows.shape[0]):
                        for c in range(rows.shape[1]):
                            rows[k, c] //= 2
                    st[5] //= 2
            if held[b]:
                if st[0] != b:  # to the most recent end
                    p = prev[b]
                    q = nxt[b]
                    nxt[p] = q
                    if q >= 0:
                        prev[q] = p
                    else:
                        st[1] = p
                    prev[b] = -1
                    nxt[b] = st[0]
                    prev[st[0]] = b
                    st[0] = b
                at[b] = now
                continue
            if capacity == 0 or seen[b] < need:
                continue
            if capacity > 0 and st[2] >= capacity:
                v = int(st[1])
                if tiny:  # admitted only if referenced more often than the block it would evict
                    mine = rows[0, (((b + 1) * mult[0]) >> 17) & mask]
                    theirs = rows[0, (((v + 1) * mult[0]) >> 17) & mask]
                    for k in range(1, rows.shape[0]):
                        mine = min(mine, rows[k, (((b + 1) * mult[k]) >> 17) & mask])
                        theirs = min(theirs, rows[k, (((v + 1) * mult[k]) >> 17) & mask])
                    if mine <= theirs:
                        continue
                p = prev[v]
                st[1] = p
                if p >= 0:
                    nxt[p] = -1
                else:
                    st[0] = -1
                held[v] = 0
                st[2] -= 1
            prev[b] = -1
            nxt[b] = st[0]
            if st[0] >= 0:
                prev[st[0]] = b
            else:
                st[1] = b
            st[0] = b
            held[b] = 1
            at[b] = now
            st[2] += 1
            st[3] += 1
