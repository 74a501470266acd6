"""`kvtier build`: bad input is one line and leaves the last build; --out never destroys what a build did not write."""

from __future__ import annotations

import shutil

import pytest

from tests.conftest import ROOT, build, run_cli, snapshot

# ---------------------------------------------------------------------------
# bad input leaves the last good build in place
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--set", "bandwidth.middle=64GB/s"), "unknown key 'bandwidth.middle'"),
        (("--set", "mfu.typical=150%"), "key 'mfu.typical' = '150%' is out of range"),
        (("--set", "model=no-such-model"), "no-such-model"),
        (("--assumptions", "does-not-exist.yaml"), "does-not-exist.yaml: assumptions file not found"),
        (("--jobs", "0"), "--jobs must be at least 1"),
    ],
)
def test_bad_input_is_one_line_and_leaves_the_build(small_build, tmp_path, args, message):
    project, built = small_build
    out = tmp_path / "kept"
    shutil.copytree(built, out)
    before = snapshot(out)
    proc = build(out, *args, cwd=project)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kvtier: error: ") and message in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr
    assert snapshot(out) == before


def test_out_must_not_destroy_what_a_build_did_not_write(tmp_path):
    precious = tmp_path / "thesis"
    precious.mkdir()
    (precious / "chapter1.txt").write_text("years of work")
    for out, message in (
        (precious, "exists and was not written by kvtier build"),
        (ROOT, "that is the project or one of its source folders"),
        (ROOT / "notebooks", "that is the project or one of its source folders"),
        (ROOT.parent, "that is the project or one of its source folders"),
    ):
        proc = run_cli("build", "--out", str(out))
        assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert (precious / "chapter1.txt").read_text() == "years of work"
