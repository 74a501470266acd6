"""Assumptions with provenance, and assumption sets loaded from YAML.

Every input of the analysis is an assumption: a :class:`~kvtier.inputs.provenance.Record`
holding a value (in SI base units), what kind of quantity it is, the text it was
written as, a basis in words, a provenance class and a source.  An
:class:`AssumptionSet` maps keys such as ``bandwidth.mid`` to assumptions.  The
shipped ``seed`` set reproduces the source chapter; user files and ``--set
KEY=VALUE`` overrides are layered on top of it, and every value is validated (type,
range, finiteness) with an error naming the key.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from kvtier.data import ENGINE_PRESETS, MODEL_PRESETS, SHIPPED_TRACES
from kvtier.errors import KvtierError, show
from kvtier.inputs import engines
from kvtier.inputs.provenance import PROVENANCE_CLASSES, Record
from kvtier.inputs.readers import load_yaml
from kvtier.inputs.traces.formats import TRACE_FORMATS
from kvtier.units import DTYPE_BYTES, KINDS, Bounds, is_bare_number, parse_quantity

Assumption = Record
"""An assumption is a :class:`~kvtier.inputs.provenance.Record` whose key is a key of :data:`SCHEMA`."""


@dataclass(frozen=True)
class KeySpec:
    """A key of an assumption set: what it is and the values it may hold, in one record.

    Attributes
    ----------
    kind : str
        A quantity kind of :data:`kvtier.units.KINDS` (which gives its SI unit and the units
        it reads), or ``"choice"``/``"text"``.
    help : str
        What the key is, in one line without its unit or allowed values (:func:`describe`
        adds those): ``"link bandwidth of the mid bracket, one direction"``.
    low, high : str or None
        Allowed range, both ends included, as text in the kind's units (``"1"``,
        ``"1e8"``); None takes the kind's physical bound from :data:`kvtier.units.LIMITS`.
    integer : bool
        Whether the value must be a whole number.
    choices : tuple of str
        Allowed values for ``choice`` keys.
    optional : bool
        Whether ``null`` (use the model's own value) is allowed.
    groups : tuple of str
        The groups of keys it belongs to (:data:`GROUPS`): a page or a model that reads a whole group
        names the group (:func:`keys_in`), so a new key of the group is one record here.
    """

    kind: str
    help: str
    low: str | None = None
    high: str | None = None
    integer: bool = False
    choices: tuple[str, ...] = ()
    optional: bool = False
    groups: tuple[str, ...] = ()

    @property
    def bounds(self) -> Bounds:
        """The allowed range of a quantity key: its own ends, else the kind's physical ones."""
        limits = KINDS[self.kind].bounds
        return Bounds(self.kind, self.low or limits.low, self.high or limits.high)

    @property
    def unit_example(self) -> str | None:
        """The form a value of this key is typed in when it needs a unit (``"64GB/s"``), else None."""
        kind = KINDS.get(self.kind)
        return kind.unit_example if kind is not None else None

    def allowed(self) -> str:
        """Describe the allowed values in words, for error messages."""
        if self.kind == "choice":
            return "one of " + ", ".join(self.choices)
        if self.kind == "text":
            return "a non-empty string"
        whole = "a whole number of " if self.integer else ""
        extra = " or null" if self.optional else ""
        return f"{whole}{self.bounds}{extra}"

    def describe(self) -> str:
        """One line: what the key is, and the values it takes (a bandwidth needs a unit)."""
        if self.unit_example is not None:
            form = f"{self.kind.replace('_', ' ')} with a unit, e.g. {self.unit_example}"
        elif self.kind == "fraction":
            form = "fraction, e.g. 40% or 0.4"
        elif self.kind == "tokens":
            form = "tokens, e.g. 16 or 32K"
        elif self.kind in ("choice", "text"):
            form = self.allowed()
        else:
            form = "a number" + (", whole" if self.integer else "")
        return f"{self.help}; {form}"


BANDWIDTH_LABELS = ("optimistic", "mid", "pessimistic")
LAYOUTS = ("contiguous", "per-layer")
"""How a block lies in a tier (``fetch_layout``): one contiguous transfer, or one per layer chunk as a paged cache."""
COST_MEDIA = ("dram", "cxl", "nvme")
"""The media below HBM whose capacity has a price per GB (``cost.dram_gb`` ...)."""
COST_RANGES = (
    "cost.accelerator_hour",
    "cost.hbm_share",
    "cost.dram_gb",
    "cost.cxl_gb",
    "cost.nvme_gb",
    "cost.amortisation",
    "cost.energy_kwh",
    "energy.dram_w_per_gb",
    "energy.nvme_w_per_gb",
)
"""The cost inputs with a range (``KEY_low`` .. ``KEY_high``) for the tornado."""
COLLECTIVE_RANGES = (
    "collective.nvlink_bandwidth",
    "collective.nvlink_latency",
    "collective.ib_bandwidth",
    "collective.ib_latency",
)
"""The collective-communication inputs with a range (``KEY_low`` .. ``KEY_high``)."""
PARALLEL_KEYS = ("parallel.tp", "parallel.pp", "parallel.ep", "parallel.gpus_per_link")
"""The placement's counts: tensor-, pipeline- and expert-parallel sizes and the accelerators sharing a link."""
MFU_LABELS = ("optimistic", "typical", "conservative")
LINK_CLASSES: dict[str, tuple[str, ...]] = {
    "hbm": ("hbm",),
    "host_link": ("pcie", "cxl"),
    "nvlink_c2c": ("nvlink-c2c",),
    "rdma": ("rdma",),
    "nvme": ("nvme",),
}
"""The link classes that share one per-transfer latency (``tier_latency.CLASS``), and the prefixes of the link
presets (``kvtier/data/hardware.yaml``) in each.

One latency per class, not per preset: what a transfer costs before its first byte is set by what
starts it and what answers it, and that is the same across a class's presets.  A GPU reaches host
DRAM over PCIe 5.0 or 6.0 and a CXL expander over the same host link by the same copy, launched the
same way (``host_link``); an NVMe read is a flash read whatever the PCIe generation (``nvme``)."""
TIER_LATENCY_KEYS: tuple[str, ...] = tuple(f"tier_latency.{name}" for name in LINK_CLASSES)
"""The per-transfer latency keys, one per link class of :data:`LINK_CLASSES`."""


def tier_latency_key(preset: str) -> str:
    """The key holding the per-transfer latency of link preset ``preset`` (``tier_latency.CLASS``).

    Raises
    ------
    KvtierError
        If the preset's name starts with no prefix of :data:`LINK_CLASSES`: its latency would be unknown.
    """
    for name, prefixes in LINK_CLASSES.items():
        if any(preset == p or preset.startswith(p) for p in prefixes):
            return f"tier_latency.{name}"
    known = ", ".join(p for prefixes in LINK_CLASSES.values() for p in prefixes)
    raise KvtierError(
        f"link preset {show(preset, quote=True)} belongs to no link class with a per-transfer latency key"
        f" (tier_latency.*); its name must start with one of: {known}"
    )


UNCERTAIN_POINTS: dict[str, tuple[str, ...]] = {
    "bandwidth": tuple(f"bandwidth.{label}" for label in BANDWIDTH_LABELS),
    "mfu": tuple(f"mfu.{label}" for label in MFU_LABELS),
    "peak": ("peak_flops",),
    "mem_bandwidth": ("regen.mem_bandwidth",),
    "mem_efficiency": ("regen.mem_efficiency",),
}
"""The values each uncertainty range (``uncertainty.NAME_low`` .. ``_high``) must hold, highest first.

The Monte Carlo and the tornado of the uncertainty page (:func:`kvtier.report.pages.uncertainty.inputs`)
draw ``NAME`` between those ends around a base point: the illustrative bracket of the bandwidth
and of the MFU, ``peak_flops``, ``regen.mem_bandwidth`` and ``regen.mem_efficiency``.  The range
must hold every bracket, not only the illustrative one: the ratio page quotes the ratio across
the brackets, and a bracket outside the drawn range would contradict the draws' percentiles.
"""

SCHEMA: dict[str, KeySpec] = {
    "model": KeySpec("text", "the model: a preset name or the path of a Hugging Face config.json", groups=("point",)),
    "kv_dtype": KeySpec(
        "choice", "element type the KV cache is stored in", choices=tuple(DTYPE_BYTES), groups=("point",)
    ),
    "weight_dtype": KeySpec(
        "choice", "element type the weights are stored in", choices=tuple(DTYPE_BYTES), groups=("point",)
    ),
    "param_count": KeySpec(
        "count",
        "parameters that regeneration runs through (null: the exact count of the model config)",
        low="1",
        optional=True,
        groups=("point",),
    ),
    "block_tokens": KeySpec("tokens", "tokens one KV block covers", low="1", integer=True, groups=("point",)),
    "flops_per_param_token": KeySpec(
        "count",
        "forward-pass FLOPs per parameter per token (2: one multiply, one add)",
        low="0.01",
        high="1000",
        groups=("point",),
    ),
    "peak_flops": KeySpec("flop_rate", "dense peak of the accelerator that regenerates", groups=("point",)),
    "fetch_latency": KeySpec(
        "time", "fixed latency of one transfer, paid once per transfer a fetch needs", groups=("point",)
    ),
    "fetch_layout": KeySpec(
        "choice",
        "how a block lies in the tier: one contiguous transfer, or one per layer chunk as a paged cache",
        choices=LAYOUTS,
        groups=("point",),
    ),
    "engine": KeySpec(
        "choice",
        "the serving engine whose block layout the fetch follows (kvtier/data/engines.yaml): its tokens per block,"
        " transfers per block and layer-by-layer overlap; none: block_tokens and fetch_layout as set",
        choices=(engines.NO_ENGINE, *ENGINE_PRESETS),
        groups=("point",),
    ),
    "tier_latency.hbm": KeySpec(
        "time", "fixed latency of one transfer from the accelerator's own HBM (never fetched from)"
    ),
    "tier_latency.host_link": KeySpec(
        "time",
        "fixed latency of one copy over the host link, per transfer: host DRAM over PCIe and CXL expanders"
        " alike (one key: the same copy reaches both)",
    ),
    "tier_latency.nvlink_c2c": KeySpec("time", "fixed latency of one transfer over NVLink-C2C, per transfer"),
    "tier_latency.rdma": KeySpec("time", "fixed latency of one RDMA read of a remote host's DRAM, per transfer"),
    "tier_latency.nvme": KeySpec(
        "time",
        "fixed latency of one NVMe read, per transfer, one after another; one key for every PCIe generation"
        " (the flash read sets it)",
    ),
    "bandwidth.optimistic": KeySpec(
        "bandwidth", "link bandwidth of the optimistic bracket, one direction", groups=("point",)
    ),
    "bandwidth.mid": KeySpec("bandwidth", "link bandwidth of the mid bracket, one direction", groups=("point",)),
    "bandwidth.pessimistic": KeySpec(
        "bandwidth", "link bandwidth of the pessimistic bracket, one direction", groups=("point",)
    ),
    "mfu.optimistic": KeySpec("fraction", "model FLOPs utilization of the optimistic bracket", groups=("point",)),
    "mfu.typical": KeySpec("fraction", "model FLOPs utilization of the typical bracket", groups=("point",)),
    "mfu.conservative": KeySpec("fraction", "model FLOPs utilization of the conservative bracket", groups=("point",)),
    "illustrative.bandwidth": KeySpec(
        "choice", "the bandwidth bracket of the illustrative point", choices=BANDWIDTH_LABELS, groups=("point",)
    ),
    "illustrative.mfu": KeySpec(
        "choice", "the MFU bracket of the illustrative point", choices=MFU_LABELS, groups=("point",)
    ),
    "context.short": KeySpec("tokens", "first reference context length of one sequence", low="1", integer=True),
    "context.long": KeySpec(
        "tokens", "second reference context length of one sequence", low="1", integer=True, groups=("placement",)
    ),
    "interior.position": KeySpec("tokens", "start position of the example interior block", integer=True),
    "interior.context": KeySpec(
        "tokens", "length of the sequence holding the example interior block", low="1", integer=True
    ),
    "interior.anchor_every": KeySpec(
        "tokens",
        "spacing of resident anchors an evicted prefix restarts from (0: the start only)",
        integer=True,
        groups=("point",),
    ),
    "regen.model": KeySpec(
        "choice",
        "regeneration time model: compute only (mfu) or bounded by memory reads too (roofline)",
        choices=("mfu", "roofline"),
    ),
    "regen.batch_tokens": KeySpec(
        "tokens",
        "tokens in the forward pass that regenerates the block (the block alone: its size)",
        low="1",
        integer=True,
    ),
    "regen.mem_bandwidth": KeySpec(
        "bandwidth", "device-memory bandwidth of the accelerator that regenerates", groups=("forward",)
    ),
    "regen.mem_efficiency": KeySpec(
        "fraction", "share of the device-memory bandwidth a forward pass reaches", groups=("forward",)
    ),
    "fetch.min_transfer_time": KeySpec(
        "time", "least time of a fetch, the floor a lone small copy does not go below", groups=("transfer",)
    ),
    "fetch.host_memory": KeySpec(
        "choice",
        "host memory a fetch copies from: page-locked (pinned) or pageable",
        choices=("pinned", "pageable"),
        groups=("transfer",),
    ),
    "fetch.pageable_efficiency": KeySpec(
        "fraction",
        "share of the pinned rate a pageable copy reaches staged from DRAM (a KV pool beyond the host cache)",
        groups=("transfer",),
    ),
    "fetch.pageable_warm_efficiency": KeySpec(
        "fraction", "share of the pinned rate a pageable copy reaches when its source sits in the host CPU's cache"
    ),
    "fetch.pageable_overhead": KeySpec(
        "time", "fixed time each copy from pageable memory adds to its latency", groups=("transfer",)
    ),
    "fetch.host_cache": KeySpec(
        "bytes", "host CPU's last-level cache: a pageable source up to this size copied again stages from it (0: never)"
    ),
    "fetch.contention": KeySpec(
        "choice",
        "what else the link carries during a fetch: nothing, or writes the other way (duplex)",
        choices=("none", "duplex"),
        groups=("transfer",),
    ),
    "fetch.duplex_efficiency": KeySpec(
        "fraction", "share of one direction's rate kept while the other runs too", groups=("transfer",)
    ),
    "regen.mem_overhead_per_layer": KeySpec(
        "time",
        "fixed time per layer a pass adds to its weight stream (small matrices stream below the rate)",
        groups=("forward",),
    ),
    "regen.launch_floor_per_layer": KeySpec(
        "time",
        "host time to launch one layer's kernels of an eager pass, a floor under the pass (0: a CUDA graph)",
        groups=("forward",),
    ),
    "regen.knee_sharpness": KeySpec(
        "count",
        "exponent p of the knee blend of compute and memory (at least 1; 0: the plain maximum, the chapter's)",
        groups=("forward",),
    ),
    "regen.attention": KeySpec(
        "choice",
        "how attention reads the cached KV: with the weight stream (streamed) or layer by layer after it (serial)",
        choices=("streamed", "serial"),
        groups=("forward",),
    ),
    "regen.attention_fixed_per_layer": KeySpec(
        "time", "fixed time of one layer's attention call (serial attention)", groups=("forward",)
    ),
    "regen.attention_efficiency": KeySpec(
        "fraction",
        "share of the device-memory bandwidth attention's KV read reaches (serial attention)",
        groups=("forward",),
    ),
    "uncertainty.distribution": KeySpec(
        "choice",
        "how each uncertain input is drawn between its low and high values",
        choices=("log-uniform", "uniform"),
    ),
    "uncertainty.bandwidth_low": KeySpec("bandwidth", "lowest link bandwidth drawn"),
    "uncertainty.bandwidth_high": KeySpec("bandwidth", "highest link bandwidth drawn"),
    "uncertainty.mfu_low": KeySpec("fraction", "lowest MFU drawn"),
    "uncertainty.mfu_high": KeySpec("fraction", "highest MFU drawn"),
    "uncertainty.peak_low": KeySpec("flop_rate", "lowest dense peak drawn"),
    "uncertainty.peak_high": KeySpec("flop_rate", "highest dense peak drawn"),
    "uncertainty.mem_bandwidth_low": KeySpec("bandwidth", "lowest device-memory bandwidth drawn (lone block)"),
    "uncertainty.mem_bandwidth_high": KeySpec("bandwidth", "highest device-memory bandwidth drawn (lone block)"),
    "uncertainty.mem_efficiency_low": KeySpec("fraction", "lowest device-memory efficiency drawn (lone block)"),
    "uncertainty.mem_efficiency_high": KeySpec("fraction", "highest device-memory efficiency drawn (lone block)"),
    "uncertainty.draws": KeySpec("count", "Monte Carlo draws per regime", low="1", high="1e8", integer=True),
    "uncertainty.seed": KeySpec(
        "count", "seed of the random generator", high="9007199254740992", integer=True
    ),  # 2**53: exact as a float
    "workload.trace": KeySpec(
        "text", "the serving trace the tier is sized for, a shipped one or a JSONL file", groups=("trace",)
    ),
    "workload.block_tokens": KeySpec(
        "tokens", "prompt tokens per hash id of the serving trace", low="1", integer=True, groups=("trace",)
    ),
    "workload.trace_format": KeySpec(
        "choice",
        "the serving trace's format: its unit of time and whether its ids are prefix-chained",
        choices=tuple(TRACE_FORMATS),
        groups=("trace",),
    ),
    "workload.hit_count": KeySpec(
        "choice",
        "how a request's hits are counted: up to its first miss (prefix) or every cached block (per-block)",
        choices=("prefix", "per-block"),
        groups=("trace",),
    ),
    "workload.sample_rate": KeySpec(
        "fraction",
        "share of the trace's blocks the LRU curve is measured on (spatial sampling, SHARDS); 1 is exact",
        low="1e-6",
        high="1",
    ),
    "reference.dgx_spark_hbm": KeySpec("bandwidth", "a measured DGX Spark memory read, shown for comparison only"),
    "reference.h200_host_link": KeySpec("bandwidth", "a measured H200 host-link copy rate, shown for comparison only"),
    "cost.accelerator_hour": KeySpec(
        "price_rate",
        "price of one hour of the accelerator that regenerates, all in (a cloud on-demand rate)",
        groups=("price",),
    ),
    "cost.accelerator_hour_low": KeySpec(
        "price_rate", "lowest accelerator price per hour the tornado considers", groups=("price",)
    ),
    "cost.accelerator_hour_high": KeySpec(
        "price_rate", "highest accelerator price per hour the tornado considers", groups=("price",)
    ),
    "cost.hbm_capacity": KeySpec(
        "bytes",
        "HBM capacity of the accelerator, the bytes its HBM share is spread over",
        low="1 GB",
        groups=("price",),
    ),
    "cost.hbm_share": KeySpec(
        "fraction", "share of the accelerator's hourly price that its HBM capacity stands for", groups=("price",)
    ),
    "cost.hbm_share_low": KeySpec(
        "fraction", "lowest HBM share of the accelerator's price the tornado considers", groups=("price",)
    ),
    "cost.hbm_share_high": KeySpec(
        "fraction", "highest HBM share of the accelerator's price the tornado considers", groups=("price",)
    ),
    "cost.dram_gb": KeySpec("price_capacity", "purchase price of host DRAM capacity per GB", groups=("price",)),
    "cost.dram_gb_low": KeySpec(
        "price_capacity", "lowest host DRAM price per GB the tornado considers", groups=("price",)
    ),
    "cost.dram_gb_high": KeySpec(
        "price_capacity", "highest host DRAM price per GB the tornado considers", groups=("price",)
    ),
    "cost.cxl_gb": KeySpec(
        "price_capacity",
        "purchase price of CXL expander memory per GB, module and controller included",
        groups=("price",),
    ),
    "cost.cxl_gb_low": KeySpec(
        "price_capacity", "lowest CXL expander price per GB the tornado considers", groups=("price",)
    ),
    "cost.cxl_gb_high": KeySpec(
        "price_capacity", "highest CXL expander price per GB the tornado considers", groups=("price",)
    ),
    "cost.nvme_gb": KeySpec("price_capacity", "purchase price of NVMe flash capacity per GB", groups=("price",)),
    "cost.nvme_gb_low": KeySpec("price_capacity", "lowest NVMe price per GB the tornado considers", groups=("price",)),
    "cost.nvme_gb_high": KeySpec(
        "price_capacity", "highest NVMe price per GB the tornado considers", groups=("price",)
    ),
    "cost.amortisation": KeySpec(
        "period", "period over which purchased memory and storage are written off", groups=("price",)
    ),
    "cost.amortisation_low": KeySpec("period", "shortest amortisation period the tornado considers", groups=("price",)),
    "cost.amortisation_high": KeySpec("period", "longest amortisation period the tornado considers", groups=("price",)),
    "cost.energy_kwh": KeySpec("price_energy", "price of electrical energy", groups=("price",)),
    "cost.energy_kwh_low": KeySpec("price_energy", "lowest energy price the tornado considers", groups=("price",)),
    "cost.energy_kwh_high": KeySpec("price_energy", "highest energy price the tornado considers", groups=("price",)),
    "cost.large_block_tokens": KeySpec(
        "tokens",
        "tokens of the larger block the cost page prices next to the source chapter's",
        low="1",
        integer=True,
        groups=("price",),
    ),
    "energy.power_lone": KeySpec(
        "power", "accelerator board power while it regenerates a lone block", groups=("price",)
    ),
    "energy.power_batch": KeySpec(
        "power", "accelerator board power while it runs a compute-bound batch", groups=("price",)
    ),
    "reference.h200_forward16_energy": KeySpec(
        "energy", "a measured H200 energy of one 16-token 70B-shaped forward pass, shown for comparison only"
    ),
    "energy.dram_w_per_gb": KeySpec(
        "power_capacity",
        "power to hold a GB in DRAM (HBM, host DRAM, CXL expander), refresh and idle",
        groups=("price",),
    ),
    "energy.dram_w_per_gb_low": KeySpec(
        "power_capacity", "lowest DRAM holding power per GB the tornado considers", groups=("price",)
    ),
    "energy.dram_w_per_gb_high": KeySpec(
        "power_capacity", "highest DRAM holding power per GB the tornado considers", groups=("price",)
    ),
    "energy.nvme_w_per_gb": KeySpec(
        "power_capacity",
        "power to hold a GB on NVMe flash, the drive's idle power over its capacity",
        groups=("price",),
    ),
    "energy.nvme_w_per_gb_low": KeySpec(
        "power_capacity", "lowest NVMe holding power per GB the tornado considers", groups=("price",)
    ),
    "energy.nvme_w_per_gb_high": KeySpec(
        "power_capacity", "highest NVMe holding power per GB the tornado considers", groups=("price",)
    ),
    "decision.hit_target": KeySpec(
        "fraction", "share of the trace's achievable hits the decision's LRU tier is sized for", low="0.01", high="1"
    ),
    "nvme.write_bandwidth": KeySpec(
        "bandwidth",
        "sequential write bandwidth of one NVMe drive of the tier, the rate an LRU tier admits blocks at",
        groups=("price",),
    ),
    "nvme.endurance_dwpd": KeySpec(
        "count",
        "rated endurance of one NVMe drive of the tier, in drive writes per day",
        low="0.01",
        high="1000",
        groups=("price",),
    ),
    "nvme.endurance_period": KeySpec(
        "period", "period the NVMe drive's rated drive writes per day hold for", groups=("price",)
    ),
    "parallel.tp": KeySpec(
        "count",
        "tensor-parallel size: accelerators each layer's heads and matrices are split over",
        low="1",
        high="1024",
        integer=True,
        groups=("placement",),
    ),
    "parallel.pp": KeySpec(
        "count",
        "pipeline-parallel size: stages the layers are split into, one after another",
        low="1",
        high="1024",
        integer=True,
        groups=("placement",),
    ),
    "parallel.ep": KeySpec(
        "count",
        "expert-parallel size: accelerators the routed experts of an MoE model are spread over",
        low="1",
        high="1024",
        integer=True,
        groups=("placement",),
    ),
    "parallel.gpus_per_link": KeySpec(
        "count",
        "accelerators that share one link to the tier and fetch at once (behind one PCIe switch or NIC)",
        low="1",
        high="64",
        integer=True,
        groups=("placement",),
    ),
    "parallel.hbm_capacity": KeySpec(
        "bytes",
        "memory of each accelerator the placement must fit its weights and one long sequence's KV in"
        " (null: not checked)",
        low="1 GB",
        optional=True,
        groups=("placement",),
    ),
    "parallel.activation_dtype": KeySpec(
        "choice",
        "element type of the activations the collectives move",
        choices=tuple(DTYPE_BYTES),
        groups=("placement",),
    ),
    **{
        f"collective.{name}{end}": KeySpec(kind, f"{what}{tail}", groups=("placement",) if not end else ())
        for name, kind, what in (
            ("nvlink_bandwidth", "bandwidth", "bandwidth of one accelerator's NVLink, per direction"),
            ("nvlink_latency", "time", "latency of one small NCCL collective (all-reduce, all-to-all) over NVLink"),
            ("ib_bandwidth", "bandwidth", "bandwidth of one InfiniBand port between nodes, per direction"),
            ("ib_latency", "time", "latency of one point-to-point hand-off between pipeline stages over InfiniBand"),
        )
        for end, tail in (("", ""), ("_low", ": the low end of its range"), ("_high", ": the high end of its range"))
    },
}
"""Every key an assumption set may hold, with what it is and the values it takes. Unknown keys are rejected."""


GROUPS: dict[str, str] = {
    "point": "the illustrative tail block's own inputs: the model, the block, the brackets, the FLOP convention",
    "placement": "the model placed across accelerators: its counts, the collectives' links and the fit check",
    "forward": "the forward-pass model beyond the compute side: the memory side, the per-layer terms, attention",
    "transfer": "the transfer model beyond latency and bandwidth: the floor, pageable memory, a busy link",
    "price": "the tier-pricing model: prices and their ranges, powers, the NVMe drive an LRU tier writes to",
    "trace": "what shapes a trace's analysis: the file, its format, its tokens per block, how hits are counted",
}
"""The groups a key may belong to (:attr:`KeySpec.groups`), with what each holds."""


def keys_in(*groups: str) -> tuple[str, ...]:
    """Every key of :data:`SCHEMA` in any of ``groups``, in schema order.

    Raises
    ------
    ValueError
        For a group :data:`GROUPS` does not name.
    """
    unknown = [g for g in groups if g not in GROUPS]
    if unknown:
        raise ValueError(f"no key group {unknown[0]!r}; the groups are {', '.join(GROUPS)}")
    return tuple(key for key, spec in SCHEMA.items() if set(spec.groups) & set(groups))


def describe(key: str) -> str:
    """One line on ``key``: what it is, and the values it takes (``bandwidth.mid`` needs a unit)."""
    return SCHEMA[key].describe()


def _check_value(key: str, raw: Any, where: str) -> float | str | None:
    """Parse and range-check ``raw`` for ``key``; raise KvtierError naming both."""
    spec = SCHEMA[key]
    if raw is None:
        if spec.optional:
            return None
        raise KvtierError(f"{where}: key '{key}' is missing a value; allowed: {spec.allowed()}")
    if spec.kind in ("choice", "text"):
        if not isinstance(raw, str) or not raw.strip() or (spec.kind == "choice" and raw not in spec.choices):
            raise KvtierError(f"{where}: key '{key}' must be {spec.allowed()}, got {show(raw, quote=True)}")
        return raw.strip()
    if isinstance(raw, str) and raw.strip().lower() in ("null", "none", "~") and spec.optional:
        return None
    try:
        value = parse_quantity(raw, spec.kind)
    except KvtierError as exc:
        raise KvtierError(f"{where}: key '{key}': {exc}") from None
    shown = show(raw, quote=True)
    if not math.isfinite(value):
        raise KvtierError(f"{where}: key '{key}' must be finite, got {shown}; allowed: {spec.allowed()}")
    if spec.unit_example is not None and value != 0 and is_bare_number(raw):
        # a bare 64 could be B/s or GB/s: only zero means the same in every unit
        raise KvtierError(f"{where}: key '{key}' = {shown} needs a unit, for example {spec.unit_example}")
    if value not in spec.bounds:
        raise KvtierError(f"{where}: key '{key}' = {shown} is out of range; allowed: {spec.allowed()}")
    if spec.integer and not float(value).is_integer():
        raise KvtierError(f"{where}: key '{key}' = {shown} must be a whole number")
    return value


def make_assumption(
    key: str,
    raw: Any,
    *,
    basis: str,
    provenance: str,
    source: str,
    where: str,
) -> Assumption:
    """Build a validated :class:`Assumption` for ``key`` from a raw user value."""
    if key not in SCHEMA:
        raise KvtierError(f"{where}: unknown key {show(key, quote=True)}; known keys: {', '.join(sorted(SCHEMA))}")
    if provenance not in PROVENANCE_CLASSES:
        raise KvtierError(
            f"{where}: key '{key}' has provenance {show(provenance, quote=True)};"
            f" allowed: {', '.join(PROVENANCE_CLASSES)}"
        )
    value = _check_value(key, raw, where)
    text = "null" if raw is None else str(raw)
    kind = SCHEMA[key].kind  # None (only for an optional key) leaves the value to the model's config
    return Record(key, value, kind, text, provenance, basis, source, absent="from model config")


def _adopt(key: str, rec: Record) -> Assumption:
    """``rec`` as the value of ``key``: validated against :data:`SCHEMA` and named ``key``.

    Its basis says what it was (``h100-sxm peak_flops: dense bf16 ...``) before its own basis.
    """
    owner, _, field = rec.key.rpartition(".")
    what = f"{owner} {field}".strip() + (f": {rec.figure}" if rec.figure else "")
    basis = f"{what}; {rec.basis}" if rec.basis else what
    raw = None if rec.value is None else rec.text
    where = f"record {show(rec.key, quote=True)}"
    return make_assumption(key, raw, basis=basis, provenance=rec.provenance, source=rec.source, where=where)


class AssumptionSet(Mapping[str, Assumption]):
    """An immutable, validated mapping of key to :class:`Assumption`.

    Parameters
    ----------
    name : str
        Name of the set (``seed`` for the shipped one).
    records : mapping of str to Assumption
        Every key of :data:`SCHEMA` must be present.
    """

    def __init__(self, name: str, records: Mapping[str, Assumption]):
        missing = sorted(set(SCHEMA) - set(records))
        if missing:
            raise KvtierError(f"assumption set '{name}' is missing keys: {', '.join(missing)}")
        self.name = name
        self._records = {key: records[key] for key in SCHEMA}

    def __getitem__(self, key: str) -> Assumption:
        try:
            return self._records[key]
        except KeyError:
            raise KvtierError(f"unknown assumption key '{key}'") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._records)

    def __len__(self) -> int:
        return len(self._records)

    def value(self, key: str) -> Any:
        """The value of ``key`` in SI base units (or its string)."""
        return self[key].value

    def with_values(
        self, values: Mapping[str, Any], *, source: str, provenance: str = "assumed", basis: str = ""
    ) -> AssumptionSet:
        """Return a copy with ``values`` replacing the named keys.

        The replaced records take the given provenance and source; their basis says
        what they replaced unless ``basis`` is given.
        """
        records = dict(self._records)
        for key, raw in values.items():
            old = records.get(key)
            why = basis or (f"override of the {self.name} set's {old.display}" if old else "override")
            records[key] = make_assumption(key, raw, basis=why, provenance=provenance, source=source, where=source)
        return AssumptionSet(self.name, self._follow_engine(self._follow_model(records, set(values)), set(values)))

    def with_records(self, records: Mapping[str, Record], name: str | None = None) -> AssumptionSet:
        """Return a copy with whole records replaced.

        A record named for something else, such as a hardware preset's figure given for a
        key (``h100-sxm.peak_flops`` for ``peak_flops``), is validated like any value of
        that key and takes the key's name; its basis opens with the name it had and which
        figure it is.
        """
        merged = dict(self._records)
        for key, rec in records.items():
            merged[key] = rec if rec.key == key else _adopt(key, rec)
        return AssumptionSet(
            name or self.name, self._follow_engine(self._follow_model(merged, set(records)), set(records))
        )

    def _follow_model(self, records: dict[str, Assumption], changed: set[str]) -> dict[str, Assumption]:
        """A new model brings its own parameter count unless ``param_count`` is also given.

        The seed's nominal 70e9 belongs to Llama-3 70B; carrying it to another model
        would silently mix two models.
        """
        if "model" in changed and "param_count" not in changed and records["model"].value != self["model"].value:
            records["param_count"] = make_assumption(
                "param_count",
                None,
                basis="exact parameter count of the model's config (follows the model)",
                provenance="derived",
                source=f"config of {records['model'].value}",
                where="param_count",
            )
        return records

    def _follow_engine(self, records: dict[str, Assumption], changed: set[str]) -> dict[str, Assumption]:
        """A new ``engine`` brings its own block size unless ``block_tokens`` is also given.

        The preset's ``block_tokens`` record (published-spec, the engine's source) becomes the
        set's; going back to ``none`` restores the seed's block.  A ``block_tokens`` given
        beside the engine wins (a block of the engine's layout with another size).
        """
        if "engine" not in changed or "block_tokens" in changed or records["engine"].value == self["engine"].value:
            return records
        preset = engines.engine_named(str(records["engine"].value))
        if preset is None:
            records["block_tokens"] = seed()["block_tokens"]
            return records
        rec = preset.records["block_tokens"]
        records["block_tokens"] = make_assumption(
            "block_tokens",
            rec.text,
            basis=f"the {preset.name} engine's block (follows the engine): {rec.basis}",
            provenance=rec.provenance,
            source=rec.source,
            where="block_tokens",
        )
        return records

    def to_dict(self) -> dict[str, dict[str, Any]]:
        """Plain dictionary in the YAML file layout (text values, with provenance)."""
        return {
            key: {
                "value": rec.text if rec.value is not None else None,
                "provenance": rec.provenance,
                "basis": rec.basis,
                "source": rec.source,
            }
            for key, rec in self._records.items()
        }


