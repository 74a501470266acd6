"""The book: notebooks, `kvtier build`, tables of record, HTML, incremental and atomic builds.

The expensive builds run once per session (fixtures below) into temporary directories;
the default book under _build/ and book/tables/ is never touched by these tests.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from kvtier.inputs.assumptions import load_assumptions
from kvtier.inputs.keys import SCHEMA
from kvtier.pipeline.build import configure_source, source_info
from kvtier.pipeline.execution import read_page
from kvtier.report import notebook, pages
from kvtier.scenario import Scenario
from tests.conftest import NOTEBOOKS, NUMBERS, ROOT, build, copy_project, glued_values, snapshot

FIGURES = {figure.name: figure.notebook for figure in pages.FIGURES}
MARKDOWN_PAGES = sorted((ROOT / "book").rglob("*.md"))
"""The book's markdown pages: intro, findings, reproduce and the user guides of ``book/using/``."""
"""Every figure of the book and the page that holds it."""


NON_DEFAULT = {
    "model": "llama-3-8b",  # replaced by a user's config.json with the same content (see custom_sets)
    "block_tokens": "32",
    "bandwidth.mid": "100GB/s",
    "mfu.conservative": "30%",
    "peak_flops": "989TFLOP/s",
    "context.short": "65536",
    "interior.position": "20000",
}


@pytest.fixture(scope="session")
def custom_sets(tmp_path_factory) -> dict[str, str]:
    """NON_DEFAULT with the model given as a user's config.json (a copy of the Llama-3 8B config)."""
    config = tmp_path_factory.mktemp("user-model") / "config.json"
    data = json.loads((ROOT / "kvtier" / "data" / "models" / "llama-3-8b.json").read_text())
    data.pop("_source", None)
    config.write_text(json.dumps(data))
    return {**NON_DEFAULT, "model": str(config)}


@pytest.fixture(scope="session")
def custom_build(tmp_path_factory, custom_sets) -> Path:
    out = tmp_path_factory.mktemp("builds") / "custom"
    sets = [arg for key, value in custom_sets.items() for arg in ("--set", f"{key}={value}")]
    proc = build(out, *sets, "--jobs", "2")
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.fixture(scope="session")
def bandwidth_build(seed_build, tmp_path_factory) -> tuple[Path, str]:
    """The seed build copied, then rebuilt incrementally with one assumption changed."""
    out = tmp_path_factory.mktemp("builds") / "fast-link"
    shutil.copytree(seed_build, out)
    proc = build(out, "--set", "bandwidth.mid=100GB/s")
    assert proc.returncode == 0, proc.stderr
    return out, proc.stderr


def read_csv_rows(path: Path, key: str) -> dict[str, dict[str, str]]:
    with path.open(newline="") as f:
        return {row[key]: row for row in csv.DictReader(f)}


def page_text(html: Path) -> str:
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html.read_text(), "html.parser")
    return re.sub(r"\s+", " ", (soup.find("main") or soup).get_text(" "))


# ---------------------------------------------------------------------------
# a real browser
# ---------------------------------------------------------------------------

CHROMIUM = Path("/usr/bin/chromium")


KNOWN_THEME_ERROR = "Got invalid theme mode"
"""pydata-sphinx-theme logs this once on a fresh browser profile; the theme still renders."""


READING_CHECKS = """() => {
  const out = {figures: [], boxes: [], wide: [], alts: []};
  for (const img of document.querySelectorAll("main img")) {
    out.alts.push([img.getAttribute("src"), img.getAttribute("alt") || ""]);
    if (img.src.endsWith(".svg")) {
      const shown = img.getBoundingClientRect();
      const caption = img.closest("figure") && img.closest("figure").querySelector("figcaption");
      out.figures.push([img.src, img.naturalWidth, img.naturalHeight, shown.width, !!img.closest("a"),
                        shown.height, caption ? caption.getBoundingClientRect().height : 0]);
    }
  }
  // the page itself never scrolls sideways: only a table box or a code block may
  out.page = [document.documentElement.scrollWidth, document.documentElement.clientWidth];
  for (const box of document.querySelectorAll("main .kvtier-table-box")) {
    const style = getComputedStyle(box);
    // a table in a details block or a hidden cell output is opened on purpose; it may scroll
    const folded = box.closest("details, .tag_hide-output") !== null;
    out.boxes.push([box.scrollWidth, box.clientWidth, style.overflowX, folded]);
  }
  const article = document.querySelector("main article") || document.querySelector("main");
  const right = article.getBoundingClientRect().right;
  for (const el of article.querySelectorAll("p, li, table, figure, img, pre, h1, h2, h3")) {
    if (el.closest(".kvtier-table-box") || el.closest("pre") || el.closest(".highlight")) continue;
    const r = el.getBoundingClientRect();
    if (r.width > 0 && r.right > right + 1) out.wide.push(el.tagName + ": " + (el.textContent || "").slice(0, 60));
  }
  return out;
}"""
"""What a reader would see: each figure's natural and shown size, whether it opens at full size and its
caption's height, each table box's scroll and visible width and its overflow style, anything wider than
the article, the page's own scroll and client width, and every image's alt text."""


SVG_PX_PER_PT = 4 / 3
"""An SVG figure's point is 4/3 CSS px at its natural size."""


def svg_font_sizes_pt(svg: Path) -> list[float]:
    """The size (pt) of every text drawn on a figure, read from its SVG.

    The house style writes text as paths (``svg.fonttype: path``), so no font-size attribute is
    left; matplotlib draws each line of a text as glyph paths in a ``<g>`` inside the text's
    ``<g id="text_N">``, scaled by ``scale(s -s)`` with ``s`` = font size (pt) / 100
    (``TextToPath.FONT_SCALE``).  Reading the size from the SVG itself measures exactly what the
    browser draws, with nothing beside the figure that could drift from it.
    """
    import xml.etree.ElementTree as ET

    ns = "{http://www.w3.org/2000/svg}"
    sizes = []
    for text in ET.parse(svg).getroot().iter(f"{ns}g"):
        if not text.get("id", "").startswith("text_"):
            continue
        scales = [
            float(m.group(1))
            for line in text.iter(f"{ns}g")
            if (m := re.search(r"scale\(([\d.]+) -\1\)", line.get("transform", "")))
        ]
        assert scales, f"{svg.name}: {text.get('id')} has no scaled glyph group: matplotlib's SVG changed"
        sizes.append(100 * min(scales))
    return sizes


