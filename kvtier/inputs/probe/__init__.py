"""``kvtier measure``: measure the machine it runs on and write an assumption set of the seed's form.

It times both sides of the fetch-or-regenerate question on the hardware at hand: copies
(fitted to ``latency + bytes / bandwidth``), device-memory bandwidth, the matrix rate and
forward passes of the chosen model's shapes with random weights, and writes them as an
assumption set that ``kvtier build --assumptions FILE`` rebuilds the book from.  One module
per job:

- :mod:`.memory`, the memory this process may still take on the CPU;
- :mod:`.shapes`, the dense decoders it builds and their parameter counts;
- :mod:`.backends`, the numpy CPU backend and the CUDA backend through PyTorch, and their timers;
- :mod:`.planning`, how many layers fit in the memory budget (``--layers``, ``--quick``), and the
  one-line refusals that offer a count or a model that fits;
- :mod:`.measuring`, a run: every measurement timed into a :class:`Result`;
- :mod:`.ranges`, every measured value's uncertainty range and the MFU brackets;
- :mod:`.document`, the assumption set's YAML document, every value with its basis;
- :mod:`.writing`, the output file: checked before measuring, marked, written atomically.

The names the command and the tests use are re-exported here (``from kvtier.inputs import probe``).
A test that replaces a module's global (``SIZES_QUICK``, the memory readers) patches the module
that reads it (:mod:`.measuring`, :mod:`.memory`), not this package.
"""

from __future__ import annotations

from kvtier.inputs.probe.backends import (
    DEVICES,
    WEIGHT_PATTERN,
    Backend,
    Timing,
    cpu_backend,
    cuda_backend,
    pick_backend,
)
from kvtier.inputs.probe.document import assumption_set, resolve_model
from kvtier.inputs.probe.measuring import Result, log, measure
from kvtier.inputs.probe.memory import cpu_free_bytes
from kvtier.inputs.probe.planning import MEMORY_SHARE, QUICK_LAYERS, layers_that_fit, plan_layers, weight_bytes_of
from kvtier.inputs.probe.ranges import RANGE_BAND, widen
from kvtier.inputs.probe.shapes import check_model, layer_params, model_params
from kvtier.inputs.probe.writing import MARK, check_out, marked, write_atomically, write_set

__all__ = [
    "DEVICES",
    "MARK",
    "MEMORY_SHARE",
    "QUICK_LAYERS",
    "RANGE_BAND",
    "WEIGHT_PATTERN",
    "Backend",
    "Result",
    "Timing",
    "assumption_set",
    "check_model",
    "check_out",
    "cpu_backend",
    "cpu_free_bytes",
    "cuda_backend",
    "layer_params",
    "layers_that_fit",
    "log",
    "marked",
    "measure",
    "model_params",
    "pick_backend",
    "plan_layers",
    "resolve_model",
    "weight_bytes_of",
    "widen",
    "write_atomically",
    "write_set",
]
