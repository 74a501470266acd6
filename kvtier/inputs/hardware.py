"""Hardware presets: accelerators and links, every value with its provenance.

The presets live in ``kvtier/data/hardware.yaml``.  Each value there is a record
(value with unit, provenance class, which figure it is, basis, source), read here
into a :class:`~kvtier.inputs.provenance.Record` named ``PRESET.FIELD``, in SI base units.
An :class:`Accelerator` holds a dense peak compute rate (FLOP/s) and a device-memory
bandwidth (B/s); a :class:`Link` holds the per-direction bandwidth used in
calculations (net of encoding where known, else the raw line rate; B/s).  The shipped
presets carry no per-transfer latency: the report reads it from the assumption keys
``tier_latency.*``, one per link class (:func:`kvtier.inputs.keys.tier_latency_key`,
through :attr:`kvtier.scenario.Scenario.tier_links`); a user's preset file may still give one,
and :attr:`Link.latency_s` is 0 where none is given.

A missing figure is stored as ``None`` and never silently replaced: DGX Spark
publishes no dense bf16 peak, so asking it for one raises
:class:`~kvtier.errors.KvtierError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from kvtier.errors import KvtierError, show
from kvtier.inputs.provenance import PROVENANCE_CLASSES, Record
from kvtier.inputs.readers import load_yaml
from kvtier.units import LIMITS, parse_quantity

RAW_OR_NET = ("raw", "net")
"""How a link bandwidth was counted: raw signalling rate, or net of encoding/framing."""

NEEDS_BASIS = ("assumed", "implied", "derived")
"""Provenance classes whose records must say, in words, why the value is what it is."""

_RECORD_FIELDS = ("value", "provenance", "figure", "basis", "source")
_ACCELERATOR_FIELDS = ("title", "peak_flops", "mem_bandwidth", "memory", "hour_price", "board_power")
_ACCELERATOR_REQUIRED = ("title", "peak_flops", "mem_bandwidth")
_LINK_FIELDS = ("title", "bandwidth", "raw_bandwidth", "latency")
_DEFAULT_FILE = "hardware.yaml"


@dataclass(frozen=True)
class Accelerator:
    """An accelerator preset: dense peak compute and device-memory bandwidth.

    Attributes
    ----------
    name : str
        Preset name, e.g. ``"h100-sxm"``.
    title : str
        Full name for readers.
    peak_flop_per_s : float or None
        Dense bf16 peak (FLOP/s); None when none is published (see :meth:`require_peak`).
    mem_bandwidth_bytes_per_s : float
        Device-memory (HBM or LPDDR) aggregate peak bandwidth (B/s, decimal).
    peak_record, mem_bandwidth_record : Record
        The two values with their provenance (``NAME.peak_flops``, ``NAME.mem_bandwidth``).
    memory_record : Record or None
        Its device memory (``NAME.memory``, B) with its provenance; None where the preset gives none.
    hour_price_record : Record or None
        What one hour of it costs, all in (``NAME.hour_price``, USD/s); None where the preset gives none.
    board_power_record : Record or None
        Its board power limit (``NAME.board_power``, W), the draw of a compute-bound pass; None where none is given.
    """

    name: str
    title: str
    peak_flop_per_s: float | None
    mem_bandwidth_bytes_per_s: float
    peak_record: Record
    mem_bandwidth_record: Record
    memory_record: Record | None = None
    hour_price_record: Record | None = None
    board_power_record: Record | None = None

    @property
    def memory_bytes(self) -> float | None:
        """Device memory per accelerator (B); None where the preset gives none."""
        return None if self.memory_record is None else self.memory_record.value

    def require_peak(self) -> float:
        """The preset's dense peak (FLOP/s).

        Raises
        ------
        KvtierError
            If it has none (DGX Spark publishes no dense bf16 peak).
        """
        if self.peak_flop_per_s is None:
            raise KvtierError(
                f"accelerator '{self.name}' has no peak compute rate ({self.peak_record.figure}); "
                "a peak is required: pass --peak-flops or set the key peak_flops"
            )
        return self.peak_flop_per_s


@dataclass(frozen=True)
class Link:
    """A link a KV block can be fetched over, one direction.

    Attributes
    ----------
    name : str
        Preset name, e.g. ``"cxl2-x16"``.
    title : str
        Full name for readers.
    bandwidth_bytes_per_s : float
        The bandwidth used in calculations, one direction (B/s, decimal): net of line
        encoding/framing where known, else the raw rate; :attr:`raw_or_net` says which.
    raw_or_net : str
        ``"raw"`` or ``"net"``.
    raw_bandwidth_bytes_per_s : float or None
        Raw signalling rate, one direction (B/s); None if not given.
    latency_s : float
        Fixed per-transfer latency of a preset file that gives one (s); 0 for the shipped presets, whose
        latency is the assumption key ``tier_latency.CLASS`` (:attr:`kvtier.scenario.Scenario.tier_links`).
    bandwidth_record, raw_bandwidth_record, latency_record : Record or None
        The values with their provenance (``raw_bandwidth_record`` None if not given).
    """

    name: str
    title: str
    bandwidth_bytes_per_s: float
    raw_or_net: str
    raw_bandwidth_bytes_per_s: float | None
    latency_s: float
    bandwidth_record: Record
    raw_bandwidth_record: Record | None
    latency_record: Record


# ---------------------------------------------------------------------------
# Reading the preset file
# ---------------------------------------------------------------------------


def _text(raw: Any) -> str:
    return raw.strip() if isinstance(raw, str) else ""


def _record(
    where: str, what: str, owner: str, field: str, raw: Any, kind: str, *, nullable: bool = False, link: bool = False
) -> Record:
    """Validate one value record of the preset file into a :class:`~kvtier.inputs.provenance.Record`."""
    at = f"{where}: {what} {show(owner, quote=True)} field '{field}'"
    if not isinstance(raw, Mapping):
        raise KvtierError(f"{at} must be a mapping with value, provenance, figure and source")
    allowed = (*_RECORD_FIELDS, "raw_or_net") if link else _RECORD_FIELDS
    extra = [entry for entry in raw if entry not in allowed]
    if extra:
        raise KvtierError(f"{at} has unknown entry {show(extra[0], quote=True)}; allowed: {', '.join(allowed)}")
    if "value" not in raw:
        raise KvtierError(f"{at} has no 'value'")
    provenance = _text(raw.get("provenance"))
    if raw["value"] is None and nullable:
        # a figure nobody publishes has no provenance: no class would be true of it
        if raw.get("provenance") is not None:
            raise KvtierError(f"{at} has no value, so it takes no provenance class; remove its 'provenance'")
    elif provenance not in PROVENANCE_CLASSES:
        shown = show(raw.get("provenance"), quote=True)
        raise KvtierError(f"{at} has provenance {shown}; allowed: {', '.join(PROVENANCE_CLASSES)}")
    for entry in ("figure", "source"):
        if not _text(raw.get(entry)):
            raise KvtierError(f"{at} needs a non-empty '{entry}'")
    basis = _text(raw.get("basis"))
    if provenance in NEEDS_BASIS and not basis:
        raise KvtierError(f"{at} is {provenance} and needs a 'basis' saying why")
    raw_or_net = ""
    if link:
        raw_or_net = _text(raw.get("raw_or_net"))
        if raw_or_net not in RAW_OR_NET:
            shown = show(raw.get("raw_or_net"), quote=True)
            raise KvtierError(f"{at} needs raw_or_net: one of {', '.join(RAW_OR_NET)}, got {shown}")
    value: float | None
    if raw["value"] is None:
        if not nullable:
            raise KvtierError(f"{at} is missing a value")
        value, text = None, "null"
    else:
        text = str(raw["value"]).strip()
        try:
            value = parse_quantity(raw["value"], kind)
        except KvtierError as exc:
            raise KvtierError(f"{at}: {exc}") from None
        if value not in LIMITS[kind]:  # NaN and inf are never inside
            raise KvtierError(f"{at} = {show(text, quote=True)} is out of range; allowed: {LIMITS[kind]}")
    return Record(
        f"{owner}.{field}",
        value,
        kind,
        text,
        provenance=provenance,
        basis=basis,
        source=_text(raw["source"]),
        figure=_text(raw["figure"]),
        raw_or_net=raw_or_net,
        absent="not published",
    )


def _entry(
    where: str, what: str, name: Any, body: Any, fields: tuple[str, ...], required: tuple[str, ...]
) -> Mapping[str, Any]:
    at = f"{where}: {what} {show(name, quote=True)}"
    if not isinstance(body, Mapping):
        raise KvtierError(f"{at} must be a mapping of {', '.join(fields)}")
    extra = [field for field in body if field not in fields]
    if extra:
        raise KvtierError(f"{at} has unknown field {show(extra[0], quote=True)}; allowed: {', '.join(fields)}")
    for field in required:
        if field not in body:
            raise KvtierError(f"{at} is missing field '{field}'")
    if not _text(body["title"]):
        raise KvtierError(f"{at} field 'title' must be a non-empty string")
    return body


def _parse_accelerator(where: str, name: str, body: Any) -> Accelerator:
    body = _entry(where, "accelerator", name, body, _ACCELERATOR_FIELDS, _ACCELERATOR_REQUIRED)
    peak = _record(where, "accelerator", name, "peak_flops", body["peak_flops"], "flop_rate", nullable=True)
    mem = _record(where, "accelerator", name, "mem_bandwidth", body["mem_bandwidth"], "bandwidth")
    optional = {
        field: _record(where, "accelerator", name, field, body[field], kind) if field in body else None
        for field, kind in (("memory", "bytes"), ("hour_price", "price_rate"), ("board_power", "power"))
    }
    return Accelerator(
        name,
        _text(body["title"]),
        peak.value,
        float(mem.value or 0.0),
        peak,
        mem,
        optional["memory"],
        optional["hour_price"],
        optional["board_power"],
    )


def _parse_link(where: str, name: str, body: Any) -> Link:
    body = _entry(where, "link", name, body, _LINK_FIELDS, ("title", "bandwidth"))
    bw = _record(where, "link", name, "bandwidth", body["bandwidth"], "bandwidth", link=True)
    raw_rec = None
    if body.get("raw_bandwidth") is not None:
        raw_rec = replace(
            _record(where, "link", name, "raw_bandwidth", body["raw_bandwidth"], "bandwidth"), raw_or_net="raw"
        )
    if "latency" in body:
        latency = _record(where, "link", name, "latency", body["latency"], "time")
    else:
        latency = Record(
            f"{name}.latency",
            0.0,
            "time",
            "0 s",
            provenance="assumed",
            basis="none given in the preset",
            source=where,
            figure="per-transfer latency",
        )
    bandwidth = float(bw.value or 0.0)
    raw_value = raw_rec.value if raw_rec is not None else (bandwidth if bw.raw_or_net == "raw" else None)
    if raw_rec is not None and raw_value is not None and raw_value < bandwidth:
        raise KvtierError(
            f"{where}: link {show(name, quote=True)} bandwidth {show(bw.text)} exceeds its raw_bandwidth"
            f" {show(raw_rec.text)}"
        )
    latency_s = float(latency.value or 0.0)
    return Link(name, _text(body["title"]), bandwidth, bw.raw_or_net, raw_value, latency_s, bw, raw_rec, latency)


def _read_file(path: str | Path | None) -> tuple[str, Any]:
    if path is None:
        ref = resources.files("kvtier.data").joinpath(_DEFAULT_FILE)
        with resources.as_file(ref) as shipped:
            where, data = _DEFAULT_FILE, load_yaml(shipped, "hardware file")
    else:
        where, data = show(path), load_yaml(path, "hardware file")
    if not isinstance(data, Mapping):
        raise KvtierError(f"{where}: expected a mapping with 'accelerators' and/or 'links'")
    extra = [key for key in data if key not in ("accelerators", "links")]
    if extra:
        raise KvtierError(f"{where}: unknown top-level key {show(extra[0], quote=True)}; allowed: accelerators, links")
    return where, data


def _section(where: str, data: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    section = data.get(key)
    if not isinstance(section, Mapping) or not section:
        raise KvtierError(f"{where}: '{key}' must be a non-empty mapping of preset name to preset")
    return section


def _presets(key: str, path: str | None) -> tuple[tuple[str, Any], ...]:
    """The presets of section ``key`` ("accelerators" or "links") of a hardware file, in file order.

    The shipped file is read once per process; a user's file every time (it may change).
    """
    return _shipped_presets(key) if path is None else _read_presets(key, path)


@lru_cache(maxsize=2)
def _shipped_presets(key: str) -> tuple[tuple[str, Any], ...]:
    return _read_presets(key, None)


def _read_presets(key: str, path: str | None) -> tuple[tuple[str, Any], ...]:
    parse = {"accelerators": _parse_accelerator, "links": _parse_link}[key]
    where, data = _read_file(path)
    return tuple((str(n), parse(where, str(n), b)) for n, b in _section(where, data, key).items())


def _pick(presets: Mapping[str, Any], name: str, kind: str) -> Any:
    try:
        return presets[name]
    except KeyError:
        raise KvtierError(f"unknown {kind} {show(name, quote=True)}; known: {', '.join(presets)}") from None


def load_accelerators(path: str | Path | None = None) -> dict[str, Accelerator]:
    """Accelerator presets, name to :class:`Accelerator`, in file order.

    Parameters
    ----------
    path : str or Path, optional
        A YAML file laid out like ``kvtier/data/hardware.yaml``; the shipped presets
        by default.

    Raises
    ------
    KvtierError
        Missing or malformed file, or a record with a bad value, unit or provenance
        (the message names the file, preset and field).
    """
    return dict(_presets("accelerators", None if path is None else str(path)))


def load_links(path: str | Path | None = None) -> dict[str, Link]:
    """Link presets, name to :class:`Link`, in file order.

    Parameters
    ----------
    path : str or Path, optional
        A YAML file laid out like ``kvtier/data/hardware.yaml``; the shipped presets
        by default.

    Raises
    ------
    KvtierError
        As :func:`load_accelerators`.
    """
    return dict(_presets("links", None if path is None else str(path)))


def accelerator(name: str, path: str | Path | None = None) -> Accelerator:
    """The accelerator preset ``name``; KvtierError naming the known ones if unknown."""
    return _pick(load_accelerators(path), name, "accelerator")


def link(name: str, path: str | Path | None = None) -> Link:
    """The link preset ``name``; KvtierError naming the known ones if unknown."""
    return _pick(load_links(path), name, "link")
