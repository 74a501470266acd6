"""The assumption set a run becomes: the YAML document in the seed's form, every value with its basis.

A model given as a path is written as an absolute one (:func:`resolve_model`), so the set
works from any directory.
"""

from __future__ import annotations

import os
from typing import Any

from kvtier.inputs.assumptions import seed
from kvtier.inputs.models import PRESETS, config_path, load_model
from kvtier.inputs.probe.measuring import Result
from kvtier.inputs.probe.ranges import RANGE_BAND, measured_ranges, mfu_brackets
from kvtier.inputs.probe.shapes import model_params


def _sig(x: float) -> str:
    """``x`` to four significant digits."""
    return f"{x:.4g}"


def _pct(x: float) -> str:
    """The fraction ``x`` in per cent, to four significant digits."""
    return f"{x * 100:.4g}%"


RANGE_WHAT = {
    "bandwidth": ("GB/s", 1e9, "the fitted copy bandwidth scaled by the largest copy's"),
    "peak": ("TFLOP/s", 1e12, "the matrix product's rate in its"),
    "mem_bandwidth": ("GB/s", 1e9, "the memory copy's rate in its"),
    "mem_efficiency": ("%", None, "the 16-token pass's memory efficiency in its"),
    "mfu": ("%", None, "the MFU brackets' passes in their"),
}
"""Unit, scale (None: a fraction written in per cent) and subject of each range's basis."""


def _range_records(result: Result, params: int, where: str) -> dict[str, dict[str, Any]]:
    """The ``uncertainty.*_low``/``_high`` records of every measured value, with the basis of each end."""
    records = {}
    for name, (_, low, high) in measured_ranges(result, params).items():
        unit, scale, subject = RANGE_WHAT[name]
        for end, value, rep in (("low", low, "slowest"), ("high", high, "fastest")):
            records[f"uncertainty.{name}_{end}"] = {
                "value": _pct(value) if scale is None else f"{_sig(value / scale)} {unit}",
                "provenance": "derived",
                "basis": f"{'lowest' if end == 'low' else 'highest'} value drawn: {subject} {rep} repetition"
                f" ({result.reps} timed), or the measured value {'less' if end == 'low' else 'plus'}"
                f" {RANGE_BAND:.0%} where that reaches further (one run does not see another run's variation)",
                "source": where,
            }
    return records


