"""The bad-input catalogue of ``kvtier diff``, in two surfaces.

**diff** (``kvtier diff A B``): a source that cannot be read is one line, as in
tests/commands/test_bad_input.py: the real CLI in a subprocess, exit status 2, stdout empty, stderr
exactly one line ``kvtier: error: ...`` naming the file (or the source), no traceback, and
nothing lost (every file under ``tmp_path``, git's objects included, byte-identical
afterwards).  Tables are bounded before they are read
(:data:`kvtier.report.diff.loading.MAX_TABLE_BYTES` a table,
:data:`~kvtier.report.diff.loading.MAX_SOURCE_BYTES` and :data:`~kvtier.report.diff.loading.MAX_TABLES` a
source, from ``st_size`` or git's blob sizes) and while they are parsed
(:data:`~kvtier.report.diff.loading.MAX_CELLS`); the memory cases run under an ``RLIMIT_AS`` cap.

**PR comment** (``kvtier diff --format md``, which CI posts on a pull request): every text a
table can carry into the comment (a table's name, a column's name, a row's key, an old or
new cell, the illustrative point's brackets, a headline's text cell, an SI column's name in
the folded block's summary) is rendered, for each string of a hostile corpus, by a CommonMark
renderer with GitHub's extensions (markdown-it-py's ``gfm-like``: tables, strikethrough,
linkify) and must come out as the same tokens as a plain word does: no link, image,
heading, HTML, emphasis, code, list or quote, one ``<details>`` block that no cell closes,
and the string itself visible.  What GitHub adds after rendering (mentions, ``#123``,
``GH-12``, ``www.`` and e-mail autolinks, emoji) is checked on the rendered text.
"""

from __future__ import annotations

import hashlib
import html
import os
import re
import resource
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token

from kvtier.errors import KvtierError
from kvtier.report.diff import (
    MAX_CELLS,
    MAX_TABLE_BYTES,
    MAX_TABLES,
    CsvTable,
    diff_tables,
    format_markdown,
    loading,
)
from tests.conftest import GIT_ENV, ROOT, run_cli

pytestmark = pytest.mark.surface("diff")
"""Cases of the PR comment (``--format md``) carry their own mark, ``pr-comment``."""

# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------

WIDE = "x" * 500
"""A long value: tables of whole mebibytes in a few thousand cells, so that a size case trips a
byte limit, never the cell limit."""


def csv_of_size(size: int, value: str = WIDE) -> bytes:
    """A valid two-column CSV of at least ``size`` bytes: header ``k,v``, then unique keys."""
    row_len = len(f"{0:09d},{value}\n")
    rows = -(-max(size - 4, 0) // row_len)
    return ("k,v\n" + "".join(f"{i:09d},{value}\n" for i in range(rows))).encode()


def write_dir(directory: Path, tables: dict[str, bytes]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name, data in tables.items():
        (directory / f"{name}.csv").write_bytes(data)
    return directory


def git(repo: Path, *args: str) -> str:
    proc = subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env={**os.environ, **GIT_ENV}
    )
    return proc.stdout.strip()


def git_repo(root: Path, tables: dict[str, bytes], links: dict[str, str] | None = None) -> Path:
    """A repository whose one commit holds ``tables`` (and symbolic ``links``) in book/tables/."""
    repo = root / "repo"
    write_dir(repo / "book" / "tables", tables)
    for name, target in (links or {}).items():
        (repo / "book" / "tables" / f"{name}.csv").symlink_to(target)
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "tables")
    return repo


def digest(root: Path) -> dict[str, tuple[int, str]]:
    """Every file under ``root`` (links not followed): its mode and a SHA-256 of its bytes, read in chunks."""
    out = {}
    for path in sorted(root.rglob("*")):
        st = path.lstat()
        if path.is_symlink():
            out[str(path.relative_to(root))] = (st.st_mode, os.readlink(path))
        elif path.is_file():
            h = hashlib.sha256()
            with path.open("rb") as f:
                while chunk := f.read(1 << 20):
                    h.update(chunk)
            out[str(path.relative_to(root))] = (st.st_mode, h.hexdigest())
    return out


