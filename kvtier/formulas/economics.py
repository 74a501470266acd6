"""What holding a KV block costs against re-obtaining it: a five-minute rule for KV caches.

Gray and Putzolu's five-minute rule (1987) keeps an item in a faster tier when it will be
used again within the break-even interval: the cost of obtaining it once more divided by
the cost of holding it for a second.  For a KV block the alternative to holding it is
fetching it from a slower tier or recomputing it on the accelerator.  Costs here are in
US dollars or in joules; every function is pure and vectorized (floats or numpy arrays in
SI base units: bytes, seconds, USD, J, W) and broadcasts.

Where a holding cost is per byte per second, a tier's cost of holding ``n_bytes`` for
``dt`` seconds and then fetching them once is ``hold x n_bytes x dt + fetch``; the cost
of dropping them is one recomputation.  :func:`cheapest_tier` takes the lower envelope of
those lines for each reuse interval, and :func:`tier_mix` sums a trace's reuses into the
bytes each tier must hold (Little's law) and the cost per second of the mix.
:func:`nothing_to_cache` and :func:`no_duration` say in words why a trace leaves a figure
at zero (no reuse: nothing to cache) or undefined (a trace of 0 s: no rate).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from kvtier.formulas.jit import jit

FloatArray = NDArray[np.float64]


def _f(x: ArrayLike) -> FloatArray:
    return np.asarray(x, dtype=np.float64)


def capacity_price_per_byte_s(
    purchase_usd_per_byte: ArrayLike,
    amortisation_s: ArrayLike,
    hold_w_per_byte: ArrayLike = 0.0,
    usd_per_joule: ArrayLike = 0.0,
) -> FloatArray:
    """Cost of holding one byte for one second in purchased memory (USD/(B s)).

    ``purchase / amortisation + holding power x energy price``: the capacity written off
    evenly over ``amortisation_s`` seconds, plus the energy it draws while it holds data.

    Parameters
    ----------
    purchase_usd_per_byte : array_like
        Purchase price of the capacity (USD/B).
    amortisation_s : array_like
        Period the purchase is written off over (s, > 0).
    hold_w_per_byte : array_like, optional
        Power the capacity draws per byte held (W/B).
    usd_per_joule : array_like, optional
        Price of energy (USD/J).
    """
    return _f(purchase_usd_per_byte) / _f(amortisation_s) + _f(hold_w_per_byte) * _f(usd_per_joule)


def hbm_price_per_byte_s(accelerator_usd_per_s: ArrayLike, hbm_share: ArrayLike, hbm_bytes: ArrayLike) -> FloatArray:
    """Cost of holding one byte for one second in the accelerator's HBM (USD/(B s)).

    ``accelerator price x share / HBM capacity``: the share of the accelerator's hourly
    price that its HBM capacity stands for, spread evenly over that capacity.
    """
    return _f(accelerator_usd_per_s) * _f(hbm_share) / _f(hbm_bytes)


def time_cost(seconds: ArrayLike, rate_per_s: ArrayLike) -> FloatArray:
    """Cost of occupying something priced per second for ``seconds`` (USD, or J for a power in W)."""
    return _f(seconds) * _f(rate_per_s)


def keep_interval_s(recompute_cost: ArrayLike, fetch_cost: ArrayLike, hold_cost_per_s: ArrayLike) -> FloatArray:
    """How long a block is worth holding in a tier rather than dropping it and recomputing it (s).

    Holding it for ``dt`` and fetching it once costs ``hold x dt + fetch``; dropping it costs
    one recomputation.  Holding wins while ``dt < (recompute - fetch) / hold``.  Where the
    fetch alone costs as much as recomputing, the interval is 0: never worth holding there.

    Parameters
    ----------
    recompute_cost : array_like
        Cost of recomputing the block once (USD or J).
    fetch_cost : array_like
        Cost of fetching it once from this tier (same unit; 0 for the accelerator's HBM).
    hold_cost_per_s : array_like
        Cost of holding the block's bytes in this tier for one second (unit per s, > 0).
    """
    return np.maximum(_f(recompute_cost) - _f(fetch_cost), 0.0) / _f(hold_cost_per_s)


def gray_interval_s(fetch_cost_below: ArrayLike, hold_cost_per_s: ArrayLike) -> FloatArray:
    """Gray's break-even interval: keep a block in this tier rather than fetch it from the one below (s).

    ``fetch cost from below / holding cost here per second``, the form of the five-minute
    rule, in which the tier below holds a copy anyway.
    """
    return _f(fetch_cost_below) / _f(hold_cost_per_s)


def tier_costs(
    intervals_s: ArrayLike, hold_cost_per_s: ArrayLike, fetch_cost: ArrayLike, recompute_cost: ArrayLike
) -> FloatArray:
    """Cost of serving each reuse from each tier, and from recomputation (last row).

    Returns an array of shape ``(tiers + 1, reuses)``: row ``i`` is ``hold_i x dt + fetch_i``
    for tier ``i``, the last row the recomputation cost of each reuse (``recompute_cost``: one
    figure for every reuse, or one per reuse).
    """
    dt = _f(intervals_s).ravel()
    hold = _f(hold_cost_per_s).reshape(-1, 1)
    fetch = _f(fetch_cost).reshape(-1, 1)
    tiers = hold * dt[None, :] + fetch
    return np.vstack([tiers, np.broadcast_to(_f(recompute_cost), dt.shape)[None, :]])


def cheapest_tier(
    intervals_s: ArrayLike, hold_cost_per_s: ArrayLike, fetch_cost: ArrayLike, recompute_cost: ArrayLike
) -> NDArray[np.int64]:
    """For each reuse interval, the index of the cheapest way to have the block again.

    ``0 .. tiers - 1``: hold it in that tier until the reuse, then fetch it; ``tiers``:
    drop it and recompute it.  Ties go to the lower index (the faster tier, as listed).
    """
    return np.argmin(tier_costs(intervals_s, hold_cost_per_s, fetch_cost, recompute_cost), axis=0)


@dataclass(frozen=True)
class Mix:
    """A trace's reuses served at least cost: what each tier holds and what it all costs.

    The totals over the trace are always defined.  The rates (per second of trace time, and
    the mean bytes held, by Little's law) need a trace that lasts: for one that lasts 0 s
    (one request, or every request at one timestamp) they are ``None``, undefined, unless
    the trace reuses nothing, when nothing is held and nothing costs anything (0).

    Attributes
    ----------
    share : ndarray
        Share of the reuses each tier serves, recomputation last (fractions summing to 1;
        all 0 for a trace with no reuse, which has nothing to share out).
    byte_s_held : ndarray
        Byte-seconds each tier holds over the trace (B s; 0 for recomputation).
    hold_usd, fetch_usd, recompute_usd : float
        The mix's cost over the whole trace: capacity held, fetches, recomputations (USD).
    recompute_all_usd : float
        Cost over the whole trace of recomputing every reuse instead (USD).
    reuses : int
        Reuses in the trace (references to a block seen before).
    duration_s : float
        Length of the trace (s, >= 0).
    peak_bytes_held : ndarray or None
        The most bytes each tier holds at any one instant of the trace (B; 0 for
        recomputation), what it must be provisioned for; ``None`` where the reuses' times
        were not given.
    joint_peak_bytes_held : float or None
        The most bytes all the tiers hold together at any one instant (B): at most the sum of
        :attr:`peak_bytes_held`, whose tiers may peak at different instants; ``None`` as it.
    """

    share: FloatArray
    byte_s_held: FloatArray
    hold_usd: float
    fetch_usd: float
    recompute_usd: float
    recompute_all_usd: float
    reuses: int
    duration_s: float
    peak_bytes_held: FloatArray | None = None
    joint_peak_bytes_held: float | None = None

    @property
    def has_reuse(self) -> bool:
        """Whether any block of the trace is referenced again (if not: nothing to cache)."""
        return self.reuses > 0

    @property
    def rates_defined(self) -> bool:
        """Whether the rates are numbers: the trace lasts, or it reuses nothing (every rate 0)."""
        return self.duration_s > 0 or not self.has_reuse

    def _rate(self, total: float) -> float | None:
        """``total`` per second of trace time; 0 with no reuse; ``None`` (undefined) for a trace of 0 s."""
        if not self.has_reuse:
            return 0.0
        return float(total / self.duration_s) if self.duration_s > 0 else None

    @property
    def bytes_held(self) -> FloatArray | None:
        """Mean bytes each tier holds over the trace, by Little's law (B; ``None`` where rates are undefined)."""
        if not self.has_reuse:
            return np.zeros_like(self.byte_s_held)
        return self.byte_s_held / self.duration_s if self.duration_s > 0 else None

    @property
    def hold_usd_per_s(self) -> float | None:
        """Capacity held, per second of trace time (USD/s; ``None`` where rates are undefined)."""
        return self._rate(self.hold_usd)

    @property
    def fetch_usd_per_s(self) -> float | None:
        """Fetches, per second of trace time (USD/s; ``None`` where rates are undefined)."""
        return self._rate(self.fetch_usd)

    @property
    def recompute_usd_per_s(self) -> float | None:
        """Recomputations, per second of trace time (USD/s; ``None`` where rates are undefined)."""
        return self._rate(self.recompute_usd)

    @property
    def recompute_all_usd_per_s(self) -> float | None:
        """Recomputing every reuse instead, per second of trace time (USD/s; ``None`` where undefined)."""
        return self._rate(self.recompute_all_usd)

    @property
    def usd(self) -> float:
        """The mix's whole cost over the trace (USD)."""
        return self.hold_usd + self.fetch_usd + self.recompute_usd

    @property
    def usd_per_s(self) -> float | None:
        """The mix's whole cost per second of trace time (USD/s; ``None`` where rates are undefined)."""
        parts = (self.hold_usd_per_s, self.fetch_usd_per_s, self.recompute_usd_per_s)
        return None if None in parts else sum(p for p in parts if p is not None)

    @property
    def saving(self) -> float | None:
        """Share of the cost of recomputing every reuse that the mix saves (fraction).

        A ratio of totals, so defined for a trace of 0 s too; ``None`` for a trace with no
        reuse, where neither costs anything and there is nothing to save.
        """
        if not self.recompute_all_usd:
            return None
        return 1 - self.usd / self.recompute_all_usd


def tier_mix(
    intervals_s: ArrayLike,
    duration_s: float,
    block_bytes: float,
    hold_usd_per_byte_s: ArrayLike,
    fetch_usd: ArrayLike,
    recompute_usd: ArrayLike,
    reuse_at_s: ArrayLike | None = None,
    weights: ArrayLike | None = None,
) -> Mix:
    """Serve each reuse of a trace the cheapest way, and sum what that holds and costs.

    One :class:`MixTally` fed every reuse at once; a trace too large for memory feeds it chunk
    by chunk instead, with the same result.

    Parameters
    ----------
    intervals_s : array_like
        Time from each reference to a block back to its previous reference (s); empty for a
        trace with no reuse.
    duration_s : float
        Length of the trace (s, >= 0; 0 for one request, or every request at one timestamp).
    block_bytes : float
        Bytes of one block (B).
    hold_usd_per_byte_s : array_like
        Each tier's holding price (USD/(B s)), fastest first.
    fetch_usd : array_like
        Each tier's cost of one fetch of the block (USD); 0 for HBM.
    recompute_usd : array_like
        Cost of recomputing the block once (USD): one figure for every reuse, or one per reuse
        (a block's cost depends on the prefix it attends to).
    reuse_at_s : array_like, optional
        When each reuse comes (s, any origin); with it the mix gives each tier's peak bytes
        held (:func:`peak_held`).
    weights : array_like, optional
        The reuses each interval stands for (the distinct intervals of a trace with their
        counts, where every reuse costs the same to recompute); 1 each by default.

    Returns
    -------
    Mix
        A block reused after ``dt`` in tier ``i`` occupies ``block_bytes`` there for ``dt``;
        summed over the reuses, that is the byte-seconds the tier holds, and divided by the
        duration the mean bytes it holds.
    """
    if not duration_s >= 0:
        raise ValueError(f"duration_s must be >= 0, got {duration_s!r}")
    dt = _f(intervals_s).ravel()
    tally = MixTally(block_bytes, hold_usd_per_byte_s, fetch_usd, peak=reuse_at_s is not None)
    if reuse_at_s is None:
        tally.add(dt, recompute_usd, weights=weights)
    else:
        end = _f(reuse_at_s).ravel()
        start = end - dt
        _, at = np.unique(np.r_[start, end], return_inverse=True)  # each instant's rank among the distinct ones
        at = at.reshape(-1)
        tally.add(dt, recompute_usd, at[: dt.size], at[dt.size :])
    return tally.mix(duration_s)


TALLY_SLICE = 1 << 20
"""Reuses :meth:`MixTally.add` prices at once (each tier's cost of each: 8 B x tiers a reuse)."""


class MixTally:
    """:func:`tier_mix`'s sums, added reuse by reuse or chunk by chunk: bounded by the trace's instants.

    Holds, per tier and recomputation, the reuses served and the seconds held, the costs summed,
    and (with ``peak``) one count per tier and distinct instant of the trace: how many holdings
    begin there less how many end (:func:`peak_of_steps`).

    Parameters
    ----------
    block_bytes : float
        Bytes of one block (B).
    hold_usd_per_byte_s : array_like
        Each tier's holding price (USD/(B s)), fastest first.
    fetch_usd : array_like
        Each tier's cost of one fetch of the block (USD).
    peak : bool
        Also count each tier's holdings per instant, for its peak.
    instants : int
        The trace's distinct instants, where known: the counts are allocated once, not grown.
    """

    def __init__(
        self,
        block_bytes: float,
        hold_usd_per_byte_s: ArrayLike,
        fetch_usd: ArrayLike,
        peak: bool = False,
        instants: int = 0,
    ) -> None:
        self.block_bytes = float(block_bytes)
        self.hold = _f(hold_usd_per_byte_s).ravel() * self.block_bytes
        self.fetch = _f(fetch_usd).ravel()
        n = self.hold.size
        self.counts = np.zeros(n + 1)
        self.held_s = np.zeros(n)
        self.recompute_usd = self.recompute_all_usd = 0.0
        self.reuses = 0
        self.steps = np.zeros((n, int(instants)), dtype=np.int32) if peak else None

    def add(
        self,
        intervals_s: ArrayLike,
        recompute_usd: ArrayLike,
        from_at: NDArray[np.int64] | None = None,
        to_at: NDArray[np.int64] | None = None,
        weights: ArrayLike | None = None,
    ) -> None:
        """Add reuses: their intervals (s), recomputation costs (USD) and, for the peak, instants.

        ``from_at`` and ``to_at`` are the ranks (0, 1, ...) of each holding's first and last instant
        among the trace's distinct instants, in time order; equal ranks, equal instants.  Or,
        without a peak, ``weights``: the reuses each interval stands for (1 each by default).
        """
        dt = _f(intervals_s).ravel()
        n = self.hold.size
        recompute = np.broadcast_to(_f(recompute_usd), dt.shape)
        if dt.size > TALLY_SLICE:  # each tier's cost of every reuse at once: bounded by slices
            w = None if weights is None else _f(weights).ravel()
            for a in range(0, dt.size, TALLY_SLICE):
                part = slice(a, a + TALLY_SLICE)
                self.add(
                    dt[part],
                    recompute[part],
                    None if from_at is None else from_at[part],
                    None if to_at is None else to_at[part],
                    None if w is None else w[part],
                )
            return
        choice = cheapest_tier(dt, self.hold, self.fetch, recompute)
        w = None if weights is None else _f(weights).ravel()
        if w is not None and self.steps is not None:
            raise ValueError("a tally that counts the peak needs each reuse, not weights")
        cost = recompute if w is None else recompute * w
        self.counts += np.bincount(choice, weights=w, minlength=n + 1)
        self.held_s += np.bincount(choice, weights=dt if w is None else dt * w, minlength=n + 1)[:n]
        self.recompute_usd += float(np.sum(cost[choice == n]))
        self.recompute_all_usd += float(np.sum(cost))
        self.reuses += int(dt.size) if w is None else int(np.sum(w))
        if self.steps is None:
            return
        if from_at is None or to_at is None:
            raise ValueError("a tally that counts the peak needs each holding's instants")
        top = int(max(np.max(from_at, initial=-1), np.max(to_at, initial=-1))) + 1
        if top > self.steps.shape[1]:
            grown = np.zeros((n, max(top, self.steps.shape[1] * 3 // 2)), dtype=np.int32)
            grown[:, : self.steps.shape[1]] = self.steps
            self.steps = grown
        held = choice < n
        tier, begin, end = choice[held], np.asarray(from_at)[held], np.asarray(to_at)[held]
        _count_at(self.steps.reshape(-1), tier * self.steps.shape[1] + begin)  # anywhere in the trace so far
        if end.size:  # the chunk's own instants: a short range
            lo = int(end.min())
            for i in range(n):
                self.steps[i, lo:top] -= np.bincount(end[tier == i] - lo, minlength=top - lo).astype(np.int32)

    def mix(self, duration_s: float) -> Mix:
        """The :class:`Mix` of everything added, over a trace of ``duration_s`` (s)."""
        n = self.hold.size
        peak = joint = None
        if self.steps is not None:
            peak = np.r_[[peak_of_steps(row) for row in self.steps], 0.0] * self.block_bytes
            joint = peak_of_steps(self.steps.sum(axis=0, dtype=np.int64)) * self.block_bytes
        return Mix(
            share=self.counts / self.reuses if self.reuses else self.counts.copy(),
            byte_s_held=np.r_[self.held_s * self.block_bytes, 0.0],
            hold_usd=float(np.sum(self.held_s * self.hold)),
            fetch_usd=float(np.sum(self.counts[:n] * self.fetch)),
            recompute_usd=self.recompute_usd,
            recompute_all_usd=self.recompute_all_usd,
            reuses=self.reuses,
            duration_s=float(duration_s),
            peak_bytes_held=peak,
            joint_peak_bytes_held=joint,
        )


@jit
def _count_at(counts: NDArray[np.int32], at: NDArray[np.int64]) -> None:
    """Add one to ``counts[i]`` for each ``i`` of ``at``, repeats included (``np.add.at(counts, at, 1)``, compiled)."""
    for i in range(at.size):
        counts[at[i]] += 1


def peak_of_steps(steps: ArrayLike) -> float:
    """The most holdings open at once, from the holdings that begin less those that end at each instant.

    An instant's value counts after every holding that ends there and every one that begins:
    a block held again from its reuse to its next one is not counted twice, and a holding of
    0 s (begins and ends at one instant) is never open.  0 for none.
    """
    s = np.asarray(steps)
    return float(max(int(np.cumsum(s).max(initial=0)), 0))


def peak_held(start_s: ArrayLike, end_s: ArrayLike) -> float:
    """The most of the intervals ``[start, end)`` open at any one instant (a count, 0 for none).

    An interval that ends when another starts (a block held again from its reuse to its next
    one) is not counted twice: at equal times the ends come first.  An interval of 0 s is
    never open.  :func:`peak_of_steps` of the intervals' instants ranked.
    """
    start, end = _f(start_s).ravel(), _f(end_s).ravel()
    _, at = np.unique(np.r_[start, end], return_inverse=True)
    at = at.reshape(-1)
    steps = np.bincount(at[: start.size], minlength=at.size) - np.bincount(at[start.size :], minlength=at.size)
    return peak_of_steps(steps)


# ---- a trace that gives a cache nothing to do, or no rate -----------------------------------
