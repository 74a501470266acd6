"""The tier-pricing model: what a KV block costs in each tier, and which tier serves each reuse of a trace.

:mod:`kvtier.formulas.economics` holds the primitives of the five-minute rule (a price per
byte-second, a break-even interval, the least-cost mix of a trace's reuses); this module
applies them to the tiers a KV block can live in.  A *tier* is a link preset (the way a
block comes back to the accelerator) and the *medium* behind it (HBM, host DRAM, a CXL
expander, NVMe flash), which sets what holding the block costs.  Given the prices
(:class:`Prices`), the tiers (:class:`Tiers`) and a block (:class:`Block`: its bytes, its
transfers and its regeneration time in each regime), it prices, for every tier at once:
holding the block, fetching it once, recomputing it once, and how long it is worth
keeping there (:func:`intervals`), in dollars and in joules; how far each price's range
moves one tier's interval (:func:`interval_tornado`); and, for a trace's reuse intervals,
the least-cost mix over a ladder of tiers (:func:`trace_mix`), the bytes each medium holds
(:func:`by_medium`, :func:`largest_medium`) and how far each price moves the mix's cost
(:func:`mix_tornado`).  That mix knows each block's next use, so it is a lower bound; the
tier a cache can be, an LRU tier sized for a hit target, is priced in
:mod:`kvtier.formulas.lru_tier`.

Everything is in SI base units (B, s, B/s, USD, J, W, USD/s, USD/(B s), W/B); the
arithmetic is vectorized over the tiers.  Fetch times come from
:func:`kvtier.formulas.costs.fetch_time_s`; the regeneration time of a block is an input,
computed by the scenario.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace

import numpy as np
from numpy.typing import NDArray

from kvtier.formulas import economics, transfer

FloatArray = NDArray[np.float64]

MEDIA: tuple[str, ...] = ("hbm", "dram", "cxl", "nvme")
"""The media a tier holds its blocks in: the accelerator's HBM, host DRAM, a CXL expander, NVMe flash."""

MIX_MEDIA: tuple[str, ...] = (*MEDIA, "recompute")
"""The ways a mix serves a reuse, by medium, recomputation last."""

REGIMES: tuple[str, ...] = ("lone", "batch")
"""The regimes of regeneration: a lone block (its tokens are the whole forward pass), a block inside a batch."""

CXL_TIER = "cxl2-x8"
"""The tier whose interval the tornado follows: a CXL 2.0 x8 expander, the interface of those shipping today."""

LADDERS: dict[str, tuple[str, ...]] = {
    "with host DRAM": ("hbm", "pcie5-x16", CXL_TIER, "nvme-gen4-x4"),
    "host DRAM full": ("hbm", CXL_TIER, "nvme-gen4-x4"),
}
"""The tiers a trace's mix may serve a block from, fastest first: with room in host DRAM, and with none left."""

LRU_TIERS: tuple[str, ...] = LADDERS["with host DRAM"][1:]
"""The tiers an LRU tier is sized in, one per medium below HBM: host DRAM over PCIe, a CXL expander, NVMe."""


def medium(tier: str) -> str:
    """The medium behind the link preset ``tier``: ``hbm``, ``cxl``, ``nvme`` or ``dram``.

    A PCIe, NVLink-C2C or RDMA link reaches a host's DRAM; a CXL link an expander's.
    """
    if tier == "hbm":
        return "hbm"
    for prefix in ("cxl", "nvme"):
        if tier.startswith(prefix):
            return prefix
    return "dram"


