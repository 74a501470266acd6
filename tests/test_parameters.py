"""scripts/parameters.py rewrites each page's generated parameters cell, and --check names a stale one."""

from __future__ import annotations

import dataclasses
import importlib.util
import shutil
import subprocess
import sys

import pytest

from kvtier.report import notebook
from kvtier.report.pages import fetch
from tests.conftest import ROOT


def _script():
    spec = importlib.util.spec_from_file_location("parameters", ROOT / "scripts" / "parameters.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def pages_dir(tmp_path):
    """A copy of two pages: the fetch page, and the assumptions page, whose cell also declares set_name."""
    for stem in ("00_assumptions", "02_fetch"):
        shutil.copy(ROOT / "notebooks" / f"{stem}.md", tmp_path / f"{stem}.md")
    return tmp_path


def test_the_committed_notebooks_are_current():
    # the command a developer runs before committing: every page's cell is the generated one
    proc = subprocess.run(
        [sys.executable, "scripts/parameters.py", "--check"], capture_output=True, text=True, cwd=ROOT, timeout=300
    )
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")


def test_a_stale_cell_is_named_by_check_and_restored_by_a_rewrite(pages_dir, capsys):
    script = _script()
    page = pages_dir / "02_fetch.md"
    original = page.read_bytes()
    assert script.main([str(pages_dir), "--check"]) == 0
    # a hand edit: a changed seed value and comment, and a key's line dropped (the cell lacks kv_dtype)
    text = original.decode()
    old = 'bandwidth_mid: str = "64 GB/s"  # link bandwidth of the mid bracket'
    assert old in text and "\nkv_dtype: str = " in text
    edited = text.replace(old, 'bandwidth_mid: str = "100 GB/s"  # mid').replace(
        '\nkv_dtype: str = "bf16"  # element type the KV cache is stored in; one of bf16, fp16, fp32, fp8', ""
    )
    page.write_bytes(edited.encode())
    capsys.readouterr()
    assert script.main([str(pages_dir), "--check"]) == 1
    out, err = capsys.readouterr()
    assert (out, err) == ("", f"{page}: the parameters cell is stale; run scripts/parameters.py\n")
    assert page.read_bytes() == edited.encode()  # --check writes nothing
    assert script.main([str(pages_dir)]) == 0
    assert capsys.readouterr().out == f"{page}: rewrote the parameters cell\n"
    assert page.read_bytes() == original
    assert script.main([str(pages_dir), "--check"]) == 0


def test_the_rewritten_cell_is_the_generated_one_with_set_name_kept(pages_dir):
    script = _script()
    for stem, set_name in (("00_assumptions", True), ("02_fetch", False)):
        path = pages_dir / f"{stem}.md"
        text = path.read_text()
        keys = next(p.keys for p in script.pages.PAGES if p.notebook == stem)
        cell = notebook.parameters_cell(keys, set_name=set_name)
        # the cell's source sits between the options' blank line and the closing fence, nothing else changes
        assert text.count(f"\n\n{cell}\n```\n") == 1
        # a cell reduced to one line comes back whole; set_name stays when the cell still assigns it
        kept = "set_name = 'mine'\n" if set_name else ""
        assert script.rewritten(text.replace(cell, f"{kept}x = 1"), path) == text
    # a new page's cell, left empty (its blank line after the options too), is written whole
    path = pages_dir / "02_fetch.md"
    text = path.read_text()
    cell = notebook.parameters_cell(fetch.KEYS)
    empty = text.replace(f":tags: [parameters, remove-cell]\n\n{cell}\n", ":tags: [parameters, remove-cell]\n")
    assert empty != text and script.rewritten(empty, path) == text


def test_the_cell_follows_the_page_modules_keys(pages_dir, monkeypatch):
    # a key added to fetch.KEYS (peak_flops, which schema order puts after block_tokens) appears in the cell
    script = _script()
    page = pages_dir / "02_fetch.md"
    monkeypatch.setattr(fetch, "KEYS", (*fetch.KEYS, "peak_flops"))
    pages = [dataclasses.replace(p, keys=fetch.KEYS) if p.notebook == "02_fetch" else p for p in script.pages.PAGES]
    monkeypatch.setattr(script.pages, "PAGES", tuple(pages))
    new = script.rewritten(page.read_text(), page)
    line = (
        'peak_flops: str = "500 TFLOP/s"  # dense peak of the accelerator that regenerates;'
        " flop rate with a unit, e.g. 500TFLOP/s"
    )
    assert f'\nblock_tokens: str = "16 tokens"  # tokens one KV block covers; tokens, e.g. 16 or 32K\n{line}\n' in new


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("99_orphan.md", None, "{path}: no page module in kvtier/report/pages declares NOTEBOOK = '99_orphan'"),
        (
            "02_fetch.md",
            "# Fetching\n\nno code at all\n",
            "{path}: needs exactly one code cell tagged 'parameters', found 0",
        ),
    ],
)
def test_a_page_that_cannot_be_rewritten_is_named_and_nothing_is_written(tmp_path, capsys, name, text, message):
    path = tmp_path / name
    path.write_text(text if text is not None else (ROOT / "notebooks" / "02_fetch.md").read_text())
    before = path.read_bytes()
    assert _script().main([str(tmp_path)]) == 2
    assert capsys.readouterr().err == message.format(path=path) + "\n"
    assert path.read_bytes() == before


def test_an_empty_directory_is_refused(tmp_path, capsys):
    assert _script().main([str(tmp_path), "--check"]) == 2
    assert capsys.readouterr().err == f"{tmp_path}: no pages (*.md) found\n"


def test_the_keys_list_is_the_schema_and_check_names_it_when_stale(pages_dir, capsys):
    from kvtier.inputs.keys import SCHEMA

    script = _script()
    keys_page = pages_dir / "using" / "assumptions.md"
    keys_page.parent.mkdir()
    shutil.copy(ROOT / "book" / "using" / "assumptions.md", keys_page)
    args = [str(pages_dir), "--keys-page", str(keys_page)]
    original = keys_page.read_text()
    listed = original[original.index(script.BEGIN) : original.index(script.END)]
    # one line per key, in schema order; a bandwidth says its unit form and the physical bounds of its kind
    assert listed.count("\n- `") == len(SCHEMA)
    assert [line.split("`")[1] for line in listed.splitlines()[1:]] == list(SCHEMA)
    assert (
        "- `bandwidth.mid`: link bandwidth of the mid bracket, one direction; bandwidth with a unit, e.g. 64GB/s;"
        " allowed: bandwidth in [1 kB/s, 1 PB/s]\n" in listed
    )
    # null is the YAML value as it is typed: code, not a word of the prose
    assert "- `param_count`: parameters that regeneration runs through (`null`: the exact count" in listed
    assert "allowed: count in [1, 1e15] or `null`\n" in listed
    keys_page.write_text(original.replace("- `kv_dtype`", "- `kv_type`"))
    capsys.readouterr()
    assert script.main([*args, "--check"]) == 1
    assert capsys.readouterr().err == f"{keys_page}: the list of keys is stale; run scripts/parameters.py\n"
    assert script.main(args) == 0
    assert keys_page.read_text() == original
    keys_page.write_text(original.replace(script.END, ""))
    assert script.main(args) == 2
    needs = f"{keys_page}: needs one {script.BEGIN} line and one {script.END} line after it\n"
    assert capsys.readouterr().err.endswith(needs)
