"""Properties checked against independent computations, not the functions against themselves (issue 15, item 3).

The expected side of each check reads the published ``config.json`` directly and counts
with plain Python loops, so a slip in :mod:`kvtier.inputs.models` or :mod:`kvtier.formulas.costs` shows
as a disagreement.
"""

from __future__ import annotations

import json
import math
from importlib import resources

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvtier import load_model
from kvtier.formulas import costs
from kvtier.inputs.models import PRESETS


def raw_config(preset: str) -> dict:
    return json.loads(resources.files("kvtier.data").joinpath("models", f"{preset}.json").read_text())


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


def layer_by_layer_attention_flops(cfg: dict) -> int:
    """Attention FLOPs per cached position: per layer and head, 2 (d_qk + d_v)."""
    heads = cfg["num_attention_heads"]
    if cfg.get("kv_lora_rank") is not None:
        d_qk, d_v = cfg["qk_nope_head_dim"] + cfg["qk_rope_head_dim"], cfg["v_head_dim"]
    else:
        d_qk = d_v = cfg.get("head_dim") or cfg["hidden_size"] // heads
    return sum(2 * heads * (d_qk + d_v) for _layer in range(cfg["num_hidden_layers"]))


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize(("dtype", "size"), [("bf16", 2), ("fp8", 1), ("fp32", 4)])
def test_kv_bytes_per_token_against_the_published_config(preset, dtype, size):
    assert load_model(preset).kv_bytes_per_token(dtype) == layer_by_layer_kv_bytes(raw_config(preset), size)


@pytest.mark.parametrize("preset", PRESETS)
def test_attention_flops_per_position_against_the_published_config(preset):
    assert load_model(preset).attention_flops_per_position() == layer_by_layer_attention_flops(raw_config(preset))


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


def token_by_token_flops(first: int, n: int, params: float, per_position: float, k: float = 2.0) -> float:
    """Each recomputed token i (0-based position) costs k N plus per_position x (i + 1) attended positions."""
    return sum(k * params + per_position * (i + 1) for i in range(first, first + n))


@settings(max_examples=60)
@given(
    preset=st.sampled_from(PRESETS),
    position=st.integers(0, 5000),
    block=st.integers(1, 64),
    anchor=st.sampled_from([0, 1, 7, 256, 1000]),
)
def test_regen_flops_against_a_token_by_token_count(preset, position, block, anchor):
    m = load_model(preset)
    n_params, fpp = m.active_params, m.attention_flops_per_position()
    resident = costs.regen_flops(position, block, n_params, fpp, "resident")
    assert float(resident) == pytest.approx(token_by_token_flops(position, block, n_params, fpp), rel=1e-9)
    # evicted: restart at the last anchor at or before the position (0 when there are no anchors)
    start = (position // anchor) * anchor if anchor else 0
    evicted = costs.regen_flops(position, block, n_params, fpp, "evicted", anchor)
    expected = token_by_token_flops(start, position - start + block, n_params, fpp)
    assert float(evicted) == pytest.approx(expected, rel=1e-9)


@settings(max_examples=60)
@given(
    preset=st.sampled_from(PRESETS),
    block=st.integers(1, 128),
    bandwidth_gbps=st.floats(1.0, 1000.0),
    latency_us=st.floats(0.0, 50.0),
    mfu=st.floats(0.01, 1.0),
    peak_tflops=st.floats(10.0, 5000.0),
)
def test_ratio_against_its_definition(preset, block, bandwidth_gbps, latency_us, mfu, peak_tflops):
    m = load_model(preset)
    kv = m.kv_bytes_per_token("bf16")
    # definition: regen time / fetch time, regen = 2 N T / (peak x MFU), fetch = latency + T kv / bandwidth
    regen = 2.0 * m.active_params * block / (peak_tflops * 1e12 * mfu)
    fetch = latency_us * 1e-6 + block * kv / (bandwidth_gbps * 1e9)
    tail = costs.tail_regen_time_s(block, m.active_params, peak_tflops * 1e12, mfu)
    fetched = costs.fetch_time_s(costs.block_bytes(kv, block), bandwidth_gbps * 1e9, latency_us * 1e-6)
    assert float(costs.ratio(tail, fetched)) == pytest.approx(regen / fetch, rel=1e-12)
    # and the bandwidth at which the ratio reaches 1 makes the two times equal
    bw = float(costs.bandwidth_for_ratio(block * kv, regen, 1.0, latency_us * 1e-6))
    if math.isfinite(bw):
        assert latency_us * 1e-6 + block * kv / bw == pytest.approx(regen, rel=1e-9)
    else:
        assert latency_us * 1e-6 >= regen


@settings(max_examples=60)
@given(params=st.floats(1e6, 1e12), fpp=st.floats(1e3, 1e7), block=st.integers(1, 256), k=st.sampled_from([2.0, 6.0]))
def test_attention_parity_against_its_definition(params, fpp, block, k):
    # at the parity position the attention FLOPs of the block, summed token by token, equal k N T
    p = float(costs.attention_parity_position(params, fpp, block, k))
    attention = sum(fpp * (p + i + 1) for i in range(block))
    assert attention == pytest.approx(k * params * block, rel=1e-9)
