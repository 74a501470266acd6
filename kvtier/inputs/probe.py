"""``kvtier measure``: measure the machine it runs on and write an assumption set of the seed's form.

It times both sides of the fetch-or-regenerate question on the hardware at hand:

- **copies** of 4 KiB up to 1 GiB (``--quick``: 64 MiB), fitted to ``latency + bytes /
  bandwidth`` (:func:`kvtier.formulas.fits.fit_latency_bandwidth`): on a CUDA machine pinned
  host-to-device and device-to-host copies, the path to host or CXL memory; without one,
  copies inside host memory, which no tier link resembles (every basis says so);
- **device-memory bandwidth**: a large device-to-device (or host-memory) copy, read plus write;
- **the matrix rate**: an ``n x n x n`` product in bf16 (CUDA) or float32 (numpy has no bf16);
- **forward passes** of the chosen model's shapes with random weights (nothing downloaded):
  16 tokens and a short token sweep, from which the MFU of the matrix rate and the memory
  efficiency of a lone pass are derived.  A model whose weights do not fit in memory is
  refused with one line that offers ``--layers N`` (a count that fits): measure N layers and
  scale to all of them (the basis then says so); ``--quick`` picks such a count itself.

Every measured value comes with an uncertainty range of its own (the spread of its timed
repetitions, widened to at least :data:`RANGE_BAND` either side), written as the set's
``uncertainty.*`` keys, so that the book's Monte Carlo draws around the machine measured.

The output is checked before anything is measured: its directory must exist and take a new
file, and a file already there is replaced only if ``kvtier measure`` wrote it and nobody
changed it since (its first line carries a mark, the hash of the rest) or with ``--force``.
The result is written atomically (a temporary file in the same directory, then a rename)
with the permissions the user's umask gives, so an interrupted run never leaves a
half-written file; ``kvtier build --assumptions FILE`` rebuilds the book from it.  A model
given as a path is written as an absolute one, so the set works from any directory.
PyTorch is only needed for the CUDA path (an optional extra).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import math
import os
import platform
import re
import stat
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from kvtier.errors import KvtierError, show
from kvtier.formulas import fits
from kvtier.inputs import measurements
from kvtier.inputs.assumptions import check_consistency, load_assumptions, seed
from kvtier.inputs.models import PRESETS, ModelSpec, config_path, load_model
from kvtier.inputs.readers import read_text_bounded

DEVICES = ("auto", "cpu", "cuda")
"""Where to measure: ``auto`` takes CUDA when PyTorch sees a GPU, else the CPU."""

SIZES_FULL = tuple(4096 * 4**k for k in range(10)) + (5 * 2**20,)
"""Copy sizes of a full run (B): 4 KiB to 1 GiB by factors of 4, and the chapter's 5 MiB block."""
SIZES_QUICK = tuple(4096 * 4**k for k in range(8)) + (5 * 2**20,)
"""Copy sizes of a quick run (B): 4 KiB to 64 MiB, and 5 MiB."""
SWEEP_FULL = (1, 16, 64, 256, 1024)
"""Tokens per forward pass of a full run's sweep."""
SWEEP_QUICK = (1, 16, 64)
"""Tokens per forward pass of a quick run's sweep."""
MEMORY_SHARE = 0.6
"""Largest share of the free memory the weights may take (the rest: activations, copies, the system)."""
WEIGHT_PATTERN = 1 << 22
"""Random numbers drawn for the CPU backend's weights (4 Mi), repeated to fill every matrix."""
QUICK_LAYERS = 2
"""Most layers a ``--quick`` run builds (fewer when fewer fit); the passes are scaled to all layers."""
RANGE_BAND = 0.1
"""Least half-width of a measured value's uncertainty range, as a share of the value (10 %).

One run's repetitions see neither another run's state (clocks, temperature, other processes)
nor another machine of the same kind, so a range never narrower than this is written."""
MARK = re.compile(r"# Written by kvtier measure, mark ([0-9a-f]{32});")
"""The first line of every file ``kvtier measure`` writes: the mark is the hash of the lines below it."""


def log(message: str) -> None:
    print(f"kvtier measure: {message}", file=sys.stderr, flush=True)


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


