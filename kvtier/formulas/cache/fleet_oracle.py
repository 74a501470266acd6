"""The fleet replayed request by request in Python, one ``OrderedDict`` per instance: the compiled loop's oracle.

:func:`replay_fleet_py` is what :func:`kvtier.formulas.cache.fleet.replay_fleet` computes, written as
directly as the rules read: each instance an :class:`_Lru`, the requests in flight one heap per instance.
It holds the whole trace, and its replay alone takes two to three times as long as the compiled loop's
whole streamed pass (:mod:`kvtier.formulas.cache.fleet_loop`, ``benchmarks/bench_fleet_scale.py``);
tests/formulas/cache/test_fleet_loop.py holds the two equal on the shipped traces and on generated ones, for
every routing and commit.
"""

from __future__ import annotations

import heapq
from collections import OrderedDict
from collections.abc import Callable

import numpy as np

from kvtier.formulas.cache.fleet import FleetReplay, Router, check_fleet
from kvtier.formulas.cache.trace import Trace


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


def replay_fleet_py(
    trace: Trace,
    instances: int,
    routing: str,
    capacity_blocks: float,
    busy_s: Callable[[int, int], float] | None = None,
    router: Router | None = None,
    commit: str = "head-first",
) -> FleetReplay:
    """:func:`kvtier.formulas.cache.fleet.replay_fleet`, replayed request by request in Python (same arguments)."""
    check_fleet(instances, routing, capacity_blocks, commit)
    router = router or Router()
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
