"""kvtier.pipeline.execution: a page run with papermill, and signals held while a step must not stop halfway."""

from __future__ import annotations

import os
import signal
import tempfile

import nbformat
import pytest

from kvtier.pipeline import execution

POSIX = pytest.mark.skipif(os.name != "posix", reason="Unix sockets")


class Stopped(BaseException):
    """What the CLI's SIGTERM handler raises (kvtier.commands._Terminated), in this test."""


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


def test_a_signal_while_publishing_acts_only_once_the_renames_are_done():
    # the CLI raises on SIGTERM in the main thread: during publishing it waits for the renames to end, so that
    # the line saying what was changed is true
    done = []

    def terminate(signum, frame):
        raise Stopped

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        with pytest.raises(Stopped):
            with execution.signals_held():
                os.kill(os.getpid(), signal.SIGTERM)
                done.append("first rename")
                os.kill(os.getpid(), signal.SIGTERM)  # a second signal is the same request
                done.append("second rename")
        assert signal.getsignal(signal.SIGTERM) is terminate, "the caller's handler is back"
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert done == ["first rename", "second rename"]
