"""A fleet of serving instances behind a router, each with its own LRU tier, against one pooled tier.

:func:`replay_fleet` sends each request of a trace to one of ``N`` instances by a routing policy
(:data:`ROUTINGS`) and replays every instance's own LRU tier of a fixed capacity, looked up block by block
and committed head first as :mod:`kvtier.formulas.cache.distances` replays one cache (or tail first, as
LiteHit commits: :data:`COMMITS`), so that an instance's hits are exactly those of the stack distances of
the requests routed to it (tests/formulas/cache/test_fleet.py holds it to that).  The pooled choice is
the same total capacity as one tier that every instance reads: one LRU of ``N x C`` blocks over the
whole trace.  :func:`request_ttft_s` times each request's first token from its hits: the hit prefix
fetched over a link, the rest prefilled alone.  :class:`FleetStream` gathers both choices' figures
chunk by chunk, so a trace of any length is one pass in bounded memory: the
replays are compiled (:mod:`kvtier.formulas.cache.fleet_loop`), with a Python oracle beside them
(:mod:`kvtier.formulas.cache.fleet_oracle`).

Hits are counted up to each request's first miss (the book's prefix rule).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from kvtier.formulas.cache.distances import hit_distances, stack_distances
from kvtier.formulas.cache.fleet_loop import FleetState
from kvtier.formulas.cache.ids import DenseIds, dense_ids
from kvtier.formulas.cache.regen import RegenCosts
from kvtier.formulas.cache.trace import Trace

ROUTINGS: tuple[str, ...] = ("random", "round-robin", "session", "prefix", "least-loaded")
"""How a request picks its instance.

