"""The LRU curve: the hit ratio at every capacity, from a trace in memory or from a streamed histogram.

- :class:`Reuse`, a trace in memory with its stack distances: hit ratios, capacities, per-request
  hit tokens, reuse intervals, the curve over time (:func:`over_time`);
- :class:`LruHistogram`, the same curve streamed (:class:`kvtier.formulas.cache.stream.LruStream`):
  hit counts by distance, with what recomputing the hits costs;
- :class:`HitTotals`, what a tier of one size hits, whichever way it was measured;
  :func:`curve_error`, how far a sampled curve lies from the exact one;
- :func:`percentiles`, :func:`counted_percentiles`, :func:`counted_stats`: summaries of values,
  plain or counted.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from kvtier.formulas.cache.distances import hit_distances, previous_reference, stack_distances
from kvtier.formulas.cache.trace import DEFAULT_HIT_COUNT, HIT_COUNTS, Trace

# ---------------------------------------------------------------------------
# the analysis
# ---------------------------------------------------------------------------


def percentiles(values: np.ndarray, pcts: Sequence[float] = (50, 90, 99)) -> dict[str, float]:
    """``{"p50": ..., "p90": ..., "p99": ..., "max": ...}`` of ``values`` (NaN when empty)."""
    values = np.asarray(values, dtype=float)
    if not values.size:
        return {**{f"p{p:g}": math.nan for p in pcts}, "max": math.nan}
    out = {f"p{p:g}": float(np.percentile(values, p)) for p in pcts}
    out["max"] = float(values.max())
    return out


@dataclass(frozen=True)
class Reuse:
    """A trace with the reuse of its blocks measured.

    Attributes
    ----------
    trace : Trace
    prev : ndarray of int
        Previous reference to the same block, per reference (-1: none).
    distance : ndarray of int
        LRU stack distance per reference (blocks; -1: first reference).
    """

    trace: Trace
    prev: np.ndarray
    distance: np.ndarray
    count: str = DEFAULT_HIT_COUNT
    """How hits are counted (:data:`HIT_COUNTS`): up to each request's first miss, or every cached block."""

    @classmethod
    def of(cls, trace: Trace, count: str = DEFAULT_HIT_COUNT) -> Reuse:
        """Measure ``trace``, counting hits as ``count`` says (:data:`HIT_COUNTS`)."""
        if count not in HIT_COUNTS:
            raise ValueError(f"count must be one of {HIT_COUNTS}, got {count!r}")
        prev = previous_reference(trace.blocks)
        return cls(trace, prev, stack_distances(trace.blocks, prev), count)

    @cached_property
    def hit_distance(self) -> np.ndarray:
        """Per reference, the distance that decides a hit under :attr:`count` (:func:`hit_distances`; blocks)."""
        return hit_distances(self.distance, self.trace.starts, self.count)

    def recounted(self, count: str) -> Reuse:
        """The same measurement with hits counted as ``count`` (no distance is computed again)."""
        return Reuse(self.trace, self.prev, self.distance, count)

    # ---- hit ratios -------------------------------------------------------
    @cached_property
    def _sorted(self) -> dict[str, tuple[np.ndarray, np.ndarray, float]]:
        """Per weighting: hit distances sorted, cumulative hit weight, total weight."""
        dist = self.hit_distance
        hits = dist >= 0
        order = np.argsort(dist[hits], kind="stable")
        out = {}
        prompts = float(self.trace.input_tokens.sum())  # every prompt token, cached in a block or not
        for weighting, w in (("blocks", np.ones(self.trace.n_refs)), ("tokens", self.trace.ref_tokens.astype(float))):
            total = float(w.sum()) if weighting == "blocks" else prompts
            out[weighting] = (dist[hits][order], np.cumsum(w[hits][order]), total)
        return out

    def _by(self, weighting: str) -> tuple[np.ndarray, np.ndarray, float]:
        """:attr:`_sorted` for ``weighting``, which must be ``"blocks"`` or ``"tokens"``."""
        return self._sorted[_weighting(weighting)]

    def hit_ratio(self, capacity_blocks: float | np.ndarray = math.inf, weighting: str = "blocks") -> np.ndarray:
        """Hit ratio of an LRU cache of ``capacity_blocks`` blocks, exact (fraction).

        ``weighting="blocks"`` counts references; ``"tokens"`` weighs each by its prompt
        tokens (a prompt's last block is partial).  ``inf`` gives the infinite cache: every
        reference to a block seen before hits.
        """
        dist, cum, total = self._by(weighting)
        cap = np.asarray(capacity_blocks, dtype=float)
        n_hit = np.searchsorted(dist, cap, side="left")  # distances < capacity
        got = np.where(n_hit > 0, cum[np.maximum(n_hit, 1) - 1] if cum.size else 0.0, 0.0)
        return got / total if total else np.zeros_like(cap)

    def capacity_for(self, share: float, weighting: str = "blocks") -> int:
        """Smallest LRU capacity (blocks) whose hit ratio reaches ``share`` of the infinite cache's.

        Parameters
        ----------
        share : float
            Fraction of the achievable hit ratio, in (0, 1].
        """
        _share(share)
        dist, cum, _ = self._by(weighting)
        if not dist.size:
            return 0
        # cum[-1] > 0 (every block holds a token), so the index is at most dist.size - 1
        return int(dist[_reaching(cum, share)]) + 1

    def curve(self, weighting: str = "blocks") -> tuple[np.ndarray, np.ndarray]:
        """The whole LRU curve: every capacity where the hit ratio steps (blocks) and the ratio there."""
        dist, cum, total = self._by(weighting)
        if not dist.size:
            return np.array([1.0]), np.array([0.0])
        last = np.r_[dist[1:] != dist[:-1], True]
        return dist[last].astype(float) + 1, cum[last] / total

    # ---- the prefix property -------------------------------------------------
    @cached_property
    def requests_with_a_hit_after_a_miss(self) -> int:
        """Requests in which, in an infinite cache, a block hits after an earlier block of the prompt missed."""
        hit = self.distance >= 0
        late = np.r_[False, hit[1:] & ~hit[:-1]] & ~self.trace.first_of_request
        return int(np.unique(self.trace.request_of_ref[late]).size)

    @cached_property
    def requests_with_a_distance_that_falls(self) -> int:
        """Requests in which a block's stack distance is smaller than its predecessor's in the prompt.

        Zero means that at every LRU capacity the hits of every request form a prefix of
        its prompt (a block hits only if the block before it does).
        """
        d = np.where(self.distance < 0, np.inf, self.distance.astype(float))
        falls = np.r_[False, d[1:] < d[:-1]] & ~self.trace.first_of_request
        return int(np.unique(self.trace.request_of_ref[falls]).size)

    # ---- per request ------------------------------------------------------
    def hit_tokens(self, capacity_blocks: float = math.inf) -> tuple[np.ndarray, np.ndarray]:
        """Per request: blocks and prompt tokens that hit an LRU cache of ``capacity_blocks``."""
        hit = (self.hit_distance >= 0) & (self.hit_distance < capacity_blocks)
        n = self.trace.n_requests
        req = self.trace.request_of_ref
        blocks = np.bincount(req, weights=hit, minlength=n)
        tokens = np.bincount(req, weights=hit * self.trace.ref_tokens, minlength=n)
        return blocks, tokens

    def over_time(
        self, capacity_blocks: float, every_requests: int | None = 1000, every_s: float | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The hit ratio of an LRU cache of ``capacity_blocks`` over the trace, per group of requests.

        Requests are grouped by ``every_requests`` in arrival order, or, when ``every_s`` is
        given, by windows of that many seconds from the first request.  Hits as :attr:`count`
        counts them.

        Returns
        -------
        start, references, hit_ratio : ndarray
            Per group: its first request's index (or its window's start, s from the trace's
            start), its block references, and the share of them that hit (NaN: none).
        """
        t = self.trace
        hit = (self.hit_distance >= 0) & (self.hit_distance < capacity_blocks)
        return over_time(t.timestamps_s, t.starts, hit, every_requests, every_s)

    @cached_property
    def reuse_interval_s(self) -> np.ndarray:
        """Time from the previous reference to the same block, for every reference that has one (s)."""
        again = self.prev >= 0
        ts = self.trace.timestamps_s[self.trace.request_of_ref]
        return ts[again] - ts[self.prev[again]]


def over_time_counts(
    timestamps_s: np.ndarray,
    starts: np.ndarray,
    hit: np.ndarray,
    every_requests: int | None = 1000,
    every_s: float | None = None,
    first: int = 0,
    t0_s: float | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """References and hits per group of requests (:func:`over_time`), for a trace or a chunk of one.

    Parameters
    ----------
    timestamps_s : ndarray of float
        Each request's arrival (s).
    starts : ndarray of int
        Where each request's references begin in ``hit``, and the total at the end.
    hit : ndarray of bool
        Per reference, whether it hits.
    every_requests, every_s : int or float, optional
        The group: a count of requests, or (when given) a window in seconds.
    first : int
        The index of the first request here in the whole trace (for chunks of it).
    t0_s : float, optional
        The trace's first arrival (s); by default ``timestamps_s[0]``.

    Returns
    -------
    start, references, hits : ndarray
        Per group that holds a request: its first request's index or its window's start (s
        from ``t0_s``), its references and its hits.
    """
    n = len(starts) - 1
    counts = np.diff(starts)
    if every_s is not None:
        if not every_s > 0:
            raise ValueError(f"every_s must be > 0, got {every_s!r}")
        t0 = (float(timestamps_s[0]) if n else 0.0) if t0_s is None else t0_s
        group = np.floor((np.asarray(timestamps_s, dtype=float) - t0) / every_s).astype(np.int64)
    else:
        if not (every_requests and every_requests > 0):
            raise ValueError(f"every_requests must be > 0, got {every_requests!r}")
        group = (first + np.arange(n, dtype=np.int64)) // every_requests
    if not n:
        return np.zeros(0), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    base = int(group.min())
    refs = np.bincount(group - base, weights=counts).astype(np.int64)
    per_request = np.bincount(np.repeat(np.arange(n), counts), weights=hit, minlength=n)
    hits = np.bincount(group - base, weights=per_request).astype(np.int64)
    keep = np.bincount(group - base) > 0
    where = np.flatnonzero(keep) + base
    start = where * every_s if every_s is not None else where * every_requests
    return start.astype(float), refs[keep], hits[keep]


def over_time(
    timestamps_s: np.ndarray,
    starts: np.ndarray,
    hit: np.ndarray,
    every_requests: int | None = 1000,
    every_s: float | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Hit ratio per group of requests: ``every_requests`` in arrival order, or windows of ``every_s`` seconds.

    Parameters
    ----------
    timestamps_s : ndarray of float
        Each request's arrival (s).
    starts : ndarray of int
        Where each request's references begin in ``hit``, and the total at the end.
    hit : ndarray of bool
        Per reference, whether it hits.
    every_requests, every_s : int or float, optional
        The group: a count of requests, or (when given) a window in seconds.

    Returns
    -------
    start, references, hit_ratio : ndarray
        Per group that holds a request: its first request's index or its window's start (s
        from the first request), its references and its hit ratio (NaN with no references).
    """
    start, refs, hits = over_time_counts(timestamps_s, starts, hit, every_requests, every_s)
    with np.errstate(invalid="ignore", divide="ignore"):
        return start, refs, np.where(refs > 0, hits / np.maximum(refs, 1), np.nan)


