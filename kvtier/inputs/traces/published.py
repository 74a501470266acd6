"""What the shipped traces' authors published about them: Mooncake FAST'25's workload statistics and cache figures.

Read from ``kvtier/data/mooncake-fast25.yaml`` (its header says what each field means): Table 2's requests, mean
lengths and cache ratio of each shipped trace, and Figure 9's share of the maximum hit rate that a local cache of
:attr:`PublishedCache.local_cache` tokens reaches.  Each value is a :class:`PublishedValue` with where it is printed,
its source and the date it was read; the workload page recomputes each from the trace.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from kvtier.data import SHIPPED_TRACES
from kvtier.errors import KvtierError, show
from kvtier.inputs.readers import load_yaml

QUANTITIES: dict[str, str] = {
    "requests": "requests",
    "mean_input_tokens": "tokens",
    "mean_output_tokens": "tokens",
    "cache_ratio_pct": "%",
    "share_of_max_pct": "%",
}
"""What a row may state, in the order the page shows them, with its unit: the requests, the mean prompt and output
lengths (Table 2), the cache ratio (Table 2) and the local cache's share of the maximum hit rate (Figure 9)."""

PROVENANCE = "published-spec"
"""Every value's provenance: printed in the paper."""

_TEXT = ("where", "source", "date", "provenance", "reading")


@dataclass(frozen=True)
class PublishedValue:
    """One published value: the number as printed, where (table or figure, page), its source, when it was read."""

    value: float
    where: str
    source: str
    date: str
    provenance: str
    reading: str
    trace: str = ""
    quantity: str = ""

    @property
    def unit(self) -> str:
        """The unit of a row of :data:`QUANTITIES` (``"%"``, ``"tokens"``, ``"requests"``); ``"tokens"`` for the
        local cache."""
        return QUANTITIES.get(self.quantity, "tokens")


@dataclass(frozen=True)
class PublishedCache:
    """The file's contents: the local cache's capacity and every published value of a shipped trace."""

    local_cache: PublishedValue
    figures: tuple[PublishedValue, ...]

    def value(self, trace: str, quantity: str) -> PublishedValue:
        """The published ``quantity`` of ``trace``; KeyError when the paper states none."""
        found = next((f for f in self.figures if f.trace == trace and f.quantity == quantity), None)
        if found is None:
            raise KeyError(f"no published {quantity} for the {trace} trace")
        return found

    @property
    def traces(self) -> tuple[str, ...]:
        """The traces with a published value, in the file's order."""
        return tuple(dict.fromkeys(f.trace for f in self.figures))


def _value(at: str, raw: Any, row: bool) -> PublishedValue:
    """One value validated: KvtierError naming the file, the entry and the field."""
    if not isinstance(raw, Mapping):
        raise KvtierError(f"{at} must be a mapping")
    known = ("value", *_TEXT, *(("trace", "quantity") if row else ()))
    extra = [k for k in raw if k not in known]
    if extra:
        raise KvtierError(f"{at} has unknown field {show(str(extra[0]), quote=True)}; allowed: {', '.join(known)}")
    value = raw.get("value")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise KvtierError(f"{at}: field 'value' must be a number above 0")
    fields: dict[str, str] = {}
    for name in (*_TEXT, *(("trace", "quantity") if row else ())):
        text = raw.get(name)
        # YAML reads an unquoted 2026-12-06 as a date
        if isinstance(text, bool) or not isinstance(text, (str, date)) or not str(text).strip():
            raise KvtierError(f"{at}: field '{name}' is required (text)")
        fields[name] = str(text).strip()
    if fields["provenance"] != PROVENANCE:
        raise KvtierError(f"{at}: field 'provenance' must be {PROVENANCE}")
    if row and fields["trace"] not in SHIPPED_TRACES:
        raise KvtierError(f"{at}: field 'trace' must be a shipped trace: {', '.join(SHIPPED_TRACES)}")
    if row and fields["quantity"] not in QUANTITIES:
        raise KvtierError(f"{at}: field 'quantity' must be one of {', '.join(QUANTITIES)}")
    return PublishedValue(value=float(value), **fields)


def read_published(path: Path) -> PublishedCache:
    """The published figures file ``path``, validated.

    Raises
    ------
    KvtierError
        One line naming the file, the entry and the field: a missing or unknown field, a value not above 0, a
        trace kvtier does not ship, a quantity twice for one trace.
    """
    where = show(path)
    data = load_yaml(path, "published figures file")
    if not isinstance(data, Mapping) or set(data) != {"local_cache", "figures"}:
        raise KvtierError(f"{where} must hold exactly 'local_cache' and 'figures'")
    rows = data["figures"]
    if not isinstance(rows, list) or not rows:
        raise KvtierError(f"{where}: 'figures' must be a non-empty list")
    figures = tuple(_value(f"{where}: figure {i + 1}", raw, row=True) for i, raw in enumerate(rows))
    pairs = [(f.trace, f.quantity) for f in figures]
    twice = next((p for p in pairs if pairs.count(p) > 1), None)
    if twice is not None:
        raise KvtierError(f"{where}: the {twice[0]} trace's {twice[1]} appears twice")
    return PublishedCache(_value(f"{where}: local_cache", data["local_cache"], row=False), figures)


@cache
def published_cache() -> PublishedCache:
    """The shipped ``kvtier/data/mooncake-fast25.yaml``."""
    with resources.as_file(resources.files("kvtier.data").joinpath("mooncake-fast25.yaml")) as path:
        return read_published(path)
