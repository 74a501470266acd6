"""Models: KV bytes per token and parameter counts for MHA, GQA, head_dim, MLA and MoE."""

import json

import pytest

from kvtier import KvtierError, load_model
from kvtier.inputs.models import PRESETS, from_config

BASE = dict(num_hidden_layers=2, hidden_size=64, num_attention_heads=8, intermediate_size=128, vocab_size=100)


def test_mha_when_kv_heads_absent():
    m = from_config(dict(BASE), "mha", "test")
    assert m.attention == "MHA"
    # 2 x 2 layers x 8 heads x (64/8 = 8) head_dim x 2 B = 512 B
    assert m.kv_bytes_per_token("bf16") == 512
    # per layer: attention 4 x 64 x 64 = 16,384; MLP 3 x 64 x 128 = 24,576; norms 128 -> 41,088
    # 2 layers = 82,176; embeddings 2 x 100 x 64 = 12,800; final norm 64 -> 95,040
    assert m.total_params == 95_040


def test_gqa_and_fp8():
    m = from_config({**BASE, "num_key_value_heads": 2}, "gqa", "test")
    assert m.attention == "GQA"
    # 2 x 2 x 2 KV heads x 8 x 2 B = 128 B; fp8 halves it to 64 B
    assert m.kv_bytes_per_token("bf16") == 128
    assert m.kv_bytes_per_token("fp8") == 64
    # attention per layer: q 64x64 + k,v 2 x 64x16 + o 64x64 = 10,240; + MLP 24,576 + norms 128 = 34,944
    # 2 layers = 69,888 + 12,800 + 64 = 82,752
    assert m.total_params == 82_752


def test_explicit_head_dim_wins_over_hidden_over_heads():
    m = from_config({**BASE, "num_key_value_heads": 2, "head_dim": 32}, "hd", "test")
    # 2 x 2 layers x 2 KV heads x 32 (not 64/8 = 8) x 2 B = 512 B
    assert m.kv_bytes_per_token("bf16") == 512


def test_tied_embeddings_count_once():
    m = from_config({**BASE, "tie_word_embeddings": True}, "tied", "test")
    # 95,040 (untied MHA above) - 100 x 64 = 88,640
    assert m.total_params == 88_640


def test_mla_caches_latent_plus_rope_key():
    cfg = {**BASE, "kv_lora_rank": 16, "qk_rope_head_dim": 4, "qk_nope_head_dim": 8, "v_head_dim": 8, "q_lora_rank": 0}
    m = from_config(cfg, "mla", "test")
    assert m.attention == "MLA"
    # 2 layers x (16 + 4) x 2 B = 80 B (no factor 2 for K and V)
    assert m.kv_bytes_per_token("bf16") == 80
    # attention per layer: q 64 x 8 x 12 = 6,144; kv_a 64 x 20 + 16 = 1,296; kv_b 16 x 8 x 16 = 2,048;
    # o 8 x 8 x 64 = 4,096 -> 13,584; + MLP 24,576 + norms 128 = 38,288; x2 = 76,576 + 12,800 + 64 = 89,440
    assert m.total_params == 89_440


def test_moe_total_and_active():
    cfg = {**BASE, "num_local_experts": 4, "num_experts_per_tok": 2, "num_key_value_heads": 2}
    m = from_config(cfg, "moe", "test")
    # expert: 3 x 64 x 128 = 24,576; router 64 x 4 = 256; attention 10,240; norms 128
    # total layer: 10,240 + 4 x 24,576 + 256 + 128 = 108,928; active: 10,240 + 2 x 24,576 + 256 + 128 = 59,776
    # total = 2 x 108,928 + 12,864 = 230,720; active = 2 x 59,776 + 12,864 = 132,416
    assert m.param_counts() == (230_720, 132_416)


