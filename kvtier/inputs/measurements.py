"""Measurements of record: one H200's timings of both sides of the question, read, checked and fitted.

``kvtier/data/measurements/h200-2026-11-30/`` holds real measurements (copies between
host and device by size and layout, Llama-3-70B- and 8B-shaped forward passes by tokens
and position, attention by position, overlap, energy) with the scripts that took them
and their README.  :func:`load` reads the probe files there, checks every field it uses
(a bad or malformed file is one :class:`~kvtier.errors.KvtierError` line naming the file
and the key) and returns them typed, in SI base units; :meth:`Measurements.record` gives
any quoted value as a :class:`~kvtier.inputs.provenance.Record` of class ``measured`` whose
basis names the file and the field.

:func:`fit` fits the package's models to them: the fetch model
``latency + bytes / bandwidth`` (relative least squares), the compute MFU and the
memory efficiency of each model shape, the host's launch floor of an eager pass and the
sharpness of the knee (:func:`kvtier.formulas.roofline.blended_time_s`).  Each fitted value is a
``derived`` record whose basis names the file and the fit.  :func:`forward_model_s`
predicts a forward pass from the fits.

Peers' published predictions of the same passes (``kvtier/data/peer-predictions.yaml``)
are read by :func:`peer_predictions`, as ``derived`` records naming the tool and version;
those the file excludes from comparison (a prediction below :func:`peak_bound_s`, the least
time the H200's datasheet peaks allow) by :func:`peer_exclusions`, with the reason.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from kvtier.errors import KvtierError, show
from kvtier.formulas import costs, roofline, transfer
from kvtier.formulas.fits import fit_floor, fit_latency_bandwidth, fit_pageable, fit_rate_fraction, leave_one_out
from kvtier.inputs.provenance import Record
from kvtier.inputs.readers import load_json, load_yaml
from kvtier.units import MIB

FloatArray = NDArray[np.float64]

SET_NAME = "h200-2026-11-30"
"""The shipped measurement set: a directory under ``kvtier/data/measurements/``."""

CITE = "measured on one H200 SXM, 2026-11-30"
"""How the book cites the shipped set (its README's wording)."""

DATA_DIR = f"kvtier/data/measurements/{SET_NAME}"
"""Where the shipped set lives in the repository, for sources and bases."""

H200_PEAK_FLOP_PER_S = 989e12
"""The H200's dense bf16 peak (FLOP/s), published-spec: MFUs are fitted against it."""

H200_MEM_BANDWIDTH = 4.8e12
"""The H200's HBM3e peak bandwidth (B/s), published-spec: memory efficiencies are fitted against it."""

FETCH_FIT_MIN_BYTES = MIB
"""Smallest copy in the fetch fit (B): below about 1 MiB a copy has a floor of 14-25 µs that
``latency + bytes / bandwidth`` does not describe (the page shows those residuals too)."""

HOST_CACHE_BYTES = 128 * MIB
"""The host CPU's last-level cache (B), ``fetch.host_cache``: assumed, not published and not fitted.

The probes record no host CPU (a virtualized host; ``nvidia-smi -q`` and the logs name none).  The
pageable copies bracket it: one buffer copied again and again reaches about 15 GB/s up to 64 MiB and
about 9 GB/s from 256 MiB, so the cache lies between; 128 MiB is the geometric middle.  Any value in
that bracket gives the same fit, and a refit cannot place it (without the 256 MiB copy the bracket
would reach 1 GiB)."""

COMPUTE_FIT_MIN_TOKENS = 1024
"""Tokens per pass from which a pass counts as compute-bound in the MFU fit (both shapes)."""

SLOPE_TOKENS = (1024, 2048, 4096)
"""The 70B sweep points whose least-squares line gives the marginal cost of a token inside a batch."""

SOURCES = {
    "llama-3-70b": ("probe1.json", "regenerate", "hf_llama3_70b"),
    "llama-3-8b": ("probe2.json", "llama3_8b", "hf_llama3_8b"),
}
"""Where each shape's passes are: its probe file and group there, and its transformers group in probe4.json."""

SHAPES = tuple(SOURCES)
"""The two model shapes measured, by the preset names of their configs."""

BLEND_GRID = np.round(np.arange(1.0, 12.0001, 0.05), 2)
"""Candidate sharpness exponents of the knee (dimensionless)."""


# ---------------------------------------------------------------------------
# typed values
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Timing:
    """Timings of one call repeated ``reps`` times (s): median, fastest and slowest."""

    median_s: float
    min_s: float
    max_s: float
    reps: int


@dataclass(frozen=True)
class Shape:
    """A decoder's shapes as the probe built it (random bf16 weights, untied embeddings)."""

    name: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    vocab: int
    params: int

    @property
    def weight_bytes(self) -> float:
        """Bytes of the bf16 weights (B)."""
        return 2.0 * self.params

    @property
    def kv_bytes_per_token(self) -> float:
        """bf16 K and V bytes per token over all layers (B)."""
        return 2.0 * self.layers * self.kv_heads * self.head_dim * 2

    @property
    def attention_flops_per_position(self) -> float:
        """Attention-score FLOPs per token per position attended: ``2 x layers x heads x 2 x head_dim``."""
        return 2.0 * self.layers * self.heads * 2 * self.head_dim

    def flops(self, tokens: ArrayLike, position: ArrayLike = 0, logits_tokens: ArrayLike | None = None) -> FloatArray:
        """FLOPs of a pass over ``tokens`` tokens from ``position`` (FLOP): ``2 N n`` plus attention.

        ``logits_tokens`` tokens get logits (all of them by default, the ``2 N`` convention);
        each token without them saves ``2 x vocab x hidden``.
        """
        n = np.asarray(tokens, dtype=np.float64)
        out = costs.forward_flops(n, self.params) + costs.attention_flops(
            n, position, self.attention_flops_per_position
        )
        if logits_tokens is not None:
            out = out - 2.0 * self.vocab * self.hidden * (n - np.asarray(logits_tokens, dtype=np.float64))
        return out


@dataclass(frozen=True)
class Copy:
    """One copy size and direction: ``kind`` is h2d_pinned, d2h_pinned, h2d_pageable or d2d."""

    kind: str
    n_bytes: int
    timing: Timing


@dataclass(frozen=True)
class Pass:
    """One forward pass measured: tokens, position of the first one, and its timing."""

    tokens: int
    position: int
    timing: Timing


@dataclass(frozen=True)
class Measurements:
    """Every measured value the book uses, in SI base units, from one measurement set.

    Attributes
    ----------
    name : str
        The set's directory name (``h200-2026-11-30``).
    device : str
        The device name the probe read (``NVIDIA H200``).
    copies : tuple of Copy
        Contiguous copies by direction and size (probe1).
    chunk_bytes, chunks : int
        A paged block's per-layer chunks: bytes of one and how many (probe1).
    block : dict of str to Timing
        The 5 MiB block moved as ``contiguous`` (probe1), ``per_chunk_probe1``,
        ``per_chunk_probe2`` (one copy per chunk) and ``strided`` (one 2-D copy, probe2).
    shapes : dict of str to Shape
        The two model shapes by :data:`SHAPES` name.
    sweeps : dict of str to tuple of Pass
        Eager forward passes by tokens, per shape (probe1, probe2).
    tail16 : dict of (str, str) to Timing
        The 16-token pass per (shape, ``eager``/``graph``).
    resident, evicted : tuple of Pass
        70B 16-token block at a position with the upstream KV resident; with it evicted
        (a prefill of ``position + 16`` tokens, logits for the last only).
    attention : tuple of tuple
        ``(position, kv_bytes_one_layer, masked, unmasked)``: one layer's attention of 16
        queries over ``position + 16`` keys.
    hf_sweeps : dict of str to tuple of Pass
        The cross-check through transformers' ``LlamaForCausalLM`` (probe4).
    values : dict of str to Record
        Every other scalar, by name (see :meth:`record`).
    """

    name: str
    device: str
    copies: tuple[Copy, ...]
    chunk_bytes: int
    chunks: int
    block: dict[str, Timing]
    shapes: dict[str, Shape]
    sweeps: dict[str, tuple[Pass, ...]]
    tail16: dict[tuple[str, str], Timing]
    resident: tuple[Pass, ...]
    evicted: tuple[Pass, ...]
    attention: tuple[tuple[int, int, Timing, Timing], ...]
    hf_sweeps: dict[str, tuple[Pass, ...]]
    values: dict[str, Record]

    def record(self, key: str) -> Record:
        """The measured scalar ``key`` with its provenance (``measured``, basis naming file and field)."""
        try:
            return self.values[key]
        except KeyError:
            raise KvtierError(f"no measured value '{key}'; known: {', '.join(sorted(self.values))}") from None

    def v(self, key: str) -> float:
        """The value of :meth:`record` ``key`` in SI base units."""
        return float(self.record(key).value)  # type: ignore[arg-type]

    def copy(self, kind: str, n_bytes: int) -> Copy:
        """The copy of ``kind`` and size ``n_bytes``."""
        for c in self.copies:
            if c.kind == kind and c.n_bytes == n_bytes:
                return c
        raise KvtierError(f"no measured {kind} copy of {n_bytes} bytes in the set {self.name}")

    def copies_of(self, kind: str) -> tuple[Copy, ...]:
        """The copies of one ``kind``, smallest first."""
        return tuple(sorted((c for c in self.copies if c.kind == kind), key=lambda c: c.n_bytes))


# ---------------------------------------------------------------------------
# reading and checking
# ---------------------------------------------------------------------------


class _Doc:
    """One probe file: typed access to its fields, each failure one line naming file and key."""

    def __init__(self, path: Path, label: str):
        self.path, self.label = path, label
        self.data = load_json(path, "measurement file")  # its messages name show(path), our label
        if not isinstance(self.data, dict):
            raise KvtierError(f"{label}: expected a JSON object at the top level")

    def fail(self, key: str, problem: str) -> KvtierError:
        return KvtierError(f"{self.label}: key '{key}' {problem}")

    def get(self, key: str) -> Any:
        """The field at dotted ``key`` (``regenerate.tail16_graph``)."""
        node = self.data
        for part in key.split("."):
            if not isinstance(node, dict) or part not in node:
                raise self.fail(key, "is missing")
            node = node[part]
        return node

    def _positive(self, value: Any, shown: str, integer: bool) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
            raise self.fail(shown, f"must be a positive number, got {show(value, quote=True)}")
        if integer and not float(value).is_integer():
            raise self.fail(shown, f"must be a whole number, got {show(value, quote=True)}")
        return float(value)

    def number(self, key: str) -> float:
        """A positive number at dotted ``key``."""
        return self._positive(self.get(key), key, False)

    def count(self, key: str) -> int:
        """A positive whole number at dotted ``key``."""
        return int(self._positive(self.get(key), key, True))

    def child(self, node: Any, key: str, shown: str) -> Any:
        """``node[key]``; ``shown`` names ``node`` in the file for messages."""
        if not isinstance(node, dict) or key not in node:
            raise self.fail(f"{shown}.{key}", "is missing")
        return node[key]

    def field(self, node: Any, key: str, shown: str) -> float:
        """A positive number ``node[key]``; ``shown`` names ``node`` in the file for messages."""
        return self._positive(self.child(node, key, shown), f"{shown}.{key}", False)

    def count_field(self, node: Any, key: str, shown: str) -> int:
        """A positive whole number ``node[key]``; ``shown`` names ``node`` in the file for messages."""
        return int(self._positive(self.child(node, key, shown), f"{shown}.{key}", True))

    def items(self, key: str) -> list[Any]:
        """A non-empty list at dotted ``key``."""
        value = self.get(key)
        if not isinstance(value, list) or not value:
            raise self.fail(key, "must be a non-empty list")
        return value

    def timing_of(self, node: Any, shown: str) -> Timing:
        """A timing ``{median_s, min_s, max_s, reps}`` with min <= median <= max; ``shown`` names it."""
        median, low, high = (self.field(node, f, shown) for f in ("median_s", "min_s", "max_s"))
        reps = self.count_field(node, "reps", shown)
        if not low <= median <= high:
            raise self.fail(shown, f"has min_s <= median_s <= max_s out of order ({low:g}, {median:g}, {high:g})")
        return Timing(median, low, high, reps)

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
    cfg = doc.get(key)
    fields = ("layers", "hidden", "heads", "kv_heads", "head_dim", "ffn", "vocab")
    dims = {f: doc.count_field(cfg, f, key) for f in fields}
    params = doc.count(params_key)
    h, q, kv = dims["hidden"], dims["heads"] * dims["head_dim"], dims["kv_heads"] * dims["head_dim"]
    per_layer = h * q + 2 * h * kv + q * h + 3 * h * dims["ffn"] + 2 * h
    count = dims["layers"] * per_layer + 2 * dims["vocab"] * h + h
    if count != params:
        raise doc.fail(params_key, f"= {params:,} disagrees with the shapes in '{key}' ({count:,} parameters)")
    return Shape(name, params=params, **dims)


def _sweep(doc: _Doc, key: str) -> tuple[Pass, ...]:
    rows = []
    for i, row in enumerate(doc.items(key)):
        shown = f"{key}[{i}]"
        tokens = doc.count_field(row, "tokens", shown)
        rows.append(Pass(tokens, 0, doc.timing_of(row, shown)))
    tokens = [r.tokens for r in rows]
    if tokens != sorted(set(tokens)):
        raise doc.fail(key, "must list each token count once, in increasing order")
    return tuple(rows)


def _positions(doc: _Doc, key: str) -> tuple[Pass, ...]:
    rows = []
    for i, row in enumerate(doc.items(key)):
        shown = f"{key}[{i}]"
        position = doc.count_field(row, "position", shown)
        tokens = doc.count_field(row, "tokens_computed", shown) if "tokens_computed" in row else 16
        rows.append(Pass(tokens, position, doc.timing_of(row, shown)))
    return tuple(rows)


def _measured(key: str, value: float, kind: str, text: str, file: str, field: str, how: str = "") -> Record:
    """A measured record: basis names the file and the field (and how it was taken)."""
    basis = f"{file}: {field}" + (f"; {how}" if how else "")
    return Record(f"measured.{key}", value, kind, text, "measured", basis, f"{CITE} ({DATA_DIR}/{file})")


def _median_note(t: Timing) -> str:
    return f"median of {t.reps} CUDA-event timings (min {t.min_s * 1e3:.4g} ms, max {t.max_s * 1e3:.4g} ms)"


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
        doc = _Doc(base / file, f"{show(base / file)}")
        doc.clean()
        docs[file] = doc
    p1, p2, p3, p4 = (docs[f] for f in ("probe1.json", "probe2.json", "probe3.json", "probe4.json"))

    copies = []
    kinds = ("h2d_pinned", "d2h_pinned", "h2d_pageable", "d2d")
    for i, row in enumerate(p1.items("copies")):
        shown = f"copies[{i}]"
        kind = row.get("kind") if isinstance(row, dict) else None
        if kind not in kinds:
            raise p1.fail(f"{shown}.kind", f"must be one of {', '.join(kinds)}, got {show(kind, quote=True)}")
        n_bytes = p1.count_field(row, "bytes", shown)
        copies.append(Copy(kind, n_bytes, p1.timing_of(row, shown)))
    seen = [(c.kind, c.n_bytes) for c in copies]
    if len(set(seen)) != len(seen):
        raise p1.fail("copies", "lists a (kind, bytes) pair twice")

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

    shapes = {s: _shape(docs[f], f"{g}.config", s, f"{g}.params") for s, (f, g, _) in SOURCES.items()}
    sweeps = {s: _sweep(docs[f], f"{g}.token_sweep") for s, (f, g, _) in SOURCES.items()}
    modes = ("eager", "graph")
    tail16 = {(s, mode): docs[f].timing(f"{g}.tail16_{mode}") for s, (f, g, _) in SOURCES.items() for mode in modes}
    resident = _positions(p1, "regenerate.interior_resident")
    evicted = _positions(p1, "regenerate.interior_evicted")
    for row in evicted:
        if row.tokens != row.position + 16:
            raise p1.fail("regenerate.interior_evicted", "tokens_computed must be position + 16")
    attention = []
    for i, row in enumerate(p1.items("attention_vs_position")):
        shown = f"attention_vs_position[{i}]"
        attention.append(
            (
                p1.count_field(row, "position", shown),
                p1.count_field(row, "kv_bytes_one_layer", shown),
                p1.timing_of(p1.child(row, "masked", shown), f"{shown}.masked"),
                p1.timing_of(p1.child(row, "unmasked", shown), f"{shown}.unmasked"),
            )
        )
    hf_sweeps = {s: _sweep(p4, f"{hf}.token_sweep") for s, (_, _, hf) in SOURCES.items()}
    for shape, (_, _, hf) in SOURCES.items():
        if p4.count(f"{hf}.params") != shapes[shape].params:
            raise p4.fail(f"{hf}.params", f"disagrees with the {shape} shapes of the plain-PyTorch passes")

    values: dict[str, Record] = {}

    def put(key: str, value: float, kind: str, text: str, file: str, field: str, how: str = "") -> None:
        values[key] = _measured(key, value, kind, text, file, field, how)

    block_bytes = 5 * 2**20
    for kind in ("h2d_pinned", "d2h_pinned", "h2d_pageable"):
        match = [c for c in copies if c.kind == kind and c.n_bytes == block_bytes]
        if not match:
            raise p1.fail("copies", f"has no {kind} copy of the 5 MiB block ({block_bytes} bytes)")
        t = match[0].timing
        field = f"copies[kind={kind}, bytes={block_bytes}].median_s"
        put(
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
        put(key, t.median_s, "time", f"{t.median_s * 1e3:.3f} ms", file, field, _median_note(t))
    for (shape, mode), t in tail16.items():
        file, group, _ = SOURCES[shape]
        put(
            f"forward16_{shape}_{mode}",
            t.median_s,
            "time",
            f"{t.median_s * 1e3:.2f} ms",
            file,
            f"{group}.tail16_{mode}.median_s",
            _median_note(t),
        )

    e70 = "regenerate.tail16_energy"
    put(
        "energy_forward16_llama-3-70b_j",
        p1.number(f"{e70}.joules_per_forward"),
        "count",
        f"{p1.number(f'{e70}.joules_per_forward'):.1f} J",
        "probe1.json",
        f"{e70}.joules_per_forward",
        "NVML board energy over an eager loop, divided by the passes",
    )
    put(
        "power_forward16_llama-3-70b_w",
        p1.number(f"{e70}.mean_watts"),
        "count",
        f"{p1.number(f'{e70}.mean_watts'):.0f} W",
        "probe1.json",
        f"{e70}.mean_watts",
    )
    e8 = "llama3_8b.tail16_graph_energy"
    put(
        "energy_forward16_llama-3-8b_j",
        p2.number(f"{e8}.joules_per_forward"),
        "count",
        f"{p2.number(f'{e8}.joules_per_forward'):.2f} J",
        "probe2.json",
        f"{e8}.joules_per_forward",
        "NVML board energy over a CUDA-graph loop, divided by the passes",
    )
    put(
        "power_forward16_llama-3-8b_w",
        p2.number(f"{e8}.mean_watts"),
        "count",
        f"{p2.number(f'{e8}.mean_watts'):.0f} W",
        "probe2.json",
        f"{e8}.mean_watts",
    )
    fe = "fetch_energy"
    if p2.count(f"{fe}.bytes") != block_bytes:
        raise p2.fail(f"{fe}.bytes", f"must be the 5 MiB block ({block_bytes} bytes)")
    put(
        "energy_fetch_5mib_j",
        p2.number(f"{fe}.joules_per_copy_board"),
        "count",
        f"{p2.number(f'{fe}.joules_per_copy_board') * 1e3:.1f} mJ",
        "probe2.json",
        f"{fe}.joules_per_copy_board",
        "NVML board energy while copying, static power included, divided by the copies",
    )
    put(
        "power_fetch_w",
        p2.number(f"{fe}.mean_watts"),
        "count",
        f"{p2.number(f'{fe}.mean_watts'):.0f} W",
        "probe2.json",
        f"{fe}.mean_watts",
    )
    put(
        "power_idle_w",
        p2.number(f"{fe}.idle_watts"),
        "count",
        f"{p2.number(f'{fe}.idle_watts'):.0f} W",
        "probe2.json",
        f"{fe}.idle_watts",
    )

    mm = p1.timing("matmul_ceiling")
    n = float(p1.count("matmul_ceiling.n"))
    put(
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
    put(
        "hbm_copy_rate",
        2 * hbm_bytes / hbm.median_s,
        "bandwidth",
        f"{2 * hbm_bytes / hbm.median_s / 1e12:.2f} TB/s",
        "probe1.json",
        "hbm_copy.median_s",
        f"read plus write of {hbm_bytes / 2**30:.0f} GiB over the {_median_note(hbm)}",
    )

    ov = "overlap"
    alone = p3.timing(f"{ov}.forward_alone")
    put(
        "overlap_forward_alone",
        alone.median_s,
        "time",
        f"{alone.median_s * 1e3:.2f} ms",
        "probe3.json",
        f"{ov}.forward_alone.median_s",
        _median_note(alone),
    )
    runs = p3.items(f"{ov}.with_copies")
    fwd, counts, spans = [], [], []  # per run: the forward pass (s), the copies made and their time (s)
    for i, r in enumerate(runs):
        fwd.append(p3.field(r, "forward_s", f"{ov}.with_copies[{i}]"))
        counts.append(p3.count_field(r, "copies", f"{ov}.with_copies[{i}]"))
        spans.append(p3.field(r, "copies_s", f"{ov}.with_copies[{i}]"))
    block_bytes_ov = p3.count(f"{ov}.block_bytes")
    moved = [c * block_bytes_ov / s for c, s in zip(counts, spans, strict=True)]
    put(
        "overlap_forward_with_copies",
        float(np.median(fwd)),
        "time",
        f"{np.median(fwd) * 1e3:.2f} ms",
        "probe3.json",
        f"{ov}.with_copies[*].forward_s",
        f"median of {len(fwd)} runs",
    )
    put(
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
    put("overlap_copies_per_run", n_copies, "count", f"{n_copies:.0f}", "probe3.json", f"{ov}.with_copies[*].copies")
    put(
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
    bruns = p3.items(f"{bi}.runs")
    for field in ("h2d_alone_s", "d2h_alone_s", "h2d_together_s", "d2h_together_s"):
        times = [p3.field(r, field, f"{bi}.runs[{i}]") for i, r in enumerate(bruns)]
        put(
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
        put(
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

    device = p1.get("environment.device_name")
    if not isinstance(device, str) or not device:
        raise p1.fail("environment.device_name", "must be a non-empty string")
    return Measurements(
        name=name,
        device=device,
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
    )


@cache
def load() -> Measurements:
    """The shipped measurement set (:data:`SET_NAME`), read once per process."""
    ref = resources.files("kvtier.data").joinpath("measurements", SET_NAME)
    with resources.as_file(ref) as path:
        return read(path)


# ---------------------------------------------------------------------------
# fits
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Fits:
    """The models fitted to a measurement set; :attr:`records` holds each value with its basis.

    Attributes
    ----------
    fetch : dict of str to tuple of float
        ``(latency_s, bandwidth_bytes_per_s)`` per copy kind (``h2d_pinned``, ``d2h_pinned``).
    mfu, mem_efficiency, eager_floor_s : dict of str to float
        Per shape: the compute MFU of :data:`H200_PEAK_FLOP_PER_S`, the memory efficiency of
        :data:`H200_MEM_BANDWIDTH` (from the CUDA-graph pass) and the eager pass's floor (s).
    sharpness : float
        The knee's exponent in :func:`kvtier.formulas.roofline.blended_time_s`.
    slope_s_per_token : float
        Marginal time of one more token inside a compute-bound 70B pass (s).
    records : dict of str to Record
        Every fitted value as a ``derived`` record.
    """

    fetch: dict[str, tuple[float, float]]
    mfu: dict[str, float]
    mem_efficiency: dict[str, float]
    eager_floor_s: dict[str, float]
    sharpness: float
    slope_s_per_token: float
    records: dict[str, Record]


def _derived(key: str, value: float, kind: str, text: str, basis: str, file: str) -> Record:
    # the source names the module by its name before the folders (kvtier.measurements, issue 23): the
    # committed tables of record and data/h200-measured.yaml quote it, and they stay byte-identical
    return Record(
        f"fit.{key}", value, kind, text, "derived", basis, f"fitted by kvtier.measurements to {DATA_DIR}/{file}"
    )


def fit(m: Measurements) -> Fits:
    """Fit the fetch and forward-pass models to the measurements ``m``.

    - **Fetch**: :func:`fit_latency_bandwidth` over the pinned copies of at least
      :data:`FETCH_FIT_MIN_BYTES`, per direction.
    - **MFU**: :func:`fit_rate_fraction` of the pass's FLOPs (parameters and attention,
      :meth:`Shape.flops`) over the eager sweep points of at least
      :data:`COMPUTE_FIT_MIN_TOKENS` tokens, per shape.
    - **Memory efficiency**: the weight and KV bytes of the 16-token CUDA-graph pass over
      its time, per shape: the one measured pass that streams the weights with no
      launch overhead.  (The eager sweep's flat start is the host launching kernels,
      slower than the weight stream: fitted as the eager floor instead.)
    - **Eager floor and knee**: the sharpness ``p`` on :data:`BLEND_GRID` and, for each
      ``p``, each shape's floor minimising the squared log residuals of
      ``blended_time_s(compute, max(memory, floor), p)`` over its eager sweep; the ``p``
      with the least total.
    - **Marginal token**: the least-squares slope of the 70B sweep over :data:`SLOPE_TOKENS`.
    """
    records: dict[str, Record] = {}
    fetch: dict[str, tuple[float, float]] = {}
    for kind in ("h2d_pinned", "d2h_pinned"):
        pts = [c for c in m.copies_of(kind) if c.n_bytes >= FETCH_FIT_MIN_BYTES]
        latency, bw = fit_latency_bandwidth([c.n_bytes for c in pts], [c.timing.median_s for c in pts])
        fetch[kind] = (latency, bw)
        how = (
            f"relative least squares of t = latency + bytes / bandwidth over the {len(pts)} {kind} copies of"
            f" {pts[0].n_bytes / MIB:g} MiB to {pts[-1].n_bytes / 2**30:g} GiB (probe1.json copies[*].median_s)"
        )
        records[f"{kind}_latency"] = _derived(
            f"{kind}_latency", latency, "time", f"{latency * 1e6:.2f} µs", how, "probe1.json"
        )
        records[f"{kind}_bandwidth"] = _derived(
            f"{kind}_bandwidth", bw, "bandwidth", f"{bw / 1e9:.2f} GB/s", how, "probe1.json"
        )

    mfu: dict[str, float] = {}
    eff: dict[str, float] = {}
    compute_at_1: dict[str, FloatArray] = {}
    memory: dict[str, FloatArray] = {}
    times: dict[str, FloatArray] = {}
    for shape_name in SHAPES:
        shape, sweep = m.shapes[shape_name], m.sweeps[shape_name]
        file, group, _ = SOURCES[shape_name]
        tokens = np.array([p.tokens for p in sweep], dtype=np.float64)
        t = np.array([p.timing.median_s for p in sweep])
        flops = shape.flops(tokens)
        bound = tokens >= COMPUTE_FIT_MIN_TOKENS
        mfu[shape_name] = fit_rate_fraction(flops[bound], t[bound], H200_PEAK_FLOP_PER_S)
        graph = m.tail16[(shape_name, "graph")].median_s
        bytes16 = shape.weight_bytes + shape.kv_bytes_per_token * 16
        eff[shape_name] = fit_rate_fraction(bytes16, graph, H200_MEM_BANDWIDTH)
        compute_at_1[shape_name], memory[shape_name] = _sides(shape, mfu[shape_name], eff[shape_name], tokens)
        times[shape_name] = t
        used = ", ".join(f"{n:,.0f}" for n in tokens[bound])
        records[f"mfu_{shape_name}"] = _derived(
            f"mfu_{shape_name}",
            mfu[shape_name],
            "fraction",
            f"{mfu[shape_name] * 100:.1f}%",
            f"least squares on log time of FLOPs / (989 TFLOP/s x MFU) over the eager {shape_name} passes of {used}"
            f" tokens ({group}.token_sweep[*].median_s; FLOPs = 2 N n plus attention)",
            file,
        )
        records[f"mem_efficiency_{shape_name}"] = _derived(
            f"mem_efficiency_{shape_name}",
            eff[shape_name],
            "fraction",
            f"{eff[shape_name] * 100:.1f}%",
            f"the 16-token pass's weight and KV bytes over its CUDA-graph time, as a fraction of 4.8 TB/s"
            f" ({group}.tail16_graph.median_s)",
            file,
        )

    per_p = [
        {s: fit_floor(compute_at_1[s], memory[s], times[s], p) for s in SHAPES} for p in BLEND_GRID
    ]  # per p, per shape: (floor, cost)
    best = int(np.argmin([sum(cost for _, cost in fitted.values()) for fitted in per_p]))  # ties: the smaller p
    sharpness = float(BLEND_GRID[best])
    floors = {s: floor for s, (floor, _) in per_p[best].items()}
    how = (
        "least squares on log time of blended_time_s(compute, max(memory, floor), p) over the eager sweeps of both"
        " shapes (probe1.json regenerate.token_sweep, probe2.json llama3_8b.token_sweep): p on a grid of"
        f" {BLEND_GRID[0]:g} to {BLEND_GRID[-1]:g} in steps of 0.05, one floor per shape"
    )
    records["sharpness"] = _derived("sharpness", sharpness, "count", f"{sharpness:g}", how, "probe1.json, probe2.json")
    for shape_name in SHAPES:
        records[f"eager_floor_{shape_name}"] = _derived(
            f"eager_floor_{shape_name}",
            floors[shape_name],
            "time",
            f"{floors[shape_name] * 1e3:.1f} ms",
            how + f"; {floors[shape_name] / m.shapes[shape_name].layers * 1e3:.2f} ms per layer",
            SOURCES[shape_name][0],
        )

    sweep70 = {p.tokens: p.timing.median_s for p in m.sweeps["llama-3-70b"]}
    missing = [n for n in SLOPE_TOKENS if n not in sweep70]
    if missing:
        raise KvtierError(f"{m.name}/probe1.json: key 'regenerate.token_sweep' has no pass of {missing[0]} tokens")
    slope, _ = np.polyfit(SLOPE_TOKENS, [sweep70[n] for n in SLOPE_TOKENS], 1)
    records["slope_s_per_token"] = _derived(
        "slope_s_per_token",
        float(slope),
        "time",
        f"{slope * 1e6:.1f} µs",
        "least-squares slope of time against tokens over the eager llama-3-70b passes of "
        + ", ".join(f"{n:,}" for n in SLOPE_TOKENS)
        + " tokens (regenerate.token_sweep[*].median_s): the marginal time of one more token in a compute-bound pass",
        "probe1.json",
    )
    return Fits(fetch, mfu, eff, floors, sharpness, float(slope), records)


@cache
def shipped_fits() -> Fits:
    """:func:`fit` of the shipped set, computed once per process."""
    return fit(load())


def _sides(
    shape: Shape,
    mfu: float,
    mem_efficiency: float,
    tokens: FloatArray,
    position: ArrayLike = 0,
    logits_tokens: ArrayLike | None = None,
) -> tuple[FloatArray, FloatArray]:
    """A pass's compute time, its FLOPs at ``mfu`` of the H200's peak, and its memory time, the weights and the
    KV of every position read at ``mem_efficiency`` of its bandwidth (s, s)."""
    compute = shape.flops(tokens, position, logits_tokens) / (H200_PEAK_FLOP_PER_S * mfu)
    memory = (shape.weight_bytes + shape.kv_bytes_per_token * (tokens + position)) / (
        H200_MEM_BANDWIDTH * mem_efficiency
    )
    return compute, memory


def forward_model_s(
    m: Measurements,
    fits: Fits,
    shape_name: str,
    tokens: ArrayLike,
    mode: str,
    position: ArrayLike = 0,
    logits_tokens: ArrayLike | None = None,
) -> dict[str, FloatArray]:
    """The fitted models of a forward pass on the measured H200 (s).

    Parameters
    ----------
    m, fits : Measurements, Fits
        The measurements and their fits.
    shape_name : str
        One of :data:`SHAPES`.
    tokens : array_like
        Tokens in the pass (tokens).
    mode : {"eager", "graph"}
        Eager passes have the fitted launch floor; a CUDA graph has none.
    position : array_like
        Position of the pass's first token: cached KV read and attended (tokens).
    logits_tokens : array_like, optional
        Tokens that get logits (all by default).

    Returns
    -------
    dict of str to ndarray
        ``compute`` (FLOPs at the fitted MFU), ``memory`` (weights and KV at the fitted
        efficiency), ``floor`` (the larger of memory and, eager, the launch floor),
        ``roofline`` (the plain maximum of compute and floor) and ``blended``
        (:func:`kvtier.formulas.roofline.blended_time_s`, the package's model).
    """
    if mode not in ("eager", "graph"):
        raise KvtierError(f"mode must be 'eager' or 'graph', got {show(mode, quote=True)}")
    compute, memory = _sides(
        m.shapes[shape_name],
        fits.mfu[shape_name],
        fits.mem_efficiency[shape_name],
        np.asarray(tokens, dtype=np.float64),
        np.asarray(position, dtype=np.float64),
        logits_tokens,
    )
    floor = np.maximum(memory, fits.eager_floor_s[shape_name]) if mode == "eager" else memory
    return {
        "compute": compute,
        "memory": memory,
        "floor": floor,
        "roofline": np.maximum(compute, floor),
        "blended": roofline.blended_time_s(compute, floor, fits.sharpness),
    }


def knee_tokens(m: Measurements, fits: Fits, shape_name: str, mode: str) -> float:
    """Tokens per pass at which the fitted compute time equals the floor (tokens): the knee.

    Solved by bisection on ``log(tokens)`` between 1 and 2**20 tokens; below the knee a
    pass costs its floor (the weight stream, or in eager mode the launch floor), above it
    its FLOPs.
    """
    low, high = 0.0, 20.0 * math.log(2.0)
    for _ in range(100):
        mid = 0.5 * (low + high)
        sides = forward_model_s(m, fits, shape_name, math.exp(mid), mode)
        if float(sides["compute"]) < float(sides["floor"]):
            low = mid
        else:
            high = mid
    return math.exp(0.5 * (low + high))


def energy_check(m: Measurements) -> dict[str, float]:
    """The lone-block energy model, a pass's time times one board power, against the measured energies (SI units).

    The model charges every lone block the mean board power of the 70B eager loop
    (``power_forward16_llama-3-70b_w``).  Set against that loop's own energy per pass it is
    a consistency check, not a validation: the power is that loop's energy over its
    duration, so only the time per pass can differ.  The held-out check charges the same
    power to the 8B CUDA-graph pass, whose energy was measured in a loop of its own.

    Returns
    -------
    dict of str to float
        ``power_w`` (the 70B loop's power, W); ``in_sample_j`` (it times the 70B eager pass's
        median time, J), ``in_sample_measured_j``, ``in_sample_error_pct``; ``held_out_j`` (it
        times the 8B CUDA-graph pass's median time, J), ``held_out_measured_j``,
        ``held_out_error_pct`` (percent; negative: the model is short) and
        ``held_out_power_w``, the mean power of the 8B pass's own loop (W).
    """
    power = m.v("power_forward16_llama-3-70b_w")
    in_sample = power * m.v("forward16_llama-3-70b_eager")
    held_out = power * m.v("forward16_llama-3-8b_graph")
    e70, e8 = m.v("energy_forward16_llama-3-70b_j"), m.v("energy_forward16_llama-3-8b_j")
    return {
        "power_w": power,
        "in_sample_j": in_sample,
        "in_sample_measured_j": e70,
        "in_sample_error_pct": (in_sample / e70 - 1.0) * 100.0,
        "held_out_j": held_out,
        "held_out_measured_j": e8,
        "held_out_error_pct": (held_out / e8 - 1.0) * 100.0,
        "held_out_power_w": m.v("power_forward16_llama-3-8b_w"),
    }


# ---------------------------------------------------------------------------
# peers' published predictions
# ---------------------------------------------------------------------------

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


def _read_peers(path: Path) -> tuple[tuple[str, str, str, int, Record], ...]:
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


# ---------------------------------------------------------------------------
# the package's one forward-pass model, fitted on one shape and validated out of sample (issue 28)
# ---------------------------------------------------------------------------

FIT_SHAPE = "llama-3-70b"
"""The shape the transferable model is fitted on; the other shape is held out entirely."""

HELD_OUT_SHAPE = "llama-3-8b"
"""The shape no fitted value of :class:`ForwardFit` sees: its passes test whether the model transfers."""


@dataclass(frozen=True)
class ForwardFit:
    """The values of :func:`kvtier.formulas.roofline.forward_pass_time_s` fitted to one shape (SI units).

    Each is the value of one ``regen.*`` assumption key of ``h200-measured.yaml``.

    Attributes
    ----------
    mfu : float
        ``mfu.typical``: the compute side's fraction of the 989 TFLOP/s peak.
    mem_efficiency : float
        ``regen.mem_efficiency``: the rate of a long stream, the bare HBM copy's over 4.8 TB/s.
    mem_overhead_per_layer_s : float
        ``regen.mem_overhead_per_layer``: what a CUDA-graph pass takes beyond that stream, per layer (s).
    launch_floor_per_layer_s : float
        ``regen.launch_floor_per_layer``: an eager pass's launch floor per layer (s).
    sharpness : float
        ``regen.knee_sharpness``: the knee's exponent.
    attention_fixed_per_layer_s, attention_efficiency : float
        ``regen.attention_fixed_per_layer`` (s) and ``regen.attention_efficiency`` (fraction of
        4.8 TB/s): one layer's attention over cached positions, ``fixed + KV bytes / rate``.
    """

    mfu: float
    mem_efficiency: float
    mem_overhead_per_layer_s: float
    launch_floor_per_layer_s: float
    sharpness: float
    attention_fixed_per_layer_s: float
    attention_efficiency: float


def fit_forward(
    m: Measurements, shape_name: str = FIT_SHAPE, drop: frozenset[tuple[str, int]] = frozenset()
) -> ForwardFit:
    """Fit the package's forward-pass model to one shape's passes, leaving out the points ``drop`` names.

    - **Stream efficiency**: the bare HBM copy's read plus write rate over 4.8 TB/s (``hbm_copy_rate``),
      no forward pass.
    - **Memory overhead per layer**: the shape's 16-token CUDA-graph pass less its weights at that
      rate, over its layers.
    - **MFU**: :func:`fit_rate_fraction` over its eager passes of at least :data:`COMPUTE_FIT_MIN_TOKENS`.
    - **Launch floor and knee**: ``p`` on :data:`BLEND_GRID` and for each the floor of
      :func:`fit_floor`; the ``p`` with the least squared log residuals over the eager sweep.
    - **Attention**: :func:`fit_latency_bandwidth` over one layer's masked attention of 16 queries
      against the cached KV bytes it reads (probe1.json attention_vs_position).

    ``drop`` holds ``("sweep", tokens)`` and ``("attention", position)`` points to leave out
    (a leave-one-out refit).
    """
    shape = m.shapes[shape_name]
    eff = m.v("hbm_copy_rate") / H200_MEM_BANDWIDTH
    stream = float(roofline.memory_time_s(shape.weight_bytes, H200_MEM_BANDWIDTH, eff))
    overhead = (m.tail16[(shape_name, "graph")].median_s - stream) / shape.layers
    sweep = [p for p in m.sweeps[shape_name] if ("sweep", p.tokens) not in drop]
    tokens = np.array([p.tokens for p in sweep], dtype=np.float64)
    t = np.array([p.timing.median_s for p in sweep])
    flops = shape.flops(tokens)
    bound = tokens >= COMPUTE_FIT_MIN_TOKENS
    mfu = fit_rate_fraction(flops[bound], t[bound], H200_PEAK_FLOP_PER_S)
    compute = flops / (H200_PEAK_FLOP_PER_S * mfu)
    memory = np.full_like(t, stream + overhead * shape.layers)
    per_p = [fit_floor(compute, memory, t, p) for p in BLEND_GRID]
    best = int(np.argmin([cost for _, cost in per_p]))
    points = [(pos, kv, masked) for pos, kv, masked, _ in m.attention if ("attention", pos) not in drop]
    fixed, rate = fit_latency_bandwidth([kv for _, kv, _ in points], [t.median_s for _, _, t in points])
    return ForwardFit(
        mfu=mfu,
        mem_efficiency=eff,
        mem_overhead_per_layer_s=overhead,
        launch_floor_per_layer_s=per_p[best][0] / shape.layers,
        sharpness=float(BLEND_GRID[best]),
        attention_fixed_per_layer_s=fixed,
        attention_efficiency=rate / H200_MEM_BANDWIDTH,
    )


@cache
def shipped_forward_fit() -> ForwardFit:
    """:func:`fit_forward` of the shipped set on :data:`FIT_SHAPE`, computed once per process."""
    return fit_forward(load())


def pass_s(
    ff: ForwardFit,
    shape: Shape,
    tokens: ArrayLike,
    mode: str,
    position: ArrayLike = 0,
    logits_tokens: ArrayLike | None = None,
) -> FloatArray:
    """A pass of ``shape`` on the H200 under the package's forward-pass model at the values ``ff`` (s).

    :func:`kvtier.formulas.roofline.forward_pass_time_s` of the pass's FLOPs and weight bytes, with
    the launch floor in ``mode`` ``"eager"`` (none in ``"graph"``) and, where ``position > 0``, the
    serial attention over the cached positions (:func:`kvtier.formulas.roofline.attention_time_s`):
    what the ``regen.*`` keys of ``h200-measured.yaml`` give a lone block (``kvtier compare``).
    """
    if mode not in ("eager", "graph"):
        raise KvtierError(f"mode must be 'eager' or 'graph', got {show(mode, quote=True)}")
    n = np.asarray(tokens, dtype=np.float64)
    pos = np.asarray(position, dtype=np.float64)
    attention = roofline.attention_time_s(
        shape.kv_bytes_per_token * pos,
        shape.layers,
        ff.attention_fixed_per_layer_s,
        H200_MEM_BANDWIDTH,
        ff.attention_efficiency,
    )
    return roofline.forward_pass_time_s(
        shape.flops(n, pos, logits_tokens),
        np.full_like(n, shape.weight_bytes),
        H200_PEAK_FLOP_PER_S,
        ff.mfu,
        H200_MEM_BANDWIDTH,
        ff.mem_efficiency,
        layers=shape.layers,
        mem_overhead_per_layer_s=ff.mem_overhead_per_layer_s,
        launch_floor_per_layer_s=ff.launch_floor_per_layer_s if mode == "eager" else 0.0,
        sharpness=ff.sharpness,
        serial_s=attention,
    )


IN_SAMPLE = "in sample"
LEAVE_ONE_OUT = "leave-one-out"
HELD_OUT = "held out"
SAMPLES = (IN_SAMPLE, LEAVE_ONE_OUT, HELD_OUT)
"""How a model value was obtained against its measurement: fitted with the point, refitted without
it (leave-one-out), or from fits that never see its group (held out)."""


@dataclass(frozen=True)
class Check:
    """One measurement against the model: its group, case, measured and modelled time (s), and how.

    ``sample`` is one of :data:`SAMPLES`; ``error_pct`` is ``(model / measured - 1) x 100``.
    """

    group: str
    case: str
    measured_s: float
    model_s: float
    sample: str

    @property
    def error_pct(self) -> float:
        """Error of the model (percent; negative: the model is short)."""
        return (self.model_s / self.measured_s - 1.0) * 100.0


def leave_one_out_s(m: Measurements, point: tuple[str, int], predict: Any) -> float:
    """``predict(fit_forward(m, drop={point}))``: the model of a point refitted without it (s)."""
    return float(predict(fit_forward(m, drop=frozenset({point}))))


def forward_checks(m: Measurements) -> tuple[Check, ...]:
    """Every measured pass and attention call against the model fitted on :data:`FIT_SHAPE` only.

    - the 70B eager sweep: in sample, and leave-one-out (:func:`fit_forward` without the pass);
    - the 70B 16-token CUDA-graph pass: in sample only (it alone fixes the memory overhead per layer);
    - one layer's masked attention by position: in sample and leave-one-out;
    - held out, no fitted value sees them: every 8B pass, the 70B interior blocks with the upstream
      resident (eager, serial attention) and evicted (a prefill, logits for the last token), and
      both shapes through transformers' ``LlamaForCausalLM`` (eager).
    """
    ff = fit_forward(m)
    s70, s8 = m.shapes[FIT_SHAPE], m.shapes[HELD_OUT_SHAPE]
    out: list[Check] = []
    group = f"{FIT_SHAPE} eager passes"
    for p in m.sweeps[FIT_SHAPE]:
        case = f"{p.tokens:,} tokens"
        t = p.timing.median_s

        def predict(f: ForwardFit, n: int = p.tokens) -> FloatArray:
            return pass_s(f, s70, n, "eager")

        out.append(Check(group, case, t, float(predict(ff)), IN_SAMPLE))
        out.append(Check(group, case, t, leave_one_out_s(m, ("sweep", p.tokens), predict), LEAVE_ONE_OUT))
    g16 = m.tail16[(FIT_SHAPE, "graph")].median_s
    out.append(Check(f"{FIT_SHAPE} CUDA-graph pass", "16 tokens", g16, float(pass_s(ff, s70, 16, "graph")), IN_SAMPLE))
    group = "one layer's attention, 16 queries, masked"
    for pos, kv, masked, _ in m.attention:
        case = f"{pos:,} positions"

        def attn(f: ForwardFit, b: int = kv) -> FloatArray:
            return roofline.attention_time_s(
                b, 1, f.attention_fixed_per_layer_s, H200_MEM_BANDWIDTH, f.attention_efficiency
            )

        out.append(Check(group, case, masked.median_s, float(attn(ff)), IN_SAMPLE))
        out.append(Check(group, case, masked.median_s, leave_one_out_s(m, ("attention", pos), attn), LEAVE_ONE_OUT))
    group = f"{HELD_OUT_SHAPE} passes from {FIT_SHAPE} fits"
    for p in m.sweeps[HELD_OUT_SHAPE]:
        out.append(
            Check(
                group,
                f"{p.tokens:,} tokens, eager",
                p.timing.median_s,
                float(pass_s(ff, s8, p.tokens, "eager")),
                HELD_OUT,
            )
        )
    for mode in ("eager", "graph"):
        t = m.tail16[(HELD_OUT_SHAPE, mode)].median_s
        case = "16 tokens, graph" if mode == "graph" else "16 tokens, eager, tail loop"  # the sweep has its own 16
        out.append(Check(group, case, t, float(pass_s(ff, s8, 16, mode)), HELD_OUT))
    group = f"{FIT_SHAPE} interior blocks"
    for p in m.resident:
        model = float(pass_s(ff, s70, p.tokens, "eager", p.position))
        out.append(Check(group, f"at {p.position:,}, upstream resident", p.timing.median_s, model, HELD_OUT))
    for p in m.evicted:
        model = float(pass_s(ff, s70, p.tokens, "eager", 0, 1))
        out.append(
            Check(group, f"at {p.tokens - 16:,}, upstream evicted (prefill)", p.timing.median_s, model, HELD_OUT)
        )
    for shape_name in SHAPES:
        group = f"{shape_name} through transformers"
        for p in m.hf_sweeps[shape_name]:
            model = float(pass_s(ff, m.shapes[shape_name], p.tokens, "eager"))
            out.append(Check(group, f"{p.tokens:,} tokens, eager", p.timing.median_s, model, HELD_OUT))
    return tuple(out)


def copy_checks(m: Measurements) -> tuple[Check, ...]:
    """The pinned copies of at least :data:`FETCH_FIT_MIN_BYTES` against ``latency + bytes / bandwidth``.

    In sample (fitted on every such copy of the direction) and leave-one-out (refitted without it).
    """
    out: list[Check] = []
    for kind in ("h2d_pinned", "d2h_pinned"):
        pts = [c for c in m.copies_of(kind) if c.n_bytes >= FETCH_FIT_MIN_BYTES]
        sizes = np.array([c.n_bytes for c in pts], dtype=np.float64)
        times = np.array([c.timing.median_s for c in pts])
        latency, bw = fit_latency_bandwidth(sizes, times)

        def predict(fitted: tuple[float, float], n_bytes: float) -> float:
            return float(costs.fetch_time_s(n_bytes, fitted[1], fitted[0]))

        loo = leave_one_out(sizes, times, fit_latency_bandwidth, predict)
        for c, held in zip(pts, loo, strict=True):
            case = f"{c.n_bytes / MIB:g} MiB"
            group = f"copies, {kind.replace('_', ' ')}"
            out.append(Check(group, case, c.timing.median_s, predict((latency, bw), c.n_bytes), IN_SAMPLE))
            out.append(Check(group, case, c.timing.median_s, float(held), LEAVE_ONE_OUT))
    return tuple(out)


@dataclass(frozen=True)
class TransferFit:
    """The transfer model's values beyond latency and bandwidth (:func:`kvtier.formulas.transfer.fetch_time_s`).

    Attributes
    ----------
    latency_s, bandwidth_bytes_per_s : float
        ``fetch_latency`` and the pinned host-to-device rate (``bandwidth.mid``): :attr:`Fits.fetch`.
    min_transfer_s : float
        ``fetch.min_transfer_time``: the median of the pinned host-to-device copies below
        :data:`FETCH_FIT_MIN_BYTES` (s).
    pageable_efficiency, pageable_warm_efficiency, pageable_overhead_s : float
        ``fetch.pageable_efficiency`` (staged from DRAM, the copies beyond :attr:`host_cache_bytes`),
        ``fetch.pageable_warm_efficiency`` (staged from the host cache, the copies within it) and
        ``fetch.pageable_overhead`` (s): :func:`kvtier.formulas.fits.fit_pageable` over every pageable
        host-to-device copy, at the pinned fit's latency and bandwidth.
    host_cache_bytes : float
        ``fetch.host_cache``, :data:`HOST_CACHE_BYTES` (B): the breakpoint, assumed.
    duplex_efficiency : float
        ``fetch.duplex_efficiency``: host to device alone over host to device with device to host running.
    """

    latency_s: float
    bandwidth_bytes_per_s: float
    min_transfer_s: float
    pageable_efficiency: float
    pageable_warm_efficiency: float
    pageable_overhead_s: float
    host_cache_bytes: float
    duplex_efficiency: float

    def pageable_s(self, n_bytes: float, source_bytes: float | None = None) -> float:
        """One copy of ``n_bytes`` from pageable memory whose working set is ``source_bytes`` (s).

        ``None``: the copy's own size, one buffer copied again and again as the probe did; ``math.inf``:
        a pool far larger than the host cache, as a serving system's KV pool.
        """
        source = n_bytes if source_bytes is None else source_bytes
        eff = transfer.staging_efficiency(
            source, self.pageable_efficiency, self.pageable_warm_efficiency, self.host_cache_bytes
        )
        return _fetch(self, n_bytes, efficiency=float(eff), overhead_s=self.pageable_overhead_s)


def fit_transfer(m: Measurements, drop: frozenset[tuple[str, int]] = frozenset()) -> TransferFit:
    """Fit :class:`TransferFit` to the pinned and pageable host-to-device copies, leaving out ``drop``.

    ``drop`` holds ``(kind, n_bytes)`` copies to leave out (a leave-one-out refit).
    """
    pinned = [c for c in m.copies_of("h2d_pinned") if ("h2d_pinned", c.n_bytes) not in drop]
    big = [c for c in pinned if c.n_bytes >= FETCH_FIT_MIN_BYTES]
    latency, bw = fit_latency_bandwidth([c.n_bytes for c in big], [c.timing.median_s for c in big])
    small = [c.timing.median_s for c in pinned if c.n_bytes < FETCH_FIT_MIN_BYTES]
    pageable = [c for c in m.copies_of("h2d_pageable") if ("h2d_pageable", c.n_bytes) not in drop]
    sizes = [c.n_bytes for c in pageable]
    warm = [n <= HOST_CACHE_BYTES for n in sizes]
    if all(warm) or not any(warm):
        side = "within" if not any(warm) else "beyond"
        raise KvtierError(
            f"copies[kind=h2d_pageable]: the pageable fit needs a copy {side} the host cache of"
            f" {HOST_CACHE_BYTES / MIB:g} MiB, got sizes {sorted(sizes)}"
        )
    overhead, warm_eff, cold_eff = fit_pageable(
        sizes, [c.timing.median_s for c in pageable], latency, bw, HOST_CACHE_BYTES
    )
    return TransferFit(
        latency_s=latency,
        bandwidth_bytes_per_s=bw,
        min_transfer_s=float(np.median(small)),
        pageable_efficiency=cold_eff,
        pageable_warm_efficiency=warm_eff,
        pageable_overhead_s=overhead,
        host_cache_bytes=float(HOST_CACHE_BYTES),
        duplex_efficiency=m.v("bidirectional_h2d_alone_s") / m.v("bidirectional_h2d_together_s"),
    )


def _fetch(
    tf: TransferFit, n_bytes: float, transfers: int = 1, efficiency: float = 1.0, overhead_s: float = 0.0
) -> float:
    return float(
        transfer.fetch_time_s(
            n_bytes, tf.bandwidth_bytes_per_s, tf.latency_s, transfers, tf.min_transfer_s, efficiency, overhead_s
        )
    )


def transfer_checks(m: Measurements) -> tuple[Check, ...]:
    """The copies the plain ``latency + bytes / bandwidth`` leaves out, under the transfer model.

    - pinned host-to-device copies below a mebibyte: in sample (their median is the floor) and
      leave-one-out; device to host: held out (the floor is fitted on the other direction);
    - every pageable copy (below a mebibyte in their own group), each from the buffer it copies again
      and again, staged from the host cache up to :data:`HOST_CACHE_BYTES` and from DRAM beyond it:
      in sample and leave-one-out;
    - the 5 MiB block in one copy per 32 KiB chunk (probe1 and probe2): held out;
    - 256 MiB each way at once: host to device in sample, device to host held out.
    """
    tf = fit_transfer(m)
    out: list[Check] = []
    for c in m.copies_of("h2d_pinned"):
        if c.n_bytes < FETCH_FIT_MIN_BYTES:
            case = f"{c.n_bytes // 1024} KiB"
            loo = fit_transfer(m, frozenset({("h2d_pinned", c.n_bytes)}))
            out.append(Check("small copies, h2d pinned", case, c.timing.median_s, _fetch(tf, c.n_bytes), IN_SAMPLE))
            out.append(
                Check("small copies, h2d pinned", case, c.timing.median_s, _fetch(loo, c.n_bytes), LEAVE_ONE_OUT)
            )
    for c in m.copies_of("d2h_pinned"):
        if c.n_bytes < FETCH_FIT_MIN_BYTES:
            out.append(
                Check(
                    "small copies, d2h pinned",
                    f"{c.n_bytes // 1024} KiB",
                    c.timing.median_s,
                    _fetch(tf, c.n_bytes),
                    HELD_OUT,
                )
            )
    for c in m.copies_of("h2d_pageable"):
        big = c.n_bytes >= FETCH_FIT_MIN_BYTES
        case = f"{c.n_bytes / MIB:g} MiB" if big else f"{c.n_bytes // 1024} KiB"
        group = "copies, h2d pageable" if big else "small copies, h2d pageable"
        loo = fit_transfer(m, frozenset({("h2d_pageable", c.n_bytes)}))
        out.append(Check(group, case, c.timing.median_s, tf.pageable_s(c.n_bytes), IN_SAMPLE))
        out.append(Check(group, case, c.timing.median_s, loo.pageable_s(c.n_bytes), LEAVE_ONE_OUT))
    block = m.chunk_bytes * m.chunks
    for probe in ("probe1", "probe2"):
        measured = m.v(f"block_per_chunk_{probe}")
        model = _fetch(tf, block, m.chunks)
        out.append(Check("a block in per-layer chunks", f"{m.chunks} copies, {probe}", measured, model, HELD_OUT))
    each = m.v("bidirectional_bytes")
    for direction, sample in (("h2d", IN_SAMPLE), ("d2h", HELD_OUT)):
        measured = m.v(f"bidirectional_{direction}_together_s")
        model = _fetch(tf, each, efficiency=tf.duplex_efficiency)
        out.append(Check("both directions at once", f"{direction}, {each / MIB:g} MiB", measured, model, sample))
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
