"""Benchmarks of the kvtier build and of the vectorized cost formulas, measured on this machine.

Run from the checkout, with the project's virtual environment::

    .venv/bin/python benchmarks/bench.py [--repeat N] [--json out.json]

Every figure is a ratio of two timings taken in the same run on the same machine, so
the targets do not depend on how fast the machine is:

a. a cold ``kvtier build --jobs 1`` (serial) against a baseline where Jupyter Book
   executes the same notebooks itself (a staged copy of the book with
   ``execute_notebooks: force``; the notebooks then run with their default, seed,
   parameters: the same work), and a cold ``kvtier build --jobs 2`` against the same
   baseline;
b. a no-op rebuild (the same build again, nothing changed) against the cold build;
c. a one-assumption rebuild (``--set bandwidth.mid=100GB/s`` on a copy of the cold
   build, also ``--jobs 1``) against the cold build, next to the share of notebooks it
   re-executes;
d. a 1,000,000-point sweep of ``fetch_time_s``, ``compute_time_s`` and ``ratio`` on
   numpy arrays against a Python loop calling the same functions on scalars (the loop
   runs over ``--loop-points`` points and its time is scaled linearly to 1,000,000);
e. the start-up of ``kvtier compare`` (a new process answering the illustrative point)
   against a new interpreter importing numpy (the floor no command can beat), timed
   alternately in the same run: kvtier's own share, the difference, at most 0.2 s.

Each measurement runs once, or ``--repeat N`` times keeping the best (smallest) time.
One untimed build comes first (``--no-warmup`` skips it), so that first-run costs (disk
cache, kernel start, matplotlib's font cache) count against neither side.
The builds run on a snapshot of the checkout (``kvtier/``, ``notebooks/``, ``book/``,
``_config.yml``, ``_toc.yml``) copied into a temporary directory at the start, with
``PYTHONPATH`` pointing at it, so that edits to the checkout while the benchmark runs
cannot turn the no-op rebuild into a full one; everything is written under that
temporary directory, which is removed afterwards.  Nothing in the checkout is written.

The script prints a Markdown table (measurement, time, reference, ratio, target,
pass/fail) and, with ``--json PATH``, writes the same figures as JSON.

Exit status: 0 when every target is met, 1 when one is missed, 2 when a measurement
could not be taken (a build failed: its stderr tail is printed).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SWEEP_POINTS = 1_000_000
EXECUTED = re.compile(r"\] executed (\S+)\.ipynb")
ONE_ASSUMPTION = "bandwidth.mid=100GB/s"


class BenchError(Exception):
    """A measurement could not be taken."""


@dataclass
class Row:
    """One line of the results table."""

    name: str
    seconds: float
    reference: str
    reference_seconds: float | None
    ratio: float | None
    target: str
    passed: bool
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def _tail(text: str, lines: int = 25) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def snapshot(dest: Path) -> Path:
    """Copy what a build reads (the package, notebooks, book sources) to ``dest``."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".ipynb_checkpoints")
    dest.mkdir(parents=True)
    for name in ("_config.yml", "_toc.yml"):
        shutil.copy2(ROOT / name, dest / name)
    for name in ("kvtier", "notebooks", "book"):
        shutil.copytree(ROOT / name, dest / name, ignore=ignore)
    return dest


