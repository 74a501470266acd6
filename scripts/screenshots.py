"""Screenshot every page of a built book at 1,400 and 420 px wide, for review (not a test).

Usage::

    .venv/bin/python scripts/screenshots.py [--html _build/html] [--out _build/screenshots]

Writes ``OUT/WIDTH/PAGE.png`` (the whole page, top to bottom) with the headless Chromium that
``scripts/setup.sh`` installs. Open the PNGs in any image viewer: figure text, tables and
captions should read as they would on a laptop and on a phone.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

WIDTHS = (1400, 420)
CHROMIUM = Path("/usr/bin/chromium")
SKIP = ("index.html", "genindex.html", "search.html")


def pages(html: Path) -> list[Path]:
    """The book's pages under ``html``, without the redirect, the index and the search page."""
    return sorted(
        p for p in html.rglob("*.html") if "_static" not in p.parts and p.relative_to(html).as_posix() not in SKIP
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--html", type=Path, default=Path("_build/html"), help="the built book (default _build/html)")
    parser.add_argument("--out", type=Path, default=Path("_build/screenshots"), help="where the PNGs go")
    args = parser.parse_args(argv)
    found = pages(args.html.resolve())
    if not found:
        print(f"screenshots: no pages under {args.html}; build the book first (bash scripts/build.sh)", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=str(CHROMIUM) if CHROMIUM.exists() else None, args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            for width in WIDTHS:
                for path in found:
                    page = browser.new_page(viewport={"width": width, "height": 900})
                    page.goto(path.as_uri(), wait_until="load")
                    rel = path.relative_to(args.html.resolve()).with_suffix(".png")
                    shot = args.out / str(width) / rel.as_posix().replace("/", "__")
                    shot.parent.mkdir(parents=True, exist_ok=True)
                    page.screenshot(path=str(shot), full_page=True)
                    page.close()
                    print(shot)
        finally:
            browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
