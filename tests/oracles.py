"""Oracles the tests share: a hand trace, and the obvious simulations the fast code is checked against.

- :data:`HAND_ROWS`, a hand trace of five requests at 4 tokens a block (its arithmetic beside it),
  and :func:`row`, one request as the reader takes it.
- :func:`lru_distances`, LRU stack distances by moving each block to the top of an explicit stack.
- :func:`lru_hits`, the hits of an LRU cache of a given size, simulated block by block.
"""

from __future__ import annotations

from collections import OrderedDict


def row(ts: float, ids: list[int], n_in: int) -> dict:
    """One request of a trace: timestamp ``ts`` (ms), ``n_in`` prompt tokens, one output token, ``ids``."""
    return {"timestamp": ts, "input_length": n_in, "output_length": 1, "hash_ids": ids}


HAND_ROWS = [
    row(0, [-1, -2], 8),  # 2 full blocks: 4 + 4 tokens
    row(1, [-1, -2, 5], 9),  # 4 + 4 + 1
    "",  # a blank line is skipped, not the end
    row(2, [7, 7], 5),  # 4 + 1
    row(3, [-1, 7], 6),  # 4 + 2
    row(4, [], 0),  # no blocks
]
"""A hand trace at 4 tokens a block; a str is a line as it is."""


def lru_distances(blocks: list[int]) -> list[int]:
    """LRU stack distances, most recent block first: a block's depth in the stack when it is used again, -1 new."""
    stack: list[int] = []
    out = []
    for b in blocks:
        depth = stack.index(b) if b in stack else -1
        out.append(depth)
        if depth >= 0:
            del stack[depth]
        stack.insert(0, b)
    return out


def lru_hits(blocks: list[int], capacity: int) -> int:
    """Hits of a direct simulation of an LRU cache of ``capacity`` blocks."""
    cache: OrderedDict[int, None] = OrderedDict()
    hits = 0
    for b in blocks:
        if b in cache:
            hits += 1
            cache.move_to_end(b)
        else:
            cache[b] = None
            if len(cache) > capacity:
                cache.popitem(last=False)
    return hits
