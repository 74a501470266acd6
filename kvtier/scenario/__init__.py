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

from functools import cache
from importlib import resources

import numpy as np

from kvtier.formulas import capacity
from kvtier.formulas.cache.regen import RegenCosts
from kvtier.inputs.assumptions import Assumption, load_assumptions, seed
from kvtier.scenario.placement import PLACEMENT_KEYS, Placement
from kvtier.scenario.prices import PRICE_KEYS, TORNADO_KEYS, Priced
from kvtier.scenario.timing import ENGINE_KEYS, FORWARD_KEYS, POINT_KEYS, TRANSFER_KEYS

__all__ = [
    "FORWARD_KEYS",
    "ENGINE_KEYS",
    "PLACEMENT_KEYS",
    "POINT_KEYS",
    "PRICE_KEYS",
    "TORNADO_KEYS",
    "TRANSFER_KEYS",
    "Placement",
    "Scenario",
    "measured_on",
    "measured_scenario",
    "seed_scenario",
]


class Scenario(Priced):
    """The report's numbers for one assumption set.

    Built up in layers, a module each: :class:`~kvtier.scenario.base.Resolved` (the values and the model),
    :class:`~kvtier.scenario.placement.Placed` (the placement), :class:`~kvtier.scenario.timing.Timed` (the
    block's fetch and regeneration), :class:`~kvtier.scenario.prices.Priced` (the tiers' prices); here what
    recomputing a reuse costs, the capacity figures and provenance.

    Parameters
    ----------
    assumptions : AssumptionSet, optional
        Defaults to the seed set.
    """

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
            fetch_block_tokens=float(sc.block_tokens),
            fetch_bytes_per_token=float(sc.fetch_bytes / sc.block_tokens),
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
            stored_copies=sc.stored_copies,
            **(sc.engine_curves() if sc.assumptions.value("regen.model") == "engine" else {}),
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
        """The assumption records behind a number, for labels and tables.

        ``weight_dtype`` is its resolved record (:attr:`weight_dtype_record`): ``auto`` shows the
        model's published type and where its config states it.
        """
        return [self.weight_dtype_record if key == "weight_dtype" else self.assumptions[key] for key in keys]


@cache
def seed_scenario() -> Scenario:
    """The seed set's scenario: what the source chapter's printed figures are compared with.

    A page compares the chapter only with the seed values, whatever the build assumes, so
    that a sentence such as "the chapter prints this rounded" stays true under any rerun.
    """
    return Scenario(seed())


MEASURED_SET = "h200-measured.yaml"
"""The assumption set the H200 measurements support, shipped in ``kvtier/data``."""


@cache
def measured_scenario() -> Scenario:
    """The shipped assumption set of the H200 measurements (:data:`MEASURED_SET`), layered on the seed."""
    with resources.as_file(resources.files("kvtier.data").joinpath(MEASURED_SET)) as path:
        return Scenario(load_assumptions(path))


def measured_on(s: Scenario) -> Scenario:
    """The H200 measurements' records (:data:`MEASURED_SET`) layered on ``s``'s set, named ``h200-measured``.

    Every key the measured set does not name (the trace, the prices, the hit target) keeps ``s``'s value.
    """
    measured = measured_scenario().assumptions
    changed = {key: measured[key] for key in measured if measured[key] != seed()[key]}
    return Scenario(s.assumptions.with_records(changed, name=measured.name))
