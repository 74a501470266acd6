"""Published engine measurements (:mod:`kvtier.inputs.measurements.published`): read, validated, reproducible."""

from __future__ import annotations

import pytest

from kvtier.errors import KvtierError
from kvtier.inputs.measurements.published import published_measurements, read_published

ROW = """\
measurements:
  - id: one
    quantity: ttft
    value_ms: 47.77
    reading: quoted
    accelerator: h100-sxm
    engine: tensorrt-llm
    engine_setup: NIM 1.8.0
    model: llama-3.1-70b
    tp: 2
    weight_dtype: fp8
    kv_dtype: bf16
    tokens: 500
    source: NIM benchmarking guide
    date: 2026-07-20
    setup: concurrency 1
"""


def test_the_shipped_rows_each_name_a_source_a_date_and_a_setup():
    rows = published_measurements()
    # 6 rows, then the charts' points past 16,384 tokens: 8 more of the offloading blog's H100 series (30K to 100K)
    # and 7 each of the FP8 KV blog's H100 and B200 series (32,768 to 131,072 in steps of 16,384)
    assert len(rows) == 6 + 8 + 7 + 7 == 28 and len({r.id for r in rows}) == 28
    nim = next(r for r in rows if r.id == "nim-h100-tp2-500")
    assert (nim.value_ms, nim.tokens, nim.tp, nim.weight_dtype, nim.reading) == (47.77, 500, 2, "fp8", "quoted")
    assert nim.date == "2026-07-20" and "docs.nvidia.com/nim" in nim.source
    # the command that reproduces the prediction, spelled as kvtier compare takes it
    assert nim.command() == (
        "kvtier compare --regen-model engine --accelerator h100-sxm --engine tensorrt-llm --model llama-3.1-70b"
        " --tp 2 --tokens 500 --position 0 --batch-tokens 500 --kv-dtype bf16 --set weight_dtype=fp8"
        " --set parallel.hbm_capacity=null"
    )
    # past the kernel tables' grid the command asks for the extrapolation
    assert nim.command(extrapolate=True) == nim.command() + " --beyond-grid extrapolate"
    last = next(r for r in rows if r.id == "vllm-fp8kv-b200-128k")
    assert (last.accelerator, last.tokens, last.value_ms, last.reading, last.date) == (
        "b200",
        131_072,
        4860,
        "plot",
        "2026-04-22",
    )
    assert [r.tokens for r in rows if r.id.startswith("vllm-fp8kv-h100")] == [16_384 * k for k in range(1, 9)]
    assert [r.tokens for r in rows if r.id.startswith("vllm-offload")] == [10_000 * k for k in range(1, 11)]
    # one chart reading too small to read is shown, not counted (the page finds the other 16,384-token reading
    # below its FLOP floor)
    assert [r.id for r in rows if r.excluded] == ["vllm-fp8kv-b200-16k"]


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        (("value_ms: 47.77", "value_ms: -1"), "measurement 1: field 'value_ms' must be a number above 0"),
        (("quantity: ttft", "quantity: tpot"), "measurement 1: field 'quantity' must be one of ttft"),
        (("reading: quoted", "reading: guessed"), "field 'reading' must be one of quoted, plot"),
        (("    setup: concurrency 1\n", ""), "measurement 1: field 'setup' is required (text)"),
        (("tp: 2", "tp: 2\n    colour: red"), "measurement 1 has unknown field 'colour'"),
    ],
)
def test_a_bad_row_is_one_line_naming_the_file_the_row_and_the_field(tmp_path, edit, needle):
    path = tmp_path / "rows.yaml"
    path.write_text(ROW.replace(*edit))
    with pytest.raises(KvtierError) as err:
        read_published(path)
    assert needle in str(err.value) and str(path) in str(err.value) and "\n" not in str(err.value)


def test_an_id_twice_is_refused(tmp_path):
    path = tmp_path / "rows.yaml"
    path.write_text(ROW + ROW.split("\n", 1)[1])
    with pytest.raises(KvtierError, match="measurement id 'one' appears twice"):
        read_published(path)
