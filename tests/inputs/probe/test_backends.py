"""kvtier.inputs.probe.backends: the CUDA path on a fake PyTorch runs what a GPU run would; no GPU is one line."""

from __future__ import annotations

import sys
import types
from typing import Any

import numpy as np
import pytest

from kvtier.errors import KvtierError
from kvtier.inputs.probe import backends, measuring

CALLS: list[tuple[Any, ...]] = []


EVENT_MS = 0.5  # every timed call takes 0.5 ms on the fake GPU


class T:
    """A fake tensor over a numpy array, on a device, with a dtype name."""

    def __init__(self, a: Any, device: str = "cpu", dtype: str = "float32", pinned: bool = False):
        self.a, self.device, self.dtype, self.pinned = np.asarray(a), device, dtype, pinned

    # creation-side methods
    def pin_memory(self) -> T:
        CALLS.append(("pin_memory", self.a.nbytes))
        return T(self.a, self.device, self.dtype, pinned=True)

    def copy_(self, other: T, non_blocking: bool = False) -> T:
        CALLS.append(("copy_", other.device, self.device, other.pinned, non_blocking, other.a.nbytes))
        self.a[...] = other.a
        return self

    def normal_(self, mean: float, std: float, generator: Any = None) -> T:
        self.a = generator.rng.normal(mean, std, self.a.shape).astype(np.float32)
        return self

    def numel(self) -> int:
        return int(self.a.size)

    # arithmetic the forward pass uses
    def t(self) -> T:
        return T(self.a.T, self.device, self.dtype)

    def __matmul__(self, o: T) -> T:
        CALLS.append(("matmul", self.device, o.device, self.dtype, o.dtype, self.a.shape, o.a.shape))
        return T(self.a @ o.a, self.device, self.dtype)

    def __mul__(self, o: Any) -> T:
        return T(self.a * (o.a if isinstance(o, T) else o), self.device, self.dtype)

    __rmul__ = __mul__

    def __add__(self, o: Any) -> T:
        return T(self.a + (o.a if isinstance(o, T) else o), self.device, self.dtype)

    def __getitem__(self, i: Any) -> T:
        return T(self.a[i], self.device, self.dtype)

    def split(self, sizes: list[int], dim: int = -1) -> list[T]:
        cuts = np.cumsum(sizes)[:-1]
        assert sum(sizes) == self.a.shape[dim]
        return [T(p, self.device, self.dtype) for p in np.split(self.a, cuts, axis=dim)]

    def view(self, *shape: int) -> T:
        return T(self.a.reshape(shape), self.device, self.dtype)

    reshape = view

    def transpose(self, i: int, j: int) -> T:
        return T(np.swapaxes(self.a, i, j), self.device, self.dtype)

    def float(self) -> T:
        return T(self.a, self.device, "float32")

    def pow(self, p: float) -> T:
        return T(self.a**p, self.device, self.dtype)

    def mean(self, dim: int, keepdim: bool = False) -> T:
        return T(self.a.mean(axis=dim, keepdims=keepdim), self.device, self.dtype)

    def to(self, dtype: str) -> T:
        return T(self.a, self.device, dtype)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.a.shape


class Event:
    def __init__(self, enable_timing: bool = False):
        assert enable_timing
        self.recorded = self.synced = False

    def record(self) -> None:
        self.recorded = True
        CALLS.append(("event.record",))

    def synchronize(self) -> None:
        self.synced = True
        CALLS.append(("event.synchronize",))

    def elapsed_time(self, end: Event) -> float:
        assert self.recorded and end.recorded and end.synced  # read only after the end event completed
        return EVENT_MS


class Generator:
    def __init__(self, device: Any = None):
        self.device, self.rng = device, np.random.default_rng(0)

    def manual_seed(self, seed: int) -> None:
        CALLS.append(("manual_seed", seed))
        self.rng = np.random.default_rng(seed)


