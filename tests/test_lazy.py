"""Modules imported on first use (:mod:`kvtier.lazy`)."""

import subprocess
import sys

import pytest

from kvtier.lazy import Deferred, deferred
from tests.conftest import ROOT


def test_a_deferred_module_is_imported_when_a_name_is_read():
    # in a fresh interpreter: naming the module imports nothing; reading a name imports it once
    code = (
        "import sys; from kvtier.lazy import deferred;"
        "m = deferred('kvtier.formulas.fits'); before = 'kvtier.formulas.fits' in sys.modules;"
        "f = m.fit_latency_bandwidth; import kvtier.formulas.fits as real;"
        "print(before, 'kvtier.formulas.fits' in sys.modules, f is real.fit_latency_bandwidth, m.module is real)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert proc.stdout.strip() == "False True True True", proc.stderr


def test_a_missing_name_or_module_raises_as_an_import_would():
    module = deferred("kvtier.units")
    assert isinstance(module, Deferred) and repr(module) == "deferred('kvtier.units')"
    with pytest.raises(AttributeError, match="no_such_name"):
        getattr(module, "no_such_name")  # noqa: B009
    with pytest.raises(ModuleNotFoundError, match="kvtier.no_such_module"):
        getattr(deferred("kvtier.no_such_module"), "anything")  # noqa: B009
