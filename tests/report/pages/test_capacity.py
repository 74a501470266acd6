"""The capacity page: the chapter's capacity table and its 427K-token crossover, recomputed from the seed set."""

import pytest

from kvtier import Scenario, load_model

GIB = 2**30


def test_capacity_table(seed_scenario):
    # 32,768 x 327,680 B = 10,737,418,240 B = 10.0 GiB
    assert seed_scenario.kv_bytes(32_768) / GIB == 10.0
    # 131,072 x 327,680 B = 42,949,672,960 B = 40.0 GiB
    assert seed_scenario.kv_bytes(131_072) / GIB == 40.0
    # weights: 70e9 x 2 B = 140e9 B = 130.385 GiB
    assert seed_scenario.weight_bytes == 140e9
    assert seed_scenario.weight_bytes / GIB == pytest.approx(130.385, abs=1e-3)
    # 10 GiB / 130.385 GiB = 7.67 % (chapter: 8 %); 40 / 130.385 = 30.68 % (chapter: 31 %)
    assert seed_scenario.kv_share(32_768) == pytest.approx(0.076696, abs=1e-6)
    assert seed_scenario.kv_share(131_072) == pytest.approx(0.306783, abs=1e-6)
    assert round(seed_scenario.kv_share(32_768) * 100) == 8
    assert round(seed_scenario.kv_share(131_072) * 100) == 31


def test_crossover_near_427k_tokens(seed_scenario):
    # 140e9 B / 327,680 B per token = 427,246.09 tokens (chapter: "roughly 427,000")
    assert seed_scenario.crossover_tokens == pytest.approx(427_246.09375, rel=1e-12)


def test_exact_llama3_70b_params_move_the_crossover():
    model = load_model("llama-3-70b")
    # embeddings 128,256 x 8,192 = 1,050,673,152, twice (untied) = 2,101,346,304
    # per layer: q 8192^2 + k,v 2 x 8192 x 1024 + o 8192^2 = 150,994,944
    #            MLP 3 x 8192 x 28,672 = 704,643,072; norms 2 x 8192 = 16,384 -> 855,654,400
    # 80 layers = 68,452,352,000; + 2,101,346,304 + final norm 8,192 = 70,553,706,496
    assert model.total_params == 70_553_706_496
    exact = Scenario().assumptions.with_values({"param_count": None}, source="test")
    s = Scenario(exact)
    # weights 141,107,412,992 B / 327,680 B = 430,625.65 tokens, +3,379.56 (+0.79 %) over the nominal 427,246
    assert s.crossover_tokens == pytest.approx(430_625.65, abs=0.01)
    assert s.crossover_tokens - Scenario().crossover_tokens == pytest.approx(3_379.56, abs=0.01)
    # and regeneration at 25 % MFU: (16 x 2 x 70,553,706,496 + 356,515,840 of attention) / 125e12 = 18.0646 ms
    assert float(s.regen_s(0.25)) == pytest.approx((16 * 2 * 70_553_706_496 + 356_515_840) / 125e12, rel=1e-12)


def test_the_crossover_ratio_says_it_lies_past_the_window(seed_scenario):
    from kvtier.report.pages import capacity as page

    n = page.numbers(seed_scenario)
    # the crossover, 427,246 tokens, is past Llama-3-70B's 8,192 positions; the sentence says so beside its ratios
    assert n["crossover_ratio_sentence"] == (
        "The last block of such a sequence (past the 8,192-position context window of llama-3-70b) costs"
        f" {n['crossover_in_batch_ratio']:,.0f} times its fetch inside a batch and {n['crossover_lone_ratio']:,.0f}"
        " times alone."
    )
    assert f"{n['crossover_in_batch_ratio']:,.0f}" == "1,969"


def test_the_seed_shares_are_quoted_only_when_the_build_differs(seed_scenario):
    from kvtier.report.pages import capacity
    from tests.conftest import scenario

    # the seed build lists 7.7 % and 30.7 % just above: only the chapter's rounded figures are added
    seed = capacity.numbers(seed_scenario)["seed_sentence"]
    assert seed == 'The source chapter prints the two shares and the crossover as 8 %, 31 % and "roughly 427,000".'
    # at 65,536 tokens the short share is 20 GiB / 130.4 GiB = 15.3 %, so the seed's 7.7 % is quoted beside it
    changed = capacity.numbers(scenario(**{"context.short": "65536"}))["seed_sentence"]
    assert changed.startswith("With the seed assumptions the shares are 7.7 % and 30.7 % and the crossover 427,246")


def test_the_capacity_figure_labels_do_not_touch_and_the_caption_concludes(seed_scenario):
    import matplotlib.pyplot as plt

    from kvtier.report import figures
    from kvtier.report.pages import capacity as page

    fig, caption = page.capacity_vs_context(seed_scenario)
    assert figures.legibility_problems(fig) == []
    # 140e9 B = 130.4 GiB of weights, equal to the cache at 140e9 / 327,680 B = 427,246 tokens
    assert caption.startswith(
        "One sequence's KV cache grows in proportion to its context and equals the 130.4 GiB of weights at 427,246"
    )
    # no parameter sentence (a null, or the regeneration model) in the capacity caption
    assert "null" not in caption and "regeneration runs through" not in caption
    plt.close(fig)
