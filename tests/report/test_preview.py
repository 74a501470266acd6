"""The preview: a page read in Jupyter without a build shows its numbers and names the others."""

from __future__ import annotations


def test_the_preview_fills_numbers_and_names_other_pages_numbers():
    from kvtier.report.preview import fill_text, page_parts

    glued = {"fetch_us": 81.92, "model": "llama-3-70b"}
    assert (
        fill_text("takes {glue:text}`fetch_us:.1f` µs on {glue:text}`model:s`", glued) == "takes 81.9 µs on llama-3-70b"
    )
    assert fill_text("{glue:text}`../notebooks/04_ratio.ipynb::verdict:s`", glued) == "[verdict from 04_ratio]"
    assert fill_text("{glue:text}`missing`", glued) == "{glue:text}`missing`"
    page = "---\nkernelspec: {}\n---\n\nA {glue:text}`fetch_us:.0f`.\n\n```{code-cell}\nx = 1\n```\n\n+++\n\n"
    page += "```{glue:figure} fig_a\n:name: fig-a\n\n{glue:text}`model`\n```\nEnd.\n"
    parts = list(page_parts(page, {**glued, "fig_a": "FIG"}))
    assert [kind for kind, _ in parts] == ["markdown", "figure", "markdown", "markdown"]
    assert parts[0][1].strip() == "A 82." and parts[1][1] == "FIG" and parts[2][1] == "*llama-3-70b*"


def test_a_number_as_the_tables_show_it_is_filled_from_the_number():
    from kvtier.report.preview import fill_text

    # 218.784816 at three significant figures is 219; 1,205.6 keeps its integer digits (1,206); a count has no such text
    glued = {"ratio": 218.784816, "lone": 1205.6, "n": 3}
    text = "{glue:text}`ratio__shown` and {glue:text}`lone__shown`; {glue:text}`n__shown`"
    assert fill_text(text, glued) == "219 and 1,206; {glue:text}`n__shown`"
