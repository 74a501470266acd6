"""``kvtier measure``: measure the machine it runs on and write an assumption set of the seed's form.

It times both sides of the fetch-or-regenerate question on the hardware at hand:

- **copies** of 4 KiB up to 1 GiB (``--quick``: 64 MiB), fitted to ``latency + bytes /
  bandwidth`` (:func:`kvtier.measurements.fit_latency_bandwidth`): on a CUDA machine pinned
  host-to-device and device-to-host copies, the path to host or CXL memory; without one,
  copies inside host memory, which no tier link resembles (every basis says so);
- **device-memory bandwidth**: a large device-to-device (or host-memory) copy, read plus write;
- **the matrix rate**: an ``n x n x n`` product in bf16 (CUDA) or float32 (numpy has no bf16);
- **forward passes** of the chosen model's shapes with random weights (nothing downloaded):
  16 tokens and a short token sweep, from which the MFU of the matrix rate and the memory
  efficiency of a lone pass are derived.  A model whose weights do not fit in memory is
  refused with one line that offers ``--layers N``: measure N layers and scale to all of them
  (the basis then says so).

The result is written atomically (a temporary file in the same directory, then a rename), so
an interrupted run never leaves a half-written file; ``kvtier build --assumptions FILE``
rebuilds the book from it.  PyTorch is only needed for the CUDA path (an optional extra).
"""

from __future__ import annotations

import argparse
import datetime as dt
import math
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from kvtier import measurements
from kvtier.assumptions import check_consistency, load_assumptions, seed
from kvtier.errors import KvtierError, show
from kvtier.models import ModelSpec, load_model

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


def _log(message: str) -> None:
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
    timer: Callable[[Callable[[], Any], int], float]
    copy_pair: Callable[[int], Callable[[], Any]]
    device_copy: Callable[[int], Callable[[], Any]]
    matmul: Callable[[int], Callable[[], Any]]
    forward: Callable[[ModelSpec, int, int], tuple[Callable[[int], Callable[[], Any]], float]]
    extra: dict[str, Any] = field(default_factory=dict)


def _median_time(fn: Callable[[], Any], reps: int) -> float:
    """Median wall time of ``fn()`` over ``reps`` calls after one warm-up (s)."""
    fn()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def _cpu_free_bytes() -> float:
    try:
        return float(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX systems
        return 8.0 * 2**30


def _rms(x: np.ndarray) -> np.ndarray:
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + 1e-5)


