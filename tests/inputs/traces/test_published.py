"""The traces' published figures (:mod:`kvtier.inputs.traces.published`): read, validated, each with its source."""

from __future__ import annotations

import pytest

from kvtier.data import SHIPPED_TRACES
from kvtier.errors import KvtierError
from kvtier.inputs import traces
from kvtier.inputs.traces.published import QUANTITIES, published_cache, read_published

VALUE = """\
    where: Table 2, p. 9
    source: Qin et al., Mooncake, USENIX FAST'25
    date: 2026-12-06
    provenance: published-spec
    reading: printed in the table
"""

FILE = f"""\
local_cache:
  value: 3000000
{VALUE.replace("    ", "  ")}figures:
  - trace: conversation
    quantity: cache_ratio_pct
    value: 40
{VALUE}"""


def test_the_shipped_file_holds_table_2_and_figure_9_for_each_shipped_trace():
    pub = published_cache()
    assert traces.published_cache() is pub  # re-exported, read once
    assert pub.traces == tuple(SHIPPED_TRACES) == ("conversation", "synthetic")
    # five values a trace, in QUANTITIES' order: Table 2's requests, mean lengths and cache ratio, Figure 9's share
    assert [f.quantity for f in pub.figures] == [*QUANTITIES] * 2
    printed = {(f.trace, f.quantity): f.value for f in pub.figures}
    assert printed == {
        ("conversation", "requests"): 12031,
        ("conversation", "mean_input_tokens"): 12035,
        ("conversation", "mean_output_tokens"): 343,
        ("conversation", "cache_ratio_pct"): 40,
        ("conversation", "share_of_max_pct"): 41,
        ("synthetic", "requests"): 3993,
        ("synthetic", "mean_input_tokens"): 15325,
        ("synthetic", "mean_output_tokens"): 149,
        ("synthetic", "cache_ratio_pct"): 66,
        ("synthetic", "share_of_max_pct"): 46,
    }
    assert pub.local_cache.value == 3e6 and pub.local_cache.unit == "tokens"
    for f in (pub.local_cache, *pub.figures):
        assert f.provenance == "published-spec" and f.date == "2026-12-06"
        assert "FAST25-release/Mooncake-FAST25.pdf" in f.source and f.reading
    assert {f.where for f in pub.figures} == {"Table 2, p. 9", "Figure 9, p. 11"}
    assert pub.value("synthetic", "cache_ratio_pct").unit == "%"
    assert pub.value("conversation", "mean_input_tokens").unit == "tokens"
    with pytest.raises(KeyError, match="no published requests for the toolagent trace"):
        pub.value("toolagent", "requests")


def test_a_file_of_one_value_reads(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text(FILE)
    pub = read_published(path)
    assert pub.local_cache.value == 3e6 and pub.figures[0].value == 40.0
    assert pub.figures[0].date == "2026-12-06"  # YAML's date, kept as the text it was


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("value: 40", "value: 0"), "figure 1: field 'value' must be a number above 0"),
        (("value: 40", "value: yes"), "figure 1: field 'value' must be a number above 0"),
        (("trace: conversation", "trace: toolagent"), "figure 1: field 'trace' must be a shipped trace"),
        (("quantity: cache_ratio_pct", "quantity: hit_pct"), "figure 1: field 'quantity' must be one of"),
        (("provenance: published-spec\n    reading", "provenance: measured\n    reading"), "must be published-spec"),
        (("    reading: printed in the table\n", "    reading: ''\n"), "figure 1: field 'reading' is required"),
        (("    reading: printed in the table\n", "    reading: x\n    page: 9\n"), "unknown field 'page'"),
        (("local_cache:\n  value: 3000000", "local_cache:\n  value: -3"), "local_cache: field 'value' must be"),
    ],
)
def test_a_bad_file_gets_one_line_naming_the_entry(tmp_path, change, message):
    path = tmp_path / "p.yaml"
    path.write_text(FILE.replace(*change, 1))
    with pytest.raises(KvtierError, match=message):
        read_published(path)


def test_a_value_twice_no_values_and_other_entries_are_refused(tmp_path):
    path = tmp_path / "p.yaml"
    row = FILE.split("figures:\n")[1]
    path.write_text(FILE + row)
    with pytest.raises(KvtierError, match="the conversation trace's cache_ratio_pct appears twice"):
        read_published(path)
    path.write_text(FILE.split("figures:")[0] + "figures: []\n")
    with pytest.raises(KvtierError, match="'figures' must be a non-empty list"):
        read_published(path)
    path.write_text(FILE.split("figures:")[0] + "x: 1\n")
    with pytest.raises(KvtierError, match="must hold exactly 'local_cache' and 'figures'"):
        read_published(path)
