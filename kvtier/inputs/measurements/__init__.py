"""Measurements of record: one H200's timings of both sides of the question, read, checked and fitted.

``kvtier/data/measurements/h200-2026-11-30/`` holds real measurements (copies between
host and device by size and layout, Llama-3-70B- and 8B-shaped forward passes by tokens
and position, attention by position, overlap, energy) with the scripts that took them
and their README.  :func:`load` reads the probe files there, checks every field it uses
(a bad or malformed file is one :class:`~kvtier.errors.KvtierError` line naming the file
and the key) and returns them typed, in SI base units; :meth:`Measurements.record` gives
any quoted value as a :class:`~kvtier.inputs.provenance.Record` of class ``measured`` whose
basis names the file and the field.

:func:`fit` fits the package's models to them: the fetch model
``latency + bytes / bandwidth`` (relative least squares), the compute MFU and the
memory efficiency of each model shape, the host's launch floor of an eager pass and the
sharpness of the knee (:func:`kvtier.formulas.roofline.blended_time_s`).  Each fitted value is a
``derived`` record whose basis names the file and the fit.  :func:`forward_model_s`
predicts a forward pass from the fits.

Peers' published predictions of the same passes (``kvtier/data/peer-predictions.yaml``)
are read by :func:`peer_predictions`, as ``derived`` records naming the tool and version;
those the file excludes from comparison (a prediction below :func:`peak_bound_s`, the least
time the H200's datasheet peaks allow) by :func:`peer_exclusions`, with the reason.
"""

from __future__ import annotations

from kvtier.inputs.measurements.fits import (
    BLEND_GRID,
    Fits,
    energy_check,
    fit,
    forward_model_s,
    knee_tokens,
    shipped_fits,
    sides,
)
from kvtier.inputs.measurements.peers import peak_bound_s, peer_commands, peer_exclusions, peer_predictions, read_peers
from kvtier.inputs.measurements.reading import load, read
from kvtier.inputs.measurements.records import (
    CITE,
    COMPUTE_FIT_MIN_TOKENS,
    DATA_DIR,
    FETCH_FIT_MIN_BYTES,
    H200_MEM_BANDWIDTH,
    H200_PEAK_FLOP_PER_S,
    HOST_CACHE_BYTES,
    SET_NAME,
    SHAPES,
    SLOPE_TOKENS,
    SOURCES,
    Copy,
    FloatArray,
    Measurements,
    Pass,
    Shape,
    Timing,
)
from kvtier.inputs.measurements.validation import (
    FIT_SHAPE,
    HELD_OUT,
    HELD_OUT_SHAPE,
    IN_SAMPLE,
    LEAVE_ONE_OUT,
    POOL_GROUP,
    SAMPLES,
    Check,
    ForwardFit,
    TransferFit,
    copy_checks,
    fit_forward,
    fit_stack_floor,
    fit_transfer,
    forward_checks,
    leave_one_out_s,
    pass_s,
    shipped_forward_fit,
    transfer_checks,
)

__all__ = [
    "BLEND_GRID",
    "CITE",
    "COMPUTE_FIT_MIN_TOKENS",
    "Check",
    "Copy",
    "DATA_DIR",
    "FETCH_FIT_MIN_BYTES",
    "FIT_SHAPE",
    "Fits",
    "FloatArray",
    "ForwardFit",
    "H200_MEM_BANDWIDTH",
    "H200_PEAK_FLOP_PER_S",
    "HELD_OUT",
    "HELD_OUT_SHAPE",
    "HOST_CACHE_BYTES",
    "IN_SAMPLE",
    "LEAVE_ONE_OUT",
    "Measurements",
    "POOL_GROUP",
    "Pass",
    "SAMPLES",
    "SET_NAME",
    "SHAPES",
    "SLOPE_TOKENS",
    "SOURCES",
    "Shape",
    "Timing",
    "TransferFit",
    "copy_checks",
    "energy_check",
    "fit",
    "fit_forward",
    "fit_stack_floor",
    "fit_transfer",
    "forward_checks",
    "forward_model_s",
    "knee_tokens",
    "leave_one_out_s",
    "load",
    "pass_s",
    "peak_bound_s",
    "peer_commands",
    "peer_exclusions",
    "peer_predictions",
    "read",
    "read_peers",
    "shipped_fits",
    "shipped_forward_fit",
    "sides",
    "transfer_checks",
]
