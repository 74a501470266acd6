"""The exact LRU curve of a reference stream fed in chunks, in memory proportional to its distinct blocks.

:class:`LruStream` takes whole requests chunk by chunk (:func:`prepare_chunk`: chained ids made dense,
sampled where asked), measures their stack distances (:class:`StackDistanceStream`), counts hits by
distance and what recomputing them costs, and gives an :class:`~kvtier.formulas.cache.curve.LruHistogram`;
observers see each chunk's distances (:class:`ChunkReuse`).  :func:`histogram_of` streams a trace in memory.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from kvtier.formulas.cache.curve import (
    MAX_EXACT_INTERVALS,
    LruHistogram,
    bin_intervals,
    merge_counted,
    merge_pairs,
    over_time_counts,
)
from kvtier.formulas.cache.distances import StackDistanceStream, hit_distances
from kvtier.formulas.cache.ids import DenseIds
from kvtier.formulas.cache.regen import RegenCosts
from kvtier.formulas.cache.sampling import SAMPLE_SPACE, block_hash, sample_threshold
from kvtier.formulas.cache.trace import DEFAULT_HIT_COUNT, HIT_COUNTS, Trace, ref_tokens


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
        Prompt tokens of the requests before any sampling, in a block or after the last full one (tokens).
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
    tok = ref_tokens(block_tokens, inputs, starts).astype(float)
    request = np.repeat(np.arange(n_req, dtype=np.int64), per)
    upto = np.cumsum(tok)
    upto -= np.repeat(np.r_[0.0, upto][starts[:-1]], per)  # prompt tokens through each block
    n_refs, all_tokens = int(starts[-1]), float(inputs.sum())  # every prompt token, in a block or not
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
    trace's duration in its unit of time, and past :data:`~kvtier.formulas.cache.curve.MAX_EXACT_INTERVALS`
    they are binned to 14 significant bits, :func:`~kvtier.formulas.cache.curve.bin_intervals`:
    fed at once or in chunks, the same values).

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
        pass tallies (:mod:`kvtier.formulas.cache.replay`).  They add 8 B a distinct block, the rank
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
            ["in_batch_s", "lone_s", "hit_requests", "memory_bound_requests", "fetch_copies"] if rc is not None else []
        )
        self.counts = {k: np.zeros(0) for k in keys}
        self.other = np.zeros(0)
        self.total = {"blocks": 0.0, "tokens": 0.0}
        self.expected = {"blocks": 0.0, "tokens": 0.0}  # sampled: rate x what was read, at each chunk's rate
        self.n_refs = self.n_requests = self.falls = self.after_miss = self.sampled_refs = 0
        self.last_s = np.full(1024, np.nan)
        self.hashes = np.zeros(1024, dtype=np.int64)
        self.intervals = (np.zeros(0), np.zeros(0, dtype=np.int64))
        self.binned = False  # the intervals binned (:meth:`_keep_intervals`)
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
        self.binned = False  # the intervals binned (:meth:`_keep_intervals`)
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
        self.binned = self.binned or other.binned
        self._keep_intervals(merge_pairs(self.intervals, other.intervals))
        self.inputs = merge_pairs(self.inputs, other.inputs)
        self.outputs = merge_pairs(self.outputs, other.outputs)
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

    def _keep_intervals(self, merged: tuple[np.ndarray, np.ndarray]) -> None:
        """Hold ``merged`` as the distinct intervals, binned once more than :data:`MAX_EXACT_INTERVALS` were held.

        Binning is idempotent and the distinct count only grows, so the intervals end binned
        exactly when the whole stream holds more than the bound: the same at once or in chunks.
        """
        if self.binned or merged[0].size > MAX_EXACT_INTERVALS:
            merged, self.binned = bin_intervals(*merged), True
        self.intervals = merged

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
            self.inputs = merge_counted(self.inputs, inputs)
            self.outputs = merge_counted(self.outputs, c.output_tokens)
        first_request = self.n_requests
        self.n_requests += n_req
        self.n_refs += c.n_refs
        ids, tok, upto, request, starts = c.ids, c.tokens, c.upto, c.request, c.starts
        if self.sampled:
            self.expected["blocks"] += self.sample_rate * float(c.n_refs)
            self.expected["tokens"] += self.sample_rate * c.all_tokens
            h = block_hash(ids) if c.hashes is None else c.hashes
            if self.max_blocks is not None:  # lowered before the chunk is replayed: never more than max_blocks held
                seen = np.union1d(self.hashes[: len(self.dense)], h[h < self.threshold])
                if seen.size > self.max_blocks:
                    self._lower(int(np.partition(seen, self.max_blocks)[self.max_blocks]))
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
        self._keep_intervals(merge_counted(self.intervals, (when - back)[cached]))
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
                over_time_counts(stamps, starts, hit & (e < cap), every_requests, every_s, first_request, self.first_s)
            )

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
        # the engine's blocks that fetching each request's hit prefix copies: ceil(prefix / engine block), which
        # telescopes over the request's hits; with no engine block, one a hit block
        if rc.fetch_block_tokens > 0:
            cx = rc.fetch_copies(values)
            self.counts["fetch_copies"] = _add(self.counts["fetch_copies"], at, cx[t_at] - cx[b_at])
        else:
            self.counts["fetch_copies"] = _add(self.counts["fetch_copies"], at, np.ones(at.size))
        bx = rc.lone_memory_bound(values).astype(float)
        self.counts["memory_bound_requests"] = _add(self.counts["memory_bound_requests"], at, bx[t_at] - bx[b_at])
        self.counts["hit_requests"] = _add(self.counts["hit_requests"], at, (before == 0).astype(float))

    def _lower(self, new: int) -> None:
        """Fixed-size sampling: lower the threshold to ``new`` (the (max + 1)-th smallest hash of the blocks held and
        about to be), forget the blocks at or above it and scale what was counted by the ratio of the rates."""
        n = len(self.dense)
        held = self.hashes[:n]
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
