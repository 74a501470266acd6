"""The options every command that reads an assumption set shares: ``--assumptions`` and ``--set``.

Declared here once, so that ``compare``, ``tiers``, ``build``, ``workload`` and ``cost``
spell and explain them the same way.
"""

from __future__ import annotations

import argparse


def add_assumption_options(p: argparse.ArgumentParser) -> None:
    """``--assumptions FILE`` and repeatable ``--set KEY=VALUE``, shared by every command that reads a set."""
    p.add_argument("--assumptions", metavar="FILE", help="YAML assumption set layered on the seed set")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="override one assumption (repeatable)")
