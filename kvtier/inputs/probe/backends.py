"""Where a measurement runs: the numpy CPU backend, the CUDA backend through PyTorch, and their timers.

A :class:`Backend` holds the operations a measurement needs on one device (copies, a
device-memory copy, a matrix product, forward passes of a model's shapes with random weights)
and times them into a :class:`Timing`.  PyTorch is only needed for the CUDA path (an optional
extra).
"""

from __future__ import annotations

import math
import os
import platform
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kvtier.errors import KvtierError, show
from kvtier.inputs.models import ModelSpec
from kvtier.inputs.probe.memory import cpu_free_bytes
from kvtier.inputs.probe.shapes import layer_params

DEVICES = ("auto", "cpu", "cuda")
"""Where to measure: ``auto`` takes CUDA when PyTorch sees a GPU, else the CPU."""
WEIGHT_PATTERN = 1 << 22
"""Random numbers drawn for the CPU backend's weights (4 Mi), repeated to fill every matrix."""


@dataclass
class Backend:
    """The operations a measurement needs, on one device.

    Attributes
    ----------
    name : str
        ``cpu`` or ``cuda``.
    dtype : str
        Element type of weights and matrix products: ``float32`` (numpy) or ``bf16``.
    element_bytes : int
        Bytes per weight element.
    what : str
        The machine in words, for every basis.
    copy_what : str
        What a "fetch" copy is on this backend, in words.
    """

    name: str
    dtype: str
    element_bytes: int
    what: str
    copy_what: str
    free_bytes: Callable[[], float]
    timer: Callable[[Callable[[], Any], int], Timing]
    copy_pair: Callable[[int], Callable[[], Any]]
    device_copy: Callable[[int], Callable[[], Any]]
    matmul: Callable[[int], Callable[[], Any]]
    forward: Callable[[ModelSpec, int, int], tuple[Callable[[int, int], Callable[[], Any]], float]]
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Timing:
    """The timed repetitions of one operation (s): their median, fastest and slowest."""

    median: float
    fastest: float
    slowest: float

    @classmethod
    def of(cls, times: list[float]) -> Timing:
        """The timing of the repetitions ``times`` (s)."""
        return cls(float(np.median(times)), float(min(times)), float(max(times)))

    def scaled(self, factor: float) -> Timing:
        """All three times multiplied by ``factor``."""
        return Timing(self.median * factor, self.fastest * factor, self.slowest * factor)


def _wall_times(fn: Callable[[], Any], reps: int) -> Timing:
    """Wall times of ``fn()`` over ``reps`` calls after one warm-up (s)."""
    fn()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return Timing.of(times)


def _rms(x: np.ndarray) -> np.ndarray:
    """RMSNorm of ``x`` over its last axis, without a learned scale."""
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + 1e-5)


