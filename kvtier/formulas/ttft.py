"""Time to first token per request of a trace, with and without a KV tier: prefix found, its fetch, the rest's prefill.

For every request of a trace (:class:`kvtier.formulas.cache.trace.Trace`, measured by
:class:`kvtier.formulas.cache.curve.Reuse`) and an LRU tier of a given capacity:

1. **The prefix it finds** (:func:`prefix_hit_tokens`).  A block hits when its exact LRU
   stack distance is below the capacity (:func:`kvtier.formulas.cache.distances.stack_distances`), and
   hits count only up to the request's first miss, as serving engines match a prompt's
   prefix: a block after a miss is recomputed even if the tier holds it (its KV depends on
   the missed block's).  At most ``prompt - 1`` tokens are taken from the tier
   (:func:`usable_hit_tokens`): an engine computes at least the prompt's last token, whose
   logits give the first output token.
2. **Its fetch** (:func:`prefix_fetch_s`): the prefix's bytes over the tier's bandwidth,
   plus one latency per transfer, in ``ceil(tokens / block_tokens) x transfers_per_block``
   transfers (the serving engine's block and layout, :mod:`kvtier.inputs.engines`, or the
   set's own), with the transfer model's floor and efficiency
   (:func:`kvtier.formulas.transfer.fetch_time_s`).  Under a placement each rank fetches its
   shard over its own link, shared by the ranks behind it (:class:`Fetch`).
3. **The prefill of the rest** (:func:`rest_prefill_s`): the prompt's tokens after the prefix,
   attending to the whole prompt before them, in a *regime*: ``batch`` (the request's
   tokens ride in a compute-bound batch and cost their marginal FLOPs,
   FLOPs / (peak x MFU)) or ``lone`` (the request's prefill is its own forward pass: the
   roofline of those FLOPs against the weights and the prefix's KV read from device
   memory).  The FLOPs are :meth:`kvtier.formulas.cache.regen.RegenCosts.prefix_flops` of the
   prompt less that of the prefix.
4. **Overlap** (:func:`overlapped_s`).  Without it the forward pass starts when the whole
   prefix has arrived: ``TTFT = fetch + prefill``.  An engine that loads layer by layer
   (SGLang's HiCache, LMCache's layerwise mode, Mooncake) starts layer ``i``'s compute once
   layer ``i``'s KV has arrived, while layer ``i + 1``'s loads: a two-stage pipeline over
   ``L`` layers with equal per-layer shares ``f = fetch / L`` and ``c = prefill / L``,
   ``TTFT = f + c + (L - 1) x max(f, c)``.  The fetch hides under the prefill when
   ``f <= c`` (``TTFT = f + prefill``), the prefill under the fetch otherwise.
5. **No tier** (:func:`ttft_s` with no hits): the whole prompt prefilled, ``rest_prefill_s``
   of the whole prompt, which equals :meth:`kvtier.formulas.cache.regen.RegenCosts.regen_s`.

Under a placement (tensor, pipeline, expert parallelism) a ``lone`` prefill is the busiest
rank's share of the pass plus the collectives, the stages crossed one after another, and a
``batch`` one spreads over every accelerator; the accelerator time saved counts every
accelerator the prefill keeps busy (:meth:`kvtier.formulas.cache.regen.RegenCosts.busy_accelerators`).

Not modelled: queueing behind other requests (every request is timed as if the deployment
were its own: ``lone``, or its marginal share of it: ``batch``), the GPU's own HBM prefix
cache (the tier is the only cache), the decode of the first token after the prefill (a
step shared by both sides), contention on the link among requests.

Times are seconds, sizes bytes, vectorized over requests.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from kvtier.formulas import transfer
from kvtier.formulas.cache.curve import Reuse, counted_percentiles, percentiles
from kvtier.formulas.cache.regen import RegenCosts

REGIMES: tuple[str, ...] = ("lone", "batch")
"""How a request's prefill is timed: its own forward pass (``lone``), or its marginal compute inside a batch."""