def test_pages_are_text_notebooks_without_outputs_or_volatile_metadata():
    # a page is reviewed as a plain line diff: MyST Markdown only, no .ipynb, no version stamps
    assert sorted(p.name for p in (ROOT / "notebooks").iterdir() if p.is_file()) == [p.name for p in NOTEBOOKS]
    tracked = subprocess.run(["git", "ls-files", "*.ipynb"], capture_output=True, text=True, cwd=ROOT).stdout
    assert tracked == ""
    for path in NOTEBOOKS:
        header = path.read_text().split("---\n")[1]
        assert yaml.safe_load(header) == {
            "jupytext": {"text_representation": {"extension": ".md", "format_name": "myst", "format_version": 0.13}},
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        }, path.name


def test_the_commit_guard_refuses_notebook_json():
    hooks = {
        h["id"]: h
        for repo in yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())["repos"]
        for h in repo["hooks"]
    }
    guard = hooks["no-ipynb-pages"]
    assert guard["language"] == "fail"  # pre-commit's "always refuse the matched files"
    assert re.search(guard["files"], "notebooks/02_fetch.ipynb") and not re.search(
        guard["files"], "notebooks/02_fetch.md"
    )


# ---------------------------------------------------------------------------
# executed notebooks: glued numbers are the engine's numbers
# ---------------------------------------------------------------------------


def test_glued_numbers_equal_the_engine_under_non_default_parameters(custom_build, custom_sets):
    scenario = Scenario(load_assumptions(sets=custom_sets))
    for name, numbers in NUMBERS.items():
        glued = glued_values(custom_build / "notebooks" / f"{name}.ipynb")
        expected = {k: notebook.plain(v) for k, v in numbers(scenario).items()}
        assert set(expected) <= set(glued), f"{name}: not glued: {sorted(set(expected) - set(glued))}"
        for key, value in expected.items():
            assert glued[key] == pytest.approx(value, rel=1e-12) if isinstance(value, float) else glued[key] == value


def test_glued_numbers_by_hand_for_the_non_default_build(custom_build):
    fetch = glued_values(custom_build / "notebooks" / "02_fetch.ipynb")
    # Llama-3 8B: 2 x 32 layers x 8 KV heads x 128 x 2 B = 131,072 B/token; x 32 tokens = 4,194,304 B
    # over 100e9 B/s = 41.94304 us
    assert fetch["fetch_mid_us"] == pytest.approx(41.94304, rel=1e-12)
    regen = glued_values(custom_build / "notebooks" / "03_regenerate.ipynb")
    # the model changed without param_count, so the config's exact 8,030,261,248 parameters are used:
    # 2 x 8,030,261,248 x 32 = 5.1393672e11 FLOP, plus the block's attention over itself: 4 x 32 layers x 4,096
    # = 524,288 FLOP a token pair x 528 pairs (32 x 33 / 2) = 276,824,064 FLOP; / (989e12 x 0.30) = 1.73311 ms
    assert regen["params_source"] == "config"
    flops = 2 * 8_030_261_248 * 32 + 276_824_064
    assert regen["regen_conservative_ms"] == pytest.approx(flops / (989e12 * 0.30) * 1e3, rel=1e-12)
    capacity = glued_values(custom_build / "notebooks" / "06_capacity.ipynb")
    # 65,536 tokens x 131,072 B = 8 GiB exactly
    assert capacity["kv_short_gib"] == pytest.approx(8.0, rel=1e-12)
    interior = glued_values(custom_build / "notebooks" / "05_interior.ipynb")
    assert interior["position_tokens"] == 20_000


def test_a_users_config_json_flows_through_the_build(custom_build, custom_sets):
    # the user's model is named by its path on every page and gets its own row in the models table
    assert glued_values(custom_build / "notebooks" / "01_block_unit.ipynb")["model_name"] == "user-model0"
    rows = read_csv_rows(custom_build / "tables" / "models.csv", "model")
    mine = rows[custom_sets["model"]]
    # its numbers are those of the preset it copies: 128 KiB per token, crossover 122,532 tokens
    assert mine["kv_KiB_per_token"] == rows["llama-3-8b"]["kv_KiB_per_token"] == "128"
    assert mine["crossover_tokens"] == rows["llama-3-8b"]["crossover_tokens"]


