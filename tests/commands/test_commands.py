"""The command line as a whole: version, usage, and quick answers that stay light."""

import subprocess
import sys

import pytest

from kvtier.commands import COMMANDS, build_parser
from tests.conftest import ROOT, run_cli


def test_version_and_usage():
    import kvtier

    proc = run_cli("--version")
    assert proc.returncode == 0 and proc.stdout.strip() == f"kvtier {kvtier.__version__}"
    bare = run_cli()
    # no command: the usage line and one error line, status 2 like every usage error
    assert bare.returncode == 2 and bare.stdout == ""
    assert " ".join(bare.stderr.split()).startswith(
        "usage: kvtier [-h] [--version] {model,compare,tiers,build,diff,measure,workload,cost}"
    )
    assert bare.stderr.strip().splitlines()[-1] == "kvtier: error: name a command (kvtier --help lists them)"


TRACE_CODE = (
    "numba",
    "dask",
    "distributed",
    "orjson",
    "kvtier.inputs.traces.read",
    "kvtier.inputs.traces.scan",
    "kvtier.inputs.traces.stream",
    "kvtier.inputs.distributed",
    "kvtier.formulas.cache.stream",
    "kvtier.formulas.cache.replay",
    "kvtier.formulas.cache.policies",
    "kvtier.formulas.cache.hierarchy",
)
"""What only the analysis of a trace needs: numba, Dask, the trace reader and the cache simulations."""
ENGINE_MODEL = ("aiconfigurator_core",)
"""What only the engine model's measured kernels need (kvtier.inputs.kernels)."""
BUILD = ("pandas", "pyarrow", "matplotlib", "papermill", "nbformat")
"""What only the tables, figures and the build need (pandas loads pyarrow where it is installed)."""


@pytest.mark.parametrize(
    ("argv", "absent"),
    [
        (["compare"], TRACE_CODE + BUILD + ENGINE_MODEL),
        (["model", "llama-3-70b"], TRACE_CODE + BUILD + ENGINE_MODEL),
        # the tier ladder is a table of its page: pandas, but no figure, no trace, no other page
        (["tiers"], (*TRACE_CODE, *ENGINE_MODEL, "matplotlib", "papermill", "nbformat", "kvtier.report.pages.cost")),
    ],
    ids=lambda v: v[0] if isinstance(v, list) else None,
)
def test_a_quick_answer_imports_only_what_it_uses(argv, absent):
    # start-up time is measured in benchmarks/bench.py (e); here: the heavy imports it depends on stay out
    code = (
        "import sys; from kvtier.commands import main; status = main(sys.argv[1:-1]);"
        "print(status, sorted(m for m in sys.argv[-1].split(',') if m in sys.modules))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, *argv, ",".join(absent)], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "0 []"


def test_the_check_sees_a_heavy_import():
    # the test above is only as good as its probe: the command that analyses a trace loads the trace code
    # even to refuse a missing file (status 2)
    code = (
        "import sys; from kvtier.commands import main; status = main(['workload', 'no-such-trace.jsonl']);"
        "print(status, 'kvtier.inputs.traces.read' in sys.modules, 'kvtier.formulas.cache.stream' in sys.modules)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.stdout.strip().splitlines()[-1] == "2 True True", proc.stderr


def test_a_command_registers_alone_and_every_command_for_help():
    # main() registers the command it runs (importing no other command's module); --help lists all eight
    alone = build_parser("compare")
    assert "compare" in alone.format_usage() and "workload" not in alone.format_help()
    assert all(name in build_parser().format_help() for name in COMMANDS) and len(COMMANDS) == 8
