"""Block reuse under LRU, and what a KV tier saves: arithmetic on a trace's arrays of ids and lengths.

The trace comes in as arrays (:class:`Trace`: timestamps, lengths, prefix-chained block ids);
reading and validating its file is :mod:`kvtier.inputs.traces`'s.  Vectorized with numpy:

- :func:`chain_ids`, per-block ids chained into prefix ids, and :func:`dense_ids`, ids
  ranked ``0 .. n_unique - 1``.
- :func:`stack_distances`, the exact LRU stack distance of every block reference, in
  O(n log n) by a sweep over Fenwick trees (no sampling), compiled by numba where it is.  A reference
  hits an LRU cache of ``C`` blocks exactly when its stack distance is below ``C``, so one
  pass gives the hit ratio at every capacity (:meth:`Reuse.hit_ratio`,
  :meth:`Reuse.capacity_for`).
- reuse intervals, the prefix property of the hits, and per request the hit tokens that a
  cache of a given size saves recomputing; :class:`RegenCosts` prices them in both
  regeneration regimes (a lone prefix recomputed alone, memory-bound roofline; inside a
  batch, marginal compute) and against fetching them over a link; :func:`report` gathers it.
- :class:`LruStream`, the same exact LRU curve for a reference stream fed in chunks, in
  memory proportional to its distinct blocks (:class:`StackDistanceStream`,
  :class:`DenseIds`), into an :class:`LruHistogram`.

Times are seconds, sizes bytes, rates per second, unless a name says otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from kvtier.formulas import costs, parallel, roofline, transfer
from kvtier.formulas.jit import jit

TARGETS_PCT: tuple[int, ...] = (50, 80, 90, 95)
"""Shares of the achievable (infinite-cache) hit ratio whose capacity the report gives (%)."""

HIT_COUNTS: tuple[str, ...] = ("prefix", "per-block")
"""How a request's hits are counted: ``prefix``, up to its first miss (as a serving engine's prefix cache
serves them: a block after a miss is recomputed with it), or ``per-block``, every block that is cached."""

DEFAULT_HIT_COUNT = "prefix"
"""The hit count of the report unless ``workload.hit_count`` says otherwise."""


@dataclass(frozen=True)
class Trace:
    """A validated serving trace, one row per request and one per block reference.

    Attributes
    ----------
    name : str
        How messages and labels name it (a shipped name or the path given).
    block_tokens : int
        Prompt tokens per block (tokens).
    timestamps_s : ndarray of float
        Arrival time of each request (s), non-decreasing.
    input_tokens, output_tokens : ndarray of int
        Prompt and output length of each request (tokens).
    starts : ndarray of int
        ``starts[r]:starts[r + 1]`` are request ``r``'s references in :attr:`blocks`.
    blocks : ndarray of int
        Every block reference in trace order, as dense ids ``0 .. n_unique - 1`` of the
        prefix-chained ids (equal ids: equal prefix).
    trace_format : str
        The name of the format it was read as (:data:`kvtier.inputs.traces.TRACE_FORMATS`), a
        label the report carries: the arithmetic never reads it.
    """

    name: str
    block_tokens: int
    timestamps_s: np.ndarray
    input_tokens: np.ndarray
    output_tokens: np.ndarray
    starts: np.ndarray
    blocks: np.ndarray
    trace_format: str

    @property
    def n_requests(self) -> int:
        """Requests in the trace."""
        return int(self.input_tokens.size)

    @property
    def n_refs(self) -> int:
        """Block references (every block of every prompt)."""
        return int(self.blocks.size)

    @cached_property
    def n_unique(self) -> int:
        """Distinct blocks."""
        return int(self.blocks.max()) + 1 if self.blocks.size else 0

    @property
    def duration_s(self) -> float:
        """Time from the first request to the last (s)."""
        return float(self.timestamps_s[-1] - self.timestamps_s[0]) if self.n_requests else 0.0

    @cached_property
    def request_of_ref(self) -> np.ndarray:
        """The request each block reference belongs to."""
        return np.repeat(np.arange(self.n_requests), np.diff(self.starts))

    @cached_property
    def first_of_request(self) -> np.ndarray:
        """True for the first block reference of each request (its block 0)."""
        first = np.zeros(self.n_refs, dtype=bool)
        first[self.starts[:-1][np.diff(self.starts) > 0]] = True
        return first

    @cached_property
    def ref_tokens(self) -> np.ndarray:
        """Prompt tokens in each referenced block: ``block_tokens``, the prompt's last block the rest (tokens)."""
        return _ref_tokens(self.block_tokens, self.input_tokens, self.starts)


