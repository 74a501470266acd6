"""The models page: presets side by side, by hand."""

from __future__ import annotations

import pytest

from kvtier.report.pages import models
from tests.conftest import scenario


def test_models_side_by_side_by_hand():
    rows = {r["model"]: r for r in models.table(scenario()).to_dict(orient="records")}
    # Llama-2 7B (MHA, 32 KV heads): 2 x 32 x 32 x 128 x 2 B = 524,288 B = 512 KiB per token, 4x Llama-3 8B's
    # 128 KiB (GQA, 8 KV heads); parameters 2 x 32,000 x 4,096 + 32 x (4 x 4,096^2 + 3 x 4,096 x 11,008 + 2 x 4,096)
    # + 4,096 = 262,144,000 + 6,476,267,520 + 4,096 = 6,738,415,616
    assert rows["llama-2-7b"]["attention"] == "MHA" and rows["llama-2-7b"]["kv_KiB_per_token"] == 512
    assert rows["llama-3-8b"]["kv_KiB_per_token"] == 128
    assert rows["llama-2-7b"]["total_params_B"] * 1e9 == pytest.approx(6_738_415_616, rel=1e-15)
    # DeepSeek-V3 (MLA): 61 layers x (512 + 64) x 2 B = 70,272 B = 68.625 KiB per token; fp8 halves it
    assert rows["deepseek-v3"]["kv_KiB_per_token"] == 68.625
    assert rows["deepseek-v3"]["kv_fp8_KiB_per_token"] == 68.625 / 2
    # DeepSeek-V3's weights in the fp8 its config publishes (quantization_config fp8 e4m3): 671,026,419,200 x 1 B
    # = 624.94 GiB, not the 1,249.88 GiB of bf16; Llama-2 7B's torch_dtype float16 is 2 B, as bf16
    assert rows["deepseek-v3"]["weights_GiB"] == pytest.approx(671_026_419_200 / 2**30, rel=1e-12)
    assert "weights_GiB in fp8, the dtype its weights are published in (fp8 e4m3)" in rows["deepseek-v3"]["note"]
    assert rows["llama-2-7b"]["weights_GiB"] == pytest.approx(6_738_415_616 * 2 / 2**30, rel=1e-12)
    # Llama-3 70B with its exact 70,553,706,496 parameters: 141,107,412,992 B / 327,680 B = 430,625.65 tokens
    assert rows["llama-3-70b"]["crossover_tokens"] == pytest.approx(430_625.65, rel=1e-8)
    # Llama-3 8B at the illustrative point: (2 x 8,030,261,248 x 16 + 71,303,168 FLOP of the block's attention over
    # itself, 4 x 32 layers x 4,096 x 136 pairs) / 1.25e14 = 2.0563 ms over 16 x 131,072 B / 64e9 = 32.768 us -> 62.75
    assert rows["llama-3-8b"]["ratio_illustrative"] == pytest.approx(
        (2 * 8_030_261_248 * 16 + 71_303_168) / 1.25e14 / 32.768e-6, rel=1e-12
    )


def test_the_models_figure_ticks_each_context_limit_and_counts_those_past_the_crossover():
    import matplotlib.pyplot as plt

    fig, caption = models.models_crossover(scenario())
    ax = fig.axes[0]
    ticks = [line for line in ax.get_lines() if line.get_marker() == "|"]
    # every preset states max_position_embeddings: ten ticks (nine, and llama-3.1-8b's since it shipped)
    assert len(ticks) == 10
    # Llama-3.1-8B's crossover, 8,030,261,248 params x 2 B / 131,072 B a token (2 x 32 x 8 x 128 x 2) = 122,532
    # tokens, lies inside its 131,072 positions; Llama-3-8B's is the same 122,532 past its 8,192, and Llama-2 7B's
    # 25,705 past its 4,096: one model of ten reaches its crossover
    assert "llama-3.1-8b reaches its crossover within its context limit (1 of 10)" in caption
    # DeepSeek-V3's in its published fp8: 671,026,419,200 params x 1 B / 70,272 B a token (61 x 576 x 2) = 9,548,987
    assert "from 25,705 tokens (llama-2-7b) to 9,548,987 (deepseek-v3)" in caption
    plt.close(fig)