def _meminfo_available() -> float | None:
    """``MemAvailable`` of ``/proc/meminfo`` (B): free memory plus the caches the kernel can drop."""
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return float(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _cgroup_available() -> float | None:
    """What the cgroup (v2) this process runs in still allows (B); None without a limit."""
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text(encoding="ascii").strip()
        used = Path("/sys/fs/cgroup/memory.current").read_text(encoding="ascii").strip()
        return None if limit == "max" else float(int(limit) - int(used))
    except (OSError, ValueError):
        return None


def _address_space_available() -> float | None:
    """What ``RLIMIT_AS`` leaves this process beyond the address space it holds (B); None without a limit."""
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        if soft == resource.RLIM_INFINITY:
            return None
        with open("/proc/self/status", encoding="ascii") as handle:
            held = next(float(line.split()[1]) * 1024 for line in handle if line.startswith("VmSize:"))
        return float(soft) - held
    except (ImportError, OSError, ValueError, StopIteration):
        return None


def _cpu_free_bytes() -> float:
    """Memory this process may still take (B): the least of the machine's, its cgroup's and its address space's."""
    found = [x for x in (_meminfo_available(), _cgroup_available(), _address_space_available()) if x is not None]
    if not found:
        try:
            found = [float(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))]
        except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX systems
            found = [8.0 * 2**30]
    return max(0.0, min(found))


def _rms(x: np.ndarray) -> np.ndarray:
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
        free_bytes=_cpu_free_bytes,
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


def layer_params(spec: ModelSpec) -> int:
    """Parameters of one dense decoder layer as measured (attention and SwiGLU MLP, no norms)."""
    h, q, kv = spec.hidden_size, spec.n_heads * spec.head_dim, spec.n_kv_heads * spec.head_dim
    return h * (q + 2 * kv) + q * h + 3 * h * spec.intermediate_size


def check_model(spec: ModelSpec) -> None:
    if spec.attention == "MLA" or spec.is_moe:
        raise KvtierError(
            f"model '{spec.name}': kvtier measure builds dense MHA/GQA decoders only; this one is"
            f" {'MLA' if spec.attention == 'MLA' else 'a mixture of experts'}"
        )


def model_params(spec: ModelSpec) -> int:
    """Parameters of the whole model as measured: every layer, the embedding and the untied head."""
    return spec.n_layers * layer_params(spec) + 2 * spec.vocab_size * spec.hidden_size


def _bytes_of(spec: ModelSpec, backend: Backend, layers: int) -> tuple[float, float]:
    """Weight bytes of the embedding and head together, and of ``layers`` layers, in ``backend``'s type (B)."""
    rest = 2 * spec.vocab_size * spec.hidden_size * backend.element_bytes
    return float(rest), float(layers * layer_params(spec) * backend.element_bytes)


