"""The command line as a whole: version, usage, and quick answers that stay light."""

from tests.conftest import run_cli


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


def test_a_quick_answer_imports_neither_pandas_nor_matplotlib():
    # start-up time is measured in benchmarks/bench.py (e); here: the heavy imports it depends on stay out
    import subprocess
    import sys

    code = (
        "import sys; from kvtier.commands import main; status = main(['compare']);"
        "print(sorted(m for m in ('pandas', 'matplotlib', 'papermill', 'nbformat') if m in sys.modules))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "[]"
