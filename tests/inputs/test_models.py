"""kvtier.inputs.models: KV bytes per token and parameter counts for MHA, GQA, head_dim, MLA and MoE, by hand.

Also checked against the published configs counted matrix by matrix, and whole error messages.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvtier import KvtierError, load_model
from kvtier.inputs.models import (
    PRESETS,
    config_path,
    dtype_bytes,
    from_config,
    resolve_weight_dtype,
    weight_dtype_bytes,
)
from tests.conftest import ROOT, raw_config

CONFIGS = ROOT / "tests" / "inputs" / "configs"


def layer_by_layer_kv_bytes(cfg: dict, dtype_bytes: int) -> int:
    """KV bytes per token, one layer at a time: K and V rows, or the MLA latent plus the rope key."""
    total = 0
    for _layer in range(cfg["num_hidden_layers"]):
        if cfg.get("kv_lora_rank") is not None:
            total += (cfg["kv_lora_rank"] + cfg["qk_rope_head_dim"]) * dtype_bytes
        else:
            heads = cfg["num_attention_heads"]
            kv_heads = cfg.get("num_key_value_heads") or heads
            head_dim = cfg.get("head_dim") or cfg["hidden_size"] // heads
            total += 2 * kv_heads * head_dim * dtype_bytes  # K and V
    return total


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize(("dtype", "size"), [("bf16", 2), ("fp8", 1), ("fp32", 4)])
def test_kv_bytes_per_token_against_the_published_config(preset, dtype, size):
    assert load_model(preset).kv_bytes_per_token(dtype) == layer_by_layer_kv_bytes(raw_config(preset), size)


@pytest.mark.parametrize("preset", [p for p in PRESETS if p.startswith(("llama", "mistral", "qwen"))])
def test_dense_parameters_against_a_matrix_by_matrix_count(preset):
    cfg = raw_config(preset)
    h, heads = cfg["hidden_size"], cfg["num_attention_heads"]
    kv_heads = cfg.get("num_key_value_heads") or heads
    d = cfg.get("head_dim") or h // heads
    bias = cfg.get("attention_bias", False) or cfg.get("model_type") == "qwen2"
    matrices = {
        "q": h * heads * d,
        "k": h * kv_heads * d,
        "v": h * kv_heads * d,
        "o": heads * d * h,
        "gate": h * cfg["intermediate_size"],
        "up": h * cfg["intermediate_size"],
        "down": cfg["intermediate_size"] * h,
        "norms": 2 * h,
        "bias": (heads * d + 2 * kv_heads * d) if bias else 0,
    }
    per_layer = sum(matrices.values())
    embeddings = cfg["vocab_size"] * h * (1 if cfg.get("tie_word_embeddings") else 2)
    expected = cfg["num_hidden_layers"] * per_layer + embeddings + h
    assert load_model(preset).param_counts() == (expected, expected)


BASE = dict(num_hidden_layers=2, hidden_size=64, num_attention_heads=8, intermediate_size=128, vocab_size=100)


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


MLA = {"kv_lora_rank": 16, "qk_rope_head_dim": 4, "qk_nope_head_dim": 8, "v_head_dim": 8}


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


def test_the_published_weight_dtype_of_each_preset():
    # DeepSeek-V3's config.json: quantization_config {quant_method fp8, fmt e4m3, weight_block_size [128, 128]}
    # beside torch_dtype bfloat16: the quantization wins, 1 B a weight; Llama-2 7B's float16, the rest bfloat16
    published = {name: load_model(name).weight_dtype for name in PRESETS}
    assert published == {name: "bf16" for name in PRESETS} | {"deepseek-v3": "fp8", "llama-2-7b": "fp16"}
    ds = load_model("deepseek-v3")
    assert ds.weight_dtype_provenance == "published-spec"
    assert ds.weight_dtype_basis == "its quantization_config (quant_method fp8, fmt e4m3)"
    assert resolve_weight_dtype(ds, "auto") == "fp8" and resolve_weight_dtype(ds, "int4") == "int4"
    # bytes a weight: fp8 1, int8 1, int4 0.5 (two to a byte), bf16 2
    assert [weight_dtype_bytes(d) for d in ("fp8", "int8", "int4", "bf16")] == [1, 1, 0.5, 2]


@pytest.mark.parametrize(
    ("fields", "dtype"),
    [
        ({"quantization_config": {"quant_method": "fp8", "fmt": "e4m3"}, "torch_dtype": "bfloat16"}, "fp8"),
        ({"quantization_config": {"quant_method": "fbgemm_fp8"}}, "fp8"),
        ({"quantization_config": {"quant_method": "awq", "bits": 4, "group_size": 128}}, "int4"),
        ({"quantization_config": {"quant_method": "gptq", "bits": 8}}, "int8"),
        ({"quantization_config": {"quant_method": "bitsandbytes", "load_in_4bit": True}}, "int4"),
        ({"quantization_config": {"quant_method": "bitsandbytes", "load_in_8bit": True}}, "int8"),
        (
            {
                "quantization_config": {
                    "quant_method": "compressed-tensors",
                    "config_groups": {"group_0": {"weights": {"num_bits": 8, "type": "float"}}},
                }
            },
            "fp8",
        ),
        ({"torch_dtype": "float16"}, "fp16"),
        ({"torch_dtype": "float32"}, "fp32"),
        ({"dtype": "bfloat16"}, "bf16"),  # transformers >= 4.56 writes dtype
        ({}, "bf16"),  # states none: bf16, assumed
    ],
)
def test_the_published_weight_dtype_is_read_from_the_config(fields, dtype):
    m = from_config({**BASE, **fields}, "q", "q.json")
    assert resolve_weight_dtype(m, "auto") == dtype
    assert m.weight_dtype_provenance == ("published-spec" if fields else "assumed")


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"quantization_config": {"quant_method": "gptq", "bits": 3}}, "quant_method gptq, bits 3"),
        ({"quantization_config": {"quant_method": "mxfp4"}}, "quant_method mxfp4"),
        ({"torch_dtype": "float64"}, "torch_dtype ('float64')"),
    ],
)
def test_a_quantization_kvtier_cannot_read_is_refused_only_under_auto(fields, named):
    m = from_config({**BASE, **fields}, "q", "q.json")  # loads: a concrete weight_dtype does not need it
    assert resolve_weight_dtype(m, "bf16") == "bf16"
    with pytest.raises(KvtierError, match="^q.json: weight_dtype is auto but its ") as err:
        resolve_weight_dtype(m, "auto")
    assert named in str(err.value) and "set weight_dtype to one of bf16, fp16, fp32, fp8, int8, int4" in str(err.value)
    with pytest.raises(KvtierError, match="^--weight-dtype must be auto or one of bf16, .*, got 'int3'$"):
        resolve_weight_dtype(m, "int3", "--weight-dtype")


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


def test_deepseek_v3_parameters_exactly():
    m = load_model("deepseek-v3")
    # h = 7168, 61 layers (3 dense, 58 MoE), 128 heads, nope 128 + rope 64 = qk 192, v 128, kv_lora 512, q_lora 1536
    # attention: q = 7168 x 1536 + 1536 (q_a norm) + 1536 x 128 x 192 = 11,010,048 + 1,536 + 37,748,736 = 48,760,320
    #            kv_a = 7168 x (512 + 64) + 512 (kv_a norm) = 4,129,280; kv_b = 512 x 128 x (128 + 128) = 16,777,216
    #            o = 128 x 128 x 7168 = 117,440,512 -> 187,107,328 per layer
    # dense layer: 187,107,328 + 3 x 7168 x 18432 (396,361,728) + 2 x 7168 (14,336) = 583,483,392; x3 = 1,750,450,176
    # expert 3 x 7168 x 2048 = 44,040,192; router 7168 x 256 + 256 (noaux_tc bias) = 1,835,264
    # MoE total: 256 x 44,040,192 + 1 shared x 44,040,192 + 1,835,264 = 11,320,164,608
    # MoE active: 8 x 44,040,192 + 44,040,192 + 1,835,264 = 398,196,992
    # 58 MoE layers: total 58 x (187,107,328 + 11,320,164,608 + 14,336) = 667,422,603,776
    #                active 58 x (187,107,328 + 398,196,992 + 14,336) = 33,948,482,048
    # embeddings untied 2 x 129,280 x 7168 = 1,853,358,080; final norm 7,168
    # total 1,750,450,176 + 667,422,603,776 + 1,853,358,080 + 7,168 = 671,026,419,200
    # active 1,750,450,176 + 33,948,482,048 + 1,853,358,080 + 7,168 = 37,552,297,472
    assert m.param_counts() == (671_026_419_200, 37_552_297_472)
    assert (m.total_params, m.active_params) == (671_026_419_200, 37_552_297_472)
    assert m.n_moe_layers == 58 and m.router_bias is True and m.is_moe


def test_mla_attention_flops_use_nope_plus_rope():
    m = load_model("deepseek-v3")
    # 2 x 61 layers x 128 heads x ((128 + 64) + 128) = 2 x 61 x 128 x 320 = 4,997,120 FLOP per position
    assert m.attention_flops_per_position() == 4_997_120
    # KV: 61 x (512 + 64) x 2 B = 70,272 B per token; fp32 doubles it
    assert m.kv_bytes_per_token() == 70_272 and m.kv_bytes_per_token("fp32") == 140_544
    assert m.weight_quantization == "fp8 e4m3" and m.max_positions == 163_840


def test_llama_70b_flops_and_parameters():
    m = load_model("llama-3-70b")
    # 2 x 80 x 64 x (128 + 128) = 2,621,440 FLOP per position
    assert m.attention_flops_per_position() == 2_621_440
    # the facts sheet: 70,553,706,496 parameters, 327,680 B of KV per token in bf16 (the default dtype)
    assert m.param_counts() == (70_553_706_496, 70_553_706_496)
    assert m.kv_bytes_per_token() == 327_680


def test_mla_small_config_flops_and_no_q_lora():
    cfg = {**BASE, "kv_lora_rank": 16, "qk_rope_head_dim": 4, "qk_nope_head_dim": 8, "v_head_dim": 6}
    m = from_config(cfg, "mla", "test")
    # 2 x 2 layers x 8 heads x ((8 + 4) + 6) = 576
    assert m.attention_flops_per_position() == 576
    # kv elements: 2 x (16 + 4) = 40
    assert m.kv_elements_per_token() == 40
    # without q_lora: q = 64 x 8 x 12 = 6,144; kv_a 64 x 20 + 16 = 1,296; kv_b 16 x 8 x (8 + 6) = 1,792;
    # o 8 x 6 x 64 = 3,072 -> 12,304; + MLP 3 x 64 x 128 = 24,576 + norms 128 = 37,008; x2 = 74,016
    # + embeddings 2 x 100 x 64 = 12,800 + final norm 64 = 86,880
    assert m.total_params == 86_880
    # with q_lora 4: q = 64 x 4 + 4 + 4 x 8 x 12 = 256 + 4 + 384 = 644 instead of 6,144: 86,880 - 2 x 5,500 = 75,880
    assert from_config({**cfg, "q_lora_rank": 4}, "mla", "test").total_params == 75_880


def test_mqa_and_qkv_bias():
    m = from_config({**BASE, "num_key_value_heads": 1, "attention_bias": True}, "mqa", "test")
    assert m.attention == "MQA"
    # head_dim 8: q 64 x 64 = 4,096; k, v 2 x 64 x 8 = 1,024; o 4,096; bias 64 + 2 x 8 = 80 -> 9,296
    # + MLP 24,576 + norms 128 = 34,000; x2 = 68,000 + 12,800 + 64 = 80,864
    assert m.total_params == 80_864
    # qwen2 has the bias without saying so: the same count
    assert from_config({**BASE, "num_key_value_heads": 1, "model_type": "qwen2"}, "q", "test").total_params == 80_864
    assert from_config({**BASE, "num_key_value_heads": 1}, "q", "test").total_params == 80_864 - 2 * 80


def test_hidden_size_not_divisible_by_heads_floors_the_head_dim():
    m = from_config({**BASE, "hidden_size": 100}, "odd", "test")
    # 100 // 8 = 12 (not 12.5): 2 x 2 layers x 8 heads x 12 x 2 B = 768 B
    assert m.head_dim == 12
    assert m.kv_bytes_per_token() == 768


def test_head_dim_of_one_is_allowed_and_zero_is_refused_whole():
    m = from_config({**BASE, "hidden_size": 8}, "tiny", "test")
    # 8 // 8 = 1: 2 x 2 x 8 x 1 x 2 B = 64 B
    assert m.head_dim == 1 and m.kv_bytes_per_token() == 64
    assert from_config({**BASE, "head_dim": 1}, "tiny", "test").head_dim == 1
    with pytest.raises(KvtierError) as info:
        from_config({**BASE, "hidden_size": 7}, "tiny", "test")
    assert str(info.value) == "test: hidden_size / num_attention_heads must be at least 1 (or give 'head_dim')"
    with pytest.raises(KvtierError) as info:
        from_config({**BASE, "head_dim": 0}, "tiny", "test")
    assert str(info.value) == "test: field 'head_dim' must be an integer in [1, 65,536], got 0"


def test_nested_text_config_is_read_and_outer_keys_win():
    m = from_config({"text_config": dict(BASE), "model_type": "llava", "vocab_size": 200}, "vlm", "test")
    # the text model's geometry, the outer vocabulary: embeddings 2 x 200 x 64 = 25,600 instead of 12,800
    assert (m.n_layers, m.hidden_size, m.vocab_size, m.model_type) == (2, 64, 200, "llava")
    assert m.total_params == 95_040 + 12_800
    # a top-level hidden_size means the top level is the text model: text_config is ignored
    m = from_config({**BASE, "text_config": {"hidden_size": 4096}}, "flat", "test")
    assert m.hidden_size == 64
    with pytest.raises(KvtierError) as info:
        from_config({"text_config": [1]}, "vlm", "test")
    assert str(info.value) == "test: field 'text_config' must be a JSON object"


def test_dense_config_without_intermediate_size_is_refused_whole():
    cfg = {k: v for k, v in BASE.items() if k != "intermediate_size"}
    with pytest.raises(KvtierError) as info:
        from_config(cfg, "x", "test")
    assert str(info.value) == "test: missing required field 'intermediate_size'"
    # an MoE model may leave it out: its experts have their own width
    m = from_config({**cfg, "num_local_experts": 2, "num_experts_per_tok": 1, "moe_intermediate_size": 32}, "m", "t")
    assert m.intermediate_size == 0 and m.is_moe


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"vocab_size": None}, "test: missing required field 'vocab_size'"),
        ({"num_hidden_layers": 0}, "test: field 'num_hidden_layers' must be an integer in [1, 100,000], got 0"),
        (
            {"num_hidden_layers": 100_001},
            "test: field 'num_hidden_layers' must be an integer in [0, 100,000], got 100001",
        ),
        ({"vocab_size": 2.5}, "test: field 'vocab_size' must be an integer in [0, 16,777,216], got 2.5"),
        ({"vocab_size": True}, "test: field 'vocab_size' must be an integer in [0, 16,777,216], got True"),
        ({"vocab_size": "100"}, "test: field 'vocab_size' must be an integer in [0, 16,777,216], got '100'"),
        (
            {"max_position_embeddings": 10**13},
            "test: field 'max_position_embeddings' must be an integer in [0, 1,000,000,000,000], got 10000000000000",
        ),
        ({"num_attention_heads": 0}, "test: 'num_attention_heads' and 'hidden_size' must be positive"),
        ({"hidden_size": 0}, "test: 'num_attention_heads' and 'hidden_size' must be positive"),
        ({"num_key_value_heads": 3}, "test: 'num_attention_heads' (8) must be a multiple of 'num_key_value_heads' (3)"),
        (
            {"num_key_value_heads": 16},
            "test: 'num_attention_heads' (8) must be a multiple of 'num_key_value_heads' (16)",
        ),
        ({"num_key_value_heads": 0}, "test: field 'num_key_value_heads' must be an integer in [1, 65,536], got 0"),
        (
            {"tie_word_embeddings": "false"},
            "test: field 'tie_word_embeddings' must be true or false (a JSON boolean), got 'false'",
        ),
        (
            {"num_local_experts": 4, "num_experts_per_tok": 5},
            "test: 'num_experts_per_tok' (5) exceeds 'num_local_experts' (4)",
        ),
        (
            {"n_routed_experts": 4, "num_experts_per_tok": 5},
            "test: 'num_experts_per_tok' (5) exceeds 'n_routed_experts' (4)",
        ),
        ({"quantization_config": "fp8"}, "test: field 'quantization_config' must be a JSON object"),
        (
            {"sliding_window": 16, "layer_types": ["full_attention"]},
            "test: field 'layer_types' must be a list of 2 strings, one per layer",
        ),
        (
            {"sliding_window": 16, "layer_types": "full"},
            "test: field 'layer_types' must be a list of 2 strings, one per layer",
        ),
        (
            {"sliding_window": 16, "layer_types": [1, 2]},
            "test: field 'layer_types' must be a list of 2 strings, one per layer",
        ),
        (
            {"sliding_window": 16, "cache_implementation": "hybrid"},
            "test: 'cache_implementation' is 'hybrid' (local and global layers) but neither 'layer_types' nor"
            " 'sliding_window_pattern' says which layers are local",
        ),
        (
            {"sliding_window": 16, "sliding_window_pattern": 0},
            "test: field 'sliding_window_pattern' must be an integer in [1, 100,000], got 0",
        ),
    ],
)
def test_whole_config_error_messages(change, message):
    with pytest.raises(KvtierError) as info:
        from_config({**BASE, **change}, "x", "test")
    assert str(info.value) == message


def test_not_an_object_and_unknown_dtype_and_preset_whole():
    with pytest.raises(KvtierError) as info:
        from_config([1], "x", "test")
    assert str(info.value) == "test: expected a JSON object"
    with pytest.raises(KvtierError) as info:
        dtype_bytes("int4", "kv_dtype")
    assert str(info.value) == "kv_dtype must be one of bf16, fp16, fp32, fp8, got 'int4'"
    with pytest.raises(KvtierError) as info:
        dtype_bytes("int4")
    assert str(info.value) == "dtype must be one of bf16, fp16, fp32, fp8, got 'int4'"
    with pytest.raises(KvtierError) as info:
        load_model("llama-9")
    assert str(info.value) == (
        "model 'llama-9': unknown preset; presets: " + ", ".join(PRESETS) + ", or a config.json path"
    )


def test_integral_floats_and_nulls_take_defaults():
    # 2.0 layers is 2; a null num_key_value_heads means as many as the query heads (MHA)
    m = from_config({**BASE, "num_hidden_layers": 2.0, "num_key_value_heads": None}, "x", "test")
    assert m.n_layers == 2 and isinstance(m.n_layers, int) and m.n_kv_heads == 8 and m.attention == "MHA"
    # bounds are inclusive: 100,000 layers and a vocabulary of 2**24 are accepted
    assert from_config({**BASE, "num_hidden_layers": 100_000}, "x", "test").n_layers == 100_000
    assert from_config({**BASE, "vocab_size": 2**24}, "x", "test").vocab_size == 2**24


def test_moe_layer_frequency_and_first_dense_layers():
    cfg = {
        **BASE,
        "num_hidden_layers": 5,
        "n_routed_experts": 4,
        "num_experts_per_tok": 2,
        "moe_layer_freq": 2,
        "first_k_dense_replace": 1,
    }
    # MoE layers are the multiples of 2 in [1, 5): 2 and 4 -> ceil(5/2) - ceil(1/2) = 3 - 1 = 2
    assert from_config(cfg, "x", "test").n_moe_layers == 2
    # every layer dense-first beyond the count: never below 0
    assert from_config({**cfg, "first_k_dense_replace": 9}, "x", "test").n_moe_layers == 0
    # default frequency 1 and no dense layers: all 5
    cfg2 = {k: v for k, v in cfg.items() if k not in ("moe_layer_freq", "first_k_dense_replace")}
    assert from_config(cfg2, "x", "test").n_moe_layers == 5
    # a dense model has none
    assert from_config(dict(BASE), "x", "test").n_moe_layers == 0


def test_moe_counts_with_shared_expert_and_no_router_bias():
    cfg = {**BASE, "n_routed_experts": 4, "num_experts_per_tok": 1, "n_shared_experts": 1, "moe_intermediate_size": 32}
    m = from_config(cfg, "x", "test")
    # attention 4 x 64 x 64 = 16,384; expert 3 x 64 x 32 = 6,144; router 64 x 4 = 256 (no bias); norms 128
    # MoE total: 4 x 6,144 + 6,144 + 256 = 30,976; active 6,144 + 6,144 + 256 = 12,544
    # layers: total 2 x (16,384 + 30,976 + 128) = 94,976; active 2 x (16,384 + 12,544 + 128) = 58,112
    # + embeddings 12,800 + final norm 64
    assert m.param_counts() == (94_976 + 12_864, 58_112 + 12_864)
    assert m.router_bias is False
    # noaux_tc adds one bias per expert: 4 more per MoE layer, 8 in all
    biased = from_config({**cfg, "topk_method": "noaux_tc"}, "x", "test")
    assert biased.param_counts() == (94_976 + 12_864 + 8, 58_112 + 12_864 + 8)


@pytest.mark.parametrize(
    ("extra", "layers", "window"),
    [
        ({"sliding_window": 16}, 2, 16),  # Mistral: every layer
        ({"sliding_window": 16, "use_sliding_window": False, "max_window_layers": 1}, 0, 0),  # Qwen2 switched off
        ({"sliding_window": 16, "use_sliding_window": True, "max_window_layers": 1}, 1, 16),  # layers 1 and up
        ({"sliding_window": 16, "max_window_layers": 5}, 0, 0),  # max(0, 2 - 5)
        ({"sliding_window": 16, "model_type": "gemma2"}, 1, 16),  # (2 + 1) // 2
        ({"sliding_window": 16, "sliding_window_pattern": 2}, 1, 16),  # 2 - 2 // 2
        ({"sliding_window": 16, "layer_types": ["sliding_attention", "full_attention"]}, 1, 16),
        ({"sliding_window": 16, "layer_types": ["full_attention", "full_attention"]}, 0, 0),
        ({"sliding_window": None}, 0, 0),
    ],
)
def test_sliding_layers(extra, layers, window):
    m = from_config({**BASE, **extra}, "x", "test")
    assert (m.sliding_layers, m.sliding_window) == (layers, window)


def test_presets_load_their_published_flags():
    assert load_model("mistral-7b").sliding_layers == 32 and load_model("mistral-7b").sliding_window == 4096
    assert load_model("qwen2.5-72b").qkv_bias is True and load_model("qwen2.5-72b").sliding_layers == 0
    m = load_model("mixtral-8x7b")
    # 46,702,792,704 total, 12,879,925,248 active (2 of 8 experts)
    assert m.param_counts() == (46_702_792_704, 12_879_925_248)
    assert (m.name, m.source, m.model_type) == ("mixtral-8x7b", "preset mixtral-8x7b", "mixtral")


def test_load_model_from_a_path_and_config_path(tmp_path):
    directory = tmp_path / "tiny-model"
    directory.mkdir()
    (directory / "config.json").write_text(json.dumps(BASE))
    m = load_model(str(directory))
    assert m.name == "tiny-model" and m.source == str(directory / "config.json")
    loose = tmp_path / "other.json"
    loose.write_text(json.dumps(BASE))
    assert load_model(str(loose)).name == tmp_path.name
    assert config_path("llama-3-70b") is None
    assert config_path("no-such-model") is None
    assert config_path("x.json") == Path("x.json")
    assert config_path("dir/cfg") == Path("dir/cfg")
    assert config_path(str(directory)) == directory / "config.json"


def test_sliding_window_pattern_that_does_not_divide_the_layers():
    # every third layer global: of 2 layers, 2 // 3 = 0 are global, so both are local (not 2 - 2/3)
    m = from_config({**BASE, "sliding_window": 16, "sliding_window_pattern": 3}, "x", "test")
    assert m.sliding_layers == 2 and isinstance(m.sliding_layers, int)


def test_max_window_layers_out_of_range_is_named_with_its_file():
    with pytest.raises(KvtierError) as info:
        from_config({**BASE, "sliding_window": 16, "max_window_layers": -1}, "x", "test")
    assert str(info.value) == "test: field 'max_window_layers' must be an integer in [0, 100,000], got -1"


def test_kv_dtype_is_named_in_its_message():
    with pytest.raises(KvtierError) as info:
        load_model("llama-3-8b").kv_bytes_per_token("int4")
    assert str(info.value) == "kv_dtype must be one of bf16, fp16, fp32, fp8, got 'int4'"


def test_a_missing_config_file_is_named_as_a_model_config_file(tmp_path):
    missing = tmp_path / "none.json"
    with pytest.raises(KvtierError) as info:
        load_model(str(missing))
    assert str(info.value) == f"{missing}: model config file not found"


def test_dense_and_moe_defaults():
    dense = from_config(dict(BASE), "x", "test")
    # a dense model: no experts, none per token, no weight format, model type "unknown"
    assert (dense.n_routed_experts, dense.experts_per_token) == (0, 0)
    assert dense.weight_quantization == "" and dense.model_type == "unknown"
    # an MoE config that does not say how many experts a token uses: 0
    assert from_config({**BASE, "num_local_experts": 4}, "x", "test").experts_per_token == 0
    # a token may use every expert
    assert from_config({**BASE, "num_local_experts": 4, "num_experts_per_tok": 4}, "x", "test").experts_per_token == 4
    assert load_model("llama-3-8b").weight_quantization == ""


def test_experts_per_token_out_of_range_is_named_with_its_file():
    with pytest.raises(KvtierError) as info:
        from_config({**BASE, "num_local_experts": 4, "num_experts_per_tok": -1}, "x", "test")
    assert str(info.value) == "test: field 'num_experts_per_tok' must be an integer in [0, 65,536], got -1"


def test_a_long_bad_value_is_cut_at_forty_characters():
    # repr of 50 x's is 52 characters: the first 40 ("'" and 39 x's) then "..."
    with pytest.raises(KvtierError) as info:
        from_config({**BASE, "vocab_size": "x" * 50}, "x", "test")
    assert str(info.value) == "test: field 'vocab_size' must be an integer in [0, 16,777,216], got '" + "x" * 39 + "..."


def test_text_config_is_ignored_when_the_top_level_is_the_text_model():
    # a complete top level (hidden_size given) with a text_config that would make it GQA: still MHA
    m = from_config({**BASE, "text_config": {"num_key_value_heads": 2}}, "x", "test")
    assert m.n_kv_heads == 8 and m.attention == "MHA"


def test_routed_experts_out_of_range_is_named_with_its_file():
    with pytest.raises(KvtierError) as info:
        from_config({**BASE, "n_routed_experts": -1}, "x", "test")
    assert str(info.value) == "test: field 'n_routed_experts' must be an integer in [0, 65,536], got -1"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"attention_bias": 1}, "test: field 'attention_bias' must be true or false (a JSON boolean), got 1"),
        (
            {"use_sliding_window": "no"},
            "test: field 'use_sliding_window' must be true or false (a JSON boolean), got 'no'",
        ),
        ({"sliding_window": -1}, "test: field 'sliding_window' must be an integer in [0, 1,000,000,000,000], got -1"),
        ({"intermediate_size": -1}, "test: field 'intermediate_size' must be an integer in [0, 16,777,216], got -1"),
        ({**MLA, "kv_lora_rank": -1}, "test: field 'kv_lora_rank' must be an integer in [0, 1,048,576], got -1"),
        ({**MLA, "q_lora_rank": -1}, "test: field 'q_lora_rank' must be an integer in [0, 1,048,576], got -1"),
        ({**MLA, "qk_rope_head_dim": -1}, "test: field 'qk_rope_head_dim' must be an integer in [0, 65,536], got -1"),
        ({**MLA, "qk_nope_head_dim": -1}, "test: field 'qk_nope_head_dim' must be an integer in [0, 65,536], got -1"),
        ({**MLA, "v_head_dim": -1}, "test: field 'v_head_dim' must be an integer in [0, 65,536], got -1"),
        ({"n_shared_experts": -1}, "test: field 'n_shared_experts' must be an integer in [0, 65,536], got -1"),
        (
            {"moe_intermediate_size": -1},
            "test: field 'moe_intermediate_size' must be an integer in [0, 16,777,216], got -1",
        ),
        (
            {"first_k_dense_replace": -1},
            "test: field 'first_k_dense_replace' must be an integer in [0, 100,000], got -1",
        ),
        ({"moe_layer_freq": -1}, "test: field 'moe_layer_freq' must be an integer in [0, 100,000], got -1"),
    ],
)
def test_every_field_is_named_with_its_file(change, message):
    with pytest.raises(KvtierError) as info:
        from_config({**BASE, **change}, "x", "test")
    assert str(info.value) == message


def test_non_mla_configs_leave_the_mla_fields_zero():
    # a GQA config that happens to carry MLA-looking keys (no kv_lora_rank): every MLA field stays 0
    m = from_config({**BASE, "q_lora_rank": 5, "qk_rope_head_dim": 4, "v_head_dim": 8}, "x", "test")
    assert (m.kv_lora_rank, m.q_lora_rank, m.qk_rope_head_dim, m.qk_nope_head_dim, m.v_head_dim) == (0, 0, 0, 0, 0)
    plain = from_config(dict(BASE), "x", "test")
    assert (plain.q_lora_rank, plain.qk_rope_head_dim, plain.qk_nope_head_dim, plain.v_head_dim) == (0, 0, 0, 0)
    # no max_position_embeddings: 0 (unknown), not 1
    assert plain.max_positions == 0


def test_qwen3_moe_experts_are_read_from_num_experts():
    # Qwen2-MoE and Qwen3-MoE name their experts num_experts (not num_local_experts nor n_routed_experts); read as
    # dense, Qwen3-30B-A3B counted 3.3 billion weights, and Qwen3-235B-A22B fitted one 80 GB accelerator.
    # Qwen3-30B-A3B by hand: 48 layers of hidden 2048; attention 2048 x 4096 x 2 (q, o; 32 heads of 128)
    # + 2 x 2048 x 512 (k, v; 4 KV heads) = 18,874,368; an expert 3 x 2048 x 768 = 4,718,592; router 2048 x 128
    # = 262,144; norms 4,096.  Total a layer 18,874,368 + 128 x 4,718,592 + 262,144 + 4,096 = 623,120,384;
    # active 18,874,368 + 8 x 4,718,592 + 262,144 + 4,096 = 56,889,344.  Untied embeddings 2 x 151,936 x 2048
    # = 622,329,856, final norm 2,048: total 48 x 623,120,384 + 622,331,904 = 30,532,110,336, active
    # 48 x 56,889,344 + 622,331,904 = 3,353,020,416 (the published 30.5B and 3.3B)
    spec = load_model(str(CONFIGS / "qwen3-30b-a3b.json"))
    assert (spec.n_routed_experts, spec.experts_per_token) == (128, 8)
    assert spec.param_counts() == (30_532_110_336, 3_353_020_416)
