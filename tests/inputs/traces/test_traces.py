"""The trace package re-exports its modules' names, each module imported when one of its names is first read."""

from __future__ import annotations

import subprocess
import sys

import pytest

from kvtier.inputs import traces
from kvtier.inputs.traces import formats, stream
from tests.conftest import ROOT


def test_a_re_exported_name_is_its_modules_own():
    assert traces.stream_lru is stream.stream_lru
    assert traces.TRACE_FORMATS is formats.TRACE_FORMATS
    assert set(traces.__all__) == set(traces._HOME)  # every listed name has a home, and only those
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        _ = traces.no_such_name


def test_the_format_registry_loads_without_the_reader_and_the_scanner():
    # the assumption schema reads the registry (workload.trace_format's choices): a quick answer must not pay for
    # the reader; reading a re-exported name of the reader then loads it
    code = (
        "import sys; import kvtier.inputs.traces.formats; from kvtier.inputs import traces;"
        "a = sorted(m for m in ('kvtier.inputs.traces.read', 'kvtier.inputs.traces.scan') if m in sys.modules);"
        "traces.read_trace; print(a, 'kvtier.inputs.traces.read' in sys.modules)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.stdout.strip() == "[] True", proc.stderr
