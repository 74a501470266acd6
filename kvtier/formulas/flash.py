"""The NVMe drives a flash tier must buy: for its capacity, its write rate and its writes' wear.

:func:`flash_drives` counts them; the LRU tiers (:func:`kvtier.formulas.lru_tier.lru_tiers`) and the replayed
hierarchy (:func:`kvtier.formulas.cache.hierarchy.tiers_traffic`) hold and price what it returns.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class FlashDrives:
    """The NVMe drives a flash tier must buy: for its capacity, its write rate and its writes' wear.

    Attributes
    ----------
    for_capacity, for_bandwidth, for_endurance : float
        Drives whose capacity holds the tier, whose write bandwidth takes its writes, and whose rated
        drive writes a day absorb them (count; NaN where the write rate is undefined).
    count : float
        Drives bought: the most of the three (count).
    flash_bytes : float
        Their capacity, what is bought and held (B).
    wearout_s : float
        How long flash of the tier's own capacity lasts at its write rate: its rated writes (drive
        writes a day x capacity x rated period) over the write rate (s; inf for no writes).
    """

    for_capacity: float
    for_bandwidth: float
    for_endurance: float
    count: float
    flash_bytes: float
    wearout_s: float


def flash_drives(
    capacity_bytes: float,
    write_bytes_per_s: float,
    drive_bytes: float,
    drive_write_bandwidth_bytes_per_s: float,
    endurance_dwpd: float,
    endurance_period_s: float,
) -> FlashDrives:
    """The drives an NVMe tier needs (:class:`FlashDrives`): ``ceil`` of capacity, write rate and wear, each per drive.

    Capacity: ``capacity / drive_bytes``.  Bandwidth: ``write / drive_write_bandwidth``.  Endurance: a
    drive takes ``endurance_dwpd x drive_bytes`` bytes a day within its rating, so ``write x 86,400 /
    (endurance_dwpd x drive_bytes)``.  Buying the most of the three keeps every drive within its write
    bandwidth and its rated wear for the rating's period; a tier that writes faster than its own
    capacity can absorb is priced for the drives it wears through, not for its capacity.
    """
    rated_per_s = endurance_dwpd * drive_bytes / 86400.0
    need = (
        capacity_bytes / drive_bytes,
        write_bytes_per_s / drive_write_bandwidth_bytes_per_s,
        write_bytes_per_s / rated_per_s,
    )
    counts = [float(math.ceil(x - 1e-9)) if math.isfinite(x) else math.nan for x in need]
    count = max(counts) if all(math.isfinite(c) for c in counts) else math.nan
    rated = endurance_dwpd * capacity_bytes * endurance_period_s / 86400.0
    wearout = rated / write_bytes_per_s if write_bytes_per_s > 0 else (math.inf if write_bytes_per_s == 0 else math.nan)
    return FlashDrives(*counts, count=count, flash_bytes=count * drive_bytes, wearout_s=wearout)
