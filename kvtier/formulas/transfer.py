"""The transfer model: a fetch's time with a floor per transfer and the link's achieved share of its rate.

:func:`kvtier.formulas.costs.fetch_time_s` is ``transfers x latency + bytes / bandwidth``.  Measured on
one H200's PCIe 5.0 x16 link, copies of 4 to 256 KiB take 14 to 25 µs, not the 9 µs latency plus
their bytes that the large copies fit: a copy has a floor.  Copies from pageable host memory reach a
fraction of the pinned rate and pay a fixed cost per copy on top (:func:`staging_efficiency`), and a
link busy in both directions gives each a share of its rate.  :func:`fetch_time_s` adds all three to
the fetch; at ``min_transfer_s = 0``, ``efficiency = 1`` and ``overhead_s = 0`` it is
:func:`kvtier.formulas.costs.fetch_time_s` exactly.

Pure and vectorized; SI base units (bytes, s, B/s).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from kvtier.formulas import costs
from kvtier.formulas.roofline import FloatArray


def fetch_time_s(
    n_bytes: ArrayLike,
    bandwidth_bytes_per_s: ArrayLike,
    latency_s: ArrayLike = 0.0,
    transfers: ArrayLike = 1,
    min_transfer_s: ArrayLike = 0.0,
    efficiency: ArrayLike = 1.0,
    overhead_s: ArrayLike = 0.0,
) -> FloatArray:
    """Time to move ``n_bytes`` in ``transfers`` equal transfers over a link (s).

    ``max(min_transfer_s, transfers x (latency + overhead) + bytes / (bandwidth x efficiency))``: a fetch takes at
    least ``min_transfer_s``, the floor a lone small copy does not go below.  The floor is paid once, not
    per transfer: measured on one H200, 160 back-to-back copies of 32 KiB took 8.6 to 12.6 µs each, below
    a lone copy's floor of about 15 µs, so consecutive copies hide it.

    Parameters
    ----------
    n_bytes : array_like
        Bytes moved (B).
    bandwidth_bytes_per_s : array_like
        The link's rate, one direction, pinned host memory, the link otherwise idle (B/s).
    latency_s : array_like, optional
        Fixed per-transfer latency (s).
    transfers : array_like, optional
        Equal transfers the bytes are moved in (count).
    min_transfer_s : array_like, optional
        Least time of a fetch, a lone small copy's floor (s); 0 by default.
    efficiency : array_like, optional
        Share of the rate reached (pageable host memory, both directions busy), in (0, 1]; 1 by default.
    overhead_s : array_like, optional
        Fixed time each transfer adds to its latency (s): a copy from pageable host memory stages
        through the driver's pinned buffer; 0 by default.
    """
    rate = np.asarray(bandwidth_bytes_per_s, dtype=np.float64) * np.asarray(efficiency, dtype=np.float64)
    per_transfer = np.asarray(latency_s, dtype=np.float64) + np.asarray(overhead_s, dtype=np.float64)
    t = costs.fetch_time_s(n_bytes, rate, per_transfer, transfers)
    return np.maximum(np.asarray(min_transfer_s, dtype=np.float64), t)


def staging_efficiency(
    source_bytes: ArrayLike, cold_efficiency: ArrayLike, warm_efficiency: ArrayLike, cache_bytes: ArrayLike
) -> FloatArray:
    """Share of the pinned rate a copy from pageable host memory reaches (dimensionless).

    The driver first copies pageable bytes into a pinned buffer of its own, on the host CPU, then moves
    them over the link.  A source of at most ``cache_bytes`` (the host CPU's last-level cache) that was
    just touched is staged from the cache at ``warm_efficiency``; a larger one, or one not touched lately,
    from DRAM at ``cold_efficiency``.  A serving system's KV pool is far larger than any host cache, so
    its fetches see the cold share; a benchmark that copies one buffer again and again sees the warm one
    while the buffer fits.

    Parameters
    ----------
    source_bytes : array_like
        Bytes the copies keep reading from, the working set of the host side (B); for one buffer copied
        again and again, the copy's size.
    cold_efficiency, warm_efficiency : array_like
        Share of the pinned rate when staged from DRAM and from the cache, in (0, 1].
    cache_bytes : array_like
        The host CPU's last-level cache (B); 0: never warm.
    """
    warm = np.asarray(source_bytes, dtype=np.float64) <= np.asarray(cache_bytes, dtype=np.float64)
    return np.where(warm, np.asarray(warm_efficiency, dtype=np.float64), np.asarray(cold_efficiency, dtype=np.float64))


def link_efficiency(
    pageable: ArrayLike, pageable_efficiency: ArrayLike, duplex: ArrayLike, duplex_efficiency: ArrayLike
) -> FloatArray:
    """Share of the pinned, one-way rate a fetch reaches: ``pageable_efficiency`` if pageable, times
    ``duplex_efficiency`` if the link carries the other direction too (dimensionless; 1 for neither)."""
    p = np.where(np.asarray(pageable, dtype=bool), np.asarray(pageable_efficiency, dtype=np.float64), 1.0)
    d = np.where(np.asarray(duplex, dtype=bool), np.asarray(duplex_efficiency, dtype=np.float64), 1.0)
    return p * d


def break_even_bandwidth(
    n_bytes: ArrayLike,
    regen_s: ArrayLike,
    latency_s: ArrayLike = 0.0,
    transfers: ArrayLike = 1,
    min_transfer_s: ArrayLike = 0.0,
    efficiency: ArrayLike = 1.0,
    overhead_s: ArrayLike = 0.0,
) -> FloatArray:
    """Link bandwidth at which :func:`fetch_time_s` equals ``regen_s`` (B/s; ``inf``: no bandwidth is enough).

    ``n_bytes / ((regen - transfers x (latency + overhead)) x efficiency)``
    (:func:`kvtier.formulas.costs.bandwidth_for_ratio` at a ratio of 1, the rate a fetch reaches scaled
    back to the link's), where ``regen_s`` exceeds the fetch's floor ``min_transfer_s``; ``inf`` where
    the latency or the floor alone reach it.  Arguments as :func:`fetch_time_s`: ``latency_s`` and
    ``overhead_s`` are per transfer.
    """
    whole_latency = np.asarray(transfers, dtype=np.float64) * (
        np.asarray(latency_s, dtype=np.float64) + np.asarray(overhead_s, dtype=np.float64)
    )
    bw = costs.bandwidth_for_ratio(n_bytes, regen_s, 1.0, whole_latency) / np.asarray(efficiency, dtype=np.float64)
    return np.where(np.asarray(regen_s, dtype=np.float64) > np.asarray(min_transfer_s, dtype=np.float64), bw, np.inf)


def break_even_latency(
    n_bytes: ArrayLike,
    bandwidth_bytes_per_s: ArrayLike,
    regen_s: ArrayLike,
    transfers: ArrayLike = 1,
    min_transfer_s: ArrayLike = 0.0,
    efficiency: ArrayLike = 1.0,
    overhead_s: ArrayLike = 0.0,
) -> FloatArray:
    """Per-transfer latency at which :func:`fetch_time_s` equals ``regen_s`` (s; 0: none is small enough).

    ``max((regen - bytes / (bandwidth x efficiency)) / transfers - overhead, 0)``
    (:func:`kvtier.formulas.costs.latency_for_ratio` at the rate a fetch reaches, less the overhead each
    transfer adds: the link's own share), 0 where ``regen_s`` does not exceed the floor ``min_transfer_s``.
    """
    rate = np.asarray(bandwidth_bytes_per_s, dtype=np.float64) * np.asarray(efficiency, dtype=np.float64)
    lat = costs.latency_for_ratio(n_bytes, rate, regen_s, transfers) - np.asarray(overhead_s, dtype=np.float64)
    lat = np.maximum(lat, 0.0)
    return np.where(np.asarray(regen_s, dtype=np.float64) > np.asarray(min_transfer_s, dtype=np.float64), lat, 0.0)
