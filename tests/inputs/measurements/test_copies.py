"""kvtier.inputs.measurements.copies: published copy throughputs, and the per-copy cost the seed derives from them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kvtier import Scenario
from kvtier.errors import KvtierError
from kvtier.inputs.measurements.copies import copy_series, read_copy_series


def test_the_batched_dma_cost_is_the_fit_to_vllms_published_throughput():
    dma = copy_series()["batched-dma"]
    # the 4 KiB point: 4,096 B at 1.1 GB/s = 3.724 us a block; the 16 MiB one: 16,777,216 B at 51.2 GB/s = 327.68 us
    assert dma.times_s[0] == pytest.approx(4096 / 1.1e9) and dma.times_s[-1] == pytest.approx(16_777_216 / 51.2e9)
    cost, bandwidth = dma.fit()
    # the small blocks set the cost (3.72 us less 4,096 B / 52.6 GB/s = 0.08 us), the large ones the bandwidth
    assert cost == pytest.approx(3.534e-6, rel=1e-3) and bandwidth == pytest.approx(52.62e9, rel=1e-3)
    assert np.max(np.abs(dma.residuals())) < 0.06  # every point within 6 %, as the seed's basis says
    # the seed's fetch.copy_cost.batched_dma is that fit to three figures, derived
    record = Scenario().assumptions["fetch.copy_cost.batched_dma"]
    assert (record.display, record.provenance) == ("3.53 µs", "derived")
    assert f"{cost * 1e6:.3g}" == "3.53"


def test_the_kernel_series_fits_a_fifth_of_a_microsecond_a_block():
    kernel = copy_series()["kernel"]
    cost, bandwidth = kernel.fit()
    # 4 KiB at 12.5 GB/s = 0.328 us a block, less 4,096 B / 48 GB/s = 0.085 us: about 0.2 us fixed
    assert cost == pytest.approx(0.2043e-6, rel=1e-3) and bandwidth == pytest.approx(48.02e9, rel=1e-3)
    assert "0.20 us a block" in Scenario().assumptions["fetch.copy_cost.kernel"].basis


def test_a_bad_series_is_one_line_naming_the_file_and_the_field(tmp_path: Path):
    path = tmp_path / "copies.yaml"
    path.write_text(
        "series:\n  - {method: m, what: w, source: s, date: d, setup: x, reading: plot,"
        " sizes_kib: [4, 8], throughput_gbps: [1.0, 2.0, 3.0]}\n"
    )
    with pytest.raises(KvtierError) as err:
        read_copy_series(path)
    assert str(err.value).endswith("series 1: 'sizes_kib' and 'throughput_gbps' must be as long as each other")
    path.write_text("series:\n  - {method: m, what: w, source: s, date: d, setup: x, reading: plot}\n")
    with pytest.raises(KvtierError, match=r"series 1: field 'sizes_kib' must be a list of at least two numbers"):
        read_copy_series(path)
