"""The book build: validate, execute the notebooks with papermill, write tables, build HTML.

Steps, each of which can fail without touching the last good output:

1. load and validate the assumption set (seed + file + ``--set``);
2. read every notebook's ``parameters`` cell and compute its parameters (unknown
   parameter names are rejected);
3. execute with papermill the notebooks whose inputs changed (notebook source, its
   parameter values, the kvtier package), in parallel, reusing the others from the
   previous build; strip volatile metadata;
4. write the tables of record (CSV) and the figures (SVG) extracted from the notebooks;
5. build the HTML with Jupyter Book 1.x (execution off, warnings and missing
   references are errors);
6. swap the new output into place (a rename), so readers never see a half-built book.

A build writes into an output directory ``OUT`` (default ``_build``)::

    OUT/html/         the book
    OUT/tables/       tables of record (CSV)
    OUT/figures/      every figure (SVG)
    OUT/notebooks/    executed notebooks, volatile metadata stripped
    OUT/manifest.json inputs of each notebook (for incremental rebuilds)

The default build also copies the tables to ``book/tables/`` (committed).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat

import kvtier
from kvtier.assumptions import AssumptionSet, check_consistency
from kvtier.errors import KvtierError
from kvtier.models import config_path
from kvtier.report import notebook_parameters
from kvtier.scenario import Scenario
from kvtier.tables import csv_texts, write_csv_texts

MANIFEST = "manifest.json"
BOOK_FILES = ("_config.yml", "_toc.yml")
BOOK_DIRS = ("book",)
"""What Jupyter Book needs besides the executed notebooks."""


def project_root() -> Path:
    """The checkout holding ``_toc.yml`` and ``notebooks/``: the current directory or the package's parent."""
    for candidate in (Path.cwd(), Path(kvtier.__file__).resolve().parent.parent):
        if (candidate / "_toc.yml").is_file() and (candidate / "notebooks").is_dir():
            return candidate
    raise KvtierError("kvtier build needs the project checkout (a directory with _toc.yml and notebooks/)")


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


RENDERING_PACKAGES = ("numpy", "pandas", "matplotlib", "myst-nb", "papermill", "ipykernel", "nbformat")
"""Packages whose version changes what an executed notebook contains."""


def package_fingerprint() -> str:
    """A hash of the kvtier package's code and data and of the versions of the packages that
    shape notebook outputs: a change to either re-executes every notebook."""
    from importlib.metadata import PackageNotFoundError, version

    root = Path(kvtier.__file__).resolve().parent
    h = hashlib.sha256()
    for name in RENDERING_PACKAGES:
        try:
            h.update(f"{name}=={version(name)}".encode())
        except PackageNotFoundError:
            h.update(f"{name} absent".encode())
    for path in sorted(root.rglob("*")):
        if path.is_file() and path.suffix in (".py", ".yaml", ".json") and "__pycache__" not in path.parts:
            h.update(path.relative_to(root).as_posix().encode())
            h.update(path.read_bytes())
    return h.hexdigest()


@dataclass(frozen=True)
class NotebookJob:
    """One notebook of a build: its source, parameters and the hash of its inputs."""

    name: str
    source: Path
    parameters: dict[str, Any]
    inputs_hash: str


def declared_parameters(path: Path) -> list[str]:
    """Names assigned in the notebook's cell tagged ``parameters`` (via papermill's inspector)."""
    import papermill

    try:
        return sorted(papermill.inspect_notebook(str(path)))
    except Exception as exc:  # papermill raises several types for unreadable notebooks
        raise KvtierError(f"{path}: cannot read the notebook's parameters ({exc.__class__.__name__}: {exc})") from None


def plan(root: Path, assumptions: AssumptionSet) -> list[NotebookJob]:
    """Every notebook with its parameters and inputs hash; validates parameter names."""
    notebooks = sorted((root / "notebooks").glob("*.ipynb"))
    if not notebooks:
        raise KvtierError(f"{root / 'notebooks'}: no notebooks found")
    code = package_fingerprint()
    model_file = _model_file_hash(str(assumptions.value("model")))
    jobs = []
    for path in notebooks:
        params = notebook_parameters(declared_parameters(path), assumptions, path.name)
        h = hashlib.sha256()
        h.update(path.read_bytes())
        h.update(json.dumps(params, sort_keys=True).encode())
        h.update(code.encode())
        if "model" in params:
            h.update(model_file.encode())
        jobs.append(NotebookJob(path.stem, path, params, h.hexdigest()))
    return jobs


