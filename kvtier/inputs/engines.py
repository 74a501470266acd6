"""Serving-engine layout presets: how vLLM, SGLang, TensorRT-LLM, LMCache and Mooncake lay a KV block out and move it.

The presets live in ``kvtier/data/engines.yaml``, one per name of
:data:`kvtier.data.ENGINE_PRESETS`.  Each names the engine ``version`` range it describes and
the ``date`` its sources were read, and gives five values, each a
:class:`~kvtier.inputs.provenance.Record` (named ``ENGINE.FIELD``) with its provenance, basis
and source (the engine's repository, file, version or commit, and date):

- ``block_tokens``: tokens in the block, page or chunk the engine stores in a tier and fetches;
- ``transfers``: how one block's fetch is split into copies, one of :data:`TRANSFER_MODES`
  (``one-unless-mla`` depends on the model's attention);
- ``copy_method``: how each copy is issued, one of :data:`COPY_METHODS`; its fixed cost per copy
  is the assumption key ``fetch.copy_cost.METHOD`` (:data:`COPY_COST_KEYS`);
- ``layer_overlap``: whether the engine loads the fetched KV layer by layer while the forward
  pass computes the layers before it;
- ``kv_storage``: whether a tensor-parallel group writes a block to the tier once or every rank
  its own (:data:`KV_STORAGE`), which sets the copies a tier holds (``parallel.kv_storage``).

The assumption key ``engine`` names one (or ``none``: the set's own ``block_tokens`` and
``fetch_layout``); :class:`kvtier.scenario.Scenario` applies it.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from kvtier.data import ENGINE_PRESETS
from kvtier.errors import KvtierError, show
from kvtier.formulas import parallel
from kvtier.inputs.provenance import PROVENANCE_CLASSES, Record
from kvtier.inputs.readers import load_yaml

TRANSFER_MODES: tuple[str, ...] = ("one", "per-layer", "per-layer-kv", "one-unless-mla")
"""How one block's fetch is split: one contiguous copy; one copy per layer (K and V together);
one per layer for K and one for V (one per layer under MLA, whose latent has no separate V); one
copy for an MHA/GQA model (its layers in one cross-layer region, as vLLM >= 0.12 allocates them)
and one per layer under MLA."""

COPY_METHODS: tuple[str, ...] = ("lone-dma", "batched-dma", "kernel")
"""How an engine issues each copy of a fetch: one ``cudaMemcpyAsync`` synchronised before the next
(``lone-dma``), copies issued back to back on one stream or in one ``cudaMemcpyBatchAsync``
(``batched-dma``), or a gather/scatter kernel moving the chunks with the GPU's threads (``kernel``)."""

COPY_COST_KEYS: dict[str, str] = {method: f"fetch.copy_cost.{method.replace('-', '_')}" for method in COPY_METHODS}
"""The assumption key holding each copy method's fixed cost per copy (s): ``fetch.copy_cost.lone_dma``,
``.batched_dma``, ``.kernel``."""

KV_STORAGE: tuple[str, ...] = parallel.STORAGE_MODES
"""How a tensor-parallel group writes a block to a tier: every rank the KV it holds (``per-rank``: an
MLA latent, whole on every rank, is stored ``tp`` times, replicated KV heads as often as they are
replicated), the same but an MLA latent written by one rank (``mla-once``), or the group's distinct KV
once (``once``): :func:`kvtier.formulas.parallel.stored_copies`."""

NO_ENGINE = "none"
"""The ``engine`` value that applies no preset."""

_FIELDS = ("block_tokens", "transfers", "copy_method", "layer_overlap", "kv_storage")
_TEXT_FIELDS = ("description", "version", "date")
_RECORD_FIELDS = ("value", "provenance", "basis", "source")
_FILE = "engines.yaml"
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


