"""Benchmark of the trace analysis at scale (issue 27): bounded memory, parsing, sampling, against main's code.

    .venv/bin/python benchmarks/bench_scale.py [--refs 10000000] [--seed 0] [--baseline main] [--json out.json]

On one seeded synthetic trace of at least ``--refs`` block references
(:func:`kvtier.inputs.traces.generate_trace`, written as JSONL once, not timed), each in a
fresh process with its time and peak resident memory (VmHWM):

- ``kvtier workload --json``'s whole analysis as this checkout runs it (the trace streamed,
  in memory bounded by its distinct blocks), against today's implementation, the code of
  ``--baseline`` (a git revision, exported to a temporary directory): its in-memory
  ``workload`` (read, stack distances, report) and its ``--stream`` (the LRU curve only);
  targets for 100 M references: 150 s and 4 GiB;
- parsing: the reader (the compiled scanner, validation) against the baseline's on the same
  lines, and the validating reader (the standard library's ``json``) alone: target 3x;
- ``kvtier cost --json``: the LRU tiers, the hierarchies and the perfect-knowledge mix from two
  streamed passes, measured, with no target of its own (the baseline's in-memory ``cost``
  refused a trace past 33.5 M references);
- the curve sampled at R = 0.01 (SHARDS): its time against the exact pass and its mean and
  largest absolute error (:func:`kvtier.inputs.traces.sampling_error`): targets 30 s for
  100 M references and a mean error under 0.005.

Prints a Markdown table; exit status 0 when every target that applies at this size is met.
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kvtier.inputs import traces  # noqa: E402

CHILD = """
import json, sys, time
t = time.perf_counter()
from kvtier.commands import main
import contextlib, io
out = io.StringIO()
with contextlib.redirect_stdout(out):
    status = main(["workload", sys.argv[1], "--json", *sys.argv[2:]])
s = time.perf_counter() - t
hwm = next(int(x.split()[1]) for x in open("/proc/self/status") if x.startswith("VmHWM:"))
rep = json.loads(out.getvalue()) if status == 0 else {}
import resource
ru = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"s": s, "cpu_s": ru.ru_utime + ru.ru_stime, "rss": hwm * 1024, "status": status,
    "infinite": rep.get("blocks", {}).get(
    "hit_ratio_infinite_blocks"), "tiers": [t.get("capacity_blocks") for t in rep.get("tiers", [])]}))
"""
"""A fresh process that runs ``kvtier workload TRACE --json [options]`` and reports its time and peak memory."""

COST = """
import json, sys, time
t = time.perf_counter()
from kvtier.commands import main
import contextlib, io
out = io.StringIO()
with contextlib.redirect_stdout(out):
    status = main(["cost", "--json", "--set", "workload.trace=" + sys.argv[1]])
s = time.perf_counter() - t
hwm = next(int(x.split()[1]) for x in open("/proc/self/status") if x.startswith("VmHWM:"))
rep = json.loads(out.getvalue()) if status == 0 else {}
import resource
ru = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"s": s, "cpu_s": ru.ru_utime + ru.ru_stime, "rss": hwm * 1024, "status": status,
    "tiers": [t.get("capacity_bytes") for t in rep.get("lru", {}).get("95%", [])]}))
"""
"""A fresh process that runs ``kvtier cost --json`` on the trace (two streamed passes): its time and memory."""

PARSE = """
import json, sys, tempfile, time
from pathlib import Path
from kvtier.inputs import traces
lines = Path(sys.argv[1]).read_text().splitlines()[: int(sys.argv[2])]
fast = sys.argv[3] == "fast" if len(sys.argv) > 3 else True
try:  # this checkout: blocks of lines, scanned or validated
    from kvtier.inputs.traces.load import request_blocks
    from kvtier.inputs.traces.scan import scan_columns
except ImportError:  # an older checkout: one module, or the line-by-line reader alone
    request_blocks = getattr(traces, "request_blocks", None)
    scan_columns = getattr(traces, "scan_columns", None)