def test_presets_published_counts():
    # published/widely quoted sizes: Llama-3 8B 8.03B, 405B 405.85B, Mistral 7B 7.24B,
    # Mixtral 8x7B 46.7B total / 12.9B active, Qwen2.5 72B 72.7B, DeepSeek-V3 671B / 37B active
    counts = {name: load_model(name).param_counts() for name in PRESETS}
    assert counts["llama-3-8b"] == (8_030_261_248, 8_030_261_248)
    assert counts["llama-3.1-405b"][0] == 405_853_388_800
    assert counts["mistral-7b"][0] == 7_241_732_096
    assert counts["mixtral-8x7b"] == (46_702_792_704, 12_879_925_248)
    assert counts["qwen2.5-72b"][0] == 72_706_203_648
    assert counts["deepseek-v3"][0] == pytest.approx(671e9, rel=1e-3)
    assert counts["deepseek-v3"][1] == pytest.approx(37.55e9, rel=1e-3)


def test_presets_kv_per_token():
    kv = {name: load_model(name).kv_bytes_per_token("bf16") for name in PRESETS}
    assert kv["llama-3-8b"] == 2 * 32 * 8 * 128 * 2  # 131,072 B = 128 KiB
    assert kv["llama-3.1-405b"] == 2 * 126 * 8 * 128 * 2  # 516,096 B = 504 KiB
    assert kv["qwen2.5-72b"] == 2 * 80 * 8 * 128 * 2  # 327,680 B, same as Llama-3 70B
    assert kv["deepseek-v3"] == 61 * (512 + 64) * 2  # 70,272 B = 68.6 KiB (MLA)


def test_missing_field_is_named(tmp_path):
    with pytest.raises(KvtierError, match="missing required field 'hidden_size'"):
        from_config({k: v for k, v in BASE.items() if k != "hidden_size"}, "x", "cfg.json")


def test_unknown_preset_lists_presets():
    with pytest.raises(KvtierError, match="unknown preset; presets: llama-2-7b, llama-3-8b"):
        load_model("llama-9")


def test_explicit_null_fields_take_their_defaults():
    # DeepSeek-V2-Lite style: "num_key_value_heads": null means "as many as the attention heads" (MHA)
    m = from_config({**BASE, "num_key_value_heads": None, "head_dim": None}, "nulls", "test")
    # same as test_mha_when_kv_heads_absent: 2 x 2 x 8 x 8 x 2 B = 512 B
    assert m.kv_bytes_per_token("bf16") == 512


@pytest.mark.parametrize(("field", "value"), [("num_hidden_layers", 0), ("head_dim", 0)])
def test_zero_sizes_are_refused_not_divided_by(field, value):
    with pytest.raises(KvtierError, match=f"field '{field}' must be an integer in \\[1, "):
        from_config({**BASE, field: value}, "zero", "test.json")


def test_context_limits_and_weight_format_are_read():
    m = load_model("mistral-7b")
    assert (m.max_positions, m.sliding_window) == (32_768, 4_096)
    # Qwen2.5 states a window but switches it off (use_sliding_window: false)
    assert load_model("qwen2.5-72b").sliding_window == 0
    assert load_model("deepseek-v3").weight_quantization == "fp8 e4m3"


@pytest.mark.parametrize(
    ("layers", "first_dense", "freq"), [(61, 3, 1), (61, 0, 2), (10, 10, 1), (10, 12, 3), (7, 1, 3), (1, 0, 1)]
)
def test_moe_layer_count_is_arithmetic_and_matches_the_layer_by_layer_rule(layers, first_dense, freq):
    cfg = {**BASE, "num_hidden_layers": layers, "num_local_experts": 4, "num_experts_per_tok": 2}
    cfg |= {"first_k_dense_replace": first_dense, "moe_layer_freq": freq}
    m = from_config(cfg, "moe", "test")
    # layer i (from 0) is MoE when i >= first_k_dense_replace and i % moe_layer_freq == 0,
    # e.g. DeepSeek-V3: 61 layers, the first 3 dense -> 58 MoE layers
    assert m.n_moe_layers == sum(1 for i in range(layers) if i >= first_dense and i % freq == 0)