def assert_one_line(proc: subprocess.CompletedProcess[str], *expected: str) -> None:
    """The house contract: exit 2, nothing on stdout, one line ``kvtier: error: ...`` holding ``expected``."""
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert proc.stdout == ""
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("kvtier: error: "), proc.stderr[-2000:]
    for text in expected:
        assert text.format(MAX_TABLE_BYTES=MAX_TABLE_BYTES) in lines[0], lines[0]


# ---------------------------------------------------------------------------
# surface "diff": sources that cannot be read
# ---------------------------------------------------------------------------

SMALL = b"k,v\na,1\n"


def _fifo(tmp: Path) -> list[str]:
    d = write_dir(tmp / "a", {"a": SMALL})
    os.mkfifo(d / "t.csv")  # a reader that opened it would wait for a writer for ever
    return [str(d), str(d)]


def _link(target: str) -> Callable[[Path], list[str]]:
    def setup(tmp: Path) -> list[str]:
        d = write_dir(tmp / "a", {"a": SMALL})
        (d / "t.csv").symlink_to(target)
        return [str(d), str(d)]

    return setup


def _dirs(tables: dict[str, bytes]) -> Callable[[Path], list[str]]:
    def setup(tmp: Path) -> list[str]:
        good = write_dir(tmp / "good", {"t": SMALL})
        return [str(good), str(write_dir(tmp / "a", tables))]

    return setup


def _git(tables: dict[str, bytes], links: dict[str, str] | None = None) -> Callable[[Path], list[str]]:
    def setup(tmp: Path) -> list[str]:
        return ["HEAD", "HEAD", "--repo", str(git_repo(tmp, tables, links))]

    return setup


OVER_ONE = csv_of_size(MAX_TABLE_BYTES + 1)
"""A valid table one row past the limit of one table: 2 MiB + 4 bytes header -> 4,105 rows of 511 bytes
(9 + 1 + 500 + 1) = 2,097,659 bytes > 2,097,152, in 8,212 cells (under the 100,000 of MAX_CELLS)."""
UNDER_ONE = csv_of_size(MAX_TABLE_BYTES - 600)
"""Under the limit of one table (4 + 4,103 rows x 511 = 2,096,637 bytes); five of them, 10,483,185 bytes,
pass MAX_SOURCE_BYTES (8,388,608), in 5 x (2 + 4,103 x 2) = 41,040 cells (under MAX_CELLS)."""
FIVE_UNDER = {f"t{i}": UNDER_ONE for i in range(5)}
MANY_CELLS = b"k\n" + b"0\n" * MAX_CELLS
"""One column of MAX_CELLS rows: the header's cell makes MAX_CELLS + 1 cells, in 200,002 bytes."""
MANY_TABLES = {f"t{i:04d}": SMALL for i in range(MAX_TABLES + 1)}

