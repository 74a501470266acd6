"""Output directories a build may replace: ownership marks, one build at a time, crash-safe swaps.

A build never edits its output in place. It stages a complete new output next to it and
then *publishes* it: the old directory is renamed aside, the staged one renamed into
place. The default build publishes two directories (``_build`` and ``book/tables``), so
publishing follows a journal:

1. everything new is staged (each staged directory carries the build's mark);
2. a journal naming every (staged, target, old) triple is written atomically: this is
   the commit point. A build killed before it leaves the old outputs in place;
3. each target is renamed to its ``old`` name and the staged directory renamed into
   place; then the journal is removed and the old directories deleted.

A build killed during step 3 leaves the journal; the next build (holding the lock)
rolls it forward before it does anything else, so what any build starts from is
either the whole old pair or the whole new pair. Staging directories left by killed
builds carry the mark and are deleted by the next build of the same output (see
:func:`recover`).

Ownership: a directory is replaced only if it carries the mark of the build that wrote
it (:data:`MARK`, holding a random build identifier that the build's manifest repeats)
and holds no file that build did not list. A common file name (``manifest.json``) is
never enough.
"""

from __future__ import annotations

import errno
import fcntl
import glob
import json
import os
import re
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kvtier.errors import KvtierError

MARK = ".kvtier-build"
"""File at the root of every directory a build writes: ``{"kvtier_build": ID}``."""

MANIFEST = "manifest.json"
"""The build's record: its identifier, inputs and the files it wrote with their hashes."""

JB_OUTPUTS = frozenset({"html", "jupyter_execute", ".doctrees", "latex", "pdf"})
"""What ``jupyter-book build .`` writes into ``_build``: the default output may replace it."""


BUILD_ID_PATTERN = r"[0-9a-f]{32}"
"""A build identifier: :func:`new_build_id`'s 128 bits in hex."""


def new_build_id() -> str:
    """A random identifier for one build (128 bits, hex)."""
    return uuid.uuid4().hex


def write_mark(directory: Path, build_id: str) -> None:
    """Mark ``directory`` as written by the build ``build_id``."""
    (directory / MARK).write_text(json.dumps({"kvtier_build": build_id}) + "\n", encoding="utf-8")


