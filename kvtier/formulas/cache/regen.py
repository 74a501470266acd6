"""What a hit is worth: recomputing a prompt prefix in both regimes, against fetching it over a link.

:class:`RegenCosts` holds resolved numbers (:meth:`kvtier.scenario.Scenario.regen_costs` builds it):
a prefix recomputed alone (memory-bound roofline, per-layer floors, collectives) or inside a batch
(marginal FLOPs), and fetched (transfers, link efficiency).  :func:`hit_totals` and :func:`saving`
price an LRU tier's hits on a measured trace.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from kvtier.errors import KvtierError
from kvtier.formulas import costs, parallel, roofline, transfer
from kvtier.formulas.cache.curve import HitTotals, LruHistogram, Reuse
from kvtier.formulas.cache.trace import Trace

# ---------------------------------------------------------------------------
# what the hits are worth
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class RegenCosts:
    """What recomputing or fetching a prompt prefix costs, for one model and one accelerator.

    Attributes
    ----------
    kv_bytes_per_token : float
        KV-cache bytes per token (B).
    active_params : float
        Parameters a token passes through (dimensionless).
    flops_per_param_token : float
        FLOPs per parameter per token (2 for a multiply-add).
    attention_flops_per_position : float
        Attention FLOPs per token per position it attends to (FLOP).
    peak_flop_per_s : float
        Dense peak of the accelerator (FLOP/s).
    mfu : float
        Achieved fraction of the peak (0, 1].
    weight_bytes : float
        Bytes of the weights a forward pass streams (B).
    mem_bandwidth_bytes_per_s : float
        Device-memory bandwidth (B/s).
    mem_efficiency : float
        Achieved fraction of it (0, 1].
    fetch_transfers : int
        Transfers that fetch one block, each paying the link's latency: 1 for a contiguous
        block, the block's layer chunks for a per-layer layout (``fetch_layout``,
        :attr:`kvtier.scenario.Scenario.fetch_transfers`); 1 by default.
    fetch_block_tokens : float
        Tokens of the serving engine's block, the unit a fetch copies (``block_tokens``); 0 (the default):
        the blocks the caller counts.
    fetch_bytes_per_token : float
        Bytes per token that cross one link (:attr:`kvtier.scenario.Scenario.fetch_bytes` per token); 0
        (the default): :attr:`kv_bytes_per_token`.
    layers, mem_overhead_per_layer_s, launch_floor_per_layer_s, knee_sharpness : float
        The forward-pass model's other terms (:func:`kvtier.formulas.roofline.forward_pass_time_s`):
        the model's layers, ``regen.mem_overhead_per_layer`` and ``regen.launch_floor_per_layer`` (s)
        and the knee's exponent (``inf``: the plain roofline, the default).
    routed_weight_bytes, n_routed_experts, experts_per_token : float
        The routed experts' share of :attr:`weight_bytes` (B), their count and how many a token
        picks: a pass reads only the experts its tokens are routed to
        (:func:`kvtier.formulas.parallel.touched_rank_weight_bytes`); 0 for a dense model.
    tp, group, accelerators, pipeline_stages : int
        The placement (:class:`kvtier.scenario.Placement`): tensor-parallel ranks, ranks of a
        stage (``tp x ep``), accelerators in all, pipeline stages; 1 each by default.
    compute_share, kv_rank_share : float
        Share of a pass's FLOPs, and of a token's KV, the busiest rank holds (1 on one accelerator).
    collective_latency_s, collective_s_per_token : float
        The collectives a lone pass adds (:func:`kvtier.formulas.parallel.collectives_time_s`),
        which are affine in its tokens: every operation's latency once (s), plus the bytes of
        each token (s per token); 0 on one accelerator.
    min_transfer_s, link_efficiency, link_overhead_s : float
        The transfer model's floor under a fetch (s), share of a link's rate a fetch reaches and
        time each transfer adds (s) (:func:`kvtier.formulas.transfer.fetch_time_s`); 0, 1 and 0 by default.
    engine_tokens, engine_linear_s, engine_attention_s, engine_batch_s : tuple of float
        Under ``regen.model: engine`` (:meth:`kvtier.scenario.Scenario.regen_costs`), the measured
        kernels' times tabulated at prefix lengths ``engine_tokens`` (tokens, 0 first, increasing):
        a lone pass over the prefix split into its operations other than attention
        (``engine_linear_s``, s) and its attention (``engine_attention_s``, s), and the prefix's
        share of a batched step (``engine_batch_s``, s, :meth:`kvtier.scenario.Timed.engine_regen_s`);
        all wall times of the placement.  Empty (the default): the analytic model above.
    engine_label : str
        The kernel tables (``h200_sxm vllm 0.24.0``), for messages.
    stored_copies : float
        Copies of a logical block a tier holds (:func:`kvtier.formulas.parallel.stored_copies`): a tier's
        capacity, writes and reads count :attr:`tier_bytes_per_token`; 1 by default.
    engine_grid_tokens : float
        The longest lone pass inside the tables' measured grid, its sequence and its GEMM rows (tokens);
        past it the curves are the package's
        extrapolation, when ``engine_tokens`` reaches further at all; 0 for the analytic model.
    """

    kv_bytes_per_token: float
    active_params: float
    flops_per_param_token: float
    attention_flops_per_position: float
    peak_flop_per_s: float
    mfu: float
    weight_bytes: float
    mem_bandwidth_bytes_per_s: float
    mem_efficiency: float
    fetch_transfers: int = 1
    fetch_block_tokens: float = 0.0
    fetch_bytes_per_token: float = 0.0
    layers: float = 0.0
    mem_overhead_per_layer_s: float = 0.0
    launch_floor_per_layer_s: float = 0.0
    knee_sharpness: float = math.inf
    routed_weight_bytes: float = 0.0
    n_routed_experts: float = 0.0
    experts_per_token: float = 0.0
    tp: int = 1
    group: int = 1
    accelerators: int = 1
    pipeline_stages: int = 1
    compute_share: float = 1.0
    kv_rank_share: float = 1.0
    collective_latency_s: float = 0.0
    collective_s_per_token: float = 0.0
    min_transfer_s: float = 0.0
    link_efficiency: float = 1.0
    link_overhead_s: float = 0.0
    engine_tokens: tuple[float, ...] = ()
    engine_linear_s: tuple[float, ...] = ()
    engine_attention_s: tuple[float, ...] = ()
    engine_batch_s: tuple[float, ...] = ()
    engine_label: str = ""
    engine_grid_tokens: float = 0.0
    stored_copies: float = 1.0

    @property
    def tier_bytes_per_token(self) -> float:
        """Bytes a tier stores, writes and reads per token of KV (B): ``kv_bytes_per_token x stored_copies``."""
        return self.kv_bytes_per_token * self.stored_copies

    @property
    def engine(self) -> bool:
        """True where the measured kernels time recomputation (``regen.model: engine``)."""
        return len(self.engine_tokens) > 0

    def engine_curve(self, curve: tuple[float, ...], tokens: np.ndarray) -> np.ndarray:
        """One of the tabulated engine curves at ``tokens`` (s), linear between its points.

        Raises
        ------
        KvtierError
            A prefix longer than the table: one line naming it, the tables and whether the grid
            ends there (``regen.beyond_grid: refuse``) or the tabulated range does.
        """
        tokens = np.asarray(tokens, dtype=float)
        top = self.engine_tokens[-1]
        longest = float(np.max(tokens, initial=0.0))
        if longest > top:
            if top <= self.engine_grid_tokens:
                why = "the tables' measured grid ends there; regen.beyond_grid=extrapolate prices it by extrapolation"
            else:
                why = "the extrapolated range the report tabulates ends there"
            raise KvtierError(
                f"regen.model engine: a prompt prefix of {longest:,.0f} tokens is longer than {top:,.0f} on"
                f" {self.engine_label} ({why})"
            )
        return np.interp(tokens, self.engine_tokens, curve)

    def engine_beyond_grid(self, tokens: np.ndarray) -> np.ndarray:
        """True where a prefix of ``tokens`` is longer than the kernel tables measured (engine model; else False)."""
        return self.engine & (np.asarray(tokens, dtype=float) > self.engine_grid_tokens)

    def rest_wall_s(self, prompt_tokens: np.ndarray, hit_tokens: np.ndarray, regime: str) -> np.ndarray:
        """Wall time of prefilling a prompt after its first ``hit_tokens`` are cached, in ``regime`` (s).

        Analytic: the rest's FLOPs ``prefix_flops(prompt) - prefix_flops(hit)`` through
        :meth:`in_batch_latency_s` (``batch``) or :meth:`pass_latency_s` (``lone``).  Engine model:
        ``batch`` is the batched curve's prompt less its hit; ``lone`` is a pass of the rest's own
        tokens, its operations other than attention for ``prompt - hit`` tokens plus attention of
        the prompt less attention of the hit (what the rest's queries add, the causal FLOPs'
        split).  That split is within 1.5 % of the estimator's own pass with a cached prefix for
        Llama-3-70B on the H200's vLLM tables from 512 new tokens and at most 6 % low for 16
        (tests/scenario/test_timing.py); Llama-3-8B's small passes come out up to 13 % low.  0 where
        nothing is left.
        """
        prompt = np.asarray(prompt_tokens, dtype=float)
        hit = np.asarray(hit_tokens, dtype=float)
        rest = prompt - hit
        if self.engine:
            if regime == "batch":
                t = self.engine_curve(self.engine_batch_s, prompt) - self.engine_curve(self.engine_batch_s, hit)
            else:
                attention = self.engine_curve(self.engine_attention_s, prompt)
                attention = attention - self.engine_curve(self.engine_attention_s, hit)
                t = self.engine_curve(self.engine_linear_s, np.maximum(rest, 1.0)) + attention
            return np.where(rest > 0, t, 0.0)
        flops = self.prefix_flops(prompt) - self.prefix_flops(hit)
        if regime == "batch":
            return np.where(rest > 0, self.in_batch_latency_s(flops, rest), 0.0)
        return np.where(rest > 0, self.pass_latency_s(flops, np.maximum(rest, 1.0), hit), 0.0)

    def pass_weight_bytes(self, tokens: np.ndarray) -> np.ndarray:
        """Weight bytes the busiest rank reads in a pass over ``tokens`` tokens (B).

        :func:`kvtier.formulas.parallel.touched_rank_weight_bytes`: all of :attr:`weight_bytes` for
        a dense model on one accelerator.
        """
        dense = self.weight_bytes - self.routed_weight_bytes
        return parallel.touched_rank_weight_bytes(
            dense, self.routed_weight_bytes, self.n_routed_experts, self.experts_per_token, tokens, self.tp, self.group
        )

    def pass_latency_s(self, flops: np.ndarray, tokens: np.ndarray, cached_tokens: np.ndarray) -> np.ndarray:
        """Wall time of a forward pass of its own over ``tokens`` new tokens attending to ``cached_tokens`` (s).

        The busiest rank's :func:`kvtier.formulas.roofline.forward_pass_time_s` of ``flops x
        compute_share`` against its weights (:meth:`pass_weight_bytes`) and its share of the cached
        KV, over every layer (the pipeline stages are crossed one after another), plus the
        collectives: ``collective_latency_s + tokens x collective_s_per_token``.  On one
        accelerator the forward-pass model of one device; with the ``regen.*`` terms at 0 the
        plain roofline ``max(FLOPs / (peak x MFU), bytes / (bandwidth x efficiency))``.
        """
        tokens = np.asarray(tokens, dtype=float)
        cached = np.asarray(cached_tokens, dtype=float)
        nbytes = roofline.regen_bytes_read(
            self.pass_weight_bytes(tokens), tokens, tokens, self.kv_bytes_per_token * self.kv_rank_share, cached
        )
        t = roofline.forward_pass_time_s(
            np.asarray(flops, dtype=float) * self.compute_share,
            nbytes,
            self.peak_flop_per_s,
            self.mfu,
            self.mem_bandwidth_bytes_per_s,
            self.mem_efficiency,
            layers=self.layers,
            mem_overhead_per_layer_s=self.mem_overhead_per_layer_s,
            launch_floor_per_layer_s=self.launch_floor_per_layer_s,
            sharpness=self.knee_sharpness,
        )
        comm = np.where(self.accelerators > 1, self.collective_latency_s + tokens * self.collective_s_per_token, 0.0)
        return t + comm

    def in_batch_latency_s(self, flops: np.ndarray, tokens: np.ndarray) -> np.ndarray:
        """Wall time ``flops`` of ``tokens`` tokens add to a compute-bound batch on the placement (s).

        ``flops / (accelerators x peak x MFU)``, a full pipeline keeping every accelerator busy, plus
        the bytes the tokens add to the collectives, their latency shared by the batch, over the
        ``pipeline_stages`` (as :meth:`kvtier.scenario.Scenario.in_batch_compute_s`).  On one
        accelerator :meth:`in_batch_s`'s ``FLOPs / (peak x MFU)``.
        """
        compute = costs.compute_time_s(flops, self.peak_flop_per_s * self.accelerators, self.mfu)
        return compute + np.asarray(tokens, dtype=float) * self.collective_s_per_token / self.pipeline_stages

    def busy_accelerators(self, regime: str) -> float:
        """Accelerators a request's prefill keeps busy for its wall time, in ``regime`` (count).

        ``batch``: every accelerator (a full pipeline); ``lone``: one stage's ranks at a time,
        ``accelerators / pipeline_stages``.  Wall time x this is accelerator time.
        """
        if regime not in ("batch", "lone"):
            raise ValueError(f"regime must be 'batch' or 'lone', got {regime!r}")
        return self.accelerators / (1 if regime == "batch" else self.pipeline_stages)

    def prefix_flops(self, tokens: np.ndarray) -> np.ndarray:
        """FLOPs to recompute the first ``tokens`` tokens of a prompt: ``k N h + f h (h + 1) / 2`` (FLOP).

        Exactly the prefill work a cache hit on that prefix avoids: the rest of the prompt
        still attends to the prefix, whether recomputed or fetched.
        """
        return costs.regen_flops(
            0.0,
            tokens,
            self.active_params,
            self.attention_flops_per_position,
            flops_per_param_token=self.flops_per_param_token,
        )

    def in_batch_s(self, tokens: np.ndarray) -> np.ndarray:
        """Recomputing each prefix *inside a batch*: its marginal compute, FLOPs / (peak x MFU) (s).

        Engine model: its share of the batched step (``engine_batch_s``) times :meth:`busy_accelerators`
        of ``lone`` (a stage's ranks each work on its share while the other stages work on others).
        """
        if self.engine:
            return self.engine_curve(self.engine_batch_s, tokens) * self.busy_accelerators("lone")
        return costs.compute_time_s(self.prefix_flops(tokens), self.peak_flop_per_s, self.mfu)

    def lone_s(self, tokens: np.ndarray) -> np.ndarray:
        """Recomputing each prefix *alone*, as its own forward pass, in accelerator time (s); 0 for no tokens.

        :meth:`pass_latency_s` of the prefix with nothing cached before it (a prefix has no
        cached positions, so no attention read) times :meth:`busy_accelerators` of ``lone``.  On
        one accelerator ``max(FLOPs / (peak x MFU), weights / (memory bandwidth x efficiency))``:
        the pass streams every weight it touches once whatever its length.
        """
        tokens = np.asarray(tokens, dtype=float)
        safe = np.maximum(tokens, 1.0)
        if self.engine:  # the measured kernels' lone pass: its operations and its attention
            wall = self.engine_curve(self.engine_linear_s, safe) + self.engine_curve(self.engine_attention_s, safe)
        else:
            wall = self.pass_latency_s(self.prefix_flops(safe), safe, 0.0)
        return np.where(tokens > 0, wall * self.busy_accelerators("lone"), 0.0)

    def regen_s(self, tokens: np.ndarray, regime: str) -> np.ndarray:
        """Recomputing each prefix of ``tokens`` tokens in ``regime``: :meth:`in_batch_s` (``batch``) or :meth:`lone_s`.

        The one recompute cost of a reuse the report uses: the workload page's prefill avoided
        and the cost page's recomputation (:meth:`per_reference_s`) are both this.
        """
        if regime not in ("batch", "lone"):
            raise ValueError(f"regime must be 'batch' or 'lone', got {regime!r}")
        return self.in_batch_s(tokens) if regime == "batch" else self.lone_s(tokens)

    def per_reference_s(self, trace: Trace, regime: str) -> np.ndarray:
        """Each block reference's share of recomputing its prompt's prefix in ``regime`` (s, one per reference).

        The prefix through the block less the prefix before it, :meth:`regen_s` of each: the
        block's parameter FLOPs plus its attention over every token before it in the prompt.
        Over a request whose hits form a prefix of its prompt (the prefix property), the
        shares of its hits add up to :meth:`regen_s` of the hit prefix, exactly what
        :func:`saving` charges.  Alone, the first block of a prompt carries the weights' read.
        """
        tokens = trace.ref_tokens.astype(float)
        end = np.cumsum(tokens)
        before = np.repeat(np.r_[0.0, end][trace.starts[:-1]], np.diff(trace.starts))  # tokens of earlier prompts
        return self.share_s(end - before, tokens, regime)

    def share_s(self, upto: np.ndarray, tokens: np.ndarray, regime: str) -> np.ndarray:
        """A block's share of recomputing its prompt's prefix in ``regime`` (s): through it less before it.

        ``upto`` is the prompt's tokens through the block, ``tokens`` the block's own (tokens):
        :meth:`regen_s` of the one less :meth:`regen_s` of the other (:meth:`per_reference_s`).
        """
        return self.regen_s(upto, regime) - self.regen_s(upto - tokens, regime)

    def lone_memory_bound(self, tokens: np.ndarray) -> np.ndarray:
        """True where recomputing the prefix alone is memory-bound (the weights' read outlasts the compute).

        :func:`kvtier.formulas.roofline.bound` of the prefix's FLOPs against one read of the
        weights; False for no tokens.
        """
        tokens = np.asarray(tokens, dtype=float)
        side = roofline.bound(
            self.prefix_flops(tokens),
            self.weight_bytes,
            self.peak_flop_per_s,
            self.mfu,
            self.mem_bandwidth_bytes_per_s,
            self.mem_efficiency,
        )
        return (tokens > 0) & (side == roofline.BOUNDS[1])

    def fetch_copies(self, tokens: np.ndarray) -> np.ndarray:
        """Blocks of the serving engine a prefix of ``tokens`` tokens lies in: ``ceil(tokens / fetch_block_tokens)``.

        Each is fetched in :attr:`fetch_transfers` copies (:meth:`fetch_s`).

        Raises
        ------
        ValueError
            With no engine block (``fetch_block_tokens`` 0): the caller counts its own blocks.
        """
        if not self.fetch_block_tokens > 0:
            raise ValueError("fetch_copies needs fetch_block_tokens: with none a fetch counts the caller's blocks")
        return np.ceil(np.asarray(tokens, dtype=float) / self.fetch_block_tokens)

    def fetch_s(
        self,
        blocks: np.ndarray,
        tokens: np.ndarray,
        bandwidth_bytes_per_s: float,
        latency_s: float,
        copies: np.ndarray | None = None,
    ) -> np.ndarray:
        """Fetching each request's hit prefix over a link (s): :func:`kvtier.formulas.transfer.fetch_time_s`.

        The prefix's ``tokens x fetch_bytes_per_token`` bytes (one link's: under a placement a rank's shard
        times the ranks sharing the link; ``kv_bytes_per_token`` where 0) cross the link once, in
        ``ceil(tokens / fetch_block_tokens) x fetch_transfers`` transfers that each pay ``latency_s``: the
        serving engine's blocks, as :func:`kvtier.formulas.ttft.prefix_fetch_s` counts them; with
        ``fetch_block_tokens`` 0, ``blocks x fetch_transfers``.

        Parameters
        ----------
        blocks : array_like
            Blocks in each request's hit prefix.
        tokens : array_like
            Tokens in it (tokens).
        bandwidth_bytes_per_s : float
            The link's bandwidth, one direction (B/s).
        latency_s : float
            The link's latency per transfer (s).
        copies : array_like, optional
            The engine's blocks to copy, where ``tokens`` sums several requests' prefixes (a streamed trace's
            totals: :attr:`kvtier.formulas.cache.curve.HitTotals.fetch_copies`); by default :meth:`fetch_copies`.
        """
        blocks = np.asarray(blocks)
        tokens = np.asarray(tokens, dtype=float)
        if copies is None:
            copies = self.fetch_copies(tokens) if self.fetch_block_tokens > 0 else blocks
        t = transfer.fetch_time_s(
            tokens * (self.fetch_bytes_per_token or self.kv_bytes_per_token),
            bandwidth_bytes_per_s,
            latency_s,
            copies * self.fetch_transfers,
            self.min_transfer_s,
            self.link_efficiency,
            self.link_overhead_s,
        )
        return np.where(blocks > 0, t, 0.0)  # a request with no hit fetches nothing


@dataclass(frozen=True)
class Saving:
    """What an LRU tier of one size saves on a trace, per second of the trace's traffic."""

    capacity_blocks: float
    hit_ratio_blocks: float
    hit_ratio_tokens: float
    hit_tokens_per_s: float
    hit_bytes_per_s: float
    in_batch_gpu_s_per_s: float
    lone_gpu_s_per_s: float
    lone_memory_bound_share: float
    """Of the requests with a hit, the share whose prefix recomputed alone is memory-bound."""


def hit_totals(reuse: Reuse | LruHistogram, rc: RegenCosts, capacity_blocks: float = math.inf) -> HitTotals:
    """:class:`HitTotals` of an LRU tier of ``capacity_blocks`` blocks on a measured trace (in memory or streamed)."""
    if isinstance(reuse, LruHistogram):
        return reuse.totals(capacity_blocks)
    blocks, tokens = reuse.hit_tokens(capacity_blocks)
    hit = tokens > 0
    return HitTotals(
        hit_tokens=float(tokens.sum()),
        hit_blocks=float(blocks.sum()),
        in_batch_s=float(rc.in_batch_s(tokens).sum()),
        lone_s=float(rc.lone_s(tokens).sum()),
        hit_requests=float(hit.sum()),
        memory_bound_requests=float(rc.lone_memory_bound(tokens)[hit].sum()),
        per_request=(blocks, tokens),
        fetch_copies=float((rc.fetch_copies(tokens) if rc.fetch_block_tokens > 0 else blocks).sum()),
    )


def saving(reuse: Reuse | LruHistogram, rc: RegenCosts, capacity_blocks: float = math.inf) -> Saving:
    """Prefill work a tier of ``capacity_blocks`` avoids, per second of traffic, in both regimes.

    ``*_gpu_s_per_s`` is accelerator-seconds of recomputation avoided per second of the
    trace: the number of accelerators that recomputing the hits would keep busy.  ``reuse``
    is measured in memory (:class:`Reuse`) or streamed (:class:`LruHistogram`, with the
    same ``rc``).
    """
    tot = hit_totals(reuse, rc, capacity_blocks)
    duration = reuse.duration_s if isinstance(reuse, LruHistogram) else reuse.trace.duration_s
    # 0 s: no rate, but nothing is 0
    per_s = (1.0 / duration) if duration > 0 else (math.nan if tot.hit_tokens > 0 else 0.0)
    return Saving(
        capacity_blocks=float(capacity_blocks),
        hit_ratio_blocks=float(reuse.hit_ratio(capacity_blocks)),
        hit_ratio_tokens=float(reuse.hit_ratio(capacity_blocks, "tokens")),
        hit_tokens_per_s=tot.hit_tokens * per_s,
        hit_bytes_per_s=tot.hit_tokens * rc.tier_bytes_per_token * per_s,
        in_batch_gpu_s_per_s=tot.in_batch_s * per_s,
        lone_gpu_s_per_s=tot.lone_s * per_s,
        lone_memory_bound_share=tot.memory_bound_requests / tot.hit_requests if tot.hit_requests else 0.0,
    )
