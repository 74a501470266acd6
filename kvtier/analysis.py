"""A scenario's workload trace analysed: its reuse, LRU curve, two streamed passes and the LRU tiers it calls for.

:class:`~kvtier.scenario.Scenario` resolves an assumption set into numbers (a reuse's recompute cost,
:meth:`~kvtier.scenario.Scenario.regen_costs`; the tiers' prices and links); this module reads the trace
``workload.trace`` names and measures it with them.  Every result is computed once per key
(:func:`kvtier.store.memoized`): the trace file's version and exactly what shapes the result, so the
scenarios of a process, and the build's process and its notebooks' kernels, share one analysis.

- :func:`curve`: the exact LRU curve, streamed once (:func:`kvtier.inputs.traces.stream_lru`).
- :func:`stream`: the curve and a second pass's tallies (the requests' hit prefixes at each capacity asked
  for, the least-cost mixes of the models asked for, the distances' histogram, the curve of the trace cut
  into the time windows asked for), :class:`StreamedTrace`, each part stored under a key of what it
  depends on alone.  :func:`prime`, called by the build before the pages compute, streams the trace once
  for every part the book asks for (:func:`plan`), so the build's process and its kernels find theirs
  whichever page asks first, and each kernel reads only the parts its declared assumptions key.
- :func:`lru_traffic` and :func:`lru_plan`: an LRU tier sized for a share of the achievable hits, in each
  medium, priced (the cost, answer and serving pages', and :class:`kvtier.deployment.Deployment`'s).
- :func:`reuse`: the trace held in memory with each reference's stack distance (the policies' replays).
- :func:`decision_blocks`: the decision's LRU tier in blocks; :func:`fleet_of`: the trace spread over a fleet of
  instances behind a router, against one pooled tier (:func:`fleet_replays`: the decision's tier split, under
  every router); :func:`fleet_costs`: the two priced.
- :func:`admission_of`: a tier by what it admits (:data:`kvtier.formulas.cache.admission.ADMISSIONS`) and how long
  it keeps an idle block (the five-minute rule's residency of :data:`TTL_TIERS` as a time to live).
- :func:`priced`: the scenario the trace pages price the trace under (``workload.deployment``): a named
  deployment as the defaults of the build's set (under the seed, the landing page's named row), or the build's set.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

import numpy as np

from kvtier import store
from kvtier.errors import KvtierError
from kvtier.formulas import economics, lru_tier, pool, tiering
from kvtier.formulas.cache.report import TARGETS_PCT
from kvtier.inputs import deployments
from kvtier.inputs.assumptions import RestrictedAssumptionSet
from kvtier.lazy import deferred
from kvtier.scenario import Scenario

if TYPE_CHECKING:
    from kvtier.formulas.cache import admission, fleet, replay
    from kvtier.formulas.cache.curve import LruHistogram, Reuse
    from kvtier.formulas.cache.stream import ChunkReuse
    from kvtier.formulas.cache.trace import Trace
    from kvtier.inputs import traces
else:  # the trace reader and the replays: imported when a trace is analysed, not when this module is
    admission, fleet, replay, traces = map(
        deferred,
        (
            "kvtier.formulas.cache.admission",
            "kvtier.formulas.cache.fleet",
            "kvtier.formulas.cache.replay",
            "kvtier.inputs.traces",
        ),
    )

SHARES: tuple[float, ...] = (*(p / 100 for p in TARGETS_PCT), 1.0)
"""Shares of the trace's achievable hits the book sizes LRU tiers for (with ``decision.hit_target``): the
serving page's tiers, of which the cost page's (90 and 95 %) are two."""

MIX_MODELS: tuple[str, ...] = ("llama-3-70b", "llama-3-8b", "deepseek-v3")
"""The models the cost page sets the trace's least-cost mix out for, besides the set's own."""


WINDOWS_MIN: tuple[tuple[float, float], ...] = ((5.0, 0.0), (5.0, 5.0), (15.0, 0.0), (15.0, 5.0))
"""(window, warm-up) pairs in minutes the workload page replays the trace in (``kvtier workload --parts --window``)."""


TTL_TIERS: tuple[str, ...] = ("pcie5-x16", "nvme-gen4-x4")
"""The tiers whose five-minute-rule residency ``--admission`` replays as a time to live: host DRAM and NVMe."""


BUILD = "build"
"""The value of ``workload.deployment`` that prices the trace with the build's own set."""


