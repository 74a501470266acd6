"""A trace as the cache simulation takes it: arrays of timestamps, lengths and prefix-chained block ids.

:class:`Trace` is what :mod:`kvtier.inputs.traces` reads a file into; :data:`HIT_COUNTS` are the two
ways a request's hits are counted.  Times are seconds, sizes tokens, unless a name says otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

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
        return ref_tokens(self.block_tokens, self.input_tokens, self.starts)


def ref_tokens(block_tokens: int, input_tokens: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Prompt tokens in each block of requests laid out by ``starts``: full blocks, the last the rest (tokens).

    A prompt whose ids cover only its full blocks (a format without a tail block) has every block
    full; its tokens after them are in no block.
    """
    tokens = np.full(int(starts[-1]), block_tokens, dtype=np.int64)
    counts = np.diff(starts)
    has = counts > 0
    last = starts[1:][has] - 1
    tokens[last] = np.minimum(input_tokens[has] - block_tokens * (counts[has] - 1), block_tokens)
    return tokens
