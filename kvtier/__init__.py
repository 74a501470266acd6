"""kvtier: the economics of tiering an LLM's KV cache, computed with provenance.

Public API (each name lives in one small module):

- :class:`Record`: a value with its provenance (an assumption, a hardware preset's figure,
  a number the source chapter printed); :data:`Assumption` is its name in an assumption set
- :func:`load_assumptions`, :func:`seed`, :class:`AssumptionSet`
- :func:`load_model`, :class:`ModelSpec`, :data:`PRESETS`
- :class:`Scenario`: an assumption set resolved into the report's numbers
- :mod:`kvtier.formulas.costs`, :mod:`kvtier.formulas.capacity`: the vectorized formulas
- :func:`parse_quantity`, :func:`format_quantity`: units at the edges
"""

from kvtier.errors import KvtierError
from kvtier.inputs.assumptions import Assumption, AssumptionSet, load_assumptions, seed
from kvtier.inputs.models import PRESETS, ModelSpec, load_model
from kvtier.inputs.provenance import Record
from kvtier.scenario import Scenario
from kvtier.units import format_quantity, parse_quantity

__version__ = "0.1.0"

__all__ = [
    "PRESETS",
    "Assumption",
    "AssumptionSet",
    "KvtierError",
    "ModelSpec",
    "Record",
    "Scenario",
    "format_quantity",
    "load_assumptions",
    "load_model",
    "parse_quantity",
    "seed",
]
