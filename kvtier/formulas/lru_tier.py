"""An LRU tier sized for a hit target, priced in each medium: its holding, fetches, saving, reads, writes and wear.

The tier a cache can be, beside the least-cost mix of :mod:`kvtier.formulas.tiering` (which knows
each block's next use, a lower bound): :func:`lru_tiers` prices an LRU tier of one capacity in
every tier at once from what it sees on a trace (:class:`LruTraffic`), each as an
:class:`LruTier`; on NVMe with the drives its capacity, writes and wear need
(:func:`kvtier.formulas.flash.flash_drives`).  Units are SI (B, s, B/s, USD/s) unless a name says
otherwise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from kvtier.formulas import transfer
from kvtier.formulas.flash import FlashDrives, flash_drives
from kvtier.formulas.tiering import Prices, Tiers, hold_usd_per_byte_s


@dataclass(frozen=True)
class LruTier:
    """An LRU tier of one medium sized for a trace's hit target: what it holds, costs, saves, reads and writes.

    Every rate is per second of the trace (SI units); NaN where the trace lasts 0 s (no rate).

    Attributes
    ----------
    tier, medium : str
        The link preset it is reached over and the medium behind it (:func:`medium`).
    regime : str
        The regime its recomputation avoided is priced in (``lone`` or ``batch``).
    capacity_bytes : float
        Its capacity, which is also its peak occupancy: an LRU tier that has filled stays full (B).
    hit_ratio : float
        Share of the trace's block references it serves (fraction).
    hold_usd_per_s : float
        Holding the whole capacity: the medium's price per byte-second times it (USD/s).
    fetch_usd_per_s : float
        The accelerator's time its fetches take, priced as if the accelerator waited (USD/s).
    recompute_avoided_usd_per_s : float
        The recomputation of its hits it avoids, in ``regime`` (USD/s).
    saved_usd_per_s : float
        The recomputation avoided less its fetches and its holding (USD/s; negative: it loses money).
    read_bytes_per_s, write_bytes_per_s : float
        Bytes read back (its hits) and written (every miss admitted, once), B/s.
    read_bandwidth_bytes_per_s, write_bandwidth_bytes_per_s : float
        The device's read and write bandwidth, one direction each (B/s).
    read_busy, write_busy : float
        Fraction of the time its link is busy fetching (latency included), and writing (fraction; over 1: one
        device cannot keep up).
    drive_writes_per_day : float
        Its capacity written over per day (1/d; what flash endurance is rated in).
    endurance_used : float
        For NVMe, the bytes written over the amortisation period over the drive's rated writes in that period
        (fraction; over 1: it wears out first); NaN for DRAM and CXL memory, which do not wear.
    saved_accelerators : float
        Accelerator-seconds of recomputation avoided per second: the accelerators its hits would keep busy.
    prefill_accelerators : float
        Accelerator-seconds per second the trace's whole prefill takes with no cache in ``regime``: the
        accelerators the trace keeps busy prefilling, to state capacity per accelerator.
    drives : FlashDrives or None
        For NVMe, the drives it buys for its capacity, its write rate and its wear (:func:`flash_drives`),
        whose capacity :attr:`hold_usd_per_s` pays for; None for DRAM and CXL memory.
    """

    tier: str
    medium: str
    regime: str
    capacity_bytes: float
    hit_ratio: float
    hold_usd_per_s: float
    fetch_usd_per_s: float
    recompute_avoided_usd_per_s: float
    saved_usd_per_s: float
    read_bytes_per_s: float
    write_bytes_per_s: float
    read_bandwidth_bytes_per_s: float
    write_bandwidth_bytes_per_s: float
    read_busy: float
    write_busy: float
    drive_writes_per_day: float
    endurance_used: float
    saved_accelerators: float
    prefill_accelerators: float
    drives: FlashDrives | None = None

    @property
    def accelerators(self) -> float:
        """Accelerators the tier is stated per: those the prefill keeps busy, at least one (0.1 busy still runs on
        one, so "per accelerator" never exceeds the total); NaN when the prefill takes no time."""
        return max(self.prefill_accelerators, 1.0) if self.prefill_accelerators > 0 else math.nan

    def servers(self, per_server: int) -> float:
        """Servers of ``per_server`` accelerators the tier is stated per: the busy ones over it, at least one."""
        return max(self.prefill_accelerators / per_server, 1.0) if self.prefill_accelerators > 0 else math.nan


@dataclass(frozen=True)
class LruTraffic:
    """What an LRU tier of one capacity sees on a trace, whatever its medium (totals over the trace).

    Attributes
    ----------
    capacity_bytes : float
        The tier's capacity (B).
    hit_ratio : float
        Share of the block references it serves (fraction).
    hit_blocks, hit_tokens : ndarray
        Per request, the blocks and prompt tokens of its hit prefix (tokens); or, with
        ``requests``, each distinct pair of them.
    written_tokens : float
        Tokens it writes: every block reference it misses, admitted once as a whole block of the trace's
        block size, as it holds them (tokens; the hierarchy's replay counts the same writes).
    recompute_avoided_s : float
        Accelerator-seconds of recomputing the hits it avoids (s).
    prefill_s : float
        Accelerator-seconds of prefilling every prompt with no cache (s).
    duration_s : float
        Length of the trace (s).
    requests : ndarray, optional
        The requests that have each pair of ``hit_blocks`` and ``hit_tokens``
        (:class:`kvtier.formulas.cache.replay.HitPrefixes`); one each by default.
    """

    capacity_bytes: float
    hit_ratio: float
    hit_blocks: np.ndarray
    hit_tokens: np.ndarray
    written_tokens: float
    recompute_avoided_s: float
    prefill_s: float
    duration_s: float
    requests: np.ndarray | None = None

    @property
    def weights(self) -> np.ndarray:
        """The requests behind each row of ``hit_blocks`` and ``hit_tokens`` (1 each by default)."""
        return np.ones(self.hit_blocks.shape) if self.requests is None else self.requests


def lru_tiers(
    prices: Prices,
    tiers: Tiers,
    write_bandwidth_bytes_per_s: np.ndarray,
    traffic: LruTraffic,
    regime: str,
    kv_bytes_per_token: float,
    transfers: int,
    endurance_dwpd: float,
    endurance_period_s: float,
    min_transfer_s: float = 0.0,
    efficiency: float = 1.0,
    link_bytes_per_token: float | None = None,
    overhead_s: float = 0.0,
    drive_bytes: float = math.inf,
    block_tokens: float = 0.0,
) -> list[LruTier]:
    """An LRU tier of ``traffic.capacity_bytes`` in each of ``tiers``: its holding, fetches, saving, reads and writes.

    Holding: the capacity times the medium's price per byte-second (:func:`hold_usd_per_byte_s`).
    Fetches: each request's hit prefix over the tier's link in ``blocks x transfers`` transfers
    (:func:`kvtier.formulas.costs.fetch_time_s`), the accelerator's time priced.  Reads: the hits'
    bytes; writes: every missed block admitted once, whole (``written_tokens x kv_bytes_per_token``), against the
    device's write bandwidth (``write_bandwidth_bytes_per_s``, one per tier).  Endurance, for NVMe:
    bytes written over ``prices.amortisation_s`` against ``endurance_dwpd`` capacity-writes a day
    for ``endurance_period_s``.

    Parameters
    ----------
    prices : Prices
    tiers : Tiers
        The tiers to build it in (not HBM).
    write_bandwidth_bytes_per_s : ndarray
        Each tier's device write bandwidth (B/s).
    traffic : LruTraffic
        The trace seen by an LRU tier of the capacity.
    regime : str
        The regime the recomputation avoided was priced in (a label carried through).
    kv_bytes_per_token : float
        KV bytes per token the tier stores, reads and writes (B): under a placement whose ranks each
        write their own copy, the stored copies times the model's
        (:attr:`kvtier.scenario.Scenario.tier_bytes_per_token`).
    transfers : int
        Transfers per block fetched.
    endurance_dwpd : float
        A drive's rated drive writes per day (1/d).
    endurance_period_s : float
        The period that rating holds for (s).
    min_transfer_s, efficiency, overhead_s : float, optional
        The transfer model's floor under a request's fetch (s), share of the rate reached and time
        each transfer adds to its latency (s) (:func:`kvtier.formulas.transfer.fetch_time_s`); 0, 1
        and 0 by default.
    link_bytes_per_token : float, optional
        Bytes that cross one link per fetched token (B): under a placement one accelerator's shard
        times the accelerators sharing the link (:attr:`kvtier.scenario.Scenario.fetch_bytes` per
        token); ``kv_bytes_per_token`` by default.  The tier still holds, reads and writes whole blocks.
    drive_bytes : float, optional
        One NVMe drive's capacity (B): an NVMe tier buys and holds the drives :func:`flash_drives` counts
        (its capacity, write rate and wear); infinite by default, which holds the capacity alone.
    block_tokens : float, optional
        Tokens of the serving engine's block: a request's hit prefix is fetched in ``ceil(hit tokens /
        block_tokens) x transfers`` transfers, as :func:`kvtier.formulas.ttft.prefix_fetch_s` counts them;
        0 (the default): ``hit_blocks x transfers``.
    """
    t = traffic
    link_bytes = kv_bytes_per_token if link_bytes_per_token is None else link_bytes_per_token
    per_s = 1.0 / t.duration_s if t.duration_s > 0 else math.nan
    accel = prices.accelerator_usd_per_s
    hold = hold_usd_per_byte_s(prices)
    bw, lat = tiers.bandwidth_bytes_per_s[:, None], tiers.latency_s[:, None]
    link_s = transfer.fetch_time_s(
        t.hit_tokens[None, :] * link_bytes,
        bw,
        lat,
        (np.ceil(t.hit_tokens / block_tokens) if block_tokens > 0 else t.hit_blocks)[None, :] * transfers,
        min_transfer_s,
        efficiency,
        overhead_s,
    )
    link_s = np.where(t.hit_blocks[None, :] > 0, link_s, 0.0)  # a request with no hit fetches nothing
    fetch_link_s = np.sum(link_s * t.weights[None, :], axis=1) * per_s
    read = float(np.sum(t.hit_tokens * t.weights)) * kv_bytes_per_token * per_s
    write = t.written_tokens * kv_bytes_per_token * per_s
    avoided = t.recompute_avoided_s * per_s * accel
    dwpd = write * 86400.0 / t.capacity_bytes if t.capacity_bytes > 0 else math.nan
    rated = endurance_dwpd * t.capacity_bytes * endurance_period_s / 86400.0
    out = []
    for i, (name, m) in enumerate(zip(tiers.names, tiers.media, strict=True)):
        drives = None
        held = t.capacity_bytes
        if m == "nvme" and math.isfinite(drive_bytes):
            drives = flash_drives(
                t.capacity_bytes,
                write,
                drive_bytes,
                float(write_bandwidth_bytes_per_s[i]),
                endurance_dwpd,
                endurance_period_s,
            )
            held = drives.flash_bytes if math.isfinite(drives.flash_bytes) else t.capacity_bytes
        hold_usd = hold[m] * held
        fetch_usd = float(fetch_link_s[i]) * accel
        wear = write * prices.amortisation_s / rated if (m == "nvme" and rated > 0) else math.nan
        out.append(
            LruTier(
                tier=name,
                medium=m,
                regime=regime,
                capacity_bytes=t.capacity_bytes,
                hit_ratio=t.hit_ratio,
                hold_usd_per_s=hold_usd,
                fetch_usd_per_s=fetch_usd,
                recompute_avoided_usd_per_s=avoided,
                saved_usd_per_s=avoided - fetch_usd - hold_usd,
                read_bytes_per_s=read,
                write_bytes_per_s=write,
                read_bandwidth_bytes_per_s=float(tiers.bandwidth_bytes_per_s[i]),
                write_bandwidth_bytes_per_s=float(write_bandwidth_bytes_per_s[i]),
                read_busy=float(fetch_link_s[i]),
                write_busy=write / float(write_bandwidth_bytes_per_s[i]),
                drive_writes_per_day=dwpd,
                endurance_used=wear,
                saved_accelerators=t.recompute_avoided_s * per_s,
                prefill_accelerators=t.prefill_s * per_s,
                drives=drives,
            )
        )
    return out
