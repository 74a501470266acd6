"""kvtier.inputs.engines and the ``engine`` key: the serving engines' layouts, their provenance, what they change."""

from __future__ import annotations

import copy

import pytest
import yaml

from kvtier import Scenario, load_assumptions
from kvtier.data import ENGINE_PRESETS
from kvtier.errors import KvtierError
from kvtier.inputs import engines
from kvtier.inputs.keys import SCHEMA

# (tokens per block, transfers, copy method, overlap), as engines.yaml reads them from each engine's code or docs
EXPECTED = {
    # >= 0.12: CacheConfig.DEFAULT_BLOCK_SIZE; prefer_cross_layer_blocks, one swap_blocks per tensor (copies back
    # to back), one region per block unless MLA
    "vllm": (16, "one-unless-mla", "batched-dma", False),
    "vllm-0.11": (16, "per-layer-kv", "batched-dma", False),  # FlashAttention's (2, blocks, ...) per layer
    # HiCache's --page-size 64; page_first + the kernel backend, walked layer by layer; layer N+1 loads under N
    "sglang": (64, "per-layer", "kernel", True),
    "sglang-layer-first": (64, "per-layer-kv", "batched-dma", True),  # layer_first + direct: a K and a V copy a layer
    "tensorrt-llm": (32, "one", "batched-dma", False),  # KvCacheConfig.tokens_per_block; every layer in one block
    "lmcache": (256, "one", "kernel", False),  # chunk_size 256; one multi_layer_kv_transfer kernel per chunk
    "lmcache-layerwise": (256, "per-layer", "kernel", True),
    "mooncake": (512, "per-layer", "batched-dma", True),  # the FAST'25 traces' 512-token block; a range per layer
}

# the copy methods no file or document of the engine's states, taken as an assumption (engines.yaml says why)
ASSUMED_COPY_METHODS = {"tensorrt-llm", "lmcache-layerwise", "mooncake"}


def test_every_preset_with_its_values() -> None:
    found = engines.load_engines()
    assert tuple(found) == ENGINE_PRESETS
    assert {n: (e.block_tokens, e.transfers, e.copy_method, e.layer_overlap) for n, e in found.items()} == EXPECTED


def test_every_preset_names_its_versions_and_the_day_it_was_read() -> None:
    found = engines.load_engines()
    assert (found["vllm"].version, found["vllm"].date) == (">= 0.12", "2026-12-06")
    assert found["vllm-0.11"].version.startswith("0.11")
    assert found["mooncake"].version == "0.3.12.post1"
    for engine in found.values():
        assert engine.version and len(engine.date) == 10 and engine.date.startswith("2026-12-")


def test_every_value_is_published_with_a_dated_source() -> None:
    for engine in engines.load_engines().values():
        for field, rec in engine.records.items():
            assert rec.key == f"{engine.name}.{field}"
            assumed = field == "copy_method" and engine.name in ASSUMED_COPY_METHODS
            assert rec.provenance == ("assumed" if assumed else "published-spec"), rec.key
            # a repository or document, and a version, commit or date
            assert any(word in rec.source for word in ("commit", "v0.", "1.4.0", "2025", "2026")), rec.source


@pytest.mark.parametrize(
    ("mode", "expected"),
    # Llama-3-70B: 80 layers, 160 chunks (K and V); DeepSeek-V3 (MLA): 61 layers, 61 chunks;
    # one-unless-mla: the GQA block in one cross-layer region (1 copy), the MLA one a copy per layer (61)
    [("one", (1, 1)), ("per-layer", (80, 61)), ("per-layer-kv", (160, 61)), ("one-unless-mla", (1, 61))],
)
def test_transfers_per_block(mode: str, expected: tuple[int, int]) -> None:
    e = engines.Engine("x", "", 16, mode, False, {})
    assert (e.transfers_per_block(80, 160, False), e.transfers_per_block(61, 61, True)) == expected
    # without the attention named, MLA is read from one chunk per layer
    assert (e.transfers_per_block(80, 160), e.transfers_per_block(61, 61)) == expected


def test_the_engine_key_takes_none_or_a_preset() -> None:
    assert SCHEMA["engine"].choices == ("none", *ENGINE_PRESETS)
    assert load_assumptions().value("engine") == "none"
    with pytest.raises(KvtierError, match="engine"):
        load_assumptions(sets={"engine": "triton"})
    assert engines.engine_named("none") is None
    with pytest.raises(KvtierError, match="unknown engine 'triton'"):
        engines.engine_named("triton")


def test_none_changes_nothing() -> None:
    # the seed: 16-token blocks, one contiguous transfer, no overlap
    s = Scenario()
    assert (s.engine, s.block_tokens, s.fetch_transfers, s.layer_overlap) == (None, 16, 1, False)
    per_layer = Scenario(load_assumptions(sets={"fetch_layout": "per-layer"}))
    assert per_layer.fetch_transfers == 160  # 80 layers x K and V


