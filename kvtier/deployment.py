"""One deployment, resolved once: the quantities that several pages, commands and the diff headline show.

A :class:`Deployment` is a :class:`~kvtier.scenario.Scenario`'s block, the tiers it can be
fetched from and its regeneration, put together once: the block's bytes, the transfers of
each layout (one contiguous copy, or one per layer chunk as a paged cache stores it), each
tier's bandwidth and per-transfer latency, the fetch time from each tier in each layout, the
regeneration time in each regime (a lone block, a block inside a batch), their ratio, and
what would flip the verdict: the break-even bandwidth at the tier's latency, the break-even
latency at the tier's bandwidth, and the break-even number of transfers.  The tier ladder,
the decision on the landing page, the cost page and ``kvtier tiers`` read these arrays, so
that a quantity shown in two places is one computation (``tests/test_agreement.py``).

Under a placement across accelerators (:class:`~kvtier.scenario.Placement`: ``parallel.tp``,
``parallel.pp``, ``parallel.ep``, ``parallel.gpus_per_link``) each accelerator fetches its own shard
of the block over its own link, shared with the accelerators behind the same switch
(:attr:`fetch_bytes`), and regeneration follows the placement (:class:`~kvtier.scenario.Scenario`);
on one accelerator with its own link every number is the single-accelerator one.

Numbers only, in SI base units, arrays over the tiers in preset order (HBM left out: a block
in HBM is not fetched).
"""

from __future__ import annotations

from dataclasses import dataclass
from weakref import WeakKeyDictionary

import numpy as np
from numpy.typing import NDArray

from kvtier import analysis
from kvtier.formulas import costs, lru_tier, tiering, transfer
from kvtier.inputs.keys import LAYOUTS
from kvtier.scenario import Placement, Scenario

FloatArray = NDArray[np.float64]

REGIMES: tuple[str, ...] = tiering.REGIMES
"""The regimes of regeneration: ``lone`` (the block's tokens are the whole forward pass) and ``batch``."""


