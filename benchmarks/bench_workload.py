"""Benchmark of the trace analysis (kvtier.formulas.cache): the shipped trace, and a generated one at scale.

    .venv/bin/python benchmarks/bench_workload.py [--refs 10000000] [--seed 0] [--json out.json]

Measures on one core (numpy runs these steps single-threaded):

- the shipped conversation trace (about 288,000 block references) read, validated and
  analysed (stack distances, hit ratios, reuse intervals): target under 2 s;
- a seeded synthetic trace (:func:`kvtier.inputs.traces.generate_trace`, shared-prefix trees with
  Zipf-skewed reuse) of at least ``--refs`` block references analysed in memory
  (generation not counted): target under 60 s;
- the same trace written as JSONL and analysed from the file by a fresh process, twice:
  read into memory (``kvtier workload``), and streamed (``kvtier workload --stream``,
  :func:`kvtier.inputs.traces.stream_lru`), each with its time and peak resident memory, per
  block reference and per distinct block.

Prints a Markdown table; exit status 0 when both targets are met, 1 when one is missed.
Timings depend on what else the machine is doing: it is a benchmark, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kvtier.formulas.cache.curve import Reuse  # noqa: E402
from kvtier.formulas.cache.report import TARGETS_PCT  # noqa: E402
from kvtier.inputs import traces  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

CHILD = """
import json, sys, time
from kvtier.formulas.cache.curve import Reuse
from kvtier.inputs import traces
t = time.perf_counter()
if sys.argv[2] == "stream":
    h = traces.stream_lru(sys.argv[1])
    h.capacity_for(0.95)
else:
    r = Reuse.of(traces.read_trace(sys.argv[1]))
    r.capacity_for(0.95), r.reuse_interval_s, r.requests_with_a_distance_that_falls
# VmHWM, not ru_maxrss: Linux carries ru_maxrss over from the parent across fork and exec
hwm = next(int(x.split()[1]) for x in open("/proc/self/status") if x.startswith("VmHWM:"))
print(json.dumps({"s": time.perf_counter() - t, "rss": hwm * 1024}))
"""
"""A fresh process that analyses a trace file, in memory or streamed, and reports its time and peak memory."""


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; 0 when both targets are met, 1 otherwise."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--refs", type=int, default=10_000_000, help="block references in the generated trace (at least)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", metavar="FILE", help="also write the measurements as JSON")
    args = p.parse_args(argv)

    t0 = time.perf_counter()
    conv = Reuse.of(traces.read_trace("conversation"))
    conv.hit_ratio(), conv.capacity_for(0.95), conv.reuse_interval_s
    conv_s = time.perf_counter() - t0

    # about 13 references a request with these settings; regenerate larger until there are enough
    shape = {"new_blocks": (1, 8)}
    n_requests = max(1, int(args.refs / 12))
    t0 = time.perf_counter()
    trace = traces.generate_trace(n_requests, seed=args.seed, **shape)
    while trace.n_refs < args.refs:
        n_requests = int(n_requests * args.refs / trace.n_refs) + 1
        trace = traces.generate_trace(n_requests, seed=args.seed, **shape)
    gen_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    big = Reuse.of(trace)
    big.hit_ratio(), [big.capacity_for(x / 100) for x in TARGETS_PCT], big.reuse_interval_s
    big_s = time.perf_counter() - t0

    child = {}
    with tempfile.TemporaryDirectory(prefix="kvtier-bench-") as tmp:
        path = Path(tmp) / "generated.jsonl"
        with path.open("w") as f:
            for line in traces.to_jsonl(trace):
                f.write(line + "\n")
        size = path.stat().st_size
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        for mode in ("memory", "stream"):
            proc = subprocess.run(
                [sys.executable, "-c", CHILD, str(path), mode], capture_output=True, text=True, env=env, check=True
            )
            child[mode] = json.loads(proc.stdout)

    n, d = trace.n_refs, trace.n_unique
    mem, stream = child["memory"], child["stream"]
    rows = [
        ("conversation trace: read + analyse", f"{conv.trace.n_refs:,} refs", f"{conv_s:.2f} s", "< 2 s", conv_s < 2),
        ("generated trace: analyse in memory", f"{n:,} refs, {d:,} blocks", f"{big_s:.1f} s", "< 60 s", big_s < 60),
        ("generated trace: generate (not a target)", f"{trace.n_requests:,} requests", f"{gen_s:.1f} s", "", True),
        (
            "its JSONL file read and analysed in memory",
            f"{size / 1e6:,.0f} MB",
            f"{mem['s']:.1f} s, {mem['rss'] / 2**30:.2f} GiB peak ({mem['rss'] / n:.0f} B a reference)",
            "",
            True,
        ),
        (
            "the same file streamed (LRU curve only)",
            f"{size / 1e6:,.0f} MB",
            f"{stream['s']:.1f} s, {stream['rss'] / 2**30:.2f} GiB peak ({stream['rss'] / d:.0f} B a distinct block)",
            "",
            True,
        ),
    ]
    print("| measurement | size | result | target | met |\n|---|---|---|---|---|")
    for what, size, result, target, ok in rows:
        print(f"| {what} | {size} | {result} | {target} | {'yes' if ok else 'NO'} |")
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "conversation_s": conv_s,
                    "generated_refs": n,
                    "generated_unique": d,
                    "generated_analyse_s": big_s,
                    "generate_s": gen_s,
                    "file_bytes": size,
                    "file_in_memory": mem,
                    "file_streamed": stream,
                },
                indent=2,
            )
        )
    return 0 if all(ok for *_, ok in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
