"""What a second pass over a trace tallies, chunk by chunk, in memory bounded by its distinct blocks.

An exact :class:`~kvtier.formulas.cache.stream.LruStream` measures the curve in one pass; the cost
of serving the trace's reuses needs each reuse's interval and recompute cost, and an LRU
tier's fetches need each request's hit prefix at the tier's capacity, known only once the
curve is.  Observers of a stream (:class:`~kvtier.formulas.cache.stream.ChunkReuse`) add them up:

- :class:`MixObserver` feeds a :class:`~kvtier.formulas.economics.MixTally` (the
  perfect-knowledge mix of :func:`kvtier.formulas.tiering.trace_mix`) with each reuse's
  interval, recompute cost and instants;
- :class:`HitPrefixes` counts, per capacity, the requests by their prompt and hit prefix
  (blocks and tokens): the few distinct triples a :class:`~kvtier.formulas.lru_tier.LruTraffic`
  and the time to first token (:func:`kvtier.formulas.ttft.ttft_counted`) need;
- :class:`DistanceTally` keeps the histogram of the raw stack distances, with what recomputing
  the reuses at each costs: what :func:`kvtier.formulas.cache.hierarchy.replay_counts` replays a
  hierarchy from;
- :class:`WindowTally` keeps the hit-distance histogram of the trace cut into time windows, each
  cache emptied before its warm-up: what replaying each window on its own
  (:func:`kvtier.inputs.distributed.windowed`) counts, without replaying it.

Each gives what the in-memory path gives on the whole trace: counts exactly, sums of seconds
and dollars to about 1e-12 of their value (the same terms added in another order).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from kvtier.formulas.cache.curve import hits_below
from kvtier.formulas.cache.distances import hit_distances
from kvtier.formulas.cache.regen import RegenCosts
from kvtier.formulas.cache.stream import ChunkReuse
from kvtier.formulas.economics import MixTally


class MixObserver:
    """Feeds each reuse of a chunk to tallies of one model's recompute cost: one per regime and ladder.

    Parameters
    ----------
    rc : RegenCosts
        The model's recompute cost (:meth:`~kvtier.formulas.cache.regen.RegenCosts.share_s` of each reuse).
    accelerator_usd_per_s : float
        The accelerator's price (USD/s): a recomputation costs its time.
    tallies : dict
        ``{regime: [MixTally, ...]}``: the tallies that price a reuse's recomputation in ``regime``.
    """

    def __init__(self, rc: RegenCosts, accelerator_usd_per_s: float, tallies: dict[str, Sequence[MixTally]]) -> None:
        self.rc, self.accel, self.tallies = rc, float(accelerator_usd_per_s), tallies

    def __call__(self, c: ChunkReuse) -> None:
        """Add the chunk's reuses (references to a block seen before) to every tally."""
        r = c.reused
        dt = (c.at_s - c.from_s)[r]
        for regime, tallies in self.tallies.items():
            usd = self.rc.share_s(c.upto[r], c.tokens[r], regime) * self.accel
            for tally in tallies:
                tally.add(dt, usd, c.from_rank[r], c.at_rank[r])