@dataclass(frozen=True)
class HitTotals:
    """What an LRU tier of one size hits over a whole trace, whichever way it was measured.

    Attributes
    ----------
    hit_tokens, hit_blocks : float
        Prompt tokens and blocks it serves (tokens, blocks).
    in_batch_s, lone_s : float
        Recomputing each request's hits in both regimes, summed (s).
    hit_requests, memory_bound_requests : float
        Requests with a hit, and those of them whose hits recomputed alone are memory-bound.
    per_request : tuple of ndarray or None
        Per request, hit blocks and tokens, where the source holds them (:class:`Reuse`).
    fetch_copies : float
        Blocks of the serving engine that fetching every request's hit prefix copies
        (:meth:`kvtier.formulas.cache.regen.RegenCosts.fetch_copies` of each, summed).
    """

    hit_tokens: float
    hit_blocks: float
    in_batch_s: float
    lone_s: float
    hit_requests: float
    memory_bound_requests: float
    per_request: tuple[np.ndarray, np.ndarray] | None = None
    fetch_copies: float = 0.0


def merge_counted(a: tuple[np.ndarray, np.ndarray], values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct values of ``a`` and ``values`` with their counts (``a`` as ``(sorted values, counts)``)."""
    if not values.size:
        return a
    v, c = np.unique(values, return_counts=True)
    if not a[0].size:
        return v, c
    allv, inv = np.unique(np.concatenate((a[0], v)), return_inverse=True)
    return allv, np.bincount(inv.reshape(-1), weights=np.concatenate((a[1], c))).astype(np.int64)


MAX_EXACT_INTERVALS = 1 << 20
"""Distinct reuse intervals a stream holds as they are (16 B each); past it they are binned (:func:`bin_intervals`).

Timestamps in whole units of time give at most the trace's duration in that unit; float
timestamps can give a new interval with almost every reference (20 M references of 1,000
blocks held 907 MB before they were binned)."""

INTERVAL_BITS = 14
"""Significant bits a binned interval keeps: within ``2**-14`` (6.1e-5) of its value, relatively."""

INTERVAL_FLOOR_S = 2.0**-20
"""Binned intervals below this (about 0.95 us) become 0 or this (s)."""


def bin_intervals(values_s: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct intervals (s, ascending, with their counts) rounded to :data:`INTERVAL_BITS` significant bits.

    Below :data:`INTERVAL_FLOOR_S` an interval is rounded to a multiple of it (0 or the floor).
    Idempotent: binned values bin to themselves.  However many references, at most
    ``2 + 2**(INTERVAL_BITS - 1) x`` (binary orders of magnitude from the floor to the longest
    interval) values remain: about 606,000 for intervals up to 2**53 s, 9.7 MB.

    Returns
    -------
    tuple of ndarray
        The distinct binned values (s, ascending) and the counts of the intervals each stands for.
    """
    if not values_s.size:
        return values_s, counts
    mantissa, exponent = np.frexp(values_s)
    binned = np.ldexp(np.round(mantissa * 2.0**INTERVAL_BITS), exponent - INTERVAL_BITS)
    binned = np.where(values_s < INTERVAL_FLOOR_S, np.round(values_s / INTERVAL_FLOOR_S) * INTERVAL_FLOOR_S, binned)
    v, inv = np.unique(binned, return_inverse=True)
    return v, np.bincount(inv.reshape(-1), weights=counts, minlength=v.size).astype(np.int64)


def merge_pairs(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Two ``(sorted distinct values, counts)`` merged into one."""
    if not b[0].size:
        return a
    if not a[0].size:
        return b
    allv, inv = np.unique(np.concatenate((a[0], b[0])), return_inverse=True)
    return allv, np.bincount(inv.reshape(-1), weights=np.concatenate((a[1], b[1]))).astype(np.int64)


def counted_percentiles(
    values: np.ndarray, counts: np.ndarray, pcts: Sequence[float] = (50, 90, 99)
) -> dict[str, float]:
    """:func:`percentiles` of the values that ``values[i]`` stands for ``counts[i]`` times, without repeating them.

    The same linear interpolation as :func:`numpy.percentile` (its arithmetic step for step), on
    the sorted distinct ``values``.
    """
    n = int(np.sum(counts))
    if not n:
        return {**{f"p{p:g}": math.nan for p in pcts}, "max": math.nan}
    ends = np.cumsum(counts)
    out = {}
    for p in pcts:
        q = np.float64(p) / 100
        virtual = n * q + (1 + q * (1 - 1 - 1)) - 1  # numpy's linear method: alpha = beta = 1
        below = min(max(int(np.floor(virtual)), 0), n - 1)
        above = min(below + 1, n - 1)
        a = values[np.searchsorted(ends, below, side="right")]
        b = values[np.searchsorted(ends, above, side="right")]
        gamma = np.float64(virtual - np.floor(virtual)) if virtual < n - 1 else np.float64(0.0)
        diff = b - a
        out[f"p{p:g}"] = float(b - diff * (1 - gamma) if gamma >= 0.5 else a + diff * gamma)
    out["max"] = float(values[-1])
    return out


def counted_stats(values: np.ndarray, counts: np.ndarray) -> dict[str, float]:
    """:func:`counted_percentiles` and the mean of counted values (NaN when none)."""
    out = counted_percentiles(values, counts)
    n = float(np.sum(counts))
    out["mean"] = float(np.dot(values.astype(float), counts)) / n if n else math.nan
    return out


@dataclass
class LruHistogram:
    """The LRU curve of a trace as histograms of hit distances, and what the report needs besides, all bounded.

    ``counts[w][d]`` is the weight of the references at hit distance ``d`` (:func:`hit_distances`); an
    LRU tier of ``C`` blocks hits the references at distances below ``C``.  ``blocks`` and
    ``tokens`` always; with the costs the stream was given (:class:`RegenCosts`), also
    ``in_batch_s`` and ``lone_s`` (what recomputing the hits adds, each reference its
    increment of its request's hit prefix), ``hit_requests`` and ``memory_bound_requests``
    (increments of the request counts).  Sampled (``sample_rate`` < 1), the counts are those
    of the sampled references at scaled distances, and the totals divide them by the rate.
    ``name`` and ``trace_format`` label it as the reader names the trace and its format.
    """

    name: str
    n_requests: int
    n_refs: int
    n_unique: int
    total: dict[str, float]
    counts: dict[str, np.ndarray]
    requests_with_a_distance_that_falls: int
    requests_with_a_hit_after_a_miss: int
    trace_format: str
    count: str = DEFAULT_HIT_COUNT
    sample_rate: float = 1.0
    block_tokens: int = 0
    first_s: float = math.nan
    last_s: float = math.nan
    intervals: tuple[np.ndarray, np.ndarray] = (np.zeros(0), np.zeros(0, dtype=np.int64))
    input_tokens: tuple[np.ndarray, np.ndarray] = (np.zeros(0), np.zeros(0, dtype=np.int64))
    output_tokens: tuple[np.ndarray, np.ndarray] = (np.zeros(0), np.zeros(0, dtype=np.int64))
    other_counts: np.ndarray | None = None
    over_time: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
    sampled_refs: int = 0
    instants: int = 0

    @property
    def duration_s(self) -> float:
        """Time from the first request to the last (s)."""
        return float(self.last_s - self.first_s) if self.n_requests else 0.0

    def _upto(self, key: str, capacity_blocks: float) -> float:
        return hits_below(self.counts[key], capacity_blocks)

    def hit_ratio(self, capacity_blocks: float = math.inf, weighting: str = "blocks") -> float:
        """Hit ratio of an LRU tier of ``capacity_blocks`` blocks (fraction)."""
        if not self.total[_weighting(weighting)]:
            return 0.0
        ratio = self._upto(weighting, capacity_blocks) / self.total[weighting]
        # sampled, SHARDS_adj may take a hot block's share below 0 or above 1 at small capacities
        return min(max(ratio, 0.0), 1.0) if self.sample_rate < 1 else ratio

    def capacity_for(self, share: float, weighting: str = "blocks") -> int:
        """Smallest LRU capacity (blocks) reaching ``share`` of the infinite cache's hit ratio."""
        _share(share)
        cum = np.cumsum(self.counts[weighting])
        if not cum.size or cum[-1] == 0:
            return 0
        return _reaching(cum, share) + 1

    def curve(self, weighting: str = "blocks") -> tuple[np.ndarray, np.ndarray]:
        """Every capacity where the hit ratio steps (blocks) and the ratio there, as :meth:`Reuse.curve`."""
        c = self.counts[weighting]
        at = np.flatnonzero(c)
        if not at.size or not self.total[weighting]:
            return np.array([1.0]), np.array([0.0])
        return at.astype(float) + 1, np.cumsum(c)[at] / self.total[weighting]

    def totals(self, capacity_blocks: float = math.inf) -> HitTotals:
        """What a tier of ``capacity_blocks`` hits over the trace (:class:`HitTotals`); needs the stream's costs."""
        if "in_batch_s" not in self.counts:
            raise ValueError("the stream was fed without RegenCosts: it holds the LRU curve only")
        scale = 1.0 / self.sample_rate
        up = {k: self._upto(k, capacity_blocks) * scale for k in self.counts}
        return HitTotals(
            hit_tokens=up["tokens"],
            hit_blocks=up["blocks"],
            in_batch_s=up["in_batch_s"],
            lone_s=up["lone_s"],
            hit_requests=up["hit_requests"],
            memory_bound_requests=up["memory_bound_requests"],
            fetch_copies=up.get("fetch_copies", up["blocks"]),
        )

    @property
    def other(self) -> _Counted | None:
        """The block hit ratio counted the other way (:data:`HIT_COUNTS`), where the stream kept it."""
        if self.other_counts is None:
            return None
        return _Counted(self.other_counts, self.total["blocks"])


@dataclass(frozen=True)
class _Counted:
    """A histogram of hit distances and its total: a hit ratio at any capacity."""

    counts: np.ndarray
    total: float

    def hit_ratio(self, capacity_blocks: float = math.inf) -> float:
        return hits_below(self.counts, capacity_blocks) / self.total if self.total else 0.0


def hits_below(counts: np.ndarray, capacity_blocks: float) -> float:
    """The hits of a histogram of hit distances (``counts[d]``: weight at distance ``d``) in a cache of
    ``capacity_blocks`` blocks: the weight at distances below it (``inf``: all of it)."""
    upto = counts.size if math.isinf(capacity_blocks) else min(max(int(math.ceil(capacity_blocks)), 0), counts.size)
    return float(counts[:upto].sum())


def _weighting(weighting: str) -> str:
    """``weighting`` when it is ``"blocks"`` or ``"tokens"``; ValueError otherwise."""
    if weighting not in ("blocks", "tokens"):
        raise ValueError(f"weighting must be 'blocks' or 'tokens', got {weighting!r}")
    return weighting


def _share(share: float) -> float:
    """``share`` when it is in (0, 1]; ValueError otherwise."""
    if not 0 < share <= 1:
        raise ValueError(f"share must be in (0, 1], got {share!r}")
    return share


def _reaching(cum: np.ndarray, share: float) -> int:
    """The first index where the cumulative hits ``cum`` reach ``share`` of their total (a relative 1e-12 short,
    so that a share of exactly 1 is not lost to rounding)."""
    return int(np.searchsorted(cum, share * cum[-1] * (1 - 1e-12), side="left"))


def curve_error(
    exact: Reuse | LruHistogram, sampled: Reuse | LruHistogram, points: int = 200, weighting: str = "blocks"
) -> dict[str, float]:
    """Mean and largest absolute difference of two LRU curves' hit ratios, over capacities up to the exact one's 100 %.

    The capacities are ``points`` evenly spaced from 1 block to the smallest capacity at which
    the exact curve reaches its infinite-cache hit ratio (as SHARDS measures a sampled curve:
    mean absolute error over cache sizes).

    Returns
    -------
    dict
        ``mean_abs`` and ``max_abs`` (fractions of references), ``points``, ``largest_capacity_blocks``.
    """
    top = max(exact.capacity_for(1.0, weighting), 1)
    caps = np.unique(np.linspace(1, top, points).round())
    a = np.array([float(exact.hit_ratio(c, weighting)) for c in caps])
    b = np.array([float(sampled.hit_ratio(c, weighting)) for c in caps])
    err = np.abs(a - b)
    return {
        "mean_abs": float(err.mean()),
        "max_abs": float(err.max()),
        "points": int(caps.size),
        "largest_capacity_blocks": float(top),
    }
