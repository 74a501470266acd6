"""Benchmark of the fleet's replay on a long trace (issue 42): time and peak memory per routing, streamed.

    .venv/bin/python benchmarks/bench_fleet_scale.py [--refs 20000000] [--instances 16] [--seed 0] [--json out.json]

On one seeded synthetic trace of at least ``--refs`` block references (:func:`bench_scale.write_trace`,
written as JSONL once, not timed), each in a fresh process: the trace read alone, chunk by chunk
(:class:`kvtier.inputs.traces.RequestChunks`), then for each routing the fleet against one pooled tier as
``kvtier workload TRACE --instances N --routing R --capacity C`` computes it (:func:`kvtier.analysis.fleet_stream`
fed every chunk: both compiled replays, the busy table, the times to first token), the tiers together a 16th of
the distinct blocks.  Reported: each one's time and the process's peak resident memory (VmHWM), and, at the
same size, the Python oracle's replay alone (:func:`kvtier.formulas.cache.fleet_oracle.replay_fleet_py` on the
trace read whole) for ``round-robin`` and ``prefix``.  Targets at 100 M references (extrapolated linearly in
references): every routing within the 4 GiB the streamed analysis keeps to (``benchmarks/README.md``) and under 600 s.
Prints a Markdown table; exit status 0 when the targets are met.  Timings depend on what else the machine does.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from bench_scale import child, write_trace  # noqa: E402

PEAK = 'next(int(x.split()[1]) for x in open("/proc/self/status") if x.startswith("VmHWM:")) * 1024'

READ = f"""
import json, sys, time
from kvtier.inputs import traces
t = time.perf_counter()
refs = requests = 0
for ids, starts, *_ in traces.RequestChunks(sys.argv[1], 512, "mooncake", lambda: 1 << 20):
    refs += ids.size
    requests += starts.size - 1
print(json.dumps({{"s": time.perf_counter() - t, "refs": refs, "requests": requests, "rss": {PEAK}}}))
"""
"""A fresh process that reads the trace chunk by chunk and does nothing else: the parsing's share."""

FLEET = f"""
import json, sys, time
from kvtier import analysis
from kvtier.inputs import traces
from kvtier.scenario import Scenario
s = Scenario()
routing, n, cap = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
t = time.perf_counter()
stream = analysis.fleet_stream(s, cap, 512, n, routing)
for chunk in traces.RequestChunks(sys.argv[1], 512, "mooncake", lambda: 1 << 20):
    stream.feed(*chunk)
rep = stream.report()
print(json.dumps({{"s": time.perf_counter() - t, "node": rep["node"]["hit_ratio_tokens"],
                  "pooled": rep["pooled"]["hit_ratio_tokens"], "imbalance": rep["requests_imbalance"],
                  "entries": int(stream.fleet.st[0]), "rss": {PEAK}}}))
"""
"""A fresh process that streams the trace through :func:`kvtier.analysis.fleet_stream` for one routing."""

ORACLE = f"""
import json, sys, time
from kvtier.formulas.cache import fleet_oracle
from kvtier.inputs import traces
tr = traces.read_trace(sys.argv[1], 512, "mooncake")
n, cap = int(sys.argv[3]), int(sys.argv[4])
t = time.perf_counter()
got = fleet_oracle.replay_fleet_py(tr, n, sys.argv[2], cap)
print(json.dumps({{"s": time.perf_counter() - t, "hits": int(got.hit_blocks.sum()), "rss": {PEAK}}}))
"""
"""A fresh process that reads the trace whole and replays the fleet in Python (the oracle), replay timed alone."""

TARGET_BYTES = 4 * 2**30
TARGET_S = 600.0
AT_REFS = 100_000_000


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; 0 when the targets, extrapolated to 100 M references, are met."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--refs", type=int, default=20_000_000, help="block references in the generated trace (at least)")
    p.add_argument("--instances", type=int, default=16, help="serving instances in the fleet")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--skip-oracle", action="store_true", help="do not time the Python oracle")
    p.add_argument("--json", metavar="FILE", help="also write the measurements as JSON")
    args = p.parse_args(argv)
    from kvtier.formulas.cache import fleet

    with tempfile.TemporaryDirectory(prefix="kvtier-fleet-") as tmp:
        path = Path(tmp) / "generated.jsonl"
        n, distinct, n_req = write_trace(path, args.refs, args.seed)
        cap = max(distinct // 16 // args.instances, 1)
        got = {"read": child(READ, path)}
        for routing in fleet.ROUTINGS:
            got[routing] = child(FLEET, path, routing, str(args.instances), str(cap))
        if not args.skip_oracle:
            for routing in ("round-robin", "prefix"):
                got[f"oracle {routing}"] = child(ORACLE, path, routing, str(args.instances), str(cap))
    bad = [f"{k}: {v['error']}" for k, v in got.items() if "error" in v]
    if bad:
        print("\n".join(bad))
        return 1
    scale = AT_REFS / n
    rows = [
        "| step | time (s) | at 100 M (s) | peak (GiB) | at 100 M (GiB) | per-node hits | pooled hits |",
        "|---|---|---|---|---|---|---|",
    ]
    ok = True
    for name, r in got.items():
        hits = f"{r['node']:.2%} | {r['pooled']:.2%}" if "node" in r else " | "
        label = "read the trace, chunk by chunk" if name == "read" else f"fleet, {name}"
        if name.startswith("oracle"):
            label = f"Python oracle, {name.split()[1]} (replay only, trace read whole)"
        rows.append(
            f"| {label} | {r['s']:.1f} | {r['s'] * scale:.0f} | {r['rss'] / 2**30:.2f} |"
            f" {r['rss'] * scale / 2**30:.2f} | {hits} |"
        )
        if name in fleet.ROUTINGS:
            ok &= r["s"] * scale <= TARGET_S and r["rss"] * scale <= TARGET_BYTES
    print(
        f"{n:,} references, {distinct:,} distinct blocks, {n_req:,} requests; {args.instances} instances of"
        f" {cap:,} blocks (a pool of {cap * args.instances:,})"
    )
    print("\n".join(rows))
    if args.json:
        Path(args.json).write_text(json.dumps({**got, "refs": n, "distinct": distinct, "requests": n_req}))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
