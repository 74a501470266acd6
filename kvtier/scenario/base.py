"""An assumption set read, and its model resolved: what every part of a scenario starts from."""

from __future__ import annotations

from dataclasses import replace
from functools import cached_property

from kvtier.formulas import capacity
from kvtier.inputs.assumptions import Assumption, AssumptionSet, load_assumptions
from kvtier.inputs.models import ModelSpec, load_model, resolve_weight_dtype, weight_dtype_bytes
from kvtier.units import AUTO_DTYPE


class Resolved:
    """An assumption set's values in SI units and its model: what the placement, the timings and the prices read.

    Parameters
    ----------
    assumptions : AssumptionSet, optional
        Defaults to the seed set.
    """

    def __init__(self, assumptions: AssumptionSet | None = None):
        self.assumptions = assumptions if assumptions is not None else load_assumptions()

    def a(self, key: str) -> Assumption:
        """The assumption record for ``key``."""
        return self.assumptions[key]

    def v(self, key: str) -> float:
        """The numeric value of ``key`` in SI base units."""
        return float(self.assumptions.value(key))

    # ---- model ------------------------------------------------------------
    @cached_property
    def model(self) -> ModelSpec:
        """The model named by the ``model`` key (preset or config.json path)."""
        return load_model(str(self.assumptions.value("model")))

    @property
    def kv_dtype(self) -> str:
        """KV-cache element type."""
        return str(self.assumptions.value("kv_dtype"))

    @property
    def kv_bytes_per_token(self) -> float:
        """KV-cache bytes per token (B)."""
        return float(self.model.kv_bytes_per_token(self.kv_dtype))

    @property
    def params(self) -> float:
        """Total parameter count (dimensionless): the ``param_count`` key, else the config's exact count.

        For an MoE model an override is read as the total; see :attr:`active_params`.
        """
        override = self.assumptions.value("param_count")
        return float(override) if override is not None else float(self.model.total_params)

    @property
    def active_params(self) -> float:
        """Parameters a token passes through (equals :attr:`params` for dense models).

        For an MoE model with ``param_count`` set, the override is scaled by the config's
        active/total ratio.
        """
        total, active = self.model.param_counts()
        return self.params * active / total

    @property
    def params_source(self) -> str:
        """``assumption`` when ``param_count`` overrides the config, else ``config``."""
        return "config" if self.assumptions.value("param_count") is None else "assumption"

    @cached_property
    def weight_dtype(self) -> str:
        """The element type the weights are counted in: ``weight_dtype``, or the model's published one for ``auto``.

        :func:`kvtier.inputs.models.resolve_weight_dtype`; the fit check, the placement and the
        regeneration's bytes read all take it through :attr:`weight_bytes`.
        """
        return resolve_weight_dtype(self.model, str(self.assumptions.value("weight_dtype")))

    @property
    def weight_dtype_record(self) -> Assumption:
        """The ``weight_dtype`` record with its value resolved: for ``auto``, the published type and where it is stated.

        A concrete value is its own record.  ``auto`` becomes the model's type, provenance
        ``published-spec`` when its config states it (``quantization_config`` or ``torch_dtype``),
        ``assumed`` (bf16) when it states none; the record's text stays ``auto``.
        """
        rec = self.a("weight_dtype")
        if rec.value != AUTO_DTYPE:
            return rec
        m = self.model
        if m.weight_dtype_provenance == "published-spec":
            basis = f"auto: the weights' published dtype, from {m.weight_dtype_basis}"
        else:
            basis = f"auto: {m.weight_dtype_basis}"
        return replace(
            rec, value=self.weight_dtype, provenance=m.weight_dtype_provenance, basis=basis, source=f"{m.source}"
        )

    @property
    def weight_bytes(self) -> float:
        """Bytes of the weights (B): :attr:`params` x the bytes of :attr:`weight_dtype` (0.5 for int4)."""
        return float(capacity.weight_bytes(self.params, weight_dtype_bytes(self.weight_dtype)))
