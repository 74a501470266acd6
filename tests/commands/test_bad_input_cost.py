"""The cost surface's catalogue: traces that are valid but give a cache nothing to work with.

A trace with no reused block, a single request, or every request at one timestamp is valid
input, not bad input: ``kvtier workload`` (in memory and ``--stream``), ``kvtier cost`` and
``kvtier build`` answer it, exit 0, and say in words what each figure means for it.  No
reuse is a real answer (nothing to cache: every tier 0 GiB, 0 USD/h, no share of reuses to
give); a trace that lasts 0 s has no rate (no requests/s, GPU-s/s, GiB held or USD/h), while
its totals and ratios of totals stand.  Nothing prints ``nan`` or ``inf``, nothing raises,
and ``--json`` is strict JSON with ``null`` for an undefined figure and ``notes`` saying why.

An empty trace (no requests, or blank lines only) is what the reader refuses: one line,
exit 2, as every bad input.  The pages are checked in-process for every trace (numbers,
prose, figures, tables); one build, of the worst case, proves the book renders it.

Cases per surface: workload 20 (5 traces x text, --stream, --json, --stream --json), cost 10
(5 traces x text, --json), pages 10 (5 traces x 2 pages), empty trace 8 (2 files x workload,
--stream, cost, build), build 1 (the worst case, marked ``book``).
"""

from __future__ import annotations

import json
import math
import re
import shutil
import warnings
from pathlib import Path

import pytest

from tests.conftest import ROOT, build, run_cli

# (timestamp ms, input_length, hash_ids) per request; 512 tokens a block (the seed's workload.block_tokens)
TRACES: dict[str, list[tuple[int, int, list[int]]]] = {
    # (a) every block distinct: 5 references, 5 unique, over 2 s
    "no-reuse": [(0, 1024, [1, 2]), (1000, 1024, [3, 4]), (2000, 512, [5])],
    # (b) one request: 0 s long, and no block twice
    "one-request": [(0, 1536, [1, 2, 3])],
    # (c) three requests at one timestamp that share a prefix: 7 references, 4 unique, 3 hits, all 0 s apart
    "one-timestamp": [(5, 1024, [1, 2]), (5, 1536, [1, 2, 3]), (5, 1024, [1, 4])],
    # (a) and (c) at once, the worst case
    "no-reuse-one-timestamp": [(7, 1024, [1, 2]), (7, 512, [3]), (7, 1536, [4, 5, 6])],
    # prompts of 0 tokens: requests without a single block
    "no-blocks": [(0, 0, []), (10, 0, [])],
}
NO_REUSE = ("no-reuse", "one-request", "no-reuse-one-timestamp", "no-blocks")
ZERO_S = ("one-request", "one-timestamp", "no-reuse-one-timestamp")
UNDEFINED = re.compile(r"\b(?:[Nn]a[Nn]|NAN|[Ii]nf(?:inity)?|INF|None)\b")
"""What an undefined number must never print as (``infinite``, ``none`` and ``n/a`` are words, not these)."""


def write_trace(path: Path, name: str) -> Path:
    path.write_text(
        "".join(
            json.dumps({"timestamp": ts, "input_length": n_in, "output_length": 10, "hash_ids": ids}) + "\n"
            for ts, n_in, ids in TRACES[name]
        )
    )
    return path


def strict_json(text: str) -> dict:
    """``text`` parsed as strict JSON: a NaN or Infinity token fails the test."""

    def refuse(token: str) -> None:
        raise AssertionError(f"non-JSON token {token} in the output")

    return json.loads(text, parse_constant=refuse)


BUILD = ("--set", "workload.deployment=build")
"""Price the trace with the seed set itself, the source chapter's Llama-3-70B whose hand arithmetic these tests
check, rather than the named deployment the seed prices the trace pages for."""


def ok(*argv: str) -> str:
    """Run the CLI; it must exit 0 with nothing on stderr and no undefined number on stdout."""
    proc = run_cli(*argv)
    shown = f"rc={proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    assert proc.returncode == 0 and proc.stderr == "", shown
    assert not UNDEFINED.search(proc.stdout), shown
    return proc.stdout


# ---------------------------------------------------------------------------
# kvtier workload, in memory and --stream
# ---------------------------------------------------------------------------

