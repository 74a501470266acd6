"""The bad-input catalogue of ``kvtier workload``: the trace file, its lines and fields, the options.

Each case checks the house contract: exit status 2, stdout empty, stderr exactly one line
``kvtier: error: ...`` naming the file and line (or the option), no traceback, and every file under
``tmp_path`` byte-identical afterwards.  A trace case runs in both modes, in memory and ``--stream``:
the two read through one line splitter, so they must print the same line.  The cases run the CLI in
this process (tests/conftest.py ``run_cli``), but for what only a process shows: what is not a
regular file (a FIFO that would block), the 2 GiB file of NULs and a trace larger than the memory at
hand run the real CLI in a subprocess under a cap on its address space (1 GiB, so that a reader that
grows without bound fails fast instead of eating the machine).

Why 1 GiB: ``kvtier workload synthetic --json`` runs under an address-space cap of 150 MiB
(measured here with numpy 2 and one BLAS thread), so the cap leaves the command room and is
still far below the 2 GiB file of NULs that must be refused without being read.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import HAND as HAND_TRACE
from tests.conftest import ROOT, run_cli

pytestmark = pytest.mark.surface("workload")

CAP_BYTES = 1 << 30
"""The address-space cap of every case (see the module's docstring)."""

GOOD = {"timestamp": 0, "input_length": 1000, "output_length": 10, "hash_ids": [1, 2]}
"""A valid request at Mooncake's 512 tokens a block: ceil(1000 / 512) = 2 ids."""

MODES = {"memory": (), "stream": ("--stream",)}


def line(row: dict, **extra) -> bytes:
    """One request as a JSON line (UTF-8, non-ASCII kept as it is)."""
    return json.dumps({**row, **extra}, ensure_ascii=False).encode() + b"\n"


def run_capped(*args: str, cwd: Path | None = None, cap: int = CAP_BYTES) -> subprocess.CompletedProcess[str]:
    """``python -m kvtier ARGS`` in a subprocess whose address space is capped at ``cap`` bytes."""
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    return subprocess.run(
        [sys.executable, "-m", "kvtier", *args],
        capture_output=True,
        text=True,
        cwd=cwd or ROOT,
        env={**env, "PYTHONPATH": str(ROOT)},
        preexec_fn=limit,
        timeout=300,  # a safety net against a hang (a FIFO opened for reading), not a timed assertion
    )


def snapshot(directory: Path) -> dict[str, bytes | None]:
    """Every regular file (its bytes) and every other entry (None) under ``directory``, links not followed."""
    out: dict[str, bytes | None] = {}
    for p in sorted(directory.rglob("*")):
        regular = p.is_file() and not p.is_symlink() and p.stat().st_size < 64 << 20
        out[p.relative_to(directory).as_posix()] = p.read_bytes() if regular else None
    return out


def one_line_error(proc: subprocess.CompletedProcess[str]) -> str:
    """The one error line of a refused run, after checking the whole contract."""
    shown = f"rc={proc.returncode}\nstdout:\n{proc.stdout[:2000]}\nstderr:\n{proc.stderr[-4000:]}"
    assert "Traceback" not in proc.stderr + proc.stdout, shown
    assert (proc.returncode, proc.stdout) == (2, ""), shown
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and proc.stderr == lines[0] + "\n", shown
    assert lines[0].startswith("kvtier: error: "), shown
    return lines[0].removeprefix("kvtier: error: ")


# ---------------------------------------------------------------------------
# traces refused in both modes with the same line: (id, file bytes, extra argv, the message after "TRACE: ")
# ---------------------------------------------------------------------------

TRACES = [
    # item 4: a line ends at \n only. A lone \r joins two requests into one line: malformed there. (str.splitlines
    # made two requests of it in memory, and --stream refused it.)
    ("lone-cr", line(GOOD).rstrip(b"\n") + b"\r" + line(GOOD), (), "line 1: not a JSON object (malformed JSON)"),
    # a form feed is no JSON whitespace: a trailing one makes line 1 malformed (splitlines cut it off as a line break)
    ("form-feed", line(GOOD).rstrip(b"\n") + b"\x0c\n" + line(GOOD), (), "line 1: not a JSON object (malformed JSON)"),
    # U+2028 and U+0085 inside a string are string content: line 1 is valid, the malformed one is line 2 (in memory
    # splitlines broke line 1 in two and blamed line 1)
    ("u2028-in-a-string", line(GOOD, type="a\u2028b") + b"{\n", (), "line 2: not a JSON object (malformed JSON)"),
    ("u0085-in-a-string", line(GOOD, type="a\u0085b") + b"{\n", (), "line 2: not a JSON object (malformed JSON)"),
    # \r\n line ends are accepted and counted as one: the bad request is line 3 in both modes
    (
        "crlf-line-numbers",
        (line(GOOD) * 2).replace(b"\n", b"\r\n") + line(GOOD, timestamp=-1).replace(b"\n", b"\r\n"),
        (),
        "line 3: timestamp -1 ms goes backwards (the line before: 0)",
    ),
    # item 6: a key twice in one line (the last one silently won), at the top and nested
    (
        "duplicate-key",
        line(GOOD) + b'{"timestamp": 1, "timestamp": 0, "input_length": 0, "output_length": 1, "hash_ids": []}\n',
        (),
        "line 2: duplicate key 'timestamp'",
    ),
    (
        "duplicate-nested-key",
        b'{"timestamp": 0, "input_length": 0, "output_length": 1, "hash_ids": [], "x": {"a": 1, "a": 2}}\n',
        (),
        "line 1: duplicate key 'a'",
    ),
    # item 13: a 400-digit integer timestamp (OverflowError in math.isfinite), lengths past 2**53
    (
        "timestamp-400-digits",
        line(GOOD, timestamp=10**399),
        (),
        "line 1: 'timestamp' is too large (a 400-digit number)",
    ),
    (
        "output-length-1e300",
        line(GOOD, output_length=1e300),
        (),
        "line 1: 'output_length' is too large (1e+300); at most 2**53 = 9,007,199,254,740,992 tokens",
    ),
    (
        "output-length-2-63",
        line(GOOD, output_length=2**63),
        (),
        "line 1: 'output_length' is too large (9223372036854775808); at most 2**53 = 9,007,199,254,740,992 tokens",
    ),
    # item 7: a Qwen trace (16 tokens an id) read at Mooncake's 512: 40 tokens need ceil(40 / 512) = 1 id, it has
    # ceil(40 / 16) = 3, and the message says which block size would fit
    (
        "qwen-at-512-tokens",
        line({"timestamp": 0.5, "input_length": 40, "output_length": 1, "hash_ids": [1, 2, 3]}),
        ("--format", "qwen", "--block-tokens", "512"),
        "line 1: 'hash_ids' has 3 ids but input_length 40 at 512 tokens a block needs 1;"
        " the qwen format's 16 tokens a block would fit",
    ),
    # issue 43: lengths and timestamps written as JSON lists, past the first batch of plain lines (3,000 of them),
    # where the compiled scanner reads: refused by the line reader's rule, not read as two lengths or a crash
    (
        "output-length-list-after-3000-lines",
        b"".join(line(GOOD, timestamp=i) for i in range(3000)) + line(GOOD, timestamp=3000, output_length=[0, 100000]),
        (),
        "line 3001: 'output_length' must be a whole number of tokens, got [0, 100000]",
    ),
    (
        "timestamp-list-after-3000-lines",
        b"".join(line(GOOD, timestamp=i) for i in range(3000)) + line(GOOD, timestamp=[5]),
        (),
        "line 3001: 'timestamp' must be a finite number of milliseconds, got [5]",
    ),
    # issue 43: a timestamp past 2**53 of its unit (1e300 ms printed a 300-digit number of hours)
    (
        "timestamp-1e300",
        line(GOOD, timestamp=1e300),
        (),
        "line 1: 'timestamp' is too large (1e+300); at most 2**53 = 9,007,199,254,740,992 milliseconds",
    ),
    # issue 43: the same Qwen line read without --format: 3 ids fit Qwen's 16-token blocks, and the line says so
    (
        "qwen-read-as-mooncake",
        line({"timestamp": 0, "input_length": 40, "output_length": 1, "hash_ids": [1, 2, 3]}),
        (),
        "line 1: 'hash_ids' has 3 ids but input_length 40 at 512 tokens a block needs 1; a qwen trace's 16 tokens a"
        " block would fit: --format qwen",
    ),
    # item 10: a line longer than 16 MiB (16,777,216 bytes) is refused, not held without bound
    ("line-too-long", b'{"timestamp": "' + b"x" * (16 << 20) + b'"}\n', (), "line 1: longer than 16,777,216 bytes"),
]


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize(("data", "argv", "message"), [pytest.param(*c[1:], id=c[0]) for c in TRACES])
def test_a_bad_trace_is_the_same_one_line_in_both_modes(tmp_path, mode, data, argv, message):
    path = tmp_path / "bad.jsonl"
    path.write_bytes(data)
    before = snapshot(tmp_path)
    proc = run_cli("workload", str(path), *argv, *MODES[mode])
    assert one_line_error(proc).startswith(f"{path}: {message}"), proc.stderr
    assert snapshot(tmp_path) == before


# ---------------------------------------------------------------------------
# what is not a trace file at all, in both modes: refused before it is opened or read
# ---------------------------------------------------------------------------


def _fifo(tmp_path: Path) -> str:
    os.mkfifo(tmp_path / "pipe.jsonl")  # opening it to read would wait for a writer for ever
    return str(tmp_path / "pipe.jsonl")


def _loop(tmp_path: Path) -> str:
    (tmp_path / "a.jsonl").symlink_to(tmp_path / "b.jsonl")
    (tmp_path / "b.jsonl").symlink_to(tmp_path / "a.jsonl")
    return str(tmp_path / "a.jsonl")


def _dangling(tmp_path: Path) -> str:
    (tmp_path / "gone.jsonl").symlink_to(tmp_path / "nowhere.jsonl")
    return str(tmp_path / "gone.jsonl")


NOT_FILES = [
    # item 10: /dev/zero under --stream grew until MemoryError; a FIFO blocked in open()
    ("dev-zero", lambda tmp: "/dev/zero", "/dev/zero: trace is not a regular file"),
    ("fifo", _fifo, "{trace}: trace is not a regular file"),
    # a directory gets the option that reads one (issue 43)
    (
        "directory",
        lambda tmp: str(tmp),
        "{trace}: trace is a directory, not a regular file (kvtier workload --parts reads the files in one)",
    ),
    (
        "glob-pattern",
        lambda tmp: str(tmp / "*.jsonl"),
        "{trace}: trace not found (a glob pattern: kvtier workload --parts reads the files it names); name a file or"
        " a shipped trace: conversation, synthetic",
    ),
    # a loop of symbolic links is named as such, not "trace not found"
    ("symlink-loop", _loop, "{trace}: trace is a loop of symbolic links"),
    ("dangling-symlink", _dangling, "{trace}: trace not found (a symbolic link to a missing file)"),
]


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize(("make", "message"), [pytest.param(*c[1:], id=c[0]) for c in NOT_FILES])
def test_what_is_not_a_regular_file_is_refused_in_both_modes(tmp_path, mode, make, message):
    trace = make(tmp_path)
    before = snapshot(tmp_path)
    proc = run_capped("workload", trace, *MODES[mode])
    assert one_line_error(proc) == message.format(trace=trace)
    assert snapshot(tmp_path) == before


# ---------------------------------------------------------------------------
# item 11 and 10: size and memory, under the cap
# ---------------------------------------------------------------------------


@pytest.fixture
def nuls_2gib(tmp_path) -> Path:
    """A 2 GiB file of NULs, sparse (no disk is written)."""
    path = tmp_path / "zeros.jsonl"
    with open(path, "wb") as f:
        f.truncate(2 << 30)
    return path


@pytest.mark.parametrize("stream", [(), ("--stream",)])
def test_a_2_gib_file_of_nuls_is_refused_after_one_line(nuls_2gib, stream):
    # the command streams every trace (--stream is accepted and changes nothing): no size limit, but at most
    # 16 MiB of one line is held, and the NULs hold no \n. Priced with the seed set's analytic model
    # (workload.deployment build): the named deployment's kernel tables take about 140 MB of the 1 GiB cap
    msg = one_line_error(run_capped("workload", str(nuls_2gib), *stream, "--set", "workload.deployment=build"))
    assert msg == f"{nuls_2gib}: line 1: longer than 16,777,216 bytes; refused"


def dense_trace(path: Path, refs: int, per_line: int = 100_000) -> Path:
    """``refs`` references at one token a block, written as densely as JSON allows (ids 0-9: 2 bytes each)."""
    ids = ",".join(str(i % 10) for i in range(per_line))
    with open(path, "w") as f:
        for k in range(refs // per_line):
            f.write(f'{{"timestamp":{k},"input_length":{per_line},"output_length":0,"hash_ids":[{ids}]}}\n')
    return path


def test_a_trace_larger_than_the_memory_at_hand_is_read_in_memory_bounded_by_its_distinct_blocks(tmp_path):
    # 12 M references (24 MB): held whole at about 100 B a reference that is 1.2 GB, beyond the 1 GiB cap; the
    # command holds the 10 distinct blocks, the histograms and one chunk of 1 M references. Priced with the seed
    # set's analytic model (workload.deployment build): the named deployment's kernel tables take about 140 MB more
    path = dense_trace(tmp_path / "dense.jsonl", 12_000_000)
    before = snapshot(tmp_path)
    proc = run_capped("workload", str(path), "--block-tokens", "1", "--json", "--set", "workload.deployment=build")
    assert proc.returncode == 0, proc.stderr
    rep = json.loads(proc.stdout)
    # 12e6 references to 10 distinct blocks; counted up to each request's first miss, the first request (100,000
    # references, its first block a cold miss) hits nothing and every later one hits whole: 11.9 M of 12 M
    assert (rep["blocks"]["references"], rep["blocks"]["unique"]) == (12_000_000, 10)
    assert rep["blocks"]["hit_ratio_infinite_blocks"] == pytest.approx(11_900_000 / 12_000_000, rel=1e-12)
    assert snapshot(tmp_path) == before


# ---------------------------------------------------------------------------
# options: the option the user typed is named
# ---------------------------------------------------------------------------

OPTIONS = [
    # named as the option the user typed, not as the key it sets
    ("block-tokens-0", ("--block-tokens", "0"), "--block-tokens '0': allowed: a whole number of tokens in"),
    ("block-tokens-2.5", ("--block-tokens", "2.5"), "--block-tokens '2.5': allowed: a whole number of tokens in"),
    ("block-tokens-abc", ("--block-tokens", "abc"), "--block-tokens: "),
    ("format-unknown", ("--format", "csv"), "argument --format: invalid choice: 'csv'"),
    (
        "set-format-unknown",
        ("--set", "workload.trace_format=csv"),
        "key 'workload.trace_format' must be one of mooncake, qwen, full-blocks, got 'csv'",
    ),
    # issue 43: counts bounded where they would overflow or allocate without end (--every of 2**63 was an
    # OverflowError, --every-s 1e-300 "Maximum allowed size exceeded")
    ("every-2-pow-63", ("--over-time", "100", "--every", str(2**63)), "--every 9223372036854775808: a number of"),
    ("every-s-1e-300", ("--over-time", "100", "--every-s", "1e-300"), "--every-s 1e-300: a number of seconds from"),
    ("every-and-every-s", ("--over-time", "100", "--every", "5", "--every-s", "60"), "--every and --every-s both"),
    # options that act only with another are refused without it, not silently ignored
    ("every-without-over-time", ("--every", "5"), "--every groups --over-time's points: add --over-time"),
    ("workers-without-parts", ("--workers", "4"), "--workers sizes the Dask cluster that reads a trace split into"),
    ("warmup-without-window", ("--parts", "--warmup", "60"), "--warmup warms up each time window: add --window"),
    # --workers bounded by the machine's cores (16 took 2.7 GB; 100,000 ran until killed; -2 hung)
    ("workers-0", ("--parts", "--workers", "0"), "--workers 0: a number of LocalCluster workers from 1 to"),
    ("workers-huge", ("--parts", "--workers", "100000"), "--workers 100000: a number of LocalCluster workers"),
    ("workers-negative", ("--parts", "--workers", "-2"), "--workers -2: a number of LocalCluster workers"),
    ("workers-and-scheduler", ("--parts", "--workers", "1", "--scheduler", "tcp://h:1"), "give one"),
    # an option and a --set of its key to another value: neither silently wins
    (
        "sample-and-set-sample-rate",
        ("--sample", "0.5", "--set", "workload.sample_rate=0.1"),
        "--sample 0.5 and --set workload.sample_rate=0.1 both set workload.sample_rate: give one",
    ),
    # a scheduler address that is none: refused before any connection (a traceback of 53 lines before)
    ("scheduler-garbage", ("--parts", "--scheduler", "garbage"), "--scheduler garbage: not a Dask scheduler's"),
    ("scheduler-inproc", ("--parts", "--scheduler", "inproc://x"), "--scheduler inproc://x: not a Dask scheduler's"),
    # a sample at the key's own lower bound holds no block of the shipped trace: said, not "0 unique, 100 % hit"
    ("sample-holds-nothing", ("--sample", "1e-6"), "synthetic: a sample at rate 1e-06 holds none of the trace's"),
    # issue 43: a capacity of 1e30 blocks overflowed the compiled replay's integers (a 40-line numba TypingError);
    # a fraction of a block was rounded up without a word
    ("capacity-huge", ("--capacity", "1e30"), "--capacity '1e30': a capacity from 0 to 2**53 blocks"),
    ("capacity-huge-bytes", ("--capacity", "1e18TiB"), "--capacity '1e18TiB': a capacity from 0 to 2**53 blocks"),
    ("capacity-fraction", ("--capacity", "1.5"), "--capacity '1.5': a whole number of blocks, or bytes with a unit"),
    # second round: "1,000" fell through to bytes without a unit (a 0-block tier, exit 0); under a block of bytes too
    ("capacity-separators", ("--capacity", "1,000"), "--capacity '1,000': a whole number of blocks (no separators)"),
    ("capacity-under-a-block", ("--capacity", "1KB"), "--capacity '1KB': less than one block (160.00 MiB)"),
    ("capacity-2-pow-53-plus-1", ("--capacity", str(2**53 + 1)), "a capacity from 0 to 2**53 blocks"),
    ("over-time-fraction", ("--over-time", "1.5"), "--over-time '1.5': a whole number of blocks, or bytes with a"),
    # issue 43: one sampled block estimated the conversation trace's infinite cache at 82.5 % (exact 28.9 %)
    ("sample-blocks-1", ("--sample-blocks", "1"), "--sample-blocks 1: at least 1,000 blocks"),
    ("sample-blocks-999", ("--sample-blocks", "999"), "--sample-blocks 999: at least 1,000 blocks"),
    # the fleet's options against a --set of their keys (--routing silently won)
    (
        "routing-and-set-fleet-routing",
        ("--capacity", "100", "--instances", "2", "--routing", "session", "--set", "fleet.routing=round-robin"),
        "--routing session and --set fleet.routing=round-robin both set fleet.routing: give one",
    ),
    (
        "instances-and-set-fleet-instances",
        ("--capacity", "100", "--instances", "4", "--set", "fleet.instances=8"),
        "--instances 4 and --set fleet.instances=8 both set fleet.instances: give one",
    ),
    # checked before the Dask cluster starts (Dask's start-up lines came first)
    ("parts-window-warmup-negative", ("--parts", "--window", "60", "--warmup", "-1"), "--warmup -1: a number of"),
    # --parts would drop these: refused instead
    ("parts-over-time", ("--parts", "--over-time", "100"), "--over-time replays a trace in one file: leave out"),
    ("parts-window-sample", ("--parts", "--window", "60", "--sample", "0.5"), "--window replays every reference"),
]


@pytest.mark.parametrize(("argv", "message"), [pytest.param(*c[1:], id=c[0]) for c in OPTIONS])
def test_a_bad_option_is_named_as_typed(argv, message):
    assert message in one_line_error(run_cli("workload", "synthetic", *argv))


def test_a_scheduler_that_never_answers_is_given_up_on_in_seconds(tmp_path, monkeypatch):
    # a port that accepts the connection and never speaks Dask's protocol (an HTTP server there hung the command
    # past 60 s): one line within the stated timeout, 1 s here
    import socket

    from kvtier.inputs import distributed

    monkeypatch.setattr(distributed, "SCHEDULER_TIMEOUT_S", 1.0)
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)
        address = f"tcp://127.0.0.1:{silent.getsockname()[1]}"
        (tmp_path / "part-0.jsonl").write_bytes(line(GOOD))
        error = one_line_error(run_cli("workload", str(tmp_path), "--parts", "--scheduler", address))
    assert error == f"--scheduler {address}: no Dask scheduler answered within 1 s"


# ---------------------------------------------------------------------------
# accepted, the same way in both modes: a BOM (item 18), a file named like a shipped trace (item 5)
# ---------------------------------------------------------------------------

HAND = HAND_TRACE[:2]
# the hand trace's first two requests: 5 references (1 2 | 1 2 3) to 3 distinct blocks at 4 tokens a block: 2 hits


@pytest.mark.parametrize("mode", sorted(MODES))
def test_a_byte_order_mark_at_the_start_is_accepted(tmp_path, mode):
    # a UTF-8 byte order mark is skipped, not read as malformed JSON
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + b"".join(line(r) for r in HAND))
    proc = run_cli("workload", str(path), "--block-tokens", "4", "--json", *MODES[mode])
    assert proc.returncode == 0, proc.stderr
    rep = json.loads(proc.stdout)
    assert (rep["trace"]["requests"], rep["blocks"]["references"], rep["blocks"]["unique"]) == (2, 5, 3)


