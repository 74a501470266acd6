"""A block fetched and regenerated: its bytes, the links' transfer times, the forward pass in both regimes."""

from __future__ import annotations

import math
from functools import cache
from typing import Any

import numpy as np

from kvtier.errors import KvtierError
from kvtier.formulas import costs, parallel, roofline, transfer
from kvtier.inputs import engines, kernels
from kvtier.inputs.keys import BANDWIDTH_LABELS, LAYOUTS, MFU_LABELS, keys_in
from kvtier.scenario.placement import Placed

FORWARD_KEYS: tuple[str, ...] = keys_in("forward")
"""The assumption keys of the forward-pass model beyond the compute side (:meth:`Scenario.regen_time_s`,
:func:`kvtier.formulas.roofline.forward_pass_time_s`): every page that times a lone block declares them."""

TRANSFER_KEYS: tuple[str, ...] = keys_in("transfer")
"""The assumption keys of the transfer model beyond latency and bandwidth (:meth:`Scenario.fetch_s`,
:func:`kvtier.formulas.transfer.fetch_time_s`)."""

ENGINE_KEYS: tuple[str, ...] = (
    "regen.model",
    *keys_in("kernels"),
    "engine",
    "model",
    "kv_dtype",
    "weight_dtype",
    "interior.anchor_every",
    "regen.batch_tokens",
    *keys_in("placement"),
)
"""The assumption keys the engine model reads (:meth:`Timed.engine_regen_s`): its tables, the model, its types and
placement, the recomputed span.  A page that times regeneration declares them, so that it builds under
``regen.model: engine``."""

POINT_KEYS: tuple[str, ...] = keys_in("point", "placement", "forward", "transfer", "kernels")
"""The assumption keys the illustrative tail block reads: its fetch (either layout) and its regeneration
in both regimes.  Pages that show the point declare these and add their own (``KEYS``)."""


