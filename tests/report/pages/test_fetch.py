"""The fetch page: the chapter's fetch table, recomputed from the seed set."""

import pytest


def test_fetch_table(seed_scenario):
    fetch = seed_scenario.fetch_by_label()
    # 5,242,880 B / 121e9 B/s = 43.33 µs  (chapter: 43 µs)
    assert fetch["optimistic"] == pytest.approx(43.329587e-6, rel=1e-6)
    # 5,242,880 B / 64e9 B/s = 81.92 µs   (chapter: 82 µs)
    assert fetch["mid"] == pytest.approx(81.92e-6, rel=1e-12)
    # 5,242,880 B / 32e9 B/s = 163.84 µs  (chapter: 164 µs)
    assert fetch["pessimistic"] == pytest.approx(163.84e-6, rel=1e-12)
    assert [round(t * 1e6) for t in fetch.values()] == [43, 82, 164]


def test_the_seed_comparison_is_printed_only_when_the_build_differs(seed_scenario):
    from kvtier.report.pages import fetch
    from tests.conftest import scenario

    # the seed build has just given 43.33, 81.92 and 163.84 us: it names only the chapter's rounding
    assert (
        fetch.numbers(seed_scenario)["seed_sentence"] == "The source chapter prints them rounded as 43, 82 and 164 µs."
    )
    # at 100 GB/s mid the build gives 52.43 us, so the seed's 81.92 us is quoted beside the chapter's 82
    changed = fetch.numbers(scenario(**{"bandwidth.mid": "100GB/s"}))["seed_sentence"]
    assert changed == (
        "With the seed assumptions these are 43.33, 81.92 and 163.84 µs, which the source chapter prints rounded"
        " as 43, 82 and 164 µs."
    )


def test_the_fetch_figure_compares_the_layouts_and_concludes(seed_scenario):
    import matplotlib.pyplot as plt

    from kvtier.report.pages import fetch as page

    fig, caption = page.fetch_vs_bandwidth(seed_scenario)
    # 160 chunks (80 layers x keys and values) of the fitted 9.05 µs: latency equals the bytes' time at
    # 5,242,880 B / (160 x 9.0494 µs) = 3.62 GB/s, below the 121 GB/s optimistic bracket, so the caption says
    # faster links barely help; there the per-layer fetch is 160 x 9.0494 + 43.33 = 1,491 µs, 28.5 x 52.38 µs
    assert caption.startswith("In 160 per-layer chunks the block pays more in latency than in bytes above 3.6 GB/s:")
    assert "faster links barely help a paged cache" in caption
    assert "At 121 GB/s it takes 1,491 µs, 28.5 times one contiguous transfer." in caption
    # the three brackets are named above the axes, one tick each
    top = [t.get_text() for child in fig.axes[0].child_axes for t in child.get_xticklabels()]
    assert sorted(top) == ["mid, 64 GB/s", "optimistic, 121 GB/s", "pessimistic, 32 GB/s"]
    plt.close(fig)