RECORD_FIELDS = ("value", "unit", "basis", "provenance", "source")
"""The fields a record of an assumptions file may have."""


def _first_unknown(mapping: Mapping[Any, Any], allowed: tuple[str, ...]) -> str | None:
    """The first key of ``mapping`` (in file order) outside ``allowed``, shown for a message; None if none.

    File order, not sorted order: keys may be of mixed types (``1: x`` next to ``name: y``).
    """
    for key in mapping:
        if key not in allowed:
            return show(key, quote=True)
    return None


def _parse_records(data: Any, where: str, defaults_source: str) -> dict[str, Assumption]:
    if not isinstance(data, Mapping):
        raise KvtierError(f"{where}: expected a mapping with a top-level 'assumptions' key")
    unknown = _first_unknown(data, ("name", "description", "assumptions"))
    if unknown:
        raise KvtierError(f"{where}: unknown top-level key {unknown}; allowed: name, description, assumptions")
    body = data.get("assumptions")
    if not isinstance(body, Mapping) or not body:
        raise KvtierError(f"{where}: 'assumptions' must be a non-empty mapping of key to record")
    records = {}
    for key, rec in body.items():
        if key not in SCHEMA:
            raise KvtierError(f"{where}: unknown key {show(key, quote=True)}; known keys: {', '.join(sorted(SCHEMA))}")
        if not isinstance(rec, Mapping):
            rec = {"value": rec}
        unknown = _first_unknown(rec, RECORD_FIELDS)
        if unknown:
            raise KvtierError(f"{where}: key '{key}' has unknown field {unknown}; allowed: {', '.join(RECORD_FIELDS)}")
        if "value" not in rec:
            raise KvtierError(f"{where}: key '{key}' has no 'value'")
        raw = rec["value"]
        if rec.get("unit") not in (None, ""):
            raw = f"{raw} {rec['unit']}"
        for field in ("basis", "provenance", "source"):
            if field in rec and not isinstance(rec[field], str):
                raise KvtierError(f"{where}: key '{key}' field '{field}' must be a string")
        records[key] = make_assumption(
            key,
            raw,
            basis=rec.get("basis", ""),
            provenance=rec.get("provenance", "assumed"),
            source=rec.get("source", defaults_source),
            where=where,
        )
    return records


