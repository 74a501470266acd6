"""Modules imported on first use, so that a quick answer does not pay for code it never runs.

The trace code (:mod:`kvtier.inputs.traces`, :mod:`kvtier.formulas.cache` and the replays built on
them) loads numba; ``kvtier compare``, ``kvtier tiers`` and ``kvtier model`` read no trace.  A module
that needs it only when a trace is analysed names it with :func:`deferred` instead of importing it,
and imports it under ``typing.TYPE_CHECKING`` as well, so that type checkers and the import-layer
contract (``[tool.importlinter]`` in ``pyproject.toml``) still see the dependency::

    if TYPE_CHECKING:
        from kvtier.inputs import traces
    else:
        traces = deferred("kvtier.inputs.traces")

Imports nothing from kvtier: it sits in the bottom layer, beside :mod:`kvtier.errors`.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any


class Deferred:
    """A module, imported the first time one of its names is read.

    Parameters
    ----------
    name : str
        The module's dotted name, as :func:`importlib.import_module` takes it.
    """

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    @property
    def module(self) -> ModuleType:
        """The module itself, imported now if it was not yet (then cached in ``sys.modules`` as any import)."""
        return importlib.import_module(self._name)

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.module, attr)

    def __repr__(self) -> str:
        return f"deferred({self._name!r})"


def deferred(name: str) -> Any:
    """The module ``name``, imported when one of its names is first read (typed ``Any``: declare its type
    under ``TYPE_CHECKING`` with a real import, as the module docstring shows)."""
    return Deferred(name)
