"""Published copy throughputs by copy method, and the per-copy cost each implies.

Read from ``kvtier/data/copy-measurements.yaml`` (its header says what each field means).  Each
:class:`CopySeries` is one copy method's throughput against block size, as a source published it;
:meth:`CopySeries.fit` is ``t = per-copy cost + bytes / bandwidth`` fitted to it by relative least squares
(:func:`kvtier.formulas.fits.fit_latency_bandwidth`), the derivation of ``fetch.copy_cost.batched_dma``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from kvtier.errors import KvtierError, show
from kvtier.formulas.fits import fit_latency_bandwidth
from kvtier.inputs.readers import load_yaml

_TEXT = ("method", "what", "source", "date", "setup", "reading")
_LISTS = ("sizes_kib", "throughput_gbps")


@dataclass(frozen=True)
class CopySeries:
    """One copy method's published throughput against block size (KiB, GB/s as published)."""

    method: str
    what: str
    source: str
    date: str
    setup: str
    reading: str
    sizes_kib: tuple[float, ...]
    throughput_gbps: tuple[float, ...]

    @property
    def n_bytes(self) -> np.ndarray:
        """Each point's block size (B)."""
        return np.asarray(self.sizes_kib, dtype=float) * 1024

    @property
    def times_s(self) -> np.ndarray:
        """Each point's time per block: its size over its throughput (s)."""
        return self.n_bytes / (np.asarray(self.throughput_gbps, dtype=float) * 1e9)

    def fit(self) -> tuple[float, float]:
        """``(per-copy cost in s, bandwidth in B/s)``: ``t = cost + bytes / bandwidth`` fitted to the series."""
        return fit_latency_bandwidth(self.n_bytes, self.times_s)

    def residuals(self) -> np.ndarray:
        """The fit's error at each point, fitted over published time less one (fraction)."""
        cost, bandwidth = self.fit()
        return (cost + self.n_bytes / bandwidth) / self.times_s - 1


def _series(where: str, index: int, raw: Any) -> CopySeries:
    """One series validated: KvtierError naming the file, the series and the field."""
    at = f"{where}: series {index + 1}"
    if not isinstance(raw, Mapping):
        raise KvtierError(f"{at} must be a mapping")
    extra = [k for k in raw if k not in (*_TEXT, *_LISTS)]
    if extra:
        raise KvtierError(f"{at} has unknown field {show(str(extra[0]), quote=True)}")
    fields: dict[str, Any] = {}
    for name in _TEXT:
        value = raw.get(name)
        # YAML reads an unquoted 2026-01-08 as a date
        if isinstance(value, bool) or not isinstance(value, (str, date)) or not str(value).strip():
            raise KvtierError(f"{at}: field '{name}' is required (text)")
        fields[name] = str(value).strip()
    for name in _LISTS:
        value = raw.get(name)
        ok = isinstance(value, list) and len(value) >= 2
        ok = ok and all(isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 for v in value)
        if not ok:
            raise KvtierError(f"{at}: field '{name}' must be a list of at least two numbers above 0")
        fields[name] = tuple(float(v) for v in value)
    if len(fields["sizes_kib"]) != len(fields["throughput_gbps"]):
        raise KvtierError(f"{at}: 'sizes_kib' and 'throughput_gbps' must be as long as each other")
    return CopySeries(**fields)


def read_copy_series(path: Path) -> dict[str, CopySeries]:
    """Every series of the copy measurements file ``path``, validated, by copy method.

    Raises
    ------
    KvtierError
        One line naming the file, the series and the field.
    """
    where = show(path)
    data = load_yaml(path, "copy measurements file")
    rows = data.get("series") if isinstance(data, Mapping) else None
    if not isinstance(rows, list) or not rows:
        raise KvtierError(f"{where}: 'series' must be a non-empty list")
    out: dict[str, CopySeries] = {}
    for i, raw in enumerate(rows):
        series = _series(where, i, raw)
        if series.method in out:
            raise KvtierError(f"{where}: copy method {series.method!r} appears twice")
        out[series.method] = series
    return out


@cache
def copy_series() -> dict[str, CopySeries]:
    """The shipped series of ``kvtier/data/copy-measurements.yaml``, by copy method."""
    with resources.as_file(resources.files("kvtier.data").joinpath("copy-measurements.yaml")) as path:
        return read_copy_series(path)
