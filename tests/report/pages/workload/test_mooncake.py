"""The workload page's Mooncake check: the published cache figures beside what the shipped traces give."""

from __future__ import annotations

import pytest

from kvtier.inputs.assumptions import seed
from kvtier.report.pages.workload import mooncake, summary
from kvtier.scenario import Scenario
from tests.conftest import HAND, write_trace

# (trace, figure): (published, recomputed).  Published: Mooncake FAST'25, Table 2 (p. 9) and Figure 9 (p. 11).
# Recomputed from the traces (checked by an OrderedDict LRU over the JSON lines): 12031 and 3993 requests; mean
# input 144,793,823 / 12031 = 12035.06 and 61,194,628 / 3993 = 15325.48 tokens; mean output 342.62 and 149.12;
# the cache ratio 37.36 % and 65.12 % of the input tokens; at 3,000,000 // 512 = 5,859 blocks LRU serves 13.82 %
# and 31.51 % of them, 13.82 / 37.36 = 36.98 % and 31.51 / 65.12 = 48.38 % of the cache ratio
EXPECTED = {
    ("conversation", "requests"): (12031, 12031),
    ("conversation", "mean input length"): (12035, 12035.06),
    ("conversation", "mean output length"): (343, 342.62),
    ("conversation", "cache ratio (unbounded cache, share of input tokens)"): (40, 37.36),
    ("conversation", "LRU hit ratio of a 3M-token cache, share of the cache ratio"): (41, 36.98),
    ("synthetic", "requests"): (3993, 3993),
    ("synthetic", "mean input length"): (15325, 15325.48),
    ("synthetic", "mean output length"): (149, 149.12),
    ("synthetic", "cache ratio (unbounded cache, share of input tokens)"): (66, 65.12),
    ("synthetic", "LRU hit ratio of a 3M-token cache, share of the cache ratio"): (46, 48.38),
}


def test_the_table_sets_each_published_figure_beside_the_trace_s():
    t = mooncake.mooncake_table(Scenario())
    assert list(zip(t["trace"], t["quantity"], strict=True)) == list(EXPECTED)  # the file's order
    for row in t.itertuples():
        published, recomputed = EXPECTED[(row.trace, row.quantity)]
        assert row.published == published and row.recomputed == pytest.approx(recomputed, abs=0.005)
        assert row.difference == row.recomputed - row.published  # recomputed less published, points for a %
        assert row.provenance == "published-spec"
    assert t["unit"].tolist() == ["requests", "tokens", "tokens", "%", "%"] * 2
    assert t["where"].tolist() == (["Table 2, p. 9"] * 4 + ["Figure 9, p. 11"]) * 2


def test_the_numbers_quote_the_table_and_the_paragraph_says_where_they_part():
    n = mooncake.mooncake_numbers(Scenario())
    assert n["mc_local_mtokens"] == 3.0 and n["mc_local_blocks"] == 5859 and n["mc_block_tokens"] == 512
    assert n["mc_conversation_cache_ratio_pct"] == pytest.approx(37.362, abs=5e-4)
    assert n["mc_conversation_cache_ratio_diff_pts"] == pytest.approx(37.362 - 40, abs=5e-4)
    assert n["mc_synthetic_share_of_max_diff_pts"] == pytest.approx(48.383 - 46, abs=5e-4)
    # by block references: 105,710 of 288,500 and 77,953 of 121,877
    assert n["mc_conversation_cache_ratio_blocks_pct"] == pytest.approx(36.641, abs=5e-4)
    assert n["mc_synthetic_cache_ratio_blocks_pct"] == pytest.approx(63.960, abs=5e-4)
    assert n["mc_conversation_hit_pct"] == pytest.approx(13.818, abs=5e-4)
    # the curve reaches 41 % of the conversation trace's cache ratio at 6,607 blocks (3.38 M tokens) and 46 % of
    # the synthetic trace's at 5,518 (2.83 M): on either side of 3 M
    assert n["mc_conversation_reach_mtokens"] == pytest.approx(3.382784)  # 6,607 x 512
    assert n["mc_synthetic_reach_mtokens"] == pytest.approx(2.825216)  # 5,518 x 512
    text = n["mc_paragraph"]
    assert "are the paper's, to its whole tokens: these are the traces it measured" in text
    assert "37.4 % of the conversation trace's input tokens against the paper's 40 % (2.6 points below)" in text
    assert "65.1 % of the synthetic trace's input tokens against the paper's 66 % (0.9 points below)" in text
    assert "48.4 % of its cache ratio, against the paper's 46 % (2.4 points above)" in text
    assert "so no one capacity gives both" in text and "under half of what an unbounded one would, on both" in text


def test_the_table_is_the_same_whichever_trace_the_set_sizes(tmp_path):
    # the sized trace's curve is the build's first pass, the other's the stored contrast curve: the same figures
    base = mooncake.mooncake_table(Scenario())
    other = mooncake.mooncake_table(Scenario(seed().with_values({"workload.trace": "synthetic"}, source="test")))
    assert other.equals(base)
    # a set that sizes a trace of its own still checks the shipped ones
    path = write_trace(tmp_path / "hand.jsonl", HAND)
    own = Scenario(seed().with_values({"workload.trace": str(path), "workload.block_tokens": "4"}, source="test"))
    assert mooncake.mooncake_table(own).equals(base)


def test_the_table_reads_no_trace_again(monkeypatch):
    # once the page has the two curves (the build's primed pass and the contrast), the check is arithmetic on them
    s = Scenario()
    for name in ("conversation", "synthetic"):
        summary.curve(s, name)

    def read_again(*args, **kwargs):
        raise AssertionError("the Mooncake check read a trace again")

    monkeypatch.setattr("kvtier.inputs.traces.stream.stream_lru", read_again)
    assert len(mooncake.mooncake_table(s)) == 10
