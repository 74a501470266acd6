"""``kvtier build``: execute the notebooks, write the tables of record, build the HTML book."""

from __future__ import annotations

import argparse
import sys

from kvtier.commands.options import add_assumption_options
from kvtier.errors import KvtierError
from kvtier.inputs.assumptions import load_assumptions, parse_set_options


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register ``build [--assumptions FILE] [--set KEY=VALUE] [--out DIR] [--jobs N] [--force]`` on ``subparsers``."""
    p = subparsers.add_parser("build", help="execute the notebooks, write the tables of record, build the HTML book")
    add_assumption_options(p)
    p.add_argument(
        "--out", metavar="DIR", help="write DIR/{html,tables,figures,notebooks} (default: _build and book/tables)"
    )
    p.add_argument("--jobs", type=int, metavar="N", help="notebooks executed in parallel (default: CPU cores)")
    p.add_argument("--force", action="store_true", help="execute every notebook and rebuild everything")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    # Imported here for start-up time only (no cycle): the build imports nbformat, pandas and matplotlib.
    from kvtier.pipeline import build as pipeline

    assumptions = load_assumptions(args.assumptions, parse_set_options(args.set))
    if args.jobs is not None and args.jobs < 1:
        raise KvtierError(f"--jobs must be at least 1, got {args.jobs}")
    if args.out is not None and not args.out.strip():
        raise KvtierError("--out: empty path; leave --out out for the default book, or name a directory")
    out = Path(args.out) if args.out is not None else None
    log = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731
    pipeline.build(assumptions, out=out, jobs=args.jobs, log=log, force=args.force)
    return 0