def test_book_holds_every_page_figure_and_the_seed_numbers(seed_build):
    html = seed_build / "html"
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    pages = [toc["root"]] + [ch["file"] for part in toc["parts"] for ch in part["chapters"]]
    for page in pages:
        assert (html / f"{page}.html").is_file(), page
    assert sorted(p.name for p in (seed_build / "figures").glob("*.svg")) == sorted(f"{name}.svg" for name in FIGURES)
    text = {page: page_text(html / f"{page}.html") for page in pages}
    # 2 x 80 x 8 x 128 x 2 B = 327,680 B = 320 KiB; x 16 = 5,242,880 B = 5.00 MiB
    assert "327,680 bytes" in text["notebooks/01_block_unit"] and "5.00 MiB" in text["notebooks/01_block_unit"]
    # 5,242,880 B / 64e9 B/s = 81.92 us; / 121e9 = 43.33 us; / 32e9 = 163.84 us
    assert all(x in text["notebooks/02_fetch"] for x in ("81.92", "43.33", "163.84 µs"))
    # (2 x 70e9 x 16 + 356,515,840 FLOP of the block's attention over itself) / (500e12 x 0.25) = 17.92285 ms
    # 17.92285 ms / 81.92 us = 218.784816, quoted as the tables show both: 17.9 ms and 219
    assert "17.9 ms over 81.92 µs is 219" in text["notebooks/04_ratio"]
    # 140e9 B / 327,680 B per token = 427,246 tokens
    assert "427,246 tokens" in text["notebooks/06_capacity"]
    # 32,768 x 327,680 B = 10.0 GiB; 131,072 tokens -> 40.0 GiB
    assert "10.0 GiB" in text["notebooks/06_capacity"] and "40.0 GiB" in text["notebooks/06_capacity"]
    # intro quotes the illustrative ratio across pages, in both regimes, as the tables show it: 218.78 -> "219";
    # a lone block reads 140e9 B of weights at 3.35e12 B/s x 80 % = 52.24 ms, / 81.92 us = 637.68 -> "638"
    assert "inside a batch takes 219 times as long" in text["book/intro"]
    assert "alone 638 times as long" in text["book/intro"]
    # every figure's caption links every input with its provenance (the assumptions page); the landing page
    # shows the decision figure a second time
    from bs4 import BeautifulSoup

    captions = []
    for page in pages:
        soup = BeautifulSoup((html / f"{page}.html").read_text(), "html.parser")
        captions += [re.sub(r"\s+", " ", c.get_text(" ")) for c in soup.select("figure figcaption")]
    assert len(captions) == len(FIGURES) + 1
    assert all("Every input, with its provenance: the assumptions page" in c for c in captions), captions
    # the measured-elsewhere DGX Spark figure appears once, in its note on the assumptions page
    hits = [page for page, t in text.items() if "236.5" in t]
    assert hits == ["notebooks/00_assumptions"]
    assert "Measured elsewhere, not used here" in text["notebooks/00_assumptions"]


def test_a_changed_assumption_changes_only_what_depends_on_it(seed_build, bandwidth_build):
    out, log = bandwidth_build
    # only the notebooks that declare bandwidth.mid run again; the others are reused (the registry says which)
    executed = sorted(re.findall(r"executed (\w+)\.ipynb", log))
    reused = sorted(re.findall(r"\[reuse\] (\w+)\.ipynb", log))
    assert executed == sorted(p.notebook for p in pages.PAGES if "bandwidth.mid" in p.keys)
    assert reused == sorted(p.notebook for p in pages.PAGES if "bandwidth.mid" not in p.keys)
    # by hand, so that the two lines above cannot pass on an empty registry: the fetch, ratio and measured
    # pages read the mid bracket, and so do the workload and cost pages, whose fleet reads each instance's tier at
    # the illustrative bracket; the block unit and regeneration pages do not
    assert {"02_fetch", "04_ratio", "11_measured", "12_workload", "13_cost"} <= set(executed)
    assert {"01_block_unit", "03_regenerate"} <= set(reused)
    for name in ("block_unit.csv", "regenerate.csv"):
        assert (out / "tables" / name).read_bytes() == (seed_build / "tables" / name).read_bytes(), name
    old = read_csv_rows(seed_build / "tables" / "fetch.csv", "bracket")
    new = read_csv_rows(out / "tables" / "fetch.csv", "bracket")
    # 5,242,880 B / 100e9 B/s = 52.4288 us (was 81.92); other brackets unchanged
    assert old["mid"]["fetch_us"] == "81.92" and new["mid"]["fetch_us"] == "52.4288"
    assert old["optimistic"] == new["optimistic"] and old["pessimistic"] == new["pessimistic"]
    # the rendered HTML follows: 52.43 us replaces 81.92 us on the fetch page; the regeneration page is unchanged
    fetch_page = page_text(out / "html" / "notebooks" / "02_fetch.html")
    assert re.search(r"give 43\.33 ?, 52\.43 and 163\.84 µs", fetch_page)
    assert not re.search(r"give 43\.33 ?, 81\.92", fetch_page)
    # ... while the comparison with the source chapter still quotes the seed's 81.92 us
    assert re.search(r"With the seed assumptions these are 43\.33 ?, 81\.92 and 163\.84 µs", fetch_page)
    assert page_text(out / "html" / "notebooks" / "03_regenerate.html") == page_text(
        seed_build / "html" / "notebooks" / "03_regenerate.html"
    )
    # the interior page's ratio: 34.700068 ms / 52.4288 us = 661.85 (was 423.58 at 81.92 us)
    assert "662 times the 52.43 µs fetch" in page_text(out / "html" / "notebooks" / "05_interior.html")


def test_a_rebuild_with_nothing_changed_executes_nothing(seed_build, tmp_path):
    out = tmp_path / "again"
    shutil.copytree(seed_build, out)
    before = {p: p.stat().st_mtime_ns for p in out.rglob("*")}
    proc = build(out)
    assert proc.returncode == 0, proc.stderr
    assert "nothing changed" in proc.stderr and "executed" not in proc.stderr
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*")} == before


def test_a_rebuild_with_nothing_changed_reads_the_tables_it_wrote(small_build, tmp_path, monkeypatch):
    # the tables take seconds to compute: a build whose inputs are those of the last one (the same
    # tables_key in its manifest) and whose files are intact reads them instead
    from kvtier.pipeline import build as pipeline

    project, built = small_build
    out = shutil.copytree(built, tmp_path / "again")

    def no_tables(scenario):
        raise AssertionError("tables computed again")

    monkeypatch.setattr(pipeline.pages, "csv_texts", no_tables)
    result = pipeline.build(load_assumptions(), out=out, root=project, log=lambda line: None)
    assert result.up_to_date and result.executed == [] and sorted(result.reused) == ["01_block_unit", "02_fetch"]
    # another set is another key: the tables are computed (and here refused by the stand-in)
    with pytest.raises(AssertionError, match="tables computed again"):
        pipeline.build(load_assumptions(sets={"block_tokens": "32"}), out=out, root=project, log=lambda line: None)


