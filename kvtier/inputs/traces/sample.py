"""A trace's spatially hashed sample (SHARDS) held in memory, and the sampled curve's error against the exact one."""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from kvtier.formulas.cache.curve import LruHistogram, curve_error
from kvtier.formulas.cache.ids import dense_ids
from kvtier.formulas.cache.regen import RegenCosts
from kvtier.formulas.cache.report import LinkSpec, figure_errors, report
from kvtier.formulas.cache.sampling import SAMPLE_SPACE, block_hash, sample_threshold
from kvtier.formulas.cache.stream import histogram_of
from kvtier.formulas.cache.trace import DEFAULT_HIT_COUNT, Trace
from kvtier.inputs.traces.formats import DEFAULT_FORMAT, TRACE_BLOCK_TOKENS
from kvtier.inputs.traces.read import request_starts
from kvtier.inputs.traces.stream import RequestChunks, stream_lru


def read_sample(
    name: str | os.PathLike[str],
    rate: float,
    block_tokens: int = TRACE_BLOCK_TOKENS,
    trace_format: str = DEFAULT_FORMAT,
) -> Trace:
    """A trace's spatially hashed sample held in memory: the references whose block is kept, and their requests.

    A block is kept when :func:`kvtier.formulas.cache.sampling.block_hash` of its prefix-chained id is
    below ``rate`` of the hash space (SHARDS), so a kept block keeps every reference to it and
    a request keeps its kept blocks in order; a request that keeps none is dropped (at rate 1 a request with no
    blocks is kept, so that the sample is the whole trace).  Read in one streamed pass (:class:`RequestChunks`):
    memory about ``rate`` x 105 B a reference, and about as much a request, whatever the trace's length (issue 43:
    every request's arrays were kept, 86 B each, 86 GB for 10**9 requests at any rate).
    """
    threshold = sample_threshold(rate)
    chunks = RequestChunks(name, block_tokens, trace_format, lambda: 1 << 20)
    ids: list[np.ndarray] = []
    per: list[np.ndarray] = []
    cols: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    for chained, starts, inputs, outputs, stamps in chunks:
        keep = block_hash(chained) < threshold
        request = np.repeat(np.arange(starts.size - 1), np.diff(starts))
        counts = np.bincount(request[keep], minlength=starts.size - 1)
        held = counts > 0 if threshold < SAMPLE_SPACE else np.ones(counts.size, dtype=bool)
        ids.append(chained[keep])
        per.append(counts[held])
        cols.append((inputs[held], outputs[held], stamps[held]))
    return Trace(
        name=chunks.where,
        block_tokens=chunks.block_tokens,
        timestamps_s=np.concatenate([c[2] for c in cols]),
        input_tokens=np.concatenate([c[0] for c in cols]),
        output_tokens=np.concatenate([c[1] for c in cols]),
        starts=request_starts(np.concatenate(per)),
        blocks=dense_ids(np.concatenate(ids)),
        trace_format=chunks.fmt.name,
    )


SAMPLE_RATES = (0.1, 0.01, 0.001)
"""The sampling rates whose error :func:`sampling_error` measures by default (the SHARDS paper's range)."""


def sampling_error(
    name: str | os.PathLike[str] | Trace,
    rates: Iterable[float] = SAMPLE_RATES,
    block_tokens: int = TRACE_BLOCK_TOKENS,
    trace_format: str = DEFAULT_FORMAT,
    count: str = DEFAULT_HIT_COUNT,
    max_blocks: int | None = None,
    rc: RegenCosts | None = None,
    links: Sequence[LinkSpec] = (),
) -> list[dict[str, Any]]:
    """The error of the sampled LRU curve against the exact one on a trace, at each sampling rate.

    Parameters
    ----------
    name : str, path-like or Trace
        A shipped trace, a file, or a trace in memory (:func:`generate_trace`'s).
    rates : iterable of float
        Sampling rates in (0, 1].
    max_blocks : int, optional
        The fixed-size variant's bound on the sampled blocks held.
    rc : RegenCosts, optional
        With it, every figure of the workload report is measured too (``figures``): the report
        (:func:`kvtier.formulas.cache.report.report`, with ``links``) of the sampled pass against the exact one's.
    links : sequence of LinkSpec
        The links the reports fetch over.

    Returns
    -------
    list of dict
        One per rate: ``rate`` (the one asked), ``rate_used`` (after the fixed size lowered it),
        ``sampled_refs``, ``refs``, ``mean_abs`` and ``max_abs`` (:func:`kvtier.formulas.cache.curve.curve_error`,
        blocks weighted), ``seconds`` (the sampled pass, reading included) and ``exact_seconds``; with ``rc``,
        ``figures`` (:func:`kvtier.formulas.cache.report.figure_errors`).
    """

    def measure(rate: float, bound: int | None) -> tuple[LruHistogram, float]:
        t0 = time.perf_counter()
        if isinstance(name, Trace):
            h = histogram_of(name, count, rc, rate, bound)
        else:
            h = stream_lru(
                name, block_tokens, trace_format=trace_format, count=count, rc=rc, sample_rate=rate, max_blocks=bound
            )
        return h, time.perf_counter() - t0

    exact, exact_s = measure(1.0, None)
    whole = report(exact, rc, links) if rc is not None else None
    rows = []
    for rate in rates:
        h, seconds = measure(rate, max_blocks)
        gap = curve_error(exact, h)
        row: dict[str, Any] = {
            "rate": float(rate),
            "rate_used": h.sample_rate,
            "refs": h.n_refs,
            "sampled_refs": h.sampled_refs,
            "mean_abs": gap["mean_abs"],
            "max_abs": gap["max_abs"],
            "seconds": seconds,
            "exact_seconds": exact_s,
        }
        if whole is not None and rc is not None:
            row["figures"] = figure_errors(whole, report(h, rc, links), gap["max_abs"] * 100)
        rows.append(row)
    return rows
