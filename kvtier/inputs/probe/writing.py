"""The output file: checked before measuring, written atomically, replaced only when ``kvtier measure`` wrote it.

The output's directory must exist and take a new file, and a file already there is replaced
only if ``kvtier measure`` wrote it and nobody changed it since (its first line carries a mark,
the hash of the rest) or with ``--force``.  The result is written atomically (a temporary file
in the same directory, then a rename) with the permissions the user's umask gives, so an
interrupted run never leaves a half-written file.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import tempfile
from pathlib import Path

import yaml

from kvtier.errors import KvtierError, show
from kvtier.inputs.assumptions import check_consistency, load_assumptions
from kvtier.inputs.probe.document import assumption_set
from kvtier.inputs.probe.measuring import Result
from kvtier.inputs.readers import read_text_bounded

MARK = re.compile(r"# Written by kvtier measure, mark ([0-9a-f]{32});")
"""The first line of every file ``kvtier measure`` writes: the mark is the hash of the lines below it."""


def marked(body: str) -> str:
    """``body`` under the first line that marks it as written by ``kvtier measure`` (:data:`MARK`)."""
    digest = hashlib.sha256(body.encode("utf-8")).hexdigest()[:32]
    rebuild = "rebuild the book with: kvtier build --assumptions THIS_FILE"
    return f"# Written by kvtier measure, mark {digest}; {rebuild}\n{body}"


def _ours(path: Path) -> bool:
    """Whether ``path`` is a file ``kvtier measure`` wrote and nobody changed since (its mark matches the rest)."""
    try:
        text = read_text_bounded(path, "assumptions file")
    except KvtierError:
        return False
    first, _, body = text.partition("\n")
    found = MARK.match(first)
    return bool(found) and marked(body) == text


def check_out(path: Path, force: bool = False) -> None:
    """Refuse an output ``measure`` may not write, before anything is measured (and again before the rename).

    The directory must exist and take a new file; a file already there must be one that
    ``kvtier measure`` wrote and nobody changed since, unless ``force``.  What is not a
    regular file (a directory, a device, a pipe) is never replaced; a symbolic link only
    with ``force`` (the link is replaced, not what it points to).

    Raises
    ------
    KvtierError
        One line naming ``--out`` and the file or directory.
    """
    shown = show(path)
    if path.is_dir():
        raise KvtierError(f"--out {shown}: is a directory; give the assumption file to write")
    directory = path.parent
    if not directory.is_dir():
        what = "is not a directory" if directory.exists() else "does not exist"
        raise KvtierError(f"--out {shown}: directory {show(directory)} {what}")
    try:
        fd, probe = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".probe", dir=directory)
        os.close(fd)
        os.unlink(probe)
    except (OSError, ValueError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc.__class__.__name__
        raise KvtierError(f"--out {shown}: cannot write in directory {show(directory)} ({why})") from None
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISLNK(mode):
        if not force:
            raise KvtierError(
                f"--out {shown}: is a symbolic link, not a file kvtier measure wrote; choose another file"
                " or give --force to replace the link"
            )
        return
    if stat.S_ISDIR(mode):
        raise KvtierError(f"--out {shown}: is a directory; give the assumption file to write")
    if not stat.S_ISREG(mode):
        raise KvtierError(f"--out {shown}: exists and is not a regular file; choose another file")
    if not force and not _ours(path):
        raise KvtierError(
            f"--out {shown}: exists and was not written by kvtier measure, or was changed since (no matching"
            " mark on its first line); choose another file or give --force to replace it"
        )


def _umask() -> int:
    """The process's umask (reading it means setting it; it is set back at once)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_atomically(path: Path, text: str, force: bool = False) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same directory and a rename.

    The file gets the permissions the umask gives a new file (``0o666 & ~umask``);
    :func:`check_out` runs again just before the rename, so a file that appeared meanwhile
    is not lost.
    """
    path = Path(path)
    check_out(path, force)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise KvtierError(f"--out {show(path)}: cannot write ({exc.strerror or exc.__class__.__name__})") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
            handle.flush()
            os.fchmod(handle.fileno(), 0o666 & ~_umask())
            os.fsync(handle.fileno())
        check_out(path, force)
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise KvtierError(f"--out {show(path)}: cannot write ({exc.strerror or exc.__class__.__name__})") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_set(result: Result, path: Path, force: bool = False) -> None:
    """Write ``result``'s assumption set to ``path`` atomically, after checking that it loads and is consistent."""
    doc = assumption_set(result)
    text = marked(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=100))
    with tempfile.TemporaryDirectory() as scratch:
        probe = Path(scratch) / "check.yaml"
        probe.write_text(text, encoding="utf-8")
        check_consistency(load_assumptions(probe))
    write_atomically(path, text, force)
