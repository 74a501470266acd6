"""The build never loses a user's files, never publishes a half-built or stale book, and never hangs.

Each test reproduces a case found by trying `kvtier build` as an adversarial or unlucky
user would (issue 8): --out guards, one build at a time, crash-safe publishing, complete
rebuild inputs, the caller's matplotlib backend, permissions, signals.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from kvtier.errors import KvtierError
from kvtier.pipeline import build as pipeline
from kvtier.pipeline import outdir
from tests.conftest import ROOT, build, copy_project, snapshot


def one_error_line(proc: subprocess.CompletedProcess[str], message: str) -> None:
    """Exit status 2, one line on stderr that holds ``message``, no traceback."""
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stderr
    assert len(lines) == 1 and lines[0].startswith("kvtier: error: ") and message in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr


def fake_build(directory: Path, files: dict[str, str]) -> str:
    """A directory as a build leaves it: files, the mark, a manifest listing the files. Returns the build id."""
    directory.mkdir(parents=True)
    for rel, text in files.items():
        (directory / rel).parent.mkdir(parents=True, exist_ok=True)
        (directory / rel).write_text(text)
    build_id = outdir.new_build_id()
    outdir.write_mark(directory, build_id)
    listed = {rel: "0" * 64 for rel in files}
    (directory / outdir.MANIFEST).write_text(json.dumps({"build_id": build_id, "files": listed}))
    return build_id


# ---------------------------------------------------------------------------
# --out never deletes what a build did not write
# ---------------------------------------------------------------------------


def test_a_directory_with_a_manifest_json_of_its_own_is_not_replaced(tmp_path):
    # a web app's manifest.json used to pass for a build's: the whole directory was replaced
    app = tmp_path / "app"
    (app / "src").mkdir(parents=True)
    (app / "manifest.json").write_text('{"name": "pwa"}')
    (app / "src" / "app.js").write_text("code")
    one_error_line(build(app), "was not written by kvtier build (no .kvtier-build mark)")
    assert (app / "src" / "app.js").read_text() == "code"


def test_a_manifest_holding_a_json_list_is_one_line(tmp_path):
    out = tmp_path / "odd"
    out.mkdir()
    (out / "manifest.json").write_text("[]")
    one_error_line(build(out), "was not written by kvtier build")
    assert (out / "manifest.json").read_text() == "[]"


def test_a_file_added_to_a_finished_build_stops_the_next_one(tmp_path):
    out = tmp_path / "run"
    fake_build(out, {"html/index.html": "<html/>"})
    (out / "notes.txt").write_text("mine")
    with pytest.raises(KvtierError, match=r"holds 1 file\(s\) kvtier build did not write \(notes.txt\)"):
        outdir.check_replaceable(out, default=False)
    (out / "notes.txt").unlink()
    outdir.check_replaceable(out, default=False)  # as the build left it: replaceable


def test_a_mark_whose_id_the_manifest_does_not_repeat_is_no_mark(tmp_path):
    out = tmp_path / "forged"
    fake_build(out, {"html/index.html": "<html/>"})
    outdir.write_mark(out, outdir.new_build_id())  # another build's id: the pair no longer agrees
    assert outdir.read_manifest(out) == {}
    with pytest.raises(KvtierError, match="was not written by kvtier build"):
        outdir.check_replaceable(out, default=False)


def test_the_default_output_may_replace_what_jupyter_book_wrote_but_not_a_users_file(tmp_path):
    out = tmp_path / "_build"
    (out / "html").mkdir(parents=True)
    (out / ".doctrees").mkdir()
    outdir.check_replaceable(out, default=True)  # `jupyter-book build .` output
    (out / "thesis.tex").write_text("mine")
    with pytest.raises(KvtierError, match="was not written by kvtier build"):
        outdir.check_replaceable(out, default=True)


@pytest.mark.parametrize(
    ("out", "message"),
    [
        ("", "--out: empty path"),
        ("_build/run1", "inside the default book's _build"),
        ("_build", "that is the default book's directory; leave --out out to build it"),
    ],
)
def test_out_paths_that_would_touch_the_default_book_are_refused(out, message):
    proc = subprocess.run(
        [sys.executable, "-m", "kvtier", "build", "--out", out], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    one_error_line(proc, message)


# ---------------------------------------------------------------------------
# one build at a time
# ---------------------------------------------------------------------------


def test_a_second_build_of_the_same_output_is_refused_while_one_runs(tmp_path):
    out = tmp_path / "busy"
    with outdir.locked(out):
        proc = build(out)
    one_error_line(proc, f"another kvtier build (pid {os.getpid()}) is writing it; wait for it to finish")
    assert not out.exists()
    assert not outdir.lock_path(out).exists(), "the lock file goes with its holder"


def test_a_lock_left_by_a_dead_process_is_taken_over(tmp_path):
    out = tmp_path / "stale"
    # a killed build leaves its lock file; the kernel dropped its flock with the process
    outdir.lock_path(out).write_text("999999\n")
    with outdir.locked(out):
        assert outdir.lock_path(out).read_text() == f"{os.getpid()}\n"
    assert not outdir.lock_path(out).exists()


# ---------------------------------------------------------------------------
# publishing is crash-safe at every step
# ---------------------------------------------------------------------------


class Killed(BaseException):
    """Stands for SIGKILL: nothing after it runs, no cleanup."""


def pair(tmp_path: Path, version: str) -> tuple[Path, Path]:
    """A build directory and a tables directory holding ``version``."""
    build_dir, tables = tmp_path / "_build", tmp_path / "book" / "tables"
    for d in (build_dir, tables):
        d.mkdir(parents=True, exist_ok=True)
        (d / "v.txt").write_text(version)
    return build_dir, tables


def staged_pair(tmp_path: Path, build_dir: Path, tables: Path, build_id: str) -> list[outdir.Swap]:
    swaps = []
    for target in (build_dir, tables):
        staged = outdir.make_staging(target, build_id)
        (staged / "v.txt").write_text("new")
        swaps.append(outdir.Swap(staged, target, outdir.old_path(target, build_id)))
    (swaps[0].staged / outdir.MANIFEST).write_text("{}")  # the build has a manifest, the tables have none
    return swaps


def state(build_dir: Path, tables: Path) -> tuple[str | None, str | None]:
    def read(d: Path) -> str | None:
        return (d / "v.txt").read_text() if (d / "v.txt").exists() else None

    return read(build_dir), read(tables)


# publishing two directories takes four renames; interrupt after each number of them
@pytest.mark.parametrize("renames_before_kill", [0, 1, 2, 3])
def test_a_kill_at_any_rename_is_finished_by_the_next_build(tmp_path, monkeypatch, renames_before_kill):
    build_dir, tables = pair(tmp_path, "old")
    build_id = outdir.new_build_id()
    swaps = staged_pair(tmp_path, build_dir, tables, build_id)
    done = []
    real_rename = os.rename

    def rename(src, dst):
        if len(done) == renames_before_kill:
            raise Killed
        real_rename(src, dst)
        done.append(dst)

    monkeypatch.setattr(outdir, "_rename", rename)
    journal = outdir.journal_path(build_dir)
    with pytest.raises(Killed):
        outdir.publish(journal, swaps)
    assert journal.exists(), "the journal outlives the kill"
    monkeypatch.setattr(outdir, "_rename", real_rename)
    assert outdir.recover(journal, [build_dir, tables]) is True
    assert state(build_dir, tables) == ("new", "new")
    assert not journal.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["_build", "book"], "no leftovers"
    assert sorted(p.name for p in (tmp_path / "book").iterdir()) == ["tables"]
    assert not (tables / outdir.MARK).exists(), "committed tables carry no mark"


def test_a_kill_before_the_journal_keeps_the_old_pair_and_the_next_build_cleans_up(tmp_path, monkeypatch):
    build_dir, tables = pair(tmp_path, "old")
    swaps = staged_pair(tmp_path, build_dir, tables, outdir.new_build_id())

    def killed(path, text):
        raise Killed

    monkeypatch.setattr(outdir, "_write_atomically", killed)
    journal = outdir.journal_path(build_dir)
    with pytest.raises(Killed):
        outdir.publish(journal, swaps)
    assert state(build_dir, tables) == ("old", "old")
    outdir.recover(journal, [build_dir, tables])
    assert state(build_dir, tables) == ("old", "old")
    assert not swaps[0].staged.exists() and not swaps[1].staged.exists(), "marked staging is removed"


def test_staging_left_by_a_killed_build_is_removed_only_when_marked(tmp_path):
    target = tmp_path / "run"
    mine = outdir.make_staging(target, outdir.new_build_id())
    theirs = tmp_path / f"{outdir.staging_prefix(target)}{'f' * 32}"
    theirs.mkdir()
    (theirs / "keep.txt").write_text("not a build's")
    outdir.recover(outdir.journal_path(target), [target])
    assert not mine.exists() and (theirs / "keep.txt").exists()


def test_sigkill_while_notebooks_run_leaves_the_build_and_the_next_build_cleans_up(seed_build, tmp_path):
    out = tmp_path / "kept"
    shutil.copytree(seed_build, out)
    before = snapshot(out)
    cmd = [sys.executable, "-m", "kvtier", "build", "--out", str(out), "--set", "bandwidth.mid=100GB/s"]
    proc = subprocess.Popen(cmd, cwd=ROOT, stderr=subprocess.PIPE, text=True)
    for line in proc.stderr:
        if "executing" in line:
            break
    proc.kill()
    proc.wait()
    assert snapshot(out) == before
    leftovers = list(tmp_path.glob(".kept.kvtier-new-*"))
    assert leftovers, "a SIGKILL runs no cleanup: the staging directory stays behind"
    again = build(out, "--set", "bandwidth.mid=100GB/s", "--jobs", "2")
    assert again.returncode == 0, again.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept"], "leftovers and lock are gone"


@pytest.mark.parametrize(
    ("sig", "status", "word"), [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")]
)
def test_ctrl_c_or_sigterm_is_one_line_and_cleans_up(seed_build, tmp_path, sig, status, word):
    out = tmp_path / "kept"
    shutil.copytree(seed_build, out)
    before = snapshot(out)
    cmd = [sys.executable, "-m", "kvtier", "build", "--out", str(out), "--set", "mfu.typical=35%", "--jobs", "1"]
    proc = subprocess.Popen(cmd, cwd=ROOT, stderr=subprocess.PIPE, text=True)
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if "executing" in line:
            break
    time.sleep(1.0)
    proc.send_signal(sig)
    rest = proc.stderr.read()
    assert proc.wait(timeout=60) == status
    assert rest.strip().splitlines()[-1] == f"kvtier: {word}; nothing was changed", rest
    assert "Traceback" not in rest
    assert snapshot(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept"], "staging and lock removed"


# ---------------------------------------------------------------------------
# every input of the book is an input of the rebuild
# ---------------------------------------------------------------------------


def test_any_file_under_book_changes_the_book_hash(tmp_path):
    project = copy_project(tmp_path)
    before = pipeline._book_hash(project)
    (project / "book" / "_static" / "logo.png").write_bytes(b"\x89PNG fake image")
    assert pipeline._book_hash(project) != before
    (project / "book" / "_static" / "logo.png").unlink()
    (project / "book" / "tables" / "extra.csv").write_text("a\n1\n")  # tables are outputs, not inputs
    assert pipeline._book_hash(project) == before


def test_a_page_listed_in_the_toc_but_missing_is_one_line(tmp_path):
    project = copy_project(tmp_path)
    (project / "notebooks" / "03_regenerate.md").unlink()
    proc = build(tmp_path / "out", cwd=project)
    one_error_line(proc, "_toc.yml: lists 'notebooks/03_regenerate', but no such page exists")
    assert not (tmp_path / "out").exists()


def test_a_missing_config_is_one_line(tmp_path):
    project = copy_project(tmp_path)
    (project / "_config.yml").unlink()
    proc = build(tmp_path / "out", cwd=project)
    one_error_line(proc, "_config.yml: missing (the book needs _config.yml and _toc.yml)")


def test_damaged_outputs_are_rebuilt_and_force_rebuilds_all_whatever_the_backend(seed_build, tmp_path):
    out = tmp_path / "damaged"
    shutil.copytree(seed_build, out)
    (out / "figures" / "fig_ratio.svg").unlink()
    (out / "notebooks" / "02_fetch.ipynb").write_text("{ not json")
    proc = build(out)
    assert proc.returncode == 0, proc.stderr
    # the corrupt cached notebook is executed again, every other one reused; the lost figure is back
    n = len(list((ROOT / "notebooks").glob("*.md")))
    assert f"executed 1, reused {n - 1}" in proc.stderr, proc.stderr
    assert (out / "figures" / "fig_ratio.svg").read_bytes() == (seed_build / "figures" / "fig_ratio.svg").read_bytes()
    assert (out / "notebooks" / "02_fetch.ipynb").read_bytes() == (
        seed_build / "notebooks" / "02_fetch.ipynb"
    ).read_bytes()
    # a server or CI runner that sets MPLBACKEND=Agg used to get a book whose figures were text
    env = {**os.environ, "MPLBACKEND": "Agg"}
    forced = build(out, "--force", env=env)
    assert forced.returncode == 0, forced.stderr
    assert f"executed {n}, reused 0" in forced.stderr
    for svg in sorted((seed_build / "figures").glob("*.svg")):
        assert (out / "figures" / svg.name).read_bytes() == svg.read_bytes(), svg.name


def test_a_figure_that_did_not_render_fails_the_build(tmp_path):
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("glue('fig_x', fig)")
    text = {"application/papermill.record/text/plain": "<Figure size 850x520 with 1 Axes>"}
    meta = {"scrapbook": {"name": "fig_x", "mime_prefix": "application/papermill.record/"}}
    cell.outputs = [nbformat.v4.new_output("display_data", data=text, metadata=meta)]
    nb.cells.append(cell)
    nbformat.write(nb, tmp_path / "page.ipynb")
    with pytest.raises(KvtierError, match=r"notebook page.ipynb: figure 'fig_x' did not render"):
        pipeline.extract_figures(tmp_path / "page.ipynb", tmp_path)


def test_outputs_follow_the_umask(seed_build):
    mask = os.umask(0)
    os.umask(mask)
    expected = 0o777 & ~mask
    for d in (seed_build, seed_build / "html", seed_build / "tables", seed_build / "figures"):
        assert d.stat().st_mode & 0o777 == expected, d
