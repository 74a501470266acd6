"""The workload page's contract: editing the trace file re-executes only the pages that read it."""

from __future__ import annotations

from tests.conftest import HAND, write_trace


def test_editing_the_trace_file_re_executes_only_the_pages_that_read_it(tmp_path):
    from kvtier.inputs.assumptions import seed
    from kvtier.pipeline.build import plan
    from kvtier.report.pages import PAGES
    from tests.conftest import ROOT

    path = write_trace(tmp_path / "hand.jsonl", HAND)
    a = seed().with_values({"workload.trace": str(path), "workload.block_tokens": "4"}, source="test")
    before = {job.name: job.inputs_hash for job in plan(ROOT, a)}
    write_trace(path, HAND[:4])
    after = {job.name: job.inputs_hash for job in plan(ROOT, a)}
    # the assumptions page shows the key; the workload page analyses the trace; the cost page sizes its mix
    changed = sorted(name for name in before if before[name] != after[name])
    assert changed == sorted(p.notebook for p in PAGES if "workload.trace" in p.keys)
    # by hand, so that the line above cannot pass on an empty registry
    assert {"00_assumptions", "12_workload", "13_cost"} <= set(changed) and "02_fetch" not in changed