PATH_KEYS = ("model", "workload.trace")
"""Keys whose value may be a file path: a model's ``config.json`` (or its directory) and a trace."""


def _names(key: str) -> frozenset[str]:
    """The values of ``key`` that are names of something shipped, never paths."""
    return frozenset(MODEL_PRESETS if key == "model" else SHIPPED_TRACES)


def resolve_against(value: str, key: str, directory: Path) -> str:
    """``value`` of ``key`` read from a file in ``directory``: a relative path made relative to that directory.

    Shipped names (model presets, shipped traces) and absolute paths stay as they are.  A model
    value is a path when :func:`kvtier.inputs.models.config_path` would take it for one (``.json``, a
    ``/``) or when it names something in ``directory``; a trace value that is no shipped name is
    always a path.  The result is relative to the current directory when it lies below it (so
    that no absolute path reaches a published book), else absolute.
    """
    if value in _names(key) or Path(value).is_absolute():
        return value
    candidate = directory / value
    if key == "model" and not (Path(value).suffix == ".json" or "/" in value or candidate.exists()):
        return value  # an unknown preset name: load_model names it
    full = Path(os.path.abspath(candidate))
    cwd = Path.cwd()
    return str(full.relative_to(cwd)) if full.is_relative_to(cwd) else str(full)