def prefix_hit_refs(distance: np.ndarray, starts: np.ndarray, capacity_blocks: float) -> np.ndarray:
    """Per block reference: whether it is served from an LRU tier of ``capacity_blocks`` as part of its prompt's prefix.

    A reference hits when its stack distance ``d`` satisfies ``0 <= d < capacity_blocks``;
    it is part of the prefix when it hits and no earlier reference of its request missed.

    Parameters
    ----------
    distance : ndarray of int
        LRU stack distance per reference (blocks; -1 for a first reference).
    starts : ndarray of int
        ``starts[r]:starts[r + 1]`` are request ``r``'s references.
    capacity_blocks : float
        The tier's capacity (blocks; ``inf`` for an unbounded tier).
    """
    distance = np.asarray(distance)
    starts = np.asarray(starts)
    hit = (distance >= 0) & (distance < capacity_blocks)
    misses = np.cumsum(~hit)  # misses up to and including each reference
    counts = np.diff(starts)
    before = np.repeat(np.r_[0, misses][starts[:-1]], counts)  # misses before the request's first reference
    return hit & (misses == before)


def prefix_hit_tokens(reuse: Reuse, capacity_blocks: float = math.inf) -> tuple[np.ndarray, np.ndarray]:
    """Per request: the blocks and prompt tokens of its prefix that an LRU tier of ``capacity_blocks`` holds.

    :func:`prefix_hit_refs` summed by request (blocks of the trace's ``block_tokens``; tokens).
    """
    t = reuse.trace
    in_prefix = prefix_hit_refs(reuse.distance, t.starts, capacity_blocks)
    blocks = np.bincount(t.request_of_ref, weights=in_prefix, minlength=t.n_requests)
    tokens = np.bincount(t.request_of_ref, weights=in_prefix * t.ref_tokens, minlength=t.n_requests)
    return blocks, tokens


def usable_hit_tokens(hit_tokens: np.ndarray, prompt_tokens: np.ndarray) -> np.ndarray:
    """The prefix tokens taken from the tier: at most ``prompt - 1`` (the last token is always computed) (tokens)."""
    prompt = np.asarray(prompt_tokens, dtype=float)
    return np.clip(np.asarray(hit_tokens, dtype=float), 0.0, np.maximum(prompt - 1.0, 0.0))


def prefix_fetch_s(
    tokens: np.ndarray,
    kv_bytes_per_token: float,
    bandwidth_bytes_per_s: float,
    latency_s: float,
    block_tokens: int,
    transfers_per_block: int,
    min_transfer_s: float = 0.0,
    efficiency: float = 1.0,
    overhead_s: float = 0.0,
) -> np.ndarray:
    """Time to fetch each request's prefix of ``tokens`` tokens from a tier (s).

    ``ceil(tokens / block_tokens) x transfers_per_block x latency + tokens x kv_bytes_per_token /
    (bandwidth x efficiency)``, at least ``min_transfer_s`` (:func:`kvtier.formulas.transfer.fetch_time_s`):
    the prefix lies in blocks of ``block_tokens`` tokens, each fetched in ``transfers_per_block``
    copies; 0 for no tokens.

    Parameters
    ----------
    tokens : array_like
        Prefix tokens per request (tokens).
    kv_bytes_per_token : float
        KV bytes per token that cross the link (B): all layers, or a placement's share of them.
    bandwidth_bytes_per_s : float
        The tier's bandwidth, one direction (B/s).
    latency_s : float
        The tier's latency per transfer (s).
    block_tokens : int
        Tokens per block of the serving engine (tokens).
    transfers_per_block : int
        Copies one block's fetch takes.
    min_transfer_s, efficiency : float, optional
        The transfer model's floor (s) and share of the rate reached; 0 and 1 by default.
    overhead_s : float, optional
        Time each copy adds to its latency (s; pageable host memory); 0 by default.
    """
    tokens = np.asarray(tokens, dtype=float)
    transfers = np.ceil(tokens / block_tokens) * transfers_per_block
    t = transfer.fetch_time_s(
        tokens * kv_bytes_per_token,
        bandwidth_bytes_per_s,
        latency_s,
        transfers,
        min_transfer_s,
        efficiency,
        overhead_s,
    )
    return np.where(tokens > 0, t, 0.0)


