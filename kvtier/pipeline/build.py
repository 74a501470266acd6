"""The book build: validate, execute the notebooks with papermill, write tables, build HTML.

Steps, each of which can fail without touching the last good output:

1. load and validate the assumption set (seed + file + ``--set``);
2. read every notebook's ``parameters`` cell and compute its parameters (unknown
   parameter names are rejected);
3. stream the workload trace once for every part the pages ask of it
   (:func:`kvtier.analysis.prime`) and compute the tables of record, the trace's results
   stored where the kernels read them; execute with papermill the notebooks whose inputs
   changed (notebook source, its parameter values, the kvtier package), in parallel, reusing
   the others from the previous build; strip volatile metadata;
4. write the tables of record (CSV) of every page in :data:`kvtier.report.pages.PAGES` and the
   figures (SVG) extracted from the notebooks;
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
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat

import kvtier
from kvtier import analysis as trace_analysis
from kvtier import store
from kvtier.errors import KvtierError
from kvtier.inputs.assumptions import AssumptionSet, check_consistency
from kvtier.inputs.models import config_path
from kvtier.inputs.traces import trace_path
from kvtier.pipeline import calculator, outdir
from kvtier.pipeline.execution import NotebookJob, execute_all, read_page, signals_held
from kvtier.report import pages, preview
from kvtier.report.notebook import PARAM_KEYS, PROVENANCE_PARAM, SET_NAME_PARAM, notebook_parameters, param_name
from kvtier.report.tables import write_csv_texts
from kvtier.scenario import Scenario

MANIFEST = outdir.MANIFEST
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
        if path.is_file() and path.suffix in (".py", ".yaml", ".json", ".jsonl") and "__pycache__" not in path.parts:
            h.update(path.relative_to(root).as_posix().encode())
            h.update(path.read_bytes())
    return h.hexdigest()


PAGE_SUFFIX = ".md"
"""Pages are MyST Markdown text notebooks (jupytext's ``myst`` format)."""


def declared_parameters(nb: nbformat.NotebookNode, where: str) -> list[str]:
    """Names assigned in the notebook's cell tagged ``parameters``."""
    import ast

    cells = [c for c in nb.cells if c.cell_type == "code" and "parameters" in c.metadata.get("tags", [])]
    if len(cells) != 1:
        raise KvtierError(f"{where}: needs exactly one code cell tagged 'parameters', found {len(cells)}")
    try:
        tree = ast.parse(cells[0].source)
    except SyntaxError as exc:
        raise KvtierError(f"{where}: the parameters cell is not valid Python ({exc.msg}, line {exc.lineno})") from None
    names = set()
    for node in tree.body:
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        )
        names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return sorted(names)


def page_parameters(path: Path) -> list[str]:
    """The parameters of the page ``path``: its page module's ``KEYS``, which its cell must declare.

    Raises
    ------
    KvtierError
        One line, when the page has no page module or its ``parameters`` cell and the
        module's ``KEYS`` disagree (naming the first key each side lacks).
    """
    page = pages.page_of(path.stem)
    if page is None:
        raise KvtierError(f"{path}: no page module in kvtier/report/pages declares NOTEBOOK = {path.stem!r}")
    declared = declared_parameters(read_page(path), path.name)
    expected = {param_name(key) for key in page.keys}
    extras = {PROVENANCE_PARAM, SET_NAME_PARAM}
    lacking = sorted(expected - set(declared))
    unknown = sorted(name for name in set(declared) - expected - extras if name in PARAM_KEYS)
    if lacking or unknown:
        what = "; ".join(
            part
            for part in (
                lacking
                and f"the cell lacks '{lacking[0]}'" + (f" and {len(lacking) - 1} more" if len(lacking) > 1 else ""),
                unknown
                and f"{page.module}.KEYS lacks the key of '{unknown[0]}'"
                + (f" and {len(unknown) - 1} more" if len(unknown) > 1 else ""),
            )
            if part
        )
        raise KvtierError(f"{path}: the parameters cell and {page.module}.KEYS disagree: {what}")
    return sorted(declared)