class HitPrefixes:
    """Per LRU capacity, the requests counted by their prompt and hit prefix: ``(blocks, tokens, prompt) -> requests``.

    A request hits the references whose hit distance is below the capacity; what it fetches
    depends on how many blocks and tokens those are, and its time to first token on its prompt
    too: triples that repeat (whole blocks, prompt lengths), so the counts stay few whatever the
    trace's length.

    Parameters
    ----------
    capacities_blocks : sequence of float
        The capacities (blocks) to count at.
    prefix : bool
        Count each request's hits up to its first miss, as serving engines match a prompt
        (:func:`kvtier.formulas.ttft.prefix_hit_refs`), whatever the stream counts; by default
        as the stream counts them (its hit distances).
    """

    def __init__(self, capacities_blocks: Sequence[float], prefix: bool = False) -> None:
        self.capacities = tuple(float(c) for c in capacities_blocks)
        self.prefix = prefix
        self.seen: dict[float, dict[tuple[float, float, float], int]] = {c: {} for c in self.capacities}
        self._rows: dict[float, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = {}

    def __call__(self, c: ChunkReuse) -> None:
        """Count the chunk's requests by their prompt and hit prefix at each capacity."""
        self._rows.clear()
        n = c.input_tokens.size
        if not n:
            return
        e = hit_distances(c.distance, c.starts, "prefix") if self.prefix else c.hit_distance
        prompt = c.input_tokens.astype(float)
        for cap in self.capacities:
            hit = (e >= 0) & (e < cap)
            blocks = np.bincount(c.request, weights=hit, minlength=n)
            tokens = np.bincount(c.request, weights=hit * c.tokens, minlength=n)
            # the distinct (blocks, tokens, prompt) triples and their requests: sorted, then cut where one changes
            order = np.lexsort((prompt, tokens, blocks))
            b, t, p = blocks[order], tokens[order], prompt[order]
            first = np.flatnonzero(np.r_[True, (b[1:] != b[:-1]) | (t[1:] != t[:-1]) | (p[1:] != p[:-1])])
            counts = np.diff(np.r_[first, n])
            seen = self.seen[cap]
            keys = zip(b[first].tolist(), t[first].tolist(), p[first].tolist(), strict=True)
            for key, k in zip(keys, counts.tolist(), strict=True):
                seen[key] = seen.get(key, 0) + k

    @classmethod
    def joined(cls, parts: Sequence[HitPrefixes]) -> HitPrefixes:
        """One tally of every capacity of ``parts`` (each counted alike: all by the stream's hits, or all by prefix)."""
        prefix = {p.prefix for p in parts}
        if len(prefix) > 1:
            raise ValueError("cannot join tallies counted by prefix with tallies counted by the stream's hits")
        out = cls(sorted({c for p in parts for c in p.capacities}), prefix.pop() if prefix else False)
        for p in parts:
            out.seen.update(p.seen)
        return out

    def by_prompt(self, capacity_blocks: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """At ``capacity_blocks``: each distinct hit prefix (blocks, tokens) and prompt (tokens), and its requests.

        Sorted by blocks, then tokens, then prompt; kept until the tally is fed again.
        """
        cap = float(capacity_blocks)
        if cap not in self._rows:
            rows = sorted(self.seen[cap].items())
            cols = np.array([[*k, v] for k, v in rows], dtype=float).reshape(-1, 4).T
            self._rows[cap] = (cols[0], cols[1], cols[2], cols[3])
        return tuple(col.copy() for col in self._rows[cap])  # type: ignore[return-value]

    def at(self, capacity_blocks: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """At ``capacity_blocks``: each distinct hit prefix, blocks and tokens in order, and its requests."""
        blocks, tokens, _, requests = self.by_prompt(capacity_blocks)
        keys, where = np.unique(np.stack([blocks, tokens]), axis=1, return_inverse=True)
        return keys[0], keys[1], np.bincount(where.reshape(-1), weights=requests, minlength=keys.shape[1])


class DistanceTally:
    """The references at each LRU stack distance, and the seconds recomputing them takes, as the trace streams past.

    A histogram as long as the largest distance, at most the trace's distinct blocks.

    Parameters
    ----------
    rc : RegenCosts
        The model's recompute cost.
    regime : str
        The regime the recomputation is priced in (``batch`` or ``lone``).
    blocks : int
        The trace's distinct blocks, where known (a first pass's): the histogram is allocated once.
    """

    def __init__(self, rc: RegenCosts, regime: str, blocks: int = 0) -> None:
        self.rc, self.regime = rc, regime
        self.counts = np.zeros(int(blocks), dtype=np.int64)
        self.seconds = np.zeros(int(blocks))
        self.first_refs = 0

    def __call__(self, c: ChunkReuse) -> None:
        """Add the chunk's references: each reuse at its stack distance, each first reference counted."""
        r = c.distance >= 0
        self.first_refs += int(np.count_nonzero(~r))
        d = c.distance[r]
        top = int(d.max(initial=-1)) + 1
        if top > self.counts.size:
            self.counts = np.r_[self.counts, np.zeros(top - self.counts.size, dtype=np.int64)]
            self.seconds = np.r_[self.seconds, np.zeros(top - self.seconds.size)]
        at, where = np.unique(d, return_inverse=True)  # the chunk's distances: a few of the histogram's
        where = where.reshape(-1)
        self.counts[at] += np.bincount(where, minlength=at.size)
        self.seconds[at] += np.bincount(
            where, weights=self.rc.share_s(c.upto[r], c.tokens[r], self.regime), minlength=at.size
        )

    def seconds_beyond(self, distance: int) -> float:
        """Seconds recomputing the reuses at ``distance`` or more takes (s): those no tier that ends there serves."""
        return float(np.sum(self.seconds[max(int(distance), 0) :]))


class WindowTally:
    """The trace's LRU curve when each time window is replayed on its own after a warm-up, from the whole stream.

    Window ``k`` covers ``[t0 + k W, t0 + (k + 1) W)``; its cache starts empty at ``t0 + k W - U`` (the
    warm-up ``U``) and counts the references inside the window.  A reference's stack distance in that
    replay is its distance in the whole trace when the block was referenced since the warm-up began
    (every block referenced in between was too), and a first reference otherwise.  So the windows'
    summed histogram is the whole stream's hit distances (:func:`hit_distances`, ``count``) with each
    reference to a block last referenced before its window's warm-up made a first reference: what
    :func:`kvtier.inputs.distributed.windowed` counts, reference for reference.

    Parameters
    ----------
    first_s : float
        When the trace's first request comes (s): the first window's start.
    window_s, warmup_s : float
        The window and the warm-up before it (s).
    count : str
        How a request's hits are counted (:data:`kvtier.formulas.cache.distances.HIT_COUNTS`).
    """

    def __init__(self, first_s: float, window_s: float, warmup_s: float, count: str) -> None:
        self.t0, self.window_s, self.warmup_s, self.count = float(first_s), float(window_s), float(warmup_s), count
        self.counts = np.zeros(0, dtype=np.int64)
        self.total = 0

    def __call__(self, c: ChunkReuse) -> None:
        """Add the chunk's references at their windowed hit distances."""
        k = np.floor((c.at_s - self.t0) / self.window_s)
        begin = self.t0 + k * self.window_s  # the window start at or before each reference, as the replay sets it
        k -= begin > c.at_s
        k += self.t0 + (k + 1) * self.window_s <= c.at_s
        begin = self.t0 + k * self.window_s
        inside = c.from_s >= begin - self.warmup_s  # NaN (a first reference) compares False
        e = hit_distances(np.where(inside, c.distance, -1), c.starts, self.count)
        found = np.bincount(e[e >= 0])
        if found.size > self.counts.size:
            self.counts = np.pad(self.counts, (0, found.size - self.counts.size))
        self.counts[: found.size] += found
        self.total += int(e.size)

    def hit_ratio(self, capacity_blocks: float = math.inf, weighting: str = "blocks") -> float:
        """Hit ratio of an LRU cache of ``capacity_blocks`` blocks over the windows (fraction of references).

        Only ``weighting="blocks"`` (each reference counts one).
        """
        if weighting != "blocks":
            raise ValueError("the windows are tallied by references: weighting must be 'blocks'")
        return hits_below(self.counts.astype(float), capacity_blocks) / self.total if self.total else 0.0
