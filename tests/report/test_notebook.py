"""Notebook helpers: generated parameters cells, tables shown with the columns that matter, pages run alone."""

from __future__ import annotations

import re

import pytest

from kvtier.errors import KvtierError
from kvtier.inputs.assumptions import seed
from kvtier.inputs.keys import describe
from kvtier.pipeline.build import declared_parameters, page_parameters
from kvtier.pipeline.execution import read_page
from kvtier.report import notebook, pages
from kvtier.scenario import seed_scenario
from tests.conftest import NOTEBOOKS, ROOT, parameter_defaults


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_parameter_defaults_are_the_seed_set(path):
    params = parameter_defaults(path)
    assert sorted(params) == declared_parameters(read_page(path), path.name)
    base = seed()
    assert params.get("provenance") == {}
    if "set_name" in params:
        assert params["set_name"] == base.name
    keys = [notebook.PARAM_KEYS[name] for name in params if name not in ("provenance", "set_name")]
    assert keys, "a notebook must declare the assumptions it reads"
    for key in keys:
        default = params[notebook.param_name(key)]
        assert default == base[key].text, f"{path.name}: {key} defaults to {default!r}, seed has {base[key].text!r}"


# ---------------------------------------------------------------------------
# the default book: tables of record, HTML
# ---------------------------------------------------------------------------


def test_committed_tables_equal_a_fresh_seed_run_byte_for_byte(seed_build):
    committed = sorted(p.name for p in (ROOT / "book" / "tables").glob("*.csv"))
    fresh = sorted(p.name for p in (seed_build / "tables").glob("*.csv"))
    assert committed == fresh and committed
    for name in committed:
        assert (ROOT / "book" / "tables" / name).read_bytes() == (seed_build / "tables" / name).read_bytes(), name


def test_an_undeclared_assumption_read_is_an_error():
    namespace = {"model": "llama-3-70b", "provenance": {}}
    s = notebook.scenario_from_parameters(namespace, "example.ipynb")
    assert s.model.n_layers == 80
    with pytest.raises(KvtierError, match="example.ipynb reads assumption 'kv_dtype' but does not declare it"):
        _ = s.kv_bytes_per_token


@pytest.mark.parametrize("page", pages.PAGES, ids=lambda p: p.notebook)
def test_the_parameters_cell_is_the_generated_one_and_papermill_describes_each_parameter(page, tmp_path):
    import nbformat
    import papermill

    path = ROOT / "notebooks" / f"{page.notebook}.md"
    nb = read_page(path)
    (cell,) = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    set_name = "set_name" in declared_parameters(nb, path.name)
    # stale after a change to KEYS, a key's help or a seed value: `.venv/bin/python scripts/parameters.py` rewrites it
    assert cell.source == notebook.parameters_cell(page.keys, set_name=set_name)
    nbformat.write(nb, tmp_path / "page.ipynb")
    described = papermill.inspect_notebook(str(tmp_path / "page.ipynb"))
    for key in page.keys:
        param = described[notebook.param_name(key)]
        assert (param["inferred_type_name"], param["help"]) == ("str", describe(key)), key
    # e.g. the fetch page's mid bracket: what it is, and that it needs a unit
    if page.notebook == "02_fetch":
        assert described["bandwidth_mid"]["help"] == (
            "link bandwidth of the mid bracket, one direction; bandwidth with a unit, e.g. 64GB/s"
        )


def test_a_page_run_alone_with_papermill_refuses_what_the_build_refuses(tmp_path):
    import nbformat
    import papermill

    nbformat.write(read_page(ROOT / "notebooks" / "02_fetch.md"), tmp_path / "02_fetch.ipynb")
    for params, message in (
        ({"bandwidth_mid": 64e9}, "parameter 'bandwidth_mid': key 'bandwidth.mid' = 64000000000.0 needs a unit"),
        # 200 GB/s above the 121 GB/s optimistic bracket: the build's cross-key check
        ({"bandwidth_mid": "200 GB/s"}, "keys 'bandwidth.optimistic' (121 GB/s) and 'bandwidth.mid' (200 GB/s)"),
    ):
        with pytest.raises(papermill.PapermillExecutionError) as err:
            papermill.execute_notebook(
                str(tmp_path / "02_fetch.ipynb"),
                str(tmp_path / "out.ipynb"),
                parameters=params,
                cwd=str(ROOT / "notebooks"),
                progress_bar=False,
            )
        assert "KvtierError" in err.value.ename and message in err.value.evalue


