"""What the quick-answer commands share when they print: one text or JSON emitter."""

from __future__ import annotations

import json
import math
from typing import Any

from kvtier.inputs.assumptions import Assumption


def record_json(rec: Assumption) -> dict[str, Any]:
    return {
        "value": rec.value,
        "unit": rec.unit,
        "text": rec.text,
        "provenance": rec.provenance,
        "basis": rec.basis,
        "source": rec.source,
    }


def finite(value: Any) -> Any:
    """``value`` with every non-finite float replaced by None, so that the JSON is valid."""
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def emit(as_json: bool, payload: dict[str, Any], lines: list[str]) -> None:
    if as_json:
        print(json.dumps(finite(payload), indent=2, sort_keys=True, allow_nan=False))
    else:
        print("\n".join(lines))


def pct(x: float) -> str:
    """A fraction as a percentage to one decimal: 0.1234 -> ``12.3 %``."""
    return f"{x * 100:.1f} %"


def num(x: float | None, spec: str) -> str:
    """``x`` formatted by ``spec``, or ``n/a`` where it is undefined (None, NaN)."""
    return "n/a" if x is None or not math.isfinite(x) else format(x, spec)
