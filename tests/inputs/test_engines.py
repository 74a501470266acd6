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

# (tokens per block, transfers, overlap), as engines.yaml reads them from each engine's code or documentation
EXPECTED = {
    "vllm": (16, "per-layer-kv", False),  # CacheConfig.DEFAULT_BLOCK_SIZE; FlashAttention's (2, blocks, ...) per layer
    "sglang": (64, "per-layer-kv", True),  # HiCache's --page-size 64; layer_first pools; layer N+1 loads under N
    "tensorrt-llm": (32, "one", False),  # KvCacheConfig.tokens_per_block; every layer packed in one block
    "lmcache": (256, "one", False),  # chunk_size 256; one multi_layer_kv_transfer per chunk
    "lmcache-layerwise": (256, "per-layer", True),
    "mooncake": (512, "per-layer", True),  # the FAST'25 traces' 512-token block; one range per layer
}


def test_every_preset_with_its_values() -> None:
    found = engines.load_engines()
    assert tuple(found) == ENGINE_PRESETS
    assert {n: (e.block_tokens, e.transfers, e.layer_overlap) for n, e in found.items()} == EXPECTED


def test_every_value_is_published_with_a_dated_source() -> None:
    for engine in engines.load_engines().values():
        for field, rec in engine.records.items():
            assert rec.key == f"{engine.name}.{field}"
            assert rec.provenance == "published-spec"
            # a repository or document, and a version, commit or date
            assert any(word in rec.source for word in ("commit", "v0.", "1.4.0", "2025", "2026")), rec.source


@pytest.mark.parametrize(
    ("mode", "expected"),
    # Llama-3-70B: 80 layers, 160 chunks (K and V); DeepSeek-V3 (MLA): 61 layers, 61 chunks
    [("one", (1, 1)), ("per-layer", (80, 61)), ("per-layer-kv", (160, 61))],
)
def test_transfers_per_block(mode: str, expected: tuple[int, int]) -> None:
    e = engines.Engine("x", "", 16, mode, False, {})
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
        ("vllm", "llama-3-70b", 16, 160, False),  # 80 layers x (K, V)
        ("sglang", "llama-3-70b", 64, 160, True),
        ("tensorrt-llm", "llama-3-70b", 32, 1, False),
        ("lmcache", "llama-3-70b", 256, 1, False),
        ("lmcache-layerwise", "llama-3-70b", 256, 80, True),
        ("mooncake", "llama-3-70b", 512, 80, True),
        ("vllm", "deepseek-v3", 16, 61, False),  # MLA: one latent per layer, 61 layers
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
    assert (s.block_tokens, s.fetch_transfers, s.layer_overlap) == (64, 160, True)


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
    ],
)
def test_a_bad_engines_file_is_refused_in_one_line(edit, message: str) -> None:
    data = copy.deepcopy(_data())
    edit(data)
    with pytest.raises(KvtierError, match=message) as err:
        engines.parse_engines(data, "engines.yaml")
    assert "\n" not in str(err.value) and str(err.value).startswith("engines.yaml")