class Timed(Placed):
    """A scenario's block: its fetch over each link and its regeneration, a lone block's and inside a batch."""

    # ---- the block -------------------------------------------------------
    @property
    def block_tokens(self) -> int:
        """Tokens in one KV block."""
        return int(self.v("block_tokens"))

    @property
    def block_bytes(self) -> float:
        """Bytes of one KV block (B)."""
        return float(costs.block_bytes(self.kv_bytes_per_token, self.block_tokens))

    # ---- fetch and regenerate ---------------------------------------------
    def bandwidth(self, label: str) -> float:
        """The bandwidth bracket ``label`` (optimistic, mid, pessimistic), B/s."""
        return self.v(f"bandwidth.{label}")

    def mfu(self, label: str) -> float:
        """The MFU bracket ``label`` (optimistic, typical, conservative), fraction."""
        return self.v(f"mfu.{label}")

    @property
    def layer_chunks(self) -> int:
        """Chunks one accelerator's shard of a block lies in, as a paged cache stores it (count).

        Per layer of the largest pipeline stage one for K and one for V (one latent under MLA);
        every layer on one pipeline stage.
        """
        layers = int(parallel.stage_layers(self.model.n_layers, self.placement.pp))
        return layers * (1 if self.model.attention == "MLA" else 2)

    def transfers(self, layout: str) -> int:
        """Transfers that fetch one block laid out as ``layout`` (:data:`LAYOUTS`): 1, or :attr:`layer_chunks`."""
        if layout not in LAYOUTS:
            raise ValueError(f"layout {layout!r} is not one of {LAYOUTS}")
        return 1 if layout == "contiguous" else self.layer_chunks

    @property
    def engine(self) -> engines.Engine | None:
        """The serving engine named by the ``engine`` key (:mod:`kvtier.inputs.engines`); None for ``none``."""
        return engines.engine_named(str(self.assumptions.value("engine")))

    @property
    def fetch_transfers(self) -> int:
        """Transfers that fetch one block: the ``engine``'s layout, else ``fetch_layout``'s (:meth:`transfers`)."""
        engine = self.engine
        if engine is not None:
            # under pipeline parallelism each stage's accelerators move the layers of their stage
            stage = int(parallel.stage_layers(self.model.n_layers, self.placement.pp))
            return engine.transfers_per_block(stage, self.layer_chunks, self.model.attention == "MLA")
        return self.transfers(str(self.assumptions.value("fetch_layout")))

    @property
    def layer_overlap(self) -> bool:
        """Whether a fetch is loaded layer by layer under the forward pass: the ``engine``'s; False for ``none``."""
        engine = self.engine
        return bool(engine is not None and engine.layer_overlap)

    @property
    def copy_method(self) -> str:
        """How each copy of a fetch is issued: one of :data:`kvtier.inputs.engines.COPY_METHODS`, or ``"none"``.

        ``fetch.copy_method`` when it names a method (or ``none``); under its seed value ``engine`` the
        engine preset's ``copy_method``, and ``"none"`` under ``engine: none`` (the chapter's fetch).
        """
        return self._or_engine("fetch.copy_method", "copy_method", "none")

    def _or_engine(self, key: str, field: str, without: str) -> str:
        """``key``'s value, or under its value ``engine`` the engine preset's ``field`` (``without`` for no engine)."""
        value = str(self.assumptions.value(key))
        if value != "engine":
            return value
        engine = self.engine
        return str(getattr(engine, field)) if engine is not None else without

    @property
    def kv_storage(self) -> str:
        """How the tensor-parallel group writes a block to a tier: one of :data:`kvtier.inputs.engines.KV_STORAGE`.

        ``parallel.kv_storage`` when it names one; under its seed value ``engine`` the engine preset's
        ``kv_storage``, and ``once`` under ``engine: none`` (the chapter's one accelerator).
        """
        return self._or_engine("parallel.kv_storage", "kv_storage", "once")

    @property
    def stored_copies(self) -> float:
        """Copies of a logical block a tier holds (dimensionless): :func:`kvtier.formulas.parallel.stored_copies`.

        1 stored once, or per rank while the KV heads split evenly; ``tp`` for an MLA latent stored per rank
        (``mla-once``: 1 for a latent, per rank for heads).
        """
        m = self.model
        return float(parallel.stored_copies(m.n_kv_heads, self.placement.tp, m.attention == "MLA", self.kv_storage))

    @property
    def tier_bytes_per_token(self) -> float:
        """Bytes a tier stores, writes and reads per token of KV (B): :attr:`kv_bytes_per_token` x :attr:`stored_copies`

        Every capacity in the report (a tier of ``C`` bytes holds ``C / (tier_bytes_per_token x tokens)``
        blocks of ``tokens``) reads this, so the copies a placement stores count on every page.
        """
        return self.kv_bytes_per_token * self.stored_copies

    @property
    def transfer_latency_s(self) -> float:
        """The fixed latency each transfer of a fetch pays at the bandwidth brackets (s).

        Where a copy method applies (:attr:`copy_method`), its per-copy cost
        ``fetch.copy_cost.METHOD`` (:data:`kvtier.inputs.engines.COPY_COST_KEYS`) *replaces*
        ``fetch_latency``: the cost of issuing and completing one copy over the host link is the
        whole of a copy's fixed time there (the measured ``fetch_latency`` of the h200-measured set
        is itself a lone copy's, ``fetch.copy_cost.lone_dma``), so adding the two would count it
        twice.  Under ``copy_method`` ``none`` (the seed's ``engine: none``) it is ``fetch_latency``,
        the chapter's term.  The tier ladder's links keep their own ``tier_latency.*`` per copy.
        """
        return self.v(self.transfer_latency_key)

    @property
    def transfer_latency_key(self) -> str:
        """The key :attr:`transfer_latency_s` reads: ``fetch_latency``, or ``fetch.copy_cost.METHOD``."""
        method = self.copy_method
        return "fetch_latency" if method == "none" else engines.COPY_COST_KEYS[method]

    @property
    def block_latency_s(self) -> float:
        """The latency one block's fetch pays: :attr:`transfer_latency_s` x :attr:`fetch_transfers` (s)."""
        return self.transfer_latency_s * self.fetch_transfers

    @property
    def link_efficiency(self) -> float:
        """Share of the link's pinned, one-way rate a fetch reaches (:func:`kvtier.formulas.transfer.link_efficiency`).

        ``fetch.pageable_efficiency`` when ``fetch.host_memory`` is pageable, times
        ``fetch.duplex_efficiency`` when ``fetch.contention`` is duplex; 1 for neither.  A KV pool is
        far larger than the host CPU's cache (``fetch.host_cache``), so a pageable fetch is staged from
        DRAM: :func:`kvtier.formulas.transfer.staging_efficiency` of a source beyond the cache is the cold
        share ``fetch.pageable_efficiency``, whatever the cache (``fetch.pageable_warm_efficiency`` and
        ``fetch.host_cache`` describe only a buffer copied again and again, as the measured page's
        benchmark did, and are not read here).
        """
        return float(
            transfer.link_efficiency(
                self.assumptions.value("fetch.host_memory") == "pageable",
                self.v("fetch.pageable_efficiency"),  # staging_efficiency of a pool beyond any cache: the cold share
                self.assumptions.value("fetch.contention") == "duplex",
                self.v("fetch.duplex_efficiency"),
            )
        )

    @property
    def link_overhead_s(self) -> float:
        """Fixed time each transfer of a fetch adds to its latency (s): ``fetch.pageable_overhead`` when
        ``fetch.host_memory`` is pageable, else 0."""
        return self.v("fetch.pageable_overhead") if self.assumptions.value("fetch.host_memory") == "pageable" else 0.0

    def link_fetch_s(
        self,
        n_bytes: float | np.ndarray,
        bandwidth_bytes_per_s: float | np.ndarray,
        latency_s: float | np.ndarray,
        transfers: float | np.ndarray = 1,
    ) -> np.ndarray:
        """Time to move ``n_bytes`` over a link in ``transfers`` transfers under the set's transfer model (s).

        :func:`kvtier.formulas.transfer.fetch_time_s` with ``fetch.min_transfer_time`` as the floor,
        :attr:`link_efficiency` as the share of the rate reached and :attr:`link_overhead_s` added to
        each transfer's latency: the one fetch every page and command times (the chapter's
        ``transfers x latency + bytes / bandwidth`` at the seed's 0, 1 and 0).
        """
        return transfer.fetch_time_s(
            n_bytes,
            bandwidth_bytes_per_s,
            latency_s,
            transfers,
            self.v("fetch.min_transfer_time"),
            self.link_efficiency,
            self.link_overhead_s,
        )

    def fetch_s(self, bandwidth_bytes_per_s: float | np.ndarray) -> np.ndarray:
        """Fetch time of one block over ``bandwidth`` (s), its transfers' latency included.

        :meth:`link_fetch_s` of :attr:`fetch_bytes` at :attr:`transfer_latency_s` (``fetch_latency``, or
        the copy method's per-copy cost) in :attr:`fetch_transfers`.
        """
        return self.link_fetch_s(self.fetch_bytes, bandwidth_bytes_per_s, self.transfer_latency_s, self.fetch_transfers)

    @property
    def block_flops(self) -> float:
        """Parameter FLOPs to regenerate one tail block (FLOP)."""
        return float(costs.forward_flops(self.block_tokens, self.active_params, self.v("flops_per_param_token")))

    def regen_s(self, mfu: float | np.ndarray) -> np.ndarray:
        """Tail-block regeneration time at ``mfu`` of ``peak_flops``, inside a batch (s).

        :meth:`in_batch_regen_s` at position 0: the block's FLOPs, its attention over itself
        included (:meth:`interior_flops`), over every accelerator of the placement, plus the bytes
        its tokens add to the collectives.  The one tail-block time of every page: the source
        chapter's parameter term (:attr:`block_flops`) is 99.98 % of it for the seed's model.
        """
        return self.in_batch_regen_s(0, "resident", mfu)

    def in_batch_compute_s(
        self, flops: float | np.ndarray, mfu: float | np.ndarray, peak_flop_per_s: float | np.ndarray | None = None
    ) -> np.ndarray:
        """Marginal time of ``flops`` of a block inside a batch under the placement (s).

        ``flops / (accelerators x peak x mfu)``: a full pipeline keeps every accelerator busy, so the
        block's work spreads over all of them; plus the bytes its tokens add to the collectives over
        the stages, their latency shared by the batch (``latency_share = 0``), ``/ pp``.  On one
        accelerator exactly the source chapter's ``flops / (peak x mfu)``.
        """
        peak = self.v("peak_flops") if peak_flop_per_s is None else peak_flop_per_s
        p = self.placement
        comm = self.collectives_s(self.block_tokens, 0.0) / p.pp
        return costs.compute_time_s(flops, peak * p.accelerators, mfu) + comm

    def fetch_by_label(self) -> dict[str, float]:
        """Fetch time (s) for each bandwidth bracket."""
        return {label: float(self.fetch_s(self.bandwidth(label))) for label in BANDWIDTH_LABELS}

    def regen_by_label(self) -> dict[str, float]:
        """Tail regeneration time (s) for each MFU bracket."""
        return {label: float(self.regen_s(self.mfu(label))) for label in MFU_LABELS}

    @property
    def illustrative(self) -> dict[str, float | str]:
        """The illustrative point: its labels, bandwidth, MFU, fetch and regen times, ratio."""
        b = str(self.assumptions.value("illustrative.bandwidth"))
        m = str(self.assumptions.value("illustrative.mfu"))
        fetch = float(self.fetch_s(self.bandwidth(b)))
        regen = float(self.regen_s(self.mfu(m)))
        return {
            "bandwidth_label": b,
            "mfu_label": m,
            "bandwidth_bytes_per_s": self.bandwidth(b),
            "mfu": self.mfu(m),
            "fetch_s": fetch,
            "regen_s": regen,
            "ratio": regen / fetch,
        }

    # ---- interior blocks ------------------------------------------------------
    def recompute_span(self, position: float | np.ndarray, upstream: str) -> tuple[np.ndarray, np.ndarray]:
        """First token and count of the tokens recomputed to regenerate the block at ``position`` (tokens).

        :func:`kvtier.formulas.costs.recompute_span` of the set's block and ``interior.anchor_every``.
        """
        return costs.recompute_span(position, self.block_tokens, upstream, self.v("interior.anchor_every"))

    def interior_flops(self, position: float | np.ndarray, upstream: str) -> np.ndarray:
        """FLOPs to regenerate the block at ``position``, attention included (FLOP)."""
        return costs.regen_flops(
            position,
            self.block_tokens,
            self.active_params,
            self.model.attention_flops_per_position(),
            upstream,
            self.v("interior.anchor_every"),
            self.v("flops_per_param_token"),
        )

    def interior_regen_s(self, position: float | np.ndarray, upstream: str, mfu: float | np.ndarray) -> np.ndarray:
        """Regeneration time of the block at ``position`` at ``mfu`` of the peak, inside a batch (s).

        Under the engine model, :meth:`in_batch_regen_s`: its share of a batched step, from measured kernels.
        """
        if self.assumptions.value("regen.model") == "engine":
            return self.in_batch_regen_s(position, upstream, mfu)
        return self.in_batch_compute_s(self.interior_flops(position, upstream), mfu)

    # ---- regeneration models: MFU (the chapter) or roofline ---------------------
    @property
    def batch_tokens(self) -> int:
        """Tokens in the forward pass that regenerates the block: ``regen.batch_tokens``, at least the block."""
        return max(int(self.v("regen.batch_tokens")), self.block_tokens)

    @property
    def kv_rank_bytes_per_token(self) -> float:
        """KV bytes per token one rank of the placement holds over all the layers (B)."""
        m = self.model  # one rank's KV heads over all the layers: the stages are crossed one after another
        heads = parallel.kv_shard_share(m.n_kv_heads, m.n_layers, self.placement.tp, 1, m.attention == "MLA")
        return self.kv_bytes_per_token * float(heads)

    def regen_bytes(
        self,
        position: float | np.ndarray,
        upstream: str,
        batch_tokens: float | np.ndarray | None = None,
        with_kv: bool = True,
    ) -> np.ndarray:
        """Bytes one accelerator reads from device memory on the block's account when regenerating it (B).

        The recomputed tokens (the block, or the prefix from the nearest anchor) share the
        weight read with the rest of the batch; attention reads the KV cached before them.
        Under a placement: what the busiest rank reads over every stage the pass crosses, its
        share of the dense weights and of the KV.  For a mixture-of-experts model only the
        experts the pass's tokens are routed to (:meth:`touched_weight_bytes`, uniform routing).
        ``with_kv=False`` leaves the cached KV out (serial attention reads it, :meth:`attention_s`).
        """
        first, n = self.recompute_span(position, upstream)
        batch = self.batch_tokens if batch_tokens is None else batch_tokens
        pass_tokens = np.maximum(batch, n)
        kv_rank = self.kv_rank_bytes_per_token if with_kv else 0.0
        return roofline.regen_bytes_read(self.touched_weight_bytes(pass_tokens), n, pass_tokens, kv_rank, first)

    def regen_time_s(
        self,
        position: float | np.ndarray,
        upstream: str,
        mfu: float | np.ndarray,
        *,
        model: str | None = None,
        peak_flop_per_s: float | np.ndarray | None = None,
        mem_bandwidth_bytes_per_s: float | np.ndarray | None = None,
        batch_tokens: float | np.ndarray | None = None,
    ) -> np.ndarray:
        """Regeneration time of the block at ``position`` under the ``regen.model`` (s).

        ``mfu``: FLOPs / (peak x MFU), the source chapter's model.  ``roofline``: the larger
        of that and the bytes read over the device-memory bandwidth x efficiency.  The
        keyword arguments override the assumption set's peak, memory bandwidth and batch.
        """
        model = model or str(self.assumptions.value("regen.model"))
        if model == "engine":
            return self.engine_regen_s(position, upstream, batch_tokens)
        peak = self.v("peak_flops") if peak_flop_per_s is None else peak_flop_per_s
        flops = self.interior_flops(position, upstream)
        if model == "mfu":
            return self.in_batch_compute_s(flops, mfu, peak)
        bw = self.v("regen.mem_bandwidth") if mem_bandwidth_bytes_per_s is None else mem_bandwidth_bytes_per_s
        serial = str(self.assumptions.value("regen.attention")) == "serial"
        nbytes = self.regen_bytes(position, upstream, batch_tokens, with_kv=not serial)
        rank_flops = flops * self.compute_share
        first, n = self.recompute_span(position, upstream)
        batch = self.batch_tokens if batch_tokens is None else batch_tokens
        attention = self.attention_s(first) if serial else 0.0
        time = roofline.forward_pass_time_s(
            rank_flops,
            nbytes,
            peak,
            mfu,
            bw,
            self.v("regen.mem_efficiency"),
            layers=self.model.n_layers,
            mem_overhead_per_layer_s=self.v("regen.mem_overhead_per_layer"),
            launch_floor_per_layer_s=self.v("regen.launch_floor_per_layer"),
            sharpness=self.knee_sharpness,
            share=n / np.maximum(batch, n),
            serial_s=attention,
        )
        return time + self._pass_collectives_s(position, upstream, batch_tokens)

    @property
    def knee_sharpness(self) -> float:
        """The exponent of the knee blend, ``regen.knee_sharpness``; its 0 is the plain maximum, ``inf``."""
        p = self.v("regen.knee_sharpness")
        if p == 0:
            return math.inf
        if p < 1:
            raise KvtierError(f"key 'regen.knee_sharpness' must be 0 (the plain maximum) or at least 1, got {p:g}")
        return p

    def attention_s(self, context_positions: float | np.ndarray) -> np.ndarray:
        """One rank's serial attention over ``context_positions`` cached positions, every layer (s).

        :func:`kvtier.formulas.roofline.attention_time_s` of the rank's cached KV bytes over the
        model's layers, at ``regen.attention_fixed_per_layer`` and ``regen.attention_efficiency``
        of ``regen.mem_bandwidth``: what a block's attention adds when ``regen.attention`` is serial.
        """
        return roofline.attention_time_s(
            self.kv_rank_bytes_per_token * np.asarray(context_positions, dtype=np.float64),
            self.model.n_layers,
            self.v("regen.attention_fixed_per_layer"),
            self.v("regen.mem_bandwidth"),
            self.v("regen.attention_efficiency"),
        )

    def _pass_collectives_s(
        self, position: float | np.ndarray, upstream: str, batch_tokens: float | np.ndarray | None
    ) -> np.ndarray:
        """The collectives a roofline pass charges the block: its tokens' bytes, the latency shared by the pass (s).

        A pass over ``n`` recomputed tokens among ``batch`` pays each operation's latency once; the
        block's share is ``n / batch`` (all of it for a lone block), and the stages are crossed one
        after another.  0 on one accelerator.
        """
        if self.placement.accelerators == 1:
            return np.zeros(np.shape(position))
        _, n = self.recompute_span(position, upstream)
        batch = self.batch_tokens if batch_tokens is None else batch_tokens
        return self.collectives_s(n, n / np.maximum(batch, n))

    def regen_bound(
        self,
        position: float | np.ndarray,
        upstream: str,
        mfu: float | np.ndarray,
        *,
        peak_flop_per_s: float | np.ndarray | None = None,
        mem_bandwidth_bytes_per_s: float | np.ndarray | None = None,
        batch_tokens: float | np.ndarray | None = None,
    ) -> np.ndarray:
        """Which side of the roofline binds the block's regeneration: ``"compute"`` or ``"memory"``.

        The compute side at ``mfu`` of the peak against the bytes of :meth:`regen_bytes` over
        the device-memory bandwidth x ``regen.mem_efficiency`` (:func:`kvtier.formulas.roofline.bound`),
        whatever ``regen.model`` says.  The keyword arguments override the assumption set's
        peak (FLOP/s), memory bandwidth (B/s) and batch (tokens), as in :meth:`regen_time_s`.
        """
        peak = self.v("peak_flops") if peak_flop_per_s is None else peak_flop_per_s
        bw = self.v("regen.mem_bandwidth") if mem_bandwidth_bytes_per_s is None else mem_bandwidth_bytes_per_s
        flops = self.interior_flops(position, upstream) * self.compute_share
        nbytes = self.regen_bytes(position, upstream, batch_tokens)
        return roofline.bound(flops, nbytes, peak, mfu, bw, self.v("regen.mem_efficiency"))

    # ---- the two regimes: a lone block and a block inside a batch ------------------
    def in_batch_regen_s(self, position: float | np.ndarray, upstream: str, mfu: float | np.ndarray) -> np.ndarray:
        """Regeneration time *inside a batch*: the block's marginal compute, FLOPs / (peak x MFU) (s).

        The block's tokens ride along a forward pass large enough to be compute-bound, so the
        weight read is shared and only its FLOPs count: the source chapter's model.  Under the
        engine model, the block's share of a batched step of ``regen.step_tokens`` tokens
        (:meth:`engine_regen_s`).
        """
        if self.assumptions.value("regen.model") == "engine":
            return self.engine_regen_s(position, upstream, self.v("regen.step_tokens"))
        return self.regen_time_s(position, upstream, mfu, model="mfu")

    def lone_regen_s(
        self,
        position: float | np.ndarray,
        upstream: str,
        mfu: float | np.ndarray,
        *,
        peak_flop_per_s: float | np.ndarray | None = None,
        mem_bandwidth_bytes_per_s: float | np.ndarray | None = None,
    ) -> np.ndarray:
        """Regeneration time of a *lone block*: its tokens are the whole forward pass (s).

        The roofline ``max(FLOPs / (peak x MFU), bytes read / (regen.mem_bandwidth x
        regen.mem_efficiency))`` with no other tokens sharing the weight read: the batch is
        the recomputed tokens themselves (the block, or the prefix from the nearest anchor).
        Under the engine model, the engine's measured pass of those tokens alone (:meth:`engine_regen_s`).
        """
        if self.assumptions.value("regen.model") == "engine":
            return self.engine_regen_s(position, upstream, self.block_tokens)
        return self.regen_time_s(
            position,
            upstream,
            mfu,
            model="roofline",
            peak_flop_per_s=peak_flop_per_s,
            mem_bandwidth_bytes_per_s=mem_bandwidth_bytes_per_s,
            batch_tokens=self.block_tokens,
        )

    def lone_bound(self, position: float | np.ndarray, upstream: str, mfu: float | np.ndarray) -> np.ndarray:
        """Which side of the roofline binds a lone block's regeneration: ``"compute"`` or ``"memory"``."""
        return self.regen_bound(position, upstream, mfu, batch_tokens=self.block_tokens)

    # ---- the engine model: a serving engine's measured kernels ------------------------
    @property
    def kernel_engine(self) -> str:
        """The engine whose kernel tables time regeneration: ``regen.engine``, or for ``auto`` the ``engine``
        key's (vLLM for ``none``, and for LMCache and Mooncake, which run under vLLM)."""
        chosen = str(self.assumptions.value("regen.engine"))
        if chosen != "auto":
            return chosen
        name = str(self.assumptions.value("engine"))
        return next((kernel for prefix, kernel in _ENGINE_KERNELS if name.startswith(prefix)), "vllm")

    @property
    def kernel_tables(self) -> kernels.Tables:
        """The table set of ``regen.system``, :attr:`kernel_engine` and ``regen.engine_version``."""
        return kernels.tables(
            str(self.assumptions.value("regen.system")),
            self.kernel_engine,
            str(self.assumptions.value("regen.engine_version")),
        )

    @property
    def kernel_estimator(self) -> kernels.Estimator:
        """The model's forward pass compiled for :attr:`kernel_tables` under the placement's TP, PP and EP."""
        p = self.placement
        return kernels.estimator(
            kernels.model_config(str(self.assumptions.value("model"))),
            str(self.assumptions.value("model")),  # the preset's name or the config's path, for messages
            self.kernel_tables,
            tp=p.tp,
            pp=p.pp,
            ep=p.ep,
            kv_dtype=self.kv_dtype,
            # auto: the estimator reads the config's quantization_config itself (DeepSeek-V3's block-scaled fp8)
            weight_dtype="auto" if self.assumptions.value("weight_dtype") == "auto" else self.weight_dtype,
        )

    def engine_regen_s(
        self,
        position: float | np.ndarray,
        upstream: str,
        batch_tokens: float | np.ndarray | None = None,
        *,
        strict: bool = False,
    ) -> np.ndarray:
        """Regeneration time of the block at ``position`` from an engine's measured kernels (s).

        The tokens recomputed (:func:`kvtier.formulas.costs.recompute_span`: the block after its
        cached prefix, or for an evicted prefix everything from the nearest anchor) are timed by
        ``aiconfigurator-core``'s estimator over :attr:`kernel_tables`:

        - **a lone pass** (``batch_tokens`` at most the recomputed tokens): the estimator's own
          prefill step of one sequence, the recomputed tokens after the cached ones;
        - **inside a batch** (more ``batch_tokens``): composed here from its per-operation times.
          The block's share ``n / batch_tokens`` of the non-attention operations (GEMMs, norms,
          MoE, collectives) of a one-sequence step of ``batch_tokens`` tokens, plus its own
          attention: the attention operations (``context_attention``, or MLA's
          ``context_mla_block``) of a step of ``batch_tokens / n`` sequences like it (at most the
          table's batch), per sequence.  A marginal cost (the step with the block minus without)
          would be the textbook definition, but differences of interpolated tables swing by 2x
          between neighbouring batches; the share is smooth.

        The placement's collectives are the estimator's (its all-reduce and pipeline tables), not
        :meth:`collectives_s`.  A pass outside the tables' measured grid is, under ``regen.beyond_grid:
        refuse``, NaN, so that a page's sweep shows where the tables end, or with ``strict`` one line
        naming the bound (:meth:`kvtier.inputs.kernels.Estimator.check`), as a command does; under
        ``extrapolate`` it is the package's extrapolation (:meth:`engine_extrapolated` says where).
        """
        first, n = self.recompute_span(position, upstream)
        batch = self.v("regen.batch_tokens") if batch_tokens is None else batch_tokens
        first_b, n_b, batch_b = np.broadcast_arrays(first, n, np.asarray(batch, dtype=np.float64))
        est = self.kernel_estimator
        extrapolate = self.assumptions.value("regen.beyond_grid") == "extrapolate"
        out = np.empty(first_b.shape)
        for index in np.ndindex(first_b.shape):
            try:
                args = int(first_b[index]), int(n_b[index]), int(batch_b[index])
                out[index] = _engine_pass_ms(est, *args, extrapolate=extrapolate) / 1e3
            except kernels.OutsideGrid:
                if strict:
                    raise
                out[index] = np.nan
        return out if out.ndim else out[()]

    def engine_curves(self) -> dict[str, Any]:
        """The engine model's prefix curves, as :class:`kvtier.formulas.cache.regen.RegenCosts` takes them.

        A prompt prefix of ``n`` tokens recomputed from its start (:meth:`engine_regen_s` at position 0,
        ``n`` tokens, no cached prefix), tabulated at 0 and at ``n`` from 1 token up, eight points an
        octave and the grid's last sequence: alone (the estimator's pass, split into attention and
        the other operations, each a running maximum over the lengths) and inside a batch (its share
        of a ``regen.step_tokens`` step).  Up to
        the tables' measured grid under ``regen.beyond_grid: refuse`` (the longest sequence, or the most GEMM
        rows where fewer: A100's vLLM tables stop at 8,192), up to
        :data:`ENGINE_TABLE_TOKENS` tokens under ``extrapolate``.
        """
        est = self.kernel_estimator
        extrapolate = self.assumptions.value("regen.beyond_grid") == "extrapolate"
        return _engine_curves(est, int(self.v("regen.step_tokens")), extrapolate)

    def engine_extrapolated(
        self, position: float | np.ndarray, upstream: str, batch_tokens: float | np.ndarray | None = None
    ) -> str:
        """The first bound of the kernel tables' grid that :meth:`engine_regen_s` of these blocks crosses, in
        words (:meth:`kvtier.inputs.kernels.Estimator.crossed`); empty where every pass is inside the grid."""
        first, n = self.recompute_span(position, upstream)
        batch = self.v("regen.batch_tokens") if batch_tokens is None else batch_tokens
        first_b, n_b, batch_b = np.broadcast_arrays(first, n, np.asarray(batch, dtype=np.float64))
        est = self.kernel_estimator
        for f, k, b in zip(first_b.ravel(), n_b.ravel(), batch_b.ravel(), strict=True):
            what = _engine_crossed(est, int(f), int(k), int(b))
            if what:
                return what
        return ""