def rest_prefill_s(rc: RegenCosts, prompt_tokens: np.ndarray, hit_tokens: np.ndarray, regime: str) -> np.ndarray:
    """Wall time of the prefill of each prompt's tokens after its prefix of ``hit_tokens``, in ``regime`` (s).

    FLOPs: ``prefix_flops(prompt) - prefix_flops(hit)`` (the rest's parameter FLOPs and its
    attention over every token before it).  ``batch``: the rest's marginal time inside a
    compute-bound batch (:meth:`kvtier.formulas.cache.regen.RegenCosts.in_batch_latency_s`, FLOPs /
    (peak x MFU) on one accelerator).  ``lone``: a forward pass of its own
    (:meth:`kvtier.formulas.cache.regen.RegenCosts.pass_latency_s`), which reads the weights and the
    prefix's KV once: on one accelerator with the plain roofline ``max(FLOPs / (peak x MFU),
    (weights + kv_bytes_per_token x hit) / (memory bandwidth x efficiency))``.  Under a
    placement, the busiest rank's share plus the collectives.  0 where nothing is left.  Under
    ``regen.model: engine`` the measured kernels' curves instead
    (:meth:`kvtier.formulas.cache.regen.RegenCosts.rest_wall_s`).

    Parameters
    ----------
    rc : RegenCosts
        The model, accelerator, MFU and placement (:meth:`kvtier.scenario.Scenario.regen_costs`).
    prompt_tokens, hit_tokens : array_like
        Per request: its prompt and the prefix taken from the tier (tokens, ``hit <= prompt``).
    regime : str
        ``"lone"`` or ``"batch"``.
    """
    if regime not in REGIMES:
        raise ValueError(f"regime must be one of {REGIMES}, got {regime!r}")
    return rc.rest_wall_s(prompt_tokens, hit_tokens, regime)


def overlapped_s(fetch_s: np.ndarray, compute_s: np.ndarray, stages: int) -> np.ndarray:
    """Fetch then compute, pipelined over ``stages`` equal layers: ``(F + C + (stages - 1) x max(F, C)) / stages`` (s).

    Layer ``i``'s compute waits for layer ``i``'s fetch and for layer ``i - 1``'s compute; the
    copies run one after another on their own stream.  ``stages = 1`` is no overlap, ``F + C``;
    as ``stages`` grows it tends to ``max(F, C)``.
    """
    if stages < 1:
        raise ValueError(f"stages must be >= 1, got {stages!r}")
    f = np.asarray(fetch_s, dtype=float)
    c = np.asarray(compute_s, dtype=float)
    return (f + c + (stages - 1) * np.maximum(f, c)) / stages


@dataclass(frozen=True)
class Fetch:
    """How a tier hands a prefix back: the link and the serving engine's layout.

    Attributes
    ----------
    bandwidth_bytes_per_s : float
        The tier's bandwidth, one direction (B/s).
    latency_s : float
        Its latency per transfer (s).
    block_tokens : int
        Tokens per block of the layout (tokens).
    transfers_per_block : int
        Copies one block's fetch takes.
    layers : int
        Layers the fetch is pipelined over when ``overlap``.
    overlap : bool
        Whether the fetch is loaded layer by layer under the prefill (:func:`overlapped_s`).
    link_bytes_per_token : float
        Bytes that cross one link per prefix token (B): the token's KV, or under a placement one
        rank's shard times the ranks sharing the link (:attr:`kvtier.scenario.Scenario.fetch_bytes`
        per token).
    min_transfer_s, efficiency, overhead_s : float
        The transfer model's floor per fetch (s), share of the link's rate reached and time each copy
        adds to its latency (s; pageable host memory) (:func:`kvtier.formulas.transfer.fetch_time_s`);
        0, 1 and 0 by default.
    """

    bandwidth_bytes_per_s: float
    latency_s: float
    block_tokens: int
    transfers_per_block: int
    layers: int
    overlap: bool
    link_bytes_per_token: float
    min_transfer_s: float = 0.0
    efficiency: float = 1.0
    overhead_s: float = 0.0

    def time_s(self, tokens: np.ndarray) -> np.ndarray:
        """Fetching each prefix of ``tokens`` tokens over this link, in the engine's blocks (:func:`prefix_fetch_s`)."""
        return prefix_fetch_s(
            tokens,
            self.link_bytes_per_token,
            self.bandwidth_bytes_per_s,
            self.latency_s,
            self.block_tokens,
            self.transfers_per_block,
            self.min_transfer_s,
            self.efficiency,
            self.overhead_s,
        )


