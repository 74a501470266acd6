"""The build never loses a user's files, never publishes a half-built or stale book, and never hangs.

Each test reproduces a case found by trying `kvtier build` as an adversarial or unlucky
user would: --out guards, one build at a time, crash-safe publishing, complete
rebuild inputs, the caller's matplotlib backend, permissions, signals.
"""

from __future__ import annotations

import json
import os
import re
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
from kvtier.pipeline import execution, outdir
from tests.conftest import ROOT, build, copy_project, copy_small_project, run_cli, snapshot

pytestmark = pytest.mark.surface("build")


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
    # a web app's manifest.json does not pass for a build's: without the mark the directory is not replaced
    app = tmp_path / "app"
    (app / "src").mkdir(parents=True)
    (app / "manifest.json").write_text('{"name": "pwa"}')
    (app / "src" / "app.js").write_text("code")
    one_error_line(run_cli("build", "--out", str(app)), "was not written by kvtier build (no .kvtier-build mark)")
    assert (app / "src" / "app.js").read_text() == "code"


def test_a_bad_out_is_refused_before_any_table_is_computed(tmp_path, monkeypatch):
    # the tables take seconds: an --out that cannot be written is refused before them
    from kvtier.inputs.assumptions import load_assumptions

    def no_tables(scenario):
        raise AssertionError("tables computed before --out was checked")

    monkeypatch.setattr(pipeline.pages, "csv_texts", no_tables)
    app = tmp_path / "app"
    (app / "src").mkdir(parents=True)
    (app / "src" / "app.js").write_text("code")
    with pytest.raises(KvtierError, match="was not written by kvtier build"):
        pipeline.build(load_assumptions(), out=app, root=ROOT, log=lambda line: None)
    assert (app / "src" / "app.js").read_text() == "code"


def test_a_manifest_holding_a_json_list_is_one_line(tmp_path):
    out = tmp_path / "odd"
    out.mkdir()
    (out / "manifest.json").write_text("[]")
    one_error_line(run_cli("build", "--out", str(out)), "was not written by kvtier build")
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
    one_error_line(run_cli("build", "--out", out), message)


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


def test_sigkill_while_notebooks_run_leaves_the_build_and_the_next_build_cleans_up(small_build, tmp_path):
    project, built = small_build
    out = tmp_path / "kept"
    shutil.copytree(built, out)
    before = snapshot(out)
    cmd = [sys.executable, "-m", "kvtier", "build", "--out", str(out), "--set", "bandwidth.mid=100GB/s"]
    proc = subprocess.Popen(cmd, cwd=project, stderr=subprocess.PIPE, text=True)
    for line in proc.stderr:
        if "executing" in line:
            break
    proc.kill()
    proc.wait()
    assert snapshot(out) == before
    leftovers = list(tmp_path.glob(".kept.kvtier-new-*"))
    assert leftovers, "a SIGKILL runs no cleanup: the staging directory stays behind"
    again = build(out, "--set", "bandwidth.mid=100GB/s", "--jobs", "2", cwd=project)
    assert again.returncode == 0, again.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept"], "leftovers and lock are gone"


def kernels_running(tmpdir: Path) -> list[int]:
    """Process ids of the kernels whose connection file lies under ``tmpdir`` (the build's TMPDIR)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            cmdline = (proc / "cmdline").read_bytes()
        except OSError:  # not a process, or it ended
            continue
        if str(tmpdir).encode() in cmdline and b"kernel" in cmdline:
            found.append(int(proc.name))
    return found


def first_cell(page: Path, code: str) -> None:
    """Make ``code`` the first code cell of the MyST page ``page`` (before its parameters cell)."""
    text = page.read_text()
    at = text.index("```{code-cell}")
    page.write_text(text[:at] + f"```{{code-cell}}\n{code}\n```\n\n" + text[at:])


@pytest.mark.parametrize(
    ("sig", "status", "word"), [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")]
)
def test_ctrl_c_or_sigterm_stops_the_kernels_cleans_up_and_says_so(small_build, tmp_path, sig, status, word):
    project, built = small_build
    out, tmpdir = tmp_path / "kept", tmp_path / "tmp"
    tmpdir.mkdir()
    shutil.copytree(built, out)
    before = snapshot(out)
    cmd = [sys.executable, "-m", "kvtier", "build", "--out", str(out), "--set", "block_tokens=32", "--jobs", "1"]
    env = {**os.environ, "TMPDIR": str(tmpdir)}  # the kernels' connection files (and so their command lines)
    proc = subprocess.Popen(cmd, cwd=project, stderr=subprocess.PIPE, text=True, env=env)
    for line in proc.stderr:
        if "executing" in line:
            break
    while not kernels_running(tmpdir) and proc.poll() is None:  # a notebook's kernel is up
        time.sleep(0.1)
    proc.send_signal(sig)
    rest = proc.stderr.read()
    assert proc.wait(timeout=120) == status
    # the line says what the build left, once no notebook can write into a staging directory it removed
    # one line besides progress: nbclient's log of each kernel it found killed is not shown
    assert [line for line in rest.splitlines() if not line.startswith("[")] == [
        f"kvtier: {word}; {out} was not changed, and nothing of this build is left running or on disk"
    ], rest
    assert kernels_running(tmpdir) == [], "every kernel was stopped before the build ended"
    assert list(tmpdir.iterdir()) == [], "the kernels' directories are removed"
    assert snapshot(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept", "tmp"], "staging and lock removed"


class Stopped(BaseException):
    """What the CLI's SIGTERM handler raises (kvtier.commands._Terminated), in this test."""


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


