"""The measurements of record as typed values: the set's constants, a timing, a model shape, a copy, a pass.

Every value in SI base units; :class:`Measurements` holds a whole set and gives any quoted
scalar as a ``measured`` :class:`~kvtier.inputs.provenance.Record`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from numpy.typing import ArrayLike, NDArray

from kvtier.errors import KvtierError
from kvtier.formulas import costs
from kvtier.inputs.models import ModelSpec
from kvtier.inputs.provenance import Record
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

    @cached_property
    def spec(self) -> ModelSpec:
        """The shape as :mod:`kvtier.inputs.models` describes a decoder: its KV, FLOPs and parameter count."""
        return ModelSpec(
            name=self.name,
            source="measured",
            model_type="llama",
            n_layers=self.layers,
            hidden_size=self.hidden,
            n_heads=self.heads,
            n_kv_heads=self.kv_heads,
            head_dim=self.head_dim,
            intermediate_size=self.ffn,
            vocab_size=self.vocab,
            tie_embeddings=False,
        )

    @property
    def weight_bytes(self) -> float:
        """Bytes of the bf16 weights (B)."""
        return 2.0 * self.params

    @property
    def kv_bytes_per_token(self) -> float:
        """bf16 K and V bytes per token over all layers (B)."""
        return float(self.spec.kv_bytes_per_token("bf16"))

    @property
    def attention_flops_per_position(self) -> float:
        """Attention-score FLOPs per token per position attended: ``2 x layers x heads x 2 x head_dim``."""
        return float(self.spec.attention_flops_per_position())

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
    duplex : dict of str to Timing
        256 MiB each way at once, ``"h2d_together"`` and ``"d2h_together"``: the runs of probe3.json
        ``bidirectional.runs[*]`` as one timing each (median, fastest, slowest, runs).
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
    duplex: dict[str, Timing] = field(default_factory=dict)

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