def _run(cmd: Sequence[str], what: str, src: Path) -> tuple[float, str]:
    """Run ``cmd`` in ``src`` importing its kvtier; return (seconds, output); raise with the output tail on failure."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(src), os.environ.get("PYTHONPATH")])))
    started = time.perf_counter()
    proc = subprocess.run(list(cmd), cwd=src, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    output = proc.stdout + proc.stderr
    if proc.returncode != 0:
        raise BenchError(f"{what} failed (exit status {proc.returncode}): {' '.join(cmd)}\n{_tail(output)}")
    return seconds, output


def kvtier_build(src: Path, out: Path, jobs: int, sets: Sequence[str] = ()) -> tuple[float, str]:
    """Time ``kvtier build --out OUT --jobs N [--set ...]``; return (seconds, its log)."""
    cmd = [sys.executable, "-m", "kvtier", "build", "--out", str(out), "--jobs", str(jobs)]
    for item in sets:
        cmd += ["--set", item]
    return _run(cmd, f"kvtier build --out {out}", src)


def executed_notebooks(log: str) -> list[str]:
    """Names of the notebooks a build log says it executed."""
    return EXECUTED.findall(log)


def notebook_count(src: Path) -> int:
    return len(list((src / "notebooks").glob("*.md")))


def stage_jupyter_book(src: Path, dest: Path) -> Path:
    """Copy the book's sources to ``dest`` with Jupyter Book set to execute every notebook itself."""
    import yaml

    dest.mkdir(parents=True)
    for name in ("_config.yml", "_toc.yml"):
        shutil.copy2(src / name, dest / name)
    for name in ("book", "notebooks"):
        shutil.copytree(src / name, dest / name)
    config_path = dest / "_config.yml"
    config = yaml.safe_load(config_path.read_text(encoding="utf-8")) or {}
    config.setdefault("execute", {})["execute_notebooks"] = "force"
    # a notebook that raises must fail the baseline, not pass as a shorter run
    config.setdefault("sphinx", {}).setdefault("config", {})["nb_execution_raise_on_error"] = True
    config_path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return dest


def jupyter_book_build(src: Path, staged: Path, total: int) -> tuple[float, str]:
    """Time ``jupyter-book build STAGED`` (Jupyter Book executes the notebooks); check it executed ``total``."""
    jb = Path(sys.executable).with_name("jupyter-book")
    seconds, output = _run(
        [str(jb) if jb.exists() else "jupyter-book", "build", str(staged)], "jupyter-book build", src
    )
    if not (staged / "_build" / "html" / "index.html").is_file():
        raise BenchError(f"jupyter-book build wrote no {staged / '_build/html/index.html'}\n{_tail(output)}")
    if "Executing notebook failed" in output or "Execution Failed" in output:
        raise BenchError(f"jupyter-book build: a notebook failed to execute\n{_tail(output)}")
    executed = output.count("Executed notebook in")
    if executed != total:
        raise BenchError(f"jupyter-book build executed {executed} of {total} notebooks\n{_tail(output)}")
    return seconds, output


def best(times: list[float]) -> float:
    return min(times)


# ---------------------------------------------------------------------------
# a-c: builds
# ---------------------------------------------------------------------------


def bench_builds(tmp: Path, repeat: int, log: Callable[[str], None], warmup: bool = True) -> list[Row]:
    src = snapshot(tmp / "src")
    total = notebook_count(src)
    if warmup:
        # untimed: the first kernel start, imports and font cache would otherwise count against whichever runs first
        log("warm-up: one untimed kvtier build")
        kvtier_build(src, tmp / "warmup", jobs=2)
        shutil.rmtree(tmp / "warmup")
    serial, jb, parallel = [], [], []
    for i in range(repeat):
        log(f"[{i + 1}/{repeat}] cold kvtier build --jobs 1")
        seconds, out = kvtier_build(src, tmp / f"a{i}", jobs=1)
        if len(executed_notebooks(out)) != total:
            raise BenchError(f"a cold build executed {len(executed_notebooks(out))} of {total} notebooks\n{_tail(out)}")
        serial.append(seconds)
        log(f"[{i + 1}/{repeat}] jupyter-book build, execute_notebooks: force")
        jb.append(jupyter_book_build(src, stage_jupyter_book(src, tmp / f"jb{i}"), total)[0])
        shutil.rmtree(tmp / f"jb{i}")
        log(f"[{i + 1}/{repeat}] cold kvtier build --jobs 2")
        seconds, out = kvtier_build(src, tmp / f"p{i}", jobs=2)
        parallel.append(seconds)
        shutil.rmtree(tmp / f"p{i}")
    cold, base = best(serial), best(jb)
    cold_dir = tmp / f"a{serial.index(cold)}"

    noop = []
    for i in range(repeat):
        log(f"[{i + 1}/{repeat}] no-op rebuild")
        seconds, out = kvtier_build(src, cold_dir, jobs=1)
        if "nothing changed" not in out:
            raise BenchError(f"the no-op rebuild did not report 'nothing changed'\n{_tail(out)}")
        noop.append(seconds)

    one, executed = [], 0
    for i in range(repeat):
        log(f"[{i + 1}/{repeat}] one-assumption rebuild --set {ONE_ASSUMPTION}")
        b = tmp / f"b{i}"
        shutil.copytree(cold_dir, b, symlinks=True)
        seconds, out = kvtier_build(src, b, jobs=1, sets=[ONE_ASSUMPTION])
        executed = len(executed_notebooks(out))
        one.append(seconds)
        shutil.rmtree(b)

    share = executed / total
    slack = 0.25
    rows = [
        Row(
            "a. cold build, serial (`--jobs 1`)",
            cold,
            "Jupyter Book executes the notebooks",
            base,
            cold / base,
            "<= 0.85",
            cold / base <= 0.85,
            f"{total} notebooks",
        ),
        Row(
            "a. cold build, parallel (`--jobs 2`)",
            best(parallel),
            "Jupyter Book executes the notebooks",
            base,
            best(parallel) / base,
            "<= 0.6",
            best(parallel) / base <= 0.6,
            f"{os.cpu_count()} cores",
        ),
        Row(
            "b. no-op rebuild",
            best(noop),
            "cold build, serial",
            cold,
            best(noop) / cold,
            "<= 0.03",
            best(noop) / cold <= 0.03,
            "executed 0 notebooks",
        ),
        Row(
            f"c. one-assumption rebuild (`{ONE_ASSUMPTION}`, `--jobs 1`)",
            best(one),
            "cold build, serial",
            cold,
            best(one) / cold,
            f"<= executed share + {slack} = {share + slack:.2f}",
            best(one) / cold <= share + slack,
            f"executed {executed}/{total} notebooks (share {share:.2f});"
            " the slack covers the fixed HTML build and start-up",
            {"executed": executed, "total": total, "share": share},
        ),
    ]
    return rows


