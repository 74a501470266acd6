"""How many layers of a model to build: what fits in the memory budget, what ``--layers`` and ``--quick`` ask.

A model whose weights do not fit in memory is refused with one line that offers ``--layers N``
(a count that fits), or a smaller preset when not even one layer fits; ``--quick`` picks such a
count itself.
"""

from __future__ import annotations

from kvtier.errors import KvtierError
from kvtier.inputs.models import PRESETS, ModelSpec, load_model
from kvtier.inputs.probe.backends import Backend
from kvtier.inputs.probe.shapes import layer_params, model_params

MEMORY_SHARE = 0.6
"""Largest share of the free memory the weights may take (the rest: activations, copies, the system)."""
QUICK_LAYERS = 2
"""Most layers a ``--quick`` run builds (fewer when fewer fit); the passes are scaled to all layers."""


def weight_bytes_of(spec: ModelSpec, backend: Backend, layers: int) -> tuple[float, float]:
    """Weight bytes of the embedding and head together, and of ``layers`` layers, in ``backend``'s type (B)."""
    rest = 2 * spec.vocab_size * spec.hidden_size * backend.element_bytes
    return float(rest), float(layers * layer_params(spec) * backend.element_bytes)


def layers_that_fit(spec: ModelSpec, backend: Backend, budget: float) -> int:
    """The most layers of ``spec`` whose weights, with the embedding and head, fit in ``budget`` bytes (0 to all)."""
    rest, per_layer = weight_bytes_of(spec, backend, 1)
    if budget < rest + per_layer:
        return 0
    return int(min(spec.n_layers, (budget - rest) // per_layer))


def _smaller_model(backend: Backend, budget: float) -> str | None:
    """The largest dense preset of which at least one layer fits in ``budget`` bytes, or None."""
    fitting = []
    for name in PRESETS:
        spec = load_model(name)
        if spec.attention != "MLA" and not spec.is_moe and layers_that_fit(spec, backend, budget) > 0:
            fitting.append((model_params(spec), name))
    return max(fitting)[1] if fitting else None


def _no_layer_fits(spec: ModelSpec, backend: Backend, budget: float) -> KvtierError:
    """The refusal when not even one layer of ``spec`` fits, with a model that does, if any."""
    rest, per_layer = weight_bytes_of(spec, backend, 1)
    other = _smaller_model(backend, budget)
    advice = (
        f"measure a smaller model: --model {other} --quick"
        if other
        else "no preset fits either; free some memory or measure on a larger machine"
    )
    return KvtierError(
        f"model '{spec.name}': not even one layer fits; its embedding and head take {rest / 1e9:.1f} GB and one"
        f" layer {per_layer / 1e9:.1f} GB of {backend.dtype} weights, more than {budget / 1e9:.1f} GB"
        f" ({MEMORY_SHARE:.0%} of the free memory); {advice}"
    )


def plan_layers(spec: ModelSpec, backend: Backend, layers: int | None, quick: bool = False) -> int:
    """How many layers to build: all of them, ``layers``, or with ``quick`` what fits (at most :data:`QUICK_LAYERS`).

    Every count it advises passes the same test: ``layers_that_fit`` of the same budget.

    Raises
    ------
    KvtierError
        One line: ``layers`` outside 1 .. the model's count; the weights do not fit in the
        free memory (with the figures), offering ``--layers N`` for the most layers that
        fit, or a smaller preset when not even one layer fits.
    """
    budget = backend.free_bytes() * MEMORY_SHARE
    fit = layers_that_fit(spec, backend, budget)
    if layers is not None:
        if not 1 <= layers <= spec.n_layers:
            raise KvtierError(f"--layers must be between 1 and {spec.n_layers} for model '{spec.name}', got {layers}")
        if layers > fit:
            if fit == 0:
                raise _no_layer_fits(spec, backend, budget)
            need = sum(weight_bytes_of(spec, backend, layers))
            raise KvtierError(
                f"--layers {layers}: {layers} layers of model '{spec.name}' need {need / 1e9:.1f} GB in"
                f" {backend.dtype}, more than {budget / 1e9:.1f} GB ({MEMORY_SHARE:.0%} of the free memory);"
                f" at most {fit} fit: --layers {fit}"
            )
        return layers
    if fit == 0:
        raise _no_layer_fits(spec, backend, budget)
    if quick:
        return min(QUICK_LAYERS, fit)
    if fit < spec.n_layers:
        need = sum(weight_bytes_of(spec, backend, spec.n_layers))
        raise KvtierError(
            f"model '{spec.name}' needs {need / 1e9:.1f} GB of {backend.dtype} weights, more than"
            f" {budget / 1e9:.1f} GB ({MEMORY_SHARE:.0%} of the free memory); measure fewer layers and scale"
            f" to all {spec.n_layers}: --layers {fit} (or --quick)"
        )
    return spec.n_layers