def _resolve_paths(records: dict[str, Assumption], directory: Path, where: str) -> dict[str, Assumption]:
    """``records`` of a set file in ``directory`` with its path values resolved (:func:`resolve_against`)."""
    for key in PATH_KEYS:
        rec = records.get(key)
        if rec is None or not isinstance(rec.value, str):
            continue
        resolved = resolve_against(rec.value, key, directory)
        if resolved != rec.value:
            records[key] = make_assumption(
                key, resolved, basis=rec.basis, provenance=rec.provenance, source=rec.source, where=where
            )
    return records


def seed() -> AssumptionSet:
    """The shipped ``seed`` set: the source chapter's assumptions, stated and implied."""
    ref = resources.files("kvtier.data").joinpath("seed.yaml")
    with resources.as_file(ref) as path:
        data = load_yaml(path, "assumptions file")
    return AssumptionSet("seed", _parse_records(data, "seed.yaml", "source chapter"))


def load_assumptions(
    path: str | Path | None = None,
    sets: Mapping[str, Any] | None = None,
) -> AssumptionSet:
    """Load the seed set, layer a YAML file and ``--set`` overrides on it, validate.

    Parameters
    ----------
    path : str or Path, optional
        A YAML file with an ``assumptions`` mapping; its keys replace the seed's.
    sets : mapping, optional
        ``KEY -> VALUE`` overrides (from ``--set``), provenance ``assumed``.

    Returns
    -------
    AssumptionSet
    """
    result = seed()
    if path is not None:
        path = Path(path)
        data = load_yaml(path, "assumptions file")
        records = _resolve_paths(_parse_records(data, show(path), str(path)), path.parent, show(path))
        name = data.get("name") if isinstance(data.get("name"), str) else path.stem
        result = result.with_records(records, name=name)
    if sets:
        result = result.with_values(sets, source="--set")
    return result