ENGINE_TABLE_TOKENS = 2**21
"""The longest prompt prefix the engine model's curves reach under ``regen.beyond_grid: extrapolate`` (tokens)."""


@cache
def _engine_curves(est: kernels.Estimator, step_tokens: int, extrapolate: bool) -> dict[str, Any]:
    """:meth:`Timed.engine_curves` of one estimator, batched step and choice beyond the grid (cached per process)."""
    # a lone pass of n tokens is n GEMM rows and a sequence of n: inside the grid up to the smaller bound
    grid = min(est.tables.max_sequence_tokens, est.tables.max_gemm_tokens)
    top = ENGINE_TABLE_TOKENS if extrapolate else grid
    octaves = math.log2(top)
    tokens = np.unique(np.r_[np.round(np.geomspace(1, top, int(8 * octaves) + 1)), grid]).astype(int)
    tokens = tokens[tokens <= top]
    linear, attention, batch = [0.0], [0.0], [0.0]
    for n in tokens:
        ops = est.op_ms(1, int(n), 0, extrapolate=extrapolate)
        own = sum(ops.get(op, 0.0) for op in _ATTENTION_OPS)
        linear.append((sum(ops.values()) - own) / 1e3)
        attention.append(own / 1e3)
        batch.append(_engine_pass_ms(est, 0, int(n), step_tokens, extrapolate=extrapolate) / 1e3)
    # the tables' noise at a few tokens (a 3-token pass timed below a 2-token one) is flattened by a running
    # maximum: a longer prefix never costs less, and no block's share of its prompt's recomputation is negative
    return {
        "engine_tokens": (0.0, *(float(n) for n in tokens)),
        "engine_linear_s": tuple(np.maximum.accumulate(linear).tolist()),
        "engine_attention_s": tuple(np.maximum.accumulate(attention).tolist()),
        "engine_batch_s": tuple(batch),
        "engine_label": est.tables.label,
        "engine_grid_tokens": float(grid),
    }


