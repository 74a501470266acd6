"""A fleet of serving instances behind a router, each with its own LRU tier, against one pooled tier.

:func:`replay_fleet` sends each request of a trace to one of ``N`` instances by a routing policy
(:data:`ROUTINGS`) and replays every instance's own LRU tier of a fixed capacity, head first and looked
up block by block as :mod:`kvtier.formulas.cache.distances` replays one cache (or tail first, as
LiteHit commits: :data:`COMMITS`), so that an instance's
hits are exactly those of the stack distances of the requests routed to it (tests/formulas/cache/
test_fleet.py holds it to that).  :func:`pooled_hits` is the same total capacity as one tier that every
instance reads: one LRU of ``N x C`` blocks over the whole trace.  :func:`request_ttft_s` times each
request's first token from its hits: the hit prefix fetched over a link, the rest prefilled alone.

Hits are counted up to each request's first miss (the book's prefix rule).
"""

from __future__ import annotations

import heapq
import math
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from kvtier.formulas.cache.distances import hit_distances, stack_distances
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
"""The order a prompt's blocks are touched in after its lookup (:meth:`_Lru.access`)."""

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


class _Lru:
    """One instance's LRU tier of ``capacity`` blocks (``math.inf``: unbounded), looked up head first."""

    def __init__(self, capacity: float) -> None:
        self.capacity = capacity
        self.blocks: OrderedDict[int, None] = OrderedDict()

    def cached_prefix(self, ids: np.ndarray) -> int:
        """How many of ``ids``, from the first, are all held now (nothing is touched)."""
        n = 0
        for b in ids:
            if b not in self.blocks:
                break
            n += 1
        return n

    def access(self, ids: np.ndarray, commit: str = "head-first") -> int:
        """Serve a prompt of ``ids``: its hits up to the first miss (blocks), then its blocks touched.

        Before the first miss only hits are touched, which change no block's membership, so the hits are
        the prompt's leading blocks held now whatever the order.  ``head-first`` touches the blocks in the
        prompt's order, a miss inserted and the least recently used evicted as it comes (the book's LRU);
        ``tail-first`` touches them from the last to the first, so that a prompt's head is its most
        recently used block and an eviction takes a leaf (LiteHit's commit).
        """
        prefix = self.cached_prefix(ids)
        held, cap = self.blocks, self.capacity
        for b in ids if commit == "head-first" else ids[::-1]:
            b = int(b)
            if b in held:
                held.move_to_end(b)
            elif cap >= 1:
                held[b] = None
                if len(held) > cap:
                    held.popitem(last=False)
        return prefix


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


def _least(load: list[int], turn: int) -> int:
    """The instance with the fewest requests in flight; among ties, the first at or after ``turn``."""
    n, low = len(load), min(load)
    for k in range(n):
        i = (turn + k) % n
        if load[i] == low:
            return i
    raise AssertionError("unreachable")


