"""kvtier.inputs.probe.measuring: the CPU run measures every side, and fewer layers built are scaled to all."""

from __future__ import annotations

import pytest

from kvtier.inputs.probe import backends, document, measuring


@pytest.fixture(scope="module")
def result(tiny) -> measuring.Result:
    return measuring.measure(
        tiny, backends.cpu_backend(), sizes=(4096, 2**20, 4 * 2**20), sweep=(1, 16, 64), matmul_n=512, reps=3
    )


def test_the_cpu_run_measures_every_side(result):
    assert result.backend == "cpu" and "no GPU" in result.machine
    assert [n for n, _ in result.copies] == [4096, 2**20, 4 * 2**20]
    assert all(0 < t.fastest <= t.median <= t.slowest for _, t in result.copies)
    assert result.bandwidth > 0 and result.latency_s >= 0
    assert result.mem_bandwidth > 0 and result.matmul_rate > 0
    assert [t for t, _ in result.sweep] == [1, 16, 64]
    assert result.layers_built == result.layers_total == 3
    # float32 weights: 3 layers x 36,864 + embedding and head 2 x 256 x 64 = 143,360 parameters x 4 B
    assert result.weight_bytes == 143_360 * 4
    assert result.reps == 3


def test_measuring_fewer_layers_scales_to_all_and_says_so(tiny, tmp_path):
    r = measuring.measure(
        tiny, backends.cpu_backend(), layers=1, sizes=(4096, 2**20), sweep=(16,), matmul_n=512, reps=2
    )
    assert (r.layers_built, r.layers_total) == (1, 3)
    doc = document.assumption_set(r)
    assert (
        "ran 1 of 3 layers and, less the embedding and head timed alone, were scaled by 3/1"
        in (doc["assumptions"]["mfu.typical"]["basis"])
    )


def test_only_the_layers_share_of_a_pass_is_scaled():
    # a fake backend: the embedding and head take 1 ms, each layer 2 ms. Two of 80 layers built take 5 ms; the
    # pass over all 80 is 1 + 80 x 2 = 161 ms (scaling the whole 5 ms by 80/2 would give 200 ms, 24 % too slow)
    backend = backends.cpu_backend()
    backend.timer = lambda fn, reps: fn()
    make = lambda tokens, used: lambda: backends.Timing(1e-3 + 2e-3 * used, 0.9e-3 + 2e-3 * used, 2e-3 + 2e-3 * used)  # noqa: E731
    t = measuring._pass_time(backend, make, 16, 2, 80, 3)
    assert t.median == pytest.approx(0.161)
    # fastest and slowest keep their ratio to the median: 4.9 / 5 and 6 / 5 of 161 ms
    assert (t.fastest, t.slowest) == (pytest.approx(0.161 * 4.9 / 5), pytest.approx(0.161 * 6 / 5))
    assert measuring._pass_time(backend, make, 16, 80, 80, 3).median == pytest.approx(0.161)  # all built: as timed
