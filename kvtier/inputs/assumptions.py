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
from importlib import resources
from pathlib import Path
from typing import Any

from kvtier.data import MODEL_PRESETS, SHIPPED_TRACES
from kvtier.errors import KvtierError, show
from kvtier.inputs import engines
from kvtier.inputs.keys import BANDWIDTH_LABELS, COLLECTIVE_RANGES, COST_RANGES, MFU_LABELS, SCHEMA, UNCERTAIN_POINTS
from kvtier.inputs.provenance import PROVENANCE_CLASSES, Record
from kvtier.inputs.readers import load_yaml
from kvtier.units import AUTO_DTYPE, is_bare_number, parse_quantity

Assumption = Record
"""An assumption is a :class:`~kvtier.inputs.provenance.Record` whose key is a key of :data:`SCHEMA`."""


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
        """A new model brings its own parameter count and weight dtype unless ``param_count``/``weight_dtype`` is given.

        The seed's nominal 70e9 and its bf16 weights belong to the chapter's Llama-3 70B; carrying
        them to another model would silently mix two models (DeepSeek-V3 publishes fp8 weights, half
        the bytes of bf16).  The weight dtype becomes ``auto``: the new model's published one.
        """
        if "model" not in changed or records["model"].value == self["model"].value:
            return records
        source = f"config of {records['model'].value}"
        if "param_count" not in changed:
            records["param_count"] = make_assumption(
                "param_count",
                None,
                basis="exact parameter count of the model's config (follows the model)",
                provenance="derived",
                source=source,
                where="param_count",
            )
        if "weight_dtype" not in changed:
            records["weight_dtype"] = make_assumption(
                "weight_dtype",
                AUTO_DTYPE,
                basis="the model's published weight dtype (follows the model)",
                provenance="derived",
                source=source,
                where="weight_dtype",
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


def parse_records(data: Any, where: str, defaults_source: str) -> dict[str, Assumption]:
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
    return AssumptionSet("seed", parse_records(data, "seed.yaml", "source chapter"))


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
    given: set[str] = set()
    if path is not None:
        path = Path(path)
        data = load_yaml(path, "assumptions file")
        records = _resolve_paths(parse_records(data, show(path), str(path)), path.parent, show(path))
        name = data.get("name") if isinstance(data.get("name"), str) else path.stem
        result = result.with_records(records, name=name)
        given |= set(records)
    if sets:
        result = result.with_values(sets, source="--set")
        given |= set(sets)
    if "workload.trace_format" in given and "workload.block_tokens" not in given:
        result = _format_block(result)
    return result


def _format_block(result: AssumptionSet) -> AssumptionSet:
    """``result`` with ``workload.block_tokens`` at its trace format's own block size (Qwen's traces name 16-token
    blocks, Mooncake's 512), as ``kvtier workload --format`` sets it: a format given without a block size."""
    from kvtier.inputs.traces.formats import TRACE_FORMATS

    fmt = str(result.value("workload.trace_format"))
    if fmt not in TRACE_FORMATS or TRACE_FORMATS[fmt].block_tokens == int(result.value("workload.block_tokens")):
        return result
    return result.with_values(
        {"workload.block_tokens": str(TRACE_FORMATS[fmt].block_tokens)}, source=f"workload.trace_format {fmt}"
    )


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
        if key in out and not same_value(key, out[key], value.strip()):  # the last one silently won
            raise KvtierError(f"--set {key}={show(out[key])} and --set {key}={show(value.strip())}: give one")
        out[key] = value.strip()
    return out


def value_of(key: str, raw: Any, where: str) -> float | str | None:
    """``raw`` parsed and range-checked as ``key``'s value; a :class:`~kvtier.errors.KvtierError` starts ``WHERE:``."""
    return _check_value(key, raw, where)


def same_value(key: str, a: Any, b: Any) -> bool:
    """Whether two raw values of ``key`` mean the same (``4`` and ``4.0``, ``64GB/s`` and ``64e9B/s``); as text
    when either is not a valid value (its own check names it later)."""
    if str(a).strip() == str(b).strip():
        return True
    try:
        x, y = value_of(key, a, ""), value_of(key, b, "")
    except KvtierError:
        return False
    if isinstance(x, float) and isinstance(y, float):  # 2us and 2000ns differ in the last bit of their floats
        return math.isclose(x, y, rel_tol=1e-12, abs_tol=0.0)
    return x == y


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