if request_blocks is not None:
    with tempfile.TemporaryDirectory() as tmp:
        part = Path(tmp) / "part.jsonl"
        part.write_text("".join(line + "\\n" for line in lines))
        scan_columns(b'{"timestamp":0,"input_length":0,"output_length":0,"hash_ids":[]}', 512)  # load numba
        t = time.perf_counter()
        refs = sum(c.ids.size for c in request_blocks(part, "t", 512, traces.TRACE_FORMATS["mooncake"], fast))
        parse = time.perf_counter() - t
else:  # the baseline: one line at a time
    req = traces._Requests("t", 512, traces.TRACE_FORMATS["mooncake"])
    t = time.perf_counter()
    for number, line in enumerate(lines, 1):
        req.add(number, line)
    parse = time.perf_counter() - t
    refs = len(req.ids)
print(json.dumps({"s": parse, "lines": len(lines), "refs": refs}))
"""
"""A fresh process that times the reader's validating parse of a file's first lines into its arrays."""


def child(code: str, path: Path, *args: str, pythonpath: Path = ROOT) -> dict:
    env = {**os.environ, "PYTHONPATH": str(pythonpath)}
    # run from the trace's directory: ``python -c`` puts the working directory first on the path
    proc = subprocess.run(
        [sys.executable, "-c", code, str(path), *args], capture_output=True, text=True, env=env, cwd=path.parent
    )
    if proc.returncode:
        return {"error": proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}"}
    return json.loads(proc.stdout)


def export(rev: str, dest: Path) -> Path:
    """The ``kvtier`` package of git revision ``rev``, exported under ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "kvtier"], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
    return dest


