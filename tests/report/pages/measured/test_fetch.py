"""The measured page's copies: the caption says how the fit misses the small copies."""

from __future__ import annotations

from kvtier.report.pages.measured import fetch
from kvtier.scenario import Scenario


def test_the_fetch_caption_says_how_the_fit_misses_the_small_copies():
    import matplotlib.pyplot as plt

    fig, caption = fetch.fetch_figure(Scenario())
    # the fit (9.05 µs + bytes / 55.14 GB/s) is below every copy under 1 MiB: the 16 KiB copy's 25 µs against its
    # 9.3 µs is 63 % short, the widest miss; pageable copies of 1 MiB and up take 3.5 to 6.3 times the pinned ones
    assert "floor it undershoots by up to 63 %" in caption
    assert "pageable copies take 3.5 to 6.3 times as long." in caption
    plt.close(fig)