def layers_that_fit(spec: ModelSpec, backend: Backend, budget: float) -> int:
    """The most layers of ``spec`` whose weights, with the embedding and head, fit in ``budget`` bytes (0 to all)."""
    rest, per_layer = _bytes_of(spec, backend, 1)
    if budget < rest + per_layer:
        return 0
    return int(min(spec.n_layers, (budget - rest) // per_layer))


def _smaller_model(backend: Backend, budget: float) -> str | None:
    """The largest dense preset of which at least one layer fits in ``budget`` bytes, or None."""
    fitting = []
    for name in PRESETS:
        spec = load_model(name)
        if spec.attention != "MLA" and not spec.is_moe and layers_that_fit(spec, backend, budget) > 0:
            fitting.append((model_params(spec), name))
    return max(fitting)[1] if fitting else None


def _no_layer_fits(spec: ModelSpec, backend: Backend, budget: float) -> KvtierError:
    """The refusal when not even one layer of ``spec`` fits, with a model that does, if any."""
    rest, per_layer = _bytes_of(spec, backend, 1)
    other = _smaller_model(backend, budget)
    advice = (
        f"measure a smaller model: --model {other} --quick"
        if other
        else "no preset fits either; free some memory or measure on a larger machine"
    )
    return KvtierError(
        f"model '{spec.name}': not even one layer fits; its embedding and head take {rest / 1e9:.1f} GB and one"
        f" layer {per_layer / 1e9:.1f} GB of {backend.dtype} weights, more than {budget / 1e9:.1f} GB"
        f" ({MEMORY_SHARE:.0%} of the free memory); {advice}"
    )


def plan_layers(spec: ModelSpec, backend: Backend, layers: int | None, quick: bool = False) -> int:
    """How many layers to build: all of them, ``layers``, or with ``quick`` what fits (at most :data:`QUICK_LAYERS`).

    Every count it advises passes the same test: ``layers_that_fit`` of the same budget.

    Raises
    ------
    KvtierError
        One line: ``layers`` outside 1 .. the model's count; the weights do not fit in the
        free memory (with the figures), offering ``--layers N`` for the most layers that
        fit, or a smaller preset when not even one layer fits.
    """
    budget = backend.free_bytes() * MEMORY_SHARE
    fit = layers_that_fit(spec, backend, budget)
    if layers is not None:
        if not 1 <= layers <= spec.n_layers:
            raise KvtierError(f"--layers must be between 1 and {spec.n_layers} for model '{spec.name}', got {layers}")
        if layers > fit:
            if fit == 0:
                raise _no_layer_fits(spec, backend, budget)
            need = sum(_bytes_of(spec, backend, layers))
            raise KvtierError(
                f"--layers {layers}: {layers} layers of model '{spec.name}' need {need / 1e9:.1f} GB in"
                f" {backend.dtype}, more than {budget / 1e9:.1f} GB ({MEMORY_SHARE:.0%} of the free memory);"
                f" at most {fit} fit: --layers {fit}"
            )
        return layers
    if fit == 0:
        raise _no_layer_fits(spec, backend, budget)
    if quick:
        return min(QUICK_LAYERS, fit)
    if fit < spec.n_layers:
        need = sum(_bytes_of(spec, backend, spec.n_layers))
        raise KvtierError(
            f"model '{spec.name}' needs {need / 1e9:.1f} GB of {backend.dtype} weights, more than"
            f" {budget / 1e9:.1f} GB ({MEMORY_SHARE:.0%} of the free memory); measure fewer layers and scale"
            f" to all {spec.n_layers}: --layers {fit} (or --quick)"
        )
    return spec.n_layers


@dataclass(frozen=True)
class Result:
    """What a run measured (SI units) and how, before it becomes an assumption set.

    ``copies`` are ``(bytes, timing)``; ``mem_copy`` moved ``mem_bytes`` (read plus write);
    ``matmul`` timed an ``matmul_n``-cubed product; ``sweep`` holds ``(tokens, timing)`` of the
    forward passes, already scaled to all of the model's layers.
    """

    backend: str
    machine: str
    copy_what: str
    dtype: str
    model: str
    layers_built: int
    layers_total: int
    copies: tuple[tuple[int, Timing], ...]
    latency_s: float
    bandwidth: float
    mem_bytes: int
    mem_copy: Timing
    matmul_n: int
    matmul: Timing
    sweep: tuple[tuple[int, Timing], ...]
    weight_bytes: float
    reps: int
    date: str

    @property
    def mem_bandwidth(self) -> float:
        """Device-memory copy rate, read plus write, of the median repetition (B/s)."""
        return self.mem_bytes / self.mem_copy.median

    @property
    def matmul_rate(self) -> float:
        """FLOP rate of the median repetition of the matrix product (FLOP/s)."""
        return 2 * self.matmul_n**3 / self.matmul.median

    def bandwidth_spread(self) -> tuple[float, float]:
        """The fitted bandwidth scaled by the largest copy's slowest and fastest repetitions (B/s)."""
        largest = self.copies[-1][1]
        return (
            self.bandwidth * largest.median / largest.slowest,
            self.bandwidth * largest.median / largest.fastest,
        )


def _pass_time(
    backend: Backend, make: Callable[[int, int], Callable[[], Any]], tokens: int, built: int, total: int, reps: int
) -> Timing:
    """A forward pass over ``tokens`` tokens of all ``total`` layers, from a pass over ``built`` of them (s).

    With fewer layers built, the embedding and head alone are timed too and only the layers'
    share is scaled: ``t_head + (t_built - t_head) x total / built``.
    """
    full = backend.timer(make(tokens, built), reps)
    if built == total:
        return full
    head = backend.timer(make(tokens, 0), reps).median
    scaled = head + max(0.0, full.median - head) * total / built
    return full.scaled(scaled / full.median)


def measure(
    model: str,
    backend: Backend,
    *,
    quick: bool = False,
    layers: int | None = None,
    sizes: tuple[int, ...] | None = None,
    sweep: tuple[int, ...] | None = None,
    matmul_n: int | None = None,
    reps: int | None = None,
) -> Result:
    """Run every measurement on ``backend`` for ``model`` and return the results (SI units).

    ``sizes``, ``sweep``, ``matmul_n`` and ``reps`` override the run's defaults (tests use
    small ones).  With fewer layers built than the model has (``layers``, or what ``quick``
    picks), each pass is timed on those layers and on the embedding and head alone, and the
    layers' share is scaled to all of them (:func:`_pass_time`), which the basis states.
    """
    spec = load_model(model)
    check_model(spec)
    built = plan_layers(spec, backend, layers, quick)
    sizes = sizes or (SIZES_QUICK if quick else SIZES_FULL)
    sweep = sweep or (SWEEP_QUICK if quick else SWEEP_FULL)
    reps = reps or (5 if quick else 20)
    if max(sizes) * 2 > backend.free_bytes() * MEMORY_SHARE:
        sizes = tuple(s for s in sizes if s * 2 <= backend.free_bytes() * MEMORY_SHARE)
    copies = []
    for n in sorted(sizes):
        copies.append((n, backend.timer(backend.copy_pair(n), reps)))
        log(f"copy of {n / 2**20:.3g} MiB: {copies[-1][1].median * 1e6:.1f} µs")
    fit_pts = [(n, t.median) for n, t in copies if n >= measurements.FETCH_FIT_MIN_BYTES]
    fit_pts = fit_pts or [(n, t.median) for n, t in copies]
    latency, bandwidth = fits.fit_latency_bandwidth([n for n, _ in fit_pts], [t for _, t in fit_pts])
    latency = max(latency, 0.0)
    big = max(sizes)
    mem = backend.timer(backend.device_copy(big), reps)
    log(
        f"fit: {latency * 1e6:.2f} µs + bytes / {bandwidth / 1e9:.2f} GB/s;"
        f" memory copy {2 * big / mem.median / 1e9:.1f} GB/s"
    )
    n = matmul_n or (1024 if quick else 4096)
    product = backend.timer(backend.matmul(n), max(3, reps // 4))
    log(f"{n}^3 {backend.dtype} product: {2 * n**3 / product.median / 1e12:.3g} TFLOP/s")
    make, _ = backend.forward(spec, built, 0)
    pass_reps = max(2 if quick else 3, reps // 4)  # a quick run's passes of a 70B model take most of its minute
    times = []
    for tokens in sorted(set(sweep) | {16}):
        times.append((tokens, _pass_time(backend, make, tokens, built, spec.n_layers, pass_reps)))
        scaled = f", {built} of {spec.n_layers} layers scaled to all" if built < spec.n_layers else ""
        log(f"forward pass over {tokens} tokens{scaled}: {times[-1][1].median * 1e3:.2f} ms")
    return Result(
        backend=backend.name,
        machine=backend.what,
        copy_what=backend.copy_what,
        dtype=backend.dtype,
        model=model,
        layers_built=built,
        layers_total=spec.n_layers,
        copies=tuple(copies),
        latency_s=latency,
        bandwidth=bandwidth,
        mem_bytes=2 * big,
        mem_copy=mem,
        matmul_n=n,
        matmul=product,
        sweep=tuple(times),
        weight_bytes=sum(_bytes_of(spec, backend, spec.n_layers)),
        reps=reps,
        date=dt.date.today().isoformat(),
    )


def _sig(x: float) -> str:
    return f"{x:.4g}"


def _pct(x: float) -> str:
    return f"{x * 100:.4g}%"


def widen(point: float, low: float, high: float, cap: float = math.inf) -> tuple[float, float]:
    """The uncertainty range of a measured ``point``: its spread ``low`` .. ``high``, at least :data:`RANGE_BAND` wide.

    Both ends in the unit of ``point``; the high end at most ``cap`` (1 for a fraction).
    The range always holds ``point`` (which must not exceed ``cap``).
    """
    return min(low, point * (1 - RANGE_BAND)), min(cap, max(high, point * (1 + RANGE_BAND)))


def _mfus(result: Result, params: int) -> dict[str, float]:
    """The MFU brackets and their range, from the sweep's medians and its repetitions' spread (fractions)."""

    def fractions(pick: Callable[[Timing], float]) -> list[float]:
        return [2 * params * tokens / pick(t) / result.matmul_rate for tokens, t in result.sweep]

    median = fractions(lambda t: t.median)
    half = len(median) // 2
    upper = median[half:]
    out = {
        "optimistic": min(1.0, max(median)),
        "typical": min(1.0, float(np.exp(np.mean(np.log(upper))))),
        "conservative": min(1.0, min(upper)),
    }
    slow, fast = fractions(lambda t: t.slowest)[half:], fractions(lambda t: t.fastest)
    out["low"] = min(min(slow), out["conservative"] * (1 - RANGE_BAND))
    out["high"] = min(1.0, max(max(fast), out["optimistic"] * (1 + RANGE_BAND)))
    return out


def _ranges(result: Result, params: int) -> dict[str, tuple[float, float, float]]:
    """``name -> (point, low, high)`` of every measured value the Monte Carlo draws (SI units, fractions)."""
    rate = 2 * result.matmul_n**3
    t16 = dict(result.sweep)[16]
    eff = min(1.0, result.weight_bytes / t16.median / result.mem_bandwidth)
    mfu = _mfus(result, params)
    return {
        "bandwidth": (result.bandwidth, *widen(result.bandwidth, *result.bandwidth_spread())),
        "peak": (
            result.matmul_rate,
            *widen(result.matmul_rate, rate / result.matmul.slowest, rate / result.matmul.fastest),
        ),
        "mem_bandwidth": (
            result.mem_bandwidth,
            *widen(
                result.mem_bandwidth,
                result.mem_bytes / result.mem_copy.slowest,
                result.mem_bytes / result.mem_copy.fastest,
            ),
        ),
        "mem_efficiency": (
            eff,
            *widen(
                eff,
                result.weight_bytes / t16.slowest / result.mem_bandwidth,
                result.weight_bytes / t16.fastest / result.mem_bandwidth,
                cap=1.0,
            ),
        ),
        "mfu": (mfu["typical"], mfu["low"], mfu["high"]),
    }


RANGE_WHAT = {
    "bandwidth": ("GB/s", 1e9, "the fitted copy bandwidth scaled by the largest copy's"),
    "peak": ("TFLOP/s", 1e12, "the matrix product's rate in its"),
    "mem_bandwidth": ("GB/s", 1e9, "the memory copy's rate in its"),
    "mem_efficiency": ("%", None, "the 16-token pass's memory efficiency in its"),
    "mfu": ("%", None, "the MFU brackets' passes in their"),
}
"""Unit, scale (None: a fraction written in per cent) and subject of each range's basis."""


def _range_records(result: Result, params: int, where: str) -> dict[str, dict[str, Any]]:
    """The ``uncertainty.*_low``/``_high`` records of every measured value, with the basis of each end."""
    records = {}
    for name, (_, low, high) in _ranges(result, params).items():
        unit, scale, subject = RANGE_WHAT[name]
        for end, value, rep in (("low", low, "slowest"), ("high", high, "fastest")):
            records[f"uncertainty.{name}_{end}"] = {
                "value": _pct(value) if scale is None else f"{_sig(value / scale)} {unit}",
                "provenance": "derived",
                "basis": f"{'lowest' if end == 'low' else 'highest'} value drawn: {subject} {rep} repetition"
                f" ({result.reps} timed), or the measured value {'less' if end == 'low' else 'plus'}"
                f" {RANGE_BAND:.0%} where that reaches further (one run does not see another run's variation)",
                "source": where,
            }
    return records


def assumption_set(result: Result) -> dict[str, Any]:
    """The YAML document of an assumption set from ``result``, in the seed's form.

    ``peak_flops`` is the measured matrix rate (no datasheet is read); the MFUs are the forward
    passes' FLOP rates as fractions of it (optimistic: the best pass, typical: the geometric mean
    of the passes of the sweep's upper half, conservative: the worst of those); the memory
    efficiency is the 16-token pass's weight stream over the measured device-copy rate.  Every
    value the book's Monte Carlo draws gets a range of its own (:func:`widen`), and the
    bandwidth brackets are that range's ends around the fitted bandwidth, so that the set holds
    together (:func:`kvtier.inputs.assumptions.check_consistency`).
    """
    base = seed()
    where = f"measured by kvtier measure on {result.machine}, {result.date}"
    spec = load_model(result.model)
    scaled = (
        f"; the passes ran {result.layers_built} of {result.layers_total} layers and, less the embedding and"
        f" head timed alone, were scaled by {result.layers_total}/{result.layers_built}"
        if result.layers_built != result.layers_total
        else ""
    )
    params = model_params(spec)
    mfu = _mfus(result, params)
    ranges = _ranges(result, params)
    bw_low, bw_high = ranges["bandwidth"][1:]
    fit_basis = (
        f"relative least squares of t = latency + bytes / bandwidth over {result.copy_what} of"
        f" {result.copies[0][0] / 2**10:g} KiB to {result.copies[-1][0] / 2**20:g} MiB"
        " (the fit uses those of 1 MiB and more)"
    )
    larger = ", ".join(str(t) for t, _ in result.sweep[len(result.sweep) // 2 :])
    records: dict[str, dict[str, Any]] = {
        "model": {
            "value": result.model,
            "provenance": "published-spec",
            "basis": "the model whose shapes were run",
            "source": base["model"].source if result.model == base["model"].value else f"config of {result.model}",
        },
        "param_count": {
            "value": None,
            "provenance": "derived",
            "basis": "exact count of the model's config",
            "source": f"config of {result.model}",
        },
        "fetch_latency": {
            "value": f"{_sig(result.latency_s * 1e6)} us",
            "provenance": "derived",
            "basis": fit_basis,
            "source": where,
        },
        "bandwidth.optimistic": {
            "value": f"{_sig(bw_high / 1e9)} GB/s",
            "provenance": "derived",
            "basis": "the high end of the measured bandwidth's range (uncertainty.bandwidth_high)",
            "source": where,
        },
        "bandwidth.mid": {
            "value": f"{_sig(result.bandwidth / 1e9)} GB/s",
            "provenance": "derived",
            "basis": fit_basis,
            "source": where,
        },
        "bandwidth.pessimistic": {
            "value": f"{_sig(bw_low / 1e9)} GB/s",
            "provenance": "derived",
            "basis": "the low end of the measured bandwidth's range (uncertainty.bandwidth_low)",
            "source": where,
        },
        "peak_flops": {
            "value": f"{_sig(result.matmul_rate / 1e12)} TFLOP/s",
            "provenance": "measured",
            "basis": f"the rate of one {result.matmul_n}^3 {result.dtype} matrix product (median of the timed"
            " calls); a measured ceiling, not a datasheet peak",
            "source": where,
        },
        "mfu.optimistic": {
            "value": _pct(mfu["optimistic"]),
            "provenance": "derived",
            "basis": f"the best forward pass's FLOP rate (2 N per token) over the peak above{scaled}",
            "source": where,
        },
        "mfu.typical": {
            "value": _pct(mfu["typical"]),
            "provenance": "derived",
            "basis": f"geometric mean of the FLOP rates of the sweep's larger passes ({larger} tokens)"
            f" over the peak above{scaled}",
            "source": where,
        },
        "mfu.conservative": {
            "value": _pct(mfu["conservative"]),
            "provenance": "derived",
            "basis": f"the slowest of those passes' FLOP rates over the peak above{scaled}",
            "source": where,
        },
        "illustrative.mfu": {
            "value": "typical",
            "provenance": "assumed",
            "basis": "the illustrative point regenerates at the measured typical MFU",
            "source": where,
        },
        "regen.model": {
            "value": "roofline",
            "provenance": "assumed",
            "basis": "regeneration bounded by compute and by the weight stream",
            "source": where,
        },
        "regen.mem_bandwidth": {
            "value": f"{_sig(result.mem_bandwidth / 1e9)} GB/s",
            "provenance": "measured",
            "basis": f"read plus write of a {result.mem_bytes / 2 / 2**20:g} MiB copy in device memory"
            " (median of the timed calls)",
            "source": where,
        },
        "regen.mem_efficiency": {
            "value": _pct(ranges["mem_efficiency"][0]),
            "provenance": "derived",
            "basis": f"the weights of the 16-token pass ({result.dtype}) over its time, as a fraction of the memory"
            f" rate above, at most 100 %{scaled}",
            "source": where,
        },
        **_range_records(result, params, where),
    }
    return {
        "name": f"measured-{result.backend}",
        "description": f"Assumptions measured by kvtier measure on {result.machine}, {result.date};"
        f" {result.copy_what}; the seed set's values elsewhere.",
        "assumptions": records,
    }


# ---------------------------------------------------------------------------
# the output file: checked before measuring, replaced only when measure wrote it
# ---------------------------------------------------------------------------


def marked(body: str) -> str:
    """``body`` under the first line that marks it as written by ``kvtier measure`` (:data:`MARK`)."""
    digest = hashlib.sha256(body.encode("utf-8")).hexdigest()[:32]
    rebuild = "rebuild the book with: kvtier build --assumptions THIS_FILE"
    return f"# Written by kvtier measure, mark {digest}; {rebuild}\n{body}"


def _ours(path: Path) -> bool:
    """Whether ``path`` is a file ``kvtier measure`` wrote and nobody changed since (its mark matches the rest)."""
    try:
        text = read_text_bounded(path, "assumptions file")
    except KvtierError:
        return False
    first, _, body = text.partition("\n")
    found = MARK.match(first)
    return bool(found) and marked(body) == text


def check_out(path: Path, force: bool = False) -> None:
    """Refuse an output ``measure`` may not write, before anything is measured (and again before the rename).

    The directory must exist and take a new file; a file already there must be one that
    ``kvtier measure`` wrote and nobody changed since, unless ``force``.  What is not a
    regular file (a directory, a device, a pipe) is never replaced; a symbolic link only
    with ``force`` (the link is replaced, not what it points to).

    Raises
    ------
    KvtierError
        One line naming ``--out`` and the file or directory.
    """
    shown = show(path)
    if path.is_dir():
        raise KvtierError(f"--out {shown}: is a directory; give the assumption file to write")
    directory = path.parent
    if not directory.is_dir():
        what = "is not a directory" if directory.exists() else "does not exist"
        raise KvtierError(f"--out {shown}: directory {show(directory)} {what}")
    try:
        fd, probe = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".probe", dir=directory)
        os.close(fd)
        os.unlink(probe)
    except (OSError, ValueError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc.__class__.__name__
        raise KvtierError(f"--out {shown}: cannot write in directory {show(directory)} ({why})") from None
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISLNK(mode):
        if not force:
            raise KvtierError(
                f"--out {shown}: is a symbolic link, not a file kvtier measure wrote; choose another file"
                " or give --force to replace the link"
            )
        return
    if stat.S_ISDIR(mode):
        raise KvtierError(f"--out {shown}: is a directory; give the assumption file to write")
    if not stat.S_ISREG(mode):
        raise KvtierError(f"--out {shown}: exists and is not a regular file; choose another file")
    if not force and not _ours(path):
        raise KvtierError(
            f"--out {shown}: exists and was not written by kvtier measure, or was changed since (no matching"
            " mark on its first line); choose another file or give --force to replace it"
        )


def _umask() -> int:
    """The process's umask (reading it means setting it; it is set back at once)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_atomically(path: Path, text: str, force: bool = False) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same directory and a rename.

    The file gets the permissions the umask gives a new file (``0o666 & ~umask``);
    :func:`check_out` runs again just before the rename, so a file that appeared meanwhile
    is not lost.
    """
    path = Path(path)
    check_out(path, force)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise KvtierError(f"--out {show(path)}: cannot write ({exc.strerror or exc.__class__.__name__})") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
            handle.flush()
            os.fchmod(handle.fileno(), 0o666 & ~_umask())
            os.fsync(handle.fileno())
        check_out(path, force)
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise KvtierError(f"--out {show(path)}: cannot write ({exc.strerror or exc.__class__.__name__})") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_set(result: Result, path: Path, force: bool = False) -> None:
    """Write ``result``'s assumption set to ``path`` atomically, after checking that it loads and is consistent."""
    doc = assumption_set(result)
    text = marked(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=100))
    with tempfile.TemporaryDirectory() as scratch:
        probe = Path(scratch) / "check.yaml"
        probe.write_text(text, encoding="utf-8")
        check_consistency(load_assumptions(probe))
    write_atomically(path, text, force)


def resolve_model(spec: str) -> str:
    """``--model`` as the set records it: a preset's name, or a config path made absolute."""
    if spec in PRESETS or config_path(spec) is None:
        return spec
    return os.path.abspath(spec)
