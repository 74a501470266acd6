"""A small Sphinx extension for the kvtier book: drop duplicate <script> tags.

sphinx-thebe (loaded by Jupyter Book) registers its configuration script from an
``env-before-read-docs`` handler, which can run more than once per build; the page
then declares ``const THEBE_JS_URL`` twice and the browser logs a SyntaxError.
Keeping the first of identical scripts removes the error without changing anything else.
"""

from __future__ import annotations

from typing import Any


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


def setup(app: Any) -> dict[str, bool]:
    app.connect("html-page-context", dedupe_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
