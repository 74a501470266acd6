"""What the measured set changes on the other pages: counted from the registry, said in the intro."""

from __future__ import annotations

import pytest

from kvtier.report.pages import measured as page
from kvtier.report.pages.measured import changes
from kvtier.scenario import Scenario
from tests.conftest import ROOT


@pytest.fixture(scope="module")
def numbers() -> dict:
    return page.numbers(Scenario())


def test_the_intro_says_which_pages_the_measured_set_changes_most():
    from kvtier.report.pages import measured

    change = changes.changes_under_measured_set()
    # both sets' illustrative in-batch ratio: the seed's 17.92285 ms / 81.92 us = 218.784816; the H200 set's is far
    # lower
    assert change["seed_ratio"] == pytest.approx(218.784816, rel=1e-12)
    assert change["h200_ratio"] < 50 and change["h200_lone_ratio"] < change["seed_lone_ratio"]
    counts = dict(change["ranked"])
    assert counts["09_models"] >= 0 and counts["07_roofline"] > 0
    assert [c for _, c in change["ranked"]] == sorted(counts.values(), reverse=True)
    sentence = measured.numbers(Scenario())["measured_set_sentence"]
    # it says which pages it compared (six: 04 to 09), not "the pages that change most" of the whole book
    assert sentence.startswith(
        "Rebuilt with it instead of the seed set, of the 6 analytical pages compared cell by cell (those that read no"
        " trace and draw no random numbers) the ones that change most are "
    )
    assert "the decision on the landing page changes as its measured-set row shows" in sentence
    # the pages and their titles come from the registry (each page's TITLE), not from imports of them
    from kvtier.report.pages import PAGES

    assert change["titles"] == {p.notebook: p.title for p in PAGES if p.notebook in changes.COMPARED}
    assert [stem for stem, _ in change["ranked"]] == sorted(changes.COMPARED, key=lambda stem: -counts[stem])
    top = [change["titles"][stem] for stem, count in change["ranked"] if count][:4]
    assert f"draw no random numbers) the ones that change most are {top[0]}, " in sentence
    assert f"{top[-2]} and {top[-1]} (" in sentence
    assert "from 219 to " in sentence  # 218.784816 as the tables show it, three figures
    assert (
        "{glue:text}`../notebooks/11_measured.ipynb::measured_set_sentence:s`"
        in (ROOT / "book" / "intro.md").read_text()
    )