def _session(ids: np.ndarray, owner: dict[int, int], branched: set[int]) -> int:
    """The instance of the session ``ids`` continues, or -1 for a new session.

    A request continues the prompt whose last full block is the deepest of its blocks that closed a
    prompt, unless another prompt had already gone on past that block: then it is a shared prefix
    (a system prompt) and the request opens a new session.
    """
    for b in ids[::-1]:
        b = int(b)
        if b in owner:
            return -1 if b in branched else owner[b]
    return -1


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

    One pass over the requests in arrival order.  An instance's tier holds ``capacity_blocks``
    blocks; a request's blocks are looked up and touched head first, and its hits counted up to its
    first miss.  A request counts as in flight on its instance from its arrival until ``busy_s(r,
    hit_blocks)`` seconds later (``least-loaded`` and ``prefix`` read it; without ``busy_s`` no
    request stays in flight and both take ties in turn).

    Parameters
    ----------
    trace : Trace
        The requests, prefix-chained dense block ids.
    instances : int
        Serving instances, 1 or more.
    routing : str
        One of :data:`ROUTINGS`.
    capacity_blocks : float
        Each instance's tier (whole blocks, 0 or more; ``math.inf`` for unbounded).
    busy_s : callable, optional
        ``(request index, hit blocks) -> seconds`` the request keeps its instance busy.
    router : Router
        ``prefix``'s thresholds and ``random``'s seed.
    commit : str
        One of :data:`COMMITS`: the order a prompt's blocks are touched in after its lookup.

    Raises
    ------
    ValueError
        For fewer than one instance, an unknown routing or a negative capacity.
    """
    if instances < 1:
        raise ValueError(f"instances must be 1 or more, got {instances}")
    if routing not in ROUTINGS:
        raise ValueError(f"routing must be one of {ROUTINGS}, got {routing!r}")
    if not (capacity_blocks >= 0 and (math.isinf(capacity_blocks) or float(capacity_blocks).is_integer())):
        raise ValueError(f"capacity_blocks must be a whole number of blocks, 0 or more, got {capacity_blocks}")
    if commit not in COMMITS:
        raise ValueError(f"commit must be one of {COMMITS}, got {commit!r}")
    n_req, starts, blocks = trace.n_requests, trace.starts, trace.blocks
    tiers = [_Lru(capacity_blocks) for _ in range(instances)]
    where = np.empty(n_req, dtype=np.int64)
    hits = np.zeros(n_req, dtype=np.int64)
    drawn = np.random.default_rng(router.seed).integers(0, instances, n_req) if routing == "random" else None
    owner: dict[int, int] = {}  # session: the last full block of each prompt, and the instance it went to
    branched: set[int] = set()  # session: blocks a later block of some prompt followed
    in_flight: list[list[float]] = [[] for _ in range(instances)]
    load = [0] * instances
    turn = 0
    for r in range(n_req):
        ids = blocks[starts[r] : starts[r + 1]]
        now = float(trace.timestamps_s[r])
        for i in range(instances):  # requests finished by now leave their instance
            q = in_flight[i]
            while q and q[0] <= now:
                heapq.heappop(q)
            load[i] = len(q)
        if routing == "round-robin":
            i = r % instances
        elif routing == "random":
            i = int(drawn[r])
        elif routing == "session":
            i = _session(ids, owner, branched)
            if i < 0:
                i, turn = turn % instances, turn + 1
            if ids.size:
                branched.update(int(b) for b in ids[:-2])  # followed by a full block of this prompt
                owner[int(ids[max(ids.size - 2, 0)])] = i  # its last full block (the last is partial)
        else:
            i = _least(load, turn)
            if routing == "prefix" and ids.size:
                busiest, idlest = max(load), min(load)
                balanced = not (busiest - idlest > router.balance_abs and busiest > router.balance_rel * idlest)
                if balanced:
                    match = [t.cached_prefix(ids) for t in tiers]
                    best = max(match)
                    if best > 0 and best / ids.size > router.cache_threshold:
                        # the longest match, ties to the least loaded of them, then in turn
                        i = min(
                            (k for k in range(instances) if match[k] == best),
                            key=lambda k: (load[k], (k - turn) % instances),
                        )
            turn = i + 1
        where[r] = i
        hits[r] = tiers[i].access(ids, commit)
        if busy_s is not None:
            heapq.heappush(in_flight[i], now + float(busy_s(r, int(hits[r]))))
    return FleetReplay(routing, float(capacity_blocks), where, hits, instances)


def pooled_hits(trace: Trace, capacity_blocks: float, distance: np.ndarray | None = None) -> np.ndarray:
    """Per request, the blocks one shared LRU tier of ``capacity_blocks`` holds, up to its first miss.

    Every instance reads and fills the same tier, so the fleet's routing does not change what it
    holds: the stack distances of the whole trace decide (``distance``, if already computed).
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


def _ratios(trace: Trace, hit_blocks: np.ndarray, tokens: np.ndarray) -> dict[str, float]:
    """The hit ratio in tokens (of every prompt token) and in blocks (of every reference)."""
    total = float(trace.input_tokens.sum())
    return {
        "hit_ratio_tokens": float(tokens.sum()) / total if total else math.nan,
        "hit_ratio_blocks": float(np.sum(hit_blocks)) / trace.n_refs if trace.n_refs else math.nan,
    }


def _work(
    rc: RegenCosts, hit_blocks: np.ndarray, tokens: np.ndarray, bandwidth_bytes_per_s: float, latency_s: float
) -> dict[str, float]:
    """What a choice's hits save and cost in all: prefill avoided inside a batch and fetch time (accelerator-s),
    the tokens hit and the bytes the tier reads for them (``rc.tier_bytes_per_token`` a token)."""
    return {
        "hit_tokens": float(tokens.sum()),
        "avoided_batch_s": float(rc.regen_s(tokens, "batch").sum()),
        "fetch_s": float(rc.fetch_s(hit_blocks, tokens, bandwidth_bytes_per_s, latency_s).sum()),
        "read_bytes": float(tokens.sum()) * rc.tier_bytes_per_token,
    }