def _model_file_hash(spec: str) -> str:
    path = config_path(spec)
    return _sha256(path.read_bytes()) if path is not None and path.is_file() else ""


# ---------------------------------------------------------------------------
# executing notebooks
# ---------------------------------------------------------------------------


def strip_volatile(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Remove timestamps, durations and paths that papermill and the kernel write."""
    nb.metadata.pop("papermill", None)
    nb.metadata.get("language_info", {}).pop("version", None)
    for cell in nb.cells:
        cell.metadata.pop("papermill", None)
        cell.metadata.pop("execution", None)
        if "injected-parameters" in cell.metadata.get("tags", []):
            cell.metadata["tags"] = [*cell.metadata["tags"], "remove-cell"]
            cell["id"] = "injected-parameters"  # papermill draws a random id
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream" and output.get("name") == "stderr":
                output["text"] = "".join(
                    line for line in output["text"].splitlines(keepends=True) if "without encryption" not in line
                )
        if cell.cell_type == "code":
            cell.outputs = [
                o for o in cell.get("outputs", []) if not (o.get("output_type") == "stream" and not o["text"])
            ]
    return nb


def _failure_message(job: NotebookJob, output: Path, exc: Exception) -> str:
    """Name, failing cell source and error of a papermill failure."""
    ename = getattr(exc, "ename", exc.__class__.__name__)
    evalue = getattr(exc, "evalue", str(exc))
    source = ""
    if output.is_file():
        try:
            nb = nbformat.read(output, as_version=4)
            for cell in nb.cells:
                if cell.cell_type == "code" and any(o.get("output_type") == "error" for o in cell.get("outputs", [])):
                    source = cell.source
                    break
        except Exception:  # a half-written notebook: fall back to the bare error
            source = ""
    lines = [f"notebook {job.source.name} failed: {ename}: {evalue}".rstrip()]
    if source:
        lines.append("failing cell:")
        lines += ["    " + line for line in source.splitlines()]
    return "\n".join(lines)


def execute(job: NotebookJob, output: Path, cwd: Path) -> None:
    """Execute one notebook with papermill into ``output``, stripped of volatile metadata."""
    import papermill

    try:
        papermill.execute_notebook(
            str(job.source),
            str(output),
            parameters=job.parameters,
            cwd=str(cwd),
            progress_bar=False,
            log_output=False,
            kernel_name="python3",
            # the kernel's own log (a TCP-transport warning, a shutdown message) is noise in build output
            extra_arguments=["--IPKernelApp.log_level=CRITICAL"],
        )
    except Exception as exc:  # PapermillExecutionError and kernel start failures
        raise KvtierError(_failure_message(job, output, exc)) from None
    nb = nbformat.read(output, as_version=4)
    nbformat.write(strip_volatile(nb), output)


# ---------------------------------------------------------------------------
# outputs
# ---------------------------------------------------------------------------


def extract_figures(notebook: Path, directory: Path) -> list[Path]:
    """Write every glued SVG figure of ``notebook`` to ``directory/NAME.svg``."""
    nb = nbformat.read(notebook, as_version=4)
    paths = []
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            record = output.get("metadata", {}).get("scrapbook", {})
            name = record.get("name")
            svg = output.get("data", {}).get(record.get("mime_prefix", "") + "image/svg+xml")
            if name and svg:
                path = directory / f"{name}.svg"
                text = svg if isinstance(svg, str) else "".join(svg)
                if not text.lstrip().startswith("<"):
                    text = base64.b64decode(text).decode()
                path.write_text(text, encoding="utf-8", newline="\n")
                paths.append(path)
    return paths


def glued_values(notebook: Path) -> dict[str, Any]:
    """Every plain value a notebook glued (numbers and strings), by name."""
    from ast import literal_eval

    nb = nbformat.read(notebook, as_version=4)
    values: dict[str, Any] = {}
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            record = output.get("metadata", {}).get("scrapbook", {})
            data = output.get("data", {})
            prefix = record.get("mime_prefix", "")
            if record.get("name") and prefix + "text/plain" in data and prefix + "image/svg+xml" not in data:
                values[record["name"]] = literal_eval(data[prefix + "text/plain"])
    return values


def build_html(source: Path, dest: Path) -> None:
    """Build the book in ``source`` with Jupyter Book into ``dest`` (warnings are errors)."""
    jb = Path(sys.executable).with_name("jupyter-book")
    cmd = [str(jb) if jb.exists() else "jupyter-book", "build", str(source), "--path-output", str(source)]
    cmd += ["-W", "-n", "--keep-going", "--quiet"]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=source)
    if proc.returncode != 0:
        lines = (proc.stdout + proc.stderr).strip().splitlines()
        problems = [ln for ln in lines if "WARNING" in ln or "ERROR" in ln]
        raise KvtierError(f"jupyter-book build failed: {'; '.join(problems[:5] or lines[-1:])}")
    shutil.move(str(source / "_build" / "html"), str(dest))


def _swap_in(new: Path, target: Path) -> Path | None:
    """Put directory ``new`` at ``target``; return where the old ``target`` went (None if none).

    Two renames; if the second fails the old directory is put back before the error
    propagates, so ``target`` is never left missing.
    """
    old = None
    if target.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent))
        old.rmdir()
        target.rename(old)
    try:
        new.rename(target)
    except BaseException:
        if old is not None:
            old.rename(target)
        raise
    return old


def _swap_back(old: Path | None, target: Path) -> None:
    """Undo :func:`_swap_in`: the new ``target`` is removed and ``old`` restored."""
    if old is not None:
        shutil.rmtree(target, ignore_errors=True)
        old.rename(target)


def check_out_dir(out: Path, root: Path) -> None:
    """Refuse an output directory whose replacement would destroy something that is not a build.

    The build replaces ``out`` as a whole, so ``out`` must not be the checkout, a folder
    holding it, one of its source folders, or an existing non-empty directory that a
    kvtier build did not write (it has no ``manifest.json``).
    """
    out, root = out.resolve(), root.resolve()
    sources = [root / name for name in ("book", "notebooks", "kvtier", "tests", "scripts", ".git")]
    if out == root or root.is_relative_to(out) or any(out == d or out.is_relative_to(d) for d in sources):
        raise KvtierError(f"--out {out}: that is the project or one of its source folders; choose a new directory")
    if out.exists() and (not out.is_dir() or (any(out.iterdir()) and not (out / MANIFEST).is_file())):
        raise KvtierError(
            f"--out {out}: exists and was not written by kvtier build (no {MANIFEST}); choose a new or empty directory"
        )


# ---------------------------------------------------------------------------
# the build
# ---------------------------------------------------------------------------


@dataclass
class BuildResult:
    """What a build did."""

    out: Path
    executed: list[str]
    reused: list[str]
    up_to_date: bool


def _previous_manifest(out: Path) -> dict[str, Any]:
    try:
        return json.loads((out / MANIFEST).read_text())
    except (OSError, ValueError):
        return {}


def _book_hash(root: Path) -> str:
    h = hashlib.sha256()
    for name in BOOK_FILES:
        h.update((root / name).read_bytes())
    for d in BOOK_DIRS:
        for path in sorted(p for p in (root / d).rglob("*") if p.suffix in (".md", ".py", ".css")):
            h.update(path.relative_to(root).as_posix().encode())
            h.update(path.read_bytes())
    return h.hexdigest()


def _tables_current(directory: Path, texts: Mapping[str, str]) -> bool:
    """Whether ``directory`` holds exactly these tables of record, byte for byte."""
    try:
        present = {p.stem: p.read_text(encoding="utf-8") for p in directory.glob("*.csv")}
    except OSError:
        return False
    return present == dict(texts)


def build(
    assumptions: AssumptionSet,
    out: Path | None = None,
    jobs: int | None = None,
    log: Callable[[str], None] = print,
    root: Path | None = None,
) -> BuildResult:
    """Build the book for ``assumptions`` into ``out`` (default ``ROOT/_build``).

    Parameters
    ----------
    assumptions : AssumptionSet
        Validated assumption set.
    out : Path, optional
        Output directory; None is the default book, which also updates ``book/tables``.
    jobs : int, optional
        Notebooks executed in parallel (default: the number of CPU cores).
    log : callable
        Receives one line per step (progress).
    """
    root = root or project_root()
    default = out is None
    out = (root / "_build") if out is None else Path(out).resolve()
    jobs = max(1, jobs or os.cpu_count() or 1)
    started = time.perf_counter()

    # validate everything before anything runs: keys agree, the model loads, every table computes
    check_consistency(assumptions)
    scenario = Scenario(assumptions)
    table_texts = csv_texts(scenario)
    work = plan(root, assumptions)
    previous = _previous_manifest(out)
    prev_nbs = previous.get("notebooks", {})
    manifest = {
        "book": _book_hash(root),
        "notebooks": {job.name: job.inputs_hash for job in work},
        "assumptions": assumptions.to_dict(),
    }
    stale = [
        job
        for job in work
        if prev_nbs.get(job.name) != job.inputs_hash or not (out / "notebooks" / f"{job.name}.ipynb").is_file()
    ]
    fresh = [job for job in work if job not in stale]
    tables_ok = _tables_current(out / "tables", table_texts) and (
        not default or _tables_current(root / "book" / "tables", table_texts)
    )
    if not stale and previous.get("book") == manifest["book"] and (out / "html" / "index.html").is_file() and tables_ok:
        log(f"nothing changed: {len(work)} notebooks up to date, the book at {out / 'html'} is current")
        return BuildResult(out, [], [job.name for job in work], True)

    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.build-", dir=out.parent))
    except OSError as exc:
        raise KvtierError(f"{out}: cannot create the output directory ({exc.strerror or exc})") from None
    tables_new: Path | None = None
    try:
        src = staging / "src"
        (src / "notebooks").mkdir(parents=True)
        for name in BOOK_FILES:
            shutil.copy2(root / name, src / name)
        for d in BOOK_DIRS:
            shutil.copytree(root / d, src / d, ignore=shutil.ignore_patterns("tables", ".tables.*"))
        for job in fresh:
            shutil.copy2(out / "notebooks" / f"{job.name}.ipynb", src / "notebooks" / f"{job.name}.ipynb")
            log(f"[reuse] {job.name}.ipynb: inputs unchanged")
        _execute_all(stale, src / "notebooks", Path.cwd(), jobs, log)

        log("writing tables of record and figures")
        write_csv_texts(table_texts, staging / "tables")
        (staging / "figures").mkdir()
        for job in work:
            extract_figures(src / "notebooks" / f"{job.name}.ipynb", staging / "figures")
        shutil.copytree(src / "notebooks", staging / "notebooks")

        log("building the HTML with Jupyter Book (warnings are errors)")
        build_html(src, staging / "html")
        shutil.rmtree(src)
        (staging / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")

        if default:
            tables_new = Path(tempfile.mkdtemp(prefix=".tables.", dir=root / "book"))
            write_csv_texts(table_texts, tables_new)
        old_out = _swap_in(staging, out)
        if default:
            try:
                old_tables = _swap_in(tables_new, root / "book" / "tables")
            except BaseException:
                _swap_back(old_out, out)
                raise
            if old_tables is not None:
                shutil.rmtree(old_tables, ignore_errors=True)
        if old_out is not None:
            shutil.rmtree(old_out, ignore_errors=True)
    except OSError as exc:
        raise KvtierError(f"build failed writing {exc.filename or out}: {exc.strerror or exc}") from None
    finally:
        for leftover in (staging, tables_new):
            if leftover is not None and leftover.exists():
                shutil.rmtree(leftover, ignore_errors=True)
    log(
        f"done in {time.perf_counter() - started:.1f} s: executed {len(stale)}, reused {len(fresh)};"
        f" book at {out / 'html' / 'index.html'}"
    )
    return BuildResult(out, [job.name for job in stale], [job.name for job in fresh], False)


def _execute_all(stale: list[NotebookJob], dest: Path, cwd: Path, jobs: int, log: Callable[[str], None]) -> None:
    """Execute ``stale`` notebooks into ``dest``, ``jobs`` at a time; the first failure stops the build."""
    total = len(stale)
    if not total:
        return

    def run(job: NotebookJob) -> str:
        execute(job, dest / f"{job.name}.ipynb", cwd)
        return job.name

    done = 0
    with ThreadPoolExecutor(max_workers=min(jobs, total)) as pool:
        log(f"executing {total} notebook(s), {min(jobs, total)} at a time")
        futures = {pool.submit(run, job): job for job in stale}
        try:
            for future in as_completed(futures):
                name = future.result()
                done += 1
                log(f"[{done}/{total}] executed {name}.ipynb ({total - done} remaining)")
        except BaseException:
            for f in futures:
                f.cancel()
            raise
