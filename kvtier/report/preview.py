"""A page's prose with its glued numbers filled in, for a reader running the page in Jupyter.

Jupyter renders ``{glue:text}`` roles as raw markup: only Jupyter Book fills them in. So
the glue helpers also remember what a page glued (:data:`GLUED`), and the page's last
cell calls :func:`show_page`, which renders the page's own Markdown with every number
formatted as the book formats it and every figure drawn where the book puts it. In a
build the cell is removed from the page (tag ``remove-cell``) and does nothing.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from kvtier.units import format_number

GLUED: dict[str, Any] = {}
"""Every value and figure the running page glued, by name (filled by the glue helpers)."""

BUILD_ENV = "KVTIER_BUILD"
"""Set by ``kvtier build`` for its kernels: the preview is for interactive sessions only."""

_TEXT = re.compile(r"\{glue:text\}`([^`]+)`")
_FIGURE = re.compile(r"```\{glue:figure\} *(\S+)\n(?::[^\n]*\n)*\n?(.*?)\n```", re.DOTALL)
_CODE_CELL = re.compile(r"```\{code-cell\}.*?\n```\n?", re.DOTALL)
_HEADER = re.compile(r"\A---\n.*?\n---\n", re.DOTALL)


SHOWN = "__shown"
"""Suffix of a number's glued text as the tables show it (``{glue:text}`ratio__shown```, :func:`shown_text`):
the one precision of a quantity the prose quotes beside a table, glued by
:func:`kvtier.report.notebook.glue_numbers` and filled by :func:`fill_text`."""


def shown_text(value: float) -> str:
    """``value`` as the tables show it: three significant figures, integer digits kept below 1e9
    (:func:`kvtier.units.format_number`)."""
    return format_number(value, 3)


def fill_text(text: str, glued: Mapping[str, Any]) -> str:
    """``text`` with each ``{glue:text}`KEY:SPEC``` replaced by ``format(value, SPEC)``.

    A number glued by another page (``path::key``) is named, not filled: only that page's
    run knows it. A key this run did not glue is left as it is.
    """

    def one(match: re.Match[str]) -> str:
        ref = match.group(1)
        if "::" in ref:
            page, key = ref.split("::", 1)
            return f"[{key.split(':', 1)[0]} from {Path(page).stem}]"
        key, _, spec = ref.partition(":")
        base = key.removesuffix(SHOWN)
        if key not in glued and key != base and isinstance(glued.get(base), float):
            return shown_text(glued[base])  # the text glue_numbers glues beside each number
        if key not in glued:
            return match.group(0)
        try:
            return format(glued[key], spec)
        except (TypeError, ValueError):
            return str(glued[key])

    return _TEXT.sub(one, text)


def page_parts(source: str, glued: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    """The page as ``("markdown", text)`` and ``("figure", object)`` parts, in page order.

    Code cells and the front matter are dropped; MyST cell breaks (``+++``) are removed.
    """
    body = _CODE_CELL.sub("", _HEADER.sub("", source)).replace("\n+++\n", "\n")
    at = 0
    for match in _FIGURE.finditer(body):
        yield "markdown", fill_text(body[at : match.start()], glued)
        if match.group(1) in glued:
            yield "figure", glued[match.group(1)]
        yield "markdown", f"*{fill_text(match.group(2).strip(), glued)}*"
        at = match.end()
    yield "markdown", fill_text(body[at:], glued)


def page_source(name: str) -> Path | None:
    """The text notebook of page ``name``, looked for beside the running notebook and in the checkout."""
    here = Path.cwd()
    for candidate in (
        here / f"{name}.md",
        here / "notebooks" / f"{name}.md",
        Path(__file__).resolve().parents[2] / "notebooks" / f"{name}.md",
    ):
        if candidate.is_file():
            return candidate
    return None


def show_page(name: str) -> None:
    """Display page ``name`` with its numbers and figures, unless a build is running."""
    if os.environ.get(BUILD_ENV):
        return
    from IPython.display import Markdown, display

    path = page_source(name)
    if path is None:
        display(Markdown(f"*(the text of page {name} was not found; its numbers are in the outputs above)*"))
        return
    for kind, part in page_parts(path.read_text(encoding="utf-8"), GLUED):
        if kind == "figure":
            display(part)
        elif part.strip():
            display(Markdown(part))