def test_a_notebook_that_raises_stops_the_other_kernels_and_leaves_nothing_beside_the_output(tmp_path):
    # with --jobs 2, 01 fails at once while 02 sleeps: 02's kernel is killed before the build removes its
    # staging directory, so it never wakes up to write into it
    project, out, tmpdir = copy_small_project(tmp_path), tmp_path / "run", tmp_path / "tmp"
    tmpdir.mkdir()
    woke = tmp_path / "02 woke up"
    first_cell(project / "notebooks" / "01_block_unit.md", "raise RuntimeError('boom')")
    first_cell(
        project / "notebooks" / "02_fetch.md",
        f"import pathlib, time\ntime.sleep(30)\npathlib.Path({str(woke)!r}).write_text('ran on')",
    )
    # beside the output: a user's folder that is only named like a staging directory
    theirs = tmp_path / f"{outdir.staging_prefix(out)}{'b' * 32}"
    theirs.mkdir()
    (theirs / "notes.txt").write_text("mine")
    proc = build(out, "--jobs", "2", cwd=project, env={**os.environ, "TMPDIR": str(tmpdir)})
    assert proc.returncode == 2, proc.stderr
    assert "kvtier: error: notebook 01_block_unit.md failed: RuntimeError: boom" in proc.stderr
    assert f"left {theirs} as it is" in proc.stderr
    assert "Error occurred" not in proc.stderr and "Traceback" not in proc.stderr  # 02's killed kernel is not news
    assert not woke.exists(), "the other notebook's kernel was stopped"
    assert kernels_running(tmpdir) == [] and list(tmpdir.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["small-project", "tmp", theirs.name])
    assert (theirs / "notes.txt").read_text() == "mine"


def _tree(root: Path, files: dict[str, str | None]) -> None:
    """Write ``files`` (path -> text; None makes a link to /etc/passwd) under ``root``."""
    root.mkdir()
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if text is None:
            path.symlink_to("/etc/passwd")
        else:
            path.write_text(text)


NB = "src/notebooks/02_fetch.ipynb"
NOTEBOOK = json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
LEFTOVERS = {
    # name tail, files, removed by the next build?
    "marked": ("c" * 32, {outdir.MARK: json.dumps({"kvtier_build": "c" * 32}), NB: "{"}, True),
    "unmarked-empty": ("d" * 32, {}, True),  # killed between mkdir and the mark
    "unmarked-notebook": ("e" * 32, {NB: NOTEBOOK}, False),
    "unmarked-file-at-top": ("4" * 32, {"report.ipynb": NOTEBOOK}, False),
    "unmarked-link": ("5" * 32, {"src/notebooks/l.ipynb": None}, False),
    "not-a-build-id": ("mine", {NB: NOTEBOOK}, False),
    "uppercase-id": ("A" * 32, {}, False),
}
"""Directories beside an output named ``.OUT.kvtier-new-<tail>``: 2 a dead build left, 5 it may not have."""


@pytest.mark.parametrize(("tail", "files", "removed"), LEFTOVERS.values(), ids=LEFTOVERS)
def test_the_next_build_removes_what_a_dead_build_left_and_nothing_else(tmp_path, tail, files, removed):
    target = tmp_path / "run"
    leftover = tmp_path / f"{outdir.staging_prefix(target)}{tail}"
    _tree(leftover, files)
    before = snapshot(leftover)
    outdir.recover(outdir.journal_path(target), [target])
    assert leftover.exists() is not removed
    if not removed:
        assert snapshot(leftover) == before, "kept byte for byte"
        # the build names each one it keeps that is named as its own (a build id: 32 lowercase hex digits)
        named = outdir.foreign_staging(target) == [leftover]
        assert named is bool(re.fullmatch("[0-9a-f]{32}", tail))


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
    proc = run_cli("build", "--out", str(tmp_path / "out"), cwd=project)
    one_error_line(proc, "_toc.yml: lists 'notebooks/03_regenerate', but no such page exists")
    assert not (tmp_path / "out").exists()