def test_a_page_whose_parameters_cell_and_keys_disagree_is_refused(tmp_path):
    fetch = (ROOT / "notebooks" / "02_fetch.md").read_text()
    page = tmp_path / "02_fetch.md"
    # kvtier.report.pages.fetch.KEYS holds bandwidth.mid; the cell without it lacks one key
    lines = fetch.splitlines(keepends=True)
    page.write_text("".join(line for line in lines if not line.startswith("bandwidth_mid:")))
    with pytest.raises(KvtierError) as err:
        page_parameters(page)
    assert str(err.value) == (
        f"{page}: the parameters cell and kvtier.report.pages.fetch.KEYS disagree: the cell lacks 'bandwidth_mid'"
    )
    # two keys the module does not read: the first is named, the other counted
    page.write_text(
        fetch.replace(
            "# `kvtier build` injects", 'regen_model = ""\npeak_flops = "1 PFLOP/s"\n# `kvtier build` injects'
        )
    )
    with pytest.raises(KvtierError) as err:
        page_parameters(page)
    assert str(err.value) == (
        f"{page}: the parameters cell and kvtier.report.pages.fetch.KEYS disagree:"
        " kvtier.report.pages.fetch.KEYS lacks the key of 'peak_flops' and 1 more"
    )
    orphan = tmp_path / "99_orphan.md"
    orphan.write_text(fetch)
    with pytest.raises(KvtierError) as err:
        page_parameters(orphan)
    assert str(err.value) == f"{orphan}: no page module in kvtier/report/pages declares NOTEBOOK = '99_orphan'"


def test_a_page_run_alone_checks_only_the_cross_key_rules_whose_keys_it_declares():
    # the tiers page declares interior.position but not interior.context: a position past the seed's
    # 100,000-token sequence is the build's business, which checks the whole set
    s = notebook.scenario_from_parameters({"interior_position": "200000", "provenance": {}}, "08_tiers.md")
    assert s.v("interior.position") == 200_000
    both = {"interior_position": "200000", "interior_context": "100000", "provenance": {}}
    with pytest.raises(KvtierError) as err:
        notebook.scenario_from_parameters(both, "05_interior.md")
    assert str(err.value) == (
        "05_interior.md: key 'interior.position' must lie inside the sequence: smaller than 'interior.context'"
    )


def test_a_table_shows_its_chosen_columns_first_and_folds_the_rest_with_a_link_to_its_csv():
    s = seed_scenario()
    html = notebook.show_table(pages.tiers.table(s), "tiers").data
    shown, _, folded = html.partition("<details")
    # the tiers module names eleven columns; the title, the raw/net label and the provenance are folded
    assert (
        len(re.findall(r"<th[ >]", shown)) == 11
        and '<th title="link">link</th>' in shown
        and 'title="title"' not in shown
    )
    # a header is words with the unit; the CSV's name is its title; a number is right-aligned under it
    assert (
        '<th class="kvtier-num" title="break_even_latency_tail_us_per_layer">'
        "break-even latency, in a batch, per-layer trans\u00adfers (µs)</th>"
    ) in shown
    assert "More columns: title, raw or net bandwidth" in folded and '<th title="link">link</th>' in folded
    assert '<a href="../tables/tiers.csv" download>tiers.csv</a>' in folded
    # three significant figures: the mid bracket's 5,242,880 B / 64e9 B/s = 81.92 µs shows 81.9,
    # 17.92285 ms / 81.92 µs = 218.78 shows 219; the 3,350 GB/s HBM keeps its four integer digits
    assert '<td class="kvtier-num">81.9</td>' in shown and '<td class="kvtier-num">219</td>' in shown
    assert '<td class="kvtier-num">3,350</td>' in shown and "218.7" not in shown
    # a scrolling box has its cue (shown by the CSS only when kvtier.js finds that it overflows)
    assert shown.count('class="kvtier-scroll-cue"') == 1
    assert "_" not in "".join(re.findall(r"<th[^>]*>([^<]*)</th>", html))


def test_the_assumptions_table_gives_each_row_its_keys_anchor():
    # fetch.pageable_efficiency -> key-fetch-pageable-efficiency: the id the {input} role links
    assert notebook.key_anchor("fetch.pageable_efficiency") == "key-fetch-pageable-efficiency"
    assert notebook.key_anchor("tier_latency.nvlink_c2c") == "key-tier-latency-nvlink-c2c"
    df = pages.assumptions.table(seed_scenario())
    html = notebook.show_table(df, "assumptions").data
    shown = html.partition("<details")[0]
    assert shown.count("<tr id=") == len(df) and '<tr id="key-fetch-host-cache">' in shown
    # other tables' rows carry their key columns' anchor: the tier ladder's are keyed by link
    tiers = notebook.show_table(pages.tiers.table(seed_scenario()), "tiers").data.partition("<details")[0]
    assert '<tr id="row-tiers-pcie5-x16">' in tiers and tiers.count("<tr id=") == len(
        pages.tiers.table(seed_scenario())
    )