@pytest.mark.parametrize(
    ("name", "model", "tokens", "transfers", "overlap"),
    [
        ("vllm", "llama-3-70b", 16, 1, False),  # one cross-layer region per block
        ("vllm-0.11", "llama-3-70b", 16, 160, False),  # 80 layers x (K, V)
        ("sglang", "llama-3-70b", 64, 80, True),  # one kernel launch per layer moves its K and V
        ("sglang-layer-first", "llama-3-70b", 64, 160, True),
        ("tensorrt-llm", "llama-3-70b", 32, 1, False),
        ("lmcache", "llama-3-70b", 256, 1, False),
        ("lmcache-layerwise", "llama-3-70b", 256, 80, True),
        ("mooncake", "llama-3-70b", 512, 80, True),
        ("vllm", "deepseek-v3", 16, 61, False),  # MLA keeps per-layer tensors: one latent per layer, 61 layers
        ("vllm-0.11", "deepseek-v3", 16, 61, False),
    ],
)
def test_an_engine_sets_the_block_its_transfers_and_the_overlap(
    name: str, model: str, tokens: int, transfers: int, overlap: bool
) -> None:
    s = Scenario(load_assumptions(sets={"engine": name, "model": model}))
    assert (s.block_tokens, s.fetch_transfers, s.layer_overlap) == (tokens, transfers, overlap)
    # the block's size follows the engine, with the engine's provenance and source
    rec = s.a("block_tokens")
    assert (
        rec.provenance == "published-spec" and rec.source == engines.load_engines()[name].records["block_tokens"].source
    )
    # the block's bytes follow: Llama-3-70B 320 KiB a token x 256 tokens = 80 MiB for LMCache's chunk
    assert s.block_bytes == tokens * s.kv_bytes_per_token


def test_the_engine_overrides_fetch_layout_and_a_given_block_wins() -> None:
    # fetch_layout per-layer would give 160; LMCache moves its chunk in one transfer
    s = Scenario(load_assumptions(sets={"engine": "lmcache", "fetch_layout": "per-layer"}))
    assert s.fetch_transfers == 1
    # block_tokens given beside the engine: the engine's layout with that block
    s = Scenario(load_assumptions(sets={"engine": "lmcache", "block_tokens": "64"}))
    assert (s.block_tokens, s.fetch_transfers) == (64, 1)


def test_back_to_none_restores_the_seeds_block() -> None:
    a = load_assumptions(sets={"engine": "mooncake"})
    assert a.value("block_tokens") == 512
    back = a.with_values({"engine": "none"}, source="test")
    assert back.value("block_tokens") == 16 and back["block_tokens"] == load_assumptions()["block_tokens"]


def test_a_set_file_names_an_engine(tmp_path) -> None:
    path = tmp_path / "set.yaml"
    path.write_text("assumptions:\n  engine:\n    value: sglang\n    provenance: assumed\n    source: lab\n")
    s = Scenario(load_assumptions(path))
    assert (s.block_tokens, s.fetch_transfers, s.layer_overlap) == (64, 80, True)


def _data() -> dict:
    from importlib import resources

    return yaml.safe_load(resources.files("kvtier.data").joinpath("engines.yaml").read_text())


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d["engines"].pop("vllm"), "engines must be exactly"),
        (lambda d: d["engines"]["vllm"].pop("transfers"), "engine 'vllm' is missing field 'transfers'"),
        (lambda d: d["engines"]["vllm"].update(colour=1), "engine 'vllm' has unknown field 'colour'"),
        (lambda d: d["engines"]["vllm"]["transfers"].update(value="two"), "field 'transfers': value must be one of"),
        (lambda d: d["engines"]["vllm"]["block_tokens"].update(value=0), "whole number of tokens >= 1"),
        (lambda d: d["engines"]["vllm"]["block_tokens"].update(value=True), "whole number of tokens >= 1"),
        (lambda d: d["engines"]["sglang"]["layer_overlap"].update(value="yes"), "value must be true or false"),
        (lambda d: d["engines"]["sglang"]["layer_overlap"].pop("source"), "a source is required"),
        (lambda d: d["engines"]["sglang"]["layer_overlap"].update(provenance="rumour"), "provenance must be one of"),
        (lambda d: d["engines"]["sglang"]["layer_overlap"].update(figure="x"), "unknown entry 'figure'"),
        (lambda d: d.pop("engines"), "expected a mapping 'engines'"),
        (
            lambda d: d["engines"]["vllm"]["copy_method"].update(value="dma"),
            "field 'copy_method': value must be one of",
        ),
        (lambda d: d["engines"]["vllm"].pop("copy_method"), "engine 'vllm' is missing field 'copy_method'"),
        (lambda d: d["engines"]["vllm"].pop("version"), "engine 'vllm' is missing field 'version'"),
        (lambda d: d["engines"]["vllm"].update(version=""), "field 'version' must be the engine versions"),
        (lambda d: d["engines"]["vllm"].update(version=0.12), "field 'version' must be the engine versions"),
        (lambda d: d["engines"]["vllm"].pop("date"), "engine 'vllm' is missing field 'date'"),
        (lambda d: d["engines"]["vllm"].update(date="last week"), "field 'date' must be the day"),
        (lambda d: d["engines"]["vllm"].update(date="2026-13-01"), "field 'date' must be the day"),
    ],
)
def test_a_bad_engines_file_is_refused_in_one_line(edit, message: str) -> None:
    data = copy.deepcopy(_data())
    edit(data)
    with pytest.raises(KvtierError, match=message) as err:
        engines.parse_engines(data, "engines.yaml")
    assert "\n" not in str(err.value) and str(err.value).startswith("engines.yaml")