WORKLOAD_TEXT = {
    "no-reuse": [
        "3 requests over 2.00 s (1.50 per s)",  # 3 requests over 2,000 ms
        "blocks: 5 references, 5 unique; an infinite cache hits 0.0 % of blocks",
        "  reuse intervals: none",
        "nothing to cache: no block is referenced twice, so a tier of any size hits nothing and saves no prefill",
    ],
    "one-request": ["1 request (0 s: no rate per second)", "nothing to cache: no block is referenced twice"],
    "one-timestamp": [
        "3 requests at one timestamp (0 s: no rate per second)",
        # 3 hits of 7 references: 42.9 %; the hits' GPU-s/s and link-s/s are rates of a trace of 0 s: n/a
        "an infinite cache hits 42.9 % of blocks",
        "  reuse interval p50 0 s  p90 0 s  p99 0 s  max 0 s",
        "n/a: all 3 requests share one timestamp: the trace lasts 0 s and has no rate per second",
    ],
    "no-reuse-one-timestamp": [
        "3 requests at one timestamp (0 s: no rate per second)",
        "nothing to cache: no block is referenced twice",
    ],
    "no-blocks": [
        "2 requests over 10.00 ms (200.00 per s)",
        "nothing to cache: no prompt holds a block, every input_length being 0",
    ],
}


@pytest.mark.surface("workload")
@pytest.mark.parametrize("name", list(TRACES))
def test_workload_says_what_a_trace_without_reuse_or_duration_gives(tmp_path, name):
    out = ok("workload", str(write_trace(tmp_path / f"{name}.jsonl", name)))
    for needle in WORKLOAD_TEXT[name]:
        assert needle in out, out
    if name == "one-timestamp":
        # the tier table's rows: 50 % at 2 blocks of 160 MiB (stack distances of the hits 1, 1, 2: 2 of 3 below 2)
        assert re.search(r"50 % +320\.00 MiB +28\.6 % +28\.6 % +n/a +n/a", out), out


# --stream is accepted and prints the whole report, as without it (the command always streams)
STREAM_TEXT = {
    "no-reuse": ["3 requests over", "nothing to cache: no block is referenced twice, so a tier of any size hits"],
    "one-request": ["1 request (0 s", "nothing to cache: no block is referenced twice"],
    # stack distances of the 3 hits: 1, 1, 2; 95 % of 3 hits needs distance 2 caught: 3 blocks of 160 MiB
    "one-timestamp": ["3 requests at one timestamp", "   95 %       480.00 MiB      42.9 %      42.9 %"],
    "no-reuse-one-timestamp": ["nothing to cache: no block is referenced twice"],
    "no-blocks": ["0 references, 0 unique", "nothing to cache: no prompt holds a block"],
}


@pytest.mark.surface("workload")
@pytest.mark.parametrize("name", list(TRACES))
def test_workload_stream_says_what_a_trace_without_reuse_gives(tmp_path, name):
    out = ok("workload", str(write_trace(tmp_path / f"{name}.jsonl", name)), "--stream")
    for needle in STREAM_TEXT[name]:
        assert needle in out, out
    if name in NO_REUSE:
        assert "target" not in out, out  # no table of zeros: the sentence says it


def _fetch_ratio_by_hand() -> float:
    """Recompute / fetch over CXL 2.0 x8 for the one-timestamp trace's hits, totals over the trace (no rate)."""
    # hits: request 2 hits blocks 1, 2 (1,024 tokens), request 3 block 1 (512 tokens)
    # inside a batch a prefix of h tokens costs 2 x 70e9 x h + 2,621,440 x h (h + 1) / 2 FLOP at 125 TFLOP/s
    recompute = sum(2 * 70e9 * h + 2_621_440 * h * (h + 1) / 2 for h in (1024, 512)) / 125e12
    # fetching them in the serving engine's 16-token blocks: 1,024 / 16 + 512 / 16 = 96 copies x 9.049 µs
    # (tier_latency.host_link) + 1,536 tokens x 327,680 B / 31.5e9 B/s
    fetch = 96 * 9.049e-6 + 1536 * 327_680 / 31.5e9
    return recompute / fetch