def test_largest_allowed_moe_model_is_counted_without_a_loop_over_layers():
    # 100,000 layers (the bound) of 65,536 experts each: counted arithmetically, at once
    cfg = {**BASE, "num_hidden_layers": 100_000, "n_routed_experts": 2**16, "num_experts_per_tok": 8}
    m = from_config(cfg, "huge", "test")
    assert m.n_moe_layers == 100_000
    total, active = m.param_counts()
    # expert 3 x 64 x 128 = 24,576; router 64 x 65,536 = 4,194,304; attention 16,384; norms 128
    # per layer: total 16,384 + 65,536 x 24,576 + 4,194,304 + 128 = 1,614,823,552
    # x 100,000 layers + embeddings 12,800 + final norm 64
    assert total == 100_000 * (16_384 + 2**16 * 24_576 + 4_194_304 + 128) + 12_864
    # active: 16,384 + 8 x 24,576 + 4,194,304 + 128 = 4,407,424 per layer
    assert active == 100_000 * 4_407_424 + 12_864


GEMMA2 = {
    # the fields of google/gemma-2-9b's config.json that matter here (42 layers, 4,096-token window,
    # a hybrid cache); written out, not downloaded
    "model_type": "gemma2",
    "num_hidden_layers": 42,
    "hidden_size": 3584,
    "num_attention_heads": 16,
    "num_key_value_heads": 8,
    "head_dim": 256,
    "intermediate_size": 14336,
    "vocab_size": 256000,
    "max_position_embeddings": 8192,
    "sliding_window": 4096,
    "cache_implementation": "hybrid",
    "tie_word_embeddings": True,
}


@pytest.mark.parametrize(
    ("changes", "sliding"),
    [
        ({}, 21),  # Gemma-2 alternates, local first: layers 0, 2, ..., 40 -> ceil(42 / 2) = 21
        ({"num_hidden_layers": 41}, 21),  # 0, 2, ..., 40 of 41 -> ceil(41 / 2) = 21
        # Gemma-3 style: every 6th layer global -> 42 - 42 // 6 = 42 - 7 = 35 local
        ({"model_type": "gemma3_text", "sliding_window_pattern": 6}, 35),
        # transformers' explicit list wins: 3 of 42 local
        ({"layer_types": ["sliding_attention"] * 3 + ["full_attention"] * 39}, 3),
        # no global layers named anywhere: every layer is local (Mistral)
        ({"model_type": "mistral", "cache_implementation": None}, 42),
        # Qwen2 with the window switched on: layers from max_window_layers = 28 up -> 42 - 28 = 14 local
        (
            {"model_type": "qwen2", "use_sliding_window": True, "max_window_layers": 28, "cache_implementation": None},
            14,
        ),
    ],
)
def test_sliding_window_counts_only_the_local_layers(changes, sliding):
    cfg = {k: v for k, v in {**GEMMA2, **changes}.items() if v is not None}
    m = from_config(cfg, "gemma-2-like", "test")
    assert (m.sliding_window, m.sliding_layers) == (4096, sliding)


def test_capacity_note_of_an_alternating_model_caps_only_its_local_layers(tmp_path):
    from kvtier import Scenario, load_assumptions
    from kvtier.report.pages.models import model_note

    path = tmp_path / "gemma-2-9b" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(GEMMA2))
    note = model_note(Scenario(load_assumptions(sets={"model": str(path)})))
    # half the layers keep every token: the cache never stops growing, so no "never reached" claim
    assert note.startswith(
        "sliding-window attention over 4,096 tokens on 21 of 42 layers: only those stop growing;"
        " the other layers' cache grows with the context"
    )
    assert "never reached" not in note
    # Mistral's every layer is local: its note is unchanged
    mistral = model_note(Scenario(load_assumptions(sets={"model": "mistral-7b"})))
    assert mistral.startswith("sliding-window attention: the cache stops growing at 4,096 tokens")


def test_llama_3_1_70b_has_llama_3_70b_geometry_and_a_128k_window():
    new, old = load_model("llama-3.1-70b"), load_model("llama-3-70b")
    assert "llama-3.1-70b" in PRESETS
    assert new.kv_bytes_per_token("bf16") == old.kv_bytes_per_token("bf16") == 327_680
    assert new.param_counts() == old.param_counts()
    assert (new.n_layers, new.hidden_size, new.n_heads, new.n_kv_heads) == (80, 8192, 64, 8)
    assert (new.intermediate_size, new.vocab_size) == (28672, 128256)
    assert (new.max_positions, old.max_positions) == (131_072, 8_192)