def test_rows_anchors_are_none_where_two_rows_would_share_one():
    import pandas as pd

    df = pd.DataFrame({"tier": ["a", "b"], "x": [1, 2]})
    assert notebook.row_anchors(df, "t", ("tier",)) == ["row-t-a", "row-t-b"]
    # "a.b" and "a-b" would share row-t-a-b: no ids rather than ambiguous ones; a missing key column gives none
    assert notebook.row_anchors(pd.DataFrame({"tier": ["a.b", "a-b"]}), "t", ("tier",)) is None
    assert notebook.row_anchors(df, "t", ("link",)) is None
    # a key column the page leaves out (it holds it fixed): the others name the rows
    assert notebook.row_anchors(df, "t", ("trace", "tier")) == ["row-t-a", "row-t-b"]


def test_the_input_role_names_an_input_in_words_and_links_its_key():
    import importlib.util
    from types import SimpleNamespace

    spec = importlib.util.spec_from_file_location("kvtier_html", ROOT / "book" / "_ext" / "kvtier_html.py")
    ext = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ext)
    errors: list[str] = []
    inliner = SimpleNamespace(
        document=SimpleNamespace(settings=SimpleNamespace(env=SimpleNamespace(docname="notebooks/11_measured"))),
        reporter=SimpleNamespace(error=lambda msg: errors.append(msg) or msg),
        problematic=lambda raw, text, msg: ("problematic", raw),
    )
    text = "the host cache <fetch.host_cache>"
    (node,), messages = ext.input_role("input", f"{{input}}`{text}`", text, 1, inliner)
    assert messages == [] and node.astext() == "the host cache"
    assert node["refuri"] == "00_assumptions.html#key-fetch-host-cache"
    assert node["reftitle"] == "assumption key fetch.host_cache"
    # from a page in book/, the same row one folder over
    inliner.document.settings.env.docname = "book/intro"
    (node,), _ = ext.input_role("input", "", text, 1, inliner)
    assert node["refuri"] == "../notebooks/00_assumptions.html#key-fetch-host-cache"
    # a key that does not exist, or no words, is an error that fails the build (warnings are errors)
    for bad in ("the host cache <fetch.host_cash>", "<fetch.host_cache>"):
        nodes_, messages = ext.input_role("input", bad, bad, 1, inliner)
        assert nodes_ == [("problematic", bad)] and len(messages) == 1
    assert "a key of the assumption set" in errors[-1]


def test_a_table_without_chosen_columns_folds_long_text_and_si_duplicates():
    html = notebook.show_table(pages.assumptions.table(seed_scenario()), "assumptions").data
    shown, _, folded = html.partition("<details")
    assert 'title="basis"' not in shown and 'title="value_si"' not in shown
    assert "More columns: value in SI units, SI unit, basis, source" in folded


def test_a_long_note_column_is_folded_even_when_the_page_names_it():
    # the models page names "note" among its shown columns; a note 54 to 168 characters long
    # would make every row many lines tall on a phone, so it goes to the details block
    html = notebook.show_table(pages.models.table(seed_scenario()), "models").data
    shown, _, folded = html.partition("<details")
    assert 'title="note"' not in shown and 'title="note"' in folded


def test_booleans_show_the_words_their_column_means():
    html = notebook.show_table(pages.ratio.table(seed_scenario()), "ratio").data
    shown, _, _ = html.partition("<details")
    cells = re.findall(r"<td>([^<]*)</td>", shown)
    # within_claim and lone_within_claim are booleans: yes/no, never True/False; text is left-aligned
    assert "yes" in cells and "True" not in shown and "False" not in shown


def test_show_table_refuses_a_name_that_is_no_table_of_record():
    with pytest.raises(KvtierError, match="show_table: no table of record named 'tier'"):
        notebook.show_table(pages.tiers.table(seed_scenario()), "tier")


def test_a_folded_table_sits_whole_in_a_details_block_that_counts_its_rows():
    # the models page's table has one row per preset (10 shipped presets): folded, the values and
    # their "More columns" block both sit inside one outer details block whose summary counts the
    # 10 rows; the CSV link stays outside it, open to every reader
    html = notebook.show_table(pages.models.table(seed_scenario()), "models", folded="Every model").data
    assert html.startswith('<details class="kvtier-details"><summary>Every model (10 rows)</summary>')
    folded, _, after = html.rpartition("</details>")
    assert "kvtier-table-box" in folded and 'class="kvtier-csv"' in after
    assert notebook.show_table(pages.models.table(seed_scenario()), "models").data.startswith(
        '<div class="kvtier-table-wrap" id="table-models">'
    )