@dataclass(frozen=True)
class Prices:
    """The prices the tier model reads, in SI base units.

    Attributes
    ----------
    accelerator_usd_per_s : float
        The accelerator's price per second of its time (USD/s).
    hbm_share : float
        Share of the accelerator's price its HBM capacity stands for (fraction).
    hbm_bytes : float
        The accelerator's HBM capacity (B).
    dram_usd_per_byte, cxl_usd_per_byte, nvme_usd_per_byte : float
        Purchase price of host DRAM, CXL-expander memory and NVMe flash (USD/B).
    amortisation_s : float
        Period purchased capacity is written off over (s).
    usd_per_j : float
        Price of energy (USD/J).
    dram_w_per_byte, nvme_w_per_byte : float
        Power DRAM (HBM, host DRAM and CXL memory alike) and NVMe flash draw per byte held (W/B).
    power_lone_w, power_batch_w : float
        Board power in a memory-bound forward pass (measured on a lone 16-token block) and in
        a compute-bound one (a batch), W.  The power a pass draws follows the side of the
        roofline that binds it (:meth:`power_w`), not its regime: a lone block large enough
        to be compute-bound draws the batch's power.
    """

    accelerator_usd_per_s: float
    hbm_share: float
    hbm_bytes: float
    dram_usd_per_byte: float
    cxl_usd_per_byte: float
    nvme_usd_per_byte: float
    amortisation_s: float
    usd_per_j: float
    dram_w_per_byte: float
    nvme_w_per_byte: float
    power_lone_w: float
    power_batch_w: float

    def power_w(self, bound: str) -> float:
        """The board power of a pass that ``bound`` binds (``memory`` or ``compute``), W."""
        return {"memory": self.power_lone_w, "compute": self.power_batch_w}[bound]


def hold_usd_per_byte_s(p: Prices) -> dict[str, float]:
    """Each medium's cost of holding one byte for one second (USD/(B s)), by :data:`MEDIA`.

    HBM: its share of the accelerator's price spread over its capacity
    (:func:`~kvtier.formulas.economics.hbm_price_per_byte_s`); the others: the purchase
    price written off over the amortisation period plus the energy they draw
    (:func:`~kvtier.formulas.economics.capacity_price_per_byte_s`).
    """
    out = {"hbm": float(economics.hbm_price_per_byte_s(p.accelerator_usd_per_s, p.hbm_share, p.hbm_bytes))}
    for m, purchase, watts in (
        ("dram", p.dram_usd_per_byte, p.dram_w_per_byte),
        ("cxl", p.cxl_usd_per_byte, p.dram_w_per_byte),
        ("nvme", p.nvme_usd_per_byte, p.nvme_w_per_byte),
    ):
        out[m] = float(economics.capacity_price_per_byte_s(purchase, p.amortisation_s, watts, p.usd_per_j))
    return out


def hold_w_per_byte(p: Prices) -> dict[str, float]:
    """Each medium's power per byte held (W/B, that is J per byte-second), by :data:`MEDIA`.

    HBM, host DRAM and CXL memory draw DRAM's power; NVMe flash its own.
    """
    return {"hbm": p.dram_w_per_byte, "dram": p.dram_w_per_byte, "cxl": p.dram_w_per_byte, "nvme": p.nvme_w_per_byte}


@dataclass(frozen=True)
class Tiers:
    """The tiers a block can be fetched from: one link preset each, in order.

    Attributes
    ----------
    names : tuple of str
        Link preset names (``hbm`` for the accelerator's own memory, which is never fetched from).
    bandwidth_bytes_per_s : ndarray
        Each link's bandwidth, one direction (B/s).
    latency_s : ndarray
        Each link's latency per transfer (s).
    """

    names: tuple[str, ...]
    bandwidth_bytes_per_s: FloatArray
    latency_s: FloatArray

    @property
    def media(self) -> tuple[str, ...]:
        """The medium behind each tier (:func:`medium`)."""
        return tuple(medium(t) for t in self.names)

    def pick(self, names: Sequence[str]) -> Tiers:
        """These tiers in the order of ``names`` (a ladder)."""
        i = [self.names.index(n) for n in names]
        return Tiers(tuple(names), self.bandwidth_bytes_per_s[i], self.latency_s[i])


def fetch_s(
    tiers: Tiers,
    block_bytes: float,
    transfers: int,
    min_transfer_s: float = 0.0,
    efficiency: float = 1.0,
    overhead_s: float = 0.0,
) -> FloatArray:
    """Time to fetch a block of ``block_bytes`` in ``transfers`` transfers from each tier (s; 0 from HBM).

    :func:`kvtier.formulas.transfer.fetch_time_s` over each link, with the transfer model's floor
    (s), share of the rate reached and overhead per transfer (s); a block already in HBM is used
    where it lies.
    """
    t = transfer.fetch_time_s(
        block_bytes, tiers.bandwidth_bytes_per_s, tiers.latency_s, transfers, min_transfer_s, efficiency, overhead_s
    )
    return np.where(np.array(tiers.media) == "hbm", 0.0, t)


