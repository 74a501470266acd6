"""Benchmark of the trace analysis (kvtier.workload): the shipped trace, and a generated one at scale.

    .venv/bin/python benchmarks/bench_workload.py [--refs 10000000] [--seed 0] [--json out.json]

Measures, in this process, on one core (numpy runs these steps single-threaded):

- the shipped conversation trace (about 288,000 block references) read, validated and
  analysed (stack distances, hit ratios, reuse intervals): target under 2 s;
- a seeded synthetic trace (:func:`kvtier.workload.generate_trace`) of at least ``--refs``
  block references analysed (generation not counted): target under 60 s;
- the peak resident memory of the process, and its bytes per block reference.

Prints a Markdown table; exit status 0 when both targets are met, 1 when one is missed.
Timings depend on what else the machine is doing: it is a benchmark, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kvtier import workload  # noqa: E402


def peak_rss_bytes() -> int:
    """Peak resident memory of this process so far (B; Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; 0 when both targets are met, 1 otherwise."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--refs", type=int, default=10_000_000, help="block references in the generated trace (at least)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", metavar="FILE", help="also write the measurements as JSON")
    args = p.parse_args(argv)

    t0 = time.perf_counter()
    conv = workload.Reuse.of(workload.read_trace("conversation"))
    conv.hit_ratio(), conv.capacity_for(0.95), conv.reuse_interval_s
    conv_s = time.perf_counter() - t0

    # about 44 references a request with the generator's defaults
    n_requests = max(1, int(args.refs / 43))
    t0 = time.perf_counter()
    trace = workload.generate_trace(n_requests, seed=args.seed)
    while trace.n_refs < args.refs:
        n_requests = int(n_requests * args.refs / trace.n_refs) + 1
        trace = workload.generate_trace(n_requests, seed=args.seed)
    gen_s = time.perf_counter() - t0
    base_rss = peak_rss_bytes()
    t0 = time.perf_counter()
    big = workload.Reuse.of(trace)
    big.hit_ratio(), [big.capacity_for(x / 100) for x in workload.TARGETS_PCT], big.reuse_interval_s
    big_s = time.perf_counter() - t0
    rss = peak_rss_bytes()

    rows = [
        ("conversation trace: read + analyse", f"{conv.trace.n_refs:,} refs", f"{conv_s:.2f} s", "< 2 s", conv_s < 2),
        (
            "generated trace: analyse",
            f"{trace.n_refs:,} refs, {trace.n_unique:,} blocks",
            f"{big_s:.1f} s",
            "< 60 s",
            big_s < 60,
        ),
        ("generated trace: generate (not a target)", f"{trace.n_requests:,} requests", f"{gen_s:.1f} s", "", True),
        (
            "peak resident memory",
            f"{(rss - base_rss) / trace.n_refs:.0f} B per reference above the trace",
            f"{rss / 2**30:.2f} GiB",
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
                    "generated_refs": trace.n_refs,
                    "generated_unique": trace.n_unique,
                    "generated_analyse_s": big_s,
                    "generate_s": gen_s,
                    "peak_rss_bytes": rss,
                    "rss_before_analysis_bytes": base_rss,
                },
                indent=2,
            )
        )
    return 0 if all(ok for *_, ok in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