# (id, setup returning the CLI's arguments, substrings of the one error line): sizes bounded before
# reading, files that are not tables, then malformed tables and sources.
DIFF_CASES: list[tuple[str, Callable[[Path], list[str]], list[str]]] = [
    # bounded before reading, from st_size (a directory) or the blob's size (git)
    ("dir-table-over-limit", _dirs({"t": OVER_ONE}), ["a/t.csv: table is larger than 2,097,152 bytes (2,097,659)"]),
    ("dir-source-over-limit", _dirs(FIVE_UNDER), ["a: its tables are larger than 8,388,608 bytes together"]),
    ("dir-too-many-cells", _dirs({"t": MANY_CELLS}), ["a/t.csv: refused at record 100,001", "at most 100,000 cells"]),
    ("dir-too-many-tables", _dirs(MANY_TABLES), ["a: more than 1,000 tables (*.csv); refused"]),
    ("git-table-over-limit", _git({"t": OVER_ONE}),
     ["HEAD:book/tables/t.csv: table is larger than 2,097,152 bytes (2,097,659)"]),
    ("git-source-over-limit", _git(FIVE_UNDER), ["HEAD: its tables are larger than 8,388,608 bytes together"]),
    ("git-too-many-cells", _git({"t": MANY_CELLS}), ["HEAD:book/tables/t.csv: refused at record 100,001"]),
    ("git-too-many-tables", _git(MANY_TABLES), ["HEAD: more than 1,000 tables in book/tables/ at commit"]),
    # a *.csv that is not a table: refused, not skipped (a skipped table would hide its changes)
    ("dir-fifo", _fifo, ["a/t.csv: table is not a regular file; refused"]),
    ("dir-link-to-device", _link("/dev/zero"), ["a/t.csv: table is not a regular file; refused"]),
    ("dir-dangling-link", _link("no-such-file"), ["a/t.csv: cannot read table (No such file or directory)"]),
    ("git-symbolic-link", _git({"a": SMALL}, {"t": "../../README"}),
     ["HEAD:book/tables/t.csv: table is a symbolic link in git; refused"]),
    # malformed tables and sources
    ("not-utf8", _dirs({"t": b"k,v\na,\xff\n"}), ["a/t.csv: table is not UTF-8 text (byte 6)"]),
    ("git-not-utf8", _git({"t": b"k,v\na,\xff\n"}), ["HEAD:book/tables/t.csv: table is not UTF-8 text (byte 6)"]),
    ("ragged-record", _dirs({"t": b"k,v\na,1,2\n"}), ["a/t.csv: record 2 has 3 cells, the header has 2"]),
    ("duplicate-column", _dirs({"t": b"k,k\na,1\n"}), ["a/t.csv: duplicate column name(s) 'k' in the header"]),
    ("unclosed-quote", _dirs({"t": b'k,v\na,"1\n'}), ["a/t.csv: not valid CSV (unexpected end of data)"]),
    ("field-too-long", _dirs({"t": b"k,v\na," + b"1" * 131_073 + b"\n"}),
     ["a/t.csv: not valid CSV (field larger than field limit (131072))"]),
    ("no-such-source", lambda tmp: [str(tmp / "nope"), str(tmp / "nope")],
     ["nope: not a directory of tables nor a git revision"]),
    ("no-tables", lambda tmp: [str(write_dir(tmp / "a", {})), str(tmp / "a")], ["a: no tables (*.csv)"]),
    # a source's name is shown on one line, whatever it holds (a newline is escaped)
    ("source-name-with-newline", lambda tmp: [str(tmp / "no\nsuch"), str(tmp / "no\nsuch")],
     ["no\\nsuch: not a directory of tables nor a git revision"]),
    ("bad-table-in-source-with-newline", lambda tmp: [str(write_dir(tmp / "a\nb", {"t": b"k,v\na,1,2\n"}))] * 2,
     ["a\\nb/t.csv: record 2 has 3 cells"]),
]  # fmt: skip


@pytest.mark.parametrize(("setup", "expected"), [c[1:] for c in DIFF_CASES], ids=[c[0] for c in DIFF_CASES])
def test_diff_bad_source_is_one_line(tmp_path: Path, setup: Callable[[Path], list[str]], expected: list[str]) -> None:
    argv = setup(tmp_path)
    before = digest(tmp_path)
    assert_one_line(run_cli("diff", *argv, cwd=tmp_path), *expected)
    assert digest(tmp_path) == before  # nothing lost


def test_diff_unlistable_directory_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Permissions do not stop root (these tests may run as root), so the refusal is simulated.
    a = write_dir(tmp_path / "a", {"t": SMALL})

    def refuse(path: object) -> None:
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(loading.os, "scandir", refuse)
    with pytest.raises(KvtierError, match=r"/a: cannot list the directory \(Permission denied\)$"):
        loading.load_tables(str(a))


def test_diff_table_at_the_byte_limit_is_read(tmp_path: Path) -> None:
    # The limit is inclusive: a table of exactly MAX_TABLE_BYTES is diffed. Its data rows are cut
    # to fit: csv_of_size(2 MiB - 600) is 4 + 4,103 rows x 511 = 2,096,637 bytes; 515 more bytes,
    # one last row with a value of 515 - 11 = 504 characters, make 2,097,152 exactly.
    data = UNDER_ONE + f"{999_999_999},{'y' * (MAX_TABLE_BYTES - len(UNDER_ONE) - 11)}\n".encode()
    assert len(data) == MAX_TABLE_BYTES
    a = write_dir(tmp_path / "a", {"t": data})
    proc = run_cli("diff", str(a), str(a), cwd=tmp_path)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")