@dataclass(frozen=True)
class Block:
    """A KV block as the tier model sees it.

    Attributes
    ----------
    tokens : int
        Tokens in the block.
    block_bytes : float
        Its bytes (B).
    transfers : int
        Transfers that fetch it (1 if contiguous, one per layer chunk if paged).
    regen_s : mapping of str to float
        Time to regenerate it once, by regime (``lone``, ``batch``), s.
    bound : mapping of str to str, optional
        Which side of the roofline binds that pass, by regime (``memory`` or ``compute``);
        it sets the board power (:meth:`Prices.power_w`).  By default a lone block is
        memory-bound and a batch compute-bound.
    fetch_bytes : float, optional
        Bytes that cross one link to fetch it when the model is placed across accelerators: one
        accelerator's shard times the accelerators sharing the link
        (:attr:`kvtier.scenario.Scenario.fetch_bytes`), B.  By default the block's bytes.
    min_transfer_s, link_efficiency, link_overhead_s : float, optional
        The transfer model's floor under a fetch (s), share of a link's rate a fetch reaches and
        time each transfer adds to its latency (s; pageable host memory)
        (:func:`kvtier.formulas.transfer.fetch_time_s`); 0, 1 and 0 by default, the chapter's fetch.
    stored_copies : float, optional
        Copies of the block a tier holds (:func:`kvtier.formulas.parallel.stored_copies`): holding it
        costs :attr:`stored_bytes`; 1 by default.
    """

    tokens: int
    block_bytes: float
    transfers: int
    regen_s: Mapping[str, float]
    bound: Mapping[str, str] | None = None
    fetch_bytes: float | None = None
    min_transfer_s: float = 0.0
    link_efficiency: float = 1.0
    link_overhead_s: float = 0.0
    stored_copies: float = 1.0

    @property
    def stored_bytes(self) -> float:
        """Bytes the block takes in a tier (B): :attr:`block_bytes` x :attr:`stored_copies`."""
        return self.block_bytes * self.stored_copies

    def fetch_s(self, tiers: Tiers, transfers: int | None = None) -> FloatArray:
        """Time to fetch the block from each of ``tiers`` (s): :func:`fetch_s` with its link bytes and transfer model.

        ``transfers`` overrides :attr:`transfers` (another layout of the same block).
        """
        n = self.transfers if transfers is None else transfers
        return fetch_s(tiers, self.link_bytes, n, self.min_transfer_s, self.link_efficiency, self.link_overhead_s)

    @property
    def link_bytes(self) -> float:
        """Bytes one fetch moves over one link (B): :attr:`fetch_bytes`, else the block's bytes."""
        return self.block_bytes if self.fetch_bytes is None else self.fetch_bytes

    def bound_in(self, regime: str) -> str:
        """The side of the roofline that binds regenerating the block in ``regime``: ``memory`` or ``compute``."""
        if self.bound is not None:
            return self.bound[regime]
        return {"lone": "memory", "batch": "compute"}[regime]