_ENGINE_KERNELS: tuple[tuple[str, str], ...] = (
    ("vllm", "vllm"),
    ("lmcache", "vllm"),
    ("mooncake", "vllm"),
    ("sglang", "sglang"),
    ("tensorrt-llm", "trtllm"),
)
"""Whose kernels an ``engine`` preset runs, by the preset name's start (``regen.engine: auto``)."""

_ATTENTION_OPS = ("context_attention", "context_mla_block")
"""The estimator's operations that attend over a sequence's cached prefix (MLA's block holds its projections too)."""


def _engine_passes(est: kernels.Estimator, first: int, n: int, batch: int) -> tuple[tuple[int, int, int], ...]:
    """The estimator's passes (sequences, sequence tokens, cached tokens) that time a block's regeneration:
    ``n`` tokens after ``first`` cached ones, alone or in a step of ``batch`` (:meth:`Timed.engine_regen_s`)."""
    if batch <= n:
        return ((1, first + n, first),)
    sequences = max(1, min(est.tables.max_batch, batch // n))
    return ((1, batch, 0), (sequences, first + n, first))


def _engine_crossed(est: kernels.Estimator, first: int, n: int, batch: int) -> str:
    """The first grid bound :func:`_engine_pass_ms`'s passes cross, in words; empty inside the grid."""
    for sequences, tokens, cached in _engine_passes(est, first, n, batch):
        what = est.crossed(sequences, tokens, tokens - cached)
        if what:
            return what
    return ""


def _engine_pass_ms(est: kernels.Estimator, first: int, n: int, batch: int, *, extrapolate: bool = False) -> float:
    """A block's regeneration in ms: ``n`` tokens after ``first`` cached ones, alone or in a step of ``batch``
    (:meth:`Timed.engine_regen_s`); beyond the grid refused unless ``extrapolate``."""
    passes = _engine_passes(est, first, n, batch)
    if len(passes) == 1:
        return est.pass_ms(*passes[0], extrapolate=extrapolate)
    step = est.op_ms(*passes[0], extrapolate=extrapolate)
    shared = sum(ms for op, ms in step.items() if op not in _ATTENTION_OPS) * n / batch
    sequences = passes[1][0]
    own = est.op_ms(*passes[1], extrapolate=extrapolate)
    return shared + sum(own.get(op, 0.0) for op in _ATTENTION_OPS) / sequences