@dataclass(frozen=True)
class Engine:
    """A serving engine's KV layout.

    Attributes
    ----------
    name : str
        Preset name (``"vllm"``).
    description : str
        What configuration of the engine the preset describes.
    block_tokens : int
        Tokens per block, page or chunk (tokens).
    transfers : str
        One of :data:`TRANSFER_MODES`.
    layer_overlap : bool
        Whether fetched KV is loaded layer by layer, overlapped with the forward pass.
    records : dict of str to Record
        The five values with their provenance, by field.
    copy_method : str
        One of :data:`COPY_METHODS`: how each copy is issued.
    kv_storage : str
        One of :data:`KV_STORAGE`: whether a tensor-parallel group stores a block once or per rank.
    version : str
        The engine versions the preset describes (``">= 0.12"``).
    date : str
        When the preset's sources were last read (``YYYY-MM-DD``).
    """

    name: str
    description: str
    block_tokens: int
    transfers: str
    layer_overlap: bool
    records: dict[str, Record]
    copy_method: str = "batched-dma"
    kv_storage: str = "per-rank"
    version: str = ""
    date: str = ""

    def transfers_per_block(self, n_layers: int, layer_chunks: int, mla: bool | None = None) -> int:
        """Copies one block's fetch takes (dimensionless).

        Parameters
        ----------
        n_layers : int
            The model's transformer layers (of one pipeline stage).
        layer_chunks : int
            Chunks per block when K and V of each layer are apart: ``2 x n_layers``, or
            ``n_layers`` under MLA (:attr:`kvtier.scenario.Scenario.layer_chunks`).
        mla : bool, optional
            Whether the model's attention is MLA; None reads it from ``layer_chunks == n_layers``.
            Only ``one-unless-mla`` reads it (1 copy, or ``n_layers`` under MLA).
        """
        if self.transfers == "one-unless-mla":
            mla = layer_chunks == n_layers if mla is None else mla
            return n_layers if mla else 1
        return {"one": 1, "per-layer": n_layers, "per-layer-kv": layer_chunks}[self.transfers]


def _record(where: str, name: str, field: str, raw: Any) -> Record:
    """One field of one preset, validated into a :class:`Record` named ``NAME.FIELD``."""
    at = f"{where}: engine {show(name, quote=True)} field '{field}'"
    if not isinstance(raw, Mapping):
        raise KvtierError(f"{at} must be a mapping with value, provenance, basis and source")
    extra = [entry for entry in raw if entry not in _RECORD_FIELDS]
    if extra:
        raise KvtierError(f"{at} has unknown entry {show(extra[0], quote=True)}; allowed: {', '.join(_RECORD_FIELDS)}")
    provenance = raw.get("provenance")
    if provenance not in PROVENANCE_CLASSES:
        raise KvtierError(f"{at}: provenance must be one of {', '.join(PROVENANCE_CLASSES)}")
    source = raw.get("source")
    if not isinstance(source, str) or not source.strip():
        raise KvtierError(f"{at}: a source is required (repository, file, version or commit, date)")
    basis = raw.get("basis") if isinstance(raw.get("basis"), str) else ""
    value = raw.get("value")
    if field == "block_tokens":
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise KvtierError(f"{at}: value must be a whole number of tokens >= 1")
        return Record(f"{name}.{field}", float(value), "tokens", f"{value} tokens", provenance, basis, source)
    if field in ("transfers", "copy_method", "kv_storage"):
        modes = {"transfers": TRANSFER_MODES, "copy_method": COPY_METHODS, "kv_storage": KV_STORAGE}[field]
        if value not in modes:
            raise KvtierError(f"{at}: value must be one of {', '.join(modes)}")
        return Record(f"{name}.{field}", value, "choice", value, provenance, basis, source)
    if not isinstance(value, bool):
        raise KvtierError(f"{at}: value must be true or false")
    text = "true" if value else "false"
    return Record(f"{name}.{field}", text, "choice", text, provenance, basis, source)


