"""Executing a build's notebooks: papermill on each page, the kernels stopped together when one fails or a signal comes.

- :class:`NotebookJob`, one page of a build, and :func:`read_page`, a page's text notebook read;
- :func:`execute`, one page run with papermill, its volatile metadata stripped (:func:`strip_volatile`), a
  failure named with the failing cell (one :class:`~kvtier.errors.KvtierError`);
- :func:`execute_all`, the stale pages ``jobs`` at a time, every kernel stopped at the first failure;
- :func:`signals_held`, SIGINT and SIGTERM held while a step that must not stop halfway runs.
"""

from __future__ import annotations

import logging
import shutil
import signal
import tempfile
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, as_completed, wait
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat

from kvtier.errors import KvtierError
from kvtier.pipeline.kernels import KernelGroup, kernel_manager_class


@dataclass(frozen=True)
class NotebookJob:
    """One notebook of a build: its source, parameters and the hash of its inputs."""

    name: str
    source: Path
    parameters: dict[str, Any]
    inputs_hash: str


def read_page(path: Path) -> nbformat.NotebookNode:
    """A page's text notebook as a notebook, with cell ids derived from its name and position.

    Raises
    ------
    KvtierError
        When the file cannot be read or parsed.
    """
    import jupytext

    try:
        nb = jupytext.read(path, fmt="myst")
    except Exception as exc:  # jupytext raises several types for unreadable files
        raise KvtierError(f"{path}: cannot read the page ({exc.__class__.__name__}: {exc})") from None
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"{path.stem[:2]}-{i:02d}"  # jupytext draws random ids: executed copies must not differ
    return nb


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


def execute(job: NotebookJob, output: Path, cwd: Path, kernels: KernelGroup | None = None) -> None:
    """Execute one notebook with papermill into ``output``, stripped of volatile metadata.

    ``kernels`` is the build's :class:`~kvtier.pipeline.kernels.KernelGroup`: the notebook's kernel
    joins it, so that a failed or stopped build can stop it.
    """
    import papermill

    kernel_dir = Path(tempfile.mkdtemp(prefix="kvtier-kernel-"))
    try:
        papermill.execute_notebook(
            read_page(job.source),
            str(output),
            parameters=job.parameters,
            cwd=str(cwd),
            progress_bar=False,
            log_output=False,
            kernel_name="python3",
            # the kernel's own log (a transport warning where TCP remains, a shutdown message) is noise in build output
            extra_arguments=["--IPKernelApp.log_level=CRITICAL"],
            kernel_manager_class=kernel_manager_class(kernel_dir, kernels),
        )
    except Exception as exc:  # PapermillExecutionError and kernel start failures
        raise KvtierError(_failure_message(job, output, exc)) from None
    finally:
        shutil.rmtree(kernel_dir, ignore_errors=True)
    nb = nbformat.read(output, as_version=4)
    nbformat.write(strip_volatile(nb), output)


def execute_all(stale: list[NotebookJob], dest: Path, cwd: Path, jobs: int, log: Callable[[str], None]) -> None:
    """Execute ``stale`` notebooks into ``dest``, ``jobs`` at a time; the first failure stops the build.

    A failure or an interruption stops every kernel and waits for the notebooks' threads to
    end before it goes on, so nothing writes into ``dest`` once this returns or raises (a notebook
    writing while the build removed its staging directory would leave it half removed, without its
    mark, for no later build to remove).
    """
    total = len(stale)
    if not total:
        return
    kernels = KernelGroup()

    def run(job: NotebookJob) -> str:
        execute(job, dest / f"{job.name}.ipynb", cwd, kernels)
        return job.name

    done = 0
    pool = ThreadPoolExecutor(max_workers=min(jobs, total))
    log(f"executing {total} notebook(s), {min(jobs, total)} at a time")
    futures = {pool.submit(run, job): job for job in stale}
    try:
        for future in as_completed(futures):
            name = future.result()
            done += 1
            log(f"[{done}/{total}] executed {name}.ipynb ({total - done} remaining)")
    except BaseException:
        with signals_held():
            _stop_notebooks(pool, kernels, list(futures))
        raise
    pool.shutdown()


NOTEBOOK_STOP_TIMEOUT_S = 60.0
"""How long a failed or stopped build waits for its notebooks' threads once their kernels are killed (s).

nbclient notices a dead kernel within about a second; the bound only keeps a wedged thread
from hanging the build."""


def _stop_notebooks(pool: ThreadPoolExecutor, kernels: KernelGroup, futures: list[Future[str]]) -> None:
    """Cancel the notebooks not started, kill every kernel and wait for the running notebooks' threads.

    nbclient logs each kernel it finds dead ("Error occurred while starting new kernel client
    ...") through papermill's logger, and jupyter_client through traitlets': expected here, so
    both are silenced meanwhile and the build's own message stays its only line.
    """
    pool.shutdown(wait=False, cancel_futures=True)
    loggers = [logging.getLogger(name) for name in ("papermill", "traitlets")]
    disabled = [logger.disabled for logger in loggers]
    for logger in loggers:
        logger.disabled = True
    try:
        kernels.stop()
        # a cancelled future is never done in wait()'s sense: wait for the running ones only
        wait([f for f in futures if not f.cancelled()], timeout=NOTEBOOK_STOP_TIMEOUT_S)
    finally:
        for logger, was in zip(loggers, disabled, strict=True):
            logger.disabled = was


@contextmanager
def signals_held() -> Iterator[None]:
    """Hold SIGINT and SIGTERM while the block runs, then act on the first that came, as it would have.

    For steps that must not stop halfway: stopping the kernels, discarding what was staged,
    publishing (a rename sequence).  Each is bounded.  Only the main thread receives
    signals; elsewhere the block runs as it is.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[tuple[int, Any]] = []

    def hold(signum: int, frame: Any) -> None:
        caught.append((signum, frame))

    previous = {sig: signal.signal(sig, hold) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, signal.SIG_DFL if handler is None else handler)  # None: installed outside Python
    if caught:
        signum, frame = caught[0]
        handler = previous[signum]
        if callable(handler):
            handler(signum, frame)
        elif handler == signal.SIG_DFL:
            signal.raise_signal(signum)