def test_a_notebook_that_raises_is_reported_and_leaves_the_build(small_build, tmp_path):
    project, built = small_build
    project = shutil.copytree(project, tmp_path / "project")
    page = project / "notebooks" / "02_fetch.md"
    page.write_text(page.read_text() + '\n```{code-cell}\nraise RuntimeError("deliberate failure for the test")\n```\n')
    out = tmp_path / "kept"
    shutil.copytree(built, out)
    before = snapshot(out)
    proc = build(out, cwd=project)
    assert proc.returncode == 2
    assert "notebook 02_fetch.md failed: RuntimeError: deliberate failure for the test" in proc.stderr
    assert 'failing cell:\n    raise RuntimeError("deliberate failure for the test")' in proc.stderr
    assert "Traceback" not in proc.stderr
    assert snapshot(out) == before
    assert not list(tmp_path.glob(".kept.*")), "the staging directory is cleaned up"


def test_a_sphinx_warning_fails_the_build_and_leaves_it(seed_build, tmp_path):
    project = copy_project(tmp_path)
    intro = project / "book" / "intro.md"
    intro.write_text(intro.read_text() + "\nA number that was never glued: {glue:text}`no_such_key`.\n")
    out = tmp_path / "kept"
    shutil.copytree(seed_build, out)
    before = snapshot(out)
    proc = build(out, cwd=project)
    assert proc.returncode == 2
    assert "jupyter-book build failed" in proc.stderr and "no_such_key" in proc.stderr
    # the message names the page as the reader knows it: no colour codes, no staging directory
    assert "book/intro.md" in proc.stderr and "\x1b[" not in proc.stderr and "kvtier-new" not in proc.stderr
    assert snapshot(out) == before
    assert not list(tmp_path.glob(".kept.*"))


LEFTOVERS = {
    "a literal backtick (Markdown glued as plain text)": r"`",
    "a glue role left unfilled": r"\{glue",
    "Python's None": r"(?<![.!?:;] )(?<!^)\bNone\b",  # "None of them ..." opens a sentence; mid-sentence it is a leak
    "JSON's null": r"\bnull\b",
    "a NaN": r"\b(?:nan|NaN)\b",
    "a word twice in a row": r"(?i)\b([a-z]+) \1\b",
    # the prose names an input in words and links its key ({input}); a key's name belongs in code and commands only
    "an assumption key's name": r"(?<![\w.])(?:"
    + "|".join(sorted((re.escape(k) for k in SCHEMA if "." in k or "_" in k), key=len, reverse=True))
    + r")(?![\w.])",
}
"""What a template leaves in a page's visible text when a value or a sentence did not fill in as meant."""


SAID_ON_PURPOSE = ("Every input, with its provenance: the assumptions page.", "scroll sideways for more columns →")
"""Sentences a page may print more than once: the link that closes every figure's caption."""


def visible_prose(html: Path) -> dict[str, list[str]]:
    """Each paragraph, list item, heading and caption of a built page's article as a reader sees it, by element.

    The theme's navigation and the headings' link marks, tables, code and math are left out: a table
    repeats values by design, and code shows identifiers as they are typed.  Spaces that the glue
    roles leave before punctuation are closed.
    """
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html.read_text(), "html.parser")
    main = soup.select_one("main article") or soup.find("main")  # the page's own text, not the theme's contents list
    for skipped in main.select("script, style, nav, .headerlink, table, pre, code, .highlight, math, .math"):
        skipped.decompose()
    out: dict[str, list[str]] = {}
    for el in main.find_all(["p", "li", "figcaption", "dd", "dt", "h1", "h2", "h3", "summary"]):
        if el.find(["p", "li"]):  # the innermost block holds the text
            continue
        text = re.sub(r" ([,.;:)%])", r"\1", re.sub(r"\s+", " ", el.get_text(" ")).strip())
        if text:
            out.setdefault(el.name, []).append(text)
    return out


SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z“\"(])")
NUMBER = re.compile(r"(?<![\w.-])\d[\d,]*(?:\.\d+)?(?![\w-])")
"""A number standing alone: not the 3 or 70 of Llama-3-70B, the 200 of H200 or the 16 of 16-token."""


def leftovers(html: Path) -> list[str]:
    """Every template leftover in the visible text of one built page (see :data:`LEFTOVERS`), one line each.

    Besides the patterns: a sentence of six words or more printed twice on the page, and the
    same three numbers stated twice in one paragraph (a sentence that restates the one before it).
    """
    found: list[str] = []
    sentences: dict[str, int] = {}
    for blocks in visible_prose(html).values():
        for text in blocks:
            for what, pattern in LEFTOVERS.items():
                for m in re.finditer(pattern, text):
                    found.append(f"{what}: ...{text[max(0, m.start() - 60) : m.end() + 60]}...")
            numbers = NUMBER.findall(text)
            runs = [tuple(numbers[i : i + 3]) for i in range(len(numbers) - 2)]
            twice = {run for i, run in enumerate(runs) if len(set(run)) == 3 and run in runs[:i]}
            found += [f"the numbers {', '.join(run)} twice in: {text[:240]}" for run in sorted(twice)]
            for sentence in SENTENCE_END.split(text):
                if len(sentence.split()) >= 6 and sentence not in SAID_ON_PURPOSE:
                    sentences[sentence] = sentences.get(sentence, 0) + 1
    found += [f"printed {n} times: {sentence}" for sentence, n in sentences.items() if n > 1]
    return found


def test_an_input_named_in_words_links_its_row_on_the_assumptions_page(seed_build):
    html = seed_build / "html"
    rows = set(re.findall(r'<tr id="(key-[a-z0-9-]+)"', (html / "notebooks" / "00_assumptions.html").read_text()))
    links = {
        page.relative_to(html).as_posix(): set(
            re.findall(r'href="[./]*(?:notebooks/)?00_assumptions\.html#([^"]+)"', text)
        )
        for page in html.rglob("*.html")
        if "_static" not in page.parts and "00_assumptions.html#" in (text := page.read_text())
    }
    # the measured page names the transfer model's inputs in words, each linked to its key's row
    assert {"key-fetch-host-cache", "key-fetch-pageable-efficiency"} <= links["notebooks/11_measured.html"]
    assert all(anchors <= rows for anchors in links.values()), {p: a - rows for p, a in links.items() if a - rows}