def test_diff_text_form_escapes_terminal_control(tmp_path: Path) -> None:
    # A cell with ESC [ 2 J (clear the screen) and a key with a newline: the text form shows each
    # as its Python escape, so nothing reaches the terminal but printable text.
    a = write_dir(tmp_path / "a", {"t": b'k,v\n"a\nb",1\n'})
    b = write_dir(tmp_path / "b", {"t": b'k,v\n"a\nb",\x1b[2J\n'})
    proc = run_cli("diff", str(a), str(b), cwd=tmp_path)
    assert proc.returncode == 1 and proc.stderr == ""
    assert proc.stdout.splitlines()[2].split() == ["t", 'k="a\\nb"', "v", "1", "\\x1b[2J", "text"]
    assert "\x1b" not in proc.stdout


# ---------------------------------------------------------------------------
# surface "diff": memory, under a cap
# ---------------------------------------------------------------------------

CAP = 1 << 30
"""Address space of a capped run (bytes): 1 GiB.  `kvtier diff` of two copies of book/tables runs
in 200 MiB of it (measured: 150 MiB is too little to import the page registry); the 358 MB table
of the issue, read whole, needs its bytes, its text and a UCS-4 copy in io.StringIO (358 MB x 6)
before the CSV reader starts: a MemoryError traceback before the fix."""