def plan(root: Path, assumptions: AssumptionSet) -> list[NotebookJob]:
    """Every notebook with its parameters and inputs hash; validates parameter names."""
    notebooks = sorted((root / "notebooks").glob(f"*{PAGE_SUFFIX}"))
    if not notebooks:
        raise KvtierError(f"{root / 'notebooks'}: no pages (*{PAGE_SUFFIX}) found")
    code = package_fingerprint()
    model_file = _model_file_hash(str(assumptions.value("model")))
    trace_file = _trace_file_hash(str(assumptions.value("workload.trace")))
    jobs = []
    for path in notebooks:
        params = notebook_parameters(page_parameters(path), assumptions, path.name)
        h = hashlib.sha256()
        h.update(path.read_bytes())
        h.update(json.dumps(params, sort_keys=True).encode())
        h.update(code.encode())
        if "model" in params:
            h.update(model_file.encode())
        if "workload_trace" in params:
            h.update(trace_file.encode())
        jobs.append(NotebookJob(path.stem, path, params, h.hexdigest()))
    return jobs


def tables_key(assumptions: AssumptionSet) -> str:
    """A hash of everything the tables of record are computed from: the set, the package's code and data,
    and the model and trace files the set names. Two builds with one key write the same tables."""
    h = hashlib.sha256()
    h.update(json.dumps(assumptions.to_dict(), sort_keys=True).encode())
    h.update(package_fingerprint().encode())
    h.update(_model_file_hash(str(assumptions.value("model"))).encode())
    h.update(_trace_file_hash(str(assumptions.value("workload.trace"))).encode())
    return h.hexdigest()


def _model_file_hash(spec: str) -> str:
    path = config_path(spec)
    return _sha256(path.read_bytes()) if path is not None and path.is_file() else ""


def _trace_file_hash(spec: str) -> str:
    """The hash of the trace file ``workload.trace`` names, so that editing it re-executes the page reading it."""
    try:
        _, path = trace_path(spec)
    except KvtierError:
        return ""  # the page itself reports the missing trace
    if not path.is_file():
        return ""
    h = hashlib.sha256()
    with path.open("rb") as f:  # in blocks of 1 MiB: a trace of any size hashes in constant memory
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


# ---------------------------------------------------------------------------
# outputs
# ---------------------------------------------------------------------------


FIGURE_DIR = "_figures"
"""Where, beside the markdown pages of ``book/``, the build puts every figure (``NAME.svg``) for them to show."""


def extract_figures(notebook: Path, directory: Path) -> list[Path]:
    """Write every glued SVG figure of ``notebook`` to ``directory/NAME.svg``.

    Raises
    ------
    KvtierError
        When a glued figure has no image (its backend drew nothing): the page would show
        the figure's text form instead.
    """
    nb = nbformat.read(notebook, as_version=4)
    paths = []
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            record = output.get("metadata", {}).get("scrapbook", {})
            name = record.get("name")
            data = output.get("data", {})
            prefix = record.get("mime_prefix", "")
            svg = data.get(prefix + "image/svg+xml")
            text = data.get(prefix + "text/plain", "")
            if name and not svg and "".join(text).startswith("<Figure"):
                raise KvtierError(f"notebook {notebook.name}: figure {name!r} did not render (no SVG image)")
            if name and svg:
                path = directory / f"{name}.svg"
                text = svg if isinstance(svg, str) else "".join(svg)
                if not text.lstrip().startswith("<"):
                    text = base64.b64decode(text).decode()
                path.write_text(text, encoding="utf-8", newline="\n")
                paths.append(path)
    return paths


def build_html(source: Path, dest: Path, home: Path | None = None) -> None:
    """Build the book in ``source`` with Jupyter Book into ``dest`` (warnings are errors).

    ``home`` holds the configuration directories of the tools it loads (see :func:`tool_settings`).
    """
    jb = Path(sys.executable).with_name("jupyter-book")
    cmd = [str(jb) if jb.exists() else "jupyter-book", "build", str(source), "--path-output", str(source)]
    cmd += ["-W", "-n", "--keep-going", "--quiet"]
    env = {**os.environ, **(tool_settings(home) if home is not None else {})}
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=source, env=env)
    if proc.returncode != 0:
        # the staging directory's name means nothing to the reader: paths are shown relative to the project
        text = ANSI.sub("", proc.stdout + proc.stderr).replace(f"{source}{os.sep}", "").replace(str(source), ".")
        lines = text.strip().splitlines()
        problems = [ln for ln in lines if "WARNING" in ln or "ERROR" in ln]
        raise KvtierError(f"jupyter-book build failed: {'; '.join(problems[:5] or lines[-1:])}")
    shutil.move(str(source / "_build" / "html"), str(dest))


ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
"""Terminal colour and cursor codes, removed from messages passed on to the user."""