def _ref_tokens(block_tokens: int, input_tokens: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Prompt tokens in each block of requests laid out by ``starts``: full blocks, the last the rest (tokens)."""
    tokens = np.full(int(starts[-1]), block_tokens, dtype=np.int64)
    counts = np.diff(starts)
    has = counts > 0
    last = starts[1:][has] - 1
    tokens[last] = input_tokens[has] - block_tokens * (counts[has] - 1)
    return tokens


# ---- chaining per-block ids into prefix ids ---------------------------------------------------------------

_MIX = (np.uint64(0x9E3779B97F4A7C15), np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB))


def _mix64(x: np.ndarray) -> np.ndarray:
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
    own = _mix64(np.ascontiguousarray(ids, dtype=np.int64).view(np.uint64))
    out = np.empty_like(own)
    counts = np.diff(np.asarray(starts, dtype=np.int64))
    order = np.argsort(-counts, kind="stable")  # longest first: the requests still going are a prefix of it
    first, longest = np.asarray(starts, dtype=np.int64)[order], counts[order]
    previous = np.zeros(int((longest > 0).sum()), dtype=np.uint64)
    ascending = -longest
    for j in range(int(longest[0]) if longest.size else 0):
        going = int(np.searchsorted(ascending, -j, side="left"))  # requests with more than j blocks
        at = first[:going] + j
        previous = _mix64(previous[:going] ^ own[at])
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


# ---------------------------------------------------------------------------
# stack distances
# ---------------------------------------------------------------------------


def hit_distances(distance: np.ndarray, starts: np.ndarray, count: str = DEFAULT_HIT_COUNT) -> np.ndarray:
    """Per reference, the stack distance that decides whether it is counted a hit (blocks; -1: never).

    A reference counts as a hit of an LRU cache of ``C`` blocks when its hit distance is in
    ``[0, C)``.  ``per-block``: its own stack distance.  ``prefix``: the largest stack distance
    of its request's blocks up to and including it, -1 once one of them is a first reference,
    so that at every capacity a request's hits stop at its first miss.  The two agree wherever
    no stack distance falls along a prompt (:attr:`Reuse.requests_with_a_distance_that_falls`).

    Parameters
    ----------
    distance : ndarray of int
        Stack distance per reference (blocks, -1 for a first reference), requests one after another.
    starts : ndarray of int
        Where each request's references begin, and the total at the end.
    count : str
        One of :data:`HIT_COUNTS`.
    """
    if count not in HIT_COUNTS:
        raise ValueError(f"count must be one of {HIT_COUNTS}, got {count!r}")
    distance = np.asarray(distance, dtype=np.int64)
    if count == "per-block" or not distance.size:
        return distance
    never = int(distance.max()) + 1  # above every distance: a first reference misses at every capacity
    span = never + 1
    request = np.repeat(np.arange(len(starts) - 1, dtype=np.int64), np.diff(starts))
    key = np.where(distance < 0, never, distance) + request * span  # keys grow from one request to the next
    running = np.maximum.accumulate(key) - request * span
    return np.where(running == never, -1, running)


def previous_reference(blocks: np.ndarray) -> np.ndarray:
    """For each reference, the index of the previous reference to the same block (-1 for the first).

    Parameters
    ----------
    blocks : ndarray of int
        Block ids in reference order.
    """
    blocks = np.asarray(blocks)
    order = np.argsort(blocks, kind="stable")
    ranked = blocks[order]  # one sorted copy, not two
    same = ranked[1:] == ranked[:-1]
    del ranked
    prev = np.full(blocks.size, -1, dtype=np.int64)
    prev[order[1:][same]] = order[:-1][same]
    return prev


# ---- the Fenwick-tree kernel (compiled where numba is: kvtier.formulas.jit) ----------------------------------------


@jit
def _sweep_py(local: np.ndarray, cross: np.ndarray, rank: np.ndarray, above: np.ndarray, out: np.ndarray) -> None:
    """Stack distances of one chunk by a sweep over two Fenwick trees (binary indexed trees); fills ``out``.

    ``local[t]``: the previous reference to ``t``'s block inside the chunk (-1: none).  ``cross``: the
    first touches of blocks seen before the chunk, ascending; ``rank``: the rank of each one's
    previous use among theirs; ``above``: how many blocks were last used before the chunk after it.
    Marks sit at the chunk positions that are the last use so far of their block, so a repeat's
    distance is the marks after its previous use; a cross reference's is ``above``, less the blocks
    last used after its previous use that the chunk touched before it, plus every block it touched
    before it.  O(k log k) for a chunk of k references.
    """
    k, m = local.size, cross.size
    marks = np.zeros(k + 1, dtype=np.int64)
    ranks = np.zeros(m + 1, dtype=np.int64)
    marked = inserted = c = 0
    for t in range(k):
        p = local[t]
        if p >= 0:
            s, i = 0, p + 1
            while i > 0:  # marks at positions 0 .. p
                s += marks[i]
                i -= i & -i
            out[t] = marked - s
            i = p + 1
            while i <= k:  # p is no longer its block's last use
                marks[i] -= 1
                i += i & -i
        else:
            if c < m and cross[c] == t:
                r = rank[c]
                s, i = 0, r
                while i > 0:  # earlier cross references whose previous use came before this one's
                    s += ranks[i]
                    i -= i & -i
                out[t] = above[c] - (inserted - s) + marked
                i = r + 1
                while i <= m:
                    ranks[i] += 1
                    i += i & -i
                inserted += 1
                c += 1
            marked += 1
        i = t + 1
        while i <= k:  # t is now its block's last use
            marks[i] += 1
            i += i & -i


@jit
def _last_uses_py(blocks: np.ndarray, last: np.ndarray, offset: int, local: np.ndarray, before: np.ndarray) -> None:
    """Each reference's previous one inside the chunk (``local``, -1: none) and, for a first touch, its block's
    last use before the chunk (``before``, -1: never; -1 too for a repeat), updating ``last`` to the chunk's."""
    for t in range(blocks.size):
        b = blocks[t]
        g = last[b]
        if g >= offset:
            local[t] = g - offset
            before[t] = -1
        else:
            local[t] = -1
            before[t] = g
        last[b] = offset + t


def _sweep(local: np.ndarray, cross: np.ndarray, rank: np.ndarray, above: np.ndarray) -> np.ndarray:
    """:func:`_sweep_py` into a new array (-1 for a first reference)."""
    out = np.full(local.size, -1, dtype=np.int64)
    _sweep_py(
        np.ascontiguousarray(local, dtype=np.int64),
        np.ascontiguousarray(cross, dtype=np.int64),
        np.ascontiguousarray(rank, dtype=np.int64),
        np.ascontiguousarray(above, dtype=np.int64),
        out,
    )
    return out


def stack_distances(blocks: np.ndarray, prev: np.ndarray | None = None) -> np.ndarray:
    """The LRU stack distance of every reference: distinct other blocks referenced since its block's last use.

    A reference hits an LRU cache holding ``C`` blocks exactly when its stack distance is
    below ``C``; a first reference (a cold miss) has distance -1 and hits no finite or
    infinite cache.  Exact, by the identity ``distance(t) = #{i in (p, t) : prev(i) <= p}``
    (``p`` the previous reference to the block, ``prev(i)`` that of reference ``i``): the
    references in between that are the first of their block since ``p`` each name one
    distinct block.

    Parameters
    ----------
    blocks : ndarray of int
        Block ids in reference order.
    prev : ndarray of int, optional
        :func:`previous_reference` of ``blocks``, if already computed.

    Returns
    -------
    ndarray of int64
        Stack distance per reference (blocks), -1 for a first reference.
    """
    blocks = np.asarray(blocks)
    prev = previous_reference(blocks) if prev is None else prev
    none = np.zeros(0, dtype=np.int64)
    return _sweep(prev, none, none, none)


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
        for weighting, w in (("blocks", np.ones(self.trace.n_refs)), ("tokens", self.trace.ref_tokens.astype(float))):
            out[weighting] = (dist[hits][order], np.cumsum(w[hits][order]), float(w.sum()))
        return out

    def _by(self, weighting: str) -> tuple[np.ndarray, np.ndarray, float]:
        """:attr:`_sorted` for ``weighting``, which must be ``"blocks"`` or ``"tokens"``."""
        if weighting not in ("blocks", "tokens"):
            raise ValueError(f"weighting must be 'blocks' or 'tokens', got {weighting!r}")
        return self._sorted[weighting]

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
        if not 0 < share <= 1:
            raise ValueError(f"share must be in (0, 1], got {share!r}")
        dist, cum, _ = self._by(weighting)
        if not dist.size:
            return 0
        # cum[-1] > 0 (every block holds a token), so k <= dist.size - 1
        k = int(np.searchsorted(cum, share * cum[-1] * (1 - 1e-12), side="left"))
        return int(dist[k]) + 1

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


def _over_time_counts(
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
    start, refs, hits = _over_time_counts(timestamps_s, starts, hit, every_requests, every_s)
    with np.errstate(invalid="ignore", divide="ignore"):
        return start, refs, np.where(refs > 0, hits / np.maximum(refs, 1), np.nan)


# ---------------------------------------------------------------------------
# what the hits are worth
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class RegenCosts:
    """What recomputing or fetching a prompt prefix costs, for one model and one accelerator.

    Attributes
    ----------
    kv_bytes_per_token : float
        KV-cache bytes per token (B).
    active_params : float
        Parameters a token passes through (dimensionless).
    flops_per_param_token : float
        FLOPs per parameter per token (2 for a multiply-add).
    attention_flops_per_position : float
        Attention FLOPs per token per position it attends to (FLOP).
    peak_flop_per_s : float
        Dense peak of the accelerator (FLOP/s).
    mfu : float
        Achieved fraction of the peak (0, 1].
    weight_bytes : float
        Bytes of the weights a forward pass streams (B).
    mem_bandwidth_bytes_per_s : float
        Device-memory bandwidth (B/s).
    mem_efficiency : float
        Achieved fraction of it (0, 1].
    fetch_transfers : int
        Transfers that fetch one block, each paying the link's latency: 1 for a contiguous
        block, the block's layer chunks for a per-layer layout (``fetch_layout``,
        :attr:`kvtier.scenario.Scenario.fetch_transfers`); 1 by default.
    layers, mem_overhead_per_layer_s, launch_floor_per_layer_s, knee_sharpness : float
        The forward-pass model's other terms (:func:`kvtier.formulas.roofline.forward_pass_time_s`):
        the model's layers, ``regen.mem_overhead_per_layer`` and ``regen.launch_floor_per_layer`` (s)
        and the knee's exponent (``inf``: the plain roofline, the default).
    routed_weight_bytes, n_routed_experts, experts_per_token : float
        The routed experts' share of :attr:`weight_bytes` (B), their count and how many a token
        picks: a pass reads only the experts its tokens are routed to
        (:func:`kvtier.formulas.parallel.touched_rank_weight_bytes`); 0 for a dense model.
    tp, group, accelerators, pipeline_stages : int
        The placement (:class:`kvtier.scenario.Placement`): tensor-parallel ranks, ranks of a
        stage (``tp x ep``), accelerators in all, pipeline stages; 1 each by default.
    compute_share, kv_rank_share : float
        Share of a pass's FLOPs, and of a token's KV, the busiest rank holds (1 on one accelerator).
    collective_latency_s, collective_s_per_token : float
        The collectives a lone pass adds (:func:`kvtier.formulas.parallel.collectives_time_s`),
        which are affine in its tokens: every operation's latency once (s), plus the bytes of
        each token (s per token); 0 on one accelerator.
    min_transfer_s, link_efficiency, link_overhead_s : float
        The transfer model's floor under a fetch (s), share of a link's rate a fetch reaches and
        time each transfer adds (s) (:func:`kvtier.formulas.transfer.fetch_time_s`); 0, 1 and 0 by default.
    """

    kv_bytes_per_token: float
    active_params: float
    flops_per_param_token: float
    attention_flops_per_position: float
    peak_flop_per_s: float
    mfu: float
    weight_bytes: float
    mem_bandwidth_bytes_per_s: float
    mem_efficiency: float
    fetch_transfers: int = 1
    layers: float = 0.0
    mem_overhead_per_layer_s: float = 0.0
    launch_floor_per_layer_s: float = 0.0
    knee_sharpness: float = math.inf
    routed_weight_bytes: float = 0.0
    n_routed_experts: float = 0.0
    experts_per_token: float = 0.0
    tp: int = 1
    group: int = 1
    accelerators: int = 1
    pipeline_stages: int = 1
    compute_share: float = 1.0
    kv_rank_share: float = 1.0
    collective_latency_s: float = 0.0
    collective_s_per_token: float = 0.0
    min_transfer_s: float = 0.0
    link_efficiency: float = 1.0
    link_overhead_s: float = 0.0

    @classmethod
    def of(cls, s: Any, mfu_label: str) -> RegenCosts:
        """The costs of a :class:`~kvtier.scenario.Scenario` ``s`` at its MFU bracket ``mfu_label``, placed."""
        p, m = s.placement, s.model
        _, routed = s.weight_split()
        per_token = float(s.collectives_s(1.0, 0.0))  # one token's bytes, no latency
        return cls(
            kv_bytes_per_token=float(s.kv_bytes_per_token),
            active_params=float(s.active_params),
            flops_per_param_token=s.v("flops_per_param_token"),
            attention_flops_per_position=float(s.model.attention_flops_per_position()),
            peak_flop_per_s=s.v("peak_flops"),
            mfu=s.mfu(mfu_label),
            weight_bytes=float(s.weight_bytes),
            mem_bandwidth_bytes_per_s=s.v("regen.mem_bandwidth"),
            mem_efficiency=s.v("regen.mem_efficiency"),
            fetch_transfers=int(s.fetch_transfers),
            layers=float(s.model.n_layers),
            mem_overhead_per_layer_s=s.v("regen.mem_overhead_per_layer"),
            launch_floor_per_layer_s=s.v("regen.launch_floor_per_layer"),
            knee_sharpness=s.knee_sharpness,
            routed_weight_bytes=float(routed),
            n_routed_experts=float(m.n_routed_experts if routed else 0),
            experts_per_token=float(m.experts_per_token if routed else 0),
            tp=int(p.tp),
            group=int(p.group),
            accelerators=int(p.accelerators),
            pipeline_stages=int(p.pp),
            compute_share=float(s.compute_share),
            kv_rank_share=float(s.kv_rank_bytes_per_token / s.kv_bytes_per_token),
            collective_latency_s=float(s.collectives_s(1.0, 1.0)) - per_token,
            collective_s_per_token=per_token,
            min_transfer_s=s.v("fetch.min_transfer_time"),
            link_efficiency=float(s.link_efficiency),
            link_overhead_s=float(s.link_overhead_s),
        )

    def pass_weight_bytes(self, tokens: np.ndarray) -> np.ndarray:
        """Weight bytes the busiest rank reads in a pass over ``tokens`` tokens (B).

        :func:`kvtier.formulas.parallel.touched_rank_weight_bytes`: all of :attr:`weight_bytes` for
        a dense model on one accelerator.
        """
        dense = self.weight_bytes - self.routed_weight_bytes
        return parallel.touched_rank_weight_bytes(
            dense, self.routed_weight_bytes, self.n_routed_experts, self.experts_per_token, tokens, self.tp, self.group
        )

    def pass_latency_s(self, flops: np.ndarray, tokens: np.ndarray, cached_tokens: np.ndarray) -> np.ndarray:
        """Wall time of a forward pass of its own over ``tokens`` new tokens attending to ``cached_tokens`` (s).

        The busiest rank's :func:`kvtier.formulas.roofline.forward_pass_time_s` of ``flops x
        compute_share`` against its weights (:meth:`pass_weight_bytes`) and its share of the cached
        KV, over every layer (the pipeline stages are crossed one after another), plus the
        collectives: ``collective_latency_s + tokens x collective_s_per_token``.  On one
        accelerator the forward-pass model of one device; with the ``regen.*`` terms at 0 the
        plain roofline ``max(FLOPs / (peak x MFU), bytes / (bandwidth x efficiency))``.
        """
        tokens = np.asarray(tokens, dtype=float)
        cached = np.asarray(cached_tokens, dtype=float)
        nbytes = roofline.regen_bytes_read(
            self.pass_weight_bytes(tokens), tokens, tokens, self.kv_bytes_per_token * self.kv_rank_share, cached
        )
        t = roofline.forward_pass_time_s(
            np.asarray(flops, dtype=float) * self.compute_share,
            nbytes,
            self.peak_flop_per_s,
            self.mfu,
            self.mem_bandwidth_bytes_per_s,
            self.mem_efficiency,
            layers=self.layers,
            mem_overhead_per_layer_s=self.mem_overhead_per_layer_s,
            launch_floor_per_layer_s=self.launch_floor_per_layer_s,
            sharpness=self.knee_sharpness,
        )
        comm = np.where(self.accelerators > 1, self.collective_latency_s + tokens * self.collective_s_per_token, 0.0)
        return t + comm

    def in_batch_latency_s(self, flops: np.ndarray, tokens: np.ndarray) -> np.ndarray:
        """Wall time ``flops`` of ``tokens`` tokens add to a compute-bound batch on the placement (s).

        ``flops / (accelerators x peak x MFU)``, a full pipeline keeping every accelerator busy, plus
        the bytes the tokens add to the collectives, their latency shared by the batch, over the
        ``pipeline_stages`` (as :meth:`kvtier.scenario.Scenario.in_batch_compute_s`).  On one
        accelerator :meth:`in_batch_s`'s ``FLOPs / (peak x MFU)``.
        """
        compute = costs.compute_time_s(flops, self.peak_flop_per_s * self.accelerators, self.mfu)
        return compute + np.asarray(tokens, dtype=float) * self.collective_s_per_token / self.pipeline_stages

    def busy_accelerators(self, regime: str) -> float:
        """Accelerators a request's prefill keeps busy for its wall time, in ``regime`` (count).

        ``batch``: every accelerator (a full pipeline); ``lone``: one stage's ranks at a time,
        ``accelerators / pipeline_stages``.  Wall time x this is accelerator time.
        """
        if regime not in ("batch", "lone"):
            raise ValueError(f"regime must be 'batch' or 'lone', got {regime!r}")
        return self.accelerators / (1 if regime == "batch" else self.pipeline_stages)

    def prefix_flops(self, tokens: np.ndarray) -> np.ndarray:
        """FLOPs to recompute the first ``tokens`` tokens of a prompt: ``k N h + f h (h + 1) / 2`` (FLOP).

        Exactly the prefill work a cache hit on that prefix avoids: the rest of the prompt
        still attends to the prefix, whether recomputed or fetched.
        """
        return costs.regen_flops(
            0.0,
            tokens,
            self.active_params,
            self.attention_flops_per_position,
            flops_per_param_token=self.flops_per_param_token,
        )

    def in_batch_s(self, tokens: np.ndarray) -> np.ndarray:
        """Recomputing each prefix *inside a batch*: its marginal compute, FLOPs / (peak x MFU) (s)."""
        return costs.compute_time_s(self.prefix_flops(tokens), self.peak_flop_per_s, self.mfu)

    def lone_s(self, tokens: np.ndarray) -> np.ndarray:
        """Recomputing each prefix *alone*, as its own forward pass, in accelerator time (s); 0 for no tokens.

        :meth:`pass_latency_s` of the prefix with nothing cached before it (a prefix has no
        cached positions, so no attention read) times :meth:`busy_accelerators` of ``lone``.  On
        one accelerator ``max(FLOPs / (peak x MFU), weights / (memory bandwidth x efficiency))``:
        the pass streams every weight it touches once whatever its length.
        """
        tokens = np.asarray(tokens, dtype=float)
        safe = np.maximum(tokens, 1.0)
        t = self.pass_latency_s(self.prefix_flops(safe), safe, 0.0) * self.busy_accelerators("lone")
        return np.where(tokens > 0, t, 0.0)

    def regen_s(self, tokens: np.ndarray, regime: str) -> np.ndarray:
        """Recomputing each prefix of ``tokens`` tokens in ``regime``: :meth:`in_batch_s` (``batch``) or :meth:`lone_s`.

        The one recompute cost of a reuse the report uses: the workload page's prefill avoided
        and the cost page's recomputation (:meth:`per_reference_s`) are both this.
        """
        if regime not in ("batch", "lone"):
            raise ValueError(f"regime must be 'batch' or 'lone', got {regime!r}")
        return self.in_batch_s(tokens) if regime == "batch" else self.lone_s(tokens)

    def per_reference_s(self, trace: Trace, regime: str) -> np.ndarray:
        """Each block reference's share of recomputing its prompt's prefix in ``regime`` (s, one per reference).

        The prefix through the block less the prefix before it, :meth:`regen_s` of each: the
        block's parameter FLOPs plus its attention over every token before it in the prompt.
        Over a request whose hits form a prefix of its prompt (the prefix property), the
        shares of its hits add up to :meth:`regen_s` of the hit prefix, exactly what
        :func:`saving` charges.  Alone, the first block of a prompt carries the weights' read.
        """
        tokens = trace.ref_tokens.astype(float)
        end = np.cumsum(tokens)
        before = np.repeat(np.r_[0.0, end][trace.starts[:-1]], np.diff(trace.starts))  # tokens of earlier prompts
        return self.share_s(end - before, tokens, regime)

    def share_s(self, upto: np.ndarray, tokens: np.ndarray, regime: str) -> np.ndarray:
        """A block's share of recomputing its prompt's prefix in ``regime`` (s): through it less before it.

        ``upto`` is the prompt's tokens through the block, ``tokens`` the block's own (tokens):
        :meth:`regen_s` of the one less :meth:`regen_s` of the other (:meth:`per_reference_s`).
        """
        return self.regen_s(upto, regime) - self.regen_s(upto - tokens, regime)

    def lone_memory_bound(self, tokens: np.ndarray) -> np.ndarray:
        """True where recomputing the prefix alone is memory-bound (the weights' read outlasts the compute).

        :func:`kvtier.formulas.roofline.bound` of the prefix's FLOPs against one read of the
        weights; False for no tokens.
        """
        tokens = np.asarray(tokens, dtype=float)
        side = roofline.bound(
            self.prefix_flops(tokens),
            self.weight_bytes,
            self.peak_flop_per_s,
            self.mfu,
            self.mem_bandwidth_bytes_per_s,
            self.mem_efficiency,
        )
        return (tokens > 0) & (side == roofline.BOUNDS[1])

    def fetch_s(
        self, blocks: np.ndarray, tokens: np.ndarray, bandwidth_bytes_per_s: float, latency_s: float
    ) -> np.ndarray:
        """Fetching each request's hit prefix over a link (s): :func:`kvtier.formulas.transfer.fetch_time_s`.

        The prefix's ``tokens x kv_bytes_per_token`` bytes cross the link once, in
        ``blocks x fetch_transfers`` transfers that each pay ``latency_s``.

        Parameters
        ----------
        blocks : array_like
            Blocks in each request's hit prefix.
        tokens : array_like
            Tokens in it (tokens).
        bandwidth_bytes_per_s : float
            The link's bandwidth, one direction (B/s).
        latency_s : float
            The link's latency per transfer (s).
        """
        blocks = np.asarray(blocks)
        t = transfer.fetch_time_s(
            np.asarray(tokens) * self.kv_bytes_per_token,
            bandwidth_bytes_per_s,
            latency_s,
            blocks * self.fetch_transfers,
            self.min_transfer_s,
            self.link_efficiency,
            self.link_overhead_s,
        )
        return np.where(blocks > 0, t, 0.0)  # a request with no hit fetches nothing


@dataclass(frozen=True)
class Saving:
    """What an LRU tier of one size saves on a trace, per second of the trace's traffic."""

    capacity_blocks: float
    hit_ratio_blocks: float
    hit_ratio_tokens: float
    hit_tokens_per_s: float
    hit_bytes_per_s: float
    in_batch_gpu_s_per_s: float
    lone_gpu_s_per_s: float
    lone_memory_bound_share: float
    """Of the requests with a hit, the share whose prefix recomputed alone is memory-bound."""


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
    """

    hit_tokens: float
    hit_blocks: float
    in_batch_s: float
    lone_s: float
    hit_requests: float
    memory_bound_requests: float
    per_request: tuple[np.ndarray, np.ndarray] | None = None


def hit_totals(reuse: Reuse | LruHistogram, rc: RegenCosts, capacity_blocks: float = math.inf) -> HitTotals:
    """:class:`HitTotals` of an LRU tier of ``capacity_blocks`` blocks on a measured trace (in memory or streamed)."""
    if isinstance(reuse, LruHistogram):
        return reuse.totals(capacity_blocks)
    blocks, tokens = reuse.hit_tokens(capacity_blocks)
    hit = tokens > 0
    return HitTotals(
        hit_tokens=float(tokens.sum()),
        hit_blocks=float(blocks.sum()),
        in_batch_s=float(rc.in_batch_s(tokens).sum()),
        lone_s=float(rc.lone_s(tokens).sum()),
        hit_requests=float(hit.sum()),
        memory_bound_requests=float(rc.lone_memory_bound(tokens)[hit].sum()),
        per_request=(blocks, tokens),
    )


def saving(reuse: Reuse | LruHistogram, rc: RegenCosts, capacity_blocks: float = math.inf) -> Saving:
    """Prefill work a tier of ``capacity_blocks`` avoids, per second of traffic, in both regimes.

    ``*_gpu_s_per_s`` is accelerator-seconds of recomputation avoided per second of the
    trace: the number of accelerators that recomputing the hits would keep busy.  ``reuse``
    is measured in memory (:class:`Reuse`) or streamed (:class:`LruHistogram`, with the
    same ``rc``).
    """
    tot = hit_totals(reuse, rc, capacity_blocks)
    duration = reuse.duration_s if isinstance(reuse, LruHistogram) else reuse.trace.duration_s
    # 0 s: no rate, but nothing is 0
    per_s = (1.0 / duration) if duration > 0 else (math.nan if tot.hit_tokens > 0 else 0.0)
    return Saving(
        capacity_blocks=float(capacity_blocks),
        hit_ratio_blocks=float(reuse.hit_ratio(capacity_blocks)),
        hit_ratio_tokens=float(reuse.hit_ratio(capacity_blocks, "tokens")),
        hit_tokens_per_s=tot.hit_tokens * per_s,
        hit_bytes_per_s=tot.hit_tokens * rc.kv_bytes_per_token * per_s,
        in_batch_gpu_s_per_s=tot.in_batch_s * per_s,
        lone_gpu_s_per_s=tot.lone_s * per_s,
        lone_memory_bound_share=tot.memory_bound_requests / tot.hit_requests if tot.hit_requests else 0.0,
    )


# ---------------------------------------------------------------------------
# the whole report, for the command line and the book
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class LinkSpec:
    """A link the hits could be fetched over: name, bandwidth (B/s, one direction), per-transfer latency (s)."""

    name: str
    bandwidth_bytes_per_s: float
    latency_s: float


def _stats(values: np.ndarray) -> dict[str, float]:
    out = percentiles(values)
    out["mean"] = float(np.mean(values)) if np.size(values) else math.nan
    return out


def _trace_parts(reuse: Reuse | LruHistogram) -> tuple[dict[str, Any], dict[str, Any]]:
    """The ``trace`` and ``blocks`` parts of :func:`report` (less the hit ratios), in memory or streamed."""
    if isinstance(reuse, LruHistogram):
        h = reuse
        duration = h.duration_s
        trace = {
            "name": h.name,
            "format": h.trace_format,
            "block_tokens": h.block_tokens,
            "requests": h.n_requests,
            "duration_s": duration,
            "requests_per_s": h.n_requests / duration if duration > 0 else math.nan,
            "input_tokens": counted_stats(*h.input_tokens),
            "output_tokens": counted_stats(*h.output_tokens),
        }
        return trace, {"references": h.n_refs, "unique": h.n_unique, "reuse_interval_s": counted_stats(*h.intervals)}
    t = reuse.trace
    duration = t.duration_s
    trace = {
        "name": t.name,
        "format": t.trace_format,
        "block_tokens": t.block_tokens,
        "requests": t.n_requests,
        "duration_s": duration,
        "requests_per_s": t.n_requests / duration if duration > 0 else math.nan,
        "input_tokens": _stats(t.input_tokens),
        "output_tokens": _stats(t.output_tokens),
    }
    return trace, {"references": t.n_refs, "unique": t.n_unique, "reuse_interval_s": _stats(reuse.reuse_interval_s)}


def report(
    reuse: Reuse | LruHistogram,
    rc: RegenCosts,
    links: Sequence[LinkSpec] = (),
    targets_pct: Sequence[float] = TARGETS_PCT,
) -> dict[str, Any]:
    """Everything the analysis says about one trace, in SI base units (a JSON-ready mapping).

    Parameters
    ----------
    reuse : Reuse or LruHistogram
        The measured trace: in memory, or streamed (:class:`LruStream` fed with the same
        ``rc``), which gives the same figures up to the order of floating-point sums.
    rc : RegenCosts
        The model and accelerator that price the hits.
    links : sequence of LinkSpec
        Links to fetch the hits over.
    targets_pct : sequence of float
        Shares of the achievable hit ratio to size the tier for (%).

    Returns
    -------
    dict
        ``trace`` (requests, duration, rate, length percentiles), ``blocks`` (references,
        unique blocks, infinite-cache hit ratios, reuse-interval percentiles), ``prefix``
        (the prefix property, checked), ``hit_count`` (how hits are counted, and what counting
        them the other way would change), ``block_bytes`` and ``tiers``: one entry per target
        and one for 100 %, each with its capacity, hit
        ratios, the prefill avoided per second in both regimes and, per link, the
        link-seconds per second its fetches take and how many times longer recomputing takes.
        The last tier is ``target_pct`` 100: the smallest LRU tier that hits every reference an
        infinite cache would (the largest stack distance plus one).
    """
    trace, blocks = _trace_parts(reuse)
    duration = trace["duration_s"]
    block_bytes = rc.kv_bytes_per_token * trace["block_tokens"]
    tiers = []
    for target in [*(x for x in targets_pct if x != 100), 100]:
        cap = float(reuse.capacity_for(target / 100))
        sv = saving(reuse, rc, cap)
        tot = hit_totals(reuse, rc, cap)
        hit_blocks, hit_tokens = tot.per_request if tot.per_request is not None else (tot.hit_blocks, tot.hit_tokens)
        per_link = []
        for link in links:
            fetch_s = rc.fetch_s(hit_blocks, hit_tokens, link.bandwidth_bytes_per_s, link.latency_s)
            fetch = float(fetch_s.sum()) / duration if duration > 0 else math.nan
            in_batch, lone, per = sv.in_batch_gpu_s_per_s, sv.lone_gpu_s_per_s, fetch
            if not duration > 0:  # a trace of 0 s has no rates, but its totals have a ratio; no hits: 0
                per = float(fetch_s.sum())
                fetch = math.nan if per else 0.0
                in_batch, lone = tot.in_batch_s, tot.lone_s
            per_link.append(
                {
                    "link": link.name,
                    "fetch_link_s_per_s": fetch,
                    "in_batch_over_fetch": in_batch / per if per else math.nan,
                    "lone_over_fetch": lone / per if per else math.nan,
                }
            )
        tiers.append(
            {
                "target_pct": target,
                "capacity_blocks": cap,
                "capacity_bytes": cap * block_bytes,
                **vars(sv),  # its capacity_blocks is cap, already in place
                "links": per_link,
            }
        )
    blocks["hit_ratio_infinite_blocks"] = float(reuse.hit_ratio())
    blocks["hit_ratio_infinite_tokens"] = float(reuse.hit_ratio(weighting="tokens"))
    return {
        "trace": trace,
        "blocks": {k: blocks[k] for k in ("references", "unique", *_HIT_KEYS, "reuse_interval_s")},
        "prefix": {
            "requests_with_a_hit_after_a_miss": reuse.requests_with_a_hit_after_a_miss,
            "requests_with_a_distance_that_falls": reuse.requests_with_a_distance_that_falls,
        },
        "hit_count": count_difference(reuse, [t["capacity_blocks"] for t in tiers]),
        "sample_rate": reuse.sample_rate if isinstance(reuse, LruHistogram) else 1.0,
        "block_bytes": block_bytes,
        "kv_bytes_per_token": rc.kv_bytes_per_token,
        "regen": vars(rc).copy(),
        "tiers": tiers,
    }


_HIT_KEYS = ("hit_ratio_infinite_blocks", "hit_ratio_infinite_tokens")


def count_difference(reuse: Reuse | LruHistogram, capacities: Sequence[float]) -> dict[str, Any]:
    """How the hits are counted, and the block hit ratio the other count gives at each capacity, less this one's.

    Returns
    -------
    dict
        ``count`` (:data:`HIT_COUNTS`), ``other`` (the other count), ``capacity_blocks`` and
        ``other_minus_this`` (fraction of references, one per capacity; all 0 where no stack
        distance falls along a prompt).
    """
    other = next(c for c in HIT_COUNTS if c != reuse.count)
    alt = reuse.recounted(other) if isinstance(reuse, Reuse) else reuse.other
    diff = [0.0 if alt is None else float(alt.hit_ratio(c)) - float(reuse.hit_ratio(c)) for c in capacities]
    return {
        "count": reuse.count,
        "other": other,
        "capacity_blocks": [float(c) for c in capacities],
        "other_minus_this": diff,
    }


# ---------------------------------------------------------------------------
# streaming: the LRU curve of a trace of any length in memory proportional to its distinct blocks
# ---------------------------------------------------------------------------


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


class StackDistanceStream:
    """Exact LRU stack distances of a reference stream fed in chunks, in memory proportional to its distinct blocks.

    The state is each block's last reference (8 B a distinct block).  For a reference ``t``
    whose block was last used at ``p``:

    - ``p`` inside the current chunk: the references between are all in the chunk, and
      :func:`stack_distances`'s identity applies to it;
    - ``p`` before the chunk: the distinct blocks used since ``p`` are the blocks whose last use
      before the chunk is after ``p`` and that the chunk has not touched before ``t``, plus
      the distinct blocks the chunk has touched before ``t``.
    """

    def __init__(self) -> None:
        self.last = np.full(1024, -1, dtype=np.int64)
        self.seen = np.empty(0, dtype=np.int64)  # the last uses of the blocks seen, sorted
        self.offset = 0

    def keep(self, kept: np.ndarray) -> None:
        """Forget every block whose ``kept`` is False; the others take dense ids ``0 ..`` in their order."""
        n = kept.size
        last = self.last[:n][kept]
        self.last = np.full(max(1024, last.size), -1, dtype=np.int64)
        self.last[: last.size] = last
        self.seen = np.sort(last[last >= 0])

    def feed(self, blocks: np.ndarray, local: np.ndarray | None = None) -> np.ndarray:
        """Stack distances of the next chunk of dense block ids (-1 for a first reference).

        ``local`` is :func:`previous_reference` of ``blocks``, if already computed (the compiled
        kernel finds it itself, in one pass over the state).
        """
        return self.feed_local(blocks, local)[0]

    def _grow(self, top: int) -> None:
        if top >= self.last.size:
            grown = np.full(max(2 * self.last.size, top + 1), -1, dtype=np.int64)
            grown[: self.last.size] = self.last
            self.last = grown

    def feed_local(self, blocks: np.ndarray, local: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`feed`, and :func:`previous_reference` of ``blocks`` with it: ``(distances, local)``.

        A Fenwick-tree sweep in O(k log k) for a chunk of k references (:func:`_sweep_py`), each
        block's previous use found in the same pass over the state (:func:`_last_uses_py`).
        """
        blocks = np.asarray(blocks, dtype=np.int64)
        k, a = blocks.size, self.offset
        if not k:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
        self._grow(int(blocks.max()))
        local = np.empty(k, dtype=np.int64)
        before = np.empty(k, dtype=np.int64)
        _last_uses_py(blocks, self.last, a, local, before)  # self.last becomes the chunk's last uses
        cross = np.flatnonzero(before >= 0)
        seen = self.seen
        at = np.searchsorted(seen, before[cross])  # each cross reference's previous use, in the sorted last uses
        rank = np.empty(cross.size, dtype=np.int64)
        rank[np.argsort(at, kind="stable")] = np.arange(cross.size)
        out = _sweep(local, cross, rank, seen.size - 1 - at)
        self._update_seen(at, local, a)
        self.offset += k
        return out, local

    def _update_seen(self, gone_at: np.ndarray, local: np.ndarray, a: int) -> None:
        """The sorted last uses: those of the blocks the chunk touched leave, the chunk's own (all later) come after."""
        is_last = np.ones(local.size, dtype=bool)
        is_last[local[local >= 0]] = False
        if gone_at.size:
            keep = np.ones(self.seen.size, dtype=bool)
            keep[gone_at] = False
            self.seen = self.seen[keep]
        self.seen = np.concatenate((self.seen, a + np.flatnonzero(is_last)))


SAMPLE_SPACE = 1 << 24
"""P of spatially hashed sampling: a block is kept when its hashed id modulo P is below ``rate x P``."""


def sample_threshold(rate: float) -> int:
    """``rate x P`` (:data:`SAMPLE_SPACE`), rounded, at least 1: the hashed ids kept are those below it."""
    if not 0 < rate <= 1:
        raise ValueError(f"sample rate must be in (0, 1], got {rate!r}")
    return max(1, round(rate * SAMPLE_SPACE))


def block_hash(ids: np.ndarray) -> np.ndarray:
    """Each (prefix-chained) id hashed into ``[0, P)`` (:data:`SAMPLE_SPACE`) by SplitMix64's finalizer."""
    return (_mix64(np.ascontiguousarray(ids, dtype=np.int64).view(np.uint64)) & np.uint64(SAMPLE_SPACE - 1)).astype(
        np.int64
    )


def _merge_counted(a: tuple[np.ndarray, np.ndarray], values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct values of ``a`` and ``values`` with their counts (``a`` as ``(sorted values, counts)``)."""
    if not values.size:
        return a
    v, c = np.unique(values, return_counts=True)
    if not a[0].size:
        return v, c
    allv, inv = np.unique(np.concatenate((a[0], v)), return_inverse=True)
    return allv, np.bincount(inv.reshape(-1), weights=np.concatenate((a[1], c))).astype(np.int64)


def _merge_pairs(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
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
        c = self.counts[key]
        upto = c.size if math.isinf(capacity_blocks) else min(max(int(math.ceil(capacity_blocks)), 0), c.size)
        return float(c[:upto].sum())

    def hit_ratio(self, capacity_blocks: float = math.inf, weighting: str = "blocks") -> float:
        """Hit ratio of an LRU tier of ``capacity_blocks`` blocks (fraction)."""
        if weighting not in ("blocks", "tokens"):
            raise ValueError(f"weighting must be 'blocks' or 'tokens', got {weighting!r}")
        if not self.total[weighting]:
            return 0.0
        ratio = self._upto(weighting, capacity_blocks) / self.total[weighting]
        # sampled, SHARDS_adj may take a hot block's share below 0 or above 1 at small capacities
        return min(max(ratio, 0.0), 1.0) if self.sample_rate < 1 else ratio

    def capacity_for(self, share: float, weighting: str = "blocks") -> int:
        """Smallest LRU capacity (blocks) reaching ``share`` of the infinite cache's hit ratio."""
        if not 0 < share <= 1:
            raise ValueError(f"share must be in (0, 1], got {share!r}")
        cum = np.cumsum(self.counts[weighting])
        if not cum.size or cum[-1] == 0:
            return 0
        return int(np.searchsorted(cum, share * cum[-1] * (1 - 1e-12), side="left")) + 1

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
        upto = (
            self.counts.size if math.isinf(capacity_blocks) else min(int(math.ceil(capacity_blocks)), self.counts.size)
        )
        return float(self.counts[:upto].sum()) / self.total if self.total else 0.0


def _add(hist: np.ndarray, at: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``hist`` with ``weights`` added at ``at`` (grown as needed)."""
    add = np.bincount(at, weights=weights)
    if add.size > hist.size:
        hist = np.r_[hist, np.zeros(add.size - hist.size)]
    hist[: add.size] += add
    return hist


@dataclass(frozen=True)
class Chunk:
    """Whole requests prepared for :meth:`LruStream.feed_chunk`, sampled or not (:func:`prepare_chunk`).

    Attributes
    ----------
    input_tokens, output_tokens, timestamps_s : ndarray
        Per request: prompt and output length (tokens), arrival (s).
    n_refs : int
        Block references of the requests before any sampling.
    all_tokens : float
        Prompt tokens those references carry before any sampling (tokens).
    ids, tokens, upto, request : ndarray
        Per reference kept: block id, its prompt tokens, the prompt's tokens through it, its request
        (0-based within the chunk).
    starts : ndarray of int
        Where each request's kept references begin, and their total at the end.
    hashes : ndarray of int64 or None
        :func:`block_hash` of each kept id when the chunk was sampled; None for an exact chunk.
    """

    input_tokens: np.ndarray
    output_tokens: np.ndarray
    timestamps_s: np.ndarray
    n_refs: int
    all_tokens: float
    ids: np.ndarray
    tokens: np.ndarray
    upto: np.ndarray
    request: np.ndarray
    starts: np.ndarray
    hashes: np.ndarray | None


def prepare_chunk(
    ids: np.ndarray,
    starts: np.ndarray,
    input_tokens: np.ndarray,
    block_tokens: int,
    output_tokens: np.ndarray | None = None,
    timestamps_s: np.ndarray | None = None,
    threshold: int | None = None,
) -> Chunk:
    """Whole requests as :meth:`LruStream.feed_chunk` takes them, kept only below ``threshold`` when given.

    Each reference's prompt tokens and the prompt's tokens through it; with ``threshold`` (of
    :func:`sample_threshold`) only the references whose :func:`block_hash` is below it, with
    their hashes.  Pure and picklable: a Dask worker can sample its file before sending it.
    Arguments as :meth:`LruStream.feed`.
    """
    starts = np.asarray(starts, dtype=np.int64)
    n_req = starts.size - 1
    per = np.diff(starts)
    inputs = np.asarray(input_tokens, dtype=np.int64)
    stamps = np.zeros(n_req) if timestamps_s is None else np.asarray(timestamps_s, dtype=float)
    outs = np.zeros(n_req, dtype=np.int64) if output_tokens is None else np.asarray(output_tokens, dtype=np.int64)
    ids = np.asarray(ids, dtype=np.int64)
    tok = _ref_tokens(block_tokens, inputs, starts).astype(float)
    request = np.repeat(np.arange(n_req, dtype=np.int64), per)
    upto = np.cumsum(tok)
    upto -= np.repeat(np.r_[0.0, upto][starts[:-1]], per)  # prompt tokens through each block
    n_refs, all_tokens = int(starts[-1]), float(tok.sum())
    h = None
    if threshold is not None:
        h = block_hash(ids)
        keep = h < threshold
        ids, tok, upto, request, h = ids[keep], tok[keep], upto[keep], request[keep], h[keep]
        starts = np.zeros(n_req + 1, dtype=np.int64)
        np.cumsum(np.bincount(request, minlength=n_req), out=starts[1:])
    return Chunk(inputs, outs, stamps, n_refs, all_tokens, ids, tok, upto, request, starts, h)


DISTINCT_TABLE = 1 << 24
"""Largest token count :func:`_distinct_counts` tabulates (16,777,216 tokens: a table of 16 MiB of flags)."""


def _distinct_counts(*arrays: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    """The distinct values of float arrays of token counts, and where each element sits among them.

    ``values[at[i]] == arrays[i]`` element by element, so that an elementwise cost evaluated once
    a distinct value and indexed gives, bit for bit, what it gives on the arrays themselves.  By a
    table of flags when the values are whole numbers from 0 to :data:`DISTINCT_TABLE`; otherwise
    the arrays stand for themselves (``values`` their concatenation).
    """
    joined = np.concatenate(arrays)
    sizes = np.cumsum([0, *(a.size for a in arrays)])
    whole = joined.astype(np.int64)
    if joined.size and whole.min() >= 0 and whole.max() <= DISTINCT_TABLE and (whole == joined).all():
        present = np.zeros(int(whole.max()) + 1, dtype=bool)
        present[whole] = True
        distinct = np.flatnonzero(present)
        rank = np.zeros(present.size, dtype=np.int64)
        rank[distinct] = np.arange(distinct.size)
        where = rank[whole]
        return distinct.astype(float), [where[sizes[i] : sizes[i + 1]] for i in range(len(arrays))]
    return joined, [np.arange(sizes[i], sizes[i + 1]) for i in range(len(arrays))]


@dataclass(frozen=True)
class ChunkReuse:
    """One chunk of an exact :class:`LruStream` as its observers see it: every reference, in trace order.

    Attributes
    ----------
    request : ndarray of int
        Each reference's request, 0-based within the chunk.
    starts : ndarray of int
        Where each request's references begin, and their total at the end.
    input_tokens : ndarray of int
        Each request's prompt length (tokens).
    tokens, upto : ndarray
        Each reference's prompt tokens, and the prompt's tokens through it (tokens).
    distance, hit_distance : ndarray of int
        Each reference's LRU stack distance (-1 for a block's first reference), and its hit
        distance (:func:`hit_distances`; -1 for a miss at any capacity).
    reused : ndarray of bool
        The references to a block seen before (a reuse, hit or not).
    at_s, from_s : ndarray
        When each reference comes, and when its block was referenced before (s; NaN for none).
    at_rank, from_rank : ndarray of int
        The same instants ranked among the trace's distinct instants (0, 1, ... in time order;
        -1 for none).
    """

    request: np.ndarray
    starts: np.ndarray
    input_tokens: np.ndarray
    tokens: np.ndarray
    upto: np.ndarray
    distance: np.ndarray
    hit_distance: np.ndarray
    reused: np.ndarray
    at_s: np.ndarray
    from_s: np.ndarray
    at_rank: np.ndarray
    from_rank: np.ndarray


class LruStream:
    """The LRU curve of a reference stream fed in chunks of whole requests, with the rest of the report, bounded.

    Holds the distinct ids (:class:`DenseIds`), each block's last use and its time
    (:class:`StackDistanceStream`), the histograms of hit distances (:class:`LruHistogram`) and
    the distinct reuse intervals and prompt and output lengths with their counts: about 50 B
    a distinct block, whatever the stream's length (the distinct intervals are at most the
    trace's duration in its unit of time).

    Parameters
    ----------
    count : str
        How hits are counted (:data:`HIT_COUNTS`).
    rc : RegenCosts, optional
        With it, what recomputing the hits costs in both regimes is counted too (:meth:`LruHistogram.totals`).
    sample_rate : float
        Below 1, spatially hashed sampling (SHARDS, Waldspurger et al., FAST'15): a block is
        replayed only when :func:`block_hash` of its id is below ``rate x P``, and its stack
        distance is scaled by ``1 / rate``.
    max_blocks : int, optional
        The fixed-size variant: at most this many sampled blocks are held; when more are seen
        the rate is lowered to the largest that keeps them under it, the blocks above the new
        threshold are forgotten and the counts so far scaled by the ratio of the rates.
    over_time : tuple, optional
        ``(capacity_blocks, every_requests, every_s)``: also the hit ratio at that capacity per
        group of requests (:func:`over_time`).
    observers : sequence of callable, optional
        Called with each chunk as a :class:`ChunkReuse` (an exact stream only): what a second
        pass tallies (:mod:`kvtier.formulas.replay`).  They add 8 B a distinct block, the rank
        of its last instant.
    """

    def __init__(
        self,
        count: str = DEFAULT_HIT_COUNT,
        rc: RegenCosts | None = None,
        sample_rate: float = 1.0,
        max_blocks: int | None = None,
        over_time: tuple[float, int | None, float | None] | None = None,
        observers: Sequence[Callable[[ChunkReuse], None]] = (),
    ) -> None:
        if count not in HIT_COUNTS:
            raise ValueError(f"count must be one of {HIT_COUNTS}, got {count!r}")
        self.count, self.rc, self.max_blocks, self.over_time = count, rc, max_blocks, over_time
        self.threshold = sample_threshold(sample_rate)
        self.sampled = self.threshold < SAMPLE_SPACE or max_blocks is not None
        if observers and self.sampled:
            raise ValueError("observers see every reference: they need an exact stream")
        self.observers = tuple(observers)
        self.instants = 0  # distinct instants seen (the observers' ranks)
        self.last_rank = np.full(1024 if observers else 0, -1, dtype=np.int64)
        self.dense, self.kernel = DenseIds(), StackDistanceStream()
        keys = ["blocks", "tokens"] + (
            ["in_batch_s", "lone_s", "hit_requests", "memory_bound_requests"] if rc is not None else []
        )
        self.counts = {k: np.zeros(0) for k in keys}
        self.other = np.zeros(0)
        self.total = {"blocks": 0.0, "tokens": 0.0}
        self.expected = {"blocks": 0.0, "tokens": 0.0}  # sampled: rate x what was read, at each chunk's rate
        self.n_refs = self.n_requests = self.falls = self.after_miss = self.sampled_refs = 0
        self.last_s = np.full(1024, np.nan)
        self.hashes = np.zeros(1024, dtype=np.int64)
        self.intervals = (np.zeros(0), np.zeros(0, dtype=np.int64))
        self.inputs = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
        self.outputs = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
        self.first_s = self.latest_s = math.nan
        self.series: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    def reset_counts(self) -> None:
        """Forget what was counted, keep the cache's state: what was fed so far becomes a warm-up."""
        self.counts = {k: np.zeros(0) for k in self.counts}
        self.other = np.zeros(0)
        self.total = {"blocks": 0.0, "tokens": 0.0}
        self.expected = {"blocks": 0.0, "tokens": 0.0}
        self.n_refs = self.n_requests = self.falls = self.after_miss = self.sampled_refs = 0
        self.intervals = (np.zeros(0), np.zeros(0, dtype=np.int64))
        self.inputs = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
        self.outputs = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
        self.first_s = self.latest_s = math.nan
        self.series = []

    def add(self, other: LruStream) -> None:
        """Add the counts of ``other``, a stream of another part of the trace (a time window): histograms add.

        The distinct blocks become the most either held (a lower bound on the union's).
        """
        for k in self.counts:
            self.counts[k] = _add(self.counts[k], np.arange(other.counts[k].size), other.counts[k])
        self.other = _add(self.other, np.arange(other.other.size), other.other)
        for k in self.total:
            self.total[k] += other.total[k]
            self.expected[k] += other.expected[k]
        self.n_refs += other.n_refs
        self.n_requests += other.n_requests
        self.falls += other.falls
        self.after_miss += other.after_miss
        self.sampled_refs += other.sampled_refs
        self.intervals = _merge_pairs(self.intervals, other.intervals)
        self.inputs = _merge_pairs(self.inputs, other.inputs)
        self.outputs = _merge_pairs(self.outputs, other.outputs)
        self.first_s = float(np.fmin(self.first_s, other.first_s))
        self.latest_s = float(np.fmax(self.latest_s, other.latest_s))
        self.unique_floor = max(getattr(self, "unique_floor", 0), len(self), len(other))

    @property
    def sample_rate(self) -> float:
        """The rate in force: the threshold over :data:`SAMPLE_SPACE`."""
        return self.threshold / SAMPLE_SPACE

    def __len__(self) -> int:
        """Distinct blocks held (sampled ones, when sampling)."""
        return len(self.dense)

    def _grow(self, top: int) -> None:
        if top >= self.last_s.size:
            size = max(2 * self.last_s.size, top + 1)
            self.last_s = np.r_[self.last_s, np.full(size - self.last_s.size, np.nan)]
            if self.sampled:  # the fixed-size variant needs each held block's hash
                self.hashes = np.r_[self.hashes, np.zeros(size - self.hashes.size, dtype=np.int64)]
            if self.observers:
                self.last_rank = np.r_[self.last_rank, np.full(size - self.last_rank.size, -1, dtype=np.int64)]

    def feed(
        self,
        ids: np.ndarray,
        starts: np.ndarray,
        input_tokens: np.ndarray,
        block_tokens: int,
        output_tokens: np.ndarray | None = None,
        timestamps_s: np.ndarray | None = None,
    ) -> None:
        """Add the next chunk of whole requests: :func:`prepare_chunk` then :meth:`feed_chunk`.

        Parameters
        ----------
        ids : ndarray of int64
            The chunk's block ids, prefix-chained (equal ids: equal prefix), requests one after another.
        starts : ndarray of int
            Where each request's ids begin in ``ids``, and the total at the end (``len = requests + 1``).
        input_tokens, output_tokens : ndarray of int
            Each request's prompt and output length (tokens).
        block_tokens : int
            Prompt tokens per block (tokens).
        timestamps_s : ndarray of float, optional
            Each request's arrival (s); without it every request arrives at 0 s.
        """
        threshold = self.threshold if self.sampled else None
        self.feed_chunk(prepare_chunk(ids, starts, input_tokens, block_tokens, output_tokens, timestamps_s, threshold))

    def feed_chunk(self, c: Chunk) -> None:
        """Add the next chunk of whole requests, prepared by :func:`prepare_chunk` (here or on another machine).

        A chunk sampled at a higher threshold than the stream's (the fixed-size variant lowers it as
        it goes) is sampled again here; an exact chunk fed to a sampled stream is sampled here.
        """
        n_req = c.input_tokens.size
        stamps, inputs = c.timestamps_s, c.input_tokens
        # each request's instant ranked among the distinct ones so far (stamps never go back)
        new = np.r_[not n_req or stamps[0] != self.latest_s, stamps[1:] != stamps[:-1]][:n_req]
        rank = self.instants - 1 + np.cumsum(new)
        self.instants += int(new.sum())
        if n_req:
            if math.isnan(self.first_s):
                self.first_s = float(stamps[0])
            self.latest_s = float(stamps[-1])
            self.inputs = _merge_counted(self.inputs, inputs)
            self.outputs = _merge_counted(self.outputs, c.output_tokens)
        first_request = self.n_requests
        self.n_requests += n_req
        self.n_refs += c.n_refs
        ids, tok, upto, request, starts = c.ids, c.tokens, c.upto, c.request, c.starts
        if self.sampled:
            self.expected["blocks"] += self.sample_rate * float(c.n_refs)
            self.expected["tokens"] += self.sample_rate * c.all_tokens
            h = block_hash(ids) if c.hashes is None else c.hashes
            keep = h < self.threshold
            ids, tok, upto, request, h = ids[keep], tok[keep], upto[keep], request[keep], h[keep]
            starts = np.zeros(n_req + 1, dtype=np.int64)
            np.cumsum(np.bincount(request, minlength=n_req), out=starts[1:])
            self.total["tokens"] += float(tok.sum())
            self.sampled_refs += int(ids.size)
        else:
            if c.hashes is not None:
                raise ValueError("a sampled chunk fed to an exact stream")
            self.total["tokens"] += c.all_tokens
        dense = self.dense.map(ids)
        if dense.size:
            self._grow(int(dense.max()))
        if self.sampled:
            self.hashes[dense] = h
        d, local = self.kernel.feed_local(dense)
        self.total["blocks"] += float(d.size)

        # the prefix property, on the stack distances themselves
        begin = np.zeros(d.size, dtype=bool)
        st = starts[:-1]
        begin[st[st < d.size]] = True
        at_request = np.cumsum(begin)
        fd = np.where(d < 0, np.inf, d.astype(float))
        self.falls += int(np.unique(at_request[np.r_[False, fd[1:] < fd[:-1]] & ~begin]).size)
        cached = d >= 0
        self.after_miss += int(np.unique(at_request[np.r_[False, cached[1:] & ~cached[:-1]] & ~begin]).size)

        # reuse intervals: each reference's time back to its block's previous use
        when = stamps[request]
        back = np.where(local >= 0, when[np.maximum(local, 0)], self.last_s[dense])
        self.intervals = _merge_counted(self.intervals, (when - back)[cached])
        is_last = np.ones(dense.size, dtype=bool)
        is_last[local[local >= 0]] = False
        e = hit_distances(d, starts, self.count)
        if self.observers:
            at_rank = rank[request]
            from_rank = np.where(local >= 0, at_rank[np.maximum(local, 0)], self.last_rank[dense])
            self.last_rank[dense[is_last]] = at_rank[is_last]
            view = ChunkReuse(
                request,
                starts,
                inputs,
                tok,
                upto,
                d,
                e,
                cached,
                when,
                np.where(cached, back, np.nan),
                at_rank,
                from_rank,
            )
            for observe in self.observers:
                observe(view)
        self.last_s[dense[is_last]] = when[is_last]

        other = hit_distances(d, starts, next(c for c in HIT_COUNTS if c != self.count))
        rate = self.sample_rate
        if self.sampled:
            e = np.where(e >= 0, np.floor(e / rate), -1).astype(np.int64)
            other = np.where(other >= 0, np.floor(other / rate), -1).astype(np.int64)
        hit = e >= 0
        self.other = _add(self.other, other[other >= 0], np.ones(int((other >= 0).sum())))
        self.counts["blocks"] = _add(self.counts["blocks"], e[hit], np.ones(int(hit.sum())))
        self.counts["tokens"] = _add(self.counts["tokens"], e[hit], tok[hit])
        if self.rc is not None:
            self._costs(e, tok, upto, request)
        if self.over_time is not None:
            cap, every_requests, every_s = self.over_time
            self.series.append(
                _over_time_counts(stamps, starts, hit & (e < cap), every_requests, every_s, first_request, self.first_s)
            )
        if self.max_blocks is not None and len(self.dense) > self.max_blocks:
            self._lower()

    def _costs(self, e: np.ndarray, tok: np.ndarray, upto: np.ndarray, request: np.ndarray) -> None:
        """Add what recomputing each reference's share of its request's hits costs, at its hit distance."""
        rc = self.rc
        assert rc is not None
        if self.count == "per-block" and not self.sampled:
            # a request's hits at a capacity are its references below it: their tokens in that order
            key = np.where(e < 0, np.iinfo(np.int64).max, e)
            order = np.lexsort((key, request))
            cum = np.cumsum(tok[order])
            first = np.r_[True, request[order][1:] != request[order][:-1]]
            cum -= np.repeat(np.r_[0.0, cum][np.flatnonzero(first)], np.diff(np.r_[np.flatnonzero(first), cum.size]))
            through = np.empty_like(cum)
            through[order] = cum
        else:
            through = upto  # up to the first miss the hits are the prompt's first blocks, in order
        before = through - tok
        hit = e >= 0
        at = e[hit]
        through, before, tok = through[hit], before[hit], tok[hit]
        # the prefixes' token counts repeat (whole blocks): each cost once a distinct count, where they are few
        values, (t_at, b_at) = _distinct_counts(through, before)
        for key, f in (("in_batch_s", rc.in_batch_s), ("lone_s", rc.lone_s)):
            fx = f(values)
            self.counts[key] = _add(self.counts[key], at, fx[t_at] - fx[b_at])
        bx = rc.lone_memory_bound(values).astype(float)
        self.counts["memory_bound_requests"] = _add(self.counts["memory_bound_requests"], at, bx[t_at] - bx[b_at])
        self.counts["hit_requests"] = _add(self.counts["hit_requests"], at, (before == 0).astype(float))

    def _lower(self) -> None:
        """Fixed-size sampling: lower the threshold so that at most ``max_blocks`` sampled blocks are held."""
        n = len(self.dense)
        held = self.hashes[:n]
        new = int(np.partition(held, self.max_blocks)[self.max_blocks])  # the (max + 1)-th smallest hash
        kept = held < new
        scale = new / self.threshold
        self.threshold = new
        self.dense.keep(kept)
        self.kernel.keep(kept)
        self.last_s = np.r_[self.last_s[:n][kept], np.full(1024, np.nan)]
        self.hashes = np.r_[held[kept], np.zeros(1024, dtype=np.int64)]
        for k in self.counts:
            self.counts[k] = self.counts[k] * scale
        self.other = self.other * scale
        self.total = {k: v * scale for k, v in self.total.items()}
        self.expected = {k: v * scale for k, v in self.expected.items()}

    def histogram(self, name: str, n_requests: int, trace_format: str, block_tokens: int = 0) -> LruHistogram:
        """The curve so far, labelled: ``name`` and ``trace_format`` as the reader gives them, ``n_requests`` read."""
        series = None
        if self.over_time is not None:
            starts = np.concatenate([x[0] for x in self.series]) if self.series else np.zeros(0)
            refs = np.concatenate([x[1] for x in self.series]) if self.series else np.zeros(0, dtype=np.int64)
            hits = np.concatenate([x[2] for x in self.series]) if self.series else np.zeros(0, dtype=np.int64)
            at, inv = np.unique(starts, return_inverse=True)
            refs = np.bincount(inv.reshape(-1), weights=refs, minlength=at.size)
            hits = np.bincount(inv.reshape(-1), weights=hits, minlength=at.size)
            with np.errstate(invalid="ignore", divide="ignore"):
                series = (at, refs.astype(np.int64), np.where(refs > 0, hits / np.maximum(refs, 1), np.nan))
        rate = self.sample_rate
        counts, total, other = dict(self.counts), dict(self.total), self.other
        if self.sampled:
            # SHARDS_adj (Waldspurger et al., FAST'15, section 4.3): the references a sample holds beyond, or short
            # of, rate x those read are hits or misses of its hottest blocks; the difference goes to distance 0
            for key in ("blocks", "tokens"):
                diff = self.expected[key] - self.total[key]
                counts[key] = _add(counts[key], np.zeros(1, dtype=np.int64), np.array([diff]))
                total[key] = self.expected[key]
            other = _add(
                other.copy(), np.zeros(1, dtype=np.int64), np.array([self.expected["blocks"] - self.total["blocks"]])
            )
        return LruHistogram(
            name,
            n_requests,
            self.n_refs,
            round(len(self.dense) / rate) if self.sampled else max(len(self.dense), getattr(self, "unique_floor", 0)),
            total,
            counts,
            self.falls,
            self.after_miss,
            trace_format,
            count=self.count,
            sample_rate=rate if self.sampled else 1.0,
            block_tokens=block_tokens,
            first_s=self.first_s,
            last_s=self.latest_s,
            intervals=self.intervals,
            input_tokens=self.inputs,
            output_tokens=self.outputs,
            other_counts=other,
            over_time=series,
            sampled_refs=self.sampled_refs,
            instants=self.instants,
        )


def histogram_of(
    trace: Trace,
    count: str = DEFAULT_HIT_COUNT,
    rc: RegenCosts | None = None,
    sample_rate: float = 1.0,
    max_blocks: int | None = None,
    chunk_refs: int = 1 << 20,
) -> LruHistogram:
    """A trace already in memory fed to :class:`LruStream` in chunks of whole requests (its ids as the hashed ids).

    For measuring the stream (sampled or not) against :class:`Reuse` on the same trace.
    """
    stream = LruStream(count, rc, sample_rate, max_blocks)
    n = trace.n_requests
    r = 0
    while r < n:
        end = int(np.searchsorted(trace.starts, trace.starts[r] + max(chunk_refs, len(stream) // 4), side="left"))
        end = min(max(end, r + 1), n)
        s = trace.starts[r : end + 1]
        stream.feed(
            trace.blocks[s[0] : s[-1]],
            s - s[0],
            trace.input_tokens[r:end],
            trace.block_tokens,
            trace.output_tokens[r:end],
            trace.timestamps_s[r:end],
        )
        r = end
    return stream.histogram(trace.name, n, trace.trace_format, trace.block_tokens)


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
