"""What the measured page holds its numbers to: the error of a model, the fitted fetch, the H200's datasheet."""

from __future__ import annotations

import pytest

from kvtier.report.pages.measured import shipped


def test_an_error_is_a_percentage_of_the_measured_value_negative_when_the_model_is_short():
    # 110 against 100 measured: 10 % over; 90: 10 % short
    assert shipped.error_pct(110.0, 100.0) == pytest.approx(10.0)
    assert shipped.error_pct(90.0, 100.0) == pytest.approx(-10.0)


def test_the_fetch_model_pays_the_fitted_latency_once_a_transfer():
    latency, bandwidth = shipped.fits().fetch["h2d_pinned"]
    # the shipped fit: about 9.049 us a transfer and 55.14 GB/s; a 5 MiB block in one copy: 104.13 us
    assert shipped.fetch_model_s(1, shipped.BLOCK_BYTES) == pytest.approx(104.13e-6, abs=0.01e-6)
    # in 160 copies of 32 KiB: 159 more latencies, the same bytes
    one, many = shipped.fetch_model_s(1, shipped.BLOCK_BYTES), shipped.fetch_model_s(160, shipped.BLOCK_BYTES)
    assert many - one == pytest.approx(159 * latency, rel=1e-12)
    assert one == pytest.approx(latency + 5 * 2**20 / bandwidth, rel=1e-12)


def test_the_block_is_16_tokens_of_llama_3_70b_and_the_datasheet_is_the_h200_s():
    # 16 tokens x 327,680 B (80 layers x 2 x 8 KV heads x 128 x 2 B) = 5 MiB
    assert shipped.BLOCK_BYTES == 16 * 327_680 == 5 * 2**20 and shipped.BLOCK_TOKENS == 16
    peak, bandwidth = shipped.h200_records()
    # 989 TFLOP/s dense bf16 and 4.8 TB/s of HBM3e
    assert (peak.value, bandwidth.value) == (989e12, 4.8e12)
