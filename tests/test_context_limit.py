"""Figures whose axis runs past the model's context window mark its max_position_embeddings."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from kvtier.report.figures import mark_context_limit, new_figure  # noqa: E402
from kvtier.report.pages import capacity, interior  # noqa: E402
from kvtier.scenario import seed_scenario  # noqa: E402


@pytest.mark.parametrize("draw", [interior.regen_vs_position, capacity.capacity_vs_context])
def test_figures_past_the_seed_models_window_mark_it(draw):
    s = seed_scenario()
    assert s.model.max_positions == 8192
    fig, caption = draw(s)
    ax = fig.axes[0]
    xs = [line.get_xdata()[0] for line in ax.get_lines() if len(set(line.get_xdata())) == 1]
    assert 8192 in xs
    assert any("max_position_embeddings = 8,192" in t.get_text() for t in ax.texts)
    assert "context limit (8,192 positions" in caption
    plt.close(fig)


def test_no_mark_inside_the_window_or_without_one():
    fig, ax = new_figure()
    assert mark_context_limit(ax, "m", 131_072, 100_000.0) == ""
    assert mark_context_limit(ax, "m", 0, 1e6) == ""
    assert not ax.get_lines()
    plt.close(fig)


def test_a_model_whose_every_layer_slides_has_no_capacity_crossover():
    from kvtier.inputs.assumptions import load_assumptions
    from kvtier.scenario import Scenario

    s = Scenario(load_assumptions(sets={"model": "mistral-7b"}))
    assert capacity.no_crossover(s)
    df = capacity.table(s)
    assert "crossover" not in df["point"].tolist()
    row = df[df["point"] == "no crossover"].iloc[0]
    assert row["reference"].startswith("no crossover: a 4,096-token sliding window")
    assert df["kv_GiB"].max() == row["kv_GiB"]  # the cache stops growing at the window
    fig, caption = capacity.capacity_vs_context(s)
    assert "There is no crossover" in caption
    assert not any(t.get_text().startswith("crossover") for t in fig.axes[0].texts)
    plt.close(fig)
    assert "does not exist" in capacity.numbers(s)["window_note"]
    # the would-be crossover is still stated, as a hypothetical
    assert capacity.numbers(s)["crossover_sentence"].startswith(
        f"Were every layer's cache to keep growing, the two would be equal at {s.crossover_tokens:,.0f} tokens"
    )
    # the seed: 70e9 x 2 B of weights / 327,680 B per token = 427,246.1 tokens
    assert capacity.numbers(seed_scenario())["crossover_sentence"] == "The two are equal at 427,246 tokens of context."
    assert not capacity.no_crossover(seed_scenario())


def test_the_capacity_finding_is_conditional_on_a_crossover():
    from kvtier.inputs.assumptions import load_assumptions
    from kvtier.scenario import Scenario

    mistral = capacity.numbers(Scenario(load_assumptions(sets={"model": "mistral-7b"})))["finding_sentence"]
    assert mistral.startswith("One sequence's cache never reaches the weights: a 4,096-token sliding window")
    seed = capacity.numbers(seed_scenario())["finding_sentence"]
    # 70e9 x 2 B / 327,680 B per token = 427,246 tokens, beyond Llama-3-70B's 8,192 positions
    assert seed.startswith("One sequence's cache equals the weights at 427,246 tokens of context; that crossover lies")