@pytest.mark.parametrize("mode", sorted(MODES))
def test_a_file_named_like_a_shipped_trace_is_read_and_the_output_says_so(tmp_path, mode):
    # a file called "conversation" in the current directory wins over the shipped trace (12,031 requests),
    # and the first line says which trace was read
    (tmp_path / "conversation").write_bytes(b"".join(line(r) for r in HAND))
    proc = run_cli("workload", "conversation", "--block-tokens", "4", *MODES[mode], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    first, priced, third = proc.stdout.splitlines()[:3]
    assert first.startswith(
        "trace conversation: the file of that name in this directory, not the shipped trace conversation"
    )
    assert priced.startswith("Priced for Llama-3.1-70B on 4 H100 SXM (TP 4), vLLM, a named deployment:")
    assert third.startswith("trace conversation") and " 2 requests" in third
    proc = run_cli("workload", "conversation", "--block-tokens", "4", "--json", *MODES[mode], cwd=tmp_path)
    rep = json.loads(proc.stdout)
    assert rep["trace"]["requests"] == 2 and rep["notes"]["trace"].startswith("trace conversation: the file")


def test_a_bad_part_on_a_dask_worker_is_one_line_with_no_worker_log(tmp_path):
    # issue 43: the worker's log and a remote traceback came before the right line; a real process shows what a
    # shell sees (the workers' own processes write to the same stderr)
    parts = tmp_path / "parts"
    parts.mkdir()
    (parts / "hour-0.jsonl").write_bytes(line(GOOD) + line(GOOD, timestamp=[5]))
    proc = run_capped("workload", str(parts), "--parts", "--workers", "1", cap=4 << 30)
    assert (
        one_line_error(proc)
        == f"{parts}/hour-0.jsonl: line 2: 'timestamp' must be a finite number of milliseconds, got [5]"
    )


def test_parts_print_nothing_on_stderr_when_another_cluster_holds_the_dashboard_port(tmp_path):
    # issue 43 (25): with port 8787 taken (another Dask cluster, another kvtier run) every --parts run printed
    # Dask's "UserWarning: Port 8787 is already in use"; the scheduler's HTTP server now takes a free port
    import socket

    parts = tmp_path / "parts"
    parts.mkdir()
    (parts / "hour-0.jsonl").write_bytes(line(GOOD) + line(GOOD, timestamp=1))
    holder = socket.socket()
    try:
        holder.bind(("127.0.0.1", 8787))
        holder.listen()
    except OSError:
        pass  # something already holds it: the condition under test
    try:
        proc = run_capped("workload", str(parts), "--parts", "--workers", "1", "--json", cap=4 << 30)
    finally:
        holder.close()
    assert (proc.returncode, proc.stderr) == (0, "")
    assert json.loads(proc.stdout)["parts"]["names"] == [f"{parts}/hour-0.jsonl"]


@pytest.mark.parametrize("kind", ["fifo", "dangling-link"])
def test_a_part_that_is_no_regular_file_is_named_not_skipped(tmp_path, kind):
    # issue 43: --parts skipped FIFOs and links to nothing without a word; one folder a day is read to any depth
    parts = tmp_path / "parts"
    (parts / "day-1").mkdir(parents=True)
    (parts / "day-1" / "00.jsonl").write_bytes(line(GOOD))
    bad = parts / "day-1" / "01.jsonl"
    if kind == "fifo":
        os.mkfifo(bad)
    else:
        bad.symlink_to(tmp_path / "gone.jsonl")
    before = snapshot(tmp_path)
    error = one_line_error(run_cli("workload", str(parts), "--parts", "--workers", "1"))
    what = "not a regular file" if kind == "fifo" else "a link to nothing"
    assert error == f"{bad}: {what}; a part of a trace must be a regular file"
    assert snapshot(tmp_path) == before


def test_an_admission_tier_of_a_billion_blocks_stays_bounded(tmp_path):
    # issue 43: TinyLFU's sketch grew with the capacity: --capacity 1e9 --admission asked for 128 GiB (an
    # _ArrayMemoryError traceback); its rows now stop at 2**22 counters (128 MiB), so the run fits a 4 GiB address
    # space (the compiled replays' JIT alone reserves much of 1 GiB)
    trace = tmp_path / "t.jsonl"
    trace.write_bytes(line(GOOD) + line(GOOD, timestamp=1) + line(GOOD, timestamp=2))
    proc = run_capped("workload", str(trace), "--capacity", "1e9", "--admission", "--json", cap=4 << 30)
    assert (proc.returncode, proc.stderr) == (0, ""), proc.stderr[-2000:]
    assert json.loads(proc.stdout)["admission"]["capacity_blocks"] == 1e9