def parse_set_options(options: list[str] | None) -> dict[str, str]:
    """Split ``KEY=VALUE`` strings from the command line; reject malformed ones."""
    out: dict[str, str] = {}
    for option in options or []:
        key, sep, value = option.partition("=")
        if not sep or not key.strip():
            raise KvtierError(f"--set {show(option, quote=True)}: expected KEY=VALUE, e.g. --set bandwidth.mid=100GB/s")
        key = key.strip()
        if key not in SCHEMA:
            raise KvtierError(f"--set: unknown key {show(key, quote=True)}; known keys: {', '.join(sorted(SCHEMA))}")
        out[key] = value.strip()
    return out


class RestrictedAssumptionSet(AssumptionSet):
    """An assumption set that refuses to read keys outside ``allowed``.

    A notebook declares the assumptions it depends on as its papermill parameters;
    the build re-executes it only when one of those changes.  Reading any other key
    would hide a dependency from that bookkeeping, so it raises instead.
    """

    def __init__(self, base: AssumptionSet, allowed: set[str], owner: str):
        super().__init__(base.name, {key: base[key] for key in SCHEMA})
        self.allowed = frozenset(allowed)
        self.owner = owner

    def __getitem__(self, key: str) -> Assumption:
        if key not in self.allowed:
            raise KvtierError(
                f"{self.owner} reads assumption '{key}' but does not declare it as a parameter"
                f" (add `{key.replace('.', '_')} = ...` to its parameters cell)"
            )
        return super().__getitem__(key)

    def __iter__(self) -> Iterator[str]:
        return (key for key in SCHEMA if key in self.allowed)

    def __len__(self) -> int:
        return len(self.allowed)

    def with_values(self, values: Mapping[str, Any], **kwargs: Any) -> AssumptionSet:
        """A copy with ``values`` replaced, still limited to the declared keys."""
        return RestrictedAssumptionSet(
            AssumptionSet(self.name, self._records).with_values(values, **kwargs), set(self.allowed), self.owner
        )