def test_every_link_to_a_table_or_its_row_finds_it(seed_build):
    html = seed_build / "html"
    ids = {
        page.relative_to(html).as_posix(): set(re.findall(r'id="((?:row|table)-[a-z0-9-]+)"', page.read_text()))
        for page in html.rglob("*.html")
        if "_static" not in page.parts
    }
    links = []
    for page in html.rglob("*.html"):
        if "_static" in page.parts:
            continue
        for target, anchor in re.findall(r'href="([^"#]*)#((?:row|table)-[a-z0-9-]+)"', page.read_text()):
            path = (page.parent / target).resolve().relative_to(html.resolve()).as_posix() if target else None
            links.append((page.relative_to(html).as_posix(), path or page.relative_to(html).as_posix(), anchor))
    # the landing links its headline figures to their rows: the trace pages' deployment in its own table, the
    # workload page's 90 % tier of the conversation trace, the cost page's 90 % tier in host DRAM
    landing = {(target, anchor) for page, target, anchor in links if page == "book/intro.html"}
    assert {
        ("book/intro.html", "row-decision-named-llama-3-1-70b-h100"),
        ("notebooks/12_workload.html", "row-workload-tiers-90"),
        ("notebooks/13_cost.html", "row-cost-lru-90-pcie5-x16"),
    } <= landing, landing
    missing = [link for link in links if link[2] not in ids.get(link[1], set())]
    assert not missing, missing


def test_no_page_shows_a_template_leftover(seed_build, tmp_path):
    html = seed_build / "html"
    skip = ("index.html", "genindex.html", "search.html")
    built = sorted(p for p in html.rglob("*.html") if "_static" not in p.parts and p.name not in skip)
    assert len(built) == len(MARKDOWN_PAGES) + len(NOTEBOOKS)
    problems = [f"{page.relative_to(html)}: {line}" for page in built for line in leftovers(page)]
    assert not problems, "\n".join(problems)

    # the scan sees each kind of leftover: one page carrying every one of them is caught on each count
    bad = tmp_path / "bad.html"
    bad.write_text(
        "<html><body><main><p>The `fetch_layout` key. It took None µs and nan ms, null here. The the end.</p>"
        "<p>The copies' latency (tier_latency.nvme) is a key's name.</p>"
        "<p>For the block the brackets give 43.33, 81.92 and 163.84 µs. The seed gives 43.33, 81.92 and 163.84 µs.</p>"
        "<p>A sentence of at least six words here.</p><figcaption>A sentence of at least six words here.</figcaption>"
        "<li>{glue:text}`x` unfilled.</li><p>None of the tiers loses.</p><table><tr><td>None</td></tr></table>"
        "</main></body></html>"
    )
    caught = "\n".join(leftovers(bad))
    for what in LEFTOVERS:
        assert what in caught, (what, caught)
    assert "The the" in caught and "the numbers 43.33, 81.92, 163.84 twice" in caught
    assert "printed 2 times: A sentence of at least six words here." in caught
    # "None of the tiers" opens a sentence (English), and a table's cells are not prose: neither is caught
    assert caught.count("Python's None") == 1


@pytest.mark.skipif(
    not CHROMIUM.exists() and os.environ.get("CI") != "true",
    reason="Debian's chromium is not installed (scripts/setup.sh installs it); with CI=true the test fails instead",
)
def test_every_page_reads_well_in_chromium_at_1400_and_420_px(seed_build):
    # console errors, figures that do not render, figure text under 9 px as shown at either width
    # (each figure's smallest text from its SVG, scaled by its shown over its natural width), a caption
    # taller than its image at 1,400 px, tables cut off without a scroll affordance (and, at 1,400 px,
    # any table of record that needs one), a page that scrolls sideways, content wider than the page,
    # alt text that is a file name. Overlapping figure labels are checked on the figures as drawn
    # (tests/report/test_figures.py), where matplotlib knows every label's box.
    from urllib.parse import unquote, urlparse

    from playwright.sync_api import sync_playwright

    from kvtier.report.figures import MIN_SHOWN_PX

    html = seed_build / "html"
    # index.html only redirects to the root page (checked here, then skipped: it navigates away)
    assert "book/intro.html" in (html / "index.html").read_text()
    skip = ("index.html", "genindex.html", "search.html")
    pages = sorted(
        p for p in html.rglob("*.html") if "_static" not in p.parts and p.relative_to(html).as_posix() not in skip
    )
    assert len(pages) == len(MARKDOWN_PAGES) + len(NOTEBOOKS)  # every markdown page and one page per notebook
    problems: list[str] = []
    figures_seen = 0
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=str(CHROMIUM),
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        try:
            for width in (1400, 420):
                for page_path in pages:
                    where = f"{page_path.relative_to(html)} at {width} px"
                    page = browser.new_page(viewport={"width": width, "height": 900})
                    errors: list[str] = []
                    page.on("console", lambda msg, errors=errors: msg.type == "error" and errors.append(msg.text))
                    page.on("pageerror", lambda exc, errors=errors: errors.append(str(exc)))
                    response = page.goto(page_path.as_uri(), wait_until="load")
                    assert response is None or response.ok
                    problems += [f"{where}: console: {e}" for e in errors if KNOWN_THEME_ERROR not in e]
                    seen = page.evaluate(READING_CHECKS)
                    for src, alt in seen["alts"]:
                        if not alt.strip() or alt.strip() == src or re.search(r"\.(svg|png)$", alt.strip()):
                            problems.append(f"{where}: image {src} has alt text {alt!r}, not a description")
                    page_w, view_w = seen["page"]
                    if page_w > view_w + 1:
                        problems.append(f"{where}: the page scrolls sideways ({page_w} px in {view_w} px)")
                    for src, natural_w, natural_h, shown_w, zoom, shown_h, caption_h in seen["figures"]:
                        name = Path(unquote(urlparse(src).path)).name
                        if not (natural_w > 0 and natural_h > 0):
                            problems.append(f"{where}: {name} did not render")
                            continue
                        if not zoom:
                            problems.append(f"{where}: {name} cannot be opened at full size")
                        # a 9 pt text on a 482 px wide figure shown 370 px wide: 9 x 4/3 x 370/482 = 9.2 px
                        smallest_pt = min(svg_font_sizes_pt(Path(unquote(urlparse(src).path))))
                        smallest_px = smallest_pt * SVG_PX_PER_PT * shown_w / natural_w
                        if smallest_px < MIN_SHOWN_PX - 1e-9:
                            problems.append(
                                f"{where}: {name} shows its smallest text ({smallest_pt:g} pt) at {smallest_px:.1f} px"
                            )
                        if width == 1400 and caption_h >= shown_h:
                            problems.append(
                                f"{where}: {name}'s caption is {caption_h:.0f} px tall under a {shown_h:.0f} px image"
                            )
                    for scroll_w, client_w, overflow, folded in seen["boxes"]:
                        if scroll_w > client_w + 1 and overflow not in ("auto", "scroll"):
                            problems.append(f"{where}: a table is cut off ({scroll_w} px in {client_w} px)")
                        if width == 1400 and not folded and scroll_w > client_w + 1:
                            problems.append(f"{where}: a table needs {scroll_w} px, the page gives it {client_w}")
                    problems += [f"{where}: wider than the page: {w}" for w in seen["wide"]]
                    if width == 1400:
                        figures_seen += len(seen["figures"])
                    page.close()
        finally:
            browser.close()
    assert not problems, "\n".join(problems)
    assert figures_seen == len(FIGURES) + 1  # the landing page shows the decision figure again


