"""``kvtier diff A B``: every number that changed between two sets of tables of record.

The comparison itself is :mod:`kvtier.report.diff`; this module registers the command and prints.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from kvtier.report.diff import FORMATS, TABLES_DIR, diff_tables, format_markdown, format_text, load_tables


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register ``diff A B [--format text|md] [--repo PATH]`` on ``subparsers``."""
    p = subparsers.add_parser(
        "diff",
        help="every number that changed between two sets of tables (directories or git revisions)",
        description="Print every cell of the tables of record that differs between A and B, and nothing"
        " else. Exit status: 0 when nothing changed, 1 when something did, 2 on error.",
    )
    p.add_argument(
        "old",
        metavar="A",
        help=f"directory of tables (or with tables/ inside), or a git revision (reads {TABLES_DIR}/)",
    )
    p.add_argument("new", metavar="B", help="the same, for the new side")
    p.add_argument("--format", choices=FORMATS, default="text", help="text (default) or md (a PR comment)")
    p.add_argument(
        "--numbers-only",
        action="store_true",
        help="leave out changed text cells (basis, source, provenance, labels) and added or removed rows",
    )
    p.add_argument("--repo", metavar="PATH", type=Path, help="git repository for revisions (default: the current one)")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    """Print the diff of ``args.old`` against ``args.new``; return 0 if none, 1 if any."""
    repo = getattr(args, "repo", None)
    old = load_tables(args.old, repo)
    new = load_tables(args.new, repo)
    changes = diff_tables(old, new)
    if getattr(args, "numbers_only", False):
        changes = [c for c in changes if c.kind == "number"]
    fmt = getattr(args, "format", "text")
    out = format_markdown(changes, old, new) if fmt == "md" else format_text(changes)
    if out:
        print(out, end="")
    return 1 if changes else 0