def check_consistency(assumptions: AssumptionSet) -> None:
    """Checks across keys that the book's labels and comparisons rely on.

    The brackets must be ordered (optimistic bandwidth >= mid >= pessimistic, and the
    same for MFU), the short context below the long one, the example block inside its
    sequence, every uncertainty range low <= high and holding the values it stands for
    (:data:`UNCERTAIN_POINTS`: every bandwidth and MFU bracket, the peak, the memory
    bandwidth and efficiency), and every price's range its value.  A quick ``compare`` needs none of
    this, so only the book build, and a page run on its own, call it.  A set limited to a
    page's keys (:class:`RestrictedAssumptionSet`) is checked on the checks whose keys it
    holds.

    Raises
    ------
    KvtierError
        Naming the keys that disagree.
    """
    a = assumptions
    readable = set(a)

    def ordered(keys: tuple[str, ...], rule: str) -> None:
        if not readable.issuperset(keys):
            return
        for hi, lo in zip(keys, keys[1:], strict=False):
            if a.value(hi) < a.value(lo):
                raise KvtierError(
                    f"keys '{hi}' ({a[hi].display}) and '{lo}' ({a[lo].display}) are out of order; {rule}"
                )

    def below(low: str, high: str, message: str) -> None:
        if readable.issuperset((low, high)) and a.value(low) >= a.value(high):
            raise KvtierError(message)

    def inside(point: str, end: str, side: str) -> None:
        if not readable.issuperset((point, end)):
            return
        if (a.value(point) > a.value(end)) if side == "above" else (a.value(point) < a.value(end)):
            raise KvtierError(
                f"key '{point}' ({a[point].display}) lies {side} '{end}' ({a[end].display}); an uncertainty"
                f" range must hold the values it stands for: widen '{end}' or change '{point}'"
            )

    ordered(tuple(f"bandwidth.{b}" for b in BANDWIDTH_LABELS), "bandwidths must run optimistic >= mid >= pessimistic")
    ordered(tuple(f"mfu.{m}" for m in MFU_LABELS), "MFUs must run optimistic >= typical >= conservative")
    below("context.short", "context.long", "key 'context.short' must be smaller than 'context.long'")
    below(
        "interior.position",
        "interior.context",
        "key 'interior.position' must lie inside the sequence: smaller than 'interior.context'",
    )
    for name in ("bandwidth", "mfu", "peak", "mem_bandwidth", "mem_efficiency"):
        ordered((f"uncertainty.{name}_high", f"uncertainty.{name}_low"), "a range needs low <= high")
    for name, points in UNCERTAIN_POINTS.items():  # brackets already ordered: the outermost two decide
        inside(points[0], f"uncertainty.{name}_high", "above")
        inside(points[-1], f"uncertainty.{name}_low", "below")
    for key in COST_RANGES:
        ordered((f"{key}_high", key, f"{key}_low"), "a price's range must hold its value: low <= value <= high")
    for key in COLLECTIVE_RANGES:
        ordered((f"{key}_high", key, f"{key}_low"), "a range must hold its value: low <= value <= high")