@dataclass(frozen=True)
class Intervals:
    """One block in one regime, priced in every tier (arrays over the tiers, in order).

    Attributes
    ----------
    tiers, media : tuple of str
        The tiers and the medium behind each.
    block : Block
        The block priced.
    regime : str
        ``lone`` or ``batch``.
    regen_s : float
        Time to regenerate the block once (s).
    recompute_usd, recompute_j : float
        Cost of recomputing it once: accelerator time (USD) and board energy (J).
    fetch_s, fetch_usd, fetch_j : ndarray
        One fetch from each tier: its time (s), the accelerator's time it takes (USD) and
        the board's energy meanwhile (J); 0 from HBM.
    hold_usd_per_byte_s, hold_w_per_byte : ndarray
        Each tier's holding price per byte (USD/(B s)) and power per byte (W/B).
    keep_usd_s, keep_j_s : ndarray
        How long the block is worth holding in each tier rather than recomputing it, by the
        dollar and by the joule (s; :func:`~kvtier.formulas.economics.keep_interval_s`).
    hbm_over_tier_s : ndarray
        How long it is worth holding in HBM rather than fetching it from each tier, by the
        dollar (s, Gray's form, :func:`~kvtier.formulas.economics.gray_interval_s`; 0 for HBM).
    """

    tiers: tuple[str, ...]
    media: tuple[str, ...]
    block: Block
    regime: str
    regen_s: float
    recompute_usd: float
    recompute_j: float
    fetch_s: FloatArray
    fetch_usd: FloatArray
    fetch_j: FloatArray
    hold_usd_per_byte_s: FloatArray
    hold_w_per_byte: FloatArray
    keep_usd_s: FloatArray
    keep_j_s: FloatArray
    hbm_over_tier_s: FloatArray

    def at(self, tier: str) -> dict[str, float]:
        """The per-tier figures of ``tier`` as floats, by field name (s, USD, J, USD/(B s), W/B)."""
        i = self.tiers.index(tier)
        names = ("fetch_s", "fetch_usd", "fetch_j", "hold_usd_per_byte_s", "hold_w_per_byte", "keep_usd_s", "keep_j_s")
        return {n: float(getattr(self, n)[i]) for n in (*names, "hbm_over_tier_s")}


def intervals(prices: Prices, tiers: Tiers, block: Block, regime: str) -> Intervals:
    """Price ``block`` regenerated in ``regime`` in every tier: holding, fetching, recomputing, the intervals.

    Fetching and recomputing occupy the accelerator: their dollars are its price per second
    times the time, their joules the board power times the time, the power of the side of
    the roofline that binds the block's pass in ``regime`` (:meth:`Block.bound_in`).  Holding the
    block's bytes costs the medium's price per byte-second (or draws its power per byte).
    """
    media = tiers.media
    usd_hold, j_hold = hold_usd_per_byte_s(prices), hold_w_per_byte(prices)
    accel, power = prices.accelerator_usd_per_s, prices.power_w(block.bound_in(regime))
    n_bytes = block.stored_bytes
    fetch = block.fetch_s(tiers)
    regen = float(block.regen_s[regime])
    r_usd, r_j = regen * accel, regen * power
    hold_usd = np.array([usd_hold[m] for m in media])
    hold_w = np.array([j_hold[m] for m in media])
    f_usd, f_j = fetch * accel, fetch * power
    h_usd, h_j = hold_usd * n_bytes, hold_w * n_bytes
    in_hbm = np.array(media) == "hbm"
    return Intervals(
        tiers=tiers.names,
        media=media,
        block=block,
        regime=regime,
        regen_s=regen,
        recompute_usd=r_usd,
        recompute_j=r_j,
        fetch_s=fetch,
        fetch_usd=f_usd,
        fetch_j=f_j,
        hold_usd_per_byte_s=hold_usd,
        hold_w_per_byte=hold_w,
        keep_usd_s=economics.keep_interval_s(r_usd, f_usd, h_usd),
        keep_j_s=economics.keep_interval_s(r_j, f_j, h_j),
        hbm_over_tier_s=np.where(in_hbm, 0.0, economics.gray_interval_s(f_usd, usd_hold["hbm"] * n_bytes)),
    )


def interval_grid(prices: Prices, tiers: Tiers, blocks: Sequence[Block]) -> dict[tuple[int, str], Intervals]:
    """:func:`intervals` for every block and regime, by ``(tokens, regime)``: blocks in order, then :data:`REGIMES`."""
    return {(b.tokens, regime): intervals(prices, tiers, b, regime) for b in blocks for regime in REGIMES}


def vary(prices: Prices, field: str, value: float) -> Prices:
    """``prices`` with the one field ``field`` set to ``value`` (SI), the others held."""
    if field not in {f.name for f in fields(Prices)}:
        raise ValueError(f"Prices has no field {field!r}")
    return replace(prices, **{field: value})


