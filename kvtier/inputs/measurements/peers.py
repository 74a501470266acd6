"""Peers' published predictions of the measured passes, and those left out of comparison with the reason."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from importlib import resources
from pathlib import Path

from kvtier.errors import KvtierError, show
from kvtier.inputs.measurements.records import H200_MEM_BANDWIDTH, H200_PEAK_FLOP_PER_S, SHAPES, Shape
from kvtier.inputs.provenance import Record
from kvtier.inputs.readers import load_yaml

_PEER_FIELDS = ("tool", "version", "shape", "tokens", "value", "basis", "source")


def peak_bound_s(shape: Shape, tokens: float) -> float:
    """Least time of a pass of ``tokens`` tokens with ``shape`` on the H200 at its datasheet peaks (s).

    ``max(FLOPs / 989 TFLOP/s, bytes / 4.8 TB/s)`` over the work no pass can skip: the FLOPs of
    :meth:`Shape.flops` less the input embedding's ``2 x vocab x hidden`` per token (a row
    lookup, not a matrix product), and the bf16 weights less the input embedding table, each
    read once.  A prediction below it implies more than a peak of the device.
    """
    embedding = shape.vocab * shape.hidden
    flops = float(shape.flops(tokens)) - 2.0 * embedding * tokens
    weight_bytes = 2.0 * (shape.params - embedding)
    return max(flops / H200_PEAK_FLOP_PER_S, weight_bytes / H200_MEM_BANDWIDTH)


@cache
def peer_predictions() -> tuple[tuple[str, str, str, int, Record], ...]:
    """Peer tools' predictions of the measured passes: ``(tool, version, shape, tokens, record)``.

    Read from ``kvtier/data/peer-predictions.yaml``; each record is ``derived`` (the tool
    computed it from its own defaults), its basis naming the tool and version.  The
    predictions the file excludes from comparison are not among them (:func:`peer_exclusions`).
    """
    return tuple(row for row, reason in _shipped_peers() if reason is None)


@cache
def peer_exclusions() -> tuple[tuple[tuple[str, str, str, int, Record], str], ...]:
    """The peer predictions the file excludes from comparison: ``((tool, version, shape, tokens, record), reason)``."""
    return tuple((row, reason) for row, reason in _shipped_peers() if reason is not None)


def _shipped_peers() -> tuple[tuple[tuple[str, str, str, int, Record], str | None], ...]:
    ref = resources.files("kvtier.data").joinpath("peer-predictions.yaml")
    with resources.as_file(ref) as path:
        return _read_peers_and_exclusions(path)


def read_peers(path: Path) -> tuple[tuple[str, str, str, int, Record], ...]:
    """Every prediction in the peer file ``path``, excluded or not: ``(tool, version, shape, tokens, record)``."""
    return tuple(row for row, _ in _read_peers_and_exclusions(path))


def _read_peers_and_exclusions(path: Path) -> tuple[tuple[tuple[str, str, str, int, Record], str | None], ...]:
    where = show(path)
    data = load_yaml(path, "peer predictions file")
    rows = data.get("predictions") if isinstance(data, Mapping) else None
    if not isinstance(rows, list) or not rows:
        raise KvtierError(f"{where}: key 'predictions' must be a non-empty list")
    out = []
    for i, row in enumerate(rows):
        shown = f"predictions[{i}]"
        if not isinstance(row, Mapping):
            raise KvtierError(f"{where}: key '{shown}' must be a mapping")
        missing = [f for f in _PEER_FIELDS if f not in row]
        if missing:
            raise KvtierError(f"{where}: key '{shown}.{missing[0]}' is missing")
        if row["shape"] not in SHAPES:
            raise KvtierError(f"{where}: key '{shown}.shape' must be one of {', '.join(SHAPES)}")
        tokens, value = row["tokens"], row["value"]
        if not isinstance(tokens, int) or tokens <= 0:
            raise KvtierError(f"{where}: key '{shown}.tokens' must be a positive whole number")
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not value > 0:
            raise KvtierError(f"{where}: key '{shown}.value' must be a positive time in ms")
        tool, version = str(row["tool"]), str(row["version"])
        rec = Record(
            f"peer.{tool}.{row['shape']}.{tokens}",
            float(value) * 1e-3,
            "time",
            f"{value} ms",
            "derived",
            f"{tool} {version}: {row['basis']}",
            str(row["source"]),
        )
        excluded = row.get("excluded")
        if excluded is not None and (not isinstance(excluded, str) or not excluded.strip()):
            raise KvtierError(f"{where}: key '{shown}.excluded' must be a sentence saying why")
        out.append(((tool, version, str(row["shape"]), tokens, rec), excluded))
    return tuple(out)


@cache
def peer_commands() -> dict[tuple[str, str, int], str]:
    """How each peer prediction was obtained, ``(tool, shape, tokens) -> command``, from the file's ``command`` fields.

    A prediction without one maps to the empty string.
    """
    ref = resources.files("kvtier.data").joinpath("peer-predictions.yaml")
    with resources.as_file(ref) as path:
        data = load_yaml(path, "peer predictions file")
    out = {}
    for row in data["predictions"]:
        command = row.get("command", "")
        if not isinstance(command, str):
            raise KvtierError(f"{show(path)}: key 'command' of {row['tool']} at {row['tokens']} tokens must be text")
        out[(str(row["tool"]), str(row["shape"]), int(row["tokens"]))] = " ".join(command.split())
    return out