def test_a_missing_config_is_one_line(tmp_path):
    project = copy_project(tmp_path)
    (project / "_config.yml").unlink()
    proc = run_cli("build", "--out", str(tmp_path / "out"), cwd=project)
    one_error_line(proc, "_config.yml: missing (the book needs _config.yml and _toc.yml)")


def test_damaged_outputs_are_rebuilt(small_build, tmp_path):
    project, built = small_build
    out = tmp_path / "damaged"
    shutil.copytree(built, out)
    (out / "figures" / "fig_fetch.svg").unlink()
    (out / "notebooks" / "01_block_unit.ipynb").write_text("{ not json")
    proc = build(out, cwd=project)
    assert proc.returncode == 0, proc.stderr
    # the corrupt cached notebook is executed again, the other one reused; the lost figure is back
    assert "executed 1, reused 1" in proc.stderr, proc.stderr
    for rel in ("figures/fig_fetch.svg", "notebooks/01_block_unit.ipynb"):
        assert (out / rel).read_bytes() == (built / rel).read_bytes(), rel


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


# ---------------------------------------------------------------------------
# the published book is the same bytes from any checkout, whatever HOME, TMPDIR, MPLBACKEND and --jobs:
# one build, forced over a copy of the seed build, compared with it byte for byte
# ---------------------------------------------------------------------------


def copy_checkout(dest: Path) -> Path:
    """A copy of the checkout (package, pages, book, configuration) at ``dest``, without caches."""
    dest.mkdir(parents=True)
    for name in ("kvtier", "notebooks", "book"):
        shutil.copytree(ROOT / name, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("_config.yml", "_toc.yml"):
        shutil.copy2(ROOT / name, dest / name)
    return dest


def test_a_forced_build_from_another_checkout_with_an_unwritable_home_publishes_the_same_bytes(seed_build, tmp_path):
    # HOME inside a regular file: no one (root included, as in CI containers) can create ~/.config
    # or ~/.ipython there; matplotlib would make /tmp/matplotlib-<random> and print a warning naming
    # it into every notebook, so into html/_sources and notebooks/, and IPython would leave a temporary
    # directory. MPLBACKEND=Agg, as a server or CI runner sets it, must not turn the figures into text.
    # --force over a copy of the seed build executes every notebook again; --jobs 3 runs three at once.
    checkout = copy_checkout(tmp_path / "elsewhere" / "a-checkout-at-another-path")
    (tmp_path / "not-a-dir").write_text("")
    tmpdir, out = tmp_path / "tmp", tmp_path / "out"
    tmpdir.mkdir()
    shutil.copytree(seed_build, out)
    env = {
        **os.environ,
        "HOME": str(tmp_path / "not-a-dir" / "home"),
        "TMPDIR": str(tmpdir),
        "MPLBACKEND": "Agg",
        "PYTHONPATH": str(checkout),  # the copy's own package, as a second clone would run it
    }
    proc = build(out, "--force", "--jobs", "3", cwd=checkout, env=env)
    n = len(list((ROOT / "notebooks").glob("*.md")))
    assert f"executed {n}, reused 0" in proc.stderr, proc.stderr
    assert proc.returncode == 0, proc.stderr
    # what legitimately differs: the build id (random, the ownership mark), in .kvtier-build and manifest.json
    for part in ("html", "notebooks", "figures", "tables"):
        assert snapshot(out / part) == snapshot(seed_build / part), part
    manifests = [json.loads((d / outdir.MANIFEST).read_text()) for d in (out, seed_build)]
    assert [m.pop("build_id") for m in manifests] == [outdir.read_mark(d) for d in (out, seed_build)]
    assert manifests[0] == manifests[1]
    for rel, data in snapshot(out).items():
        for path in (str(tmp_path), str(ROOT), "matplotlib-", "/tmp/"):
            assert path.encode() not in data, (rel, path)
    assert list(tmpdir.iterdir()) == [], "no temporary directory outlives the build"


def test_a_staging_directory_that_cannot_be_removed_wholly_keeps_its_mark(tmp_path, monkeypatch):
    # a removal cut short leaves its mark, which goes last and only once all else is gone, so that the next
    # build deletes what rmtree had not reached (unmarked, no build would)
    staging = outdir.make_staging(tmp_path / "run", outdir.new_build_id())
    (staging / "src" / "notebooks").mkdir(parents=True)
    (staging / "src" / "notebooks" / "00_assumptions.ipynb").write_text("{")
    (staging / "html").mkdir()
    monkeypatch.setattr(shutil, "rmtree", lambda path, ignore_errors=False: None)  # removes nothing
    outdir.remove_staging(staging)
    assert outdir.read_mark(staging) is not None
    monkeypatch.undo()
    outdir.recover(outdir.journal_path(tmp_path / "run"), [tmp_path / "run"])
    assert list(tmp_path.iterdir()) == []
