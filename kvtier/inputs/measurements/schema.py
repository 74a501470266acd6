"""The probe files' JSON Schemas, and their first violation as one line naming the key.

:data:`SCHEMAS` declares, per probe file, every field the reader uses and its type: a positive
number, a positive whole number, a timing ``{median_s, min_s, max_s, reps}``, a non-empty list
of rows, a copy's kind.  :func:`check` validates a file against its schema with :mod:`jsonschema`
(Draft 2020-12, where a ``number`` is a finite one: Python's JSON parser reads ``NaN`` and
``Infinity``, JSON has neither) and turns the first violation into the problem in words
(:func:`problem`): ``key 'copies[3].median_s' must be a positive number, got -1``.  A field
that should hold an object and holds something else reads as an empty object: its first field
is missing.  What a schema cannot say (timings in order, a shape's parameter count, one copy
per kind and size) the reader checks after (:mod:`kvtier.inputs.measurements.reading`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from functools import cache
from typing import TYPE_CHECKING, Any

from kvtier.errors import show

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError
    from jsonschema.protocols import Validator

KINDS = ("h2d_pinned", "d2h_pinned", "h2d_pageable", "d2d")
"""The copy directions a probe file may list (``copies[*].kind``)."""

POSITIVE: dict[str, Any] = {"type": "number", "exclusiveMinimum": 0}
"""A positive finite number."""

WHOLE: dict[str, Any] = {"type": "integer", "exclusiveMinimum": 0}
"""A positive whole number (``80`` or ``80.0``)."""


def fields(required: Iterable[str] = (), /, **properties: dict[str, Any]) -> dict[str, Any]:
    """An object with ``properties``, every one required except those not named in ``required`` when given."""
    names = list(required) or list(properties)
    return {"type": "object", "required": names, "properties": properties}


def rows(item: dict[str, Any]) -> dict[str, Any]:
    """A non-empty list of ``item``."""
    return {"type": "array", "minItems": 1, "items": item}


TIMING = fields(median_s=POSITIVE, min_s=POSITIVE, max_s=POSITIVE, reps=WHOLE)
"""A call timed ``reps`` times: median, fastest and slowest (s)."""


def timed(required: Iterable[str] = (), /, **properties: dict[str, Any]) -> dict[str, Any]:
    """A timing with more fields: ``properties`` before the timing's own."""
    out = fields(required, **properties, **TIMING["properties"])
    out["required"] = [*(required or properties), *TIMING["required"]]
    return out


CONFIG = fields(**dict.fromkeys(("layers", "hidden", "heads", "kv_heads", "head_dim", "ffn", "vocab"), WHOLE))
"""A model shape as the probe built it (counts)."""


def model(energy: str, **more: dict[str, Any]) -> dict[str, Any]:
    """A model shape's group: its config and parameter count, its eager sweep, its 16-token passes, the energy of
    one of them (``energy``) and ``more``."""
    return fields(
        config=CONFIG,
        params=WHOLE,
        token_sweep=rows(timed(tokens=WHOLE)),
        tail16_eager=TIMING,
        tail16_graph=TIMING,
        **{energy: fields(joules_per_forward=POSITIVE, mean_watts=POSITIVE)},
        **more,
    )


ENVIRONMENT = fields(device_name={"type": "string", "minLength": 1})
"""Where the probe ran: the device's name."""

