"""Benchmark of the eviction policies and the hierarchy replay on the shipped Mooncake traces.

    .venv/bin/python benchmarks/bench_policies.py [--trace conversation] [--target 0.9] [--json out.json]

For each trace named (default: both shipped ones), on one core:

- each policy of :mod:`kvtier.formulas.cache.policies` (LRU from the stack distances, leaf-first LRU, S3-FIFO,
  Belady's MIN) at the LRU capacity for ``--target`` of the achievable hits and at an eighth of it: its
  hit ratio, its share of MIN's, and the time to replay it;
- an exclusive HBM / DRAM / NVMe hierarchy (an eighth of that capacity, the capacity, twice it) replayed from
  the stack distances (:func:`kvtier.formulas.cache.hierarchy.replay`) against a direct block-by-block simulation of the
  same hierarchy: equal counts (checked), and the speed-up.

Targets: MIN at one capacity under 5 s on the conversation trace (O(n log n), a heap keyed on next use);
the replay from the distances at least 20 times faster than the direct simulation.  Prints a Markdown table;
exit status 0 when every target is met and every count agrees, 1 otherwise.  Timings depend on what else the
machine is doing: it is a benchmark, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import OrderedDict
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kvtier.formulas.cache import hierarchy, policies  # noqa: E402
from kvtier.formulas.cache.curve import Reuse  # noqa: E402
from kvtier.inputs import traces  # noqa: E402


def simulate_exclusive(blocks: list[int], capacity: list[int]) -> tuple[list[int], list[int]]:
    """A demote-on-evict hierarchy replayed block by block: per tier, hits and writes (admissions + demotions)."""
    k = len(capacity)
    tiers: list[OrderedDict[int, None]] = [OrderedDict() for _ in range(k)]
    where: dict[int, int] = {}
    hits, writes = [0] * k, [0] * k
    for b in blocks:
        at = where.get(b)
        if at is not None:
            hits[at] += 1
            del tiers[at][b]
        if at != 0:
            writes[0] += 1
        tiers[0][b] = None
        where[b] = 0
        for i in range(k):
            if len(tiers[i]) <= capacity[i]:
                break
            x, _ = tiers[i].popitem(last=False)
            if i + 1 < k:
                tiers[i + 1][x] = None
                where[x] = i + 1
                writes[i + 1] += 1
            else:
                del where[x]
    return hits, writes


def bench(name: str, target: float) -> tuple[list[tuple], dict]:
    reuse = Reuse.of(traces.read_trace(name))
    t = reuse.trace
    cap = reuse.capacity_for(target)
    caps = [max(cap // 8, 2), cap]
    rows, out = [], {"trace": name, "refs": t.n_refs, "blocks": t.n_unique, "capacities": caps, "policies": {}}
    hits = {}
    for policy in policies.POLICIES:
        t0 = time.perf_counter()
        got = policies.hit_counts(t.blocks, t.starts, reuse.distance, caps, (policy,))[policy]
        secs = (time.perf_counter() - t0) / len(caps)
        hits[policy] = got
        out["policies"][policy] = {"hits": got.tolist(), "s_per_capacity": secs}
    ok_min = True
    for policy in policies.POLICIES:
        got, secs = hits[policy], out["policies"][policy]["s_per_capacity"]
        pct = ", ".join(f"{h / t.n_refs:.1%}" for h in got)
        of_min = ", ".join(f"{h / m:.0%}" for h, m in zip(got, hits["min"], strict=True))
        target_text, met = "", True
        if policy == "min" and name == "conversation":
            target_text, met = "< 5 s", secs < 5
            ok_min = met
        rows.append(
            (
                f"{name}: {policy} at {caps[0]:,} and {caps[1]:,} blocks",
                f"{pct} (of MIN: {of_min})",
                f"{secs:.2f} s a capacity",
                target_text,
                met,
            )
        )
    tiers = [max(cap // 8, 1), cap, 2 * cap]
    t0 = time.perf_counter()
    counts = hierarchy.replay(reuse.distance, tiers, hierarchy.EXCLUSIVE)
    replay_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    sim_hits, sim_writes = simulate_exclusive(t.blocks.tolist(), tiers)
    sim_s = time.perf_counter() - t0
    agree = counts.hits.tolist() == sim_hits and counts.writes.tolist() == sim_writes
    speedup = sim_s / replay_s if replay_s > 0 else float("inf")
    rows.append(
        (
            f"{name}: exclusive hierarchy {tiers} blocks, from the distances",
            "hits " + "/".join(f"{h:.1%}" for h in counts.hit_ratio) + f"; counts equal: {agree}",
            f"{replay_s * 1e3:.0f} ms vs {sim_s:.2f} s simulated ({speedup:,.0f}x)",
            ">= 20x, equal",
            agree and speedup >= 20,
        )
    )
    out.update({"hierarchy": tiers, "replay_s": replay_s, "simulate_s": sim_s, "agree": agree, "min_ok": ok_min})
    return rows, out


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; 0 when every target is met, 1 otherwise."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--trace", action="append", help="a shipped trace name or a path (repeatable; default: both)")
    p.add_argument("--target", type=float, default=0.9, help="share of the achievable hits the capacity is sized for")
    p.add_argument("--json", metavar="FILE", help="also write the measurements as JSON")
    args = p.parse_args(argv)
    rows, results = [], []
    for name in args.trace or ["conversation", "synthetic"]:
        r, out = bench(name, args.target)
        rows += r
        results.append(out)
    print("| measurement | result | time | target | met |\n|---|---|---|---|---|")
    for what, result, secs, target, ok in rows:
        print(f"| {what} | {result} | {secs} | {target} | {'yes' if ok else 'NO'} |")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0 if all(ok for *_, ok in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
