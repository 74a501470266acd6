"""Published gains of the split and of restoring from hidden states (``kvtier/data/published-gains.yaml``).

Each is a paper's own measurement, kept with its provenance, basis and source so that the split page can set its
computed gains beside it and say where they differ.
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


@cache
def published() -> dict[str, Published]:
    """The shipped figures of :data:`FILE`, by name."""
    text = resources.files("kvtier.data").joinpath(FILE).read_text(encoding="utf-8")
    return parse(yaml.safe_load(text))