SCHEMAS: dict[str, dict[str, Any]] = {
    "probe1.json": fields(
        copies=rows(timed(kind={"enum": list(KINDS)}, bytes=WHOLE)),
        block_layouts=fields(chunk_bytes=WHOLE, chunks=WHOLE, contiguous_h2d=TIMING, per_layer_chunks_h2d=TIMING),
        regenerate=model(
            "tail16_energy",
            interior_resident=rows(timed(position=WHOLE)),
            interior_evicted=rows(timed(("position",), position=WHOLE, tokens_computed=WHOLE)),
        ),
        attention_vs_position=rows(fields(position=WHOLE, kv_bytes_one_layer=WHOLE, masked=TIMING, unmasked=TIMING)),
        matmul_ceiling=timed(n=WHOLE),
        hbm_copy=timed(bytes=WHOLE),
        environment=ENVIRONMENT,
    ),
    "probe2.json": fields(
        strided_block=fields(chunk_bytes=WHOLE, chunks=WHOLE, per_chunk_copies=TIMING, one_2d_copy=TIMING),
        llama3_8b=model("tail16_graph_energy"),
        fetch_energy=fields(bytes=WHOLE, joules_per_copy_board=POSITIVE, mean_watts=POSITIVE, idle_watts=POSITIVE),
    ),
    "probe3.json": fields(
        overlap=fields(
            forward_alone=TIMING,
            with_copies=rows(fields(forward_s=POSITIVE, copies=WHOLE, copies_s=POSITIVE)),
            block_bytes=WHOLE,
        ),
        bidirectional=fields(
            bytes_each=WHOLE,
            runs=rows(
                fields(**dict.fromkeys(("h2d_alone_s", "d2h_alone_s", "h2d_together_s", "d2h_together_s"), POSITIVE))
            ),
        ),
        batching=fields(blocks=WHOLE, block_bytes=POSITIVE, one_copy=TIMING, copy_per_block=TIMING),
    ),
    "probe4.json": fields(
        **{
            group: fields(params=WHOLE, token_sweep=rows(timed(tokens=WHOLE)))
            for group in ("hf_llama3_70b", "hf_llama3_8b")
        }
    ),
}
"""Every probe file's schema, by file name: the fields the reader uses, in the order it reads them."""


def _finite(value: object) -> bool:
    """Whether ``value`` is a number a float can hold, not NaN or infinite (a bool is no number)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an integer past the largest float
        return False


@cache
def _validator_class() -> type[Validator]:
    """Draft 2020-12 with ``number`` and ``integer`` finite (imported here: jsonschema takes about 0.15 s)."""
    from jsonschema import Draft202012Validator, validators

    checker = Draft202012Validator.TYPE_CHECKER.redefine_many(
        {
            "number": lambda _, value: _finite(value),
            "integer": lambda _, value: _finite(value) and float(value).is_integer(),
        }
    )
    return validators.extend(Draft202012Validator, type_checker=checker)


@cache
def _validator(file: str) -> Validator:
    """The validator of ``file``'s schema, built once."""
    return _validator_class()(SCHEMAS[file])


def check(file: str, data: Any) -> tuple[str, str] | None:
    """The first violation of ``file``'s schema in ``data``, as (key, problem in words), or None."""
    first = next(iter(_validator(file).iter_errors(data)), None)
    return None if first is None else problem(first)


_MISSING = object()


def key_of(path: Iterable[str | int]) -> str:
    """A path into a file as the messages write it: ``copies[3].median_s``."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else f".{part}" if out else str(part)
    return out


def problem(error: ValidationError) -> tuple[str, str]:
    """The key and the problem in words of one violation.

    A missing field is missing (a copy's missing kind is none of the kinds); a field that
    should hold an object and does not reads as an empty one, so its first field is missing.
    """
    path, schema, value = list(error.absolute_path), error.schema, error.instance
    if error.validator == "required":
        name = next(name for name in error.validator_value if name not in value)
        path, schema, value = [*path, name], schema["properties"][name], _MISSING
    elif error.validator == "type" and schema.get("type") == "object":
        name = schema["required"][0]
        path, schema, value = [*path, name], schema["properties"][name], _MISSING
    return key_of(path), _words(schema, value)


def _words(schema: dict[str, Any], value: Any) -> str:
    """What is wrong with ``value`` (or its absence) under ``schema``, in words."""
    if "enum" in schema:
        got = None if value is _MISSING else value
        return f"must be one of {', '.join(schema['enum'])}, got {show(got, quote=True)}"
    if value is _MISSING:
        return "is missing"
    kind = schema.get("type")
    if kind == "array":
        return "must be a non-empty list"
    if kind == "string":
        return "must be a non-empty string"
    if not _finite(value) or value <= 0:
        return f"must be a positive number, got {show(value, quote=True)}"
    return f"must be a whole number, got {show(value, quote=True)}"