LRU_TARGETS_PCT: tuple[int, ...] = (90, 95)
"""The hit targets (% of the achievable hit ratio) the cost page prices an LRU tier for in each medium; the landing
links its headline tier to the cost page's row of the decision's target where it is one of them."""


def priced(s: Scenario) -> Scenario:
    """The scenario the trace pages price the trace under: ``workload.deployment`` of ``s``.

    ``build``, or a set that names its own model: ``s`` itself (the deployment's placement and accelerator were
    chosen for its model), its placement checked to fit its accelerators as ``compare`` checks it. Otherwise the
    named deployment (``kvtier/data/deployments.yaml``): its model, placement, engine and accelerator as the
    defaults of ``s``'s set (:func:`kvtier.inputs.deployments.under`): whatever else ``s``'s set changed from the
    seed's wins, key by key, and every key the deployment does not set keeps ``s``'s value. Under the seed set it is
    the landing page's named row for that deployment, one computation (``tests/test_agreement.py``). A notebook's
    set, limited to the keys its page declares, stays limited to those and the keys the deployment sets. Computed
    once per scenario.

    Raises
    ------
    KvtierError
        The accelerators cannot hold the model the set names (the fit check), naming the key.
    """
    name = str(s.assumptions.value("workload.deployment"))
    if name == BUILD or deployments.own_model(s.assumptions):
        s.check_fit()  # the build's own placement, checked as compare, tiers and build check it
        return s
    found = _PRICED.get(s)
    if found is None:
        layered = deployments.under(name, s.assumptions)
        if isinstance(s.assumptions, RestrictedAssumptionSet):
            allowed = set(s.assumptions.allowed) | deployments.keys_set(name)
            layered = RestrictedAssumptionSet(layered, allowed, s.assumptions.owner)
        found = Scenario(layered)
        try:  # a build's own model that the deployment's accelerators cannot hold is refused here, saying why
            found.check_fit()
        except KvtierError as exc:
            raise KvtierError(
                f"workload.deployment {name}: {exc}; or --set workload.deployment=build to price the trace with"
                " this build's own placement and accelerator"
            ) from None
        _PRICED[s] = found
    return found


_PRICED: WeakKeyDictionary[Scenario, Scenario] = WeakKeyDictionary()


def mix_models(s: Scenario) -> tuple[str, ...]:
    """The set's model first, then the others of :data:`MIX_MODELS`."""
    own = str(s.assumptions.value("model"))
    return (own, *(m for m in MIX_MODELS if m != own))


def plan(s: Scenario) -> tuple[list[float], list[str], list[tuple[float, float]]]:
    """What the book's pages ask of the trace's two passes between them: the shares, the models and the windows.

    :data:`SHARES` with ``decision.hit_target`` (sorted), :func:`mix_models` (sorted) and :data:`WINDOWS_MIN`
    in seconds.
    """
    windows = [(w * 60, u * 60) for w, u in WINDOWS_MIN]
    return sorted({*SHARES, float(s.v("decision.hit_target"))}), sorted(mix_models(s)), windows


@dataclass(frozen=True)
class StreamedTrace:
    """The workload trace measured in two streamed passes (:func:`stream`).

    Attributes
    ----------
    curve : LruHistogram
        The exact LRU curve, what recomputing its hits costs and the trace's totals (first pass):
        the workload page's report.
    prefixes : HitPrefixes
        The requests by hit prefix at each capacity asked for (second pass).
    mixes : dict
        The perfect-knowledge mix by (model, regime, ladder) (second pass).
    distances : DistanceTally
        The raw stack distances' histogram, with the set's model's recompute seconds inside a
        batch at each (second pass): what a hierarchy is replayed from.
    served : HitPrefixes
        The requests by prompt and hit prefix up to their first miss, as serving engines match a
        prompt, at each capacity asked for (second pass; ``prefixes`` itself when hits are so
        counted): the serving page's time to first token.
    windows : dict
        The curve of the trace replayed window by window after a warm-up, by (window, warm-up) in
        seconds, for each pair asked for (second pass, :class:`~kvtier.formulas.cache.replay.WindowTally`).
    """

    curve: LruHistogram
    prefixes: replay.HitPrefixes
    mixes: dict[tuple[str, str, str], economics.Mix]
    distances: replay.DistanceTally
    served: replay.HitPrefixes
    windows: dict[tuple[float, float], replay.WindowTally]