# ---------------------------------------------------------------------------
# d: the sweep
# ---------------------------------------------------------------------------


def bench_sweep(repeat: int, loop_points: int, log: Callable[[str], None]) -> list[Row]:
    import numpy as np

    from kvtier.formulas.costs import compute_time_s, fetch_time_s, ratio

    rng = np.random.default_rng(0)
    bandwidths = rng.uniform(1e9, 1e12, SWEEP_POINTS)  # B/s
    mfus = rng.uniform(0.05, 0.9, SWEEP_POINTS)
    n_bytes = 16 * 131072.0  # a 16-token block of a Llama-3-8B-sized model in bf16 (B)
    flops = 2.0 * 8.03e9 * 16  # 2 x N x T (FLOP)
    peak = 500e12  # FLOP/s
    latency = 2e-6  # s

    def vectorized() -> Any:
        return ratio(compute_time_s(flops, peak, mfus), fetch_time_s(n_bytes, bandwidths, latency))

    bw_list = bandwidths[:loop_points].tolist()
    mfu_list = mfus[:loop_points].tolist()

    def loop() -> list[float]:
        return [
            float(ratio(compute_time_s(flops, peak, m), fetch_time_s(n_bytes, b, latency)))
            for b, m in zip(bw_list, mfu_list, strict=True)
        ]

    vec_times, loop_times = [], []
    for i in range(repeat):
        log(f"[{i + 1}/{repeat}] sweep: vectorized {SWEEP_POINTS:,} points, loop {loop_points:,} points")
        started = time.perf_counter()
        result = vectorized()
        vec_times.append(time.perf_counter() - started)
        started = time.perf_counter()
        looped = loop()
        loop_times.append(time.perf_counter() - started)
    if not np.allclose(result[:loop_points], looped, rtol=1e-12, atol=0.0):
        raise BenchError("the vectorized sweep and the scalar loop disagree")
    vec = best(vec_times)
    loop_scaled = best(loop_times) * SWEEP_POINTS / loop_points
    speedup = loop_scaled / vec
    return [
        Row(
            f"d. {SWEEP_POINTS:,}-point sweep, vectorized",
            vec,
            f"Python loop over scalars (timed on {loop_points:,} points, scaled x{SWEEP_POINTS // loop_points})",
            loop_scaled,
            vec / loop_scaled,
            "speed-up >= 50x and time < 0.5 s",
            speedup >= 50 and vec < 0.5,
            f"speed-up {speedup:,.0f}x",
            {"speedup": speedup, "loop_points": loop_points, "loop_seconds_measured": best(loop_times)},
        )
    ]


# ---------------------------------------------------------------------------
# e: start-up of a quick answer
# ---------------------------------------------------------------------------