def check_out_dir(out: Path, root: Path) -> None:
    """Refuse an ``--out`` whose replacement could destroy something that is not a kvtier build.

    ``out`` must not be the checkout, a folder holding it, one of its source folders, or
    inside the default output ``_build`` (the next default build replaces that whole). An
    existing ``out`` is checked again under the build lock (:func:`outdir.check_replaceable`).
    """
    out, root = out.resolve(), root.resolve()
    if out == root / "_build":
        raise KvtierError(f"--out {out}: that is the default book's directory; leave --out out to build it")
    sources = [root / name for name in ("book", "notebooks", "kvtier", "tests", "scripts", ".git")]
    if out == root or root.is_relative_to(out) or any(out == d or out.is_relative_to(d) for d in sources):
        raise KvtierError(f"--out {out}: that is the project or one of its source folders; choose a new directory")
    if out.is_relative_to(root / "_build"):
        raise KvtierError(f"--out {out}: inside the default book's _build, which every default build replaces")
    outdir.check_replaceable(out, default=False)


def check_sources(root: Path) -> None:
    """The book's configuration exists and every page ``_toc.yml`` lists is there."""
    import yaml

    for name in BOOK_FILES:
        if not (root / name).is_file():
            raise KvtierError(f"{root / name}: missing (the book needs _config.yml and _toc.yml)")
    try:
        toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise KvtierError(f"{root / '_toc.yml'}: not valid YAML ({exc.__class__.__name__})") from None
    for entry in _toc_files(toc):
        if not any((root / f"{entry}{suffix}").is_file() for suffix in ("", ".md", ".ipynb")):
            raise KvtierError(f"{root / '_toc.yml'}: lists {entry!r}, but no such page exists")


def _toc_files(node: Any) -> Iterator[str]:
    """Every page a Jupyter Book table of contents names (``root`` and each ``file``)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("root", "file") and isinstance(value, str):
                yield value
            else:
                yield from _toc_files(value)
    elif isinstance(node, list):
        for item in node:
            yield from _toc_files(item)


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


def source_info(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Where the book's source lives, from the environment of the build; empty when unknown.

    ``KVTIER_REPOSITORY_URL`` and ``KVTIER_COMMIT`` name it for any CI; in GitHub Actions
    ``GITHUB_SERVER_URL``/``GITHUB_REPOSITORY`` and ``GITHUB_SHA`` do.  Nothing is guessed: an
    address that is not ``https://`` is ignored.
    """
    env = os.environ if environ is None else environ
    url = env.get("KVTIER_REPOSITORY_URL", "").strip()
    if not url and env.get("GITHUB_REPOSITORY"):
        url = f"{env.get('GITHUB_SERVER_URL', 'https://github.com').rstrip('/')}/{env['GITHUB_REPOSITORY'].strip()}"
    commit = (env.get("KVTIER_COMMIT") or env.get("GITHUB_SHA") or "").strip()
    if not re.fullmatch(r"https://[\w.-]+(:\d+)?(/[\w.~-]+)+/?", url):
        return {}
    info = {"url": url.rstrip("/")}
    if re.fullmatch(r"[0-9a-f]{7,40}", commit):
        info["commit"] = commit
    return info


def configure_source(config_path: Path, info: Mapping[str, str]) -> None:
    """Point the staged book's ``_config.yml`` at the repository ``info`` names (see :func:`source_info`).

    The repository button links it, the footer prints it with the commit, and the Reproduce
    page's ``{{ source }}`` says where to clone it.  Without ``info`` the file is left as it
    is: its own ``source`` text says the copy was built locally.
    """
    if not info:
        return
    import yaml

    config = yaml.safe_load(config_path.read_text(encoding="utf-8"))
    url, commit = info["url"], info.get("commit", "")
    name = "/".join(url.split("/")[-2:])
    at = f" at commit [`{commit[:7]}`]({url}/tree/{commit})" if commit else ""
    config.setdefault("repository", {})["url"] = url
    html = config.setdefault("html", {})
    html["use_repository_button"] = True
    html["extra_footer"] = (
        f'<p>Built from <a href="{url}">{name}</a>'
        + (f' at commit <a href="{url}/tree/{commit}"><code>{commit[:7]}</code></a>' if commit else "")
        + ".</p>"
    )
    parse = config.setdefault("parse", {})
    parse.setdefault("myst_substitutions", {})["source"] = (
        f"This book was built from [{name}]({url}){at}. Clone it to rerun everything below: `git clone {url}`."
    )
    config_path.write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True), encoding="utf-8")