def _numpy_forward(spec: ModelSpec, layers: int, seed_: int) -> tuple[Callable[[int, int], Callable[[], Any]], float]:
    """A decoder with ``spec``'s shapes and ``layers`` layers of random float32 weights, in numpy.

    Returns a factory ``(tokens, used) -> pass`` over the first ``used`` layers (0: the
    embedding and the head alone) and the weight bytes held.  RMSNorm, grouped-query
    attention with a causal mask, SwiGLU, untied embeddings and logits for every token (the
    ``2 N`` convention); rotary embeddings are left out (a few elementwise operations).
    """
    rng = np.random.default_rng(seed_)
    h, q, kv, f = (
        spec.hidden_size,
        spec.n_heads * spec.head_dim,
        spec.n_kv_heads * spec.head_dim,
        spec.intermediate_size,
    )

    pattern = rng.standard_normal(min(WEIGHT_PATTERN, layers * layer_params(spec) + spec.vocab_size), dtype=np.float32)
    pattern *= 0.02

    def w(*shape: int) -> np.ndarray:
        # a random pattern repeated: the time of a product does not depend on its values, and drawing billions
        # of normal numbers took longer than the passes; filled in place, with no temporary array
        a = np.empty(math.prod(shape), dtype=np.float32)
        whole = a.size // pattern.size * pattern.size
        a[:whole].reshape(-1, pattern.size)[:] = pattern
        a[whole:] = pattern[: a.size - whole]
        return a.reshape(shape)

    weights = [(w(h, q + 2 * kv), w(q, h), w(h, 2 * f), w(f, h)) for _ in range(layers)]
    embed, head = w(spec.vocab_size, h), w(h, spec.vocab_size)
    held = sum(a.nbytes for layer in weights for a in layer) + embed.nbytes + head.nbytes
    group = spec.n_heads // spec.n_kv_heads

    def make(tokens: int, used: int) -> Callable[[], Any]:
        ids = rng.integers(0, spec.vocab_size, tokens)
        mask = np.triu(np.full((tokens, tokens), -np.inf, dtype=np.float32), 1)

        def run() -> np.ndarray:
            x = embed[ids]
            for wqkv, wo, wgu, wd in weights[:used]:
                qkv = _rms(x) @ wqkv
                qh = qkv[:, :q].reshape(tokens, spec.n_heads, spec.head_dim).transpose(1, 0, 2)
                kh = qkv[:, q : q + kv].reshape(tokens, spec.n_kv_heads, spec.head_dim).transpose(1, 0, 2)
                vh = qkv[:, q + kv :].reshape(tokens, spec.n_kv_heads, spec.head_dim).transpose(1, 0, 2)
                kh, vh = np.repeat(kh, group, axis=0), np.repeat(vh, group, axis=0)
                scores = qh @ kh.transpose(0, 2, 1) / math.sqrt(spec.head_dim) + mask
                scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
                attn = (scores / scores.sum(axis=-1, keepdims=True)) @ vh
                x = x + attn.transpose(1, 0, 2).reshape(tokens, q) @ wo
                gu = _rms(x) @ wgu
                gate, up = gu[:, :f], gu[:, f:]
                x = x + (gate / (1 + np.exp(-gate)) * up) @ wd
            return _rms(x) @ head

        return run

    return make, float(held)


def cpu_backend() -> Backend:
    """The numpy backend: host-memory copies, float32 products and passes, wall-clock timing."""
    buffers: dict[str, np.ndarray] = {}

    def buffer(name: str, n: int) -> np.ndarray:
        if name not in buffers or buffers[name].nbytes < n:
            buffers[name] = np.ones(n, dtype=np.uint8)
        return buffers[name][:n]

    def copy_pair(n: int) -> Callable[[], Any]:
        src, dst = buffer("src", n), buffer("dst", n)
        return lambda: np.copyto(dst, src)

    def matmul(n: int) -> Callable[[], Any]:
        rng = np.random.default_rng(0)
        a = rng.standard_normal((n, n), dtype=np.float32)
        b = rng.standard_normal((n, n), dtype=np.float32)
        return lambda: a @ b

    cpu = platform.processor() or platform.machine()
    return Backend(
        name="cpu",
        dtype="float32",
        element_bytes=4,
        what=f"the CPU of this machine ({cpu}, {os.cpu_count()} logical cores, numpy {np.__version__}; no GPU)",
        copy_what="copies inside host memory (no host-device link on a CPU-only machine: not a tier link)",
        free_bytes=cpu_free_bytes,
        timer=_wall_times,
        copy_pair=copy_pair,
        device_copy=copy_pair,
        matmul=matmul,
        forward=_numpy_forward,
    )


