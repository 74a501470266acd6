"""Named deployments (``kvtier/data/deployments.yaml``) and the records an accelerator preset brings to a set.

A named deployment is a model, a placement, an engine and an accelerator that serving teams run.
The landing page computes its decision for each, beside the build's own set: each deployment's
records are layered on the build's assumption set (:func:`assumption_set`), so that whatever it
does not name (links, tier latencies, memory prices, the trace) keeps the build's value.  The trace pages price
the trace for the deployment ``workload.deployment`` names the other way round (:func:`under`): the deployment
as the defaults of the build's set, whose own changes win.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from kvtier.errors import KvtierError, show
from kvtier.inputs import engines, hardware, kernels
from kvtier.inputs.assumptions import Assumption, AssumptionSet, make_assumption, parse_records, seed
from kvtier.inputs.keys import SCHEMA
from kvtier.inputs.provenance import PROVENANCE_CLASSES, Record
from kvtier.inputs.readers import load_yaml

FILE = "deployments.yaml"
"""The shipped file of named deployments, in ``kvtier/data``."""

_FIELDS = ("title", "accelerator", "per_server", "assumptions")


@dataclass(frozen=True)
class NamedDeployment:
    """One named deployment of :data:`FILE`.

    Attributes
    ----------
    name : str
        Its name in the file (``llama-3.1-70b-h100``).
    title : str
        How the book names it.
    accelerator : str
        The accelerator preset (``kvtier/data/hardware.yaml``) it runs on.
    per_server : Assumption
        Accelerators in one server (count), with its provenance.
    records : dict of str to Assumption
        Its assumption records: model, placement, engine, how regeneration is timed.
    """

    name: str
    title: str
    accelerator: str
    per_server: Assumption
    records: dict[str, Assumption]


def accelerator_records(name: str, *, regen_model: str, prices: bool = False, via: str = "") -> dict[str, Record]:
    """The records the accelerator preset ``name`` sets, by assumption key.

    Its dense peak (``peak_flops``) where it publishes one, its memory bandwidth
    (``regen.mem_bandwidth``), its kernel tables (``regen.system``) where aiconfigurator-core has
    them, and its memory (``parallel.hbm_capacity``).  With ``prices``, also what an hour of it
    costs (``cost.accelerator_hour``), the memory that hour pays for (``cost.hbm_capacity``) and its
    board power in a compute-bound pass (``energy.power_batch``), where the preset gives them.
    ``via`` names where the preset was asked for (``--accelerator``) in messages and sources.

    Raises
    ------
    KvtierError
        The engine model (``regen_model``) on a preset with no kernel tables; an unknown preset.
    """
    acc = hardware.accelerator(name)
    records: dict[str, Record] = {"regen.mem_bandwidth": acc.mem_bandwidth_record}
    if acc.peak_flop_per_s is not None:
        records["peak_flops"] = acc.peak_record
    system = kernels.ACCELERATOR_SYSTEMS.get(acc.name)
    if system is not None:
        records["regen.system"] = Record(
            "regen.system",
            system,
            "choice",
            system,
            "published-spec",
            f"the kernel tables of the accelerator preset {acc.name} (aiconfigurator-core files them as {system})",
            f"command line ({via} {acc.name})" if via else f"accelerator preset {acc.name}",
        )
    elif regen_model == "engine":
        raise KvtierError(
            f"{via or 'accelerator'} {acc.name}: no measured kernel tables for it (regen.model engine);"
            f" tables exist for {', '.join(kernels.ACCELERATOR_SYSTEMS)} (or set regen.system)"
        )
    if acc.memory_record is not None:
        records["parallel.hbm_capacity"] = acc.memory_record
    if prices:
        for key, rec in (
            ("cost.accelerator_hour", acc.hour_price_record),
            ("cost.hbm_capacity", acc.memory_record),
            ("energy.power_batch", acc.board_power_record),
        ):
            if rec is not None:
                records[key] = rec
    return records


def _per_server(where: str, raw: Any) -> Assumption:
    """The ``per_server`` record: a whole count of accelerators with its provenance."""
    body = raw if isinstance(raw, Mapping) else {"value": raw}
    value = body.get("value")
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 1024:
        raise KvtierError(f"{where} field 'per_server' must be a whole number of accelerators from 1 to 1024")
    provenance = str(body.get("provenance", "assumed"))
    if provenance not in PROVENANCE_CLASSES:
        raise KvtierError(f"{where} field 'per_server' has provenance {show(provenance, quote=True)}")
    kind = SCHEMA["parallel.tp"].kind  # a whole count of accelerators, as the placement's sizes are
    return Record(
        "per_server", value, kind, str(value), provenance, str(body.get("basis", "")), str(body.get("source", where))
    )


def _parse(where: str, name: str, body: Any) -> NamedDeployment:
    at = f"{where}: deployment {show(name, quote=True)}"
    if not isinstance(body, Mapping):
        raise KvtierError(f"{at} must be a mapping of {', '.join(_FIELDS)}")
    extra = [field for field in body if field not in _FIELDS]
    if extra:
        raise KvtierError(f"{at} has unknown field {show(extra[0], quote=True)}; allowed: {', '.join(_FIELDS)}")
    missing = [field for field in _FIELDS if field not in body]
    if missing:
        raise KvtierError(f"{at} is missing field '{missing[0]}'")
    try:
        hardware.accelerator(str(body["accelerator"]))  # an unknown preset is refused here, naming the known ones
    except KvtierError as exc:
        raise KvtierError(f"{at}: {exc}") from None
    records = parse_records({"assumptions": body["assumptions"]}, at, at)
    return NamedDeployment(
        name, str(body["title"]), str(body["accelerator"]), _per_server(at, body["per_server"]), records
    )


def load(path: str | Path | None = None) -> tuple[NamedDeployment, ...]:
    """The named deployments of ``path`` (the shipped :data:`FILE` by default, read once), in file order.

    Raises
    ------
    KvtierError
        A file that is not a mapping ``deployments`` of name to deployment, or a deployment with an unknown
        or missing field, an unknown accelerator, a bad ``per_server`` or a bad assumption record (one line
        naming the file, the deployment and the field).
    """
    return _shipped() if path is None else _read(Path(path), show(path))


def named(name: str) -> NamedDeployment:
    """The shipped named deployment ``name``.

    Raises
    ------
    KvtierError
        No shipped deployment has that name (the message lists those that do).
    """
    found = next((dep for dep in _shipped() if dep.name == name), None)
    if found is None:
        known = ", ".join(dep.name for dep in _shipped())
        raise KvtierError(f"no named deployment {show(name, quote=True)} in {FILE}; known: {known}")
    return found


@cache
def on_seed(name: str) -> AssumptionSet:
    """The shipped deployment ``name`` layered on the seed set (:func:`assumption_set`), read once."""
    return assumption_set(named(name), seed())


@cache
def keys_set(name: str) -> frozenset[str]:
    """The assumption keys the shipped deployment ``name`` sets when layered on a set (:func:`assumption_set`).

    Its own records, the accelerator's, the host link's per-copy latency and what follows them (a new model's
    parameter count and weight dtype, an engine's block): the keys whose value on the seed set it changes.
    """
    base, layered = seed(), on_seed(name)
    return frozenset(key for key in SCHEMA if layered[key] != base[key])


def own_model(own: AssumptionSet) -> bool:
    """Whether ``own`` names a model of its own (not the seed's): a named deployment as the trace pages' defaults
    (:func:`under`) is then left out, since its placement and accelerator were chosen for its own model."""
    return own["model"] != seed()["model"]


def under(name: str, own: AssumptionSet) -> AssumptionSet:
    """The shipped deployment ``name`` as a set's defaults: layered on the seed, then ``own``'s changes on top.

    Every record of ``own`` that differs from the seed's (what a build's file and ``--set`` changed) wins over the
    deployment's, key by key: a build that names its own model prices that model on the deployment's placement,
    engine and accelerator.  The deployment's records that such a change replaces are left out before layering,
    so that what follows them (the host link's per-copy latency from the engine, the kernel tables from
    ``regen.model``) follows the build's value.  A set limited to some keys (a notebook's) is read on those.
    """
    base = seed()
    changed = {key: own[key] for key in own if own[key] != base[key]}
    dep = named(name)
    kept = replace(dep, records={key: rec for key, rec in dep.records.items() if key not in changed})
    return assumption_set(kept, base).with_records(changed, name=name)


@cache
def _shipped() -> tuple[NamedDeployment, ...]:
    with resources.as_file(resources.files("kvtier.data").joinpath(FILE)) as path:
        return _read(path, FILE)


def _read(path: Path, where: str) -> tuple[NamedDeployment, ...]:
    data = load_yaml(path, "deployments file")
    section = data.get("deployments") if isinstance(data, Mapping) else None
    if not isinstance(section, Mapping) or not section:
        raise KvtierError(f"{where}: expected a non-empty mapping 'deployments' of name to deployment")
    return tuple(_parse(where, str(name), body) for name, body in section.items())


def assumption_set(dep: NamedDeployment, base: AssumptionSet) -> AssumptionSet:
    """``base`` with ``dep``'s accelerator and records layered on it, named for ``dep``.

    The accelerator brings its peak, memory bandwidth, kernel tables, memory, hour price and
    board power (:func:`accelerator_records`); the deployment's records follow; and the host link's
    per-copy latency (``tier_latency.host_link``) becomes the fixed cost of one copy issued the
    engine's way (``fetch.copy_cost.METHOD``), so that the tiers behind the host link pay what the
    engine's copies pay.
    """
    regen_model = (
        str(dep.records["regen.model"].value) if "regen.model" in dep.records else str(base.value("regen.model"))
    )
    accelerated = base.with_records(accelerator_records(dep.accelerator, regen_model=regen_model, prices=True))
    out = accelerated.with_records(dep.records, name=dep.name)
    engine = engines.engine_named(str(out.value("engine")))
    if engine is None:
        return out
    cost = out[engines.COPY_COST_KEYS[engine.copy_method]]
    latency = make_assumption(
        "tier_latency.host_link",
        cost.text,
        basis=f"one copy issued as {engine.name} issues it ({engine.copy_method}): {cost.key}; {cost.basis}",
        provenance="derived" if cost.provenance != "assumed" else "assumed",
        source=cost.source,
        where=f"deployment {dep.name}",
    )
    return out.with_records({"tier_latency.host_link": latency}, name=dep.name)
