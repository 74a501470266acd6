"""Published measurements of serving engines on other accelerators: what the engine model is checked against.

Read from ``kvtier/data/engine-measurements.yaml`` (its header says what each field means).  Each row is
a :class:`Published` measurement with its source, setup and date; the measured page times each with the
engine model (``regen.model: engine``) and shows the error, and :meth:`Published.command` is the
``kvtier compare`` call that reproduces the prediction.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from kvtier.errors import KvtierError, show
from kvtier.inputs.readers import load_yaml

_TEXT = ("id", "quantity", "reading", "accelerator", "engine", "engine_setup", "model", "source", "date", "setup")
_NUMBERS = ("value_ms", "tp", "tokens")
_DTYPES = ("weight_dtype", "kv_dtype")
_OPTIONAL = ("excluded",)
QUANTITIES = ("ttft",)
"""What a row may measure: ``ttft``, one request's time to first token, none of its prompt cached."""
READINGS = ("quoted", "plot")
"""How the value was taken: printed in the source, or read off a chart."""


@dataclass(frozen=True)
class Published:
    """One published engine measurement (the file's fields; times in ms as published, tokens, counts)."""

    id: str
    quantity: str
    value_ms: float
    reading: str
    accelerator: str
    engine: str
    engine_setup: str
    model: str
    tp: int
    weight_dtype: str
    kv_dtype: str
    tokens: int
    source: str
    date: str
    setup: str
    excluded: str = ""

    @property
    def sets(self) -> dict[str, str]:
        """The assumption values that time this measurement's prefill under the engine model, by key."""
        return {
            "regen.model": "engine",
            "model": self.model,
            "engine": self.engine,
            "parallel.tp": str(self.tp),
            "weight_dtype": self.weight_dtype,
            "kv_dtype": self.kv_dtype,
            "block_tokens": str(self.tokens),
            "regen.batch_tokens": str(self.tokens),
            "interior.position": "0",
        }

    def command(self, extrapolate: bool = False) -> str:
        """The ``kvtier compare`` call that prints the engine model's prediction of this measurement; with
        ``extrapolate`` (a prompt past the kernel tables' measured grid) it asks for the package's extrapolation."""
        return (
            f"kvtier compare --regen-model engine --accelerator {self.accelerator} --engine {self.engine}"
            f" --model {self.model} --tp {self.tp} --tokens {self.tokens} --position 0 --batch-tokens {self.tokens}"
            f" --kv-dtype {self.kv_dtype} --set weight_dtype={self.weight_dtype} --set parallel.hbm_capacity=null"
            + (" --beyond-grid extrapolate" if extrapolate else "")
        )


def _row(where: str, index: int, raw: Any) -> Published:
    """One row validated: KvtierError naming the file, the row and the field."""
    at = f"{where}: measurement {index + 1}"
    if not isinstance(raw, Mapping):
        raise KvtierError(f"{at} must be a mapping")
    known = (*_TEXT, *_NUMBERS, *_DTYPES, *_OPTIONAL)
    extra = [k for k in raw if k not in known]
    if extra:
        raise KvtierError(f"{at} has unknown field {show(str(extra[0]), quote=True)}; allowed: {', '.join(known)}")
    fields: dict[str, Any] = {}
    for name in (*_TEXT, *_DTYPES):
        value = raw.get(name)
        # YAML reads an unquoted 2026-01-08 as a date
        if isinstance(value, bool) or not isinstance(value, (str, int, float, date)) or not str(value).strip():
            raise KvtierError(f"{at}: field '{name}' is required (text)")
        fields[name] = str(value)
    for name in _NUMBERS:
        value = raw.get(name)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            raise KvtierError(f"{at}: field '{name}' must be a number above 0")
        fields[name] = int(value) if name != "value_ms" else float(value)
    if fields["quantity"] not in QUANTITIES:
        raise KvtierError(f"{at}: field 'quantity' must be one of {', '.join(QUANTITIES)}")
    if fields["reading"] not in READINGS:
        raise KvtierError(f"{at}: field 'reading' must be one of {', '.join(READINGS)}")
    excluded = raw.get("excluded", "")
    if not isinstance(excluded, str):
        raise KvtierError(f"{at}: field 'excluded' must be text")
    return Published(**fields, excluded=excluded.strip())


def read_published(path: Path) -> tuple[Published, ...]:
    """Every row of the measurements file ``path``, validated.

    Raises
    ------
    KvtierError
        One line naming the file, the row and the field.
    """
    where = show(path)
    data = load_yaml(path, "engine measurements file")
    rows = data.get("measurements") if isinstance(data, Mapping) else None
    if not isinstance(rows, list) or not rows:
        raise KvtierError(f"{where}: 'measurements' must be a non-empty list")
    out = tuple(_row(where, i, raw) for i, raw in enumerate(rows))
    ids = [r.id for r in out]
    twice = next((i for i in ids if ids.count(i) > 1), None)
    if twice is not None:
        raise KvtierError(f"{where}: measurement id {twice!r} appears twice")
    return out


@cache
def published_measurements() -> tuple[Published, ...]:
    """The shipped rows of ``kvtier/data/engine-measurements.yaml``."""
    with resources.as_file(resources.files("kvtier.data").joinpath("engine-measurements.yaml")) as path:
        return read_published(path)