def swing(a: float | None, b: float | None) -> float | None:
    """How many times the larger of two positive figures is the smaller; ``None`` where either is 0 or undefined."""
    if a is None or b is None or not (a > 0 and b > 0):
        return None
    return max(a, b) / min(a, b)


def _widest_first(rows: list[dict], key: str) -> list[dict]:
    """``rows`` by ``key`` descending, ``None`` last, ties by ``input``."""
    return sorted(rows, key=lambda r: (r[key] is None, -(r[key] or 0.0), r["input"]))


def interval_tornado(
    prices: Prices,
    ends: Mapping[str, tuple[Prices, Prices]],
    tiers: Tiers,
    block: Block,
    tier: str = CXL_TIER,
    regime: str = "lone",
) -> list[dict[str, float | str | None]]:
    """How far each input's range moves one tier's intervals, widest dollar swing first.

    Parameters
    ----------
    prices : Prices
        Every input at its value.
    ends : mapping of str to (Prices, Prices)
        Per input (by name): the prices with that input at the low and at the high end of its
        range, every other input at its value.
    tiers, block, regime
        The tiers, the block and the regime priced (:func:`intervals`).
    tier : str
        The tier followed.

    Returns
    -------
    list of dict
        One per input: ``input``; ``keep_usd_at_low_s``, ``keep_usd_at_high_s``,
        ``keep_usd_base_s`` (s) and ``swing_usd`` (the larger over the smaller, or ``None``
        where one is 0); the same in joules (``keep_j_*``, ``swing_j``).  Sorted by
        ``swing_usd``, widest first, ties by input name.
    """

    def keep(p: Prices) -> tuple[float, float]:
        at = intervals(p, tiers, block, regime).at(tier)
        return at["keep_usd_s"], at["keep_j_s"]

    base = keep(prices)
    rows = []
    for name, (low, high) in ends.items():
        at_low, at_high = keep(low), keep(high)
        row: dict[str, float | str | None] = {"input": name}
        for i, unit in enumerate(("usd", "j")):
            row[f"keep_{unit}_at_low_s"] = at_low[i]
            row[f"keep_{unit}_at_high_s"] = at_high[i]
            row[f"keep_{unit}_base_s"] = base[i]
            row[f"swing_{unit}"] = swing(at_low[i], at_high[i])
        rows.append(row)
    return _widest_first(rows, "swing_usd")


# ---- a trace's reuses, served at least cost ---------------------------------------------


def trace_mix(
    prices: Prices,
    tiers: Tiers,
    block: Block,
    regime: str,
    intervals_s: np.ndarray,
    duration_s: float,
    recompute_s: np.ndarray | None = None,
    reuse_at_s: np.ndarray | None = None,
    weights: np.ndarray | None = None,
) -> economics.Mix:
    """Serve each reuse of a trace the cheapest way from ``tiers`` (a ladder, fastest first), or recompute it.

    Each tier holds the block at its medium's price per byte-second and fetches it once for
    the accelerator's time; recomputing costs the accelerator's time to regenerate it in
    ``regime`` (:func:`~kvtier.formulas.economics.tier_mix`, in USD).  With perfect knowledge
    of each block's next use this is the least any tiering can cost: a lower bound, not a
    cache that can be built (:func:`lru_tiers` sizes one).

    Parameters
    ----------
    intervals_s : ndarray
        Time from each reuse of a block back to its previous reference (s).
    duration_s : float
        Length of the trace (s, >= 0).
    recompute_s : ndarray, optional
        Time to recompute each reuse in ``regime`` (s, one per reuse: the block with its
        attention over the prefix before it,
        :meth:`kvtier.formulas.cache.regen.RegenCosts.per_reference_s`); by default every reuse
        takes ``block.regen_s[regime]``.
    reuse_at_s : ndarray, optional
        When each reuse comes (s); with it the mix gives each tier's peak bytes held.
    weights : ndarray, optional
        The reuses each interval stands for (distinct intervals with their counts); 1 each by default.
    """
    hold, fetch = _mix_prices(prices, tiers, block)
    regen = float(block.regen_s[regime]) if recompute_s is None else np.asarray(recompute_s, dtype=float)
    return economics.tier_mix(
        intervals_s,
        duration_s,
        block.stored_bytes,
        hold,
        fetch,
        regen * prices.accelerator_usd_per_s,
        reuse_at_s,
        weights,
    )


