"""A small Sphinx extension for the kvtier book: the ``{input}`` role and no duplicate <script> tags.

``{input}`words <key>``` names an input of the assumption set in words and links its row on the
assumptions page (``notebooks/00_assumptions``, the row's id :func:`kvtier.report.notebook.key_anchor`),
the key in the link's title: the prose never shows a key's name, and a key that does not exist fails the
build (warnings are errors).

sphinx-thebe (loaded by Jupyter Book) registers its configuration script from an
``env-before-read-docs`` handler, which can run more than once per build; the page
then declares ``const THEBE_JS_URL`` twice and the browser logs a SyntaxError.
Keeping the first of identical scripts removes the error without changing anything else.
"""

from __future__ import annotations

import posixpath
from typing import Any

from docutils import nodes

ASSUMPTIONS_DOC = "notebooks/00_assumptions"
"""The page whose table lists every key, one row each."""


def _script_key(script: Any) -> tuple[str, tuple[tuple[str, str], ...]]:
    attributes = getattr(script, "attributes", {}) or {}
    return str(getattr(script, "filename", script) or ""), tuple(sorted((k, str(v)) for k, v in attributes.items()))


def dedupe_scripts(app: Any, pagename: str, templatename: str, context: dict[str, Any], doctree: Any) -> None:
    """Remove repeated identical entries from the page's script list."""
    seen: set[tuple[str, tuple[tuple[str, str], ...]]] = set()
    kept = []
    for script in context.get("script_files", []):
        key = _script_key(script)
        if key not in seen:
            seen.add(key)
            kept.append(script)
    context["script_files"] = kept


def input_role(
    name: str, rawtext: str, text: str, lineno: int, inliner: Any, options: Any = None, content: Any = ()
) -> tuple[list[Any], list[Any]]:
    """``{input}`words <key>```: ``words`` linked to ``key``'s row on the assumptions page, ``key`` its title."""
    from kvtier.inputs.keys import SCHEMA
    from kvtier.report.notebook import key_anchor

    words, _, key = text.rpartition("<")
    words, key = words.strip(), key.rstrip(">").strip()
    if not words or key not in SCHEMA:
        msg = inliner.reporter.error(f"{{input}} needs `words <key>` with a key of the assumption set: {text!r}")
        return [inliner.problematic(rawtext, rawtext, msg)], [msg]
    here = inliner.document.settings.env.docname
    uri = posixpath.relpath(ASSUMPTIONS_DOC, posixpath.dirname(here) or ".") + ".html#" + key_anchor(key)
    return [nodes.reference(rawtext, words, refuri=uri, reftitle=f"assumption key {key}", classes=["kvtier-input"])], []


def setup(app: Any) -> dict[str, bool]:
    app.add_role("input", input_role)
    app.connect("html-page-context", dedupe_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