@pytest.mark.surface("workload")
@pytest.mark.parametrize("name", list(TRACES))
def test_workload_json_is_strict_with_null_and_a_reason(tmp_path, name):
    # priced with the seed set itself (workload.deployment build): the hand arithmetic is the chapter's model's
    rep = strict_json(ok("workload", str(write_trace(tmp_path / f"{name}.jsonl", name)), "--json", *BUILD))
    notes = rep["notes"]
    assert ("no_reuse" in notes) == (name in NO_REUSE), notes
    assert ("zero_duration" in notes) == (name in ZERO_S), notes
    tiers = {t["target_pct"]: t for t in rep["tiers"]}
    if name in NO_REUSE:
        # nothing to cache: every capacity 0, every hit ratio 0, no interval to take a percentile of
        assert all(t["capacity_blocks"] == 0 and t["hit_ratio_blocks"] == 0 for t in rep["tiers"])
        assert rep["blocks"]["reuse_interval_s"]["p50"] is None
        assert "nothing to cache" in notes["no_reuse"] and "reuse_interval_s" in notes["no_reuse"]
        # no hits: 0 GPU-s/s saved (a real zero, even over 0 s), and recompute / fetch 0 / 0: null
        assert tiers[100]["in_batch_gpu_s_per_s"] == 0.0 and tiers[100]["links"][0]["in_batch_over_fetch"] is None
    if name in ZERO_S:
        assert rep["trace"]["duration_s"] == 0.0 and rep["trace"]["requests_per_s"] is None
    if name == "one-timestamp":
        assert (tiers[50]["capacity_blocks"], tiers[95]["capacity_blocks"]) == (2, 3)
        assert tiers[95]["in_batch_gpu_s_per_s"] is None and tiers[95]["hit_bytes_per_s"] is None
        link = next(k for k in tiers[95]["links"] if k["link"] == "cxl2-x8")
        assert link["fetch_link_s_per_s"] is None
        # a ratio of totals is defined without a duration: about 108.5 (the rates' ratio, were there a rate)
        assert link["in_batch_over_fetch"] == pytest.approx(_fetch_ratio_by_hand(), rel=1e-9)
        assert "every other *_per_s rate are null" in notes["zero_duration"]


@pytest.mark.surface("workload")
@pytest.mark.parametrize("name", list(TRACES))
def test_workload_stream_json_is_strict_with_a_reason(tmp_path, name):
    rep = strict_json(ok("workload", str(write_trace(tmp_path / f"{name}.jsonl", name)), "--stream", "--json"))
    assert ("no_reuse" in rep["notes"]) == (name in NO_REUSE), rep["notes"]
    # --stream prints the whole report (the command always streams): a trace of 0 s has no rates, and says why
    assert ("zero_duration" in rep["notes"]) == (name in ZERO_S), rep["notes"]
    assert rep["trace"]["requests"] == len(TRACES[name])


# ---------------------------------------------------------------------------
# kvtier cost --set workload.trace=FILE
# ---------------------------------------------------------------------------

# 3 reuses inside a batch, each a 512-token block of Llama-3-70B recomputed at 25 % of 500 TFLOP/s with its attention
# over the prompt before it: two first blocks (positions 1..512: 512 x 513 / 2 = 131,328 attended positions) and one
# second block (positions 513..1,024: (1,024 x 1,025 - 512 x 513) / 2 = 393,472), at 2,621,440 FLOP a position:
# (3 x 2 x 70e9 x 512 + 2,621,440 x (2 x 131,328 + 393,472)) FLOP / 125e12 FLOP/s = 1.73408 s, x 3 USD/h / 3,600
RECOMPUTE_3_USD = (3 * 2 * 70e9 * 512 + 2_621_440 * (2 * 131_328 + 393_472)) / 125e12 * 3 / 3600  # 1.4451e-3 USD