STARTUP_TARGET_S = 0.2
"""The most seconds ``kvtier compare`` may take beyond ``python -c 'import numpy'``."""
STARTUP_RUNS = 10
"""Runs of each side at least, keeping the best."""


def _process_times(cmds: Sequence[Sequence[str]], repeat: int) -> list[float]:
    """The best wall time of each command over ``repeat`` rounds, the commands run in turn in each round so that a
    change in the machine's load falls on every side alike."""
    times: list[list[float]] = [[] for _ in cmds]
    for _ in range(repeat):
        for cmd, samples in zip(cmds, times, strict=True):
            started = time.perf_counter()
            proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
            samples.append(time.perf_counter() - started)
            if proc.returncode != 0:
                raise BenchError(f"{' '.join(cmd)} failed:\n{_tail(proc.stderr)}")
    return [best(samples) for samples in times]


def bench_startup(repeat: int, log: Callable[[str], None]) -> list[Row]:
    runs = max(repeat, STARTUP_RUNS)
    log(f"start-up: kvtier compare and a new interpreter importing numpy, best of {runs}")
    compare, floor = _process_times(
        [[sys.executable, "-m", "kvtier", "compare"], [sys.executable, "-c", "import numpy"]], runs
    )
    return [
        Row(
            "e. `kvtier compare` start-up (a new process)",
            compare,
            "python -c 'import numpy'",
            floor,
            compare / floor,
            f"time - reference <= {STARTUP_TARGET_S} s",
            compare - floor <= STARTUP_TARGET_S,
            f"best of {runs}; kvtier's share {compare - floor:.3f} s",
        )
    ]


# ---------------------------------------------------------------------------
# report
# ---------------------------------------------------------------------------


def markdown(rows: list[Row]) -> str:
    lines = [
        "| measurement | time (s) | reference | reference (s) | ratio | target | result | note |",
        "|---|---:|---|---:|---:|---|---|---|",
    ]
    for r in rows:
        ref_s = f"{r.reference_seconds:.3f}" if r.reference_seconds is not None else ""
        ratio = f"{r.ratio:.3g}" if r.ratio is not None else ""
        result = "pass" if r.passed else "**FAIL**"
        lines.append(
            f"| {r.name} | {r.seconds:.3f} | {r.reference} | {ref_s} | {ratio} | {r.target} | {result} | {r.note} |"
        )
    return "\n".join(lines)


def machine() -> dict[str, Any]:
    return {
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "python": platform.python_version(),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--repeat", type=int, default=1, metavar="N", help="run each measurement N times, keep the best"
    )
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON to PATH")
    parser.add_argument(
        "--only",
        choices=("builds", "sweep", "startup"),
        help="run only the build measurements (a-c), the sweep (d) or the start-up (e)",
    )
    parser.add_argument("--no-warmup", action="store_true", help="skip the untimed warm-up build before the builds")
    parser.add_argument(
        "--loop-points", type=int, default=20_000, metavar="N", help="points of the scalar loop (default 20,000)"
    )
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    if not 1 <= args.loop_points <= SWEEP_POINTS:
        parser.error(f"--loop-points must be between 1 and {SWEEP_POINTS:,}")

    def log(line: str) -> None:
        print(f"bench: {line}", file=sys.stderr, flush=True)

    rows: list[Row] = []
    try:
        if args.only in (None, "builds"):
            with tempfile.TemporaryDirectory(prefix="kvtier-bench-") as tmp:
                rows += bench_builds(Path(tmp), args.repeat, log, warmup=not args.no_warmup)
        if args.only in (None, "sweep"):
            rows += bench_sweep(args.repeat, args.loop_points, log)
        if args.only in (None, "startup"):
            rows += bench_startup(args.repeat, log)
    except BenchError as exc:
        print(f"bench: error: {exc}", file=sys.stderr)
        return 2

    info = machine()
    print(
        f"Machine: {info['cpu_count']} cores ({info['processor']}), Python {info['python']}, {info['platform']};"
        f" best of {args.repeat} run{'s' if args.repeat > 1 else ''}.\n"
    )
    print(markdown(rows))
    if args.json:
        payload = {"machine": info, "repeat": args.repeat, "results": [asdict(r) for r in rows]}
        Path(args.json).write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return 0 if all(r.passed for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