@pytest.mark.parametrize(
    ("sets", "method", "latency_s", "transfers"),
    [
        ({}, "none", 0.0, 1),  # the seed: no copy method, fetch_latency (0 s) per transfer
        ({"fetch_layout": "per-layer", "fetch_latency": "2us"}, "none", 2e-6, 160),
        ({"engine": "vllm"}, "batched-dma", 3.53e-6, 1),  # fetch.copy_cost.batched_dma
        ({"engine": "vllm-0.11"}, "batched-dma", 3.53e-6, 160),
        ({"engine": "sglang"}, "kernel", 0.5e-6, 80),  # fetch.copy_cost.kernel
        ({"engine": "lmcache", "fetch_latency": "50us"}, "kernel", 0.5e-6, 1),  # the method replaces fetch_latency
        ({"engine": "vllm", "fetch.copy_method": "lone-dma"}, "lone-dma", 9.049e-6, 1),  # the H200's fitted lone copy
        ({"engine": "vllm", "fetch.copy_method": "none", "fetch_latency": "3us"}, "none", 3e-6, 1),
        ({"fetch.copy_method": "kernel", "fetch_layout": "per-layer"}, "kernel", 0.5e-6, 160),  # no engine
    ],
)
def test_the_copy_method_sets_the_latency_each_transfer_pays(
    sets, method: str, latency_s: float, transfers: int
) -> None:
    s = Scenario(load_assumptions(sets=sets))
    assert (s.copy_method, s.fetch_transfers) == (method, transfers)
    assert s.transfer_latency_s == pytest.approx(latency_s, rel=1e-12)
    assert s.block_latency_s == pytest.approx(latency_s * transfers, rel=1e-12)


def test_vllm_today_and_at_0_11_by_hand() -> None:
    bw = 64e9
    # vLLM >= 0.12: 5,242,880 B in one copy of 3.53 us: 3.53 + 81.92 = 85.45 us at 64 GB/s
    today = Scenario(load_assumptions(sets={"engine": "vllm"}))
    assert float(today.fetch_s(bw)) == pytest.approx(3.53e-6 + 5_242_880 / 64e9, rel=1e-12)
    # vLLM 0.11: 160 copies of 3.53 us = 564.8 us + 81.92 us = 646.72 us
    old = Scenario(load_assumptions(sets={"engine": "vllm-0.11"}))
    assert float(old.fetch_s(bw)) == pytest.approx(160 * 3.53e-6 + 5_242_880 / 64e9, rel=1e-12)
    # DeepSeek-V3 (MLA) under vLLM today: 61 per-layer copies of 3.53 us = 215.33 us + 1,124,352 B / 64e9 = 17.568 us
    mla = Scenario(load_assumptions(sets={"engine": "vllm", "model": "deepseek-v3"}))
    assert float(mla.fetch_s(bw)) == pytest.approx(61 * 3.53e-6 + 1_124_352 / 64e9, rel=1e-12)


def test_the_copy_method_key_and_its_costs() -> None:
    assert SCHEMA["fetch.copy_method"].choices == ("engine", "none", "lone-dma", "batched-dma", "kernel")
    assert engines.COPY_COST_KEYS == {
        "lone-dma": "fetch.copy_cost.lone_dma",
        "batched-dma": "fetch.copy_cost.batched_dma",
        "kernel": "fetch.copy_cost.kernel",
    }
    a = load_assumptions()
    # the lone copy is the H200's fit (the h200-measured set's fetch_latency), the batched one the fit to vLLM's
    # published H100 throughput (tests/inputs/measurements/test_copies.py); the kernel's is assumed
    assert a["fetch.copy_cost.lone_dma"].provenance == "derived"
    assert a.value("fetch.copy_cost.lone_dma") == pytest.approx(9.049e-6, rel=1e-12)
    assert [a[k].provenance for k in ("fetch.copy_cost.batched_dma", "fetch.copy_cost.kernel")] == [
        "derived",
        "assumed",
    ]
    with pytest.raises(KvtierError, match="fetch.copy_method"):
        load_assumptions(sets={"fetch.copy_method": "cudaMemcpy"})