COST_TEXT = {
    **{
        name: [
            "nothing to cache: no block is referenced twice, so no tier holds a block and neither the mix nor"
            " recomputing every reuse costs anything (0 USD/h)",
            # the LRU section says it is empty (issue 43: it was left out without a word)
            "trace: none, nothing to cache: no block is referenced twice.",
        ]
        for name in ("no-reuse", "one-request", "no-reuse-one-timestamp")
    },
    "no-blocks": [
        "nothing to cache: no prompt holds a block, every input_length being 0",
        "trace: none, nothing to cache: no prompt holds a block, every input_length being 0.",
    ],
    # every reuse 0 s after its block's last use: HBM serves it, holding it 0 s (0 USD); recomputing costs 0.00145 USD
    "one-timestamp": [
        "regenerated inside a batch, with host DRAM: HBM (100 %); over the trace 0 USD against 0.00145 USD"
        " recomputing every reuse (100.0 % less)",
        "n/a: all 3 requests share one timestamp: the trace lasts 0 s and has no rate per second, so GiB held and"
        " costs per hour",
    ],
}


@pytest.mark.surface("cost")
@pytest.mark.parametrize("name", list(TRACES))
def test_cost_says_what_a_trace_without_reuse_or_duration_gives(tmp_path, name):
    out = ok("cost", "--set", f"workload.trace={write_trace(tmp_path / f'{name}.jsonl', name)}", *BUILD)
    for needle in COST_TEXT[name]:
        assert needle in out, out
    assert "The input that moves the cxl2-x8 interval most: cost.cxl_gb" in out  # the rest of the report stands


@pytest.mark.surface("cost")
@pytest.mark.parametrize("name", list(TRACES))
def test_cost_json_is_strict_with_null_and_a_reason(tmp_path, name):
    trace = write_trace(tmp_path / f"{name}.jsonl", name)
    rep = strict_json(ok("cost", "--json", "--set", f"workload.trace={trace}", *BUILD))
    mix = rep["mix"]["regenerated inside a batch, with host DRAM"]
    assert ("no_reuse" in rep["notes"]) == (name in NO_REUSE), rep["notes"]
    if name in NO_REUSE:
        # nothing to cache: 0 GiB, 0 USD/h against 0 USD/h; no share of no reuse, no saving of nothing
        assert set(mix["bytes_held"].values()) == {0.0} and (mix["usd_per_s"], mix["recompute_all_usd_per_s"]) == (0, 0)
        assert set(mix["share"].values()) == {None} and mix["saving"] is None
    if name == "one-timestamp":
        assert set(mix["bytes_held"].values()) == {None} and mix["usd_per_s"] is None
        assert mix["share"] == {"hbm": 1.0, "dram": 0.0, "cxl": 0.0, "nvme": 0.0, "recompute": 0.0}
        assert (mix["usd"], mix["saving"]) == (0.0, 1.0)
        assert mix["recompute_all_usd"] == pytest.approx(RECOMPUTE_3_USD, rel=1e-9)
        assert "bytes_held, *_per_s" in rep["notes"]["zero_duration"]


# ---------------------------------------------------------------------------
# the pages, in-process: numbers, prose, figures, tables
# ---------------------------------------------------------------------------

PAGE_WORDS = {
    ("workload", "no-reuse"): {"ceiling_sentence": "That ceiling is zero: no block is referenced twice"},
    ("workload", "one-request"): {"span_sentence": "It holds one request, so it lasts 0 s and has no rate per second."},
    ("workload", "one-timestamp"): {
        "span_sentence": "It holds 3 requests, all at one timestamp, so it lasts 0 s and has no rate per second.",
        # the hits in all, not per second: (2 x 70e9 x 1,024 + ... ) FLOP / 125e12 FLOP/s = 1.73 accelerator-seconds
        "inf_in_batch_clause": "would take 1.73 accelerator-seconds",
        "reuse_paragraph": "Every repeat reference comes in the same millisecond",
    },
    ("workload", "no-reuse-one-timestamp"): {"capacity_sentence": "With nothing to cache, every tier"},
    ("workload", "no-blocks"): {"reuse_paragraph": "There are no reuse intervals to measure: no prompt holds a block"},
    ("cost", "no-reuse"): {"mix_paragraph": "With nothing to cache (no block is referenced twice) the mix is empty"},
    ("cost", "one-request"): {"trace_sentence": "holds 1 request (so it lasts 0 s and has no rate per second), and"},
    ("cost", "one-timestamp"): {
        "mix_paragraph": "Over the whole trace the mix costs 0 USD against 0.00145 USD to recompute every reuse:"
        " 100.0 % less.",
        "mix_tornado_sentence": "the mix has no cost per hour for a price to move",
    },
    ("cost", "no-reuse-one-timestamp"): {"mix_lead": "The trace has nothing to cache (no block is referenced twice)"},
    ("cost", "no-blocks"): {"mix_tornado_sentence": "With nothing to cache it costs nothing at any price"},
}


