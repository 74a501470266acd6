"""Where the model sits across accelerators: the placement, each rank's share and memory, the fit, the collectives."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Self

import numpy as np

from kvtier.errors import KvtierError
from kvtier.formulas import parallel
from kvtier.inputs.keys import PARALLEL_KEYS, keys_in
from kvtier.inputs.models import dtype_bytes
from kvtier.scenario.base import Resolved

PLACEMENT_KEYS: tuple[str, ...] = keys_in("placement")
"""The assumption keys the placement reads: its counts, the collectives' links and the fit check
(``parallel.hbm_capacity`` against weights and one sequence of ``context.long``).  Every page whose
fetch or regeneration follows the placement declares them (``POINT_KEYS`` holds them)."""


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


def tp_refused(tp: int, heads: int, kv_heads: int, latent: bool) -> str:
    """Why serving engines refuse ``tp`` tensor-parallel ranks for a model's attention, or ``""`` where they run it.

    vLLM and SGLang split the query heads evenly over the ranks ("Total number of attention heads must be divisible
    by tensor parallel size"), and the KV heads either evenly (``kv_heads`` a multiple of ``tp``) or by replicating
    each to ``tp / kv_heads`` ranks (``tp`` a multiple of ``kv_heads``); MLA's latent is whole on every rank.
    """
    if heads % tp:
        return f"has {heads} attention heads, which {tp} ranks do not divide"
    if not latent and kv_heads % tp and tp % kv_heads:
        return f"has {kv_heads} KV heads, which {tp} ranks neither divide nor replicate ({tp} is no multiple of them)"
    return ""


def gigabytes_apart(a_bytes: float, b_bytes: float) -> tuple[str, str]:
    """``a_bytes`` and ``b_bytes`` in GB, to one decimal, or to as many more as it takes for the two to differ
    where the numbers do (at most 9)."""
    for digits in range(1, 10):
        a, b = f"{a_bytes / 1e9:,.{digits}f}", f"{b_bytes / 1e9:,.{digits}f}"
        if a != b:
            break
    return a, b


class Placed(Resolved):
    """A scenario's placement across accelerators (:class:`Placement`) and what follows from it."""

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
        refused = tp_refused(tp, m.n_heads, m.n_kv_heads, m.attention == "MLA")
        if refused:
            raise KvtierError(f"key 'parallel.tp' ({tp}): {m.name} {refused}; serving engines refuse it")
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

    @property
    def long_sequence_tokens(self) -> float:
        """The long sequence a placement must hold (tokens): ``context.long``, at most the model's context window.

        A model cannot hold a sequence longer than its window, so the fit check and the fewest
        accelerators are for ``min(context.long, max_positions)``; ``context.long`` where the model's
        config states no window.
        """
        window = self.model.max_positions
        return min(self.v("context.long"), float(window)) if window else self.v("context.long")

    def rank_memory_bytes(self, kv_tokens: float | None = None) -> float:
        """What one accelerator must hold (B): its weights plus its share of one sequence's KV.

        The sequence is ``kv_tokens`` long, :attr:`long_sequence_tokens` by default; the busiest stage's
        weights, :func:`kvtier.formulas.parallel.rank_weight_bytes`.
        """
        tokens = self.long_sequence_tokens if kv_tokens is None else kv_tokens
        p = self.placement
        dense, routed = self.weight_split()
        weights = float(parallel.rank_weight_bytes(dense, routed, p.tp, p.group, p.pp))
        return weights + float(self.kv_bytes(tokens)) * self.shard_share

    @property
    def hbm_left_bytes(self) -> float:
        """HBM each accelerator of the placement has left beside its shard of the weights (B).

        ``parallel.hbm_capacity`` (else ``cost.hbm_capacity``, the accelerator the prices assume) less
        :meth:`rank_memory_bytes` with no KV (:func:`kvtier.formulas.cache.hierarchy.hbm_left_bytes`): 0 where the
        shard does not fit.
        """
        from kvtier.formulas.cache.hierarchy import hbm_left_bytes

        cap = self.assumptions.value("parallel.hbm_capacity")
        hbm = float(cap) if cap is not None else float(self.v("cost.hbm_capacity"))
        return hbm_left_bytes(hbm, self.rank_memory_bytes(0.0))

    def check_fit(self) -> None:
        """Refuse a placement whose accelerators cannot hold their weights and one long sequence
        (:attr:`long_sequence_tokens`).

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
            # the --set form: every command takes it (cost, workload and build have no --tp, compare both)
            fix = (
                f"at least {n} accelerators (e.g. --set parallel.tp={tp} --set parallel.pp={pp})"
                if n
                else "more than 1,024 accelerators"
            )
            shown_need, shown_cap = gigabytes_apart(need, float(cap))
            raise KvtierError(
                f"keys 'parallel.tp' ({self.placement.tp}), 'parallel.pp' ({self.placement.pp}) and 'parallel.ep'"
                f" ({self.placement.ep}): each accelerator must hold {shown_need} GB (its weights in"
                f" {self.weight_dtype} and one sequence of {self.long_sequence_tokens:,.0f} tokens of KV,"
                " 'context.long' at most the model's window), above 'parallel.hbm_capacity'"
                f" ({shown_cap} GB); {self.model.name} needs {fix}, or"
                " --set parallel.hbm_capacity=null to price it on fewer anyway"
            )

    def min_accelerators(
        self, capacity_bytes: float | None = None, kv_tokens: float | None = None
    ) -> tuple[int, int, int]:
        """The fewest accelerators whose placement holds the model and one sequence's KV: (count, tp, pp).

        Tries ``tp`` in 1, 2, 4, 8 (one NVLink domain; experts spread over the same group, ``ep =
        tp``, for an MoE model) and ``pp`` in powers of two up to the layers, the fewest accelerators
        first and the smallest ``pp`` among equals.  Capacity: ``parallel.hbm_capacity`` by default;
        KV: one sequence of :attr:`long_sequence_tokens`.  (0, 0, 0) when none of them fits.
        """
        cap = self.assumptions.value("parallel.hbm_capacity") if capacity_bytes is None else capacity_bytes
        if cap is None:
            raise KvtierError("key 'parallel.hbm_capacity' is null: give the accelerator's memory to size a placement")
        tokens = self.long_sequence_tokens if kv_tokens is None else kv_tokens
        moe = self.model.is_moe
        options = []
        pp = 1
        while pp <= min(self.model.n_layers, 1024):
            for tp in (1, 2, 4, 8):
                if moe and tp > self.model.n_routed_experts:
                    continue
                m = self.model
                if tp_refused(tp, m.n_heads, m.n_kv_heads, m.attention == "MLA"):
                    continue
                options.append((tp * pp, pp, tp))
            pp *= 2
        for n, pp, tp in sorted(options):
            trial = self.with_placement(tp=tp, pp=pp, ep=tp if moe else 1)
            if parallel.fits(trial.rank_memory_bytes(tokens), float(cap)):
                return n, tp, pp
        return 0, 0, 0

    def with_placement(self, **counts: int) -> Self:
        """This scenario with some of ``tp``, ``pp``, ``ep``, ``gpus_per_link`` replaced (itself if none changes)."""
        changes = {
            f"parallel.{name}": str(value)
            for name, value in counts.items()
            if int(self.v(f"parallel.{name}")) != int(value)
        }
        if not changes:
            return self
        return type(self)(self.assumptions.with_values(changes, source="placement"))