def _trace(s: Scenario) -> tuple[str, int, str, str]:
    """The trace's name, tokens per block, format and how hits are counted (``workload.*``)."""
    value = s.assumptions.value
    return (
        str(value("workload.trace")),
        int(s.v("workload.block_tokens")),
        str(value("workload.trace_format")),
        str(value("workload.hit_count")),
    )


def reuse(s: Scenario) -> Reuse:
    """The trace ``workload.trace`` held in memory with the reuse of its blocks measured (cached per file version)."""
    return traces.analyse(*_trace(s))


def trace_key(s: Scenario) -> dict[str, Any] | None:
    """What reading ``workload.trace`` depends on: the file (its path, size, time and content hash), the
    tokens per block, the format and how hits are counted; None where no file can be read (the reader,
    run, names the problem)."""
    name, block_tokens, fmt, count = _trace(s)
    version = traces.version_key(name)
    if version is None:
        return None
    return {"trace": version, "block_tokens": block_tokens, "format": fmt, "count": count}


def curve(s: Scenario) -> LruHistogram:
    """The trace ``workload.trace`` streamed once: its exact LRU curve with what recomputing its hits costs.

    :func:`kvtier.inputs.traces.stream_lru` with :meth:`~kvtier.scenario.Scenario.regen_costs`, in memory
    bounded by the trace's distinct blocks: the workload page's report, and :func:`stream`'s first pass.
    Computed once per trace version and recompute costs.
    """
    name, block_tokens, fmt, count = _trace(s)
    rc = s.regen_costs()

    def compute() -> LruHistogram:
        return traces.stream_lru(name, block_tokens, trace_format=fmt, count=count, rc=rc)

    key = trace_key(s)
    return compute() if key is None else store.memoized("curve", {**key, "rc": rc}, compute)


def stream(
    s: Scenario,
    targets: Iterable[float] = (),
    models: Iterable[str] = (),
    windows_s: Iterable[tuple[float, float]] = (),
) -> StreamedTrace:
    """The trace measured in two streamed passes, for ``targets`` and ``decision.hit_target``, the mixes of
    ``models`` and the (window, warm-up) pairs ``windows_s`` in seconds.

    The second pass's results are stored part by part (:func:`kvtier.store.lookup`), each under a key of
    what it depends on alone: the requests' hit prefixes at one capacity (the trace and the capacity), the
    distances' histogram (the trace and the set's recompute costs), one model's mixes (its costs, block,
    the prices and the links), one window (the trace).  A call streams the trace only for the parts not
    stored yet, all of them in one pass (:func:`_second_pass`); :func:`prime` stores every part the book
    asks for at once, so that the pages, in the build's process and in its kernels, find theirs.
    """
    first = curve(s)
    caps = sorted({first.capacity_for(t) for t in {float(s.v("decision.hit_target")), *map(float, targets)}})
    windows = sorted({(float(w), float(u)) for w, u in windows_s})
    base = trace_key(s)  # None: no file to key on (the reader, run, names the problem)
    parts = _parts(s, base or {}, caps, sorted(set(models)), windows)
    found = {} if base is None else {part: store.lookup(*key) for part, key in parts.items()}
    missing = [part for part in parts if found.get(part, store.MISSING) is store.MISSING]
    if missing:
        computed = _second_pass(s, first, missing)
        for part in missing:
            found[part] = computed[part] if base is None else store.keep(*parts[part], computed[part])
    prefixes = replay.HitPrefixes.joined([found[("prefixes", c)] for c in caps])
    count = _trace(s)[3]
    served = prefixes if count == "prefix" else replay.HitPrefixes.joined([found[("served", c)] for c in caps])
    mixes = {
        (m, regime, ladder): mix
        for (kind, m), got in found.items()
        if kind == "mix"
        for (regime, ladder), mix in got.items()
    }
    return StreamedTrace(
        first,
        prefixes,
        mixes,
        found[("distances", None)],
        served,
        {w: found[("window", w)] for w in windows},
    )