def run_capped(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``python -m kvtier ARGS`` with its address space capped at :data:`CAP`."""

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (CAP, CAP))

    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    return subprocess.run(
        [sys.executable, "-m", "kvtier", *args], capture_output=True, text=True, cwd=cwd, env=env,
        preexec_fn=cap, timeout=600,
    )  # fmt: skip


ISSUE_SIZE = 358_000_000
"""The size of the table in the issue (bytes)."""


def test_diff_358_mb_table_is_refused_in_bounded_memory(tmp_path: Path) -> None:
    # 8 MiB of real rows (9 + 1 + 1 + 1 = 12-byte rows "000000000,0"), then a hole up to 358 MB
    # (sparse: no disk used); the size alone refuses it, so nothing of it is read.
    a = tmp_path / "a"
    write_dir(a, {"t": csv_of_size(8 << 20, value="0")})
    os.truncate(a / "t.csv", ISSUE_SIZE)
    proc = run_capped("diff", str(a), str(ROOT / "book" / "tables"), cwd=tmp_path)
    assert_one_line(proc, "a/t.csv: table is larger than 2,097,152 bytes (358,000,000)")


def test_diff_large_git_blob_is_refused_in_bounded_memory(tmp_path: Path) -> None:
    # 64 MiB of 12-byte rows: 5.6 M records, several GB as Python lists, were read whole before.
    repo = git_repo(tmp_path, {"t": csv_of_size(64 << 20, value="0")})
    proc = run_capped("diff", "HEAD", "HEAD", "--repo", str(repo), cwd=tmp_path)
    assert_one_line(proc, "HEAD:book/tables/t.csv: table is larger than 2,097,152 bytes (67,108,")


def test_diff_at_the_cell_limit_fits_the_cap(tmp_path: Path) -> None:
    # The worst shape per cell: one column, so every row is its own key and every row of either
    # side is removed or added (100,000 - 1 rows each: 199,998 changes, each labelled `k=0 (#N)`).
    # Both sides at MAX_CELLS, the Markdown form (the larger): it must finish under the cap.
    a = write_dir(tmp_path / "a", {"t": b"k\n" + b"0\n" * (MAX_CELLS - 1)})
    b = write_dir(tmp_path / "b", {"t": b"k\n" + b"1\n" * (MAX_CELLS - 1)})
    proc = run_capped("diff", str(a), str(b), "--format", "md", cwd=tmp_path)
    assert (proc.returncode, proc.stderr) == (1, "")
    assert "**0 numbers changed, 99999 rows added, 99999 rows removed in 1 table**" in proc.stdout


# ---------------------------------------------------------------------------
# surface "PR comment": hostile cell text renders as inert text
# ---------------------------------------------------------------------------

HOSTILE = [
    # images, links, autolinks (CommonMark and GitHub's extended ones)
    "![x](http://evil.example/p.png)",
    "[a](javascript:alert(1))",
    "[a][r]\n\n[r]: http://evil.example",
    "<http://evil.example>",
    "<mail@evil.example>",
    "http://bare.url/path",
    "see https://evil.example/p.png now",
    "www.evil.example",
    "//evil.example/p.png",
    "user@example.com",
    "mailto:user@example.com",
    # raw HTML, and the comment's own <details> block
    "<img src=x onerror=alert(1)>",
    "<script>alert(1)</script>",
    "<!-- hidden -->",
    "</details><img src=http://evil.example/p.png>",
    "</summary></details>\n\n# out",
    "&amp; &lt;b&gt; &#64;octocat &#x23;1",
    # GitHub's references and mentions
    "@octocat",
    "cc @octocat and @org/team",
    "#123",
    "fixes octo/repo#7",
    "GH-12",
    "octocat@a5c3785ed8d6a35868bc169f07e40e889087fd2e",
    ":+1: :tada:",
    # emphasis, code, strikethrough, math
    "**b**",
    "__b__",
    "*i* _i_",
    "`c`",
    "``c``",
    "~~s~~",
    "$x^2$ and $$\\href{http://evil.example}{y}$$",
    "\\*not\\* \\\\",
    # line breaks into headings, rules, lists, quotes, code blocks; the table broken by a pipe
    "\n# h",
    "x\r## h2",
    "x\r\n---",
    "a\u2028# h",
    "a\u2029> quote",
    "a\x85- item",
    "a\n\n    indented code",
    "a\n```\nfence\n```",
    "| x | y |",
    "a|b\n|--|--|\n|c|d|",
    "a\\|b",
    # control characters: a terminal's escape, a right-to-left override, NUL, tab, vertical tab
    "\x1b[31mred\x1b[0m",
    "txt\u202egpj.exe",
    "a\x00b\tc\x0bd\x07",
]
"""Texts a pull request's assumption set or model directory can put into a table's cells."""

PLAIN = "plain"
"""The benign twin of every hostile string: the comment it gives has the tokens every comment must have."""


def hostile_tables(s: str) -> tuple[dict[str, CsvTable], dict[str, CsvTable]]:
    """Two sets of tables in which ``s`` is every text the comment shows.

    ``ratio`` (a table of record: keys bandwidth_bracket and mfu_bracket) holds the illustrative
    point with ``s`` as both brackets (the row label and the headline line's "at the illustrative
    point (...)") and as the `within_claim` headline's text, old and new; a table named ``s`` has a
    key column with ``s`` as a key, a numeric column named ``s`` (the largest change: `+200.00% (s
    at key=s)`), its SI duplicate ``s_si`` (named in the folded block's summary), and a text
    column whose old value is ``s``.
    """
    ratio_header = ("bandwidth_bracket", "mfu_bracket", "illustrative", "ratio", "within_claim")
    old = {
        "ratio": CsvTable(ratio_header, ((s, s, "True", "100", s),)),
        s: CsvTable(("key", s, f"{s}_si", "text"), ((s, "1", "1", s),)),
    }
    new = {
        "ratio": CsvTable(ratio_header, ((s, s, "True", "300", f"new {s}"),)),
        s: CsvTable(("key", s, f"{s}_si", "text"), ((s, "3", "3", f"new {s}"),)),
    }
    return old, new


def comment(s: str) -> str:
    old, new = hostile_tables(s)
    return format_markdown(diff_tables(old, new), old, new)


def renderer() -> MarkdownIt:
    """CommonMark with GitHub's tables, strikethrough and autolinks (linkify).

    linkify-it's fuzzy links (a bare ``evil.example``) are off: GitHub links only ``http://``,
    ``https://``, ``www.`` and e-mail addresses (its extended autolinks), which linkify-it finds
    with fuzzy links off, ``www.`` excepted: that one is checked on the text (:data:`GITHUB`).
    """
    md = MarkdownIt("gfm-like")
    md.linkify.set({"fuzzy_link": False})
    return md


def flat(tokens: list[Token]) -> list[Token]:
    """Every token, children in place of their inline token."""
    return [t for tok in tokens for t in ([tok, *tok.children] if tok.children else [tok])]


def shape(tokens: list[Token]) -> list[str]:
    """The token types in order, runs of text (and soft line breaks inside text) as one ``text``."""
    out: list[str] = []
    for t in flat(tokens):
        kind = "text" if t.type in ("text", "text_special") else t.type
        if not (kind == "text" and out and out[-1] == "text"):
            out.append(kind)
    return out


FORBIDDEN = {
    "link_open", "image", "heading_open", "html_inline", "em_open", "code_inline", "code_block", "fence",
    "s_open", "blockquote_open", "hr", "bullet_list_open", "ordered_list_open", "softbreak", "hardbreak",
}  # fmt: skip
"""Token types no cell may produce (the comment itself has none: see test_plain_comment_shape)."""

GITHUB = {
    "mention": re.compile(r"(?<![\w`])@[A-Za-z0-9]"),
    "issue reference": re.compile(r"#\d"),
    "GH- reference": re.compile(r"(?i)\bGH-\d"),
    "URL autolink": re.compile(r"(?i)(https?|ftp)://|//[a-z]|\bwww\."),
    "e-mail autolink": re.compile(r"[\w.+-]@\w"),
    "emoji": re.compile(r":[\w+-]+:"),
}
"""What GitHub links or replaces in a comment's rendered text, after the Markdown renderer."""


def visible(s: str) -> str:
    """``s`` as the comment shows it: line breaks as ↵, other unprintable characters as Python escapes."""
    s = re.sub("\r\n|[\n\r\x85\u2028\u2029]", "↵", s)
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in s)


@pytest.mark.surface("pr-comment")
def test_plain_comment_shape() -> None:
    # The comment of the benign twin: the headline table, the table of tables, and the folded
    # block (two HTML blocks around the table of cells). Bold text is the comment's own.
    tokens = renderer().parse(comment(PLAIN))
    kinds = shape(tokens)
    assert kinds.count("table_open") == 3
    assert [t.content for t in tokens if t.type == "html_block"] == [
        "<details><summary>All 4 changed cells, numbers to 5 significant figures;"
        " 1 cell of SI duplicate columns (plain_si) left out</summary>\n",
        "</details>\n",
    ]
    assert not FORBIDDEN & set(kinds)


@pytest.mark.surface("pr-comment")
@pytest.mark.parametrize("s", HOSTILE, ids=[f"{i:02d}" for i in range(len(HOSTILE))])
def test_pr_comment_cell_is_inert(s: str) -> None:
    out = comment(s)
    tokens = renderer().parse(out)
    # 1. the same tokens as the plain twin's comment: no cell made a link, an image, a heading,
    #    HTML, emphasis, code, a list, a quote, a line break, a new row or a new cell
    assert shape(tokens) == shape(renderer().parse(comment(PLAIN)))
    assert not FORBIDDEN & {t.type for t in flat(tokens)}
    # 2. one <details> block, opened and closed by the comment alone (no cell closes it)
    blocks = [t.content for t in tokens if t.type == "html_block"]
    assert len(blocks) == 2 and blocks[1] == "</details>\n"
    assert re.fullmatch(r"<details><summary>[^<>]*</summary>\n", blocks[0])
    # 3. nothing GitHub links after rendering, in the text or in the summary
    text = "\n".join([*(t.content for t in flat(tokens) if t.type == "text"), html.unescape(blocks[0])])
    for what, pattern in GITHUB.items():
        assert not pattern.search(text), what
    assert "$" not in out  # GitHub's math needs a literal dollar in the source
    # 4. the string itself is there to read: its old cell shows it whole (zero-width spaces aside)
    assert visible(s) in text.replace("\u200b", "")


@pytest.mark.surface("pr-comment")
def test_pr_comment_from_the_cli(tmp_path: Path) -> None:
    # The same through the CLI: hostile keys and cells in a CSV of a source directory (file
    # names cannot hold every string; the table is named `t`).
    def table(values: list[str]) -> bytes:
        quoted = ['"' + v.replace('"', '""') + '"' for v in values]
        return ("k,v\n" + "".join(f"{q},{v}\n" for q, v in zip(quoted, quoted, strict=True))).encode()

    keys = HOSTILE
    a = write_dir(tmp_path / "a", {"t": table(keys)})
    # keys differ too, so every row is removed and added: each string is a key and a cell
    b = write_dir(tmp_path / "b", {"t": table([f"new {s}" for s in keys])})
    proc = run_cli("diff", str(a), str(b), "--format", "md", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    tokens = renderer().parse(proc.stdout)
    assert not FORBIDDEN & {t.type for t in flat(tokens)}
    assert [t.content for t in tokens if t.type == "html_block"][1:] == ["</details>\n"]
    text = "\n".join(t.content for t in flat(tokens) if t.type == "text")
    for what, pattern in GITHUB.items():
        assert not pattern.search(text), what
    for s in keys:
        assert visible(s) in text.replace("\u200b", ""), s
