"""The tier-pricing model's inputs: prices, their ranges, the tiers' links and the blocks priced."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Self

import numpy as np

from kvtier.formulas import tiering
from kvtier.inputs import hardware
from kvtier.inputs.keys import COST_RANGES, tier_latency_key
from kvtier.scenario.timing import Timed

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


class Priced(Timed):
    """A scenario's prices and tiers (:mod:`kvtier.formulas.tiering`), for the cost pages and the trace's mix."""

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

    def with_block(self, tokens: int, model: str | None = None) -> Self:
        """This scenario with blocks of ``tokens`` tokens, and of ``model`` if given (itself when nothing changes)."""
        changes = {} if tokens == self.block_tokens else {"block_tokens": f"{tokens} tokens"}
        if model is not None and model != str(self.assumptions.value("model")):
            changes["model"] = model
        if not changes:
            return self
        return type(self)(self.assumptions.with_values(changes, source="the tier-pricing model"))

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
            stored_copies=sc.stored_copies,
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