@pytest.mark.surface("build")
@pytest.mark.parametrize(("page_name", "name"), list(PAGE_WORDS))
def test_the_page_reads_in_words_with_no_undefined_number(tmp_path, page_name, name):
    import importlib

    import matplotlib.pyplot as plt

    from kvtier.inputs.assumptions import seed
    from kvtier.report.preview import fill_text
    from kvtier.report.tables import formatted
    from kvtier.scenario import Scenario

    page = importlib.import_module(f"kvtier.report.pages.{page_name}")
    path = write_trace(tmp_path / f"{name}.jsonl", name)
    s = Scenario(seed().with_values({"workload.trace": str(path)}, source="test"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a 0 / 0 in numpy, an empty mean, a log axis at 0: each is a failure
        n = page.numbers(s)
        assert not [k for k, v in n.items() if isinstance(v, float) and not math.isfinite(v)]
        for key, words in PAGE_WORDS[(page_name, name)].items():
            assert words in n[key], n[key]
        glued = dict(n)
        for figure, draw in page.FIGURES:
            fig, glued[f"{figure}_caption"] = draw(s)
            plt.close(fig)
        prose = fill_text((ROOT / "notebooks" / f"{page.NOTEBOOK}.md").read_text(), glued)
        assert "{glue:text}" not in prose and not UNDEFINED.search(prose), UNDEFINED.findall(prose)
        for table in page.TABLES:
            shown = formatted(table[1](s)).to_string()  # NaN shows as n/a
            assert not UNDEFINED.search(shown), shown


# ---------------------------------------------------------------------------
# an empty trace: what the reader refuses, in every command
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", "\n \n\n"], ids=["empty-file", "blank-lines"])
@pytest.mark.parametrize(
    "argv",
    [
        ("workload", "{trace}"),
        ("workload", "{trace}", "--stream"),
        ("cost", "--set", "workload.trace={trace}"),
        ("build", "--set", "workload.trace={trace}", "--out", "{tmp}/out"),  # refused before any notebook runs
    ],
    ids=["workload", "workload-stream", "cost", "build"],
)
def test_an_empty_trace_is_refused_in_one_line(tmp_path, text, argv):
    trace = tmp_path / "empty.jsonl"
    trace.write_text(text)
    proc = run_cli(*(a.replace("{trace}", str(trace)).replace("{tmp}", str(tmp_path)) for a in argv))
    shown = f"rc={proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    assert (proc.returncode, proc.stdout) == (2, ""), shown
    assert proc.stderr == f"kvtier: error: {trace}: the trace holds no requests\n", shown
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.jsonl"]  # nothing written, nothing left behind


# ---------------------------------------------------------------------------
# the book, for the worst case
# ---------------------------------------------------------------------------


@pytest.mark.surface("build")
@pytest.mark.book
def test_a_book_of_a_trace_with_no_reuse_at_one_timestamp_builds_and_says_so(seed_build, tmp_path):
    from tests.pipeline.test_build import page_text

    trace = write_trace(tmp_path / "worst.jsonl", "no-reuse-one-timestamp")
    shutil.copytree(seed_build, tmp_path / "out")  # the pages that read no trace are reused
    proc = build(tmp_path / "out", "--set", f"workload.trace={trace}")
    assert proc.returncode == 0, proc.stderr
    workload_page = page_text(tmp_path / "out" / "html" / "notebooks" / "12_workload.html")
    cost_page = page_text(tmp_path / "out" / "html" / "notebooks" / "13_cost.html")
    for text in (workload_page, cost_page):
        assert not UNDEFINED.search(text), UNDEFINED.findall(text)
    assert "It holds 3 requests, all at one timestamp, so it lasts 0 s and has no rate per second." in workload_page
    assert "That ceiling is zero: no block is referenced twice" in workload_page
    assert "With nothing to cache (no block is referenced twice) the mix is empty for every model" in cost_page
