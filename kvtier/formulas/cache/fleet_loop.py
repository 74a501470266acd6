"""A fleet's instances and their LRU tiers replayed in one compiled pass, chunk by chunk, in bounded memory.

:class:`FleetState` holds every instance's tier as one table of ``(instance, block)`` entries: a hash
table with linear probing (deletion by backward shift) over nodes that each sit in their instance's
recency list.  It holds at most ``instances x capacity`` entries, and never more than the references fed,
so the memory is the tiers' (24 B a cached block) plus, for ``session`` routing, 5 B a distinct block; the
trace itself is fed chunk by chunk (:meth:`FleetState.feed`) and only each request's instance and hits
come back.  The routing rules, lookup and commit are :func:`kvtier.formulas.cache.fleet.replay_fleet`'s;
:mod:`kvtier.formulas.cache.fleet_oracle` replays the same with one ``OrderedDict`` per instance, request
by request in Python, and tests/formulas/cache/test_fleet_loop.py holds the two equal.

Work: O(references) for ``random``, ``round-robin`` and ``session``; ``least-loaded`` adds O(instances) a
request, and ``prefix`` O(instances x matched blocks) a request (every instance's cached prefix is looked up).
"""

from __future__ import annotations

import math

import numpy as np

from kvtier.formulas.jit import jit

ROUTING_CODES: dict[str, int] = {"random": 0, "round-robin": 1, "session": 2, "prefix": 3, "least-loaded": 4}
"""Each routing's number in the compiled loop (:data:`kvtier.formulas.cache.fleet.ROUTINGS`)."""

COMMIT_CODES: dict[str, int] = {"head-first": 0, "tail-first": 1}
"""Each commit order's number in the compiled loop (:data:`kvtier.formulas.cache.fleet.COMMITS`)."""

_INSTANCE_SHIFT = 1 << 31
"""A table key is ``instance x 2**31 + block``: dense block ids are int32."""


