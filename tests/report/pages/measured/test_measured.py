"""The measured page's contract: its tables of record, unique by key and the same under any assumption set."""

from __future__ import annotations

import pytest

from kvtier.inputs.assumptions import load_assumptions
from kvtier.report.pages import measured as page
from kvtier.report.pages.measured import ratio
from kvtier.scenario import Scenario
from tests.conftest import MEASURED_SET, ROOT, build, glued_values


def test_the_borrowed_mfu_brackets_are_said_to_be_borrowed():
    text = (ROOT / "notebooks" / "11_measured.md").read_text()
    assert "borrowed as brackets for the 70B pass" in text
    measured = load_assumptions(MEASURED_SET)
    for key in ("mfu.conservative", "mfu.optimistic", "uncertainty.mfu_low", "uncertainty.mfu_high"):
        assert "not a Llama-3-70B measurement" in " ".join(measured[key].basis.split()), key
    assert "not a Llama-3-70B" not in measured["mfu.typical"].basis


def test_every_table_of_record_has_unique_keys():
    s = Scenario()
    for name, builder, key, *_shown in page.TABLES:
        df = builder(s)
        assert len(df) and not df.duplicated(list(key)).any(), name


@pytest.mark.book
def test_the_book_builds_from_the_measured_set(tmp_path):
    out = tmp_path / "measured"
    proc = build(out, "--assumptions", str(MEASURED_SET), "--jobs", "2")
    assert proc.returncode == 0, proc.stderr
    glued = glued_values(out / "notebooks" / "11_measured.ipynb")
    # the set's in-batch ratio: 2 x 70,553,706,496 x 16 FLOP / (989 TFLOP/s x 55.93 %) = 4.0816 ms
    # over 9.049 µs + 5 MiB / 55.14 GB/s = 104.13 µs: 39.20, the measured slope's 39.8 within 2 %
    assert glued["set_in_batch_ratio"] == pytest.approx(39.20, abs=0.01)
    assert glued["set_name"] == "h200-measured"
    ratio = glued_values(out / "notebooks" / "04_ratio.ipynb")
    assert ratio


def test_the_tables_of_record_do_not_depend_on_the_assumption_set():
    # a rerun with other assumptions must leave the record of a measurement alone; only the page's
    # comparison adds this set's two rows
    other = Scenario(load_assumptions(sets={"bandwidth.mid": "100GB/s", "peak_flops": "989TFLOP/s"}))
    for name, builder, _key, *_shown in page.TABLES:
        assert builder(other).equals(builder(Scenario())), name
    assert len(ratio.comparison_table(other)) == len(ratio.ratio_table(other)) + 2