def _check_text(where: str, name: str, entry: Mapping[str, Any]) -> None:
    """A preset's ``version`` (non-empty text) and ``date`` (``YYYY-MM-DD``), or one line naming the field."""
    at = f"{where}: engine {show(name, quote=True)} field"
    version = entry["version"]
    if not isinstance(version, str) or not version.strip():
        raise KvtierError(f"{at} 'version' must be the engine versions it describes, as text (\">= 0.12\")")
    date = entry["date"]
    if not isinstance(date, str) or not _DATE.fullmatch(date) or not _valid_date(date):
        raise KvtierError(f"{at} 'date' must be the day its sources were read, as text YYYY-MM-DD")


def _valid_date(text: str) -> bool:
    """Whether ``text`` (``YYYY-MM-DD``) is a calendar day."""
    try:
        datetime.date.fromisoformat(text)
    except ValueError:
        return False
    return True


def parse_engines(data: Any, where: str) -> dict[str, Engine]:
    """The presets of an engines file's parsed YAML, by name, in :data:`ENGINE_PRESETS` order.

    Raises
    ------
    KvtierError
        One line naming the file, the engine and the field: a missing or unknown engine or
        field, a value of the wrong type, an unknown provenance class, no source.
    """
    engines = data.get("engines") if isinstance(data, Mapping) else None
    if not isinstance(engines, Mapping):
        raise KvtierError(f"{where}: expected a mapping 'engines' of preset name to layout")
    names = set(engines)
    if names != set(ENGINE_PRESETS):
        missing, unknown = sorted(set(ENGINE_PRESETS) - names), sorted(map(str, names - set(ENGINE_PRESETS)))
        raise KvtierError(
            f"{where}: engines must be exactly {', '.join(ENGINE_PRESETS)} (missing {missing}, unknown {unknown})"
        )
    out = {}
    for name in ENGINE_PRESETS:
        entry = engines[name]
        if not isinstance(entry, Mapping):
            raise KvtierError(f"{where}: engine {show(name, quote=True)} must be a mapping")
        extra = [k for k in entry if k not in (*_FIELDS, *_TEXT_FIELDS)]
        if extra:
            raise KvtierError(
                f"{where}: engine {show(name, quote=True)} has unknown field {show(extra[0], quote=True)}"
            )
        missing = [f for f in (*_FIELDS, "version", "date") if f not in entry]
        if missing:
            raise KvtierError(f"{where}: engine {show(name, quote=True)} is missing field '{missing[0]}'")
        _check_text(where, name, entry)
        records = {field: _record(where, name, field, entry[field]) for field in _FIELDS}
        out[name] = Engine(
            name=name,
            description=str(entry.get("description", "")),
            block_tokens=int(records["block_tokens"].value),  # type: ignore[arg-type]
            transfers=str(records["transfers"].value),
            layer_overlap=records["layer_overlap"].value == "true",
            records=records,
            copy_method=str(records["copy_method"].value),
            kv_storage=str(records["kv_storage"].value),
            version=str(entry["version"]),
            date=str(entry["date"]),
        )
    return out


@cache
def load_engines() -> dict[str, Engine]:
    """The shipped presets of ``kvtier/data/engines.yaml``, by name (read once)."""
    ref = resources.files("kvtier.data").joinpath(_FILE)
    with resources.as_file(ref) as path:
        return parse_engines(load_yaml(path, "engines file"), _FILE)


def engine_named(name: str) -> Engine | None:
    """The preset ``name``; None for :data:`NO_ENGINE`.

    Raises
    ------
    KvtierError
        If ``name`` is neither ``none`` nor a preset.
    """
    if name == NO_ENGINE:
        return None
    found = load_engines().get(name)
    if found is None:
        raise KvtierError(f"unknown engine {show(name, quote=True)}; one of: {NO_ENGINE}, {', '.join(ENGINE_PRESETS)}")
    return found