def _numpy_forward(spec: ModelSpec, layers: int, seed_: int) -> tuple[Callable[[int], Callable[[], Any]], float]:
    """A decoder with ``spec``'s shapes and ``layers`` layers of random float32 weights, in numpy.

    Returns a factory ``tokens -> pass`` and the weight bytes held.  RMSNorm, grouped-query
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

    def w(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape, dtype=np.float32) * 0.02).astype(np.float32)

    weights = [(w(h, q + 2 * kv), w(q, h), w(h, 2 * f), w(f, h)) for _ in range(layers)]
    embed, head = w(spec.vocab_size, h), w(h, spec.vocab_size)
    held = sum(a.nbytes for layer in weights for a in layer) + embed.nbytes + head.nbytes
    group = spec.n_heads // spec.n_kv_heads

    def make(tokens: int) -> Callable[[], Any]:
        ids = rng.integers(0, spec.vocab_size, tokens)
        mask = np.triu(np.full((tokens, tokens), -np.inf, dtype=np.float32), 1)

        def run() -> np.ndarray:
            x = embed[ids]
            for wqkv, wo, wgu, wd in weights:
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
        timer=_median_time,
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

    def timer(fn: Callable[[], Any], reps: int) -> float:
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
        return float(np.median(times))

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

    def forward(spec: ModelSpec, layers: int, seed_: int) -> tuple[Callable[[int], Callable[[], Any]], float]:
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

        def make(tokens: int) -> Callable[[], Any]:
            ids = torch.randint(0, spec.vocab_size, (tokens,), device=dev, generator=g)

            @torch.inference_mode()
            def run() -> Any:
                x = F.embedding(ids, embed)[None]
                for wqkv, wo, wgu, wd in weights:
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


def _check_model(spec: ModelSpec) -> None:
    if spec.attention == "MLA" or spec.is_moe:
        raise KvtierError(
            f"model '{spec.name}': kvtier measure builds dense MHA/GQA decoders only; this one is"
            f" {'MLA' if spec.attention == 'MLA' else 'a mixture of experts'}"
        )


def plan_layers(spec: ModelSpec, backend: Backend, layers: int | None) -> int:
    """How many layers to build: all of them, or ``layers``; refuse what does not fit in memory.

    Raises
    ------
    KvtierError
        One line: the model's weights do not fit in the free memory (with the figures) and
        ``--layers N`` measures N layers and scales to all of them.
    """
    per_layer = layer_params(spec) * backend.element_bytes
    rest = 2 * spec.vocab_size * spec.hidden_size * backend.element_bytes
    budget = backend.free_bytes() * MEMORY_SHARE
    if layers is not None:
        if not 1 <= layers <= spec.n_layers:
            raise KvtierError(f"--layers must be between 1 and {spec.n_layers} for model '{spec.name}', got {layers}")
        if rest + layers * per_layer > budget:
            raise KvtierError(
                f"--layers {layers}: {layers} layers of model '{spec.name}' need"
                f" {(rest + layers * per_layer) / 1e9:.1f} GB in {backend.dtype}, more than"
                f" {budget / 1e9:.1f} GB ({MEMORY_SHARE:.0%} of the free memory); try fewer"
            )
        return layers
    need = rest + spec.n_layers * per_layer
    if need > budget:
        fit = max(1, int((budget - rest) // per_layer))
        raise KvtierError(
            f"model '{spec.name}' needs {need / 1e9:.1f} GB of {backend.dtype} weights, more than"
            f" {budget / 1e9:.1f} GB ({MEMORY_SHARE:.0%} of the free memory); measure fewer layers and scale"
            f" to all {spec.n_layers}: --layers {min(fit, spec.n_layers)}"
        )
    return spec.n_layers


@dataclass(frozen=True)
class Result:
    """What a run measured (SI units) and how, before it becomes an assumption set."""

    backend: str
    machine: str
    copy_what: str
    dtype: str
    model: str
    layers_built: int
    layers_total: int
    copies: tuple[tuple[int, float], ...]
    latency_s: float
    bandwidth: float
    mem_bandwidth: float
    matmul_n: int
    matmul_rate: float
    sweep: tuple[tuple[int, float], ...]
    weight_bytes: float
    date: str


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
    small ones).  With ``layers`` below the model's count, the forward passes are timed on
    those layers and scaled by ``layers_total / layers_built``, the embedding and head with
    them (an overestimate by their share of the time), which the basis states.
    """
    spec = load_model(model)
    _check_model(spec)
    built = plan_layers(spec, backend, layers)
    sizes = sizes or (SIZES_QUICK if quick else SIZES_FULL)
    sweep = sweep or (SWEEP_QUICK if quick else SWEEP_FULL)
    reps = reps or (5 if quick else 20)
    if max(sizes) * 2 > backend.free_bytes() * MEMORY_SHARE:
        sizes = tuple(s for s in sizes if s * 2 <= backend.free_bytes() * MEMORY_SHARE)
    copies = []
    for n in sorted(sizes):
        copies.append((n, backend.timer(backend.copy_pair(n), reps)))
        _log(f"copy of {n / 2**20:.3g} MiB: {copies[-1][1] * 1e6:.1f} µs")
    fit_pts = [(n, t) for n, t in copies if n >= measurements.FETCH_FIT_MIN_BYTES] or copies
    latency, bandwidth = measurements.fit_latency_bandwidth([n for n, _ in fit_pts], [t for _, t in fit_pts])
    latency = max(latency, 0.0)
    big = max(sizes)
    mem_bw = 2 * big / backend.timer(backend.device_copy(big), reps)
    _log(f"fit: {latency * 1e6:.2f} µs + bytes / {bandwidth / 1e9:.2f} GB/s; memory copy {mem_bw / 1e9:.1f} GB/s")
    n = matmul_n or (1024 if quick else 4096)
    rate = 2 * n**3 / backend.timer(backend.matmul(n), max(3, reps // 4))
    _log(f"{n}^3 {backend.dtype} product: {rate / 1e12:.3g} TFLOP/s")
    make, held = backend.forward(spec, built, 0)
    scale = spec.n_layers / built
    times = []
    for tokens in sorted(set(sweep) | {16}):
        t = backend.timer(make(tokens), max(3, reps // 4))
        times.append((tokens, t * scale))
        _log(f"forward pass over {tokens} tokens ({built} of {spec.n_layers} layers): {t * 1e3:.2f} ms")
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
        mem_bandwidth=mem_bw,
        matmul_n=n,
        matmul_rate=rate,
        sweep=tuple(times),
        weight_bytes=held * scale,
        date=dt.date.today().isoformat(),
    )


def _sig(x: float) -> str:
    return f"{x:.4g}"


def assumption_set(result: Result) -> dict[str, Any]:
    """The YAML document of an assumption set from ``result``, in the seed's form.

    ``peak_flops`` is the measured matrix rate (no datasheet is read); the MFUs are the forward
    passes' FLOP rates as fractions of it (optimistic: the best pass, typical: the geometric mean
    of the passes of the sweep's upper half, conservative: the worst of those); the memory
    efficiency is the 16-token pass's weight stream over the measured device-copy rate.  The
    bandwidth brackets around the measured one keep the seed's values unless the measured one
    falls outside them, where the bracket is set to it so that they stay ordered.
    """
    base = seed()
    where = f"measured by kvtier measure on {result.machine}, {result.date}"
    spec = load_model(result.model)
    scaled = (
        f"; the passes ran {result.layers_built} of {result.layers_total} layers and were scaled by"
        f" {result.layers_total}/{result.layers_built}"
        if result.layers_built != result.layers_total
        else ""
    )
    params = spec.n_layers * layer_params(spec) + 2 * spec.vocab_size * spec.hidden_size
    fractions = [2 * params * tokens / t / result.matmul_rate for tokens, t in result.sweep]
    upper = fractions[len(fractions) // 2 :]
    typical = min(1.0, float(np.exp(np.mean(np.log(upper)))))
    optimistic = min(1.0, max(fractions))
    conservative = min(1.0, min(upper))
    t16 = dict(result.sweep)[16]
    efficiency = min(1.0, result.weight_bytes / t16 / result.mem_bandwidth)
    fit_basis = (
        f"relative least squares of t = latency + bytes / bandwidth over {result.copy_what} of"
        f" {min(n for n, _ in result.copies) / 2**10:g} KiB to {max(n for n, _ in result.copies) / 2**20:g} MiB"
        " (the fit uses those of 1 MiB and more)"
    )
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
        "bandwidth.mid": {
            "value": f"{_sig(result.bandwidth / 1e9)} GB/s",
            "provenance": "derived",
            "basis": fit_basis,
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
            "value": f"{optimistic * 100:.4g}%",
            "provenance": "derived",
            "basis": f"the best forward pass's FLOP rate (2 N per token) over the peak above{scaled}",
            "source": where,
        },
        "mfu.typical": {
            "value": f"{typical * 100:.4g}%",
            "provenance": "derived",
            "basis": "geometric mean of the FLOP rates of the sweep's larger passes"
            f" ({', '.join(str(t) for t, _ in result.sweep[len(fractions) // 2 :])} tokens)"
            f" over the peak above{scaled}",
            "source": where,
        },
        "mfu.conservative": {
            "value": f"{conservative * 100:.4g}%",
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
            "basis": f"read plus write of a {max(n for n, _ in result.copies) / 2**20:g} MiB copy in device memory"
            " (median of the timed calls)",
            "source": where,
        },
        "regen.mem_efficiency": {
            "value": f"{efficiency * 100:.4g}%",
            "provenance": "derived",
            "basis": f"the weights of the 16-token pass ({result.dtype}) over its time, as a fraction of the memory"
            f" rate above, at most 100 %{scaled}",
            "source": where,
        },
    }
    for label, op in (("optimistic", max), ("pessimistic", min)):
        key = f"bandwidth.{label}"
        seed_value = float(base[key].value)  # type: ignore[arg-type]
        if op(seed_value, result.bandwidth) != seed_value:
            records[key] = {
                "value": f"{_sig(result.bandwidth / 1e9)} GB/s",
                "provenance": "derived",
                "basis": f"the seed's {base[key].display} moved to the measured bandwidth.mid to keep"
                " the brackets ordered",
                "source": where,
            }
    return {
        "name": f"measured-{result.backend}",
        "description": f"Assumptions measured by kvtier measure on {result.machine}, {result.date};"
        f" {result.copy_what}; the seed set's values elsewhere.",
        "assumptions": records,
    }


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same directory and a rename."""
    path = Path(path)
    if path.is_dir():
        raise KvtierError(f"{show(path)}: is a directory; give the assumption file to write")
    directory = path.parent if str(path.parent) else Path(".")
    if not directory.is_dir():
        raise KvtierError(f"{show(path)}: directory {show(directory)} does not exist")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_set(result: Result, path: Path) -> None:
    """Write ``result``'s assumption set to ``path`` atomically, after checking that it loads and is consistent."""
    doc = assumption_set(result)
    text = "# Written by kvtier measure; rebuild the book with: kvtier build --assumptions THIS_FILE\n"
    text += yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=100)
    with tempfile.TemporaryDirectory() as scratch:
        probe = Path(scratch) / "check.yaml"
        probe.write_text(text, encoding="utf-8")
        check_consistency(load_assumptions(probe))
    write_atomically(path, text)


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register ``measure --out FILE [--model M] [--device D] [--quick] [--layers N]`` on ``subparsers``."""
    p = subparsers.add_parser(
        "measure",
        help="measure this machine (copies, memory, matrix rate, forward passes) and write an assumption set",
        description="Time host copies, device memory, a matrix product and forward passes of a model's shapes"
        " with random weights on this machine (a CUDA GPU through PyTorch, else the CPU through numpy), and write"
        " an assumption set for `kvtier build --assumptions`. The file is written atomically.",
    )
    p.add_argument("--out", required=True, type=Path, metavar="FILE", help="the assumption set to write (YAML)")
    p.add_argument("--model", default="llama-3-70b", help="model preset or config.json path (default llama-3-70b)")
    p.add_argument("--device", default="auto", choices=DEVICES, help="where to measure (default: auto)")
    p.add_argument("--quick", action="store_true", help="fewer sizes, tokens and repetitions (under a minute on a CPU)")
    p.add_argument("--layers", type=int, metavar="N", help="build N layers and scale the passes to all of them")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    """Measure and write ``args.out``; return 0 (errors raise :class:`~kvtier.errors.KvtierError`)."""
    backend = pick_backend(args.device)
    _log(f"measuring on {backend.what}")
    result = measure(args.model, backend, quick=args.quick, layers=args.layers)
    write_set(result, args.out)
    _log(f"wrote {args.out}; rebuild the book with: kvtier build --assumptions {args.out}")
    return 0
