"""Shared fixtures: the seed scenario and a helper that runs the CLI as a user would."""

from __future__ import annotations

import ast
import contextlib
import csv
import io
import json
import shutil
import subprocess
import sys
import warnings
from ast import literal_eval
from importlib import resources
from pathlib import Path
from typing import Any

import nbformat
import pytest
from hypothesis import settings

from kvtier import Scenario
from kvtier.inputs import traces
from kvtier.inputs.assumptions import load_assumptions
from kvtier.pipeline.execution import read_page
from kvtier.report import pages
from kvtier.report.diff import Change

# Property tests check values, not speed: no per-example deadline (timing lives in benchmarks/).
settings.register_profile("kvtier", deadline=None)
settings.load_profile("kvtier")

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def seed_scenario() -> Scenario:
    return Scenario()


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``kvtier ARGS`` in this process, as the console script does, and return what a process would show.

    :func:`kvtier.commands.main` runs with ``cwd`` as the working directory and its standard output and
    error captured; its return value (or the code of a ``SystemExit``, as argparse's ``--version`` raises)
    is the exit status. A warning it emits is written to the captured standard error as Python prints it
    in a process, so the one-line contract sees it. An unexpected exception propagates: the test fails
    with its traceback, as a process would print one. :func:`run_cli_process` runs a real process, for
    what only a process shows (signals, memory limits, the interpreter's own exit status).
    """
    from kvtier.commands import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.chdir(cwd or ROOT), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                status = main(list(args))
            except SystemExit as exc:
                status = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    shown = "".join(warnings.formatwarning(w.message, w.category, w.filename, w.lineno, w.line) for w in caught)
    return subprocess.CompletedProcess(["kvtier", *args], status, out.getvalue(), err.getvalue() + shown)


def run_cli_process(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``python -m kvtier ARGS`` in a subprocess; return the completed process."""
    return subprocess.run(
        [sys.executable, "-m", "kvtier", *args], capture_output=True, text=True, cwd=cwd or ROOT, timeout=600
    )


def run_cli_json(*args: str) -> dict:
    proc = run_cli(*args, "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def write_config(path: Path, **fields) -> Path:
    path.write_text(json.dumps(fields))
    return path


_TABLE_TEXTS: dict[tuple[tuple[str, str], ...], dict[str, str]] = {}


def table_texts(**sets: str) -> dict[str, str]:
    """Every table of record's CSV text under the seed set with ``sets`` applied, computed once per session.

    The seed's own tables are the committed ``book/tables/*.csv``: tests/report/test_notebook.py proves a
    fresh build writes them byte for byte.
    """
    key = tuple(sorted(sets.items()))
    if key not in _TABLE_TEXTS:
        if sets:
            from kvtier.report.pages import csv_texts

            _TABLE_TEXTS[key] = csv_texts(Scenario(load_assumptions(sets=sets)))
        else:
            _TABLE_TEXTS[key] = {p.stem: p.read_text(encoding="utf-8") for p in sorted(TABLES.glob("*.csv"))}
    return _TABLE_TEXTS[key]


def write_tables(directory: Path, **sets: str) -> list[Path]:
    """Write every table of record as ``NAME.csv`` under ``directory``, as a build does (see :func:`table_texts`)."""
    from kvtier.report.tables import write_csv_texts

    return write_csv_texts(table_texts(**sets), directory)


def build(out: Path, *args: str, cwd: Path = ROOT, env: dict[str, str] | None = None):
    """``kvtier build --out OUT ARGS`` in a subprocess."""
    return subprocess.run(
        [sys.executable, "-m", "kvtier", "build", "--out", str(out), *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=600,
        env=env,
    )


@pytest.fixture(scope="session")
def seed_build(tmp_path_factory) -> Path:
    """One build with the seed assumptions, shared by every test that needs a finished book."""
    out = tmp_path_factory.mktemp("builds") / "seed"
    proc = build(out)
    assert proc.returncode == 0, proc.stderr
    return out


def snapshot(directory: Path) -> dict[str, bytes]:
    """Every file below ``directory`` with its bytes."""
    return {p.relative_to(directory).as_posix(): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def copy_project(tmp_path: Path) -> Path:
    """A copy of the book's sources (config, pages, notebooks) to break without touching the checkout."""
    project = tmp_path / "project"
    project.mkdir()
    for name in ("_config.yml", "_toc.yml"):
        shutil.copy2(ROOT / name, project / name)
    shutil.copytree(ROOT / "book", project / "book")
    shutil.copytree(ROOT / "notebooks", project / "notebooks")
    return project


SMALL_PAGES = ("01_block_unit", "02_fetch")
"""The pages of the small project: two pages, so that a rebuild can execute one and reuse the other."""


def copy_small_project(tmp_path: Path) -> Path:
    """A project of two pages for the build's mechanics (locks, kills, damaged outputs, failing notebooks).

    The book's configuration and ``book/`` as they are, the notebooks of :data:`SMALL_PAGES` and a
    ``_toc.yml`` of them; the fetch page's link to the assumptions page, which this project lacks, is
    plain words. It builds in a fraction of the real book's time.
    """
    project = tmp_path / "small-project"
    project.mkdir()
    shutil.copy2(ROOT / "_config.yml", project / "_config.yml")
    shutil.copytree(ROOT / "book", project / "book", ignore=shutil.ignore_patterns("tables"))
    (project / "notebooks").mkdir()
    for name in SMALL_PAGES:
        text = (ROOT / "notebooks" / f"{name}.md").read_text()
        text = text.replace("{doc}`the assumptions page <00_assumptions>`", "the assumptions page")
        (project / "notebooks" / f"{name}.md").write_text(text)
    first, *rest = SMALL_PAGES
    chapters = "".join(f"  - file: notebooks/{name}\n" for name in rest)
    (project / "_toc.yml").write_text(f"format: jb-book\nroot: notebooks/{first}\nchapters:\n{chapters}")
    return project


@pytest.fixture(scope="session")
def small_build(tmp_path_factory) -> tuple[Path, Path]:
    """The small project (:func:`copy_small_project`) and one finished build of it: (project, out)."""
    base = tmp_path_factory.mktemp("small")
    project = copy_small_project(base)
    out = base / "out"
    proc = build(out, cwd=project)
    assert proc.returncode == 0, proc.stderr
    return project, out


def glued_values(notebook: Path) -> dict[str, Any]:
    """Every plain value an executed notebook glued (numbers and strings), by name; not its figures and tables."""
    nb = nbformat.read(notebook, as_version=4)
    values: dict[str, Any] = {}
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            record = output.get("metadata", {}).get("scrapbook", {})
            data = output.get("data", {})
            prefix = record.get("mime_prefix", "")
            figure_or_table = prefix + "image/svg+xml" in data or prefix + "text/html" in data
            if record.get("name") and prefix + "text/plain" in data and not figure_or_table:
                values[record["name"]] = literal_eval(data[prefix + "text/plain"])
    return values


# ---- the beyond-the-chapter pages --------------------------------------------------------------


TABLES = ROOT / "book" / "tables"


def scenario(**sets: str) -> Scenario:
    return Scenario(load_assumptions(sets=sets))


_SCENARIOS: dict[tuple[tuple[str, str], ...], Scenario] = {}


def shared_scenario(**sets: str) -> Scenario:
    """The seed set with ``sets`` applied, one :class:`Scenario` per session: for tests that only read it, so
    that what it computes once (a trace's curve and policies) serves them all. A test of a fresh scenario's own
    work (its caches, a computation from scratch) uses :func:`scenario`."""
    key = tuple(sorted(sets.items()))
    if key not in _SCENARIOS:
        _SCENARIOS[key] = Scenario(load_assumptions(sets=sets))
    return _SCENARIOS[key]


def csv_rows(name: str) -> list[dict[str, str]]:
    with (TABLES / f"{name}.csv").open(newline="") as f:
        return list(csv.DictReader(f))


# ---- traces ------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------
# a hand-made trace of five requests, 4 tokens a block
# ---------------------------------------------------------------------------

HAND = [
    {"timestamp": 0, "input_length": 8, "output_length": 5, "hash_ids": [1, 2]},
    {"timestamp": 1000, "input_length": 10, "output_length": 6, "hash_ids": [1, 2, 3]},
    {"timestamp": 2000, "input_length": 4, "output_length": 7, "hash_ids": [4]},
    {"timestamp": 3000, "input_length": 7, "output_length": 8, "hash_ids": [1, 5]},
    {"timestamp": 5000, "input_length": 10, "output_length": 9, "hash_ids": [1, 2, 3]},
]


def write_trace(path: Path, rows: list[dict] | list[str]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


@pytest.fixture
def hand(tmp_path) -> Path:
    return write_trace(tmp_path / "hand.jsonl", HAND)


def hand_scenario_in(tmp_path: Path, **values: str):
    """The seed set reading the HAND trace (written under ``tmp_path``) in 4-token blocks, with ``values`` on top."""
    from kvtier.inputs.assumptions import seed
    from kvtier.scenario import Scenario

    path = write_trace(tmp_path / "hand.jsonl", HAND)
    sets = {"workload.trace": str(path), "workload.block_tokens": "4", **values}
    return Scenario(seed().with_values(sets, source="test"))


# ---------------------------------------------------------------------------
# bad traces: one line naming file and line, exit status 2, nothing written
# ---------------------------------------------------------------------------

GOOD = {"timestamp": 0, "input_length": 1000, "output_length": 10, "hash_ids": [1, 2]}


BAD = {
    "malformed": (['{"timestamp": 0, "input_length": 10'], 1, "malformed JSON"),
    "not an object": (["[1, 2]"], 1, "expected a JSON object"),
    "missing field": ([{k: v for k, v in GOOD.items() if k != "hash_ids"}], 1, "missing field 'hash_ids'"),
    "negative length": ([GOOD, {**GOOD, "output_length": -3}], 2, "'output_length' is negative (-3)"),
    "fractional length": ([{**GOOD, "input_length": 10.5}], 1, "'input_length' must be a whole number"),
    # 1000 tokens at 512 a block need ceil(1000 / 512) = 2 ids
    "hash_ids length": ([GOOD, GOOD, {**GOOD, "hash_ids": [1, 2, 3]}], 3, "has 3 ids but input_length 1000"),
    "hash_ids not ints": ([{**GOOD, "hash_ids": [1, "x"]}], 1, "'hash_ids' must be a list of integers"),
    "timestamp backwards": ([{**GOOD, "timestamp": 5}, {**GOOD, "timestamp": 4}], 2, "goes backwards"),
    "hash id too large": (
        [{**GOOD, "hash_ids": [1, 2**70]}],
        1,
        "a hash id does not fit in 64 bits, signed or unsigned",
    ),
    "timestamp not a number": ([{**GOOD, "timestamp": "now"}], 1, "'timestamp' must be a finite number"),
}


# ---------------------------------------------------------------------------
# trace formats: Alibaba's Qwen traces (timestamps in s, one id per 16-token block, not chained)
# ---------------------------------------------------------------------------

QWEN = [
    # the fields of qwen-bailian-usagetraces-anon's README (ATC'25): chat_id, parent_chat_id, timestamp (s since the
    # trace's start), input_length, output_length, type, turn, hash_ids (one salted SipHash per 16-token block)
    {"chat_id": 0, "parent_chat_id": -1, "timestamp": 0.0, "input_length": 40, "output_length": 10, "type": "text",
     "turn": 1, "hash_ids": [10, 11, 12]},
    {"chat_id": 1, "parent_chat_id": 0, "timestamp": 1.5, "input_length": 70, "output_length": 12, "type": "text",
     "turn": 2, "hash_ids": [10, 11, 12, 13, 14]},
    {"chat_id": 2, "parent_chat_id": -1, "timestamp": 4.0, "input_length": 32, "output_length": 5, "type": "search",
     "turn": 1, "hash_ids": [99, 11]},
    {"chat_id": 3, "parent_chat_id": 1, "timestamp": 6.0, "input_length": 90, "output_length": 7, "type": "text",
     "turn": 3, "hash_ids": [10, 11, 12, 13, 14, 15]},
]  # fmt: skip


@pytest.fixture
def qwen(tmp_path) -> Path:
    return write_trace(tmp_path / "qwen.jsonl", QWEN)


# ---- tables of record of two runs (kvtier diff) ------------------------------------------------


# ---------------------------------------------------------------------------
# fixtures and helpers
# ---------------------------------------------------------------------------


@pytest.fixture(scope="session")
def seed_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("seed")
    write_tables(out)
    return out


@pytest.fixture(scope="session")
def fast_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The seed with the mid bandwidth bracket at 100 GB/s instead of 64 GB/s."""
    out = tmp_path_factory.mktemp("fast")
    write_tables(out, **{"bandwidth.mid": "100GB/s"})
    return out


def by_cell(changes: list[Change]) -> dict[tuple[str, str, str], Change]:
    out = {(c.table, c.row, c.column): c for c in changes}
    assert len(out) == len(changes), "one change per cell"
    return out


def git(repo: Path, *args: str) -> str:
    proc = subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, input="")
    return proc.stdout.strip()


GIT_ENV = {
    "GIT_AUTHOR_NAME": "kvtier test",
    "GIT_AUTHOR_EMAIL": "test@example.invalid",
    "GIT_COMMITTER_NAME": "kvtier test",
    "GIT_COMMITTER_EMAIL": "test@example.invalid",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_CONFIG_NOSYSTEM": "1",
}
"""A git identity and no user or system configuration, for the repositories the tests make."""


@pytest.fixture
def git_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository whose first commit holds the seed tables, its second the 100 GB/s ones."""
    for var, value in GIT_ENV.items():
        monkeypatch.setenv(var, value)
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    write_tables(repo / "book" / "tables")
    (repo / "README").write_text("x\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "seed")
    write_tables(repo / "book" / "tables", **{"bandwidth.mid": "100GB/s"})
    git(repo, "commit", "-q", "-am", "faster mid link")
    # The working tree moves on; revisions are read from git, not from the checkout.
    write_tables(repo / "book" / "tables", **{"interior.position": "20000"})
    return repo


# ---- pages and notebooks -----------------------------------------------------------------------


NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.md"))


# ---------------------------------------------------------------------------
# the notebooks as committed
# ---------------------------------------------------------------------------


def parameter_defaults(path: Path) -> dict[str, object]:
    """The values a page's ``parameters`` cell assigns, by name."""
    nb = read_page(path)
    (cell,) = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    tree = ast.parse(cell.source)
    return {
        (node.targets[0] if isinstance(node, ast.Assign) else node.target).id: ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, (ast.Assign, ast.AnnAssign))
    }


NUMBERS = {page.notebook: page.numbers for page in pages.PAGES}
"""Each notebook and the package function that computes every number its prose quotes."""


# ---- measurements ------------------------------------------------------------------------------


# ---------------------------------------------------------------------------
# the measured assumption set
# ---------------------------------------------------------------------------

MEASURED_SET = ROOT / "kvtier" / "data" / "h200-measured.yaml"


# ---- the probe ---------------------------------------------------------------------------------


TINY = {
    "model_type": "llama",
    "hidden_size": 64,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "intermediate_size": 128,
    "vocab_size": 256,
    "num_hidden_layers": 3,
    "tie_word_embeddings": False,
    "max_position_embeddings": 4096,
}
"""A Llama-shaped model small enough to measure in a test: 3 layers of 64 wide."""


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("tiny") / "config.json"
    path.write_text(json.dumps(TINY))
    return str(path)


# ---- hardware ----------------------------------------------------------------------------------


W70 = 140e9  # 70e9 params x 2 B = 140e9 B


BLOCK70 = 5_242_880  # 16 tokens x 327,680 B = 5 MiB


# ---- models ------------------------------------------------------------------------------------


# Llama-3-70B in bf16: 2 x 80 layers x 8 KV heads x 128 x 2 B = 327,680 B per token.
KV_70B = 327_680


def raw_config(preset: str) -> dict:
    return json.loads(resources.files("kvtier.data").joinpath("models", f"{preset}.json").read_text())


# ---- traces as JSON lines ----------------------------------------------------------------------


def trace_text(rows: list[dict]) -> str:
    """``rows`` as the lines of a JSONL trace."""
    return "\n".join(json.dumps(r) for r in rows)


def trace_of(blocks_per_request: list[list[int]], times_ms: list[float] | None = None, block_tokens: int = 1):
    """A trace of one request per list, each block full (``block_tokens`` tokens), one second apart by default."""
    times = times_ms if times_ms is not None else [1000.0 * i for i in range(len(blocks_per_request))]
    rows = [
        {"timestamp": t, "input_length": len(ids) * block_tokens, "output_length": 1, "hash_ids": ids}
        for t, ids in zip(times, blocks_per_request, strict=True)
    ]
    return traces.parse_trace(trace_text(rows), "t", block_tokens)


# ---- markers -----------------------------------------------------------------------------------


BOOK_FIXTURES = frozenset({"seed_build", "custom_build", "bandwidth_build", "small_build"})
"""Fixtures that build a book: a test that takes one is a ``book`` test."""

XDIST_GROUPS: dict[str, str] = {"seed_build": "seed", "bandwidth_build": "seed", "custom_build": "custom"}
"""Session fixtures that build a whole book, and the group of tests that take each: with ``pytest -n N --dist
loadgroup`` (``scripts/test.sh``) one worker runs a group, so each book is built once, not once per worker."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test that takes a built book ``book`` and every test that takes a browser ``browser``.

    ``pytest -m "not book and not browser"`` is then the edit loop: no book is built and no browser
    started. A test that builds a book itself says so with ``@pytest.mark.book``.  Tests that share a
    book built once a session join its :data:`XDIST_GROUPS` group.
    """
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        if names & BOOK_FIXTURES:
            item.add_marker(pytest.mark.book)
        if "browser" in names:
            item.add_marker(pytest.mark.browser)
        group = next((g for fixture, g in XDIST_GROUPS.items() if fixture in names), None)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