def prime(s: Scenario) -> None:
    """Stream the trace once for everything the book's pages ask of it (:func:`plan`), storing each part.

    The build calls it before the pages compute their tables, for the build's set and the one the trace
    pages price (:func:`priced`); a trace that cannot be read is left to the pages, which name the problem.
    """
    if trace_key(s) is not None:
        for sc in dict.fromkeys((s, priced(s))):  # the build's set (the answer page) and the trace pages'
            stream(sc, *plan(sc))


def _parts(
    s: Scenario, base: dict[str, Any], caps: list[int], models: list[str], windows: list[tuple[float, float]]
) -> dict[tuple[str, Any], tuple[str, dict[str, Any]]]:
    """Each part of the second pass asked for, by ``(kind, what)``, with its store kind and key (``base``: the
    trace's, :func:`trace_key`)."""
    count = _trace(s)[3]
    out: dict[tuple[str, Any], tuple[str, dict[str, Any]]] = {}
    for c in caps:
        out[("prefixes", c)] = ("hit-prefixes", {**base, "capacity": c, "prefix": False})
        if count != "prefix":
            out[("served", c)] = ("hit-prefixes", {**base, "capacity": c, "prefix": True})
    out[("distances", None)] = ("distances", {**base, "rc": s.regen_costs()})
    for m in models:
        key = {"rc": s.regen_costs(m), "block": s.mix_block(m), "prices": s.tier_prices(), "links": s.tier_links}
        out[("mix", m)] = ("mixes", {**base, "model": m, **key})
    for w in windows:
        out[("window", w)] = ("window", {**base, "window_s": w[0], "warmup_s": w[1]})
    return out


def _second_pass(s: Scenario, first: LruHistogram, parts: list[tuple[str, Any]]) -> dict[tuple[str, Any], Any]:
    """The parts of the second pass asked for, tallied in one streamed pass over the trace.

    The first pass (:func:`curve`, exact, with the recompute costs) gave the capacities, the trace's
    distinct blocks and instants; this one replays the trace and feeds each part's observer
    (:mod:`kvtier.formulas.cache.replay`): the requests' hit prefixes at each capacity, as the stream counts
    hits and up to each request's first miss; the distances' histogram with the set's recompute seconds
    inside a batch; each model's mixes in both regimes and on both ladders; each window's curve.  The same
    figures as the in-memory path, for a trace of any length, in memory bounded by its distinct blocks.
    """
    name, block_tokens, fmt, count = _trace(s)
    observers: dict[tuple[str, Any], Any] = {}
    tallies: dict[str, dict[tuple[str, str], economics.MixTally]] = {}
    for kind, what in parts:
        if kind == "prefixes":
            observers[(kind, what)] = replay.HitPrefixes([what])
        elif kind == "served":
            observers[(kind, what)] = replay.HitPrefixes([what], prefix=True)
        elif kind == "distances":
            observers[(kind, what)] = replay.DistanceTally(s.regen_costs(), "batch", first.n_unique)
        elif kind == "window":
            observers[(kind, what)] = replay.WindowTally(first.first_s, what[0], what[1], count)
        else:
            prices, links, block = s.tier_prices(), s.tier_links, s.mix_block(what)
            mine = tallies[what] = {
                (regime, ladder): tiering.mix_tally(prices, links.pick(names), block, first.instants)
                for regime in tiering.REGIMES
                for ladder, names in tiering.LADDERS.items()
            }
            by_regime = {r: [t for (regime, _), t in mine.items() if regime == r] for r in tiering.REGIMES}
            observers[(kind, what)] = replay.MixObserver(s.regen_costs(what), prices.accelerator_usd_per_s, by_regime)
    feed: list[Callable[[ChunkReuse], None]] = list(observers.values())
    traces.stream_lru(name, block_tokens, trace_format=fmt, count=count, observers=feed)
    out: dict[tuple[str, Any], Any] = {}
    for part, observer in observers.items():
        if part[0] == "mix":
            out[part] = {k: t.mix(first.duration_s) for k, t in tallies[part[1]].items()}
        else:
            out[part] = observer
    return out


