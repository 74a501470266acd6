"""Reading a measurement set: each probe file checked against its JSON Schema, then typed.

:func:`read` reads the four probe files of a set, checks each against its schema
(:mod:`kvtier.inputs.measurements.schema`) and the few rules a schema cannot state (timings in
order, a shape's parameter count, one copy per kind and size, the 5 MiB block present), and
returns a :class:`~kvtier.inputs.measurements.records.Measurements` in SI base units whose
every quoted scalar is a ``measured`` record naming its file and field.  :func:`load` reads
the shipped set once.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from kvtier.errors import KvtierError, show
from kvtier.inputs.measurements.records import (
    CITE,
    DATA_DIR,
    SET_NAME,
    SOURCES,
    Copy,
    Measurements,
    Pass,
    Shape,
    Timing,
)
from kvtier.inputs.measurements.schema import check
from kvtier.inputs.provenance import Record
from kvtier.inputs.readers import load_json
from kvtier.units import MIB


class _Doc:
    """One probe file, checked against its schema (:data:`~kvtier.inputs.measurements.schema.SCHEMAS`) when read.

    The fields it gives are those the schema declares, so each is there and of its type; what a
    schema cannot check (a timing's order, cross-field agreement) fails here, one line naming
    the file and the key.
    """

    def __init__(self, path: Path, label: str):
        self.path, self.label = path, label
        self.data = load_json(path, "measurement file")  # its messages name show(path), our label
        if not isinstance(self.data, dict):
            raise KvtierError(f"{label}: expected a JSON object at the top level")
        self.clean()
        found = check(path.name, self.data)
        if found is not None:
            raise self.fail(*found)

    def fail(self, key: str, problem: str) -> KvtierError:
        return KvtierError(f"{self.label}: key '{key}' {problem}")

    def get(self, key: str) -> Any:
        """The field at dotted ``key`` (``regenerate.tail16_graph``)."""
        node = self.data
        for part in key.split("."):
            node = node[part]
        return node

    def number(self, key: str) -> float:
        """The positive number at dotted ``key``."""
        return float(self.get(key))

    def count(self, key: str) -> int:
        """The positive whole number at dotted ``key``."""
        return int(float(self.get(key)))

    @staticmethod
    def field(node: dict[str, Any], key: str) -> float:
        """The positive number ``node[key]``."""
        return float(node[key])

    @staticmethod
    def count_field(node: dict[str, Any], key: str) -> int:
        """The positive whole number ``node[key]``."""
        return int(float(node[key]))

    def timing_of(self, node: dict[str, Any], shown: str) -> Timing:
        """The timing ``node``, ``{median_s, min_s, max_s, reps}``, with min <= median <= max; ``shown`` names it."""
        median, low, high = (self.field(node, f) for f in ("median_s", "min_s", "max_s"))
        if not low <= median <= high:
            raise self.fail(shown, f"has min_s <= median_s <= max_s out of order ({low:g}, {median:g}, {high:g})")
        return Timing(median, low, high, self.count_field(node, "reps"))

    def timing(self, key: str) -> Timing:
        """The timing at dotted ``key``."""
        return self.timing_of(self.get(key), key)

    def clean(self) -> None:
        """Refuse a smoke run and a file whose probe recorded failed sections."""
        if self.data.get("smoke") is True:
            raise self.fail("smoke", "is true: a smoke run on small shapes, not a measurement")
        errors = self.data.get("errors", {})
        if not isinstance(errors, dict):
            raise self.fail("errors", "must be a mapping of section to error")
        if errors:
            raise self.fail("errors", f"lists failed sections: {', '.join(sorted(map(str, errors)))}")


def _shape(doc: _Doc, key: str, name: str, params_key: str) -> Shape:
    """The model shape at ``key``, whose parameter count (:class:`~kvtier.inputs.models.ModelSpec`) must be the
    probe's own at ``params_key``."""
    cfg = doc.get(key)
    fields = ("layers", "hidden", "heads", "kv_heads", "head_dim", "ffn", "vocab")
    dims = {f: doc.count_field(cfg, f) for f in fields}
    params = doc.count(params_key)
    shape = Shape(name, params=params, **dims)
    count = shape.spec.total_params
    if count != params:
        raise doc.fail(params_key, f"= {params:,} disagrees with the shapes in '{key}' ({count:,} parameters)")
    return shape


def _sweep(doc: _Doc, key: str) -> tuple[Pass, ...]:
    rows = []
    for i, row in enumerate(doc.get(key)):
        shown = f"{key}[{i}]"
        tokens = doc.count_field(row, "tokens")
        rows.append(Pass(tokens, 0, doc.timing_of(row, shown)))
    tokens = [r.tokens for r in rows]
    if tokens != sorted(set(tokens)):
        raise doc.fail(key, "must list each token count once, in increasing order")
    return tuple(rows)


def _positions(doc: _Doc, key: str) -> tuple[Pass, ...]:
    rows = []
    for i, row in enumerate(doc.get(key)):
        shown = f"{key}[{i}]"
        position = doc.count_field(row, "position")
        tokens = doc.count_field(row, "tokens_computed") if "tokens_computed" in row else 16
        rows.append(Pass(tokens, position, doc.timing_of(row, shown)))
    return tuple(rows)


def _measured(key: str, value: float, kind: str, text: str, file: str, field: str, how: str = "") -> Record:
    """A measured record: basis names the file and the field (and how it was taken)."""
    basis = f"{file}: {field}" + (f"; {how}" if how else "")
    return Record(f"measured.{key}", value, kind, text, "measured", basis, f"{CITE} ({DATA_DIR}/{file})")


def _median_note(t: Timing) -> str:
    return f"median of {t.reps} CUDA-event timings (min {t.min_s * 1e3:.4g} ms, max {t.max_s * 1e3:.4g} ms)"


BLOCK_BYTES = 5 * 2**20
"""The measured block (B): 16 tokens of Llama-3-70B's bf16 KV, 5 MiB."""


class _Values(dict[str, Record]):
    """The measured scalars of a set by name, each a record naming its file and field."""

    def put(self, key: str, value: float, kind: str, text: str, file: str, field: str, how: str = "") -> None:
        """Record ``key``: its value (SI), kind, shown text, and the file and field it was read from."""
        self[key] = _measured(key, value, kind, text, file, field, how)


def _copies(p1: _Doc) -> list[Copy]:
    """The contiguous copies of probe1.json, one per (kind, bytes)."""
    copies = []
    for i, row in enumerate(p1.get("copies")):
        shown = f"copies[{i}]"
        kind = row["kind"]
        n_bytes = p1.count_field(row, "bytes")
        copies.append(Copy(kind, n_bytes, p1.timing_of(row, shown)))
    seen = [(c.kind, c.n_bytes) for c in copies]
    if len(set(seen)) != len(seen):
        raise p1.fail("copies", "lists a (kind, bytes) pair twice")

    return copies


def _block(p1: _Doc, p2: _Doc) -> tuple[int, int, dict[str, Timing]]:
    """The paged block's chunks (bytes of one, how many) and its layouts' timings, the same chunks in both files."""
    chunk_bytes = p1.count("block_layouts.chunk_bytes")
    chunks = p1.count("block_layouts.chunks")
    if p2.count("strided_block.chunk_bytes") != chunk_bytes or p2.count("strided_block.chunks") != chunks:
        raise p2.fail("strided_block", "moves chunks of another size or count than probe1.json's block_layouts")
    block = {
        "contiguous": p1.timing("block_layouts.contiguous_h2d"),
        "per_chunk_probe1": p1.timing("block_layouts.per_layer_chunks_h2d"),
        "per_chunk_probe2": p2.timing("strided_block.per_chunk_copies"),
        "strided": p2.timing("strided_block.one_2d_copy"),
    }

    return chunk_bytes, chunks, block


def _attention(p1: _Doc) -> list[tuple[int, int, Timing, Timing]]:
    """One layer's attention by position: position, KV bytes of one layer, masked and unmasked timings."""
    attention = []
    for i, row in enumerate(p1.get("attention_vs_position")):
        shown = f"attention_vs_position[{i}]"
        attention.append(
            (
                p1.count_field(row, "position"),
                p1.count_field(row, "kv_bytes_one_layer"),
                p1.timing_of(row["masked"], f"{shown}.masked"),
                p1.timing_of(row["unmasked"], f"{shown}.unmasked"),
            )
        )
    return attention


def _timing_values(
    values: _Values, p1: _Doc, copies: list[Copy], block: dict[str, Timing], tail16: dict[tuple[str, str], Timing]
) -> None:
    """The 5 MiB block's copies and layouts, and each shape's 16-token passes, as medians of their timings."""
    for kind in ("h2d_pinned", "d2h_pinned", "h2d_pageable"):
        match = [c for c in copies if c.kind == kind and c.n_bytes == BLOCK_BYTES]
        if not match:
            raise p1.fail("copies", f"has no {kind} copy of the 5 MiB block ({BLOCK_BYTES} bytes)")
        t = match[0].timing
        field = f"copies[kind={kind}, bytes={BLOCK_BYTES}].median_s"
        values.put(
            f"fetch_5mib_{kind}",
            t.median_s,
            "time",
            f"{t.median_s * 1e6:.1f} µs",
            "probe1.json",
            field,
            _median_note(t),
        )
    for key, t, file, field in (
        ("block_contiguous", block["contiguous"], "probe1.json", "block_layouts.contiguous_h2d.median_s"),
        (
            "block_per_chunk_probe1",
            block["per_chunk_probe1"],
            "probe1.json",
            "block_layouts.per_layer_chunks_h2d.median_s",
        ),
        ("block_per_chunk_probe2", block["per_chunk_probe2"], "probe2.json", "strided_block.per_chunk_copies.median_s"),
        ("block_strided", block["strided"], "probe2.json", "strided_block.one_2d_copy.median_s"),
    ):
        values.put(key, t.median_s, "time", f"{t.median_s * 1e3:.3f} ms", file, field, _median_note(t))
    for (shape, mode), t in tail16.items():
        file, group, _ = SOURCES[shape]
        values.put(
            f"forward16_{shape}_{mode}",
            t.median_s,
            "time",
            f"{t.median_s * 1e3:.2f} ms",
            file,
            f"{group}.tail16_{mode}.median_s",
            _median_note(t),
        )


def _energy_values(values: _Values, p1: _Doc, p2: _Doc) -> None:
    """The energy and power of each shape's 16-token pass and of the 5 MiB block's fetch, and the idle power."""
    e70 = "regenerate.tail16_energy"
    values.put(
        "energy_forward16_llama-3-70b_j",
        p1.number(f"{e70}.joules_per_forward"),
        "count",
        f"{p1.number(f'{e70}.joules_per_forward'):.1f} J",
        "probe1.json",
        f"{e70}.joules_per_forward",
        "NVML board energy over an eager loop, divided by the passes",
    )
    values.put(
        "power_forward16_llama-3-70b_w",
        p1.number(f"{e70}.mean_watts"),
        "count",
        f"{p1.number(f'{e70}.mean_watts'):.0f} W",
        "probe1.json",
        f"{e70}.mean_watts",
    )
    e8 = "llama3_8b.tail16_graph_energy"
    values.put(
        "energy_forward16_llama-3-8b_j",
        p2.number(f"{e8}.joules_per_forward"),
        "count",
        f"{p2.number(f'{e8}.joules_per_forward'):.2f} J",
        "probe2.json",
        f"{e8}.joules_per_forward",
        "NVML board energy over a CUDA-graph loop, divided by the passes",
    )
    values.put(
        "power_forward16_llama-3-8b_w",
        p2.number(f"{e8}.mean_watts"),
        "count",
        f"{p2.number(f'{e8}.mean_watts'):.0f} W",
        "probe2.json",
        f"{e8}.mean_watts",
    )
    fe = "fetch_energy"
    if p2.count(f"{fe}.bytes") != BLOCK_BYTES:
        raise p2.fail(f"{fe}.bytes", f"must be the 5 MiB block ({BLOCK_BYTES} bytes)")
    values.put(
        "energy_fetch_5mib_j",
        p2.number(f"{fe}.joules_per_copy_board"),
        "count",
        f"{p2.number(f'{fe}.joules_per_copy_board') * 1e3:.1f} mJ",
        "probe2.json",
        f"{fe}.joules_per_copy_board",
        "NVML board energy while copying, static power included, divided by the copies",
    )
    values.put(
        "power_fetch_w",
        p2.number(f"{fe}.mean_watts"),
        "count",
        f"{p2.number(f'{fe}.mean_watts'):.0f} W",
        "probe2.json",
        f"{fe}.mean_watts",
    )
    values.put(
        "power_idle_w",
        p2.number(f"{fe}.idle_watts"),
        "count",
        f"{p2.number(f'{fe}.idle_watts'):.0f} W",
        "probe2.json",
        f"{fe}.idle_watts",
    )


def _device_values(values: _Values, p1: _Doc) -> None:
    """The device's matmul FLOP rate and HBM copy rate."""
    mm = p1.timing("matmul_ceiling")
    n = float(p1.count("matmul_ceiling.n"))
    values.put(
        "matmul_flop_rate",
        2 * n**3 / mm.median_s,
        "flop_rate",
        f"{2 * n**3 / mm.median_s / 1e12:.0f} TFLOP/s",
        "probe1.json",
        "matmul_ceiling.median_s",
        f"2 x {n:.0f}^3 FLOP over the {_median_note(mm)}",
    )
    values["matmul_n"] = _measured("matmul_n", n, "count", f"{n:.0f}", "probe1.json", "matmul_ceiling.n")
    hbm = p1.timing("hbm_copy")
    hbm_bytes = float(p1.count("hbm_copy.bytes"))
    values.put(
        "hbm_copy_rate",
        2 * hbm_bytes / hbm.median_s,
        "bandwidth",
        f"{2 * hbm_bytes / hbm.median_s / 1e12:.2f} TB/s",
        "probe1.json",
        "hbm_copy.median_s",
        f"read plus write of {hbm_bytes / 2**30:.0f} GiB over the {_median_note(hbm)}",
    )


def _host_values(values: _Values, p3: _Doc) -> None:
    """Copies beside a forward pass, copies both ways at once, and copies batched (probe3.json)."""
    ov = "overlap"
    alone = p3.timing(f"{ov}.forward_alone")
    values.put(
        "overlap_forward_alone",
        alone.median_s,
        "time",
        f"{alone.median_s * 1e3:.2f} ms",
        "probe3.json",
        f"{ov}.forward_alone.median_s",
        _median_note(alone),
    )
    runs = p3.get(f"{ov}.with_copies")
    fwd, counts, spans = [], [], []  # per run: the forward pass (s), the copies made and their time (s)
    for r in runs:
        fwd.append(p3.field(r, "forward_s"))
        counts.append(p3.count_field(r, "copies"))
        spans.append(p3.field(r, "copies_s"))
    block_bytes_ov = p3.count(f"{ov}.block_bytes")
    moved = [c * block_bytes_ov / s for c, s in zip(counts, spans, strict=True)]
    values.put(
        "overlap_forward_with_copies",
        float(np.median(fwd)),
        "time",
        f"{np.median(fwd) * 1e3:.2f} ms",
        "probe3.json",
        f"{ov}.with_copies[*].forward_s",
        f"median of {len(fwd)} runs",
    )
    values.put(
        "overlap_copy_rate",
        float(np.median(moved)),
        "bandwidth",
        f"{np.median(moved) / 1e9:.1f} GB/s",
        "probe3.json",
        f"{ov}.with_copies[*]: copies x block_bytes / copies_s",
        f"median of {len(moved)} runs",
    )
    n_copies = float(np.median(counts))
    copies_s = float(np.median(spans))
    values.put(
        "overlap_copies_per_run", n_copies, "count", f"{n_copies:.0f}", "probe3.json", f"{ov}.with_copies[*].copies"
    )
    values.put(
        "overlap_copies_s",
        copies_s,
        "time",
        f"{copies_s * 1e3:.1f} ms",
        "probe3.json",
        f"{ov}.with_copies[*].copies_s",
        "median of the runs",
    )

    bi = "bidirectional"
    each = float(p3.count(f"{bi}.bytes_each"))
    bruns = p3.get(f"{bi}.runs")
    for field in ("h2d_alone_s", "d2h_alone_s", "h2d_together_s", "d2h_together_s"):
        times = [p3.field(r, field) for r in bruns]
        values.put(
            f"bidirectional_{field}",
            float(np.median(times)),
            "time",
            f"{np.median(times) * 1e3:.2f} ms",
            "probe3.json",
            f"{bi}.runs[*].{field}",
            f"median of {len(times)} runs of {each / MIB:.0f} MiB each way",
        )
    values["bidirectional_bytes"] = _measured(
        "bidirectional_bytes", each, "bytes", f"{each / MIB:.0f} MiB", "probe3.json", f"{bi}.bytes_each"
    )

    ba = "batching"
    blocks = float(p3.count(f"{ba}.blocks"))
    for field in ("one_copy", "copy_per_block"):
        t = p3.timing(f"{ba}.{field}")
        values.put(
            f"batching_{field}",
            t.median_s,
            "time",
            f"{t.median_s * 1e3:.2f} ms",
            "probe3.json",
            f"{ba}.{field}.median_s",
            f"{blocks:.0f} blocks of {p3.number(f'{ba}.block_bytes') / MIB:g} MiB; " + _median_note(t),
        )
    values["batching_blocks"] = _measured(
        "batching_blocks", blocks, "count", f"{blocks:.0f}", "probe3.json", f"{ba}.blocks"
    )


def read(directory: str | Path) -> Measurements:
    """Read and check the probe files of a measurement set.

    Parameters
    ----------
    directory : str or Path
        A directory holding ``probe1.json`` to ``probe4.json`` as the shipped set has them.

    Returns
    -------
    Measurements

    Raises
    ------
    KvtierError
        One line naming the file and the key: a file missing or malformed, a field
        missing, not a positive number, timings out of order, a shape whose parameter
        count disagrees with its dimensions, a smoke run or failed sections.
    """
    base = Path(directory)
    name = base.name
    docs = {}
    for file in ("probe1.json", "probe2.json", "probe3.json", "probe4.json"):
        docs[file] = _Doc(base / file, f"{show(base / file)}")
    p1, p2, p3, p4 = (docs[f] for f in ("probe1.json", "probe2.json", "probe3.json", "probe4.json"))

    copies = _copies(p1)
    chunk_bytes, chunks, block = _block(p1, p2)
    shapes = {s: _shape(docs[f], f"{g}.config", s, f"{g}.params") for s, (f, g, _) in SOURCES.items()}
    sweeps = {s: _sweep(docs[f], f"{g}.token_sweep") for s, (f, g, _) in SOURCES.items()}
    modes = ("eager", "graph")
    tail16 = {(s, mode): docs[f].timing(f"{g}.tail16_{mode}") for s, (f, g, _) in SOURCES.items() for mode in modes}
    resident = _positions(p1, "regenerate.interior_resident")
    evicted = _positions(p1, "regenerate.interior_evicted")
    for row in evicted:
        if row.tokens != row.position + 16:
            raise p1.fail("regenerate.interior_evicted", "tokens_computed must be position + 16")
    attention = _attention(p1)
    hf_sweeps = {s: _sweep(p4, f"{hf}.token_sweep") for s, (_, _, hf) in SOURCES.items()}
    for shape, (_, _, hf) in SOURCES.items():
        if p4.count(f"{hf}.params") != shapes[shape].params:
            raise p4.fail(f"{hf}.params", f"disagrees with the {shape} shapes of the plain-PyTorch passes")

    duplex = {}
    for direction in ("h2d", "d2h"):
        times = [p3.field(r, f"{direction}_together_s") for r in p3.get("bidirectional.runs")]
        duplex[f"{direction}_together"] = Timing(float(np.median(times)), min(times), max(times), len(times))
    values = _Values()
    _timing_values(values, p1, copies, block, tail16)
    _energy_values(values, p1, p2)
    _device_values(values, p1)
    _host_values(values, p3)
    return Measurements(
        name=name,
        device=p1.get("environment.device_name"),
        copies=tuple(copies),
        chunk_bytes=chunk_bytes,
        chunks=chunks,
        block=block,
        shapes=shapes,
        sweeps=sweeps,
        tail16=tail16,
        resident=resident,
        evicted=evicted,
        attention=tuple(attention),
        hf_sweeps=hf_sweeps,
        values=values,
        duplex=duplex,
    )


@cache
def load() -> Measurements:
    """The shipped measurement set (:data:`SET_NAME`), read once per process."""
    ref = resources.files("kvtier.data").joinpath("measurements", SET_NAME)
    with resources.as_file(ref) as path:
        return read(path)