def _book_hash(root: Path) -> str:
    """Every file that reaches the book besides the notebooks: the configuration and all of ``book/``."""
    h = hashlib.sha256()
    for name in BOOK_FILES:
        h.update((root / name).read_bytes())
    for d in BOOK_DIRS:
        for path in sorted((root / d).rglob("*")):
            rel = path.relative_to(root / d)
            if rel.parts[0] == "tables" or rel.parts[0].startswith(".tables.") or "__pycache__" in rel.parts:
                continue
            if path.is_file():
                h.update(path.relative_to(root).as_posix().encode())
                h.update(path.read_bytes())
    return h.hexdigest()


def _file_hashes(directory: Path) -> dict[str, str]:
    """SHA-256 of every file below ``directory`` but the build's mark and manifest."""
    return {
        rel: _sha256((directory / rel).read_bytes())
        for rel in outdir.listing(directory)
        if rel not in (outdir.MARK, MANIFEST) and (directory / rel).is_file()
    }


def _read_tables(directory: Path) -> dict[str, str] | None:
    """The tables of record under ``directory`` by name (None when they cannot be read)."""
    try:
        return {p.stem: p.read_text(encoding="utf-8") for p in directory.glob("*.csv")}
    except OSError:
        return None


def _tables_current(directory: Path, texts: Mapping[str, str] | None) -> bool:
    """Whether ``directory`` holds exactly these tables of record, byte for byte."""
    present = _read_tables(directory)
    return present is not None and texts is not None and present == dict(texts)


KERNEL_HOME = ".tool-home"
"""The folder of a build's staging directory that its kernels and Jupyter Book use as matplotlib's
and IPython's configuration directories (:func:`tool_settings`); removed before anything is published."""


def tool_settings(home: Path) -> dict[str, str]:
    """Environment variables that keep matplotlib's and IPython's configuration in ``home`` (made here).

    With a read-only ``HOME`` each would otherwise make a random temporary directory (IPython's is
    never removed) and say so: matplotlib's warning, naming it, landed in the notebooks' output.
    """
    settings = {"MPLCONFIGDIR": str(home / "matplotlib"), "IPYTHONDIR": str(home / "ipython")}
    for directory in settings.values():
        Path(directory).mkdir(parents=True, exist_ok=True)
    return settings


ANALYSIS_DIR = ".analysis"
"""The folder of a build's staging directory holding the trace's analysis (:mod:`kvtier.store`): the build
computes it once with the tables, its kernels read it; removed before anything is published."""