def lru_traffic(s: Scenario, target_share: float, regime: str = "batch") -> lru_tier.LruTraffic:
    """What an LRU tier sized for ``target_share`` of the achievable hits sees on the trace (totals).

    Its capacity is :meth:`kvtier.formulas.cache.curve.LruHistogram.capacity_for` (the workload page's), in
    blocks of ``workload.block_tokens`` tokens; the recomputation it avoids is
    :func:`kvtier.formulas.cache.regen.saving`'s in ``regime``, the workload page's figure.  From the trace's
    two streamed passes (:func:`stream`), bounded whatever the trace's length.
    """
    rc, streamed = s.regen_costs(), stream(s, [target_share])
    h = streamed.curve
    cap = h.capacity_for(target_share)
    blocks, tokens, requests = streamed.prefixes.at(cap)
    inputs, per_input = h.input_tokens[0].astype(float), h.input_tokens[1].astype(float)
    return lru_tier.LruTraffic(
        capacity_bytes=float(cap) * s.tier_bytes_per_token * int(s.v("workload.block_tokens")),
        hit_ratio=float(h.hit_ratio(cap)),
        hit_blocks=blocks,
        hit_tokens=tokens,
        # each missed reference is admitted as a whole block, as the tier holds it and the hierarchy writes it
        written_tokens=float(h.total["blocks"] - np.sum(blocks * requests)) * int(s.v("workload.block_tokens")),
        recompute_avoided_s=float(np.sum(rc.regen_s(tokens, regime) * requests)),
        prefill_s=float(np.sum(rc.regen_s(inputs, regime) * per_input)),
        duration_s=h.duration_s,
        requests=requests,
    )


def lru_plan(
    s: Scenario, target_share: float, regime: str = "batch", prices: tiering.Prices | None = None
) -> list[lru_tier.LruTier]:
    """An LRU tier for ``target_share`` of the trace's achievable hits in each medium of :data:`tiering.LRU_TIERS`.

    Host DRAM over PCIe, a CXL expander, NVMe: each with its capacity (= peak occupancy), holding, fetch
    and saving per second against recomputing the hits in ``regime``, its read and write traffic against
    the device (NVMe writes against ``nvme.write_bandwidth``, DRAM and CXL writes against the link's other
    direction) and, for NVMe, its wear against ``nvme.endurance_dwpd`` over ``nvme.endurance_period`` and the
    whole drives of ``nvme.drive_capacity`` it buys for its size, writes and wear (SI units; NaN for a trace of
    0 s).  ``prices`` replaces the set's
    (:meth:`~kvtier.scenario.Scenario.tier_prices`), to find the price at which a tier stops paying.
    """
    links = s.tier_links.pick(tiering.LRU_TIERS)
    write_bw = np.where(np.array(links.media) == "nvme", s.v("nvme.write_bandwidth"), links.bandwidth_bytes_per_s)
    return lru_tier.lru_tiers(
        s.tier_prices() if prices is None else prices,
        links,
        write_bw,
        lru_traffic(s, target_share, regime),
        regime,
        s.tier_bytes_per_token,
        s.fetch_transfers,
        s.v("nvme.endurance_dwpd"),
        s.v("nvme.endurance_period"),
        s.v("fetch.min_transfer_time"),
        s.link_efficiency,
        s.fetch_bytes / s.block_tokens,
        overhead_s=s.link_overhead_s,
        drive_bytes=s.v("nvme.drive_capacity"),
        block_tokens=s.block_tokens,
    )


def fleet_links(s: Scenario) -> tuple[fleet.Link, fleet.Link]:
    """The links a fleet's tiers are read over: each instance's own host DRAM over its host link at the
    illustrative bandwidth bracket (``tier_latency.host_link`` a transfer), and the pooled tier over each
    accelerator's RDMA NIC (``fleet.pool_bandwidth``, ``tier_latency.rdma`` a transfer)."""
    label = str(s.assumptions.value("illustrative.bandwidth"))
    node = fleet.Link(f"host link, {label} bracket", s.bandwidth(label), s.v("tier_latency.host_link"))
    pool = fleet.Link("RDMA to the pool", s.v("fleet.pool_bandwidth"), s.v("tier_latency.rdma"))
    return node, pool


