"""The bad-input catalogue of ``kvtier measure``: one line on stderr, exit status 2, nothing lost, nothing measured.

Each case runs the command line in this process (tests/conftest.py ``run_cli``) and checks
the contract of tests/commands/test_bad_input.py: exit status 2, stdout empty, stderr exactly one line
``kvtier: error: ...`` naming the offending option or file, no traceback, and every file under
``tmp_path`` byte-identical afterwards.  One line also proves that nothing was measured: a run
logs ``kvtier measure: measuring on ...`` before its first measurement, so every refusal here
comes before it (an unwritable directory is refused before the run, not met after it as a
``PermissionError`` traceback).  The memory cases run under an address-space cap.
"""

from __future__ import annotations

import json
import os
import resource
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from kvtier.inputs.models import PRESETS
from kvtier.inputs.probe import writing
from tests.conftest import ROOT, TINY, run_cli

pytestmark = pytest.mark.surface("measure")

HAND_WRITTEN = "# my lab's own numbers, typed by hand\nname: my-lab\nassumptions:\n  bandwidth.mid: 48 GB/s\n"
"""A user's hand-written assumption set: what `measure --out my-lab.yaml` silently overwrote."""
OURS = writing.marked("name: measured-cpu\nassumptions:\n  bandwidth.mid: 10 GB/s\n")
"""A file measure wrote (its mark is the hash of the lines below it)."""
EDITED = OURS.replace("10 GB/s", "12 GB/s")
"""The same file after a user's edit: the mark no longer matches."""
TINY_ARGS = ("--model", "{tmp}/tiny/config.json", "--device", "cpu", "--quick")


def _link(tmp: Path) -> None:
    (tmp / "my-lab.yaml").write_text(HAND_WRITTEN)
    (tmp / "link.yaml").symlink_to(tmp / "my-lab.yaml")


def _fifo(tmp: Path) -> None:
    os.mkfifo(tmp / "pipe.yaml")


def _file_as_directory(tmp: Path) -> None:
    (tmp / "notes.txt").write_text("not a directory\n")


# (id, arguments after `measure`, files to create (name -> text, or a function of tmp_path), substrings of the line)
MEASURE_CASES: list[tuple[str, tuple[str, ...], dict[str, str] | Callable[[Path], None], list[str]]] = [
    # --- the output file (item 1): nothing of the user's is overwritten ---
    # a hand-written set: never replaced
    (
        "hand-written-file",
        ("--out", "{tmp}/my-lab.yaml", *TINY_ARGS),
        {"my-lab.yaml": HAND_WRITTEN},
        ["--out {tmp}/my-lab.yaml: exists and was not written by kvtier measure, or was changed since", "--force"],
    ),
    # a file measure wrote, edited by hand since: the edit would be lost
    (
        "edited-measured-file",
        ("--out", "{tmp}/m.yaml", *TINY_ARGS),
        {"m.yaml": EDITED},
        ["--out {tmp}/m.yaml: exists and was not written by kvtier measure, or was changed since"],
    ),
    # a first line that only looks like the mark
    (
        "copied-mark-line",
        ("--out", "{tmp}/m.yaml", *TINY_ARGS),
        {"m.yaml": OURS.splitlines(keepends=True)[0] + HAND_WRITTEN},
        ["--out {tmp}/m.yaml: exists and was not written by kvtier measure"],
    ),
    # a symbolic link to a hand-written file: neither is replaced without --force
    (
        "symlink",
        ("--out", "{tmp}/link.yaml", *TINY_ARGS),
        _link,
        ["--out {tmp}/link.yaml: is a symbolic link, not a file kvtier measure wrote", "--force"],
    ),
    # not a regular file: never replaced, not even with --force (as root, /dev/null would have been replaced)
    (
        "dev-null-forced",
        ("--out", "/dev/null", "--force", *TINY_ARGS),
        {},
        ["--out /dev/null: exists and is not a regular file"],
    ),
    # a named pipe: refused without opening it (reading its mark would wait for a writer)
    (
        "fifo",
        ("--out", "{tmp}/pipe.yaml", *TINY_ARGS),
        _fifo,
        ["--out {tmp}/pipe.yaml: exists and is not a regular file"],
    ),
    ("directory", ("--out", "{tmp}", *TINY_ARGS), {}, ["--out {tmp}: is a directory; give the assumption file"]),
    (
        "empty-path",
        ("--out", "", *TINY_ARGS),
        {},
        ["argument --out: give the assumption file to write, not an empty path"],
    ),
    ("current-directory", ("--out", ".", *TINY_ARGS), {}, ["--out .: is a directory; give the assumption file"]),
    # --- the directory: checked before measuring, not after the whole run ---
    (
        "missing-directory",
        ("--out", "{tmp}/absent/m.yaml", *TINY_ARGS),
        {},
        ["--out {tmp}/absent/m.yaml: directory {tmp}/absent does not exist"],
    ),
    (
        "parent-is-a-file",
        ("--out", "{tmp}/notes.txt/m.yaml", *TINY_ARGS),
        _file_as_directory,
        ["--out {tmp}/notes.txt/m.yaml: directory {tmp}/notes.txt is not a directory"],
    ),
    # a directory no one may create files in, even root (sysfs): the probe file is refused
    (
        "unwritable-directory",
        ("--out", "/sys/m.yaml", *TINY_ARGS),
        {},
        ["--out /sys/m.yaml: cannot write in directory /sys ("],
    ),
    (
        "newline-in-path",
        ("--out", "{tmp}/a\nb/m.yaml", *TINY_ARGS),
        {},
        ["--out {tmp}/a\\nb/m.yaml: directory {tmp}/a\\nb does not exist"],
    ),
    # --- the model (item 17's path, and what measure cannot build) ---
    ("unknown-preset", ("--out", "{tmp}/m.yaml", "--model", "llama-9"), {}, ["model 'llama-9': unknown preset"]),
    (
        "missing-config",
        ("--out", "{tmp}/m.yaml", "--model", "{tmp}/absent/config.json"),
        {},
        ["{tmp}/absent/config.json: model config file not found"],
    ),
    (
        "mla-model",
        ("--out", "{tmp}/m.yaml", "--model", "deepseek-v3", "--device", "cpu"),
        {},
        ["model 'deepseek-v3': kvtier measure builds dense MHA/GQA decoders only; this one is MLA"],
    ),
    (
        "moe-model",
        ("--out", "{tmp}/m.yaml", "--model", "mixtral-8x7b", "--device", "cpu"),
        {},
        ["model 'mixtral-8x7b': kvtier measure builds dense MHA/GQA decoders only; this one is a mixture of experts"],
    ),
    # --- options ---
    (
        "layers-zero",
        ("--out", "{tmp}/m.yaml", "--layers", "0", *TINY_ARGS),
        {},
        ["--layers must be between 1 and 3 for model 'tiny', got 0"],
    ),
    (
        "layers-beyond-the-model",
        ("--out", "{tmp}/m.yaml", "--layers", "81", "--model", "llama-3-70b", "--device", "cpu"),
        {},
        ["--layers must be between 1 and 80 for model 'llama-3-70b', got 81"],
    ),
    (
        "layers-not-a-number",
        ("--out", "{tmp}/m.yaml", "--layers", "two"),
        {},
        ["kvtier measure: argument --layers: invalid int value: 'two'"],
    ),
    (
        "device-unknown",
        ("--out", "{tmp}/m.yaml", "--device", "tpu"),
        {},
        ["kvtier measure: argument --device: invalid choice: 'tpu'"],
    ),
    ("no-out", ("--model", "llama-3-8b"), {}, ["the following arguments are required: --out"]),
]
# without PyTorch, --device cuda says how to get it; with PyTorch and no GPU, that there is none
CUDA_CASE = (
    "device-cuda-here",
    ("--out", "{tmp}/m.yaml", "--device", "cuda", *TINY_ARGS[:2]),
    {},
    ["--device cuda"],
)


