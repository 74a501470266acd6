"""Restoring the KV from hidden states: elements held, projection FLOPs, the overlapped restore time."""

from __future__ import annotations

import numpy as np
import pytest

from kvtier.formulas import hidden
from kvtier.inputs.models import load_model


def test_hidden_states_against_the_kv_under_each_attention_design():
    # Llama-2-7B (MHA): 4,096 x 32 layers = 131,072 elements a token against 2 x 32 x 32 heads x 128 = 262,144: half
    m = load_model("llama-2-7b")
    assert hidden.hidden_elements_per_token(m.hidden_size, m.n_layers) == 131_072
    assert m.kv_elements_per_token() == 262_144
    # Llama-3-70B (GQA): 8,192 x 80 = 655,360 against 2 x 80 x 8 x 128 = 163,840: four times the KV
    m = load_model("llama-3-70b")
    assert hidden.hidden_elements_per_token(m.hidden_size, m.n_layers) == 4 * m.kv_elements_per_token() == 655_360
    # DeepSeek-V3 (MLA): 7,168 x 61 = 437,248 against 61 x (512 + 64) = 35,136 latent elements: 12.44 times
    m = load_model("deepseek-v3")
    assert hidden.hidden_elements_per_token(m.hidden_size, m.n_layers) == 437_248
    assert 437_248 / m.kv_elements_per_token() == pytest.approx(12.444, rel=1e-4)


def test_the_restore_computes_one_dot_product_per_cached_element():
    # Llama-3-70B: 2 x 8,192 x 163,840 = 2,684,354,560 FLOP a token, against 2 x 70.55e9 for a forward pass: 1.90 %
    m = load_model("llama-3-70b")
    flops = hidden.restore_flops_per_token(m.hidden_size, m.kv_elements_per_token())
    assert flops == 2_684_354_560
    assert flops / (2 * m.param_counts()[1]) == pytest.approx(0.019023, rel=1e-3)


def test_the_restore_is_the_slower_of_its_transfer_and_its_projections():
    # 16 tokens of 1e5 B over 1e9 B/s with 1 us of latency: 1.601 ms; their 16 x 1e9 FLOP at 1e15 x 50 %: 32 us
    t = hidden.restore_s(np.array([16.0, 0.0]), 1e5, 1e9, 1e9, 1e15, 0.5, latency_s=1e-6)
    assert t == pytest.approx([1.601e-3, 0.0])
    # on a 1e12 B/s link the transfer takes 1.6 us + 1 us and the projections' 32 us set the time
    assert hidden.restore_s(np.array([16.0]), 1e5, 1e9, 1e12, 1e15, 0.5, latency_s=1e-6) == pytest.approx([32e-6])


def test_hidden_bytes_per_token_are_the_elements_in_the_kvs_element_type():
    # Llama-2-7B in bf16: KV 2 x 32 x 32 x 128 = 262,144 elements, 524,288 B a token; hidden 4,096 x 32 = 131,072
    # elements of 2 B each = 262,144 B
    m = load_model("llama-2-7b")
    assert hidden.hidden_bytes_per_token(m.hidden_size, m.n_layers, 524_288.0, m.kv_elements_per_token()) == 262_144.0
    # fp8 KV (1 B an element): the hidden states in fp8 too
    assert hidden.hidden_bytes_per_token(4096, 32, 262_144.0, 262_144) == 131_072.0