def _ttft(values: np.ndarray) -> dict[str, float]:
    return {
        "ttft_mean_s": float(values.mean()) if values.size else math.nan,
        "ttft_p90_s": float(np.percentile(values, 90)) if values.size else math.nan,
    }


def fleet_report(
    trace: Trace,
    rc: RegenCosts,
    instances: int,
    routing: str,
    capacity_blocks: float,
    node: Link,
    pool: Link,
    decode_s_per_token: float,
    router: Router = Router(),
    commit: str = "head-first",
) -> dict:
    """A fleet of ``instances`` instances with a tier of ``capacity_blocks`` each, against one pooled tier.

    The per-node choice: each instance's own tier (:func:`replay_fleet`), its hits fetched over
    ``node``.  The pooled choice: one tier of ``instances x capacity_blocks`` blocks that every instance
    reads (:func:`pooled_hits`), its hits fetched over ``pool``; routing does not change what it holds.
    Per request, time to first token as :func:`request_ttft_s` gives it; a request stays in flight
    on its instance for its time to first token with the per-node tier plus its output tokens times
    ``decode_s_per_token`` (what ``prefix`` and ``least-loaded`` count).

    Returns
    -------
    dict
        ``per_instance`` (``requests``, ``hit_ratio_tokens``, ``prefill_s``: lists, one per instance),
        ``node`` and ``pooled`` (hit ratios, TTFT mean and 90th percentile, the link, and in all the tokens hit,
        the prefill they avoid inside a batch, the accelerator time fetching them and the bytes the tier reads:
        :func:`_work`), ``none`` (TTFT without a tier), ``requests_imbalance`` and ``prefill_imbalance``
        (busiest over mean), ``duration_s``; SI units.
    """
    prompt = trace.input_tokens.astype(float)
    output = trace.output_tokens.astype(float)

    def node_ttft(r: slice, hb: np.ndarray) -> np.ndarray:
        tokens = np.minimum(hb * float(trace.block_tokens), prompt[r])
        return request_ttft_s(rc, prompt[r], hb, tokens, node.bandwidth_bytes_per_s, node.latency_s)

    def busy(r: int, hb: int) -> float:  # in flight: to the first token, then a decode step per output token
        return float(node_ttft(slice(r, r + 1), np.array([hb]))[0]) + output[r] * decode_s_per_token

    f = replay_fleet(trace, instances, routing, capacity_blocks, busy, router, commit)
    node_tokens = hit_tokens(trace, f.hit_blocks)
    node_t = node_ttft(slice(None), f.hit_blocks)
    pooled = pooled_hits(trace, instances * capacity_blocks)
    pool_tokens = hit_tokens(trace, pooled)
    pool_t = request_ttft_s(rc, prompt, pooled, pool_tokens, pool.bandwidth_bytes_per_s, pool.latency_s)
    none = rc.rest_wall_s(prompt, np.zeros_like(prompt), "lone")
    prefill = rc.rest_wall_s(prompt, node_tokens, "lone")
    requests = f.per_instance(np.ones(trace.n_requests))
    prompt_each = f.per_instance(prompt)
    return {
        "instances": instances,
        "routing": routing,
        "capacity_blocks": float(capacity_blocks),
        "per_instance": {
            "requests": requests.astype(int).tolist(),
            "hit_ratio_tokens": (f.per_instance(node_tokens) / np.where(prompt_each > 0, prompt_each, np.nan)).tolist(),
            "prefill_s": f.per_instance(prefill).tolist(),
        },
        "requests_imbalance": imbalance(requests),
        "prefill_imbalance": imbalance(f.per_instance(prefill)),
        "node": {
            "link": node.name,
            **_ratios(trace, f.hit_blocks, node_tokens),
            **_ttft(node_t),
            **_work(rc, f.hit_blocks, node_tokens, node.bandwidth_bytes_per_s, node.latency_s),
        },
        "pooled": {
            "link": pool.name,
            "capacity_blocks": float(instances * capacity_blocks),
            **_ratios(trace, pooled, pool_tokens),
            **_ttft(pool_t),
            **_work(rc, pooled, pool_tokens, pool.bandwidth_bytes_per_s, pool.latency_s),
        },
        "none": _ttft(none),
        "duration_s": trace.duration_s,
    }