@dataclass(frozen=True)
class Deployment:
    """A scenario's block, tiers and regeneration, resolved once (SI units; arrays over :attr:`tiers`).

    Attributes
    ----------
    scenario : Scenario
        The scenario it resolves.
    block : tiering.Block
        The set's tail block: tokens, bytes, transfers in the set's layout, regeneration time by regime (s).
    tiers : tiering.Tiers
        Every link preset but HBM, in preset order: bandwidth (B/s) and per-transfer latency (s).
    transfers : dict of str to int
        Transfers one accelerator's shard of the block takes in each layout of
        :data:`~kvtier.inputs.keys.LAYOUTS`.
    fetch_bytes : float
        Bytes that cross one link to fetch the block: one accelerator's shard times the accelerators
        sharing the link (B); the block's bytes on one accelerator.
    """

    scenario: Scenario
    block: tiering.Block
    tiers: tiering.Tiers
    transfers: dict[str, int]
    fetch_bytes: float

    @classmethod
    def of(cls, s: Scenario) -> Deployment:
        """The deployment of ``s``, resolved on first use and kept with it.

        Raises
        ------
        KvtierError
            When ``parallel.hbm_capacity`` is set and the placement's accelerators cannot hold their
            weights and one sequence of ``context.long`` tokens (:meth:`~kvtier.scenario.Scenario.check_fit`).
        """
        found = _CACHE.get(s)
        if found is None:
            s.check_fit()  # a placement that does not fit its accelerators is refused, naming the keys
            links = s.tier_links
            found = cls(
                scenario=s,
                block=s.tier_block(),
                tiers=links.pick([t for t in links.names if tiering.medium(t) != "hbm"]),
                transfers={layout: s.transfers(layout) for layout in LAYOUTS},
                fetch_bytes=s.fetch_bytes,
            )
            _CACHE[s] = found
        return found

    @property
    def placement(self) -> Placement:
        """Where the model sits: tensor-, pipeline- and expert-parallel sizes, accelerators per link."""
        return self.scenario.placement

    @property
    def media(self) -> tuple[str, ...]:
        """The medium behind each tier (``dram``, ``cxl``, ``nvme``)."""
        return self.tiers.media

    def regen_s(self, regime: str) -> float:
        """Time to regenerate the block once in ``regime`` (s), at the illustrative MFU bracket."""
        return float(self.block.regen_s[regime])

    def fetch_s(self, layout: str) -> FloatArray:
        """Time to fetch the block from each tier in ``layout`` (s): :meth:`kvtier.formulas.tiering.Block.fetch_s`.

        ``transfers x latency + bytes / (bandwidth x efficiency)``, at least the transfer model's floor.
        """
        return self.block.fetch_s(self.tiers, self.transfers[layout])

    def ratio(self, regime: str, layout: str) -> FloatArray:
        """Regeneration time in ``regime`` over the fetch time in ``layout``, per tier (dimensionless)."""
        return costs.ratio(self.regen_s(regime), self.fetch_s(layout))

    def fetch_wins(self, regime: str, layout: str) -> NDArray[np.bool_]:
        """Whether fetching from each tier takes less time than regenerating in ``regime``."""
        return self.ratio(regime, layout) > 1.0

    def break_even_bandwidth(self, regime: str, layout: str) -> FloatArray:
        """Per tier, the bandwidth at which the ratio is 1 at the tier's own latency (B/s; inf: none suffices).

        :func:`kvtier.formulas.transfer.break_even_bandwidth` under the set's transfer model.
        """
        b = self.block
        return transfer.break_even_bandwidth(
            self.fetch_bytes,
            self.regen_s(regime),
            self.tiers.latency_s,
            self.transfers[layout],
            b.min_transfer_s,
            b.link_efficiency,
            b.link_overhead_s,
        )

    def break_even_latency(self, regime: str, layout: str) -> FloatArray:
        """Per tier, the per-transfer latency at which the ratio is 1 at the tier's bandwidth (s; 0: none).

        :func:`kvtier.formulas.transfer.break_even_latency` under the set's transfer model: the tier's own
        share, the overhead each transfer adds (pageable host memory) taken off.
        """
        b = self.block
        return transfer.break_even_latency(
            self.fetch_bytes,
            self.tiers.bandwidth_bytes_per_s,
            self.regen_s(regime),
            self.transfers[layout],
            b.min_transfer_s,
            b.link_efficiency,
            b.link_overhead_s,
        )

    def break_even_transfers(self, regime: str) -> FloatArray:
        """Per tier, how many transfers one block may take before the ratio falls to 1 (inf where latency is 0).

        The latency budget ``regen - bytes / (bandwidth x efficiency)`` over the tier's latency plus the
        overhead each transfer adds; 0 where the regeneration does not exceed the transfer model's floor.
        """
        b = self.block
        if self.regen_s(regime) <= b.min_transfer_s:
            return np.zeros(len(self.tiers.names))
        rate = self.tiers.bandwidth_bytes_per_s * b.link_efficiency
        budget = self.regen_s(regime) - self.fetch_bytes / rate
        per_transfer = self.tiers.latency_s + b.link_overhead_s
        with np.errstate(divide="ignore", invalid="ignore"):
            n = np.where(per_transfer > 0, budget / per_transfer, np.inf)
        return np.where(budget > 0, n, 0.0)

    def plan(self, regime: str = "batch", prices: tiering.Prices | None = None) -> list[lru_tier.LruTier]:
        """The LRU tier per medium sized for ``decision.hit_target`` of the trace's achievable hits.

        :func:`kvtier.analysis.lru_plan`, the cost page's figures, at the set's target.
        """
        return analysis.lru_plan(self.scenario, self.scenario.v("decision.hit_target"), regime, prices)

    def best_tier(self, regime: str = "batch") -> tuple[lru_tier.LruTier, bool]:
        """The LRU tier that saves the most and its device can carry, and whether any can.

        A tier can carry its traffic when its reads keep its link at most fully busy and its
        writes its device: for flash, the drives it buys (:func:`kvtier.formulas.flash.flash_drives`)
        take its writes and their wear by construction, priced in its holding; flash priced by the
        byte alone must also stay within one drive's write bandwidth and its rated endurance.  Where
        none can, the one that saves the most, with ``False``.
        """
        plan = self.plan(regime)

        def fits(t: lru_tier.LruTier) -> bool:
            if t.drives is not None and np.isfinite(t.drives.count):
                return bool(t.read_busy <= 1.0)
            worn = t.endurance_used if np.isfinite(t.endurance_used) else 0.0
            return bool(t.read_busy <= 1.0 and t.write_busy <= 1.0 and worn <= 1.0)

        feasible = [t for t in plan if fits(t)]
        pool = feasible or plan
        return max(pool, key=lambda t: t.saved_usd_per_s), bool(feasible)

    def n_fetch_wins(self, regime: str, layout: str) -> int:
        """How many tiers fetch faster than regeneration in ``regime`` and ``layout``."""
        return int(self.fetch_wins(regime, layout).sum())


_CACHE: WeakKeyDictionary[Scenario, Deployment] = WeakKeyDictionary()