def read_mark(directory: Path) -> str | None:
    """The build identifier in ``directory``'s mark, or None when there is no valid mark."""
    try:
        data = json.loads((directory / MARK).read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    build_id = data.get("kvtier_build") if isinstance(data, dict) else None
    return build_id if isinstance(build_id, str) and len(build_id) == 32 else None


def read_manifest(directory: Path) -> dict[str, Any]:
    """The manifest of a marked build directory; {} when absent, unreadable or not this build's."""
    build_id = read_mark(directory)
    if build_id is None:
        return {}
    try:
        data = json.loads((directory / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return {}
    if not isinstance(data, dict) or data.get("build_id") != build_id or not isinstance(data.get("files"), dict):
        return {}
    return data


def listing(directory: Path) -> list[str]:
    """Every file below ``directory`` (links included, not followed), as sorted POSIX paths."""
    found = []
    for dirpath, dirnames, filenames in os.walk(directory):
        base = Path(dirpath)
        for name in filenames + [d for d in dirnames if (base / d).is_symlink()]:
            found.append((base / name).relative_to(directory).as_posix())
    return sorted(found)


def check_replaceable(out: Path, default: bool) -> None:
    """Refuse to replace ``out`` unless a build wrote it and nothing was added since.

    Parameters
    ----------
    out : Path
        The output directory (need not exist).
    default : bool
        True for the project's own ``_build``, which may also hold what ``jupyter-book
        build .`` wrote (those names only, at its top level).
    """
    if not out.exists() and not out.is_symlink():
        return
    if out.is_symlink() or not out.is_dir():
        raise KvtierError(f"--out {out}: exists and is not a directory; choose a new or empty directory")
    present = listing(out)
    if not present:
        return
    manifest = read_manifest(out)
    if manifest:
        foreign = [p for p in present if p not in manifest["files"] and p not in (MARK, MANIFEST)]
        if not foreign:
            return
        raise KvtierError(
            f"{out}: holds {len(foreign)} file(s) kvtier build did not write ({foreign[0]}); "
            "move them away or choose another directory"
        )
    top = {p.split("/", 1)[0] for p in present}
    if default and top <= JB_OUTPUTS:
        return
    raise KvtierError(
        f"--out {out}: exists and was not written by kvtier build (no {MARK} mark); choose a new or empty directory"
    )


# ---------------------------------------------------------------------------
# one build at a time
# ---------------------------------------------------------------------------


def lock_path(out: Path) -> Path:
    """The lock file guarding ``out``: a hidden sibling."""
    return out.parent / f".{out.name}.kvtier-lock"


@contextmanager
def locked(out: Path) -> Iterator[None]:
    """Hold the build lock of ``out`` (an ``flock``: a dead holder releases it by dying).

    Raises
    ------
    KvtierError
        When another process holds it: names that process.
    """
    path = lock_path(out)
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise KvtierError(f"{path}: cannot create the build lock ({exc.strerror})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            holder = os.read(fd, 64).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise KvtierError(
                    f"{out}: another kvtier build (pid {holder}) is writing it; wait for it to finish"
                ) from None
            raise KvtierError(f"{path}: cannot take the build lock ({exc.strerror})") from None
        # the file may have been unlinked by its previous holder between our open and lock
        try:
            same = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        yield
    finally:
        try:
            path.unlink()
        except OSError:
            pass
        os.close(fd)


# ---------------------------------------------------------------------------
# staging and publishing
# ---------------------------------------------------------------------------


def make_staging(target: Path, build_id: str) -> Path:
    """A new marked sibling of ``target`` for the build ``build_id`` (permissions as the umask allows)."""
    path = target.parent / f"{staging_prefix(target)}{build_id}"
    path.mkdir()
    write_mark(path, build_id)
    return path


def staging_prefix(target: Path) -> str:
    """Name prefix of the staged copies of ``target`` (hidden siblings)."""
    return f".{target.name}.kvtier-new-"


def old_path(target: Path, build_id: str) -> Path:
    """Where the old ``target`` waits while the build ``build_id`` replaces it."""
    return target.parent / f".{target.name}.kvtier-old-{build_id}"


def journal_path(out: Path) -> Path:
    """Where the publishing journal of ``out`` is written."""
    return out.parent / f".{out.name}.kvtier-journal.json"


@dataclass(frozen=True)
class Swap:
    """One directory to publish: ``staged`` goes to ``target``; the old target waits at ``old``."""

    staged: Path
    target: Path
    old: Path


def _write_atomically(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _rename(src: Path, dst: Path) -> None:
    """``os.rename``, one place for tests to interrupt publishing at any step."""
    os.rename(src, dst)


def publish(journal: Path, swaps: list[Swap]) -> None:
    """Replace every target with its staged directory, crash-safely (see the module docstring).

    A staged directory without a manifest (the tables of record, which are committed
    files) loses its mark once it is in place.
    """
    _write_atomically(journal, json.dumps([[str(s.staged), str(s.target), str(s.old)] for s in swaps], indent=1))
    _roll_forward(journal, swaps)


def _roll_forward(journal: Path, swaps: list[Swap]) -> None:
    """Finish publishing from whatever step it stopped at; idempotent. The journal goes last,
    so every set-aside directory is deleted by this call or by the next build's."""
    for s in swaps:
        if s.staged.exists():
            if s.target.exists() and not s.old.exists():
                _rename(s.target, s.old)
            _rename(s.staged, s.target)
    for s in swaps:
        if not (s.target / MANIFEST).exists():  # the tables of record are committed files: no mark
            (s.target / MARK).unlink(missing_ok=True)
        _fsync_dir(s.target.parent)
        shutil.rmtree(s.old, ignore_errors=True)
    journal.unlink()


def recover(journal: Path, targets: list[Path]) -> bool:
    """Finish an interrupted publication and delete the leftovers of killed builds.

    Call while holding :func:`locked`. ``targets`` are every directory the build
    publishes. A leftover is a directory named as a staging directory of a target (its
    prefix and a build id) that is marked or empty (:func:`_is_leftover`);
    :func:`foreign_staging` names the others, which are kept.
    Returns True when an interrupted publication was finished.
    """
    finished = False
    if journal.exists():
        try:
            triples = json.loads(journal.read_text(encoding="utf-8"))
            swaps = [Swap(Path(a), Path(b), Path(c)) for a, b, c in triples]
        except (OSError, ValueError, TypeError) as exc:
            raise KvtierError(f"{journal}: unreadable build journal ({exc}); remove it to go on") from None
        _roll_forward(journal, swaps)
        finished = True
    for target in targets:
        for leftover in _staging_dirs(target):
            if _is_leftover(leftover):
                remove_staging(leftover)
    return finished


def remove_staging(path: Path) -> None:
    """Delete the staging directory ``path``, its mark last, so that a removal cut short (a kill, an
    error) leaves a marked directory, which the next build deletes; errors are ignored."""
    if path.is_symlink() or not path.is_dir():
        return
    try:
        for child in path.iterdir():
            if child.name == MARK:
                continue
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child, ignore_errors=True)
            else:
                child.unlink(missing_ok=True)
        if any(child.name != MARK for child in path.iterdir()):
            return  # something could not be removed: the directory keeps its mark
        (path / MARK).unlink(missing_ok=True)
        path.rmdir()
    except OSError:
        pass


def _staging_dirs(target: Path) -> list[Path]:
    """Every real directory beside ``target`` named as a staging directory of it (the prefix and a build id)."""
    prefix = staging_prefix(target)
    return sorted(
        path
        for path in target.parent.glob(glob.escape(prefix) + "*")
        if re.fullmatch(BUILD_ID_PATTERN, path.name[len(prefix) :]) and path.is_dir() and not path.is_symlink()
    )


def foreign_staging(target: Path) -> list[Path]:
    """The directories named like a staging directory of ``target`` that :func:`recover` keeps: they hold a file
    no build writes."""
    return [path for path in _staging_dirs(target) if not _is_leftover(path)]


def _is_leftover(directory: Path) -> bool:
    """Whether ``directory`` is what a dead build left: it carries the build's mark, or it is empty (the build
    was killed between creating it and marking it).  Anything else, or a directory it cannot list, is kept."""
    if read_mark(directory) is not None:
        return True
    try:
        return not any(directory.iterdir())
    except OSError:
        return False