def assumption_set(result: Result) -> dict[str, Any]:
    """The YAML document of an assumption set from ``result``, in the seed's form.

    ``peak_flops`` is the measured matrix rate (no datasheet is read); the MFUs are the forward
    passes' FLOP rates as fractions of it (optimistic: the best pass, typical: the geometric mean
    of the passes of the sweep's upper half, conservative: the worst of those); the memory
    efficiency is the 16-token pass's weight stream over the measured device-copy rate.  Every
    value the book's Monte Carlo draws gets a range of its own (:func:`widen`), and the
    bandwidth brackets are that range's ends around the fitted bandwidth, so that the set holds
    together (:func:`kvtier.inputs.assumptions.check_consistency`).
    """
    base = seed()
    where = f"measured by kvtier measure on {result.machine}, {result.date}"
    spec = load_model(result.model)
    scaled = (
        f"; the passes ran {result.layers_built} of {result.layers_total} layers and, less the embedding and"
        f" head timed alone, were scaled by {result.layers_total}/{result.layers_built}"
        if result.layers_built != result.layers_total
        else ""
    )
    params = model_params(spec)
    mfu = mfu_brackets(result, params)
    ranges = measured_ranges(result, params)
    bw_low, bw_high = ranges["bandwidth"][1:]
    fit_basis = (
        f"relative least squares of t = latency + bytes / bandwidth over {result.copy_what} of"
        f" {result.copies[0][0] / 2**10:g} KiB to {result.copies[-1][0] / 2**20:g} MiB"
        " (the fit uses those of 1 MiB and more)"
    )
    larger = ", ".join(str(t) for t, _ in result.sweep[len(result.sweep) // 2 :])
    records: dict[str, dict[str, Any]] = {
        "model": {
            "value": result.model,
            "provenance": "published-spec",
            "basis": "the model whose shapes were run",
            "source": base["model"].source if result.model == base["model"].value else f"config of {result.model}",
        },
        "param_count": {
            "value": None,
            "provenance": "derived",
            "basis": "exact count of the model's config",
            "source": f"config of {result.model}",
        },
        "fetch_latency": {
            "value": f"{_sig(result.latency_s * 1e6)} us",
            "provenance": "derived",
            "basis": fit_basis,
            "source": where,
        },
        "bandwidth.optimistic": {
            "value": f"{_sig(bw_high / 1e9)} GB/s",
            "provenance": "derived",
            "basis": "the high end of the measured bandwidth's range (uncertainty.bandwidth_high)",
            "source": where,
        },
        "bandwidth.mid": {
            "value": f"{_sig(result.bandwidth / 1e9)} GB/s",
            "provenance": "derived",
            "basis": fit_basis,
            "source": where,
        },
        "bandwidth.pessimistic": {
            "value": f"{_sig(bw_low / 1e9)} GB/s",
            "provenance": "derived",
            "basis": "the low end of the measured bandwidth's range (uncertainty.bandwidth_low)",
            "source": where,
        },
        "peak_flops": {
            "value": f"{_sig(result.matmul_rate / 1e12)} TFLOP/s",
            "provenance": "measured",
            "basis": f"the rate of one {result.matmul_n}^3 {result.dtype} matrix product (median of the timed"
            " calls); a measured ceiling, not a datasheet peak",
            "source": where,
        },
        "mfu.optimistic": {
            "value": _pct(mfu["optimistic"]),
            "provenance": "derived",
            "basis": f"the best forward pass's FLOP rate (2 N per token) over the peak above{scaled}",
            "source": where,
        },
        "mfu.typical": {
            "value": _pct(mfu["typical"]),
            "provenance": "derived",
            "basis": f"geometric mean of the FLOP rates of the sweep's larger passes ({larger} tokens)"
            f" over the peak above{scaled}",
            "source": where,
        },
        "mfu.conservative": {
            "value": _pct(mfu["conservative"]),
            "provenance": "derived",
            "basis": f"the slowest of those passes' FLOP rates over the peak above{scaled}",
            "source": where,
        },
        "illustrative.mfu": {
            "value": "typical",
            "provenance": "assumed",
            "basis": "the illustrative point regenerates at the measured typical MFU",
            "source": where,
        },
        "regen.model": {
            "value": "roofline",
            "provenance": "assumed",
            "basis": "regeneration bounded by compute and by the weight stream",
            "source": where,
        },
        "regen.mem_bandwidth": {
            "value": f"{_sig(result.mem_bandwidth / 1e9)} GB/s",
            "provenance": "measured",
            "basis": f"read plus write of a {result.mem_bytes / 2 / 2**20:g} MiB copy in device memory"
            " (median of the timed calls)",
            "source": where,
        },
        "regen.mem_efficiency": {
            "value": _pct(ranges["mem_efficiency"][0]),
            "provenance": "derived",
            "basis": f"the weights of the 16-token pass ({result.dtype}) over its time, as a fraction of the memory"
            f" rate above, at most 100 %{scaled}",
            "source": where,
        },
        **_range_records(result, params, where),
    }
    return {
        "name": f"measured-{result.backend}",
        "description": f"Assumptions measured by kvtier measure on {result.machine}, {result.date};"
        f" {result.copy_what}; the seed set's values elsewhere.",
        "assumptions": records,
    }


def resolve_model(spec: str) -> str:
    """``--model`` as the set records it: a preset's name, or a config path made absolute."""
    if spec in PRESETS or config_path(spec) is None:
        return spec
    return os.path.abspath(spec)