TABLE_AND_CODE_CHECKS = """() => {
  const out = {headers: [], boxes: [], code: []};
  for (const th of document.querySelectorAll("main table.kvtier-table th")) {
    if (th.offsetParent === null) continue;  // in a closed details block
    out.headers.push([th.textContent, th.getAttribute("title") || ""]);
  }
  for (const box of document.querySelectorAll("main .kvtier-table-box")) {
    if (box.offsetParent === null) continue;
    const wrap = box.closest(".kvtier-table-wrap");
    const cue = wrap ? wrap.querySelector(".kvtier-scroll-cue") : null;
    const first = box.querySelector("tbody tr td");
    out.boxes.push([box.scrollWidth, box.clientWidth, first ? getComputedStyle(first).position : "",
                    !!cue && cue.offsetHeight > 0 && getComputedStyle(cue).visibility !== "hidden"]);
  }
  for (const pre of document.querySelectorAll("main pre")) {
    const style = getComputedStyle(pre);
    const box = pre.closest("div.highlight") || pre;
    out.code.push([pre.scrollWidth, pre.clientWidth, style.overflowX,
                   pre.getBoundingClientRect().right, box.getBoundingClientRect().right,
                   (pre.textContent || "").slice(0, 40)]);
  }
  return out;
}"""
"""Every visible table header (text, title), each visible table box (scroll and visible width, the
first cell's position, whether its scroll cue shows) and every code block (scroll and visible
width, overflow, its right edge and its box's)."""


@pytest.mark.skipif(
    not CHROMIUM.exists() and os.environ.get("CI") != "true",
    reason="Debian's chromium is not installed (scripts/setup.sh installs it); with CI=true the test fails instead",
)
def test_tables_and_code_blocks_read_well_in_chromium_at_1400_and_420_px(seed_build):
    # a header is words with a unit, never the CSV's identifier (which is its title, on hover); a
    # table wider than its box keeps its first column in view (sticky) and says that it scrolls;
    # a code block fits its box or scrolls inside it, at either width
    from playwright.sync_api import sync_playwright

    html = seed_build / "html"
    skip = ("index.html", "genindex.html", "search.html")
    pages = sorted(
        p for p in html.rglob("*.html") if "_static" not in p.parts and p.relative_to(html).as_posix() not in skip
    )
    problems: list[str] = []
    seen = {"headers": 0, "scrolling": 0, "code": 0}
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=str(CHROMIUM),
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"],
        )
        try:
            for width in (1400, 420):
                for page_path in pages:
                    where = f"{page_path.relative_to(html)} at {width} px"
                    page = browser.new_page(viewport={"width": width, "height": 900})
                    page.goto(page_path.as_uri(), wait_until="load")
                    found = page.evaluate(TABLE_AND_CODE_CHECKS)
                    for text, title in found["headers"]:
                        seen["headers"] += 1
                        if "_" in text or not title:
                            problems.append(f"{where}: table header {text!r} (column {title!r}) is not words")
                    for scroll_w, client_w, first_position, cue in found["boxes"]:
                        if scroll_w > client_w + 1:
                            seen["scrolling"] += 1
                            if first_position != "sticky":
                                problems.append(f"{where}: a table scrolls but its first column is {first_position}")
                            if not cue:
                                problems.append(f"{where}: a table scrolls ({scroll_w} px in {client_w}) without a cue")
                    for scroll_w, client_w, overflow, right, box_right, text in found["code"]:
                        seen["code"] += 1
                        cut = scroll_w > client_w + 1 and overflow not in ("auto", "scroll")
                        if cut or right > box_right + 1:
                            problems.append(f"{where}: code block {text!r} is cut ({scroll_w} px in {client_w})")
                    page.close()
        finally:
            browser.close()
    assert not problems, "\n".join(problems)
    # the checks saw something: the book's tables, and at 420 px at least one wide table scrolls
    assert seen["headers"] > 100 and seen["scrolling"] > 0 and seen["code"] >= 5


