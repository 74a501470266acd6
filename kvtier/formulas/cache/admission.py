"""What a tier admits and how long it keeps it: admission filters and a time to live on an LRU tier.

:func:`replay_admission` replays one LRU tier request by request (each prompt looked up head first, its
hits counted up to its first miss, as :mod:`kvtier.formulas.cache.fleet` replays an instance's tier) with
an admission filter (:data:`ADMISSIONS`) and a time to live: a block idle for longer than the TTL is gone
when next asked for.  What it writes is every block it admits, so the filters trade hit ratio for
writes to the tier's drives (:func:`drive_writes_per_day`).
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from kvtier.formulas.cache.trace import Trace

ADMISSIONS: tuple[str, ...] = ("always", "second", "third", "tinylfu")
"""Which missed blocks the tier writes.

``always``: every one (plain LRU).  ``second`` and ``third``: a block on its second or third reference in
the trace, counting the references it missed (Dynamo's disk filter admits on the second, "to extend SSD
lifespan").  ``tinylfu``: when the tier is full, only a block referenced more often than the block it would
evict, by a count-min sketch of the recent references (Einziger, Friedman and Manes, "TinyLFU", ACM TOS
2017: four rows of counters, all halved every ``10 x capacity`` references)."""

_SKETCH_ROWS = 4
_SKETCH_SEEDS = (0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93)


class _Sketch:
    """A count-min sketch of block references with TinyLFU's reset: every count halved each ``sample`` adds."""

    def __init__(self, capacity: float) -> None:
        width = 1 << max(4, int(math.ceil(math.log2(max(capacity, 1.0) * 4))))
        self.mask = width - 1
        self.rows = np.zeros((_SKETCH_ROWS, width), dtype=np.int64)
        self.sample = max(int(10 * capacity), 10)
        self.added = 0

    def _cols(self, block: int) -> list[int]:
        return [((block + 1) * seed >> 17) & self.mask for seed in _SKETCH_SEEDS]

    def add(self, block: int) -> None:
        for r, c in enumerate(self._cols(block)):
            self.rows[r, c] += 1
        self.added += 1
        if self.added >= self.sample:
            self.rows //= 2
            self.added //= 2

    def estimate(self, block: int) -> int:
        return int(min(self.rows[r, c] for r, c in enumerate(self._cols(block))))


@dataclass(frozen=True)
class AdmissionReplay:
    """One replay of an LRU tier with an admission filter and a time to live.

    Attributes
    ----------
    admission : str
        One of :data:`ADMISSIONS`.
    ttl_s : float
        Time to live of an idle block (s; ``inf``: none).
    capacity_blocks : float
        The tier (whole blocks).
    hit_blocks : ndarray of int
        Per request, its blocks the tier held, up to the first miss.
    writes : int
        Blocks written to the tier (admitted).
    expired : int
        Blocks found gone by their time to live when next asked for.
    """

    admission: str
    ttl_s: float
    capacity_blocks: float
    hit_blocks: np.ndarray
    writes: int
    expired: int


def replay_admission(
    trace: Trace, capacity_blocks: float, admission: str = "always", ttl_s: float = math.inf
) -> AdmissionReplay:
    """Replay an LRU tier of ``capacity_blocks`` over ``trace`` with an admission filter and a time to live.

    Each request, in arrival order: its blocks idle for more than ``ttl_s`` since their last use are
    dropped; its hits are its leading blocks held now (up to the first miss); then its blocks are touched
    head first: a held block becomes the most recent, a missed one is written only if ``admission`` admits
    it, evicting the least recently used block when the tier is full.

    Raises
    ------
    ValueError
        For an unknown admission, a capacity that is not a whole number of blocks, or a TTL not above 0.
    """
    if admission not in ADMISSIONS:
        raise ValueError(f"admission must be one of {ADMISSIONS}, got {admission!r}")
    if not (capacity_blocks >= 0 and (math.isinf(capacity_blocks) or float(capacity_blocks).is_integer())):
        raise ValueError(f"capacity_blocks must be a whole number of blocks, 0 or more, got {capacity_blocks}")
    if not ttl_s > 0:
        raise ValueError(f"ttl_s must be above 0, got {ttl_s}")
    held: OrderedDict[int, float] = OrderedDict()  # block -> last use (s), least recent first
    seen = [0] * trace.n_unique  # references so far, for the k-th reference filters
    need = {"always": 1, "second": 2, "third": 3}.get(admission, 1)
    sketch = (
        _Sketch(capacity_blocks if math.isfinite(capacity_blocks) else trace.n_unique)
        if admission == "tinylfu"
        else None
    )
    hits = np.zeros(trace.n_requests, dtype=np.int64)
    writes = expired = 0
    starts, blocks, stamps = trace.starts, trace.blocks, trace.timestamps_s
    for r in range(trace.n_requests):
        now = float(stamps[r])
        ids = blocks[starts[r] : starts[r + 1]]
        for b in ids:  # expire what this prompt would find idle too long
            at = held.get(int(b))
            if at is not None and now - at > ttl_s:
                del held[int(b)]
                expired += 1
        n = 0
        for b in ids:
            if int(b) not in held:
                break
            n += 1
        hits[r] = n
        for b in ids:
            b = int(b)
            seen[b] += 1
            if sketch is not None:
                sketch.add(b)
            if b in held:
                held.move_to_end(b)
                held[b] = now
                continue
            if capacity_blocks < 1 or seen[b] < need:
                continue
            if len(held) >= capacity_blocks:
                victim = next(iter(held))
                if sketch is not None and sketch.estimate(b) <= sketch.estimate(victim):
                    continue
                del held[victim]
            held[b] = now
            writes += 1
    return AdmissionReplay(admission, float(ttl_s), float(capacity_blocks), hits, writes, expired)


def drive_writes_per_day(written_bytes: float, duration_s: float, drive_bytes: float) -> float:
    """Full drive writes per day: ``written_bytes`` over ``duration_s``, a day's worth, over ``drive_bytes``.

    ``drive_bytes`` is what the tier's drives hold in all (B); ``nan`` for a trace of no duration or no drives.
    """
    if not (duration_s > 0 and drive_bytes > 0):
        return math.nan
    return written_bytes / duration_s * 86_400.0 / drive_bytes
