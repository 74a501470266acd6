"""Reading the book: tables shown with the columns that matter, the CSV linked, the source named."""

from __future__ import annotations

import pytest
import yaml

from kvtier.errors import KvtierError
from kvtier.pipeline.build import configure_source, source_info
from kvtier.report import notebook, pages
from kvtier.scenario import seed_scenario
from tests.conftest import ROOT


def test_a_table_shows_its_chosen_columns_first_and_folds_the_rest_with_a_link_to_its_csv():
    s = seed_scenario()
    html = notebook.show_table(pages.tiers.table(s), "tiers").data
    shown, _, folded = html.partition("<details")
    # the tiers module names ten columns; the title, the raw/net label and the provenance are folded
    assert shown.count("<th>") == 10 and "<th>link</th>" in shown and "<th>title</th>" not in shown
    assert "<th>break_<wbr>even_<wbr>tail_<wbr>GBps</th>" in shown  # a long header may break at an underscore
    assert "More columns: title, raw_or_net" in folded and "<th>link</th>" in folded  # keyed by the key column
    assert '<a href="../tables/tiers.csv" download>tiers.csv</a>' in folded
    # the mid bracket's 5,242,880 B / 64e9 B/s = 81.92 µs and 17.92 ms / 81.92 µs = 218.75 read as the prose does
    assert "<td>81.92</td>" in shown and "<td>218.78</td>" in shown


def test_a_table_without_chosen_columns_folds_long_text_and_si_duplicates():
    html = notebook.show_table(pages.assumptions.table(seed_scenario()), "assumptions").data
    shown, _, folded = html.partition("<details")
    assert "<th>basis</th>" not in shown and "<th>value_<wbr>si</th>" not in shown
    assert "More columns: value_si, unit_si, basis, source" in folded


def test_show_table_refuses_a_name_that_is_no_table_of_record():
    with pytest.raises(KvtierError, match="show_table: no table of record named 'tier'"):
        notebook.show_table(pages.tiers.table(seed_scenario()), "tier")


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, {}),
        # GitHub Actions names the repository and the commit
        (
            {"GITHUB_SERVER_URL": "https://github.com", "GITHUB_REPOSITORY": "owner/kvtier", "GITHUB_SHA": "a" * 40},
            {"url": "https://github.com/owner/kvtier", "commit": "a" * 40},
        ),
        # any other CI says it with KVTIER_*, which win
        (
            {"KVTIER_REPOSITORY_URL": "https://git.example.org/team/kvtier/", "GITHUB_REPOSITORY": "x/y"},
            {"url": "https://git.example.org/team/kvtier"},
        ),
        # nothing guessed: a non-https address or a commit that is no hash is dropped
        ({"KVTIER_REPOSITORY_URL": "file:///home/me/kvtier", "KVTIER_COMMIT": "abc1234"}, {}),
        (
            {"KVTIER_REPOSITORY_URL": "https://github.com/o/r", "KVTIER_COMMIT": "main"},
            {"url": "https://github.com/o/r"},
        ),
    ],
    ids=["local", "github-actions", "kvtier-vars", "not-https", "commit-not-a-hash"],
)
def test_the_source_of_the_book_comes_from_the_build_environment(env, expected):
    assert source_info(env) == expected


def test_a_named_source_reaches_the_button_the_footer_and_the_reproduce_page(tmp_path):
    config = tmp_path / "_config.yml"
    config.write_text((ROOT / "_config.yml").read_text())
    configure_source(config, {})
    assert config.read_text() == (ROOT / "_config.yml").read_text()  # built locally: left as it is
    local = yaml.safe_load(config.read_text())["parse"]["myst_substitutions"]["source"]
    assert "built locally" in local and "names no repository" in local
    configure_source(config, {"url": "https://github.com/owner/kvtier", "commit": "0123456789abcdef" * 2 + "01234567"})
    data = yaml.safe_load(config.read_text())
    assert data["repository"]["url"] == "https://github.com/owner/kvtier"
    assert data["html"]["use_repository_button"] is True
    assert (
        'Built from <a href="https://github.com/owner/kvtier">owner/kvtier</a> at commit'
        in data["html"]["extra_footer"]
    )
    assert "<code>0123456</code>" in data["html"]["extra_footer"]
    assert data["parse"]["myst_substitutions"]["source"].startswith(
        "This book was built from [owner/kvtier](https://github.com/owner/kvtier) at commit [`0123456`]"
    )
    assert "substitution" in data["parse"]["myst_enable_extensions"]
    assert "{{ source }}" in (ROOT / "book" / "reproduce.md").read_text()
