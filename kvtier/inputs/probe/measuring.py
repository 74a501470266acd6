"""A measurement run: copies, device memory, the matrix rate and forward passes timed into a :class:`Result`.

- **copies** of 4 KiB up to 1 GiB (``--quick``: 64 MiB), fitted to ``latency + bytes /
  bandwidth`` (:func:`kvtier.formulas.fits.fit_latency_bandwidth`): on a CUDA machine pinned
  host-to-device and device-to-host copies, the path to host or CXL memory; without one,
  copies inside host memory, which no tier link resembles (every basis says so);
- **device-memory bandwidth**: a large device-to-device (or host-memory) copy, read plus write;
- **the matrix rate**: an ``n x n x n`` product in bf16 (CUDA) or float32 (numpy has no bf16);
- **forward passes** of the chosen model's shapes with random weights (nothing downloaded):
  16 tokens and a short token sweep; with fewer layers built than the model has, scaled to all
  of them.
"""

from __future__ import annotations

import datetime as dt
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kvtier.formulas import fits
from kvtier.inputs import measurements
from kvtier.inputs.models import load_model
from kvtier.inputs.probe.backends import Backend, Timing
from kvtier.inputs.probe.planning import MEMORY_SHARE, plan_layers, weight_bytes_of
from kvtier.inputs.probe.shapes import check_model

SIZES_FULL = tuple(4096 * 4**k for k in range(10)) + (5 * 2**20,)
"""Copy sizes of a full run (B): 4 KiB to 1 GiB by factors of 4, and the chapter's 5 MiB block."""
SIZES_QUICK = tuple(4096 * 4**k for k in range(8)) + (5 * 2**20,)
"""Copy sizes of a quick run (B): 4 KiB to 64 MiB, and 5 MiB."""
SWEEP_FULL = (1, 16, 64, 256, 1024)
"""Tokens per forward pass of a full run's sweep."""
SWEEP_QUICK = (1, 16, 64)
"""Tokens per forward pass of a quick run's sweep."""


def log(message: str) -> None:
    """Print ``message`` on stderr as a line of ``kvtier measure``'s progress."""
    print(f"kvtier measure: {message}", file=sys.stderr, flush=True)


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
        weight_bytes=sum(weight_bytes_of(spec, backend, spec.n_layers)),
        reps=reps,
        date=dt.date.today().isoformat(),
    )