@contextmanager
def _kernel_environment(home: Path, analysis: Path) -> Iterator[None]:
    """Kernels draw with the inline backend whatever the caller's ``MPLBACKEND`` (Agg would lose every figure),
    know that a build runs them (the Jupyter preview stays off), keep their configuration in ``home`` and read
    the trace's analysis the build computed from ``analysis`` (:data:`kvtier.store.DIRECTORY_VARIABLE`).

    ``home`` is the build's own: matplotlib and IPython read neither the user's settings nor fall
    back to a random temporary directory when ``HOME`` is read-only (matplotlib would print a warning
    naming it into the notebooks, and so into the published pages).  Matplotlib's font cache is
    built there once, before the kernels start, so that no kernel prints matplotlib's "building the
    font cache" warning (it comes after 5 s, whenever the machine is busy).
    """
    settings = {
        "MPLBACKEND": "module://matplotlib_inline.backend_inline",
        preview.BUILD_ENV: "1",
        store.DIRECTORY_VARIABLE: str(analysis),
    }
    settings |= tool_settings(home)
    saved = {name: os.environ.get(name) for name in settings}
    os.environ.update(settings)
    try:
        # its output and its status do not matter: a kernel that cannot load matplotlib reports it
        subprocess.run([sys.executable, "-c", "import matplotlib.font_manager"], capture_output=True, check=False)
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def build(
    assumptions: AssumptionSet,
    out: Path | None = None,
    jobs: int | None = None,
    log: Callable[[str], None] = print,
    root: Path | None = None,
    force: bool = False,
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
    root : Path, optional
        The project checkout (default: :func:`project_root`).
    force : bool
        Execute every notebook and rebuild everything, whatever the previous build holds.
    """
    root = root or project_root()
    default = out is None
    out = (root / "_build") if out is None else Path(out).resolve()
    jobs = max(1, jobs or os.cpu_count() or 1)
    started = time.perf_counter()

    # validate everything before anything runs: keys agree, the model loads, the output directory may be
    # written, every table computes (the tables last: they take seconds)
    check_consistency(assumptions)
    check_sources(root)
    scenario = Scenario(assumptions)
    work = plan(root, assumptions)
    if not default:
        check_out_dir(out, root)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise KvtierError(f"{out}: cannot create the output directory ({exc.strerror or exc})") from None
    tables = root / "book" / "tables"
    targets = [out, tables] if default else [out]
    with outdir.locked(out):
        with signals_held():  # finishing an interrupted publication is renames that must all happen
            recovered = outdir.recover(outdir.journal_path(out), targets)
        if recovered:
            log(f"finished publishing a build that was interrupted at {out}")
        for target in targets:
            for kept in outdir.foreign_staging(target):
                log(f"left {kept} as it is: named like a build's staging directory, it holds files no build writes")
        outdir.check_replaceable(out, default=default)
        try:
            return _build_locked(
                assumptions, root, out, tables if default else None, work, scenario, jobs, log, force, started
            )
        except BaseException as exc:
            if recovered and not isinstance(exc, Exception):
                exc.add_note(f"before that it finished publishing the earlier build that was interrupted at {out}")
            raise


def _build_locked(
    assumptions: AssumptionSet,
    root: Path,
    out: Path,
    tables: Path | None,
    work: list[NotebookJob],
    scenario: Scenario,
    jobs: int,
    log: Callable[[str], None],
    force: bool,
    started: float,
) -> BuildResult:
    """The build proper, under the lock of ``out``; ``tables`` is ``book/tables`` for the default build.

    The tables of record are computed from ``scenario`` unless the previous build wrote them from the
    same inputs (:func:`tables_key`) and nothing else changed: a rebuild with nothing changed reads them.
    """
    previous = {} if force else outdir.read_manifest(out)
    calculator_js = calculator.presets_js(assumptions)
    prev_files = previous.get("files", {})
    present = _file_hashes(out) if previous else {}
    build_id = outdir.new_build_id()
    manifest: dict[str, Any] = {
        "build_id": build_id,
        "book": _book_hash(root) + json.dumps(source_info(), sort_keys=True) + _sha256(calculator_js.encode()),
        "notebooks": {job.name: job.inputs_hash for job in work},
        "assumptions": assumptions.to_dict(),
        "tables": tables_key(assumptions),
    }

    def cached(job: NotebookJob) -> bool:
        rel = f"notebooks/{job.name}.ipynb"
        return (
            previous.get("notebooks", {}).get(job.name) == job.inputs_hash
            and rel in prev_files
            and present.get(rel) == prev_files[rel]
        )

    fresh = [job for job in work if cached(job)]
    stale = [job for job in work if job not in fresh]
    intact = bool(previous) and present == prev_files
    same = all(previous.get(part) == manifest[part] for part in ("book", "tables"))
    if not stale and intact and same:
        # out/tables holds what these inputs give (intact: the manifest's hashes); so must book/tables
        if tables is None or _tables_current(tables, _read_tables(out / "tables")):
            log(f"nothing changed: {len(work)} notebooks up to date, the book at {out / 'html'} is current")
            return BuildResult(out, [], [job.name for job in work], True)
    staged: list[Path] = []
    published = False
    try:
        staging = outdir.make_staging(out, build_id)
        staged.append(staging)
        analysis = staging / ANALYSIS_DIR
        with store.stored_in(analysis):  # the trace's analysis, for the kernels to read instead of computing
            trace_analysis.prime(scenario)  # every pass the pages ask of the trace, streamed once
            table_texts = pages.csv_texts(scenario)
        src = staging / "src"
        (src / "notebooks").mkdir(parents=True)
        for name in BOOK_FILES:
            shutil.copy2(root / name, src / name)
        configure_source(src / "_config.yml", source_info())
        for d in BOOK_DIRS:
            shutil.copytree(root / d, src / d, ignore=shutil.ignore_patterns("tables", ".tables.*", "__pycache__"))
        # the calculator starts from the build's own set (the committed copy is the seed's)
        (src / "book" / "_static" / calculator.FILE).write_text(calculator_js, encoding="utf-8", newline="\n")
        for job in fresh:
            shutil.copy2(out / "notebooks" / f"{job.name}.ipynb", src / "notebooks" / f"{job.name}.ipynb")
            log(f"[reuse] {job.name}.ipynb: inputs unchanged")
        home = staging / KERNEL_HOME
        if stale:
            with _kernel_environment(home, analysis):
                execute_all(stale, src / "notebooks", Path.cwd(), jobs, log)
        shutil.rmtree(analysis, ignore_errors=True)

        log("writing tables of record and figures")
        write_csv_texts(table_texts, staging / "tables")
        (staging / "figures").mkdir()
        for job in work:
            extract_figures(src / "notebooks" / f"{job.name}.ipynb", staging / "figures")
        # a markdown page shows a notebook's figure as an image (glue pastes a figure only on its own page)
        shutil.copytree(staging / "figures", src / "book" / FIGURE_DIR)
        shutil.copytree(src / "notebooks", staging / "notebooks")

        log("building the HTML with Jupyter Book (warnings are errors)")
        build_html(src, staging / "html", home)
        shutil.rmtree(home)
        # each page links the CSV of record it shows (../tables/NAME.csv): the tables go beside the pages
        shutil.copytree(staging / "tables", staging / "html" / "tables")
        shutil.rmtree(src)
        manifest["files"] = _file_hashes(staging)
        (staging / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")

        swaps = [outdir.Swap(staging, out, outdir.old_path(out, build_id))]
        if tables is not None:
            tables_new = outdir.make_staging(tables, build_id)
            staged.append(tables_new)
            write_csv_texts(table_texts, tables_new)
            swaps.append(outdir.Swap(tables_new, tables, outdir.old_path(tables, build_id)))
        with signals_held():  # a signal waits until both renames are done
            outdir.publish(outdir.journal_path(out), swaps)
            published = True
    except OSError as exc:
        with signals_held():
            _discard(staged, out)
        raise KvtierError(f"build failed writing {exc.filename or out}: {exc.strerror or exc}") from None
    except BaseException as exc:
        with signals_held():
            _discard(staged, out)
        if not isinstance(exc, Exception):  # Ctrl-C, SIGTERM: the CLI says what this note says
            exc.add_note(_stopped_note(out, tables, staged, published))
        raise
    log(
        f"done in {time.perf_counter() - started:.1f} s: executed {len(stale)}, reused {len(fresh)};"
        f" book at {out / 'html' / 'index.html'}"
    )
    return BuildResult(out, [job.name for job in stale], [job.name for job in fresh], False)


def _stopped_note(out: Path, tables: Path | None, staged: list[Path], published: bool) -> str:
    """What a build stopped by Ctrl-C or SIGTERM leaves: true whatever step it stopped at.

    Its kernels are stopped and its threads ended before this is written (see
    :func:`_execute_all`); a signal that came while publishing waited for the renames.
    """
    if published:
        return f"the new book had already been published at {out}"
    what = f"{out} and {tables} were" if tables is not None else f"{out} was"
    left = [path for path in staged if path.exists()]
    if left:  # its mark goes last (outdir.remove_staging): the next build of the same output removes the rest
        return f"{what} not changed; could not remove all of {left[0]}, which the next build of {out} removes"
    return f"{what} not changed, and nothing of this build is left running or on disk"


def _discard(staged: list[Path], out: Path) -> None:
    """Remove what a failed build staged, unless it is publishing (its journal then finishes the job)."""
    if outdir.journal_path(out).exists():
        return
    for path in staged:
        outdir.remove_staging(path)
