"""What a tier admits and how long it keeps it: admission filters and a time to live on an LRU tier.

:func:`replay_admission` replays one LRU tier request by request (each prompt looked up head first, its
hits counted up to its first miss, as :mod:`kvtier.formulas.cache.fleet` replays an instance's tier) with
an admission filter (:data:`ADMISSIONS`) and a time to live: a block idle for longer than the TTL is gone
when next asked for.  The replay is compiled and fed chunk by chunk
(:class:`~kvtier.formulas.cache.admission_loop.AdmissionState`), so a trace of any length is one pass;
:mod:`kvtier.formulas.cache.admission_oracle` is the same in Python.  What it writes is every block it
admits, so the filters trade hit ratio for writes to the tier's drives (:func:`drive_writes_per_day`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from kvtier.formulas.cache.admission_loop import AdmissionState
from kvtier.formulas.cache.ids import DenseIds
from kvtier.formulas.cache.trace import Trace

ADMISSIONS: tuple[str, ...] = ("always", "second", "third", "tinylfu")
"""Which missed blocks the tier writes.

``always``: every one (plain LRU).  ``second`` and ``third``: a block on its second or third reference in
the trace, counting the references it missed (Dynamo's disk filter admits on the second, "to extend SSD
lifespan").  ``tinylfu``: when the tier is full, only a block referenced more often than the block it would
evict, by a count-min sketch of the recent references (Einziger, Friedman and Manes, "TinyLFU", ACM TOS
2017: four rows of counters, all halved every ``10 x capacity`` references,
:mod:`kvtier.formulas.cache.admission_loop`)."""


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


def check_admission(capacity_blocks: float, admission: str, ttl_s: float) -> None:
    """Raise ValueError for an unknown admission, a capacity not in whole blocks, or a TTL not above 0."""
    if admission not in ADMISSIONS:
        raise ValueError(f"admission must be one of {ADMISSIONS}, got {admission!r}")
    if not (capacity_blocks >= 0 and (math.isinf(capacity_blocks) or float(capacity_blocks).is_integer())):
        raise ValueError(f"capacity_blocks must be a whole number of blocks, 0 or more, got {capacity_blocks}")
    if not ttl_s > 0:
        raise ValueError(f"ttl_s must be above 0, got {ttl_s}")


def first_use_ids(blocks: np.ndarray) -> np.ndarray:
    """Block ids renumbered ``0, 1, ...`` in the order they are first referenced (int32), as a stream numbers them."""
    return DenseIds().map(np.asarray(blocks, dtype=np.int64)).astype(np.int32)


def admission_state(capacity_blocks: float, admission: str = "always", ttl_s: float = math.inf) -> AdmissionState:
    """The compiled replay's state of a tier of ``capacity_blocks`` (checked first, :func:`check_admission`)."""
    check_admission(capacity_blocks, admission, ttl_s)
    return AdmissionState(capacity_blocks, admission, ttl_s)


def replay_admission(
    trace: Trace, capacity_blocks: float, admission: str = "always", ttl_s: float = math.inf
) -> AdmissionReplay:
    """Replay an LRU tier of ``capacity_blocks`` over ``trace`` with an admission filter and a time to live.

    Each request, in arrival order: its blocks idle for more than ``ttl_s`` since their last use are
    dropped; its hits are its leading blocks held now (up to the first miss); then its blocks are touched
    head first: a held block becomes the most recent, a missed one is written only if ``admission`` admits
    it, evicting the least recently used block when the tier is full.  One compiled pass
    (:class:`~kvtier.formulas.cache.admission_loop.AdmissionState`), the blocks numbered in order of first
    reference.

    Raises
    ------
    ValueError
        For an unknown admission, a capacity that is not a whole number of blocks, or a TTL not above 0.
    """
    state = admission_state(capacity_blocks, admission, ttl_s)
    hits = state.feed(first_use_ids(trace.blocks), trace.starts, trace.timestamps_s)
    return AdmissionReplay(admission, float(ttl_s), float(capacity_blocks), hits, state.writes, state.expired)


def drive_writes_per_day(written_bytes: float, duration_s: float, drive_bytes: float) -> float:
    """Full drive writes per day: ``written_bytes`` over ``duration_s``, a day's worth, over ``drive_bytes``.

    ``drive_bytes`` is what the tier's drives hold in all (B); ``nan`` for a trace of no duration or no drives.
    """
    if not (duration_s > 0 and drive_bytes > 0):
        return math.nan
    return written_bytes / duration_s * 86_400.0 / drive_bytes