def fleet_stream(
    s: Scenario,
    capacity_blocks: float,
    block_tokens: int,
    instances: int | None = None,
    routing: str | None = None,
    commit: str = "head-first",
) -> fleet.FleetStream:
    """A :class:`kvtier.formulas.cache.fleet.FleetStream` under ``s``, for a trace in blocks of ``block_tokens``:
    ``instances`` and ``routing`` where given, else ``fleet.instances`` and ``fleet.routing``; the router's
    thresholds, the decode time and the links (:func:`fleet_links`) from the set; regeneration timed at the
    illustrative MFU bracket."""
    value = s.assumptions.value
    router = fleet.Router(s.v("fleet.balance_abs"), s.v("fleet.balance_rel"), s.v("fleet.cache_threshold"))
    node, pool = fleet_links(s)
    return fleet.FleetStream(
        s.regen_costs(mfu_label=str(value("illustrative.mfu"))),
        int(s.v("fleet.instances")) if instances is None else instances,
        str(value("fleet.routing")) if routing is None else routing,
        capacity_blocks,
        node,
        pool,
        s.v("fleet.decode_time_per_token"),
        block_tokens,
        router,
        commit,
    )


def fleet_of(
    s: Scenario,
    trace: Trace,
    capacity_blocks: float,
    instances: int | None = None,
    routing: str | None = None,
    commit: str = "head-first",
) -> dict[str, Any]:
    """The fleet against one pooled tier on ``trace`` under ``s``: :func:`fleet_stream` fed it whole, its
    :meth:`~kvtier.formulas.cache.fleet.FleetStream.report`."""
    stream = fleet_stream(s, capacity_blocks, trace.block_tokens, instances, routing, commit)
    stream.feed(trace.blocks, trace.starts, trace.input_tokens, trace.output_tokens, trace.timestamps_s, dense=True)
    return stream.report()


def decision_blocks(s: Scenario) -> int:
    """The capacity the decision recommends (blocks): the LRU tier for ``decision.hit_target`` of the achievable hits.

    :meth:`kvtier.formulas.cache.curve.Reuse.capacity_for` on the build's trace, the landing page's tier
    (0 for a trace with nothing to cache).
    """
    return int(curve(s).capacity_for(s.v("decision.hit_target")))


