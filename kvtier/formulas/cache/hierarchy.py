"""Multi-tier LRU hierarchies (HBM, then host DRAM or CXL, then NVMe) replayed from one pass of stack distances.

An LRU stack ranks every block by its last reference; a reference's stack distance ``d`` is the
number of distinct other blocks referenced since its block's last use
(:func:`kvtier.formulas.cache.distances.stack_distances`; -1 for a first reference).  Two hierarchies of
``k`` tiers of ``C_1, ..., C_k`` blocks, tier 1 the fastest, are cuts of that one stack, so one
pass of distances gives every tier's hits and writes exactly, with no simulation:

- **Inclusive** (:data:`INCLUSIVE`): every tier is an LRU cache that sees every reference (a hit
  in HBM refreshes the block's place in DRAM and NVMe too), and ``C_1 <= C_2 <= ... <= C_k``:
  tier ``i`` holds the top ``C_i`` blocks of the stack, so each tier holds a copy of everything
  above it.  A reference is served by the first tier holding it, tier ``i`` when
  ``C_{i-1} <= d < C_i`` (``C_0 = 0``).  Every tier that misses it admits (writes) the block,
  so tier ``i`` writes once per reference with ``d >= C_i`` or ``d = -1``; a block that falls
  out of a tier is already below it and is dropped, never written.
- **Exclusive** (:data:`EXCLUSIVE`, demote-on-evict): a block lives in one tier at a time.  A
  reference moves its block to the top of tier 1; tier 1's least recently used block is then
  demoted (written) into tier 2, whose own LRU block moves down to tier 3, and so on, until a
  tier absorbs it (the one the block came from) or it falls out of the last tier.  The tiers
  together are the top ``S_k = C_1 + ... + C_k`` blocks of the stack, tier ``i`` the ranks
  ``[S_{i-1}, S_i)``; a reference is served by tier ``i`` when ``S_{i-1} <= d < S_i``.  Tier 1
  writes every block it misses (an admission); tier ``i > 1`` writes each block demoted into
  it, once for every reference served below tier ``i - 1`` (``d >= S_{i-1}`` or ``d = -1``)
  that finds tiers ``1 .. i - 1`` full: a block seen before is always behind a full stack
  above its rank, a first reference only when at least ``S_{i-1}`` distinct blocks came before it.

Counts are in blocks (references); a partial block (a prompt's last) is stored and moved as a
whole block, as a paged KV cache does.  :func:`replay` counts; :func:`tiers_traffic` turns the
counts into bytes per second, each device's busy share, drive writes per day and the holding and
fetch cost (SI units).  ``tests/formulas/test_hierarchy.py`` replays both kinds with a direct
simulation and gets the same counts.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from kvtier.formulas import transfer
from kvtier.formulas.flash import flash_drives

INCLUSIVE = "inclusive"
EXCLUSIVE = "exclusive"
MODES: tuple[str, ...] = (INCLUSIVE, EXCLUSIVE)
"""The kinds of hierarchy: every tier holds what the tiers above hold (inclusive), or none does (exclusive)."""


@dataclass(frozen=True)
class Replay:
    """What each tier of an LRU hierarchy does over a trace (counts in blocks).

    Attributes
    ----------
    mode : str
        :data:`INCLUSIVE` or :data:`EXCLUSIVE`.
    capacity_blocks : ndarray of int
        Each tier's capacity, fastest first (blocks).
    hits : ndarray of int
        References each tier serves (the first tier holding the block), per tier.
    admissions : ndarray of int
        Blocks each tier writes because a reference missed it (from a tier below or recomputed).
    demotions : ndarray of int
        Blocks each tier writes because they fell out of the tier above (exclusive only; 0 inclusive).
    n_refs : int
        Block references in the trace.
    """

    mode: str
    capacity_blocks: np.ndarray
    hits: np.ndarray
    admissions: np.ndarray
    demotions: np.ndarray
    n_refs: int

    @property
    def writes(self) -> np.ndarray:
        """Blocks each tier writes: its admissions plus its demotions."""
        return self.admissions + self.demotions

    @property
    def misses(self) -> int:
        """References no tier serves: recomputed."""
        return int(self.n_refs - self.hits.sum())

    @property
    def hit_ratio(self) -> np.ndarray:
        """Share of the references each tier serves (fraction; 0 for an empty trace)."""
        return self.hits / self.n_refs if self.n_refs else np.zeros(self.hits.size)


def bounds(capacity_blocks: Sequence[int] | np.ndarray, mode: str) -> np.ndarray:
    """The stack rank at which each tier ends: ``C_i`` (inclusive) or ``C_1 + ... + C_i`` (exclusive), blocks.

    Raises
    ------
    ValueError
        For an unknown mode, a negative capacity, or an inclusive hierarchy whose capacities fall.
    """
    cap = np.asarray(capacity_blocks, dtype=np.int64)
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    if cap.ndim != 1 or not cap.size or (cap < 0).any():
        raise ValueError(f"capacities must be a non-empty list of blocks >= 0, got {capacity_blocks!r}")
    if mode == INCLUSIVE:
        if (np.diff(cap) < 0).any():
            raise ValueError(
                f"an inclusive hierarchy's capacities cannot fall from one tier to the next: {cap.tolist()}"
            )
        return cap
    return np.cumsum(cap)


def serving_tier(distance: np.ndarray, capacity_blocks: Sequence[int] | np.ndarray, mode: str) -> np.ndarray:
    """Per reference, the tier that serves it, ``0 .. k - 1``, or ``k`` where none does (recomputed).

    Tier ``i`` serves the references with ``bound[i-1] <= d < bound[i]`` (:func:`bounds`); a first
    reference (``d = -1``) is served by none.
    """
    b = bounds(capacity_blocks, mode)
    d = np.asarray(distance)
    tier = np.searchsorted(b, d, side="right")  # tiers whose bound is <= d
    return np.where(d < 0, b.size, tier)


def replay(distance: np.ndarray, capacity_blocks: Sequence[int] | np.ndarray, mode: str) -> Replay:
    """Each tier's hits, admissions and demotions in an LRU hierarchy, exact, from the stack distances.

    Parameters
    ----------
    distance : ndarray of int
        Every reference's LRU stack distance in trace order (blocks; -1 for a first reference),
        :func:`kvtier.formulas.cache.distances.stack_distances`.
    capacity_blocks : sequence of int
        Each tier's capacity, fastest first (blocks); non-decreasing for an inclusive hierarchy.
    mode : str
        :data:`INCLUSIVE` or :data:`EXCLUSIVE`.

    Returns
    -------
    Replay
        Counts per tier (blocks).
    """
    d = np.asarray(distance, dtype=np.int64)
    return replay_counts(np.bincount(d[d >= 0]), int(np.count_nonzero(d < 0)), capacity_blocks, mode)


def replay_counts(
    at_distance: np.ndarray, first_refs: int, capacity_blocks: Sequence[int] | np.ndarray, mode: str
) -> Replay:
    """:func:`replay` from the histogram of the stack distances: what a streamed pass keeps, bounded.

    Exact, because every count of :func:`replay` is a count of distances against a bound, but
    one: the blocks a cold reference (a first one) pushes out of an exclusive tier, which
    depend on its rank among the first references, and the ``j``-th first reference has rank
    ``j``, so that ``first_refs - bound`` of them reach past a bound.

    Parameters
    ----------
    at_distance : ndarray
        References at each stack distance ``0, 1, ...`` (blocks).
    first_refs : int
        First references (distance -1): the trace's distinct blocks.
    capacity_blocks, mode
        As :func:`replay`.
    """
    h = np.asarray(at_distance, dtype=np.int64)
    b = bounds(capacity_blocks, mode)
    k = b.size
    reuses = int(h.sum())
    below = np.r_[0, np.cumsum(h)][np.minimum(b, h.size)]  # reuses at a distance below each bound
    hits = np.diff(np.r_[0, below]).astype(np.int64)
    n_refs = reuses + int(first_refs)
    missed = n_refs - np.cumsum(hits)  # references tier i (and every tier above) misses
    admissions = np.zeros(k, dtype=np.int64)
    demotions = np.zeros(k, dtype=np.int64)
    if mode == INCLUSIVE:
        # tier i misses exactly the first references and the reuses at d >= C_i, whatever the tiers above do
        admissions = (first_refs + reuses - below).astype(np.int64)
    else:
        admissions[0] = missed[0]
        for i in range(1, k):
            above = int(b[i - 1])  # S_{i-1}: the ranks tiers 0..i-1 hold; behind a full stack tier i-1 demotes
            demotions[i] = reuses - int(below[i - 1]) + max(int(first_refs) - above, 0)
    return Replay(mode, np.asarray(capacity_blocks, dtype=np.int64), hits, admissions, demotions, n_refs)


@dataclass(frozen=True)
class TierTraffic:
    """One tier of a replayed hierarchy per second of the trace: bytes moved, its device's load, wear, cost.

    NaN where the trace lasts 0 s (no rate), and for wear where the tier is not flash.

    Attributes
    ----------
    name : str
        The tier (a link preset, or ``hbm``).
    medium : str
        The medium behind it.
    capacity_bytes : float
        Its capacity (B).
    hit_ratio : float
        Share of the references it serves (fraction).
    read_bytes_per_s, write_bytes_per_s : float
        Bytes it reads back (its hits) and writes (admissions and demotions), B/s.
    read_busy, write_busy : float
        Its reads' time on the device (latency per transfer plus bytes over the read bandwidth) and its writes'
        bytes over the write bandwidth, per second (fraction; over 1: one device cannot keep up).
    drive_writes_per_day : float
        Its capacity written over per day (1/d).
    endurance_used : float
        Bytes written over the amortisation period over the drive's rated writes in that period (fraction;
        over 1: it wears out first); NaN for media that do not wear.
    hold_usd_per_s : float
        Holding its capacity (USD/s).
    fetch_usd_per_s : float
        The accelerator's time its reads take, priced as if the accelerator waited (USD/s); 0 for HBM.
    """

    name: str
    medium: str
    capacity_bytes: float
    hit_ratio: float
    read_bytes_per_s: float
    write_bytes_per_s: float
    read_busy: float
    write_busy: float
    drive_writes_per_day: float
    endurance_used: float
    hold_usd_per_s: float
    fetch_usd_per_s: float


def tiers_traffic(
    counts: Replay,
    names: Sequence[str],
    media: Sequence[str],
    block_bytes: float,
    duration_s: float,
    read_bandwidth_bytes_per_s: np.ndarray,
    write_bandwidth_bytes_per_s: np.ndarray,
    latency_s: np.ndarray,
    transfers: int,
    hold_usd_per_byte_s: np.ndarray,
    accelerator_usd_per_s: float,
    endurance_dwpd: float,
    endurance_period_s: float,
    amortisation_s: float,
    min_transfer_s: float = 0.0,
    efficiency: float = 1.0,
    link_block_bytes: float | None = None,
    overhead_s: float = 0.0,
    drive_bytes: float = math.inf,
) -> list[TierTraffic]:
    """Each tier of a replayed hierarchy set against its device: traffic, busy shares, drive writes, cost per second.

    Reads are the tier's hits, each a whole block of ``block_bytes`` in ``transfers`` transfers
    that each pay the tier's latency; writes are its admissions and demotions, whole blocks, against
    the device's write bandwidth.  Drive writes per day: the bytes written a day over the capacity.
    For ``nvme`` media, the bytes written over ``amortisation_s`` against ``endurance_dwpd`` capacity
    writes a day for ``endurance_period_s``.  The ``hbm`` tier is the accelerator's own memory: its hits
    are not fetched (no fetch cost, read time 0) and its admissions are the recomputed or fetched blocks
    written into it.

    Parameters
    ----------
    counts : Replay
        The replayed hierarchy.
    names, media : sequence of str
        Each tier's name and medium (``hbm``, ``dram``, ``cxl``, ``nvme``), fastest first.
    block_bytes : float
        Bytes of one block (B).
    duration_s : float
        Length of the trace (s).
    read_bandwidth_bytes_per_s, write_bandwidth_bytes_per_s, latency_s : ndarray
        Each tier's device read and write bandwidth (B/s) and per-transfer latency (s).
    transfers : int
        Transfers per block fetched.
    hold_usd_per_byte_s : ndarray
        Each tier's holding price (USD per byte-second).
    accelerator_usd_per_s : float
        The accelerator's price (USD/s).
    endurance_dwpd : float
        A drive's rated drive writes per day (1/d).
    endurance_period_s, amortisation_s : float
        The period the rating holds for and the period the hardware is written off over (s).
    min_transfer_s, efficiency, overhead_s : float, optional
        The transfer model's floor under a block's fetch (s), share of the rate reached and time each
        transfer adds to its latency (s; pageable host memory) (:func:`kvtier.formulas.transfer.fetch_time_s`);
        0, 1 and 0 by default.
    link_block_bytes : float, optional
        Bytes one block's fetch moves over one link (B): under a placement one accelerator's shard
        times the accelerators sharing the link; ``block_bytes`` by default.
    drive_bytes : float, optional
        One NVMe drive's capacity (B): an ``nvme`` tier holds the drives it must buy for its capacity,
        writes and wear (:func:`kvtier.formulas.flash.flash_drives`), as the LRU tiers do; infinite by
        default, which holds the capacity alone.
    """
    link_bytes = block_bytes if link_block_bytes is None else link_block_bytes
    per_s = 1.0 / duration_s if duration_s > 0 else math.nan
    out = []
    for i, (name, m) in enumerate(zip(names, media, strict=True)):
        cap = float(counts.capacity_blocks[i]) * block_bytes
        hits, writes = float(counts.hits[i]), float(counts.writes[i])
        local = m == "hbm"
        one = transfer.fetch_time_s(
            link_bytes,
            float(read_bandwidth_bytes_per_s[i]),
            float(latency_s[i]),
            transfers,
            min_transfer_s,
            efficiency,
            overhead_s,
        )
        read_s = 0.0 if local else hits * float(one)
        write = writes * block_bytes * per_s
        rated = endurance_dwpd * cap * endurance_period_s / 86400.0
        held = cap
        if m == "nvme" and math.isfinite(drive_bytes):
            drives = flash_drives(
                cap, write, drive_bytes, float(write_bandwidth_bytes_per_s[i]), endurance_dwpd, endurance_period_s
            )
            held = drives.flash_bytes if math.isfinite(drives.flash_bytes) else cap
        out.append(
            TierTraffic(
                name=name,
                medium=m,
                capacity_bytes=cap,
                hit_ratio=float(counts.hit_ratio[i]),
                read_bytes_per_s=hits * block_bytes * per_s,
                write_bytes_per_s=write,
                read_busy=read_s * per_s,
                write_busy=write / float(write_bandwidth_bytes_per_s[i]),
                drive_writes_per_day=write * 86400.0 / cap if cap > 0 else math.nan,
                endurance_used=write * amortisation_s / rated if (m == "nvme" and rated > 0) else math.nan,
                hold_usd_per_s=float(hold_usd_per_byte_s[i]) * held,
                fetch_usd_per_s=read_s * per_s * accelerator_usd_per_s,
            )
        )
    return out


def hbm_left_bytes(hbm_bytes: float, rank_weight_bytes: float) -> float:
    """HBM an accelerator has left beside its shard of the weights (B): ``max(hbm - rank weights, 0)``.

    ``rank_weight_bytes`` is what the placement puts on each accelerator
    (:meth:`kvtier.scenario.placement.Placed.rank_memory_bytes` with no KV): one placement for every page.  An
    upper bound on what a prefix cache can take: the running batch's own KV and the activations need some of it;
    0 where the shard alone does not fit.
    """
    if hbm_bytes <= 0:
        return 0.0
    return max(hbm_bytes - rank_weight_bytes, 0.0)


@dataclass(frozen=True)
class HierarchyCost:
    """What a replayed hierarchy costs per second of the trace, against recomputing what it misses (USD/s).

    Attributes
    ----------
    hold_usd_per_s, fetch_usd_per_s : float
        Every tier's holding and fetches, summed.
    recompute_usd_per_s : float
        Recomputing the reuses no tier serves.
    """

    hold_usd_per_s: float
    fetch_usd_per_s: float
    recompute_usd_per_s: float

    @property
    def usd_per_s(self) -> float:
        """Holding, fetches and recomputation together: the figure a least-cost mix is a lower bound on."""
        return self.hold_usd_per_s + self.fetch_usd_per_s + self.recompute_usd_per_s


def hierarchy_cost(
    traffic: Sequence[TierTraffic], recompute_missed_s: float, accelerator_usd_per_s: float, duration_s: float
) -> HierarchyCost:
    """A replayed hierarchy's cost per second: its tiers' holding and fetches plus recomputing the reuses it misses.

    Parameters
    ----------
    traffic : sequence of TierTraffic
        Its tiers (:func:`tiers_traffic`).
    recompute_missed_s : float
        Accelerator-seconds of recomputing the reuses (references to a block seen before) no tier serves (s).
    accelerator_usd_per_s : float
        The accelerator's price (USD/s).
    duration_s : float
        Length of the trace (s); NaN rates for 0 s.
    """
    per_s = 1.0 / duration_s if duration_s > 0 else math.nan
    return HierarchyCost(
        hold_usd_per_s=float(sum(t.hold_usd_per_s for t in traffic)),
        fetch_usd_per_s=float(sum(t.fetch_usd_per_s for t in traffic)),
        recompute_usd_per_s=recompute_missed_s * per_s * accelerator_usd_per_s,
    )
