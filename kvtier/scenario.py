"""A scenario: an assumption set resolved against its model into the report's numbers.

:class:`Scenario` is the one place where assumption keys meet formulas.  It reads
values from an :class:`~kvtier.inputs.assumptions.AssumptionSet`, loads the model, and calls
the pure functions of :mod:`kvtier.formulas.costs` and :mod:`kvtier.formulas.capacity`, and
gathers the inputs of the tier-pricing model (:mod:`kvtier.formulas.tiering`: prices, link
presets, blocks) and what recomputing a reuse costs (:meth:`Scenario.regen_costs`), with which
:mod:`kvtier.analysis` measures the workload trace.  Everything the notebooks, tables and CLI print
comes through here.  Numbers only: the words that describe a scenario live in
:mod:`kvtier.report.words`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache, cached_property

import numpy as np

from kvtier.errors import KvtierError
from kvtier.formulas import capacity, costs, parallel, roofline, tiering, transfer
from kvtier.formulas.cache.regen import RegenCosts
from kvtier.inputs import engines, hardware
from kvtier.inputs.assumptions import Assumption, AssumptionSet, load_assumptions, seed
from kvtier.inputs.keys import (
    BANDWIDTH_LABELS,
    COST_RANGES,
    LAYOUTS,
    MFU_LABELS,
    PARALLEL_KEYS,
    keys_in,
    tier_latency_key,
)
from kvtier.inputs.models import ModelSpec, dtype_bytes, load_model

PLACEMENT_KEYS: tuple[str, ...] = keys_in("placement")
"""The assumption keys the placement reads: its counts, the collectives' links and the fit check
(``parallel.hbm_capacity`` against weights and one sequence of ``context.long``).  Every page whose
fetch or regeneration follows the placement declares them (``POINT_KEYS`` holds them)."""

FORWARD_KEYS: tuple[str, ...] = keys_in("forward")
"""The assumption keys of the forward-pass model beyond the compute side (:meth:`Scenario.regen_time_s`,
:func:`kvtier.formulas.roofline.forward_pass_time_s`): every page that times a lone block declares them."""

TRANSFER_KEYS: tuple[str, ...] = keys_in("transfer")
"""The assumption keys of the transfer model beyond latency and bandwidth (:meth:`Scenario.fetch_s`,
:func:`kvtier.formulas.transfer.fetch_time_s`)."""

POINT_KEYS: tuple[str, ...] = keys_in("point", "placement", "forward", "transfer")
"""The assumption keys the illustrative tail block reads: its fetch (either layout) and its regeneration
in both regimes.  Pages that show the point declare these and add their own (``KEYS``)."""

PRICE_KEYS: dict[str, str] = {
    "cost.accelerator_hour": "accelerator_usd_per_s",
    "cost.hbm_share": "hbm_share",
    "cost.hbm_capacity": "hbm_bytes",
    "cost.dram_gb": "dram_usd_per_byte",
    "cost.cxl_gb": "cxl_usd_per_byte",
    "cost.nvme_gb": "nvme_usd_per_byte",
    "cost.amortisation": "amortisation_s",
    "cost.energy_kwh": "usd_per_j",
    "energy.dram_w_per_gb": "dram_w_per_byte",
    "energy.nvme_w_per_gb": "nvme_w_per_byte",
    "energy.power_lone": "power_lone_w",
    "energy.power_batch": "power_batch_w",
}
"""The assumption keys the tier-pricing model reads, with the field of
:class:`kvtier.formulas.tiering.Prices` each fills."""

TORNADO_KEYS: tuple[str, ...] = (*COST_RANGES, "energy.power_lone")
"""The inputs the interval tornado moves: every ranged price, and the board power from a lone block's to a
batch's.  The trace's mix, priced in dollars only, moves with the ranged prices alone (``COST_RANGES``)."""


@dataclass(frozen=True)
class Placement:
    """Where the model sits: tensor-, pipeline- and expert-parallel sizes, and accelerators sharing a link (counts).

    ``group`` is one pipeline stage's accelerators, ``max(tp, ep)``; ``accelerators`` the whole
    placement's, ``pp x group`` (:mod:`kvtier.formulas.parallel`).
    """

    tp: int
    pp: int
    ep: int
    gpus_per_link: int

    @property
    def group(self) -> int:
        """Accelerators of one pipeline stage: ``max(tp, ep)``."""
        return int(parallel.group_size(self.tp, self.ep))

    @property
    def accelerators(self) -> int:
        """Accelerators the placement takes: ``pp x max(tp, ep)``."""
        return int(parallel.accelerators(self.tp, self.pp, self.ep))

    @property
    def label(self) -> str:
        """``TP 8 × PP 1 × EP 1, 1 per link`` (words for pages and commands)."""
        return (
            f"TP {self.tp} × PP {self.pp} × EP {self.ep} ({self.accelerators} accelerator"
            f"{'s' if self.accelerators > 1 else ''}), {self.gpus_per_link} per link"
        )


class Scenario:
    """The report's numbers for one assumption set.

    Parameters
    ----------
    assumptions : AssumptionSet, optional
        Defaults to the seed set.
    """

    def __init__(self, assumptions: AssumptionSet | None = None):
        self.assumptions = assumptions if assumptions is not None else load_assumptions()

    def a(self, key: str) -> Assumption:
        """The assumption record for ``key``."""
        return self.assumptions[key]

    def v(self, key: str) -> float:
        """The numeric value of ``key`` in SI base units."""
        return float(self.assumptions.value(key))

    # ---- model ------------------------------------------------------------
    @cached_property
    def model(self) -> ModelSpec:
        """The model named by the ``model`` key (preset or config.json path)."""
        return load_model(str(self.assumptions.value("model")))

    @property
    def kv_dtype(self) -> str:
        """KV-cache element type."""
        return str(self.assumptions.value("kv_dtype"))

    @property
    def kv_bytes_per_token(self) -> float:
        """KV-cache bytes per token (B)."""
        return float(self.model.kv_bytes_per_token(self.kv_dtype))

    @property
    def params(self) -> float:
        """Total parameter count (dimensionless): the ``param_count`` key, else the config's exact count.

        For an MoE model an override is read as the total; see :attr:`active_params`.
        """
        override = self.assumptions.value("param_count")
        return float(override) if override is not None else float(self.model.total_params)

    @property
    def active_params(self) -> float:
        """Parameters a token passes through (equals :attr:`params` for dense models).

        For an MoE model with ``param_count`` set, the override is scaled by the config's
        active/total ratio.
        """
        total, active = self.model.param_counts()
        return self.params * active / total

    @property
    def params_source(self) -> str:
        """``assumption`` when ``param_count`` overrides the config, else ``config``."""
        return "config" if self.assumptions.value("param_count") is None else "assumption"

    @property
    def weight_bytes(self) -> float:
        """Bytes of the weights (B)."""
        return float(capacity.weight_bytes(self.params, dtype_bytes(str(self.assumptions.value("weight_dtype")))))

    # ---- placement across accelerators --------------------------------------
    @cached_property
    def placement(self) -> Placement:
        """The placement of ``parallel.tp``, ``parallel.pp``, ``parallel.ep`` and ``parallel.gpus_per_link``.

        A group larger than the other must be a multiple of it (``tp`` of ``ep`` or ``ep`` of ``tp``),
        ``ep`` above 1 needs an MoE model with at least ``ep`` experts, and ``pp`` at most the layers.
        """
        tp, pp, ep, gpl = (int(self.v(key)) for key in PARALLEL_KEYS)
        m = self.model
        if max(tp, ep) % min(tp, ep):
            raise KvtierError(
                f"keys 'parallel.tp' ({tp}) and 'parallel.ep' ({ep}): the larger must be a multiple of the smaller"
            )
        if ep > 1 and m.n_routed_experts < ep:
            raise KvtierError(
                f"key 'parallel.ep' ({ep}) needs an MoE model with at least {ep} routed experts;"
                f" {m.name} has {m.n_routed_experts}"
            )
        if pp > m.n_layers:
            raise KvtierError(f"key 'parallel.pp' ({pp}) exceeds the {m.n_layers} layers of {m.name}")
        return Placement(tp, pp, ep, gpl)

    @property
    def shard_share(self) -> float:
        """Share of a block's KV bytes one accelerator caches and fetches (dimensionless).

        :func:`kvtier.formulas.parallel.kv_shard_share`: KV heads split over the tensor-parallel ranks
        (replicated where ``tp`` exceeds the KV heads), MLA's latent whole on every rank, the largest
        pipeline stage's layers; 1 for one accelerator.
        """
        p, m = self.placement, self.model
        return float(parallel.kv_shard_share(m.n_kv_heads, m.n_layers, p.tp, p.pp, m.attention == "MLA"))

    @property
    def shard_bytes(self) -> float:
        """Bytes of the block one accelerator caches and fetches (B): :attr:`block_bytes` x :attr:`shard_share`."""
        return self.block_bytes * self.shard_share

    @property
    def fetch_bytes(self) -> float:
        """Bytes that cross one link to fetch the block (B): the shard x ``parallel.gpus_per_link``.

        The accelerators sharing a link fetch their shards of the block at once, so a fetch over a
        link of bandwidth ``B`` takes ``transfers x latency + fetch_bytes / B``; equal to
        :attr:`block_bytes` on one accelerator with its own link.
        """
        return float(parallel.link_bytes(self.shard_bytes, self.placement.gpus_per_link))

    def weight_split(self) -> tuple[float, float]:
        """(dense, routed) weight bytes (B): the routed experts' bytes and every other weight's.

        The routed share is the config's (:meth:`kvtier.inputs.models.ModelSpec.routed_param_counts`),
        applied to :attr:`weight_bytes` so that a ``param_count`` override scales both; (all, 0)
        for a dense model.
        """
        routed, _ = self.model.routed_param_counts()
        if not routed:
            return self.weight_bytes, 0.0
        routed_bytes = self.weight_bytes * routed / self.model.total_params
        return self.weight_bytes - routed_bytes, routed_bytes

    def touched_weight_bytes(self, pass_tokens: float | np.ndarray) -> np.ndarray:
        """Weight bytes one accelerator reads in a pass over ``pass_tokens`` tokens, over every stage it crosses (B).

        The dense weights split over ``tp``; of the routed experts only those the pass's tokens are
        routed to, :func:`kvtier.formulas.parallel.distinct_experts` of ``E`` under uniform routing,
        spread over the stage's group.  All the weights for a dense model on one accelerator.
        """
        dense, routed = self.weight_split()
        p, m = self.placement, self.model
        experts = m.n_routed_experts if routed else 0
        return parallel.touched_rank_weight_bytes(
            dense, routed, experts, m.experts_per_token, pass_tokens, p.tp, p.group
        )

    @property
    def compute_share(self) -> float:
        """Share of a pass's FLOPs the busiest rank of a stage computes.

        :func:`kvtier.formulas.parallel.compute_share` of the dense and the routed parameters a token
        passes through; 1 on one accelerator.
        """
        _, routed_active = self.model.routed_param_counts()
        active = self.model.active_params
        p = self.placement
        return float(parallel.compute_share(active - routed_active, routed_active, p.tp, p.group))

    def collectives_s(self, tokens: float | np.ndarray, latency_share: float | np.ndarray = 1.0) -> np.ndarray:
        """Communication a pass over ``tokens`` tokens adds under the placement (s); 0 on one accelerator.

        :func:`kvtier.formulas.parallel.collectives_time_s` with the model's layers, MoE layers and
        experts per token and the ``collective.*`` keys; ``latency_share`` of each operation's
        latency (1 alone, 0 for the marginal cost inside a large batch).
        """
        p, m = self.placement, self.model
        return parallel.collectives_time_s(
            tokens,
            m.hidden_size,
            dtype_bytes(str(self.assumptions.value("parallel.activation_dtype")), "parallel.activation_dtype"),
            m.n_layers,
            m.n_moe_layers,
            m.experts_per_token,
            p.tp,
            p.ep,
            p.pp,
            self.v("collective.nvlink_latency"),
            self.v("collective.nvlink_bandwidth"),
            self.v("collective.ib_latency"),
            self.v("collective.ib_bandwidth"),
            latency_share,
        )

    def rank_memory_bytes(self, kv_tokens: float | None = None) -> float:
        """What one accelerator must hold (B): its weights plus its share of one sequence's KV.

        The sequence is ``kv_tokens`` long, ``context.long`` by default; the busiest stage's
        weights, :func:`kvtier.formulas.parallel.rank_weight_bytes`.
        """
        tokens = self.v("context.long") if kv_tokens is None else kv_tokens
        p = self.placement
        dense, routed = self.weight_split()
        weights = float(parallel.rank_weight_bytes(dense, routed, p.tp, p.group, p.pp))
        return weights + float(self.kv_bytes(tokens)) * self.shard_share

    def check_fit(self) -> None:
        """Refuse a placement whose accelerators cannot hold their weights and one sequence at ``context.long``.

        Checked against ``parallel.hbm_capacity``; nothing when that key is null (the seed's).

        Raises
        ------
        KvtierError
            Naming the keys, what one accelerator must hold and the fewest accelerators that fit.
        """
        cap = self.assumptions.value("parallel.hbm_capacity")
        if cap is None:
            return
        need = self.rank_memory_bytes()
        if not parallel.fits(need, float(cap)):
            n, tp, pp = self.min_accelerators(float(cap))
            fix = f"at least {n} accelerators (e.g. --tp {tp} --pp {pp})" if n else "more than 1,024 accelerators"
            raise KvtierError(
                f"keys 'parallel.tp' ({self.placement.tp}), 'parallel.pp' ({self.placement.pp}) and 'parallel.ep'"
                f" ({self.placement.ep}): each accelerator must hold {need / 1e9:,.1f} GB (its weights and one"
                f" sequence of 'context.long' tokens of KV), above 'parallel.hbm_capacity'"
                f" ({float(cap) / 1e9:,.1f} GB); {self.model.name} needs {fix}, or"
                " --set parallel.hbm_capacity=null to price it on fewer anyway"
            )

    def min_accelerators(
        self, capacity_bytes: float | None = None, kv_tokens: float | None = None
    ) -> tuple[int, int, int]:
        """The fewest accelerators whose placement holds the model and one sequence's KV: (count, tp, pp).

        Tries ``tp`` in 1, 2, 4, 8 (one NVLink domain; experts spread over the same group, ``ep =
        tp``, for an MoE model) and ``pp`` in powers of two up to the layers, the fewest accelerators
        first and the smallest ``pp`` among equals.  Capacity: ``parallel.hbm_capacity`` by default;
        KV: one sequence of ``context.long`` tokens.  (0, 0, 0) when none of them fits.
        """
        cap = self.assumptions.value("parallel.hbm_capacity") if capacity_bytes is None else capacity_bytes
        if cap is None:
            raise KvtierError("key 'parallel.hbm_capacity' is null: give the accelerator's memory to size a placement")
        tokens = self.v("context.long") if kv_tokens is None else kv_tokens
        moe = self.model.is_moe
        options = []
        pp = 1
        while pp <= min(self.model.n_layers, 1024):
            for tp in (1, 2, 4, 8):
                if moe and tp > self.model.n_routed_experts:
                    continue
                options.append((tp * pp, pp, tp))
            pp *= 2
        for n, pp, tp in sorted(options):
            trial = self.with_placement(tp=tp, pp=pp, ep=tp if moe else 1)
            if parallel.fits(trial.rank_memory_bytes(tokens), float(cap)):
                return n, tp, pp
        return 0, 0, 0

    def with_placement(self, **counts: int) -> Scenario:
        """This scenario with some of ``tp``, ``pp``, ``ep``, ``gpus_per_link`` replaced (itself if none changes)."""
        changes = {
            f"parallel.{name}": str(value)
            for name, value in counts.items()
            if int(self.v(f"parallel.{name}")) != int(value)
        }
        if not changes:
            return self
        return Scenario(self.assumptions.with_values(changes, source="placement"))

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
            return engine.transfers_per_block(stage, self.layer_chunks)
        return self.transfers(str(self.assumptions.value("fetch_layout")))

    @property
    def layer_overlap(self) -> bool:
        """Whether a fetch is loaded layer by layer under the forward pass: the ``engine``'s; False for ``none``."""
        engine = self.engine
        return bool(engine is not None and engine.layer_overlap)

    @property
    def block_latency_s(self) -> float:
        """The latency one block's fetch pays: per-transfer latency x :attr:`fetch_transfers` (s)."""
        return self.v("fetch_latency") * self.fetch_transfers

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

        :meth:`link_fetch_s` of :attr:`fetch_bytes` at ``fetch_latency`` in :attr:`fetch_transfers`.
        """
        return self.link_fetch_s(self.fetch_bytes, bandwidth_bytes_per_s, self.v("fetch_latency"), self.fetch_transfers)

    @property
    def block_flops(self) -> float:
        """Parameter FLOPs to regenerate one tail block (FLOP)."""
        return float(costs.forward_flops(self.block_tokens, self.active_params, self.v("flops_per_param_token")))

    def regen_s(self, mfu: float | np.ndarray) -> np.ndarray:
        """Tail-block regeneration time at ``mfu`` of ``peak_flops``, inside a batch (s).

        The block's FLOPs over every accelerator of the placement, plus the bytes its tokens add
        to the collectives (their latency shared by the batch): :meth:`in_batch_compute_s`.
        """
        return self.in_batch_compute_s(self.block_flops, mfu)

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
        """Regeneration time of the block at ``position`` at ``mfu`` of the peak, inside a batch (s)."""
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
        first, n = costs.recompute_span(position, self.block_tokens, upstream, self.v("interior.anchor_every"))
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
        peak = self.v("peak_flops") if peak_flop_per_s is None else peak_flop_per_s
        flops = self.interior_flops(position, upstream)
        if model == "mfu":
            return self.in_batch_compute_s(flops, mfu, peak)
        bw = self.v("regen.mem_bandwidth") if mem_bandwidth_bytes_per_s is None else mem_bandwidth_bytes_per_s
        serial = str(self.assumptions.value("regen.attention")) == "serial"
        nbytes = self.regen_bytes(position, upstream, batch_tokens, with_kv=not serial)
        rank_flops = flops * self.compute_share
        first, n = costs.recompute_span(position, self.block_tokens, upstream, self.v("interior.anchor_every"))
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
        _, n = costs.recompute_span(position, self.block_tokens, upstream, self.v("interior.anchor_every"))
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
        weight read is shared and only its FLOPs count: the source chapter's model.
        """
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
        """
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

    # ---- the tier-pricing model's inputs (kvtier.formulas.tiering) -------------------
    def tier_prices(self, overrides: Mapping[str, float] | None = None) -> tiering.Prices:
        """The tier model's prices in SI base units, read from the keys of :data:`PRICE_KEYS`.

        ``overrides`` replaces some of them, by assumption key, in SI base units (a tornado's
        ends); a key the model does not read is refused.
        """
        values = {key: self.v(key) for key in PRICE_KEYS}
        unknown = set(overrides or {}) - set(PRICE_KEYS)
        if unknown:
            raise ValueError(f"the tier model reads no price {sorted(unknown)}")
        values.update(overrides or {})
        return tiering.Prices(**{field: values[key] for key, field in PRICE_KEYS.items()})

    def price_ranges(self, keys: Iterable[str] = COST_RANGES) -> dict[str, tuple[float, float]]:
        """Each price's low and high end in SI base units (``KEY_low``, ``KEY_high``), by key.

        ``energy.power_lone`` ranges from itself to ``energy.power_batch``: the board power from
        the measured lone-block power to the datasheet TDP.
        """
        out = {}
        for key in keys:
            if key == "energy.power_lone":
                out[key] = (self.v("energy.power_lone"), self.v("energy.power_batch"))
            else:
                out[key] = (self.v(f"{key}_low"), self.v(f"{key}_high"))
        return out

    def price_ends(self, keys: Iterable[str] = COST_RANGES) -> dict[str, tuple[tiering.Prices, tiering.Prices]]:
        """Per key of :meth:`price_ranges`: the prices with it at the low and at the high end, the others held."""
        return {
            key: (self.tier_prices({key: lo}), self.tier_prices({key: hi}))
            for key, (lo, hi) in self.price_ranges(keys).items()
        }

    @property
    def tier_links(self) -> tiering.Tiers:
        """Every link preset as a tier (:func:`kvtier.inputs.hardware.load_links`, in file order).

        Its bandwidth is the preset's; its per-transfer latency is the set's key for the preset's
        link class (:func:`kvtier.inputs.keys.tier_latency_key`: ``tier_latency.host_link``
        for PCIe and CXL, ``tier_latency.nvme`` ...), so every page and command that fetches from
        a tier pays the same latency, with the set's provenance.  A fetch pays it once per
        transfer (:meth:`transfers`).
        """
        links = hardware.load_links()
        return tiering.Tiers(
            tuple(links),
            np.array([k.bandwidth_bytes_per_s for k in links.values()]),
            np.array([self.v(tier_latency_key(name)) for name in links]),
        )

    def with_block(self, tokens: int, model: str | None = None) -> Scenario:
        """This scenario with blocks of ``tokens`` tokens, and of ``model`` if given (itself when nothing changes)."""
        changes = {} if tokens == self.block_tokens else {"block_tokens": f"{tokens} tokens"}
        if model is not None and model != str(self.assumptions.value("model")):
            changes["model"] = model
        if not changes:
            return self
        return Scenario(self.assumptions.with_values(changes, source="the tier-pricing model"))

    def tier_block(self, tokens: int | None = None, model: str | None = None) -> tiering.Block:
        """A block for the tier model: its bytes, transfers and regeneration time in each regime.

        The tail block of ``tokens`` tokens (the set's own by default) of ``model`` (the set's
        own by default), regenerated at the illustrative MFU bracket: alone (the roofline,
        :meth:`lone_regen_s`) and inside a batch (its marginal compute, :meth:`in_batch_regen_s`), s.
        """
        sc = self.with_block(self.block_tokens if tokens is None else tokens, model)
        mfu = sc.mfu(str(sc.assumptions.value("illustrative.mfu")))
        return tiering.Block(
            tokens=sc.block_tokens,
            block_bytes=sc.block_bytes,
            fetch_bytes=sc.fetch_bytes,
            transfers=sc.fetch_transfers,
            min_transfer_s=sc.v("fetch.min_transfer_time"),
            link_efficiency=sc.link_efficiency,
            link_overhead_s=sc.link_overhead_s,
            regen_s={
                "lone": float(sc.lone_regen_s(0, "resident", mfu)),
                "batch": float(sc.in_batch_regen_s(0, "resident", mfu)),
            },
            # the board power follows what binds the pass: a lone block may be compute-bound too
            bound={"lone": str(sc.lone_bound(0, "resident", mfu)), "batch": "compute"},
        )

    def mix_block(self, model: str | None = None) -> tiering.Block:
        """The block a trace's mix prices: ``workload.block_tokens`` tokens of ``model`` (the set's own by default)."""
        return self.tier_block(int(self.v("workload.block_tokens")), model)

    @property
    def cost_blocks(self) -> tuple[tiering.Block, tiering.Block]:
        """The two blocks the tier model prices: the set's own and one of ``cost.large_block_tokens``."""
        return self.tier_block(), self.tier_block(int(self.v("cost.large_block_tokens")))

    # ---- the recompute cost of a reuse, and a realistic (LRU) tier --------------------
    def regen_costs(self, model: str | None = None, mfu_label: str | None = None) -> RegenCosts:
        """What recomputing or fetching a prompt prefix costs, for ``model`` (the set's own by default), placed.

        :class:`kvtier.formulas.cache.regen.RegenCosts` from this scenario's resolved numbers at the
        MFU bracket ``mfu_label`` (default: ``illustrative.mfu``): parameter FLOPs plus attention
        over the prefix, the one recompute cost both the workload page and the cost page charge a
        reuse.
        """
        sc = self if model is None else self.with_block(self.block_tokens, model)
        label = str(sc.assumptions.value("illustrative.mfu")) if mfu_label is None else mfu_label
        p, m = sc.placement, sc.model
        _, routed = sc.weight_split()
        per_token = float(sc.collectives_s(1.0, 0.0))  # one token's bytes, no latency
        return RegenCosts(
            kv_bytes_per_token=float(sc.kv_bytes_per_token),
            active_params=float(sc.active_params),
            flops_per_param_token=sc.v("flops_per_param_token"),
            attention_flops_per_position=float(m.attention_flops_per_position()),
            peak_flop_per_s=sc.v("peak_flops"),
            mfu=sc.mfu(label),
            weight_bytes=float(sc.weight_bytes),
            mem_bandwidth_bytes_per_s=sc.v("regen.mem_bandwidth"),
            mem_efficiency=sc.v("regen.mem_efficiency"),
            fetch_transfers=int(sc.fetch_transfers),
            layers=float(m.n_layers),
            mem_overhead_per_layer_s=sc.v("regen.mem_overhead_per_layer"),
            launch_floor_per_layer_s=sc.v("regen.launch_floor_per_layer"),
            knee_sharpness=sc.knee_sharpness,
            routed_weight_bytes=float(routed),
            n_routed_experts=float(m.n_routed_experts if routed else 0),
            experts_per_token=float(m.experts_per_token if routed else 0),
            tp=int(p.tp),
            group=int(p.group),
            accelerators=int(p.accelerators),
            pipeline_stages=int(p.pp),
            compute_share=float(sc.compute_share),
            kv_rank_share=float(sc.kv_rank_bytes_per_token / sc.kv_bytes_per_token),
            collective_latency_s=float(sc.collectives_s(1.0, 1.0)) - per_token,
            collective_s_per_token=per_token,
            min_transfer_s=sc.v("fetch.min_transfer_time"),
            link_efficiency=float(sc.link_efficiency),
            link_overhead_s=float(sc.link_overhead_s),
        )

    # ---- capacity --------------------------------------------------------
    def kv_bytes(self, context_tokens: float | np.ndarray) -> np.ndarray:
        """KV bytes of one sequence of ``context_tokens`` (B)."""
        return capacity.kv_bytes(context_tokens, self.kv_bytes_per_token)

    def kv_share(self, context_tokens: float | np.ndarray) -> np.ndarray:
        """KV bytes of one sequence as a fraction of the weights."""
        return capacity.kv_share_of_weights(context_tokens, self.kv_bytes_per_token, self.weight_bytes)

    @property
    def crossover_tokens(self) -> float:
        """Context (tokens) at which one sequence's KV equals the weights."""
        return float(capacity.crossover_context_tokens(self.weight_bytes, self.kv_bytes_per_token))

    # ---- provenance ------------------------------------------------------
    def used(self, *keys: str) -> list[Assumption]:
        """The assumption records behind a number, for labels and tables."""
        return [self.assumptions[key] for key in keys]


@cache
def seed_scenario() -> Scenario:
    """The seed set's scenario: what the source chapter's printed figures are compared with.

    A page compares the chapter only with the seed values, whatever the build assumes, so
    that a sentence such as "the chapter prints this rounded" stays true under any rerun.
    """
    return Scenario(seed())
