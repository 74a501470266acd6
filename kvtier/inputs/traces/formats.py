"""The trace formats: one record per format (field names, unit of time, chaining, tokens per id), one registry.

A trace is one JSON object per line and per request.  :data:`TRACE_FORMATS` holds every format the
reader knows, by name: the Mooncake FAST'25 traces (the shipped ones: ``timestamp`` in ms,
``input_length``, ``output_length``, ``hash_ids`` chained so that equal ids mean an equal prefix, 512
tokens an id) and Alibaba's Qwen traces (timestamps in s, one id per 16-token block, not chained).
The validating reader, the scanner, the chaining, ``kvtier workload --format`` and the
``workload.trace_format`` key all read this registry: adding a format is adding its entry.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from kvtier.errors import KvtierError, show
from kvtier.formulas.cache.ids import chain_ids

TRACE_BLOCK_TOKENS = 512
"""Tokens per ``hash_ids`` block in the Mooncake traces (as their authors publish them)."""


FIELDS = ("timestamp", "input_length", "output_length", "hash_ids")
"""A request's fields as the Mooncake traces name them: its timestamp, prompt tokens, output tokens, block ids."""


@dataclass(frozen=True)
class TraceFormat:
    """One trace format: what its fields are called, the unit of its timestamps and what its block ids identify.

    The one record the reader, the scanner, the chaining, ``--format`` and ``workload.trace_format``
    all read: a format is one entry of :data:`TRACE_FORMATS`.

    Attributes
    ----------
    name : str
        What ``--format`` and ``workload.trace_format`` call it.
    unit : str
        The unit of the timestamps as messages print it (``ms``, ``s``).
    unit_name : str
        The same unit in words, for messages (``milliseconds``).
    units_per_s : float
        Timestamp units in one second (1000 for ms, 1 for s).
    chained : bool
        True when each id already names the whole prefix up to its block (equal ids: equal
        prefix); False when an id names one block's own tokens wherever it stands, so that
        the reader chains them (:func:`chain_ids`) before measuring reuse.
    block_tokens : int
        Prompt tokens per id as the trace's authors publish them (tokens).
    source : str
        Where the format is published.
    summary : str
        What ``kvtier workload --format`` says of it, after ``name =``.
    fields : tuple of str
        The names of a request's timestamp, prompt tokens, output tokens and block ids, in that
        order (default :data:`FIELDS`); printable ASCII with no quote or backslash, which JSON
        would escape.  Other fields of a request are ignored.
    tail_block : bool
        True when a prompt's last, partial block has an id too (``ceil(input / block)`` ids, as
        Mooncake's); False when only full blocks do (``floor``): the tokens past the last full block
        are never cached, as vLLM caches only full blocks and LiteHit counts them.
    """

    name: str
    unit: str
    unit_name: str
    units_per_s: float
    chained: bool
    block_tokens: int
    source: str
    summary: str
    fields: tuple[str, str, str, str] = FIELDS
    tail_block: bool = True

    def __post_init__(self) -> None:
        plain = all(f and f.isascii() and f.isprintable() and '"' not in f and "\\" not in f for f in self.fields)
        if len(self.fields) != 4 or len(set(self.fields)) != 4 or not plain:
            raise ValueError(f"trace format {self.name!r}: four distinct plain field names, got {self.fields!r}")

    def prefix_ids(self, ids: np.ndarray, starts: np.ndarray) -> np.ndarray:
        """A trace's ids as they are read, requests one after another (``starts``), as prefix-chained ids."""
        return ids if self.chained else chain_ids(ids, starts)

    def blocks_for(self, input_tokens: Any, block_tokens: int) -> Any:
        """The ids a prompt of ``input_tokens`` tokens has at ``block_tokens`` tokens a block (int or array)."""
        return -(-input_tokens // block_tokens) if self.tail_block else input_tokens // block_tokens

    def seconds(self, stamps: np.ndarray) -> np.ndarray:
        """Timestamps in the format's unit, in seconds."""
        return stamps / self.units_per_s

    @property
    def keys(self) -> bytes:
        """The four field names quoted, one after another, as the scanner matches them."""
        return b"".join(b'"' + f.encode("ascii") + b'"' for f in self.fields)

    @property
    def key_ends(self) -> tuple[int, ...]:
        """Where each quoted field name of :attr:`keys` ends."""
        ends, at = [], 0
        for f in self.fields:
            at += len(f) + 2
            ends.append(at)
        return tuple(ends)


TRACE_FORMATS: dict[str, TraceFormat] = {
    f.name: f
    for f in (
        TraceFormat(
            name="mooncake",
            unit="ms",
            unit_name="milliseconds",
            units_per_s=1e3,
            chained=True,
            block_tokens=TRACE_BLOCK_TOKENS,
            source="Mooncake FAST'25 traces (github.com/kvcache-ai/Mooncake): timestamp in ms, one chained id per"
            " 512 tokens",
            summary="timestamps in ms, prefix-chained ids, 512 tokens an id",
        ),
        TraceFormat(
            name="qwen",
            unit="s",
            unit_name="seconds",
            units_per_s=1.0,
            chained=False,
            block_tokens=16,
            source="Alibaba Bailian Qwen traces, ATC'25 (github.com/alibaba-edu/qwen-bailian-usagetraces-anon):"
            " timestamp in s since the trace's start, one salted SipHash per 16-token block, not chained",
            summary="Alibaba's Qwen traces, timestamps in s, one id per 16-token block, chained here as a prefix"
            " cache does",
        ),
        TraceFormat(
            name="full-blocks",
            unit="ms",
            unit_name="milliseconds",
            units_per_s=1e3,
            chained=True,
            block_tokens=16,
            source="alibaba/tair-kvcache, kv_cache_manager/optimizer/liteHit/README.md, section 1.2: one chained"
            " key per full block, floor(input_length / block) of them",
            summary="timestamps in ms, prefix-chained ids for full blocks only (the tokens after the last full block"
            " are never cached, as vLLM and LiteHit count them), 16 tokens an id",
            tail_block=False,
        ),
    )
}
"""The trace formats the reader knows, by name: adding a format is adding its entry here."""

DEFAULT_FORMAT = "mooncake"
"""The format of the shipped traces, and of a trace whose format is not declared."""


def format_named(name: str) -> TraceFormat:
    """The :class:`TraceFormat` called ``name``; KvtierError naming the known ones otherwise."""
    if name not in TRACE_FORMATS:
        raise KvtierError(f"trace format {show(name, quote=True)} is not one of {', '.join(TRACE_FORMATS)}")
    return TRACE_FORMATS[name]
