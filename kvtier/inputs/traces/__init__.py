"""Serving traces: found, read and validated, one JSON object a line, into the arrays the cache simulation takes.

One module per job:

- :mod:`.formats`, the registry of trace formats (field names, unit of time, chaining, tokens per id);
- :mod:`.files`, finding a trace, reading regular files only, the one line splitter, blocks of lines;
- :mod:`.read`, the one validating reader (the standard library's ``json``), whose errors name the
  file, the line and the field;
- :mod:`.scan`, the compiled scanner of plain lines, which hands any other block to the reader;
- :mod:`.load`, a file read whole into a :class:`~kvtier.formulas.cache.trace.Trace`, and measured;
- :mod:`.stream`, a file read in chunks of whole requests: the exact LRU curve, and by windows;
- :mod:`.sample`, the spatially hashed sample (SHARDS) and its error;
- :mod:`.generate`, a seeded generator of traces for benchmarks at scale;
- :mod:`.published`, what the shipped traces' authors published about them (Mooncake FAST'25's Table 2 and
  Figure 9), which the workload page recomputes.

The names a command or a page uses are re-exported here (``from kvtier.inputs import traces``).
Times are seconds, sizes bytes, unless a name says otherwise.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kvtier.inputs.traces.files import (
        file_version,
        shadows_shipped,
        split_lines,
        trace_lines,
        trace_path,
        version_key,
    )
    from kvtier.inputs.traces.formats import (
        DEFAULT_FORMAT,
        TRACE_BLOCK_TOKENS,
        TRACE_FORMATS,
        TraceFormat,
        format_named,
    )
    from kvtier.inputs.traces.generate import generate_trace, to_jsonl
    from kvtier.inputs.traces.load import MAX_TRACE_BYTES, MAX_TRACE_REFS, analyse, parse_trace, read_trace
    from kvtier.inputs.traces.published import published_cache
    from kvtier.inputs.traces.sample import SAMPLE_RATES, read_sample, sampling_error
    from kvtier.inputs.traces.stream import (
        DENSE_MAX_REFS,
        RequestChunks,
        check_window,
        feed_requests,
        read_dense,
        stream_lru,
    )

_HOME = {
    **dict.fromkeys(
        ("file_version", "shadows_shipped", "split_lines", "trace_lines", "trace_path", "version_key"), "files"
    ),
    **dict.fromkeys(
        ("DEFAULT_FORMAT", "TRACE_BLOCK_TOKENS", "TRACE_FORMATS", "TraceFormat", "format_named"), "formats"
    ),
    **dict.fromkeys(("generate_trace", "to_jsonl"), "generate"),
    **dict.fromkeys(("MAX_TRACE_BYTES", "MAX_TRACE_REFS", "analyse", "parse_trace", "read_trace"), "load"),
    **dict.fromkeys(("SAMPLE_RATES", "read_sample", "sampling_error"), "sample"),
    "published_cache": "published",
    **dict.fromkeys(
        ("DENSE_MAX_REFS", "RequestChunks", "check_window", "feed_requests", "read_dense", "stream_lru"), "stream"
    ),
}
"""The module of each re-exported name: imported when the name is first read (PEP 562), so that reading
the registry of formats (``kvtier.inputs.traces.formats``) does not load the reader and the scanner."""


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)


__all__ = [
    "DEFAULT_FORMAT",
    "DENSE_MAX_REFS",
    "MAX_TRACE_BYTES",
    "MAX_TRACE_REFS",
    "SAMPLE_RATES",
    "TRACE_BLOCK_TOKENS",
    "TRACE_FORMATS",
    "RequestChunks",
    "TraceFormat",
    "analyse",
    "check_window",
    "feed_requests",
    "file_version",
    "format_named",
    "generate_trace",
    "parse_trace",
    "published_cache",
    "read_sample",
    "read_trace",
    "sampling_error",
    "shadows_shipped",
    "split_lines",
    "read_dense",
    "stream_lru",
    "to_jsonl",
    "trace_lines",
    "trace_path",
    "version_key",
]
