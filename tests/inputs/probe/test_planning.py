"""kvtier.inputs.probe.planning: the layers that fit, the refusals that offer a count or a model, --quick's pick."""

from __future__ import annotations

import pytest

from kvtier.errors import KvtierError
from kvtier.inputs.models import load_model
from kvtier.inputs.probe import backends, planning


def test_a_model_too_large_is_refused_in_one_line_offering_a_model_that_fits(monkeypatch):
    backend = backends.cpu_backend()
    monkeypatch.setattr(backend, "free_bytes", lambda: 10e9)
    spec = load_model("llama-3-70b")
    with pytest.raises(KvtierError) as err:
        planning.plan_layers(spec, backend, None)
    # 60 % of 10 GB = 6 GB; the embedding and head take 2 x 128,256 x 8192 x 4 B = 8.4 GB and one layer
    # 855,638,016 x 4 B = 3.4 GB: not even one layer fits, so --layers 1 is not advised
    text = str(err.value)
    assert "\n" not in text and "--layers" not in text, text
    assert "not even one layer fits; its embedding and head take 8.4 GB and one layer 3.4 GB" in text, text
    # the largest dense preset of which a layer fits in 6 GB: llama-3-8b or llama-3.1-8b, 4.2 GB + 0.87 GB
    # (32 x 218,103,808 + 2 x 128,256 x 4096 = 8.03e9 parameters, against mistral-7b's 7.24e9 and llama-2-7b's
    # 6.74e9); llama-3.1-8b has the same 8.03e9 and the tie goes to the later name, the one with the 131,072-position
    # window
    assert text.endswith("measure a smaller model: --model llama-3.1-8b --quick"), text
    # and it works: (6 - 4.203) // 0.872 = 2 of its layers fit, which --quick builds
    assert planning.plan_layers(load_model("llama-3-8b"), backend, None, quick=True) == 2
    with pytest.raises(KvtierError, match="not even one layer fits") as err:
        planning.plan_layers(spec, backend, 1)  # --layers 1 says the same
    monkeypatch.setattr(backend, "free_bytes", lambda: 1e9)  # 0.6 GB: no preset's embedding and head fit
    with pytest.raises(KvtierError, match="no preset fits either; free some memory or measure on a larger machine"):
        planning.plan_layers(spec, backend, None, quick=True)
    monkeypatch.setattr(backend, "free_bytes", lambda: 100e9)
    assert planning.plan_layers(spec, backend, 2) == 2
    with pytest.raises(KvtierError, match="--layers must be between 1 and 80"):
        planning.plan_layers(spec, backend, 81)


@pytest.mark.parametrize("free_gb", [10, 13, 14.3, 14.4, 20, 24, 50, 100, 400, 1000])
@pytest.mark.parametrize("preset", ["llama-2-7b", "llama-3-8b", "llama-3-70b", "llama-3.1-405b", "qwen2.5-72b"])
def test_every_layer_count_it_advises_is_accepted(monkeypatch, preset, free_gb):
    # the advice in a refusal is a command that works: the --layers N or --model M it names passes the same test
    backend = backends.cpu_backend()
    monkeypatch.setattr(backend, "free_bytes", lambda: free_gb * 1e9)
    spec = load_model(preset)
    for layers in (None, spec.n_layers):
        try:
            planning.plan_layers(spec, backend, layers)
        except KvtierError as exc:
            text = str(exc)
            if "--layers " in text.rpartition(";")[2]:
                advised = int(text.rpartition("--layers ")[2].split()[0])
                assert 1 <= planning.plan_layers(spec, backend, advised) == advised < spec.n_layers
            else:
                other = text.rpartition("--model ")[2].split()[0] if "--model" in text else None
                assert other is None or planning.plan_layers(load_model(other), backend, None, quick=True) >= 1
    # --quick never refuses what fits: it picks at most QUICK_LAYERS layers, all of which fit
    fit = planning.layers_that_fit(spec, backend, free_gb * 1e9 * planning.MEMORY_SHARE)
    if fit:
        assert planning.plan_layers(spec, backend, None, quick=True) == min(fit, planning.QUICK_LAYERS)


def test_quick_picks_the_layers_that_fit_by_hand(monkeypatch, tiny):
    backend = backends.cpu_backend()
    spec = load_model("llama-3-70b")
    # 24 GB free: 60 % is 14.4 GB; (14.4 - 8.405) // 3.4226 = 1 layer of 70B fits, and --quick takes it
    monkeypatch.setattr(backend, "free_bytes", lambda: 24e9)
    assert planning.plan_layers(spec, backend, None, quick=True) == 1
    with pytest.raises(KvtierError, match="measure fewer layers and scale to all 80: --layers 1 \\(or --quick\\)"):
        planning.plan_layers(spec, backend, None)
    with pytest.raises(KvtierError, match="--layers 2: 2 layers of model 'llama-3-70b' need 15.3 GB .* at most 1 fit"):
        planning.plan_layers(spec, backend, 2)  # 8.405 + 2 x 3.4226 = 15.2505 GB
    # 100 GB free: (60 - 8.405) // 3.4226 = 15 fit, of which --quick takes QUICK_LAYERS = 2
    monkeypatch.setattr(backend, "free_bytes", lambda: 100e9)
    assert planning.plan_layers(spec, backend, None, quick=True) == 2
    # the tiny model's 3 layers all fit; --quick still builds 2 and scales
    assert planning.plan_layers(load_model(tiny), backend, None, quick=True) == 2
    assert planning.plan_layers(load_model(tiny), backend, None) == 3
