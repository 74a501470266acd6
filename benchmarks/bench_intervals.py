"""Benchmark of the streamed report's memory on float timestamps (issue 43, item 19): binned reuse intervals.

    .venv/bin/python benchmarks/bench_intervals.py [--refs 20000000]

Each run a fresh process feeds one :class:`kvtier.formulas.cache.stream.LruStream` ``--refs`` one-block
requests over 1,000 blocks, arriving at float times (gaps drawn from 0.1 to 10 ms, seed 0, so nearly every
reuse interval is new), in chunks of 2**20, and reports the distinct intervals held, whether they were binned
(:func:`kvtier.formulas.cache.curve.bin_intervals`) and the process's peak resident memory (VmHWM); once with
the bound in force and once with it lifted (every distinct interval held).  Target: with the bound, the peak
does not grow with the references (within 10 % from a tenth of ``--refs`` to all of them).  Prints a Markdown
table; exit status 0 when the target is met.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

RUN = """
import json, sys, time
import numpy as np
import kvtier.formulas.cache.stream as stream_module
if sys.argv[2] == "lifted":
    stream_module.MAX_EXACT_INTERVALS = 1 << 62
n, rng, t0 = int(sys.argv[1]), np.random.default_rng(0), 0.0
s, t = stream_module.LruStream("per-block"), time.perf_counter()
for lo in range(0, n, 1 << 20):
    k = min(1 << 20, n - lo)
    ts = t0 + np.cumsum(rng.uniform(1e-4, 1e-2, k))
    t0 = float(ts[-1])
    ids = rng.integers(0, 1000, k).astype(np.int64)
    s.feed(ids, np.arange(k + 1, dtype=np.int64), np.full(k, 512, dtype=np.int64), 512, timestamps_s=ts)
peak = next(int(x.split()[1]) for x in open("/proc/self/status") if x.startswith("VmHWM:")) * 1024
print(json.dumps({"s": time.perf_counter() - t, "distinct": int(s.intervals[0].size), "binned": s.binned, "rss": peak}))
"""


def run(refs: int, bound: str) -> dict:
    """One fresh process's measurement (:data:`RUN`)."""
    out = subprocess.run(
        [sys.executable, "-c", RUN, str(refs), bound],
        check=True,
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    return json.loads(out.stdout)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--refs", type=int, default=20_000_000)
    args = ap.parse_args()
    rows = [
        (refs, bound, run(refs, bound)) for bound in ("in force", "lifted") for refs in (args.refs // 10, args.refs)
    ]
    print("| references | bound | distinct intervals held | binned | time (s) | peak memory (MiB) |")
    print("|---|---|---|---|---|---|")
    for refs, bound, r in rows:
        print(f"| {refs:,} | {bound} | {r['distinct']:,} | {r['binned']} | {r['s']:.1f} | {r['rss'] / 2**20:,.0f} |")
    small, large = rows[0][2]["rss"], rows[1][2]["rss"]
    met = large <= 1.1 * small
    print(
        f"\npeak with the bound, {args.refs // 10:,} to {args.refs:,} references: x{large / small:.2f} "
        f"(target <= 1.10): {'met' if met else 'not met'}"
    )
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