@dataclass(frozen=True)
class Ttft:
    """Per request of a trace: the prefix taken from the tier, its fetch, the rest's prefill, the TTFT (s).

    Attributes
    ----------
    hit_tokens : ndarray
        Prefix tokens taken from the tier (tokens; :func:`usable_hit_tokens`).
    fetch_s, prefill_s, ttft_s : ndarray
        The prefix's fetch, the rest's prefill, and the time to first token (s).
    full_prefill_s : ndarray
        The whole prompt prefilled, no tier (s): the TTFT without one.
    busy_accelerators : float
        Accelerators a prefill keeps busy for its wall time
        (:meth:`kvtier.formulas.cache.regen.RegenCosts.busy_accelerators`); 1 on one accelerator.
    requests : ndarray, optional
        The requests each row stands for (:func:`ttft_counted`: one row per distinct prompt and
        prefix); one each by default.
    """

    hit_tokens: np.ndarray
    fetch_s: np.ndarray
    prefill_s: np.ndarray
    ttft_s: np.ndarray
    full_prefill_s: np.ndarray
    busy_accelerators: float = 1.0
    requests: np.ndarray | None = None

    @property
    def n_requests(self) -> float:
        """The requests the rows stand for."""
        return float(self.ttft_s.size if self.requests is None else np.sum(self.requests))

    def total(self, values: np.ndarray) -> float:
        """``values`` (one per row) summed over the requests they stand for."""
        return float(np.sum(values if self.requests is None else values * self.requests))

    def mean(self, values: np.ndarray) -> float:
        """``values`` (one per row) averaged over the requests (NaN for none)."""
        n = self.n_requests
        return self.total(values) / n if n else math.nan

    @property
    def gpu_s_saved(self) -> np.ndarray:
        """Accelerator time the tier saves per request: ``(full_prefill_s - prefill_s) x busy_accelerators`` (s).

        The fetch is a copy, not accelerator compute.  Negative where a lone, memory-bound
        prefill reads the fetched prefix's KV on top of the weights and saves no compute.
        """
        return (self.full_prefill_s - self.prefill_s) * self.busy_accelerators

    def percentiles(self, pcts: tuple[float, ...] = (50, 90, 99)) -> dict[str, float]:
        """``{"p50": ..., "p90": ..., "p99": ..., "max": ...}`` of :attr:`ttft_s` over the requests (s)."""
        if self.requests is None:
            return percentiles(self.ttft_s, pcts)
        order = np.argsort(self.ttft_s, kind="stable")
        return counted_percentiles(self.ttft_s[order], self.requests[order], pcts)


def ttft(
    reuse: Reuse, rc: RegenCosts, regime: str, fetch: Fetch | None = None, capacity_blocks: float = math.inf
) -> Ttft:
    """Time to first token of every request of ``reuse``'s trace, with an LRU tier of ``capacity_blocks`` (s).

    ``fetch`` None (or a capacity of 0) is no tier: every prompt prefilled whole.  Otherwise
    ``TTFT = overlapped_s(prefix_fetch_s, rest_prefill_s, layers if overlap else 1)``.

    Parameters
    ----------
    reuse : Reuse
        The trace with its stack distances.
    rc : RegenCosts
        The model and accelerator.
    regime : str
        ``"lone"`` or ``"batch"`` (:func:`rest_prefill_s`).
    fetch : Fetch, optional
        The tier's link and the serving engine's layout.
    capacity_blocks : float
        The tier's capacity (blocks of the trace's ``block_tokens``).
    """
    prompt = reuse.trace.input_tokens.astype(float)
    if fetch is None or capacity_blocks <= 0:
        return ttft_counted(prompt, np.zeros_like(prompt), rc, regime)
    return ttft_counted(prompt, prefix_hit_tokens(reuse, capacity_blocks)[1], rc, regime, fetch)


def ttft_counted(
    prompt_tokens: np.ndarray,
    hit_tokens: np.ndarray,
    rc: RegenCosts,
    regime: str,
    fetch: Fetch | None = None,
    requests: np.ndarray | None = None,
) -> Ttft:
    """:func:`ttft` of requests given by their prompt and the prefix a tier holds of it, each pair counted.

    Parameters
    ----------
    prompt_tokens, hit_tokens : ndarray
        Each request's prompt, and the tokens of its prefix the tier holds (tokens); or each
        distinct pair of them (:class:`kvtier.formulas.cache.replay.HitPrefixes`), with ``requests``.
    rc, regime, fetch
        As :func:`ttft`; ``fetch`` None is no tier.
    requests : ndarray, optional
        The requests each pair stands for; one each by default.
    """
    prompt = np.asarray(prompt_tokens, dtype=float)
    full = rest_prefill_s(rc, prompt, np.zeros_like(prompt), regime)
    busy = rc.busy_accelerators(regime)
    if fetch is None:
        zero = np.zeros_like(prompt)
        return Ttft(zero, zero, full, full, full, busy, requests)
    hit = usable_hit_tokens(hit_tokens, prompt)
    f = fetch.time_s(hit)
    c = rest_prefill_s(rc, prompt, hit, regime)
    return Ttft(hit, f, c, overlapped_s(f, c, fetch.layers if fetch.overlap else 1), full, busy, requests)