class FleetState:
    """Every instance's LRU tier and the router's state, fed a trace chunk by chunk.

    Parameters
    ----------
    instances : int
        Serving instances, 1 or more.
    routing : str
        One of :data:`ROUTING_CODES`.
    capacity_blocks : float
        Each instance's tier (whole blocks, 0 or more; ``math.inf`` for unbounded).
    balance_abs, balance_rel, cache_threshold : float
        ``prefix``'s thresholds (:class:`kvtier.formulas.cache.fleet.Router`).
    seed : int
        Seed of ``random``'s generator (drawn chunk by chunk from one generator: the same draws as at once).
    commit : str
        One of :data:`COMMIT_CODES`.
    """

    def __init__(
        self,
        instances: int,
        routing: str,
        capacity_blocks: float,
        balance_abs: float = 64.0,
        balance_rel: float = 1.5,
        cache_threshold: float = 0.3,
        seed: int = 0,
        commit: str = "head-first",
    ) -> None:
        self.instances = int(instances)
        self.routing = ROUTING_CODES[routing]
        self.commit = COMMIT_CODES[commit]
        self.capacity = -1 if math.isinf(capacity_blocks) else int(capacity_blocks)
        self.thresholds = (float(balance_abs), float(balance_rel), float(cache_threshold))
        self.rng = np.random.default_rng(seed) if routing == "random" else None
        n = self.instances
        self.head = np.full(n, -1, dtype=np.int32)
        self.tail = np.full(n, -1, dtype=np.int32)
        self.count = np.zeros(n, dtype=np.int64)
        self.load = np.zeros(n, dtype=np.int64)
        self.st = np.zeros(4, dtype=np.int64)  # nodes used, requests in flight, the router's turn, requests fed
        self.node_key = np.empty(0, dtype=np.int64)
        self.node_prev = np.empty(0, dtype=np.int32)
        self.node_next = np.empty(0, dtype=np.int32)
        self.tab = np.full(1, -1, dtype=np.int32)
        self.owner = np.empty(0, dtype=np.int32)
        self.branched = np.empty(0, dtype=np.uint8)
        self.heap_t = np.empty(0, dtype=np.float64)
        self.heap_i = np.empty(0, dtype=np.int32)

    @property
    def most_entries(self) -> float:
        """The most ``(instance, block)`` entries the tiers can hold (``math.inf`` unbounded)."""
        return math.inf if self.capacity < 0 else float(self.instances * self.capacity)

    def _grow(self, refs: int, requests: int, distinct: int) -> None:
        """Room for a chunk of ``refs`` references and ``requests`` requests naming blocks below ``distinct``."""
        used = int(self.st[0])
        need = int(min(used + refs, self.most_entries))
        if need > self.node_key.size:
            size = int(min(max(need, 2 * self.node_key.size), self.most_entries))
            for name, dtype in (("node_key", np.int64), ("node_prev", np.int32), ("node_next", np.int32)):
                grown = np.empty(size, dtype=dtype)
                grown[:used] = getattr(self, name)[:used]
                setattr(self, name, grown)
            slots = 1 << max(1, int(2 * size - 1).bit_length())  # a power of two, at least twice the nodes
            if slots > self.tab.size:
                self.tab = np.full(slots, -1, dtype=np.int32)
                _rehash(self.node_key, used, self.tab)
        if self.routing == ROUTING_CODES["session"] and distinct > self.owner.size:
            size = max(distinct, 2 * self.owner.size)
            self.owner = np.concatenate([self.owner, np.full(size - self.owner.size, -1, dtype=np.int32)])
            self.branched = np.concatenate([self.branched, np.zeros(size - self.branched.size, dtype=np.uint8)])
        in_flight = int(self.st[1]) + requests
        if in_flight > self.heap_t.size:
            size = max(in_flight, 2 * self.heap_t.size)
            self.heap_t = np.concatenate([self.heap_t, np.empty(size - self.heap_t.size)])
            self.heap_i = np.concatenate([self.heap_i, np.empty(size - self.heap_i.size, dtype=np.int32)])

    def feed(
        self, blocks: np.ndarray, starts: np.ndarray, timestamps_s: np.ndarray, busy_s: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Route and serve the next requests; return each one's instance and hit blocks (up to its first miss).

        Parameters
        ----------
        blocks : ndarray of int32
            The chunk's references, dense block ids (0 or more, below 2**31).
        starts : ndarray of int
            ``starts[r]:starts[r + 1]`` are the chunk's request ``r``'s references (``starts[0] == 0``).
        timestamps_s : ndarray of float
            Each request's arrival (s), non-decreasing across chunks.
        busy_s : ndarray of float, optional
            For request ``r`` with ``h`` hit blocks, the seconds it keeps its instance busy at
            ``busy_s[starts[r] + r + h]`` (``h`` from 0 to the prompt's blocks): what ``least-loaded``
            and ``prefix`` count in flight.  Without it no request stays in flight.
        """
        blocks = np.ascontiguousarray(blocks, dtype=np.int32)
        starts = np.ascontiguousarray(starts, dtype=np.int64)
        n_req = starts.size - 1
        self._grow(blocks.size, n_req if busy_s is not None else 0, int(blocks.max()) + 1 if blocks.size else 0)
        drawn = self.rng.integers(0, self.instances, n_req) if self.rng is not None else np.empty(0, dtype=np.int64)
        busy = np.empty(0) if busy_s is None else np.ascontiguousarray(busy_s, dtype=np.float64)
        where = np.empty(n_req, dtype=np.int32)
        hits = np.empty(n_req, dtype=np.int64)
        _fleet_loop(
            blocks,
            starts,
            np.ascontiguousarray(timestamps_s, dtype=np.float64),
            drawn,
            busy,
            where,
            hits,
            self.node_key,
            self.node_prev,
            self.node_next,
            self.tab,
            self.head,
            self.tail,
            self.count,
            self.load,
            self.owner,
            self.branched,
            self.heap_t,
            self.heap_i,
            self.st,
            self.routing,
            self.commit,
            self.capacity,
            *self.thresholds,
        )
        return where, hits


@jit
def _rehash(node_key: np.ndarray, used: int, tab: np.ndarray) -> None:
    mask = tab.size - 1
    for v in range(used):
        key = int(node_key[v])
        h = ((key & 0x7FFFFFFF) * 2654435761 + (key >> 31) * 40503) & mask
        while tab[h] >= 0:
            h = (h + 1) & mask
        tab[h] = v


# The loop, compiled where numba is (kvtier.formulas.jit, which compiles each loop on its first call, so the
# loop cannot call another: the table's probe is written out where it is needed).  A key's slot is
# ``(block x 2654435761 + instance x 40503) & mask``, under 2**63 for int32 blocks: no overflow in numba or Python.
@jit
def _fleet_loop(
    blocks: np.ndarray,
    starts: np.ndarray,
    stamps: np.ndarray,
    drawn: np.ndarray,
    busy: np.ndarray,
    where: np.ndarray,
    hits: np.ndarray,
    node_key: np.ndarray,
    node_prev: np.ndarray,
    node_next: np.ndarray,
    tab: np.ndarray,
    head: np.ndarray,
    tail: np.ndarray,
    count: np.ndarray,
    load: np.ndarray,
    owner: np.ndarray,
    branched: np.ndarray,
    heap_t: np.ndarray,
    heap_i: np.ndarray,
    st: np.ndarray,
    routing: int,
    commit: int,
    capacity: int,
    balance_abs: float,
    balance_rel: float,
    threshold: float,
) -> None:
    mask = tab.size - 1
    n_inst = head.size
    match = np.zeros(n_inst, dtype=np.int64)
    for r in range(starts.size - 1):
        lo = starts[r]
        hi = starts[r + 1]
        n = hi - lo
        now = stamps[r]
        size = st[1]  # requests finished by now leave their instance (a min-heap on the time they finish)
        while size > 0 and heap_t[0] <= now:
            load[heap_i[0]] -= 1
            size -= 1
            t_last = heap_t[size]
            i_last = heap_i[size]
            j = 0
            while 2 * j + 1 < size:
                c = 2 * j + 1
                if c + 1 < size and heap_t[c + 1] < heap_t[c]:
                    c += 1
                if heap_t[c] < t_last:
                    heap_t[j] = heap_t[c]
                    heap_i[j] = heap_i[c]
                    j = c
                else:
                    break
            heap_t[j] = t_last
            heap_i[j] = i_last
        st[1] = size
        turn = st[2]
        if routing == 1:  # round-robin
            i = (st[3] + r) % n_inst
        elif routing == 0:  # random
            i = int(drawn[r])
        elif routing == 2:  # session
            i = -1
            for j in range(hi - 1, lo - 1, -1):
                b = int(blocks[j])
                if owner[b] >= 0:
                    i = -1 if branched[b] else int(owner[b])
                    break
            if i < 0:
                i = turn % n_inst
                turn += 1
            if n > 0:
                for j in range(lo, hi - 2):
                    branched[blocks[j]] = 1
                owner[blocks[lo + max(n - 2, 0)]] = i
        else:  # least-loaded, and prefix when it does not route by cache
            low = load[0]
            busiest = load[0]
            for k in range(n_inst):
                low = min(low, load[k])
                busiest = max(busiest, load[k])
            i = 0
            for m in range(n_inst):
                k = (turn + m) % n_inst
                if load[k] == low:
                    i = k
                    break
            if routing == 3 and n > 0 and not (busiest - low > balance_abs and busiest > balance_rel * low):
                best = 0
                for k in range(n_inst):  # every instance's cached prefix
                    c = 0
                    for j in range(lo, hi):
                        b = int(blocks[j])
                        key = k * 2147483648 + b
                        h = (b * 2654435761 + k * 40503) & mask
                        while tab[h] >= 0 and node_key[tab[h]] != key:
                            h = (h + 1) & mask
                        if tab[h] < 0:
                            break
                        c += 1
                    match[k] = c
                    best = max(best, c)
                if best > 0 and best / n > threshold:  # the longest match, the least loaded of them, then in turn
                    pick = -1
                    for k in range(n_inst):
                        if match[k] == best and (
                            pick < 0
                            or load[k] < load[pick]
                            or (load[k] == load[pick] and (k - turn) % n_inst < (pick - turn) % n_inst)
                        ):
                            pick = k
                    i = pick
            turn = i + 1
        st[2] = turn
        # the lookup: the prompt's leading blocks the instance holds now
        hit = 0
        for j in range(lo, hi):
            b = int(blocks[j])
            key = i * 2147483648 + b
            h = (b * 2654435761 + i * 40503) & mask
            while tab[h] >= 0 and node_key[tab[h]] != key:
                h = (h + 1) & mask
            if tab[h] < 0:
                break
            hit += 1
        # the commit: each block touched, head first or tail first; a miss inserted, the LRU block evicted
        for m in range(n):
            j = lo + m if commit == 0 else hi - 1 - m
            b = int(blocks[j])
            key = i * 2147483648 + b
            h = (b * 2654435761 + i * 40503) & mask
            while tab[h] >= 0 and node_key[tab[h]] != key:
                h = (h + 1) & mask
            v = tab[h]
            if v >= 0:
                if head[i] != v:  # to the most recent end
                    p = node_prev[v]
                    q = node_next[v]
                    node_next[p] = q
                    if q >= 0:
                        node_prev[q] = p
                    else:
                        tail[i] = p
                    node_prev[v] = -1
                    node_next[v] = head[i]
                    node_prev[head[i]] = v
                    head[i] = v
                continue
            if capacity == 0:
                continue
            if capacity > 0 and count[i] >= capacity:
                v = tail[i]  # the least recently used leaves; its node takes the new block
                p = node_prev[v]
                tail[i] = p
                if p >= 0:
                    node_next[p] = -1
                else:
                    head[i] = -1
                count[i] -= 1
                old = int(node_key[v])
                s = ((old & 0x7FFFFFFF) * 2654435761 + (old >> 31) * 40503) & mask
                while tab[s] != v:
                    s = (s + 1) & mask
                done = False
                while not done:  # backward shift: later entries of the run move up into the hole
                    tab[s] = -1
                    q = s
                    moved = False
                    while not moved:
                        q = (q + 1) & mask
                        w = tab[q]
                        if w < 0:
                            done = True
                            break
                        kk = int(node_key[w])
                        h0 = ((kk & 0x7FFFFFFF) * 2654435761 + (kk >> 31) * 40503) & mask
                        if (q > s and (h0 <= s or h0 > q)) or (q < s and h0 <= s and h0 > q):
                            tab[s] = w
                            s = q
                            moved = True
            else:
                v = st[0]
                st[0] += 1
            h = (b * 2654435761 + i * 40503) & mask
            while tab[h] >= 0:
                h = (h + 1) & mask
            tab[h] = v
            node_key[v] = key
            node_prev[v] = -1
            node_next[v] = head[i]
            if head[i] >= 0:
                node_prev[head[i]] = v
            else:
                tail[i] = v
            head[i] = v
            count[i] += 1
        where[r] = i
        hits[r] = hit
        if busy.size > 0:  # in flight on its instance until it is done
            t = now + busy[lo + r + hit]
            j = st[1]
            while j > 0:
                p = (j - 1) // 2
                if heap_t[p] > t:
                    heap_t[j] = heap_t[p]
                    heap_i[j] = heap_i[p]
                    j = p
                else:
                    break
            heap_t[j] = t
            heap_i[j] = i
            st[1] += 1
            load[i] += 1
    st[3] += starts.size - 1
