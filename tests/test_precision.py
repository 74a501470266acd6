"""One quantity, one precision: a number the prose quotes on several pages reads the same everywhere.

Every ``{glue:text}`` reference of every page (and the book's Markdown pages' references across
pages, ``../notebooks/PAGE.ipynb::NAME:SPEC``) is rendered with its format spec from the seed
build's numbers; the references that show one value must render it one way.  Once the illustrative
block's regeneration read 17.92 ms on the ratio page and 17.9 ms on the roofline and cost pages, and
the landing page rounded the ratio the others give as 218.78 to 219.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from functools import cache
from typing import Any

from kvtier.report import pages
from kvtier.report.notebook import SHOWN
from kvtier.scenario import Scenario
from kvtier.units import format_number
from tests.conftest import ROOT

REF = re.compile(r"\{glue:text\}`(?:\.\./notebooks/(?P<page>[0-9a-z_]+)\.ipynb::)?(?P<name>\w+)(?::(?P<spec>[^`]*))?`")
"""A glued number in a page's Markdown, from its own page or (in book/) from a notebook page."""

COINCIDENCES = (
    frozenset({"query_heads_per_kv_head", "tornado_top_j_swing"}),  # 8 query heads a KV head; an 8.0 J swing
    frozenset({"kv_short_gib", "accuracy_pct"}),  # 10.0 GiB of KV at 32K; a 10 % accuracy band
    frozenset({"seed_mfu_typical_pct", "mfu_typical_pct", "kv_long_gib"}),  # 40 % MFU; 40.0 GiB of KV at 128K
)
"""Different quantities that happen to share a value under the seed set: each keeps its own precision."""


def renderings(texts: Mapping[str, str], numbers: Mapping[str, Mapping[str, Any]]) -> dict[float, dict[str, set]]:
    """Each non-integer-free value the prose shows, by value: its renderings, and the names that show it.

    ``texts`` maps a page's notebook stem (or a Markdown page's path) to its text; ``numbers`` a
    notebook stem to its glued numbers.  Counts, booleans, zeros and infinities are left out.
    """
    out: dict[float, dict[str, set]] = {}
    for where, text in texts.items():
        for m in REF.finditer(text):
            page = m["page"] or where
            name, as_table = m["name"].removesuffix(SHOWN), m["name"].endswith(SHOWN)
            value = numbers.get(page, {}).get(name)
            if isinstance(value, bool) or not isinstance(value, float) or value == 0 or not math.isfinite(value):
                continue
            seen = out.setdefault(float(f"{value:.10g}"), {"shown": set(), "names": set()})
            seen["shown"].add(format_number(value, 3) if as_table else format(value, m["spec"] or ""))
            seen["names"].add(name)
    return out


@cache
def _seed_numbers() -> dict[str, dict[str, Any]]:
    s = Scenario()
    return {page.notebook: page.numbers(s) for page in pages.PAGES}


def test_a_number_quoted_on_several_pages_reads_the_same_on_each():
    texts = {p.stem: p.read_text() for p in sorted((ROOT / "notebooks").glob("*.md"))}
    texts |= {str(p.relative_to(ROOT)): p.read_text() for p in sorted((ROOT / "book").rglob("*.md"))}
    found = renderings(texts, _seed_numbers())
    clashes = {
        value: seen
        for value, seen in found.items()
        if len(seen["shown"]) > 1 and frozenset(seen["names"]) not in COINCIDENCES
    }
    assert not clashes, "\n".join(f"{v}: {sorted(s['shown'])} as {sorted(s['names'])}" for v, s in clashes.items())
    # the illustrative block's in-batch regeneration, 17.92285 ms, reads 17.9 on each page quoting it, as the tables
    # show it (three glue names on the chapter's pages; the trace pages quote the named deployment's own times);
    # the ratio 218.784816 reads 219
    numbers = _seed_numbers()["04_ratio"]
    tail = found[float(f"{numbers['illustrative_regen_ms']:.10g}")]
    assert tail["shown"] == {"17.9"}
    assert tail["names"] == {"compute_conservative_ms", "illustrative_regen_ms", "tail_regen_ms"}
    assert found[float(f"{numbers['ratio_illustrative']:.10g}")]["shown"] == {"219"}


def test_the_scan_catches_one_value_at_two_precisions():
    numbers = {"a": {"regen_ms": 17.92285, "count": 3, "heads": 8.0}, "b": {"swing": 8.0}}
    texts = {
        "a": "{glue:text}`regen_ms:.2f` ms and {glue:text}`count` and {glue:text}`heads:.0f`",
        "b": "{glue:text}`../notebooks/a.ipynb::regen_ms:.1f` ms; {glue:text}`swing:.1f` J",
        "c": "{glue:text}`../notebooks/a.ipynb::regen_ms__shown` ms",
    }
    found = renderings(texts, numbers)
    # one quantity at three precisions: 17.92 (.2f), 17.9 (.1f) and 17.9 as the tables show it (three figures)
    assert found[17.92285] == {"shown": {"17.92", "17.9"}, "names": {"regen_ms"}}
    assert found[8.0] == {"shown": {"8", "8.0"}, "names": {"heads", "swing"}}  # two quantities, one value
    assert 3 not in found  # a count is exact wherever it is shown