def mix_tally(prices: Prices, tiers: Tiers, block: Block, instants: int = 0) -> economics.MixTally:
    """:func:`trace_mix`'s sums with the peak, fed chunk by chunk (:class:`kvtier.formulas.cache.replay.MixObserver`).

    ``instants``: the trace's distinct instants, where known (:class:`~kvtier.formulas.economics.MixTally`'s).
    """
    hold, fetch = _mix_prices(prices, tiers, block)
    return economics.MixTally(block.stored_bytes, hold, fetch, peak=True, instants=instants)


def _mix_prices(prices: Prices, tiers: Tiers, block: Block) -> tuple[list[float], np.ndarray]:
    """Each tier's price of holding a byte for a second (USD/(B s)) and of one fetch of ``block`` (USD)."""
    usd_hold = hold_usd_per_byte_s(prices)
    return [usd_hold[m] for m in tiers.media], block.fetch_s(tiers) * prices.accelerator_usd_per_s


def by_medium(values: Sequence[float] | np.ndarray, tiers: Sequence[str]) -> dict[str, float]:
    """Per-tier values of a mix over ``tiers`` (recomputation last) summed per medium of :data:`MIX_MEDIA`."""
    media = [medium(t) for t in tiers] + ["recompute"]
    return {m: float(sum(values[i] for i, x in enumerate(media) if x == m)) for m in MIX_MEDIA}


def largest_medium(mix: economics.Mix, tiers: Sequence[str]) -> str | None:
    """The medium that holds the most bytes in ``mix`` over ``tiers`` (byte-seconds for a trace of 0 s).

    ``None`` where no medium holds any (a trace with no reuse, or one whose reuses all come at once).
    """
    held = mix.bytes_held if mix.bytes_held is not None else mix.byte_s_held
    amounts = {m: v for m, v in by_medium(held, tiers).items() if m != "recompute"}
    top = max(amounts, key=lambda m: amounts[m])
    return top if amounts[top] > 0 else None


def mix_tornado(
    prices: Prices,
    ends: Mapping[str, tuple[Prices, Prices]],
    tiers: Tiers,
    block: Block,
    regime: str,
    intervals_s: np.ndarray,
    duration_s: float,
    weights: np.ndarray | None = None,
) -> list[dict[str, float | str | None]]:
    """How far each input's range moves a trace's mix: its cost per second and the medium that holds the most.

    Parameters are those of :func:`trace_mix`, and ``ends`` as in :func:`interval_tornado`.

    Returns
    -------
    list of dict
        One per input: ``input``; ``usd_per_s_at_low``, ``usd_per_s_at_high``,
        ``usd_per_s_base`` (USD/s; ``None`` for a trace of 0 s); ``swing`` (``None`` where a
        cost is 0 or undefined); ``largest_at_low``, ``largest_at_high``, ``largest_base``
        (a medium of :data:`MEDIA`, or ``None``: none holds a byte).  Sorted by ``swing``,
        widest first, ``None`` last, ties by input name.
    """

    def at(p: Prices) -> tuple[float | None, str | None]:
        mix = trace_mix(p, tiers, block, regime, intervals_s, duration_s, weights=weights)
        return mix.usd_per_s, largest_medium(mix, tiers.names)

    base, base_top = at(prices)
    rows = []
    for name, (low, high) in ends.items():
        (at_low, top_low), (at_high, top_high) = at(low), at(high)
        rows.append(
            {
                "input": name,
                "usd_per_s_at_low": at_low,
                "usd_per_s_at_high": at_high,
                "usd_per_s_base": base,
                "swing": swing(at_low, at_high),
                "largest_at_low": top_low,
                "largest_at_high": top_high,
                "largest_base": base_top,
            }
        )
    return _widest_first(rows, "swing")