def snapshot(directory: Path) -> dict[str, object]:
    """Every entry under ``directory``: a file's bytes, a link's target, else its kind."""
    out: dict[str, object] = {}
    for p in sorted(directory.rglob("*")):
        mode = p.lstat().st_mode
        key = p.relative_to(directory).as_posix()
        if stat.S_ISLNK(mode):
            out[key] = ("link", os.readlink(p))
        elif stat.S_ISREG(mode):
            out[key] = (p.read_bytes(), stat.S_IMODE(mode))
        else:
            out[key] = stat.S_IFMT(mode)
    return out


def _prepare(tmp: Path, files: dict[str, str] | Callable[[Path], None]) -> None:
    (tmp / "tiny").mkdir()
    (tmp / "tiny" / "config.json").write_text(json.dumps(TINY))
    if callable(files):
        files(tmp)
    else:
        for name, text in files.items():
            (tmp / name).write_text(text)


def assert_one_line(proc: subprocess.CompletedProcess[str], needles: list[str], tmp: Path) -> None:
    """The contract: exit 2, no stdout, one ``kvtier: error:`` line holding every needle, no traceback."""
    shown = f"rc={proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    assert "Traceback" not in proc.stderr + proc.stdout, shown
    assert proc.returncode == 2, shown
    assert proc.stdout == "", shown
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and proc.stderr == lines[0] + "\n", shown  # one line: nothing was measured
    assert lines[0].startswith("kvtier: error: "), shown
    for needle in needles:
        assert needle.replace("{tmp}", str(tmp)) in lines[0], shown


@pytest.mark.parametrize(
    ("args", "files", "needles"),
    [pytest.param(a, f, n, id=name) for name, a, f, n in [*MEASURE_CASES, CUDA_CASE]],
)
def test_bad_measure_input_is_one_line_exit_2_and_loses_nothing(tmp_path, args, files, needles):
    _prepare(tmp_path, files)
    before = snapshot(tmp_path)
    proc = run_cli("measure", *(arg.replace("{tmp}", str(tmp_path)) for arg in args))
    assert_one_line(proc, needles, tmp_path)
    assert snapshot(tmp_path) == before  # byte-identical, same modes, no temporary file left


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a directory of mode 0o555; /sys covers root")
def test_a_read_only_directory_is_refused_before_measuring(tmp_path):
    _prepare(tmp_path, {})
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o555)
    proc = run_cli("measure", "--out", str(locked / "m.yaml"), *(a.replace("{tmp}", str(tmp_path)) for a in TINY_ARGS))
    assert_one_line(proc, [f"--out {locked}/m.yaml: cannot write in directory {locked} (Permission denied)"], tmp_path)


