"""A seeded generator of traces in the Mooncake format (shared-prefix trees, skewed reuse), for benchmarks at scale.

Same arguments, same trace; :func:`to_jsonl` writes one.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

import numpy as np

from kvtier.formulas.cache.trace import Trace
from kvtier.inputs.traces.formats import DEFAULT_FORMAT, TRACE_BLOCK_TOKENS


def generate_trace(
    n_requests: int,
    *,
    seed: int = 0,
    n_prefixes: int = 1_000,
    skew: float = 1.1,
    shared_blocks: int = 4,
    new_blocks: tuple[int, int] = (1, 40),
    rate_per_s: float = 10.0,
    max_blocks: int = 256,
    block_tokens: int = TRACE_BLOCK_TOKENS,
) -> Trace:
    """A seeded synthetic trace: prompts that share prefixes from a tree, reused with a Zipf skew.

    Each request picks one of ``n_prefixes`` shared prefixes (a system prompt or a
    document, ``shared_blocks`` blocks long, the tree's first level) with probability
    proportional to ``rank ** -skew``, extends it with one of that prefix's earlier
    continuations half of the time (a conversation's next turn), and adds between
    ``new_blocks[0]`` and ``new_blocks[1]`` blocks of its own; a conversation that would grow
    past ``max_blocks`` blocks starts afresh from its shared prefix.  Arrivals are Poisson at
    ``rate_per_s``.  Same arguments, same trace.

    Returns
    -------
    Trace
        Already indexed, as :func:`read_trace` would return it; :func:`to_jsonl` writes it.
    """
    rng = np.random.default_rng(seed)
    weights = np.arange(1, n_prefixes + 1, dtype=float) ** -skew
    picks = rng.choice(n_prefixes, size=n_requests, p=weights / weights.sum())
    extend = rng.random(n_requests) < 0.5
    n_new = rng.integers(new_blocks[0], new_blocks[1] + 1, size=n_requests)
    gaps = rng.exponential(1.0 / rate_per_s, size=n_requests)
    gaps[0] = 0.0
    last_block_tokens = rng.integers(1, block_tokens + 1, size=n_requests)
    next_id = n_prefixes * shared_blocks
    continuations: dict[int, list[int]] = {}
    pieces: list[np.ndarray] = []
    counts = np.empty(n_requests, dtype=np.int64)
    for r in range(n_requests):
        root = int(picks[r])
        head = np.arange(root * shared_blocks, (root + 1) * shared_blocks)
        tail = continuations.get(root)
        own = np.arange(next_id, next_id + n_new[r])
        next_id += int(n_new[r])
        grow = extend[r] and tail and shared_blocks + len(tail) + own.size <= max_blocks
        prompt = np.concatenate((head, tail, own)) if grow else np.concatenate((head, own))
        continuations[root] = prompt[shared_blocks:].tolist()
        pieces.append(prompt)
        counts[r] = prompt.size
    raw = np.concatenate(pieces)
    _, dense = np.unique(raw, return_inverse=True)
    starts = np.zeros(n_requests + 1, dtype=np.int64)
    np.cumsum(counts, out=starts[1:])
    return Trace(
        name=f"generated(seed={seed})",
        block_tokens=block_tokens,
        timestamps_s=np.round(np.cumsum(gaps), 3),
        input_tokens=(counts - 1) * block_tokens + last_block_tokens,
        output_tokens=rng.integers(1, 1_000, size=n_requests),
        starts=starts,
        blocks=dense.reshape(-1).astype(np.int64),
        trace_format=DEFAULT_FORMAT,
    )


def to_jsonl(trace: Trace) -> Iterable[str]:
    """The lines of ``trace`` in the Mooncake format (block ids as hash ids, timestamps in ms)."""
    for r in range(trace.n_requests):
        yield json.dumps(
            {
                "timestamp": round(float(trace.timestamps_s[r]) * 1e3),
                "input_length": int(trace.input_tokens[r]),
                "output_length": int(trace.output_tokens[r]),
                "hash_ids": trace.blocks[trace.starts[r] : trace.starts[r + 1]].tolist(),
            }
        )