def _fake_torch() -> tuple[types.ModuleType, types.ModuleType]:
    torch = types.ModuleType("torch")
    torch.__version__ = "0.0-fake"
    torch.bfloat16, torch.uint8 = "bfloat16", "uint8"
    torch.version = types.SimpleNamespace(cuda="12.fake")
    torch.device = lambda name: str(name)
    torch.Generator = Generator

    def dev(device: Any) -> str:
        return str(device) if device is not None else "cpu"

    torch.ones = lambda *shape, dtype=None, device=None: T(
        np.ones(shape, np.uint8 if dtype == "uint8" else np.float32), dev(device), dtype
    )
    torch.empty = lambda *shape, dtype=None, device=None: T(
        np.zeros(shape, np.uint8 if dtype == "uint8" else np.float32), dev(device), dtype
    )
    torch.empty_like = lambda t: T(np.zeros_like(t.a), t.device, t.dtype)

    def randn(*shape: int, device: Any = None, dtype: Any = None) -> T:
        return T(np.random.default_rng(1).normal(size=shape).astype(np.float32), dev(device), dtype)

    def randint(low: int, high: int, size: tuple[int, ...], device: Any = None, generator: Any = None) -> T:
        return T(generator.rng.integers(low, high, size), dev(device), "int64")

    torch.randn, torch.randint = randn, randint
    torch.rsqrt = lambda t: T(1.0 / np.sqrt(t.a), t.device, t.dtype)
    torch.inference_mode = lambda: lambda fn: fn
    cuda = types.SimpleNamespace(
        is_available=lambda: True,
        get_device_properties=lambda i: types.SimpleNamespace(name="Fake GPU", multi_processor_count=132),
        synchronize=lambda: CALLS.append(("cuda.synchronize",)),
        Event=Event,
        mem_get_info=lambda: (80e9, 80e9),
    )
    torch.cuda = cuda
    functional = types.ModuleType("torch.nn.functional")

    def embedding(ids: T, w: T) -> T:
        return T(w.a[ids.a], w.device, w.dtype)

    def sdpa(q: T, k: T, v: T, is_causal: bool = False, enable_gqa: bool = False) -> T:
        CALLS.append(("sdpa", q.shape, k.shape, v.shape, is_causal, enable_gqa))
        return T(np.zeros(q.shape, np.float32), q.device, q.dtype)

    functional.embedding = embedding
    functional.scaled_dot_product_attention = sdpa
    functional.silu = lambda t: T(t.a / (1 + np.exp(-t.a)), t.device, t.dtype)
    nn = types.ModuleType("torch.nn")
    nn.functional = functional
    torch.nn = nn
    return torch, functional


@pytest.fixture
def fake_torch(monkeypatch):
    torch, functional = _fake_torch()
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setitem(sys.modules, "torch.nn", torch.nn)
    monkeypatch.setitem(sys.modules, "torch.nn.functional", functional)
    CALLS.clear()
    return torch


def test_the_cuda_path_runs_what_a_gpu_run_would(fake_torch, tiny):
    backend = backends.pick_backend("cuda")
    assert backend.name == "cuda" and backend.dtype == "bf16" and backend.element_bytes == 2
    assert backend.what == "Fake GPU (132 SMs; PyTorch 0.0-fake, CUDA 12.fake)"
    r = measuring.measure(tiny, backend, sizes=(4096, 2**20, 4 * 2**20), sweep=(1, 16, 64), matmul_n=64, reps=3)
    copies = [c for c in CALLS if c[0] == "copy_"]
    # host to device: a pinned host buffer, copied without blocking, one per size and timing (warm-up + 3 reps)
    h2d = [c for c in copies if c[1] == "cpu"]
    assert {c[5] for c in h2d} == {4096, 2**20, 4 * 2**20}
    assert all(c[2] == "cuda" and c[3] and c[4] for c in h2d)
    assert len(h2d) == 3 * (1 + 3)
    assert ("pin_memory", 4096) in CALLS
    # the memory copy: device to device, 4 MiB, the largest size
    d2d = [c for c in copies if c[1] == "cuda"]
    assert d2d and {c[5] for c in d2d} == {4 * 2**20} and not any(c[3] for c in d2d)
    # bf16 products on the device: the 64-cubed one, then the passes' matrices
    assert ("matmul", "cuda", "cuda", "bfloat16", "bfloat16", (64, 64), (64, 64)) in CALLS
    # every timing: a start and an end event recorded, the end synchronised before reading
    assert CALLS.count(("event.record",)) == 2 * CALLS.count(("event.synchronize",))
    # the passes: causal grouped-query attention with the tiny model's 4 query and 2 KV heads of 16
    sdpa = {c[1:] for c in CALLS if c[0] == "sdpa"}
    assert sdpa == {((1, 4, n, 16), (1, 2, n, 16), (1, 2, n, 16), True, True) for n in (1, 16, 64)}
    assert ("manual_seed", 0) in CALLS
    # each timed call took 0.5 ms by the fake events: the copies and passes read it back, in seconds
    assert r.backend == "cuda" and r.layers_built == r.layers_total == 3
    assert all(t.median == pytest.approx(EVENT_MS / 1e3) for _, t in r.copies)
    assert [n for n, _ in r.sweep] == [1, 16, 64]
    assert all(t.median == pytest.approx(EVENT_MS / 1e3) for _, t in r.sweep)


def test_no_gpu_is_one_line(fake_torch):
    fake_torch.cuda.is_available = lambda: False
    with pytest.raises(KvtierError, match="--device cuda: PyTorch sees no CUDA GPU on this machine"):
        backends.pick_backend("cuda")