def cuda_backend() -> Backend:  # pragma: no cover - needs a CUDA GPU and PyTorch
    """The PyTorch backend: pinned host-to-device copies, bf16 products and passes, CUDA-event timing."""
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        raise KvtierError("--device cuda needs PyTorch: pip install -e '.[measure]'") from None
    if not torch.cuda.is_available():
        raise KvtierError("--device cuda: PyTorch sees no CUDA GPU on this machine; use --device cpu")
    dev = torch.device("cuda")
    props = torch.cuda.get_device_properties(0)

    def timer(fn: Callable[[], Any], reps: int) -> Timing:
        fn()
        torch.cuda.synchronize()
        times = []
        for _ in range(reps):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b) / 1e3)
        return Timing.of(times)

    def copy_pair(n: int) -> Callable[[], Any]:
        host = torch.ones(n, dtype=torch.uint8).pin_memory()
        gpu = torch.empty(n, dtype=torch.uint8, device=dev)
        return lambda: gpu.copy_(host, non_blocking=True)

    def device_copy(n: int) -> Callable[[], Any]:
        a = torch.ones(n, dtype=torch.uint8, device=dev)
        b = torch.empty_like(a)
        return lambda: b.copy_(a)

    def matmul(n: int) -> Callable[[], Any]:
        a = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
        b = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
        return lambda: a @ b

    def forward(spec: ModelSpec, layers: int, seed_: int) -> tuple[Callable[[int, int], Callable[[], Any]], float]:
        g = torch.Generator(device=dev)
        g.manual_seed(seed_)
        h, q = spec.hidden_size, spec.n_heads * spec.head_dim
        kv, f = spec.n_kv_heads * spec.head_dim, spec.intermediate_size

        def w(*shape: int) -> Any:
            t = torch.empty(*shape, device=dev, dtype=torch.bfloat16)
            return t.normal_(0.0, 0.02, generator=g)

        weights = [(w(q + 2 * kv, h), w(h, q), w(2 * f, h), w(h, f)) for _ in range(layers)]
        embed, head = w(spec.vocab_size, h), w(spec.vocab_size, h)
        held = 2.0 * (sum(a.numel() for layer in weights for a in layer) + embed.numel() + head.numel())

        def rms(x: Any) -> Any:
            return x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-5).to(x.dtype)

        def make(tokens: int, used: int) -> Callable[[], Any]:
            ids = torch.randint(0, spec.vocab_size, (tokens,), device=dev, generator=g)

            @torch.inference_mode()
            def run() -> Any:
                x = F.embedding(ids, embed)[None]
                for wqkv, wo, wgu, wd in weights[:used]:
                    qkv = rms(x) @ wqkv.t()
                    qh, kh, vh = qkv.split([q, kv, kv], dim=-1)
                    qh = qh.view(1, tokens, spec.n_heads, spec.head_dim).transpose(1, 2)
                    kh = kh.view(1, tokens, spec.n_kv_heads, spec.head_dim).transpose(1, 2)
                    vh = vh.view(1, tokens, spec.n_kv_heads, spec.head_dim).transpose(1, 2)
                    a = F.scaled_dot_product_attention(qh, kh, vh, is_causal=True, enable_gqa=True)
                    x = x + a.transpose(1, 2).reshape(1, tokens, q) @ wo.t()
                    gate, up = (rms(x) @ wgu.t()).split([f, f], dim=-1)
                    x = x + (F.silu(gate) * up) @ wd.t()
                return rms(x) @ head.t()

            return run

        return make, held

    return Backend(
        name="cuda",
        dtype="bf16",
        element_bytes=2,
        what=f"{props.name} ({props.multi_processor_count} SMs; PyTorch {torch.__version__},"
        f" CUDA {torch.version.cuda})",
        copy_what="pinned host-to-device copies over the GPU's host link (the path to host or CXL memory)",
        free_bytes=lambda: float(torch.cuda.mem_get_info()[0]),
        timer=timer,
        copy_pair=copy_pair,
        device_copy=device_copy,
        matmul=matmul,
        forward=forward,
    )


def pick_backend(device: str) -> Backend:
    """The backend for ``--device``: ``auto`` takes CUDA when PyTorch sees a GPU."""
    if device not in DEVICES:
        raise KvtierError(f"--device must be one of {', '.join(DEVICES)}, got {show(device, quote=True)}")
    if device == "cpu":
        return cpu_backend()
    if device == "cuda":
        return cuda_backend()
    try:
        import torch

        if torch.cuda.is_available():  # pragma: no cover - needs a CUDA GPU
            return cuda_backend()
    except ImportError:
        pass
    return cpu_backend()