def test_the_set_name_and_a_model_file_edit_reach_the_notebooks(tmp_path):
    from kvtier.pipeline import build as pipeline

    # the assumptions page is told the set's name (and so is re-executed when it changes)
    s = notebook.scenario_from_parameters({"set_name": "my-lab", "model": "llama-3-70b", "provenance": {}}, "x")
    assert s.assumptions.name == "my-lab"
    # a model given as a directory: editing its config.json changes the inputs of every notebook that reads it
    model_dir = tmp_path / "my-model"
    model_dir.mkdir()
    data = json.loads((ROOT / "kvtier" / "data" / "models" / "llama-3-8b.json").read_text())
    (model_dir / "config.json").write_text(json.dumps(data))
    before = {j.name: j.inputs_hash for j in pipeline.plan(ROOT, load_assumptions(sets={"model": str(model_dir)}))}
    (model_dir / "config.json").write_text(json.dumps({**data, "num_key_value_heads": 4}))
    after = {j.name: j.inputs_hash for j in pipeline.plan(ROOT, load_assumptions(sets={"model": str(model_dir)}))}
    changed = sorted(name for name in before if before[name] != after[name])
    assert changed == sorted(p.stem for p in NOTEBOOKS)  # every page declares the model


def test_a_page_run_in_jupyter_shows_its_numbers_and_figures(tmp_path, monkeypatch):
    """Run all in Jupyter: the last cell shows the prose with numbers filled in and the figures drawn."""
    import papermill

    monkeypatch.delenv("KVTIER_BUILD", raising=False)
    nb = papermill.execute_notebook(
        read_page(ROOT / "notebooks" / "02_fetch.md"),
        str(tmp_path / "02_fetch.ipynb"),
        cwd=str(ROOT / "notebooks"),
        kernel_name="python3",
        progress_bar=False,
    )
    shown = nb.cells[-1].outputs
    text = "".join(o["data"].get("text/markdown", "") for o in shown)
    assert "{glue:text}" not in text and "{glue:figure}" not in text
    # the seed's mid bracket: 5,242,880 B / 64e9 B/s = 81.92 µs, formatted ":.2f" as the book does
    assert "81.92" in text
    assert sum("image/svg+xml" in o["data"] for o in shown) == 1  # fig_fetch, where the book puts it


def test_intro_leads_with_the_decision_and_its_figure(seed_build):
    from bs4 import BeautifulSoup

    soup = BeautifulSoup((seed_build / "html" / "book" / "intro.html").read_text(), "html.parser")
    lead_box, box = soup.select("main section div.kvtier-answer")
    # first the spread across this build, the named deployments and the measured set, and how sure it is
    (lead,) = [re.sub(r"\s+", " ", p.get_text(" ")).strip() for p in lead_box.find_all("p")]
    assert lead.startswith("Across this build, 4 named deployments and the book's measured set, fetching a block")
    assert "saves 0.43 to 1.24 USD/h per accelerator" in lead and "How sure: of the 81 inputs" in lead
    # then the named deployments side by side, their table of record one click away; the spread and the counts
    # come before it, within the page's first 150 words (title included)
    table = lead_box.find_next("table")
    before = [text for text in table.find_all_previous(string=True) if text.find_parent("section") is not None]
    assert len(" ".join(before).split()) <= 150
    headers = [th.get_text(" ").replace("\xad", "").strip() for th in table.find("thead").find_all("th")]
    assert headers[0] == "deployment" and "saved per accelerator (USD/h)" in headers
    assert [tr.find("td").get_text().strip() for tr in table.find("tbody").find_all("tr")][:2] == [
        "this build",
        "llama-3.1-70b-h100",
    ]
    assert table.find_next("a", href=re.compile(r"decision_named\.csv$")) is not None
    paragraphs = [re.sub(r"\s+", " ", p.get_text(" ")).strip() for p in box.find_all("p")]
    rule, plan, measured = paragraphs
    # every one of the seed's tiers fetches a 16-token block faster, whatever the regime and layout; the closest
    # call is NVMe Gen4 x4 per layer chunk inside a batch: 17.9229 ms / (160 x 92 us + 748.98 us) = 1.16x
    assert "from all 10 tiers, alone or inside a batch" in rule
    assert "closest call is nvme-gen4-x4 as 160 chunk copies, regenerated inside a batch" in rule
    assert "1.16×" in rule
    # the tier to buy: host DRAM, 4.82 TiB for 90 % of the conversation trace's achievable hits
    assert plan.startswith("For the conversation trace, an LRU tier of 4.82 TiB in host DRAM")
    # the H200: 44.45 ms / 104.67 us = 425x alone in one copy, a CUDA-graph pass; 16 x 260.5 us / 104.67 us = 39.8x
    # in a batch, at the per-token slope fitted to the eager passes (no pass measured one block's marginal cost)
    assert "as a CUDA-graph pass took 425× as long" in measured
    assert "at the per-token slope fitted to the eager passes" in measured and "39.8× and 2.1–3.0×" in measured
    figure = box.find_next("figure")
    assert figure.find("img")["src"].endswith("fig_decision.svg")
    assert "Above the 1× line fetching wins" in figure.get_text(" ")
    # the figure the landing page shows is the decision page's, byte for byte
    assert (seed_build / "html" / "_images" / "fig_decision.svg").read_bytes() == (
        seed_build / "figures" / "fig_decision.svg"
    ).read_bytes()


