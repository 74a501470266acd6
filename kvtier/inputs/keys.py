"""The keys of an assumption set: one record per key (:class:`KeySpec`: its kind, range, choices, help and
groups) in :data:`SCHEMA`, the groups pages and models read whole (:func:`keys_in`), and the labels and
link classes the keys are named by. :mod:`kvtier.inputs.assumptions` reads and checks sets against them.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvtier.data import DEPLOYMENT_PRESETS, ENGINE_PRESETS, KERNEL_ENGINES, KERNEL_SYSTEMS
from kvtier.errors import KvtierError, show
from kvtier.formulas.cache.fleet import ROUTINGS
from kvtier.inputs import engines
from kvtier.inputs.traces.formats import TRACE_FORMATS
from kvtier.units import AUTO_DTYPE, DTYPE_BYTES, KINDS, WEIGHT_DTYPE_BYTES, Bounds


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
        "choice",
        "element type the weights are stored in (auto: the model's published one, from its config's"
        " quantization_config, else its torch_dtype, else bf16; a new model brings auto)",
        choices=(AUTO_DTYPE, *WEIGHT_DTYPE_BYTES),
        groups=("point",),
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
    # ---- how each copy of a fetch is issued (kvtier.inputs.engines.COPY_METHODS) and its fixed cost ----------
    "fetch.copy_method": KeySpec(
        "choice",
        "how each copy of a fetch is issued, whose per-copy cost then replaces fetch_latency: engine (the engine"
        " preset's method; none under engine none), none (fetch_latency per copy), lone-dma, batched-dma, kernel",
        choices=("engine", "none", *engines.COPY_METHODS),
        groups=("transfer",),
    ),
    "fetch.copy_cost.lone_dma": KeySpec(
        "time",
        "fixed cost of one copy issued as a lone cudaMemcpyAsync, synchronised before the next",
        groups=("transfer",),
    ),
    "fetch.copy_cost.batched_dma": KeySpec(
        "time", "fixed cost of one copy among copies issued back to back on one stream", groups=("transfer",)
    ),
    "fetch.copy_cost.kernel": KeySpec(
        "time", "fixed cost of one chunk moved by a gather/scatter copy kernel", groups=("transfer",)
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
        "regeneration time model: compute only (mfu), bounded by memory reads too (roofline), or an engine's"
        " measured kernels (engine)",
        choices=("mfu", "roofline", "engine"),
        groups=("point",),
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
    "regen.system": KeySpec(
        "choice",
        "the accelerator system whose measured kernel tables time regeneration (engine model)",
        choices=KERNEL_SYSTEMS,
        groups=("kernels",),
    ),
    "regen.engine": KeySpec(
        "choice",
        "the serving engine whose kernels time regeneration (engine model; auto: the engine key's)",
        choices=("auto", *KERNEL_ENGINES),
        groups=("kernels",),
    ),
    "regen.engine_version": KeySpec(
        "text", "version of that engine's kernel tables (engine model; newest: the newest shipped)", groups=("kernels",)
    ),
    "regen.step_tokens": KeySpec(
        "tokens",
        "tokens of the batched forward step a block shares inside a batch (engine model)",
        low="1",
        integer=True,
        groups=("kernels",),
    ),
    "regen.beyond_grid": KeySpec(
        "choice",
        "a pass beyond the kernel tables' measured grid: refused, or the package's extrapolation (engine model)",
        choices=("refuse", "extrapolate"),
        groups=("kernels",),
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
    "workload.deployment": KeySpec(
        "choice",
        "the named deployment the trace pages price (model, placement, engine, accelerator), or this build's own set",
        choices=("build", *DEPLOYMENT_PRESETS),
    ),
    "workload.sample_rate": KeySpec(
        "fraction",
        "share of the trace's blocks the LRU curve is measured on (spatial sampling, SHARDS); 1 is exact",
        low="1e-6",
        high="1",
    ),
    "fleet.instances": KeySpec(
        "count",
        "serving instances the trace is spread over, each with its own tier",
        low="1",
        high="4096",
        integer=True,
        groups=("fleet",),
    ),
    "fleet.routing": KeySpec(
        "choice", "how the router picks a request's instance", choices=ROUTINGS, groups=("fleet",)
    ),
    "fleet.balance_abs": KeySpec(
        "count",
        "requests in flight by which the busiest instance must lead the idlest before prefix routing"
        " balances load instead",
        groups=("fleet",),
    ),
    "fleet.balance_rel": KeySpec(
        "count",
        "times as many requests in flight as the idlest instance's the busiest must also hold for that",
        low="1",
        groups=("fleet",),
    ),
    "fleet.cache_threshold": KeySpec(
        "fraction",
        "share of a prompt's blocks the best instance must hold for prefix routing to follow the cache",
        groups=("fleet",),
    ),
    "fleet.decode_time_per_token": KeySpec(
        "time",
        "time per output token, which keeps a request in flight on its instance after its prefill",
        groups=("fleet",),
    ),
    "fleet.pool_server": KeySpec(
        "price", "one server of a pooled tier without its DRAM: chassis, CPUs, power supplies", groups=("fleet",)
    ),
    "fleet.pool_server_memory": KeySpec(
        "bytes", "DRAM one server of a pooled tier holds", low="1 GB", groups=("fleet",)
    ),
    "fleet.pool_port": KeySpec(
        "price",
        "one network port of a pooled tier: its NIC, its share of a switch and the optics at both ends",
        groups=("fleet",),
    ),
    "fleet.pool_bandwidth": KeySpec(
        "bandwidth",
        "rate at which one accelerator reads a pooled tier over its own RDMA NIC, one direction",
        groups=("fleet",),
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
    "nvme.drive_capacity": KeySpec(
        "bytes",
        "capacity of one NVMe drive of the tier: the unit an NVMe tier buys for its size, write rate and wear",
        groups=("price",),
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
    "parallel.kv_storage": KeySpec(
        "choice",
        "how the tensor-parallel group writes a block to a tier: engine (the engine preset's; once under engine"
        " none), per-rank (each rank its own copy: an MLA latent tp times), mla-once (a latent once, heads per"
        " rank), once",
        choices=("engine", *engines.KV_STORAGE),
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
    "fleet": "a fleet of instances behind a router: their count, the routing policy, the pooled tier's link",
    "kernels": "the engine model's measured kernel tables: the system, the engine and its version, the batched step",
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
