"""kvtier.inputs.probe.writing: the set it writes loads and holds together; the output file's ownership and mode."""

from __future__ import annotations

import os
import stat

import pytest

from kvtier.errors import KvtierError
from kvtier.inputs.assumptions import check_consistency, load_assumptions
from kvtier.inputs.keys import UNCERTAIN_POINTS
from kvtier.inputs.probe import backends, measuring, writing
from kvtier.report.pages import csv_texts
from kvtier.scenario import Scenario


@pytest.fixture(scope="module")
def result(tiny) -> measuring.Result:
    return measuring.measure(
        tiny, backends.cpu_backend(), sizes=(4096, 2**20, 4 * 2**20), sweep=(1, 16, 64), matmul_n=512, reps=3
    )


def test_the_set_it_writes_loads_validates_and_computes_every_table(result, tmp_path):
    out = tmp_path / "measured.yaml"
    writing.write_set(result, out)
    a = load_assumptions(out)
    check_consistency(a)
    assert a.name == "measured-cpu"
    for key in ("fetch_latency", "bandwidth.mid", "peak_flops", "mfu.typical", "regen.mem_bandwidth"):
        rec = a[key]
        assert rec.provenance in ("measured", "derived") and "CPU" in rec.source and "no GPU" in rec.source, key
    assert a.value("bandwidth.mid") == pytest.approx(result.bandwidth, rel=1e-3)  # written to 4 significant digits
    assert a.value("peak_flops") == pytest.approx(result.matmul_rate, rel=1e-3)
    assert a.value("regen.model") == "roofline"
    texts = csv_texts(Scenario(a))  # every table of record computes from it
    assert texts and all(texts.values())
    # no temporary file is left beside it
    assert sorted(p.name for p in tmp_path.iterdir()) == ["measured.yaml"]


def test_a_write_that_fails_leaves_the_old_file_and_no_temporary(result, tmp_path, monkeypatch):
    out = tmp_path / "measured.yaml"
    writing.write_set(result, out)  # an earlier run's file, which a new run may replace
    old = out.read_bytes()

    def broken(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken)
    with pytest.raises(KvtierError, match=f"--out {out}: cannot write \\(No space left on device\\)"):
        writing.write_set(result, out)
    assert out.read_bytes() == old
    assert sorted(p.name for p in tmp_path.iterdir()) == ["measured.yaml"]


def test_the_set_a_run_writes_passes_the_whole_set_check(result, tmp_path):
    # the seed's ranges (500-989 TFLOP/s, 32-121 GB/s, 25-50 %) do not travel with measured values: every
    # range the book draws from is the machine's own and holds the values it stands for
    out = tmp_path / "m.yaml"
    writing.write_set(result, out)
    a = load_assumptions(out)
    check_consistency(a)
    for name, points in UNCERTAIN_POINTS.items():
        low, high = a.value(f"uncertainty.{name}_low"), a.value(f"uncertainty.{name}_high")
        assert all(low <= a.value(p) <= high for p in points), name
        assert "kvtier measure" in a[f"uncertainty.{name}_low"].source, name


# ---------------------------------------------------------------------------
# the output file
# ---------------------------------------------------------------------------


def test_its_own_file_is_replaced_and_a_changed_one_refused(result, tmp_path):
    out = tmp_path / "m.yaml"
    writing.write_set(result, out)
    first = out.read_text()
    assert writing.MARK.match(first.splitlines()[0])
    writing.write_set(result, out)  # a file it wrote, unchanged: replaced
    assert out.read_text() == first
    out.write_text(first.replace("measured-cpu", "my-lab", 1))  # a user's edit: refused, then kept
    edited = out.read_bytes()
    with pytest.raises(KvtierError, match="exists and was not written by kvtier measure, or was changed since"):
        writing.write_set(result, out)
    assert out.read_bytes() == edited
    writing.write_set(result, out, force=True)  # --force replaces it
    assert out.read_text() == first


def test_a_file_that_appears_while_measuring_is_not_lost(result, tmp_path):
    # checked before measuring (nothing there) and again just before the rename: a file a user saved
    # meanwhile is kept, and the temporary file is removed
    out = tmp_path / "m.yaml"
    writing.check_out(out)
    out.write_text("name: my-lab\n")
    with pytest.raises(KvtierError, match="was not written by kvtier measure"):
        writing.write_set(result, out)
    assert out.read_text() == "name: my-lab\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.yaml"]


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600)])
def test_the_file_gets_the_permissions_of_the_umask(result, tmp_path, umask, mode):
    # a new file is 0o666 & ~umask, as any program writes it (not 0o600, mkstemp's mode)
    out = tmp_path / "m.yaml"
    old = os.umask(umask)
    try:
        writing.write_set(result, out)
    finally:
        os.umask(old)
    assert stat.S_IMODE(out.stat().st_mode) == mode
