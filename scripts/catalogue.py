"""Count the bad-input catalogue's cases per surface, and check CONTRIBUTING.md's table of them.

The catalogue is every test in ``tests/commands/test_bad_input*.py`` and ``tests/pipeline/test_outdir.py``, and
the calculator's refusals (:data:`NODES`, which run in a browser).
A case's surface (the command or output it exercises) is, first, a ``surface`` mark on its
test function; else the first word of its parameter id when that word names a surface
(``compare-yaml-empty-file`` is a ``compare`` case); else the ``surface`` mark of its module.
A case that none of these places is an error: every case belongs to one surface.

Usage::

    .venv/bin/python scripts/catalogue.py            # print the table (Markdown)
    .venv/bin/python scripts/catalogue.py --check    # exit 1 unless CONTRIBUTING.md holds that table
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TARGET = ROOT / "CONTRIBUTING.md"
"""The file whose table ``--check`` compares: its section "The bad-input catalogue"."""
FILES = ("tests/commands/test_bad_input*.py", "tests/pipeline/test_outdir.py")
NODES = ("tests/pipeline/test_calculator.py::test_impossible_inputs_are_refused_in_words_beside_the_field",)
"""Single tests of other files that belong to the catalogue."""
SURFACES = ("build", "compare", "model", "tiers", "diff", "measure", "workload", "cost", "pr-comment", "calculator")
"""The surfaces in the order the table lists them; ``pr-comment`` is ``kvtier diff --format md``, ``calculator``
the book's calculator (its fields refused in words beside them)."""
TOPICS: dict[str, tuple[str, ...]] = {
    "placement": ("tp-", "tp_", "placement", "kv-heads"),
    "Dask (--parts)": ("parts", "part-", "part_", "workers", "scheduler", "window", "dask"),
    "sampling": ("sample",),
}
"""Topics that cut across the surfaces, each counted again on its own row: a case is in a topic when its test's
name or parameter id holds one of the topic's words."""
BEGIN, END = "<!-- catalogue: begin -->", "<!-- catalogue: end -->"
"""The table sits between these two lines of :data:`TARGET`; ``--check`` compares what lies between."""


def surface_of(item: pytest.Item) -> str | None:
    """The surface of one collected case (see the module's docstring), or None when nothing names one."""
    own = [m for m in getattr(getattr(item, "function", None), "pytestmark", []) if m.name == "surface"]
    if own:
        return str(own[-1].args[0])
    callspec = getattr(item, "callspec", None)
    if callspec is not None:
        word = callspec.id.split("-")[0]
        if word in SURFACES:
            return word
    marks = [m for m in item.iter_markers("surface")]
    if marks:
        return str(marks[-1].args[0])
    return None


def topics_of(item: pytest.Item) -> list[str]:
    """The :data:`TOPICS` one collected case belongs to, by the words of its test's name and parameter id."""
    callspec = getattr(item, "callspec", None)
    text = f"{getattr(item, 'originalname', None) or getattr(item, 'name', '')} {callspec.id if callspec else ''}"
    return [topic for topic, words in TOPICS.items() if any(w in text for w in words)]


class _Collector:
    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.unplaced: list[str] = []

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        for item in items:
            name = surface_of(item)
            if name in SURFACES:
                self.counts[name] += 1
                for topic in topics_of(item):
                    self.counts[f"topic:{topic}"] += 1
            else:
                self.unplaced.append(f"{item.nodeid}: surface {name!r}")


def counts() -> Counter[str]:
    """The number of catalogue cases per surface, collected (not run) by pytest."""
    files = sorted(str(p.relative_to(ROOT)) for pattern in FILES for p in ROOT.glob(pattern))
    collector = _Collector()
    status = pytest.main(
        ["--collect-only", "-q", "-p", "no:cacheprovider", "--rootdir", str(ROOT), *files, *NODES],
        plugins=[collector],
    )
    if status != 0:
        raise SystemExit(f"collecting the catalogue failed (pytest exit status {int(status)})")
    if collector.unplaced:
        raise SystemExit(
            "cases without a known surface (mark the test @pytest.mark.surface(NAME), NAME one of "
            + ", ".join(SURFACES)
            + "):\n"
            + "\n".join(collector.unplaced)
        )
    return collector.counts


def table(counted: Counter[str]) -> str:
    """The table of cases per surface, in Markdown."""
    rows = ["| surface | cases |", "|---|---:|"]
    rows += [f"| {'PR comment' if s == 'pr-comment' else s} | {counted[s]:,} |" for s in SURFACES]
    rows.append(f"| all | {sum(counted[s] for s in SURFACES):,} |")
    rows += [f"| of which {topic} | {counted[f'topic:{topic}']:,} |" for topic in TOPICS]
    return "\n".join(rows)


def marked_table(text: str) -> str | None:
    """The table between the markers in ``text``, or None without them."""
    if BEGIN not in text or END not in text:
        return None
    return text.split(BEGIN, 1)[1].split(END, 1)[0].strip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 unless CONTRIBUTING.md holds the current table")
    args = parser.parse_args(argv)
    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()):
        shown = table(counts())
    if not args.check:
        print(shown)
        return 0
    found = marked_table(TARGET.read_text(encoding="utf-8"))
    if found != shown:
        print(f"{TARGET.name}'s catalogue table is out of date; it should read:\n{shown}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
