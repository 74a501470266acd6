"""Published gains of the split and of restoring from hidden states (``kvtier/data/published-gains.yaml``).

Each gain is a paper's own measurement, kept with its provenance, basis and source so that the split page can set
its computed gains beside it and say where they differ; each setup (:class:`Setup`) is where the page reruns
kvtier's formulas beside a paper's figures.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import yaml

from kvtier.errors import KvtierError

FILE = "published-gains.yaml"
"""The file under ``kvtier/data/``."""


@dataclass(frozen=True)
class Published:
    """One published figure: its value (a ratio, x), provenance class, what it measured and where it stands."""

    name: str
    value: float
    provenance: str
    basis: str
    source: str


def parse(raw: Any, where: str = FILE) -> dict[str, Published]:
    """The figures of a ``published-gains.yaml`` document, by name.

    Raises
    ------
    KvtierError
        One line naming the file and the entry: no ``gains`` mapping, a value that is not a positive finite number,
        or a missing provenance, basis or source.
    """
    gains = raw.get("gains") if isinstance(raw, dict) else None
    if not isinstance(gains, dict) or not gains:
        raise KvtierError(f"{where}: needs a non-empty 'gains' mapping")
    out = {}
    for name, body in gains.items():
        if not isinstance(body, dict):
            raise KvtierError(f"{where}: gains.{name} must be a mapping")
        value = body.get("value")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not (math.isfinite(value) and value > 0):
            raise KvtierError(f"{where}: gains.{name}.value must be a positive number, got {value!r}")
        fields = {}
        for field in ("provenance", "basis", "source"):
            text = body.get(field)
            if not isinstance(text, str) or not text.strip():
                raise KvtierError(f"{where}: gains.{name}.{field} must be non-empty text")
            fields[field] = " ".join(text.split())
        out[str(name)] = Published(str(name), float(value), **fields)
    return out


@dataclass(frozen=True)
class Setup:
    """A setup in which the split page reruns kvtier's formulas beside a paper's published figures.

    Attributes
    ----------
    name, title, paper : str
        Its name in the file, how the book names it, and the paper it stands beside.
    gains : tuple of str
        The published figures (:class:`Published` names) its rows are set beside.
    model, accelerator : str
        A shipped model and an accelerator preset (``kvtier/data/hardware.yaml``).
    prefix_tokens : tuple of int
        The prefixes the tier holds (tokens).
    new_tokens : int
        The new tokens after each prefix (tokens).
    bandwidth_GBps : tuple of float
        The links' bandwidths, one direction (GB/s); no per-copy latency.
    provenance, basis, source : str
        Why these points, and where the paper's ranges are read.
    """

    name: str
    title: str
    paper: str
    gains: tuple[str, ...]
    model: str
    accelerator: str
    prefix_tokens: tuple[int, ...]
    new_tokens: int
    bandwidth_GBps: tuple[float, ...]
    provenance: str
    basis: str
    source: str


def _positive_list(where: str, name: str, field: str, raw: Any, whole: bool) -> tuple[Any, ...]:
    ok = (
        isinstance(raw, list)
        and raw
        and all(not isinstance(x, bool) and isinstance(x, (int, float)) and math.isfinite(x) and x > 0 for x in raw)
    )
    if ok and whole:
        ok = all(float(x).is_integer() for x in raw)
    if not ok:
        kind = "whole numbers" if whole else "numbers"
        raise KvtierError(f"{where}: setups.{name}.{field} must be a non-empty list of positive {kind}, got {raw!r}")
    return tuple(int(x) if whole else float(x) for x in raw)


def parse_setups(raw: Any, gains: dict[str, Published], where: str = FILE) -> dict[str, Setup]:
    """The setups of a ``published-gains.yaml`` document, by name (none where it has no ``setups``).

    Raises
    ------
    KvtierError
        One line naming the file and the entry: a setup that is not a mapping, a missing text field, a gain it
        names that the file lacks, or prefixes, new tokens or bandwidths that are not positive numbers.
    """
    section = raw.get("setups", {}) if isinstance(raw, dict) else {}
    if not isinstance(section, dict):
        raise KvtierError(f"{where}: 'setups' must be a mapping of name to setup")
    out = {}
    for name, body in section.items():
        if not isinstance(body, dict):
            raise KvtierError(f"{where}: setups.{name} must be a mapping")
        text = {}
        for field in ("title", "paper", "model", "accelerator", "provenance", "basis", "source"):
            value = body.get(field)
            if not isinstance(value, str) or not value.strip():
                raise KvtierError(f"{where}: setups.{name}.{field} must be non-empty text")
            text[field] = " ".join(value.split())
        names = body.get("gains")
        if not isinstance(names, list) or not names or any(str(g) not in gains for g in names):
            raise KvtierError(f"{where}: setups.{name}.gains must list figures of 'gains' ({', '.join(gains)})")
        new = body.get("new_tokens")
        if isinstance(new, bool) or not isinstance(new, int) or new < 1:
            raise KvtierError(f"{where}: setups.{name}.new_tokens must be a positive whole number, got {new!r}")
        out[str(name)] = Setup(
            name=str(name),
            gains=tuple(str(g) for g in names),
            prefix_tokens=_positive_list(where, name, "prefix_tokens", body.get("prefix_tokens"), whole=True),
            new_tokens=new,
            bandwidth_GBps=_positive_list(where, name, "bandwidth_GBps", body.get("bandwidth_GBps"), whole=False),
            **text,
        )
    return out


def _document() -> Any:
    return yaml.safe_load(resources.files("kvtier.data").joinpath(FILE).read_text(encoding="utf-8"))


@cache
def setups() -> dict[str, Setup]:
    """The shipped setups of :data:`FILE`, by name."""
    return parse_setups(_document(), published())


@cache
def published() -> dict[str, Published]:
    """The shipped figures of :data:`FILE`, by name."""
    return parse(_document())
