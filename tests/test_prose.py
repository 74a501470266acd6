"""No number is typed into the book's prose: every figure a reader sees is glued from a page module.

Scans the page sources (``book/intro.md``, ``book/findings.md``, ``book/reproduce.md`` and
``notebooks/*.md``) outside front matter, code cells, directive option lines and inline roles
(``{glue:text}`...```, ``{doc}`...```) or inline code, and fails on any digit that is not part of an
allowed pattern.  Each allowed pattern is a name that contains digits or a definition, and says why.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import ROOT

PAGES = sorted([ROOT / "book" / "intro.md", ROOT / "book" / "findings.md", ROOT / "book" / "reproduce.md"]) + sorted(
    (ROOT / "notebooks").glob("*.md")
)
"""The page sources whose prose the scan reads."""

ALLOWED: tuple[tuple[str, str], ...] = (
    (r"^\s*\d+\.\s", "the number of an item in an ordered list, a label Markdown writes"),
    (r"\bLlama-\d+(?:\.\d+)?(?:-\d+B)?\b", "a model's name (Llama-3-70B, Llama-3.1, Llama-2)"),
    (r"\b\d+B\b", "a model size in a model's name (7B, 8B, 70B shapes)"),
    (r"\bDeepSeek-V\d+\b", "a model's name"),
    (r"\b[AHB]\d{3}s?\b", "an accelerator's name (A800, H100, H200, B200; H800s)"),
    (r"\b(?:bf|fp|FP|int|INT)\d+\b", "a number format's name (bf16, fp8, FP4)"),
    (r"\bPCIe(?: Gen| )?\d+(?:\.\d+)?\b", "a link standard's version (PCIe 5.0, PCIe Gen5)"),
    (r"\bCXL\s+\d+\.\d+\b", "a link standard's version (CXL 2.0)"),
    (r"\bGen\d+\b", "a link generation in a device's name (NVMe Gen4)"),
    (r"\bx\d+\b", "a link width in lanes, part of a link's name (x4, x8, x16)"),
    (r"\b1 GiB is 2\^30 bytes\b", "the definition of a binary unit"),
    (r"\b1 GB/s is 10\^9 bytes\b", "the definition of a decimal unit"),
    (r"\b2\^20 bytes\b", "the definition of a MiB"),
    (r"\b10\^9 bytes\b", "the definition of a GB"),
    (r"\bn\(n\+1\)/2\b", "an algebraic formula, not a value"),
    (r"\^\(1/p\)", "an algebraic formula (a p-norm), not a value"),
    (r"\b[Pp]osition 0\b", "the first position of a sequence, where the tail block starts by definition"),
    (r"\bstatus 1\b|\b0 when\b", "the exit statuses of a command, its interface"),
    (r"\b\d+(?:st|nd|rd|th)\b(?= percentile|;|$|,)", "which percentile a glued value is (90th, 99th)"),
    (r"\b(?:19|20)\d\d-\d\d-\d\d\b", "the date of a measurement session, a label"),
    (
        r"\((?:19|20)\d\d, revisited for [^)]*?(?:(?:19|20)\d\d(?:, | and ))+(?:19|20)\d\d\)",
        "the years of a citation (Gray and Putzolu, and its revisions)",
    ),
    (r"\bFAST'\d\d\b", "a conference's name and year in a citation"),
    (r"\b(?:SOSP|NSDI)'\d\d\b", "a conference's name and year in a citation"),
    (r"\bS3-FIFO\b", "a cache eviction policy's name"),
    (r"\bApache-\d\.\d\b", "a licence's name"),
)
"""(pattern, reason) pairs: text these match is not a typed number."""

FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
INLINE = re.compile(r"\{[A-Za-z:-]+\}`[^`]*`|``[^`]*``|`[^`]*`")
"""Inline roles (``{glue:text}`name:fmt```, ``{doc}`page```) and inline code, whose digits are not prose."""
DIGIT = re.compile(r"\d")


def prose_lines(text: str) -> list[tuple[int, str]]:
    """The lines of a page source that are prose: (1-based line number, text with inline roles blanked)."""
    lines = text.splitlines()
    start = 0
    if lines and lines[0].strip() == "---":  # front matter
        start = next(i for i in range(1, len(lines)) if lines[i].strip() == "---") + 1
    out: list[tuple[int, str]] = []
    fence = ""
    for number, line in enumerate(lines[start:], start=start + 1):
        match = FENCE.match(line)
        if fence:  # inside a code cell or a directive: its options and body are not prose
            if (
                match
                and line.strip() == match.group(1)
                and match.group(1)[0] == fence[0]
                and len(match.group(1)) >= len(fence)
            ):
                fence = ""
            continue
        if match:
            fence = match.group(1)
            continue
        if line.lstrip().startswith(":") and re.match(r"^\s*:[a-z-]+:", line):  # a directive's option line
            continue
        out.append((number, INLINE.sub(" ", line)))
    return out


def typed_numbers(text: str) -> list[tuple[int, str]]:
    """The typed numbers in a page source's prose: (line number, the line's text around the number)."""
    found = []
    for number, line in prose_lines(text):
        blanked = line
        for pattern, _ in ALLOWED:
            blanked = re.sub(pattern, lambda m: " " * len(m.group()), blanked)
        for match in DIGIT.finditer(blanked):
            found.append((number, line[max(0, match.start() - 30) : match.end() + 30].strip()))
            break  # one report per line is enough to find it
    return found


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_number_is_typed_in_prose(page: Path):
    found = typed_numbers(page.read_text(encoding="utf-8"))
    assert not found, f"{page.relative_to(ROOT)}: typed numbers (glue them from the page module): {found}"


def test_the_scan_finds_a_typed_number():
    sample = "\n".join(
        [
            "---",
            "title: 3 pages",  # front matter: not prose
            "---",
            "On one H200 a lone 16-token block of Llama-3-70B in bf16 over PCIe 5.0 x16 cost",  # line 4: 16-token
            "{glue:text}`ratio:.1f` times its fetch (1 GiB is 2^30 bytes).",  # line 5: glue and a definition
            "```{code-cell}",
            "x = 42",  # code: not prose
            "```",
            "A 5 MiB block, nine draws in ten.",  # line 9: 5 is typed
            "1. **The unit.** a CXL 2.0 x8 expander, measured on 2026-11-30.",  # line 10: all allowed
            "It exits with status 1 when something changed, 0 when nothing did; 3 % slower.",  # line 11: 3 typed
        ]
    )
    assert [line for line, _ in typed_numbers(sample)] == [4, 9, 11]
    # the number the scan reports on line 4 is the 16 of "16-token", the only digit left once the names are blanked
    assert "16-token" in typed_numbers(sample)[0][1]


def test_every_allowed_pattern_says_why():
    for pattern, reason in ALLOWED:
        re.compile(pattern)
        assert len(reason.split()) >= 3, pattern