def test_its_own_file_is_replaced_with_the_umask_and_force_replaces_a_foreign_one(tmp_path):
    # not bad input: the accepted neighbours of the cases above, through the real command line
    _prepare(tmp_path, {"mine.yaml": HAND_WRITTEN})
    env_umask = 0o027
    args = [a.replace("{tmp}", str(tmp_path)) for a in TINY_ARGS]

    def run(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "kvtier", "measure", *extra, *args],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=600,
            preexec_fn=lambda: os.umask(env_umask),
        )

    out = tmp_path / "m.yaml"
    first = run("--out", str(out))
    assert first.returncode == 0, first.stderr
    assert stat.S_IMODE(out.stat().st_mode) == 0o640  # 0o666 & ~0o027, not mkstemp's 0o600
    again = run("--out", str(out))  # its own unchanged file: replaced
    assert again.returncode == 0, again.stderr
    forced = run("--out", str(tmp_path / "mine.yaml"), "--force")
    assert forced.returncode == 0, forced.stderr
    assert yaml.safe_load((tmp_path / "mine.yaml").read_text())["name"] == "measured-cpu"


# ---------------------------------------------------------------------------
# memory (item 16): under an address-space cap
# ---------------------------------------------------------------------------

CAP = 1 << 30
"""1 GiB of address space.  kvtier with numpy imported holds about 110 MB of it with one BLAS
thread (measured: VmSize 111,920 kB), so 0.6 x (1 GiB - 110 MB) = 0.58 GB is left for weights:
no preset's embedding and head fit beside one of its layers (the smallest, llama-2-7b, needs
1.05 + 0.81 = 1.86 GB of float32), and two layers of WIDE do (2 x 218 MB + 8 MB)."""

WIDE = {
    "hidden_size": 1024,
    "num_attention_heads": 8,
    "num_key_value_heads": 8,
    "intermediate_size": 16384,
    "vocab_size": 1000,
    "num_hidden_layers": 16,
    "tie_word_embeddings": False,
}
"""A model of 16 layers of 54.5 M parameters (1024 x 3072 + 1024 x 1024 + 3 x 1024 x 16384): 3.5 GB of
float32 weights in all, more than the cap; one layer is 218 MB, the embedding and head 8.2 MB."""


def run_capped(*args: str) -> subprocess.CompletedProcess[str]:
    """``kvtier ARGS`` in a subprocess whose address space is capped at :data:`CAP`."""

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (CAP, CAP))

    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    return subprocess.run(
        [sys.executable, "-m", "kvtier", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
        env=env,
        preexec_fn=cap,
    )


@pytest.mark.parametrize(
    ("extra", "needles"),
    [
        # --quick at the default model advises no `--layers 1` that the same memory would refuse
        pytest.param(
            ("--quick",),
            ["model 'llama-3-70b': not even one layer fits", "no preset fits either"],
            id="quick-default-model",
        ),
        pytest.param(
            ("--layers", "1"),
            ["model 'llama-3-70b': not even one layer fits", "no preset fits either"],
            id="layers-1-default-model",
        ),
    ],
)
def test_under_a_memory_cap_the_advice_is_one_that_works(tmp_path, extra, needles):
    proc = run_capped("measure", "--out", str(tmp_path / "m.yaml"), "--device", "cpu", *extra)
    assert_one_line(proc, needles, tmp_path)
    assert "--layers" not in proc.stderr  # no layer count is advised that the same memory would refuse
    assert list(tmp_path.iterdir()) == []
    assert all(name in PRESETS for name in ("llama-2-7b", "llama-3-70b"))  # the presets the cap comment sizes


def test_quick_picks_the_layers_that_fit_under_a_memory_cap_and_scales_to_all(tmp_path):
    # the whole WIDE model (3.5 GB) does not fit under the 1 GiB cap: --quick built all 16 layers (the free
    # memory of the machine, not of the process) and died with a MemoryError traceback
    config = tmp_path / "wide" / "config.json"
    config.parent.mkdir()
    config.write_text(json.dumps(WIDE))
    out = tmp_path / "m.yaml"
    proc = run_capped("measure", "--out", str(out), "--model", str(config), "--device", "cpu", "--quick")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    # (0.58 GB - 8.2 MB) // 218 MB = 2 layers fit, and QUICK_LAYERS is 2
    assert "16 tokens, 2 of 16 layers scaled to all" in proc.stderr, proc.stderr
    basis = yaml.safe_load(out.read_text())["assumptions"]["mfu.typical"]["basis"]
    assert "ran 2 of 16 layers" in basis and "scaled by 16/2" in basis