``random``: uniformly, from a generator seeded with :attr:`Router.seed`.  ``round-robin``: request ``r``
to instance ``r mod N``.  ``session``: a request that extends an earlier prompt (it holds that prompt's last
full block, and no other prompt went on past it) goes where that prompt went, so a conversation
stays on one instance; any other request starts a session on the next instance in turn.  (Keyed on
the first block instead, every request of Mooncake's conversation trace would go to one instance:
they all open with the same block.)
``least-loaded``: the instance with the fewest requests in flight, ties taken in turn.  ``prefix``: the
instance holding the longest cached prefix of the prompt, unless the fleet is out of balance or the
best match is short, when it goes to the least-loaded instance (SGLang's cache-aware router's rule,
:class:`Router`)."""

COMMITS: tuple[str, ...] = ("head-first", "tail-first")
"""The order a prompt's blocks are touched in after its lookup: ``head-first`` in the prompt's order (the book's
LRU), ``tail-first`` from the last block to the first, so that a prompt's head is its most recently used
block and an eviction takes a leaf (LiteHit's commit)."""

STATE_FREE: tuple[str, ...] = ("random", "round-robin", "session")
"""Routings that never read the instances' caches or loads: the requests' split does not depend on capacity."""


@dataclass(frozen=True)
class Router:
    """The routing policy's thresholds (SGLang's cache-aware router, ``sgl-router`` ``router_args.py``).

    Attributes
    ----------
    balance_abs : float
        The fleet is out of balance when the busiest instance has more than this many requests in flight
        above the idlest one ...
    balance_rel : float
        ... and more than this many times as many (both must hold).
    cache_threshold : float
        Share of a prompt's blocks the best instance must hold as a prefix for ``prefix`` to route by cache.
    seed : int
        Seed of ``random``'s generator.
    """

    balance_abs: float = 64.0
    balance_rel: float = 1.5
    cache_threshold: float = 0.3
    seed: int = 0


@dataclass(frozen=True)
class FleetReplay:
    """Where each request of a trace went and what its instance's tier served it.

    Attributes
    ----------
    routing : str
        One of :data:`ROUTINGS`.
    capacity_blocks : float
        Each instance's tier (blocks).
    instance : ndarray of int
        The instance each request went to, ``0 .. instances - 1``.
    hit_blocks : ndarray of int
        Per request, the blocks of its prompt its instance's tier held, up to the first miss.
    instances : int
        Instances in the fleet.
    """

    routing: str
    capacity_blocks: float
    instance: np.ndarray
    hit_blocks: np.ndarray
    instances: int

    def per_instance(self, values: np.ndarray) -> np.ndarray:
        """``values`` (one per request) summed over each instance's requests, instance by instance."""
        return np.bincount(self.instance, weights=np.asarray(values, dtype=float), minlength=self.instances)


def check_fleet(instances: int, routing: str, capacity_blocks: float, commit: str) -> None:
    """Raise ValueError for fewer than one instance, an unknown routing or commit, or a capacity not in whole blocks."""
    if instances < 1:
        raise ValueError(f"instances must be 1 or more, got {instances}")
    if routing not in ROUTINGS:
        raise ValueError(f"routing must be one of {ROUTINGS}, got {routing!r}")
    if not (capacity_blocks >= 0 and (math.isinf(capacity_blocks) or float(capacity_blocks).is_integer())):
        raise ValueError(f"capacity_blocks must be a whole number of blocks, 0 or more, got {capacity_blocks}")
    if commit not in COMMITS:
        raise ValueError(f"commit must be one of {COMMITS}, got {commit!r}")


def fleet_state(
    instances: int, routing: str, capacity_blocks: float, router: Router = Router(), commit: str = "head-first"
) -> FleetState:
    """The compiled replay's state for a fleet of ``instances`` tiers of ``capacity_blocks`` (checked first)."""
    check_fleet(instances, routing, capacity_blocks, commit)
    return FleetState(
        instances,
        routing,
        capacity_blocks,
        router.balance_abs,
        router.balance_rel,
        router.cache_threshold,
        router.seed,
        commit,
    )


def busy_offsets(starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For every request ``r`` and hit count ``h`` from 0 to its blocks, ``r`` and ``h``, in the order of
    :meth:`FleetState.feed`'s ``busy_s`` (request by request: ``starts[r] + r + h``)."""
    per = np.diff(starts) + 1
    request = np.repeat(np.arange(per.size), per)
    hit = np.arange(int(per.sum())) - np.repeat(np.asarray(starts[:-1]) + np.arange(per.size), per)
    return request, hit


def replay_fleet(
    trace: Trace,
    instances: int,
    routing: str,
    capacity_blocks: float,
    busy_s: Callable[[int, int], float] | None = None,
    router: Router = Router(),
    commit: str = "head-first",
) -> FleetReplay:
    """Route every request of ``trace`` to one of ``instances`` instances and replay each one's LRU tier.

    One pass over the requests in arrival order, compiled (:class:`FleetState`).  An instance's tier
    holds ``capacity_blocks`` blocks; a request's blocks are looked up, its hits counted up to its first
    miss, then touched in ``commit``'s order.  A request counts as in flight on its instance from its
    arrival until ``busy_s(r, hit_blocks)`` seconds later (``least-loaded`` and ``prefix`` read it;
    without ``busy_s`` no request stays in flight and both take ties in turn).

    Parameters
    ----------
    trace : Trace
        The requests, prefix-chained block ids.
    instances : int
        Serving instances, 1 or more.
    routing : str
        One of :data:`ROUTINGS`.
    capacity_blocks : float
        Each instance's tier (whole blocks, 0 or more; ``math.inf`` for unbounded).
    busy_s : callable, optional
        ``(request index, hit blocks) -> seconds`` the request keeps its instance busy, asked for every
        request and every hit count it could have (:class:`FleetStream` tabulates it at once instead).
    router : Router
        ``prefix``'s thresholds and ``random``'s seed.
    commit : str
        One of :data:`COMMITS`: the order a prompt's blocks are touched in after its lookup.

    Raises
    ------
    ValueError
        For fewer than one instance, an unknown routing or a negative capacity.
    """
    state = fleet_state(instances, routing, capacity_blocks, router, commit)
    busy = None
    if busy_s is not None:
        busy = np.array([busy_s(int(r), int(h)) for r, h in zip(*busy_offsets(trace.starts), strict=True)])
    where, hits = state.feed(dense_ids(trace.blocks), trace.starts, trace.timestamps_s, busy)
    return FleetReplay(routing, float(capacity_blocks), where.astype(np.int64), hits, instances)


def pooled_hits(trace: Trace, capacity_blocks: float, distance: np.ndarray | None = None) -> np.ndarray:
    """Per request, the blocks one shared LRU tier of ``capacity_blocks`` holds, up to its first miss.

    Every instance reads and fills the same tier, so the fleet's routing does not change what it
    holds: the stack distances of the whole trace decide (``distance``, if already computed).  What
    :class:`FleetStream` replays as a fleet of one tier (head first), read off the distances instead.
    """
    d = stack_distances(trace.blocks) if distance is None else distance
    h = hit_distances(d, trace.starts, "prefix")
    hit = (h >= 0) & (h < capacity_blocks)
    return np.bincount(trace.request_of_ref[hit], minlength=trace.n_requests).astype(np.int64)


def hit_tokens(trace: Trace, hit_blocks: np.ndarray) -> np.ndarray:
    """The prompt tokens in each request's first ``hit_blocks`` blocks (tokens).

    ``min(hit_blocks x block_tokens, prompt)``: whole blocks, and the prompt's own length when its
    last, partial block is among them.
    """
    return np.minimum(np.asarray(hit_blocks) * float(trace.block_tokens), trace.input_tokens.astype(float))


def request_ttft_s(
    rc: RegenCosts,
    prompt_tokens: np.ndarray,
    hit_blocks: np.ndarray,
    hit_tokens_: np.ndarray,
    bandwidth_bytes_per_s: float,
    latency_s: float,
) -> np.ndarray:
    """Each request's time to first token with its hit prefix fetched over a link (s).

    The prefix fetched (:meth:`RegenCosts.fetch_s`: bytes over the link, a latency per transfer), then
    the rest of the prompt prefilled as a pass of its own (:meth:`RegenCosts.rest_wall_s`, ``lone``),
    one after the other; queueing for the instance is not counted.
    """
    fetch = rc.fetch_s(hit_blocks, hit_tokens_, bandwidth_bytes_per_s, latency_s)
    return fetch + rc.rest_wall_s(prompt_tokens, hit_tokens_, "lone")


def imbalance(per_instance: np.ndarray) -> float:
    """The busiest instance's share over the mean's (1 for a perfectly even split; ``nan`` for nothing)."""
    per = np.asarray(per_instance, dtype=float)
    mean = per.mean() if per.size else 0.0
    return float(per.max() / mean) if mean > 0 else math.nan


@dataclass(frozen=True)
class Link:
    """A link a tier's hits are fetched over: its name, bandwidth one direction (B/s) and latency per transfer (s)."""

    name: str
    bandwidth_bytes_per_s: float
    latency_s: float


class FleetStream:
    """:meth:`report`'s figures gathered chunk by chunk: a trace of any length in one pass.

    Each chunk of whole requests (:meth:`feed`) is replayed through the fleet (``instances`` tiers of
    ``capacity_blocks``, routed by ``routing``) and through one pooled tier of ``instances x capacity_blocks``
    blocks, both compiled (:class:`FleetState`); the chunk's figures are then summed in, and each request's
    three times to first token kept for the percentiles (24 B a request).  Besides the tiers it holds the
    distinct blocks' dense ids (:class:`~kvtier.formulas.cache.ids.DenseIds`, 16 B a distinct block) and, for
    ``session`` routing, 5 B a distinct block.  A request stays in flight on its instance for its time to
    first token with the per-node tier plus its output tokens times ``decode_s_per_token`` (what ``prefix``
    and ``least-loaded`` count), tabulated per chunk for every hit count it could have.
    """

    def __init__(
        self,
        rc: RegenCosts,
        instances: int,
        routing: str,
        capacity_blocks: float,
        node: Link,
        pool: Link,
        decode_s_per_token: float,
        block_tokens: int,
        router: Router = Router(),
        commit: str = "head-first",
    ) -> None:
        self.rc, self.node, self.pool, self.decode_s = rc, node, pool, float(decode_s_per_token)
        self.block_tokens = int(block_tokens)
        self.instances, self.routing, self.capacity_blocks = instances, routing, float(capacity_blocks)
        self.fleet = fleet_state(instances, routing, capacity_blocks, router, commit)
        self.pooled = fleet_state(1, "round-robin", instances * capacity_blocks, router, commit)
        self.ids = DenseIds()
        self.per = {k: np.zeros(instances) for k in ("requests", "hit", "prompt", "prefill")}
        self.sums = {c: {"hit_blocks": 0.0, "hit_tokens": 0.0, "avoided_batch_s": 0.0, "fetch_s": 0.0} for c in "np"}
        self.ttft: dict[str, list[np.ndarray]] = {"node": [], "pooled": [], "none": []}
        self.refs = 0
        self.prompt_tokens = 0
        self.first_s = self.last_s = math.nan

    def _ttft(self, link: Link, prompt: np.ndarray, hit_blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Tokens hit, and time to first token of ``prompt``-token prompts with ``hit_blocks`` fetched over ``link``."""
        tokens = np.minimum(hit_blocks * float(self.block_tokens), prompt)
        return tokens, request_ttft_s(self.rc, prompt, hit_blocks, tokens, link.bandwidth_bytes_per_s, link.latency_s)

    def feed(
        self,
        blocks: np.ndarray,
        starts: np.ndarray,
        input_tokens: np.ndarray,
        output_tokens: np.ndarray,
        timestamps_s: np.ndarray,
        dense: bool = False,
    ) -> None:
        """Replay the next whole requests: their references ``blocks`` (chained ids; dense ids below 2**31 with
        ``dense``), ``starts``, prompt and output tokens, and arrival times (s), after every request fed before."""
        if not input_tokens.size:
            return
        ids = np.asarray(blocks) if dense else self.ids.map(np.asarray(blocks, dtype=np.int64))
        prompt = np.asarray(input_tokens, dtype=float)
        busy = None
        if self.routing in ("prefix", "least-loaded"):
            r, h = busy_offsets(starts)
            busy = self._ttft(self.node, prompt[r], h)[1] + np.asarray(output_tokens, dtype=float)[r] * self.decode_s
        where, node_blocks = self.fleet.feed(ids, starts, timestamps_s, busy)
        pool_blocks = self.pooled.feed(ids, starts, timestamps_s)[1]
        node_tokens, node_t = self._ttft(self.node, prompt, node_blocks)
        pool_tokens, pool_t = self._ttft(self.pool, prompt, pool_blocks)
        prefill = self.rc.rest_wall_s(prompt, node_tokens, "lone")
        n = self.instances
        each = {"requests": np.ones(prompt.size), "hit": node_tokens, "prompt": prompt, "prefill": prefill}
        for key, values in each.items():
            self.per[key] += np.bincount(where, weights=values, minlength=n)
        for c, link, hb, tokens in (
            ("n", self.node, node_blocks, node_tokens),
            ("p", self.pool, pool_blocks, pool_tokens),
        ):
            got = self.sums[c]
            got["hit_blocks"] += float(np.sum(hb))
            got["hit_tokens"] += float(tokens.sum())
            got["avoided_batch_s"] += float(self.rc.regen_s(tokens, "batch").sum())
            got["fetch_s"] += float(self.rc.fetch_s(hb, tokens, link.bandwidth_bytes_per_s, link.latency_s).sum())
        self.ttft["node"].append(node_t)
        self.ttft["pooled"].append(pool_t)
        self.ttft["none"].append(self.rc.rest_wall_s(prompt, np.zeros_like(prompt), "lone"))
        self.refs += int(np.asarray(blocks).size)
        self.prompt_tokens += int(np.sum(input_tokens))
        stamps = np.asarray(timestamps_s, dtype=float)
        self.first_s = float(stamps[0]) if math.isnan(self.first_s) else self.first_s
        self.last_s = float(stamps[-1])

    def _choice(self, c: str, link: Link, ttft: np.ndarray) -> dict[str, Any]:
        got, total = self.sums[c], self.prompt_tokens
        return {
            "link": link.name,
            "hit_ratio_tokens": got["hit_tokens"] / total if total else math.nan,
            "hit_ratio_blocks": got["hit_blocks"] / self.refs if self.refs else math.nan,
            **_ttft(ttft),
            "hit_tokens": got["hit_tokens"],
            "avoided_batch_s": got["avoided_batch_s"],
            "fetch_s": got["fetch_s"],
            "read_bytes": got["hit_tokens"] * self.rc.tier_bytes_per_token,
        }

    def report(self) -> dict[str, Any]:
        """Both choices' figures over every request fed.

        The per-node choice: each instance's own tier, its hits fetched over ``node``.  The pooled choice:
        one tier of ``instances x capacity_blocks`` blocks that every instance reads, its hits fetched over
        ``pool``; routing does not change what it holds.  Per request, time to first token as
        :func:`request_ttft_s` gives it.

        Returns
        -------
        dict
            ``per_instance`` (``requests``, ``hit_ratio_tokens``, ``prefill_s``: lists, one per instance),
            ``node`` and ``pooled`` (hit ratios, TTFT mean and 90th percentile, the link, and in all the tokens
            hit, the prefill they avoid inside a batch, the accelerator time fetching them and the bytes the
            tier reads for them, ``rc.tier_bytes_per_token`` a token), ``none`` (TTFT without a tier),
            ``requests_imbalance`` and ``prefill_imbalance`` (busiest over mean), ``duration_s`` (first to last
            arrival), ``prompt_tokens``; SI units.
        """
        t = {k: np.concatenate(v) if v else np.empty(0) for k, v in self.ttft.items()}
        per = self.per
        return {
            "instances": self.instances,
            "routing": self.routing,
            "capacity_blocks": self.capacity_blocks,
            "per_instance": {
                "requests": per["requests"].astype(int).tolist(),
                "hit_ratio_tokens": (per["hit"] / np.where(per["prompt"] > 0, per["prompt"], np.nan)).tolist(),
                "prefill_s": per["prefill"].tolist(),
            },
            "requests_imbalance": imbalance(per["requests"]),
            "prefill_imbalance": imbalance(per["prefill"]),
            "node": self._choice("n", self.node, t["node"]),
            "pooled": {
                "capacity_blocks": float(self.instances * self.capacity_blocks),
                **self._choice("p", self.pool, t["pooled"]),
            },
            "none": _ttft(t["none"]),
            "duration_s": 0.0 if math.isnan(self.first_s) else self.last_s - self.first_s,
            "prompt_tokens": self.prompt_tokens,
        }


def _ttft(values: np.ndarray) -> dict[str, float]:
    return {
        "ttft_mean_s": float(values.mean()) if values.size else math.nan,
        "ttft_p90_s": float(np.percentile(values, 90)) if values.size else math.nan,
    }