def write_trace(path: Path, refs: int, seed: int) -> tuple[int, int, int]:
    """A generated trace of at least ``refs`` references written to ``path``; ``(references, blocks, requests)``."""
    shape = {"new_blocks": (1, 8)}
    n_requests = max(1, int(refs / 12))
    trace = traces.generate_trace(n_requests, seed=seed, **shape)
    while trace.n_refs < refs:
        n_requests = int(n_requests * refs / trace.n_refs) + 1
        trace = traces.generate_trace(n_requests, seed=seed, **shape)
    with path.open("wb") as f:
        for r in range(trace.n_requests):
            row = {
                "timestamp": round(float(trace.timestamps_s[r]) * 1e3),
                "input_length": int(trace.input_tokens[r]),
                "output_length": int(trace.output_tokens[r]),
                "hash_ids": trace.blocks[trace.starts[r] : trace.starts[r + 1]].tolist(),
            }
            f.write(json.dumps(row, separators=(",", ":")).encode() + b"\n")
    return trace.n_refs, trace.n_unique, trace.n_requests


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; 0 when every target that applies is met, 1 otherwise."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--refs", type=int, default=10_000_000, help="block references in the generated trace (at least)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--baseline", default="main", help="the git revision whose code is today's implementation")
    p.add_argument("--skip-baseline", action="store_true", help="do not run the baseline's whole analyses")
    p.add_argument("--parse-lines", type=int, default=200_000, help="lines timed for the parsing rows")
    p.add_argument("--json", metavar="FILE", help="also write the measurements as JSON")
    args = p.parse_args(argv)

    out: dict = {}
    with tempfile.TemporaryDirectory(prefix="kvtier-scale-") as tmp:
        path = Path(tmp) / "generated.jsonl"
        t0 = time.perf_counter()
        n, d, n_req = write_trace(path, args.refs, args.seed)
        out.update(refs=n, unique=d, requests=n_req, file_bytes=path.stat().st_size, write_s=time.perf_counter() - t0)
        base = export(args.baseline, Path(tmp) / "baseline")
        out["now"] = child(CHILD, path)
        out["sampled"] = child(CHILD, path, "--sample", "0.01")
        out["cost"] = child(COST, path.resolve())
        if not args.skip_baseline:
            out["baseline_memory"] = child(CHILD, path, pythonpath=base)
            out["baseline_stream"] = child(CHILD, path, "--stream", pythonpath=base)
        out["parse_now"] = child(PARSE, path, str(args.parse_lines), "fast")
        out["parse_validating"] = child(PARSE, path, str(args.parse_lines), "validating")
        out["parse_baseline"] = child(PARSE, path, str(args.parse_lines), pythonpath=base)
    gen = traces.generate_trace(max(1, int(min(args.refs, 3_000_000) / 12)), seed=args.seed, new_blocks=(1, 8))
    out["sampling_error"] = traces.sampling_error(gen, (0.1, 0.01, 0.001))

    scale = 1e8 / n
    now, sampled = out["now"], out["sampled"]
    rows = []

    def run_row(what: str, r: dict, target_s: float | None = None, target_gib: float | None = None) -> None:
        if "error" in r:
            rows.append((what, f"{n:,} refs", f"failed: {r['error']}", "", False))
            return
        gib = r["rss"] / 2**30
        at_100m = f"; x{scale:.1f} = {r['s'] * scale:.0f} s at 100 M refs (time linear in refs)"
        target = " and ".join(
            x for x in (f"< {target_s:g} s" if target_s else "", f"< {target_gib:g} GiB" if target_gib else "") if x
        )
        ok = (not target_s or r["s"] * scale < target_s) and (not target_gib or gib < target_gib)
        cpu = f" ({r['cpu_s']:.1f} s of CPU: the machine is shared)" if "cpu_s" in r else ""
        result = f"{r['s']:.1f} s{cpu}, {gib:.2f} GiB peak ({r['rss'] / d:.0f} B a distinct block){at_100m}"
        rows.append((what, f"{n:,} refs, {d:,} blocks", result, f"{target} at 100 M" if target else "", ok))

    run_row("whole analysis, streamed (kvtier workload --json)", now, 150, 4)
    for key, what in (("baseline_memory", "baseline: in memory"), ("baseline_stream", "baseline: --stream")):
        if key in out:
            run_row(f"{what} ({args.baseline})", out[key])
            if "error" not in out[key] and "error" not in now:
                rows.append((f"  speed-up over {what}", "", f"{out[key]['s'] / now['s']:.2f}x", "", True))
    run_row("sampled at R = 0.01 (--sample 0.01)", sampled, 30)
    run_row("cost: curve, LRU tiers, hierarchies and mix, two streamed passes (kvtier cost --json)", out["cost"])
    if "error" not in sampled and "error" not in now:
        rows.append(("  speed-up of sampling over exact", "", f"{now['s'] / sampled['s']:.1f}x", "", True))
    pn, pv, pb = out["parse_now"], out["parse_validating"], out["parse_baseline"]
    if "error" not in pn and "error" not in pb:
        ratio = pb["s"] / pn["s"]
        rows.append(
            (
                "parse + validation: baseline / now (scanner)",
                f"{pn['lines']:,} lines",
                f"{ratio:.2f}x ({pn['s'] / pn['refs'] * 1e9:.0f} ns a reference)",
                "> 3x",
                ratio > 3,
            )
        )
    if "error" not in pn and "error" not in pv:
        ratio = pv["s"] / pn["s"]
        rows.append(("  validating reader alone / scanner", "", f"{ratio:.2f}x", "", True))
    for row in out["sampling_error"]:
        ok = row["rate"] != 0.01 or row["mean_abs"] < 0.005
        rows.append(
            (
                f"sampled curve error at R = {row['rate']:g} (generated, {row['refs']:,} refs)",
                f"{row['sampled_refs']:,} sampled",
                f"mean {row['mean_abs']:.4f}, max {row['max_abs']:.4f}; {row['exact_seconds'] / row['seconds']:.1f}x"
                " faster",
                "mean < 0.005" if row["rate"] == 0.01 else "",
                ok,
            )
        )
    print("| measurement | size | result | target | met |\n|---|---|---|---|---|")
    for what, size, result, target, ok in rows:
        print(f"| {what} | {size} | {result} | {target} | {'yes' if ok else 'NO'} |")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))
    return 0 if all(ok for *_, ok in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