def test_findings_lead_with_the_three_line_answer(seed_build):
    from bs4 import BeautifulSoup

    for page in ("book/findings",):
        soup = BeautifulSoup((seed_build / "html" / f"{page}.html").read_text(), "html.parser")
        first = soup.select_one("main section ul")
        lines = [re.sub(r"\s+", " ", li.get_text(" ")).strip() for li in first.find_all("li", recursive=False)]
        assert len(lines) == 3, (page, lines)
        regimes, sureness, measured = lines
        # 1. the verdict in each regime with its range. Inside a batch: 2.2404e12 FLOP / (500e12 x 0.50) = 8.96 ms
        # ... 17.92 ms over 43.33 ... 163.84 us: 54.7x (32 GB/s, 50 %) to 413.6x (121 GB/s, 25 %), 7 of 9 in
        # 100..1000. Lone block: 52.24 ms / 163.84 us = 318.8x to 52.24 ms / 43.33 us = 1,205.6x; 6 of 9 within.
        assert "fetching it is 55× to 414× faster" in regimes and "holds at 7 of them" in regimes
        assert "fetching is 319× to 1,206× faster" in regimes and "holds at 6 of 9" in regimes
        # 2. how sure, per regime, and which input moves it (the MFU drawn up to 60 %, the H200's measured 55.93 %)
        assert re.search(r"51\.6 % of in-batch ratios and 0\.0 % of lone-block ratios fall below 100×", sureness)
        assert "link bandwidth" in sureness
        # 3. what was measured: 76 records, the 3 reference.* figures (2 measured) enter no calculation; the
        # serving trace (workload.trace) and the cost page's lone-block board power (energy.power_lone) enter one
        # (18 of the placement: parallel.* and collective.*, 14 of them assumed, 4 published-spec; workload.hit_count,
        # published-spec, and workload.sample_rate, assumed; 11 all assumed in the seed: six regen.* forward-pass
        # terms, five fetch.* transfer terms; 4 for how copies are issued, 5 for the engine model's kernel tables, 1
        # for the NVMe drive an LRU tier buys, 1 for the deployment the trace pages price: workload.deployment)
        assert measured.startswith("Of the 139 inputs that enter a calculation, 2 of them measured")
        # 85 assumed: energy.power_batch (700 W) is assumed, not published-spec; the host link's 55.3 GB/s derived;
        # the tier latencies of RDMA, NVLink-C2C and HBM, decision.hit_target, engine (none) and
        # workload.sample_rate are assumed, and 14 of the placement's keys; 85 + the 11 terms = 96, + 3 for
        # pageable copies (overhead, warm share, host cache) = 99, + 3 for copies (fetch.copy_method and the batched
        # and kernel costs; the lone copy's is derived from the H200 fit) = 102, + the engine model's 4 = 106, + what
        # it does past its grid (regen.beyond_grid) = 107, - the batched copy's cost, now derived from vLLM's published
        # H100 throughput = 106, + the deployment the trace pages price (workload.deployment) = 107, + the fleet's
        # instances, routing and decode time per token = 110 (its three router thresholds are SGLang's published
        # defaults, 14 + 3 = 17 published-spec; its pool bandwidth is derived from Mooncake's measurement)
        # (nvme.drive_capacity is published-spec: 14 of those before the fleet); + how a tensor-parallel group stores a
        # block (parallel.kv_storage) and the pool's server and its memory = 113 (the pool's port is derived)
        assert "113 assumed" in measured and "17 published-spec" in measured
        assert "Another 2 measured figures" in measured  # besides the 2 used
        for line in lines:
            assert not re.search(r"\([^()]*\(", line), line  # no nested parentheses
        # no sentence in bold: nothing inside the three lines is strong
        assert not first.find(["strong", "b"])


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


def test_the_build_computes_the_trace_analysis_once_for_its_kernels_and_publishes_none_of_it(
    small_build, tmp_path, monkeypatch
):
    # the tables are computed with the store writing into the staging directory's .analysis, which the
    # kernels are pointed at (KVTIER_ANALYSIS_DIR) and which is removed before anything is published
    from kvtier import store
    from kvtier.pipeline import build as pipeline

    project, built = small_build
    out = shutil.copytree(built, tmp_path / "again")
    seen: list[Path | None] = []
    real = pipeline.pages.csv_texts

    def tables(scenario):
        seen.append(store.directory())
        store.memoized("probe", {"n": 1}, lambda: "computed once")
        return real(scenario)

    monkeypatch.setattr(pipeline.pages, "csv_texts", tables)
    monkeypatch.delenv(store.DIRECTORY_VARIABLE, raising=False)
    pipeline.build(load_assumptions(), out=out, root=project, log=lambda line: None, force=True)
    (where,) = seen
    assert where is not None and where.name == pipeline.ANALYSIS_DIR and where.parent.name.startswith(".again.")
    assert not where.exists() and not where.parent.exists()  # staged, then gone
    assert not any(p.name == pipeline.ANALYSIS_DIR for p in out.rglob("*"))
    assert store.directory() is None  # the build's own process no longer writes there


def test_kernels_are_pointed_at_the_builds_analysis(tmp_path, monkeypatch):
    from kvtier import store
    from kvtier.pipeline import build as pipeline

    monkeypatch.setattr(pipeline.subprocess, "run", lambda *args, **kwargs: None)  # no font cache to warm here
    monkeypatch.setenv(store.DIRECTORY_VARIABLE, "/elsewhere")
    with pipeline._kernel_environment(tmp_path / "home", tmp_path / ".analysis"):
        assert os.environ[store.DIRECTORY_VARIABLE] == str(tmp_path / ".analysis")
    assert os.environ[store.DIRECTORY_VARIABLE] == "/elsewhere"


def test_the_trace_is_hashed_in_blocks_to_the_hash_of_its_bytes(tmp_path):
    # issue 43: the build read the whole trace into memory to hash it; in 1 MiB blocks the digest is the same
    import hashlib

    from kvtier.pipeline.build import _trace_file_hash

    path = tmp_path / "t.jsonl"
    path.write_bytes(bytes(range(256)) * (3 * 4096 + 7))  # 3 MiB and 1,792 B: three whole blocks and a part
    assert _trace_file_hash(str(path)) == hashlib.sha256(path.read_bytes()).hexdigest()
    assert _trace_file_hash(str(tmp_path)) == ""  # a directory: the page reports it
