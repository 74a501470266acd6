"""Commands: the ``kvtier`` command line (quick answers, the book build, diffs of results).

Here: :func:`main` and the parser.  One module per command (``model``, ``compare``,
``tiers``, ``build``, ``diff``, ``measure``, ``workload``, ``cost``), each with
``add_parser(subparsers)`` and ``run(args)``: argparse and printing only, the work done
below.  :mod:`~kvtier.commands.options` declares ``--assumptions`` and ``--set`` once for
every command that reads a set; :mod:`~kvtier.commands.output` prints text or JSON.

May import everything below it (the pipeline, the report, the scenario, the inputs, the
formulas) and, lowest first, the modules of this folder: options, output < the command
modules < this package.  Only :mod:`kvtier.__main__` imports it.

User errors print one line, ``kvtier: error: ...``, and exit with status 2.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import threading
from collections.abc import Sequence

from kvtier import __version__
from kvtier.errors import KvtierError

COMMANDS: tuple[str, ...] = ("model", "compare", "tiers", "build", "diff", "measure", "workload", "cost")
"""The commands, in the order ``kvtier --help`` lists them: each is the module ``kvtier.commands.NAME``, with
``add_parser`` and ``run``, imported only when the parser needs it (:func:`build_parser`), so that a quick
answer loads neither the trace code nor the build."""


class _Parser(argparse.ArgumentParser):
    """argparse, but usage errors are one line and exit 2 like every other user error."""

    def error(self, message: str) -> None:  # type: ignore[override]
        # a command's parser names it ("kvtier cost: argument ..."); the top one adds nothing to "kvtier: error:"
        raise KvtierError(message if self.prog == "kvtier" else f"{self.prog}: {message}")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The argument parser of the ``kvtier`` command: each command module registers its own.

    Parameters
    ----------
    command : str, optional
        One of :data:`COMMANDS`: register that command alone, importing no other command's module
        (:func:`main` passes the command it runs).  Default: every command, as ``kvtier --help`` lists them.
    """
    parser = _Parser(prog="kvtier", description="KV-cache tiering economics: fetch vs regenerate, capacity.")
    parser.add_argument("--version", action="version", version=f"kvtier {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name in COMMANDS if command is None else (command,):
        importlib.import_module(f"{__name__}.{name}").add_parser(sub)
    return parser


class _Terminated(BaseException):
    """SIGTERM, raised in the main thread so that a build cleans up as it does on Ctrl-C."""


def _on_sigterm(signum: int, frame: object) -> None:
    raise _Terminated


def _stopped(word: str, status: int, exc: BaseException) -> int:
    """One line for Ctrl-C or SIGTERM, saying what was left: a build notes it on the exception
    (its kernels stopped, what it staged removed, or the new book already published); a
    command stopped before writing anything changed nothing.
    """
    what = "; ".join(getattr(exc, "__notes__", [])) or "nothing was changed"
    print(f"kvtier: {word}; {what}", file=sys.stderr, flush=True)
    if threading.active_count() > 1:
        os._exit(status)
    return status


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the exit status (0 ok, 1 a diff found changes, 2 user error, 130/143 stopped)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(argv[0] if argv and argv[0] in COMMANDS else None)
    if not argv:
        parser.print_usage(sys.stderr)
        print("kvtier: error: name a command (kvtier --help lists them)", file=sys.stderr)
        return 2
    # Ctrl-C raises KeyboardInterrupt even where the caller started us with SIGINT ignored (a background job)
    previous = signal.signal(signal.SIGTERM, _on_sigterm), signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        try:
            args = parser.parse_args(argv)
        except KvtierError as exc:
            if argv[0] in COMMANDS and str(exc).startswith("unrecognized arguments"):
                raise KvtierError(f"{argv[0]}: {exc} (kvtier {argv[0]} --help lists its options)") from None
            raise
        return int(args.func(args))
    except KvtierError as exc:
        print(f"kvtier: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        return _stopped("interrupted", 130, exc)
    except _Terminated as exc:
        return _stopped("terminated", 143, exc)
    except BrokenPipeError:  # output piped into `head` and closed early
        sys.stderr.close()
        return 0
    finally:
        signal.signal(signal.SIGTERM, previous[0])
        signal.signal(signal.SIGINT, previous[1])


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
