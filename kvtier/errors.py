"""The one exception type for bad user input, and how user text is shown in its message."""

SHOW_LIMIT = 200
"""Characters of one piece of user-supplied text that a message shows before cutting it."""


class KvtierError(Exception):
    """A user error: bad input, named by key or file.

    The CLI prints ``kvtier: error: <message>`` on one line and exits with status 2,
    without a traceback. Messages name the offending key or file and what is allowed;
    text the user supplied goes through :func:`show` so that it cannot break the line.
    """


def show(text: object, *, quote: bool = False, limit: int = SHOW_LIMIT) -> str:
    """User-supplied text (a path, key or value) as it may appear inside a one-line message.

    Parameters
    ----------
    text : object
        A path, key or value from a file, an option or an argument.
    quote : bool
        Show ``repr(text)``: ``'bandwidth.mid'`` for a string, ``1`` for an integer, so
        that a key's type is visible.  Otherwise ``str(text)`` with every character that
        is not printable escaped the way ``repr`` does (a newline becomes ``\\n``).
    limit : int
        Longer results are cut to ``limit`` characters and end in ``...``.

    Returns
    -------
    str
        Text with no line break or other control character in it.
    """
    if quote:
        shown = repr(text)
    else:
        shown = "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(text))
    return shown if len(shown) <= limit else shown[:limit] + "..."
