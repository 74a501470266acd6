"""kvtier.inputs.traces.files, by hand: finding a trace, regular files only, the one line splitter."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvtier.errors import KvtierError
from kvtier.inputs import traces

# ---------------------------------------------------------------------------
# one line splitter for both readers
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("size", [1, 2, 3, 7, 64, 1 << 20])
def test_split_lines_gives_the_same_lines_from_pieces_of_any_size(size):
    # \n ends a line; \r\n too (its \r dropped); a lone \r, \x0c, U+0085 and U+2028 do not; blanks count but are skipped
    data = "a\r\nb\rc\n\n  \t\nd\x0ce\u0085f\u2028g\n\nh".encode()
    pieces = [data[i : i + size] for i in range(0, len(data), size)]
    assert list(traces.split_lines(pieces, "t")) == [(1, "a"), (2, "b\rc"), (5, "d\x0ce\u0085f\u2028g"), (7, "h")]


def test_a_directory_is_not_a_trace(tmp_path):
    with pytest.raises(KvtierError) as info:
        traces.read_trace(tmp_path)
    assert (
        str(info.value)
        == f"{tmp_path}: trace is a directory, not a regular file (kvtier workload --parts reads the files in one)"
    )


def test_a_shipped_trace_path_is_a_real_file():
    where, path = traces.trace_path("synthetic")
    assert where == "synthetic" and Path(path).is_file()


def test_trace_lines_numbers_the_lines_and_decodes_utf8(tmp_path):
    # blank line 2 is skipped but counted; the line break is not part of the line
    path = tmp_path / "t.txt"
    path.write_bytes("a\n\nb\u00e9\n".encode())
    assert list(traces.trace_lines(path, "t")) == [(1, "a"), (3, "b\u00e9")]
