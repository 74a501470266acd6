"""An LRU tier with an admission filter and a time to live replayed in Python, the compiled loop's oracle.

:func:`replay_admission_py` is what :func:`kvtier.formulas.cache.admission.replay_admission` computes,
written as directly as the rules read: the tier an ``OrderedDict`` of each held block's last use, TinyLFU's
sketch a small class.  tests/formulas/cache/test_admission_loop.py holds the compiled loop
(:mod:`kvtier.formulas.cache.admission_loop`) to it.
"""

from __future__ import annotations

import math
from collections import OrderedDict

import numpy as np

from kvtier.formulas.cache.admission import AdmissionReplay, check_admission, first_use_ids
from kvtier.formulas.cache.admission_loop import SKETCH_MULTIPLIERS, sketch_columns, sketch_width
from kvtier.formulas.cache.trace import Trace


class _Sketch:
    """A count-min sketch of block references with TinyLFU's reset: every count halved each ``sample`` adds."""

    def __init__(self, capacity: float) -> None:
        self.width = sketch_width(capacity)
        self.rows = np.zeros((len(SKETCH_MULTIPLIERS), self.width), dtype=np.int64)
        self.sample = max(int(10 * capacity), 10)
        self.added = 0

    def add(self, block: int) -> None:
        for r, c in enumerate(sketch_columns(block, self.width)):
            self.rows[r, c] += 1
        self.added += 1
        if self.added >= self.sample:
            self.rows //= 2
            self.added //= 2

    def estimate(self, block: int) -> int:
        return int(min(self.rows[r, c] for r, c in enumerate(sketch_columns(block, self.width))))


def replay_admission_py(
    trace: Trace, capacity_blocks: float, admission: str = "always", ttl_s: float = math.inf
) -> AdmissionReplay:
    """:func:`kvtier.formulas.cache.admission.replay_admission` replayed in Python (same arguments and result).

    The blocks are numbered in order of first reference first, as the compiled replay numbers them, so the
    sketch hashes the same numbers.
    """
    check_admission(capacity_blocks, admission, ttl_s)
    blocks = first_use_ids(trace.blocks)
    held: OrderedDict[int, float] = OrderedDict()  # block -> last use (s), least recent first
    seen = [0] * (int(blocks.max()) + 1 if blocks.size else 0)  # references so far, for the k-th reference filters
    need = {"always": 1, "second": 2, "third": 3}.get(admission, 1)
    sketch = _Sketch(capacity_blocks) if admission == "tinylfu" and math.isfinite(capacity_blocks) else None
    hits = np.zeros(trace.n_requests, dtype=np.int64)
    writes = expired = 0
    starts, stamps = trace.starts, trace.timestamps_s
    for r in range(trace.n_requests):
        now = float(stamps[r])
        ids = blocks[starts[r] : starts[r + 1]]
        for b in ids:  # expire what this prompt would find idle too long
            at = held.get(int(b))
            if at is not None and now - at > ttl_s:
                del held[int(b)]
                expired += 1
        n = 0
        for b in ids:
            if int(b) not in held:
                break
            n += 1
        hits[r] = n
        for b in ids:
            b = int(b)
            seen[b] += 1
            if sketch is not None:
                sketch.add(b)
            if b in held:
                held.move_to_end(b)
                held[b] = now
                continue
            if capacity_blocks < 1 or seen[b] < need:
                continue
            if len(held) >= capacity_blocks:
                victim = next(iter(held))
                if sketch is not None and sketch.estimate(b) <= sketch.estimate(victim):
                    continue
                del held[victim]
            held[b] = now
            writes += 1
    return AdmissionReplay(admission, float(ttl_s), float(capacity_blocks), hits, writes, expired)
