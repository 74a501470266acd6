"""kvtier.errors: the one user-error type, and how user text is shown inside a one-line message."""

from __future__ import annotations

import pytest

from kvtier.errors import SHOW_LIMIT, KvtierError, show


def test_a_kvtier_error_is_an_exception_carrying_its_message():
    with pytest.raises(KvtierError, match="^seed.yaml: key 'x' unknown$"):
        raise KvtierError("seed.yaml: key 'x' unknown")
    assert issubclass(KvtierError, Exception) and not issubclass(KvtierError, ValueError)


def test_control_characters_are_escaped_as_repr_does():
    # a newline, a tab and an escape byte would break the one line; repr's escapes are printable
    assert show("a\nb\tc\x1bd") == "a\\nb\\tc\\x1bd"
    assert show("µs über") == "µs über"  # printable non-ASCII stays as written


def test_quote_shows_the_type():
    assert show("bandwidth.mid", quote=True) == "'bandwidth.mid'"
    assert show(1, quote=True) == "1"  # an integer key shows without quotes
    assert show(1) == "1"


def test_long_text_is_cut_at_the_limit_with_an_ellipsis():
    assert SHOW_LIMIT == 200
    assert show("x" * 200) == "x" * 200  # exactly the limit: kept whole
    assert show("x" * 201) == "x" * 200 + "..."  # one more: 200 characters, then "..."
    assert show("abcdef", limit=3) == "abc..."
    # the cut counts the escaped text: "\n" becomes two characters before the limit applies
    assert show("\n\n", limit=3) == "\\n\\..."
