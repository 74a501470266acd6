"""Rewrite every page's ``parameters`` cell, and the book's list of keys, from the assumption key specs.

A page's ``parameters`` cell (``notebooks/NN_page.md``) is generated text: one line per key of
its page module's ``KEYS`` (:mod:`kvtier.report.pages`), in schema order, holding the seed set's
value and, as a comment, what the key is and the values it takes (its
:class:`~kvtier.inputs.keys.KeySpec`), which ``papermill --help-notebook`` shows; see
:func:`kvtier.report.notebook.parameters_cell`.  After a change to a page's ``KEYS``, to a key's
help text or to a seed value, this rewrites the cells; nothing else in a notebook changes.  A
cell that declares ``set_name`` keeps it.  The list of every key in ``book/using/assumptions.md``
(between ``<!-- keys: begin -->`` and ``<!-- keys: end -->``) is generated the same way: one line
per key of :data:`~kvtier.inputs.keys.SCHEMA`, what it is and the values it takes.

Usage::

    .venv/bin/python scripts/parameters.py                  # rewrite the stale cells of notebooks/*.md
    .venv/bin/python scripts/parameters.py --check          # exit 1 naming each stale page; write nothing
    .venv/bin/python scripts/parameters.py DIR [--check]    # the notebooks of DIR instead

Exit status: 0 when every cell is (now) the generated one; 1 with ``--check`` when a cell is stale;
2 when a notebook cannot be rewritten (no page module, no or several ``parameters`` cells).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from kvtier.errors import KvtierError
from kvtier.inputs.keys import SCHEMA
from kvtier.report import pages
from kvtier.report.notebook import SET_NAME_PARAM, parameters_cell

ROOT = Path(__file__).resolve().parents[1]
PAGE_SUFFIX = ".md"
KEYS_PAGE = ROOT / "book" / "using" / "assumptions.md"
"""The book page that lists every key; its list sits between :data:`BEGIN` and :data:`END`."""
BEGIN, END = "<!-- keys: begin -->", "<!-- keys: end -->"

_CELL = re.compile(
    r"^```\{code-cell\}[^\n]*\n(?P<options>(?::[^\n]*\n)*)\n?(?P<source>.*?)^```[ \t]*$",
    re.MULTILINE | re.DOTALL,
)
"""A MyST code cell: its ``:key: value`` option lines, a blank line, its source up to the closing fence."""
_TAGS = re.compile(r"^:tags:\s*\[(?P<tags>[^\]]*)\]", re.MULTILINE)


def _is_parameters(options: str) -> bool:
    """Whether a code cell's option lines tag it ``parameters``."""
    match = _TAGS.search(options)
    return match is not None and "parameters" in (tag.strip() for tag in match.group("tags").split(","))


def rewritten(text: str, path: Path) -> str:
    """``text`` of the page ``path`` with its ``parameters`` cell's source replaced by the generated one.

    Raises
    ------
    KvtierError
        When no page module declares the page, or the page has no or several ``parameters`` cells.
    """
    page = pages.page_of(path.stem)
    if page is None:
        raise KvtierError(f"{path}: no page module in kvtier/report/pages declares NOTEBOOK = {path.stem!r}")
    cells = [m for m in _CELL.finditer(text) if _is_parameters(m.group("options"))]
    if len(cells) != 1:
        raise KvtierError(f"{path}: needs exactly one code cell tagged 'parameters', found {len(cells)}")
    (cell,) = cells
    set_name = re.search(rf"^{SET_NAME_PARAM}\b", cell.group("source"), re.MULTILINE) is not None
    source = parameters_cell(page.keys, set_name=set_name) + "\n"
    return text[: cell.end("options")] + "\n" + source + text[cell.end("source") :]  # a blank line after the options


_KEY_NAMES = re.compile(
    r"(?<![\w.`])(?:"
    + "|".join(sorted((re.escape(k) for k in SCHEMA if "." in k or "_" in k), key=len, reverse=True))
    + r")(?![\w`])"
)
"""A key's name (one with a dot or an underscore: not the plain words ``model`` or ``engine``) in running text."""


def keys_list() -> str:
    """Every assumption key in schema order, one Markdown line each: what it is and the values it takes."""
    lines = []
    for key, spec in SCHEMA.items():
        text = spec.describe()
        if spec.kind not in ("choice", "text"):  # describe() names their values already
            text += f"; allowed: {spec.allowed()}"
        text = re.sub(r"\bnull\b", "`null`", text)  # the YAML value, as it is typed
        text = _KEY_NAMES.sub(lambda m: f"`{m.group(0)}`", text)  # another key named in its help, as it is typed
        lines.append(f"- `{key}`: {text}")
    return "\n".join(lines)


def with_keys_list(text: str, path: Path) -> str:
    """``text`` of the page ``path`` with the list between its markers replaced by :func:`keys_list`."""
    if text.count(BEGIN) != 1 or text.count(END) != 1 or text.index(BEGIN) > text.index(END):
        raise KvtierError(f"{path}: needs one {BEGIN} line and one {END} line after it")
    return text[: text.index(BEGIN) + len(BEGIN)] + "\n" + keys_list() + "\n" + text[text.index(END) :]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "directory", nargs="?", type=Path, default=ROOT / "notebooks", help="the pages (default: notebooks/)"
    )
    parser.add_argument("--check", action="store_true", help="exit 1 naming each stale notebook; write nothing")
    parser.add_argument(
        "--keys-page", type=Path, default=KEYS_PAGE, help="the page listing every key (default: %(default)s)"
    )
    args = parser.parse_args(argv)
    notebooks = sorted(args.directory.glob(f"*{PAGE_SUFFIX}"))
    if not notebooks:
        print(f"{args.directory}: no pages (*{PAGE_SUFFIX}) found", file=sys.stderr)
        return 2
    stale = []
    for path in notebooks:
        text = path.read_bytes().decode("utf-8")  # bytes: the file's own line ends stay as they are
        try:
            new = rewritten(text, path)
        except KvtierError as exc:
            print(exc, file=sys.stderr)
            return 2
        if new == text:
            continue
        stale.append(path)
        if args.check:
            print(f"{path}: the parameters cell is stale; run scripts/parameters.py", file=sys.stderr)
        else:
            path.write_bytes(new.encode("utf-8"))
            print(f"{path}: rewrote the parameters cell")
    keys_page = args.keys_page
    text = keys_page.read_text(encoding="utf-8")
    try:
        new = with_keys_list(text, keys_page)
    except KvtierError as exc:
        print(exc, file=sys.stderr)
        return 2
    if new != text:
        stale.append(keys_page)
        if args.check:
            print(f"{keys_page}: the list of keys is stale; run scripts/parameters.py", file=sys.stderr)
        else:
            keys_page.write_text(new, encoding="utf-8")
            print(f"{keys_page}: rewrote the list of keys")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
