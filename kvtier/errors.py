"""The one exception type for bad user input."""


class KvtierError(Exception):
    """A user error: bad input, named by key or file.

    The CLI prints ``kvtier: error: <message>`` on one line and exits with status 2,
    without a traceback. Messages name the offending key or file and what is allowed.
    """
