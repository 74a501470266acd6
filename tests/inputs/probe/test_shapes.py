"""kvtier.inputs.probe.shapes: a layer's parameters as measured, by hand."""

from __future__ import annotations

from kvtier.inputs.models import load_model
from kvtier.inputs.probe import shapes


def test_layer_params_by_hand(tiny):
    # one layer of the tiny model: q, k, v 64 x (64 + 2 x 32) + o 64 x 64 + MLP 3 x 64 x 128
    #   = 8,192 + 4,096 + 24,576 = 36,864
    assert shapes.layer_params(load_model(tiny)) == 36_864
    spec = load_model("llama-3-70b")
    # Llama-3-70B: 8192 x (8192 + 2 x 1024) + 8192 x 8192 + 3 x 8192 x 28672 = 855,638,016 (the norms left out)
    assert shapes.layer_params(spec) == 855_638_016
