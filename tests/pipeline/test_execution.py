"""kvtier.pipeline.execution: a page run with papermill, and signals held while a step must not stop halfway."""

from __future__ import annotations

import os
import tempfile

import nbformat
import pytest

from kvtier.pipeline import execution

POSIX = pytest.mark.skipif(os.name != "posix", reason="Unix sockets")


@POSIX
def test_execute_runs_the_page_and_removes_its_kernel_directory(tmp_path, monkeypatch):
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    page = tmp_path / "99_tiny.md"
    page.write_text(
        "---\njupytext:\n  text_representation:\n    format_name: myst\n"
        "kernelspec:\n  name: python3\n  display_name: Python 3\n  language: python\n---\n\n"
        "```{code-cell}\n:tags: [parameters]\nx = 1\n```\n\n```{code-cell}\nprint(6 * 7)\n```\n"
    )
    out = tmp_path / "out.ipynb"
    execution.execute(execution.NotebookJob("99_tiny", page, {"x": 2}, "h"), out, tmp_path)
    nb = nbformat.read(out, as_version=4)
    assert nb.cells[-1].outputs[0]["text"] == "42\n"  # 6 x 7
    assert list(temp.iterdir()) == []