def fleet_capacity_blocks(s: Scenario) -> float:
    """Each instance's tier (whole blocks): the decision's LRU tier split evenly over ``fleet.instances``."""
    return float(decision_blocks(s) // int(s.v("fleet.instances")))


_FLEET_CACHE: WeakKeyDictionary[Scenario, dict[str, dict[str, Any]]] = WeakKeyDictionary()


def fleet_replays(s: Scenario) -> dict[str, dict[str, Any]]:
    """Per routing of :data:`kvtier.formulas.cache.fleet.ROUTINGS`, :func:`fleet_of` of the build's trace at
    :func:`fleet_capacity_blocks` a tier (kept with ``s``): the workload page's fleet and the cost page's prices."""
    found = _FLEET_CACHE.get(s)
    if found is None:
        trace = reuse(s).trace
        cap = fleet_capacity_blocks(s)
        found = {routing: fleet_of(s, trace, cap, routing=routing) for routing in fleet.ROUTINGS}
        _FLEET_CACHE[s] = found
    return found


def fleet_costs(s: Scenario, rep: dict[str, Any], block_tokens: int) -> dict[str, pool.FleetTierCost]:
    """The fleet's tier on each node and pooled (:func:`kvtier.formulas.pool.fleet_tier_cost`) for a
    :func:`fleet_of` report ``rep`` of a trace in blocks of ``block_tokens``: the same bytes in all
    (``instances x capacity`` blocks, each ``stored_copies`` times the block's bytes), priced at the set's
    accelerator, DRAM and amortisation and its pool's servers and ports (``fleet.pool_*``)."""
    prices = s.tier_prices()
    pool_prices = pool.PoolPrices(
        s.v("fleet.pool_server"), s.v("fleet.pool_server_memory"), s.v("fleet.pool_port"), s.v("fleet.pool_bandwidth")
    )
    capacity = rep["pooled"]["capacity_blocks"] * s.tier_bytes_per_token * block_tokens
    per_s = 1.0 / rep["duration_s"] if rep["duration_s"] > 0 else math.nan  # a trace of 0 s has no rate
    out = {}
    for choice, part in (("node", rep["node"]), ("pooled", rep["pooled"])):
        out[choice] = pool.fleet_tier_cost(
            choice,
            capacity,
            part["read_bytes"] * per_s,
            part["avoided_batch_s"] * per_s,
            part["fetch_s"] * per_s,
            prices,
            pool_prices,
        )
    return out


def admission_of(s: Scenario, tr: Trace, capacity_blocks: float) -> dict[str, Any]:
    """:func:`admission_chunks` of ``tr`` fed whole: the workload page's table."""
    chunk = (tr.blocks, tr.starts, tr.input_tokens, tr.output_tokens, tr.timestamps_s)
    return admission_chunks(s, [chunk], tr.block_tokens, capacity_blocks)


def admission_chunks(
    s: Scenario,
    chunks: Iterable[tuple[np.ndarray, ...]],
    block_tokens: int,
    capacity_blocks: float,
) -> dict[str, Any]:
    """A tier of ``capacity_blocks`` replayed with each admission filter and with each :data:`TTL_TIERS` tier's
    five-minute-rule residency as its time to live, in one pass over ``chunks`` of whole requests (``(block ids,
    starts, prompt tokens, output tokens, arrivals in s)``, as :class:`kvtier.inputs.traces.RequestChunks` yields
    them), every run a compiled :func:`kvtier.formulas.cache.admission.admission_state` fed each chunk.

    Per row: prompt tokens hit, blocks written, full NVMe drive writes per day (the tier on whole drives of
    ``nvme.drive_capacity``), and against admitting every miss the points of hit ratio given up per drive write
    per day saved.  The residency is :func:`kvtier.formulas.tiering.interval_grid`'s keep interval (USD) of the
    trace's block in a batch.
    """
    block_bytes = s.tier_bytes_per_token * block_tokens  # as the tier stores and writes it
    drive = s.v("nvme.drive_capacity")
    drives_bytes = math.ceil(capacity_blocks * block_bytes / drive) * drive
    grid = tiering.interval_grid(s.tier_prices(), s.tier_links, s.cost_blocks)
    tokens = block_tokens if (block_tokens, "batch") in grid else max(t for t, _ in grid)
    iv = grid[(tokens, "batch")]
    runs = [(name, name, math.inf) for name in admission.ADMISSIONS]
    runs += [(f"ttl {tier}", "always", float(iv.at(tier)["keep_usd_s"])) for tier in TTL_TIERS]
    from kvtier.formulas.cache.ids import DenseIds  # with the replays: when a trace is analysed

    states = [admission.admission_state(capacity_blocks, admit, ttl) for _, admit, ttl in runs]
    hit_tokens = [0.0] * len(runs)
    numbers = DenseIds()  # blocks numbered in order of first reference, chunk by chunk
    prompts = 0.0
    first_s = last_s = math.nan
    for ids, starts, inputs, _outputs, stamps in chunks:
        if not np.asarray(inputs).size:
            continue
        dense = numbers.map(np.asarray(ids, dtype=np.int64)).astype(np.int32)
        prompt = np.asarray(inputs, dtype=float)
        for k, state in enumerate(states):
            hit_tokens[k] += float(np.minimum(state.feed(dense, starts, stamps) * float(block_tokens), prompt).sum())
        prompts += float(prompt.sum())
        first_s = float(stamps[0]) if math.isnan(first_s) else first_s
        last_s = float(stamps[-1])
    duration_s = 0.0 if math.isnan(first_s) else last_s - first_s
    rows = []
    for (label, _, ttl), state, hit in zip(runs, states, hit_tokens, strict=True):
        rows.append(
            {
                "filter": label,
                "ttl_s": ttl,
                "hit_ratio_tokens": hit / prompts if prompts else math.nan,
                "writes": state.writes,
                "expired": state.expired,
                "drive_writes_per_day": admission.drive_writes_per_day(
                    state.writes * block_bytes, duration_s, drives_bytes
                ),
            }
        )
    base = rows[0]
    for row in rows[1:]:
        saved = base["drive_writes_per_day"] - row["drive_writes_per_day"]
        lost = (base["hit_ratio_tokens"] - row["hit_ratio_tokens"]) * 100
        row["points_lost_per_dwpd_saved"] = lost / saved if saved > 0 else math.nan
    base["points_lost_per_dwpd_saved"] = math.nan
    return {
        "capacity_blocks": capacity_blocks,
        "drives_bytes": drives_bytes,
        "block_tokens_priced": tokens,
        "rows": rows,
    }
