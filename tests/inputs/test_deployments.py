"""kvtier.inputs.deployments: the named deployments, the records an accelerator brings, and bad files refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvtier.errors import KvtierError
from kvtier.inputs import deployments
from kvtier.inputs.assumptions import seed
from kvtier.scenario import Scenario


def named(name: str) -> deployments.NamedDeployment:
    return next(d for d in deployments.load() if d.name == name)


def test_the_shipped_deployments_in_file_order():
    shipped = deployments.load()
    assert [d.name for d in shipped] == [
        "llama-3.1-70b-h100",
        "llama-3.1-70b-h200",
        "deepseek-v3-h200",
        "llama-3.1-8b-h100",
    ]
    # every one an 8-GPU HGX server, each record with its provenance and source
    assert {d.per_server.value for d in shipped} == {8}
    assert all(rec.source for d in shipped for rec in d.records.values())


def test_a_deployment_brings_its_accelerator_its_price_and_its_engines_copy_cost():
    a = deployments.assumption_set(named("llama-3.1-70b-h100"), seed())
    assert a.name == "llama-3.1-70b-h100"
    # the H100 SXM preset: 989 TFLOP/s dense, 3.35 TB/s, 80 GB (the fit check and the HBM its hour pays for),
    # 3 USD/h = 3 / 3600 USD/s, a 700 W board
    assert a.value("peak_flops") == 989e12
    assert a.value("regen.mem_bandwidth") == 3.35e12
    assert a.value("parallel.hbm_capacity") == a.value("cost.hbm_capacity") == 80e9
    assert a.value("cost.accelerator_hour") == pytest.approx(3 / 3600, rel=1e-12)
    assert a.value("energy.power_batch") == 700.0
    assert a.value("regen.system") == "h100_sxm" and a.value("regen.model") == "engine"
    # vLLM issues a block's copies back to back: the host link pays fetch.copy_cost.batched_dma, 3.53 us a copy
    assert a.value("tier_latency.host_link") == pytest.approx(3.53e-6, rel=1e-12)
    assert a["tier_latency.host_link"].provenance == "derived"
    assert "batched-dma" in a["tier_latency.host_link"].basis
    s = Scenario(a)
    assert (s.placement.tp, s.placement.gpus_per_link, s.block_tokens) == (4, 2, 16)
    # one cross-layer copy per block for a GQA model (vLLM >= 0.12)
    assert s.fetch_transfers == 1


def test_the_h200_costs_its_own_hour_and_deepseek_copies_layer_by_layer():
    a = deployments.assumption_set(named("llama-3.1-70b-h200"), seed())
    # 4 USD/h and 141 GB of HBM3e
    assert a.value("cost.accelerator_hour") == pytest.approx(4 / 3600, rel=1e-12)
    assert a.value("cost.hbm_capacity") == 141e9
    ds = Scenario(deployments.assumption_set(named("deepseek-v3-h200"), seed()))
    # MLA keeps per-layer tensors in vLLM: one copy per layer of its 61
    assert ds.fetch_transfers == 61 and ds.placement.ep == 8


def test_the_build_keeps_what_a_deployment_does_not_name():
    base = seed().with_values({"cost.dram_gb": "5 USD/GB"}, source="test")
    a = deployments.assumption_set(named("llama-3.1-8b-h100"), base)
    assert a.value("cost.dram_gb") == pytest.approx(5e-9)  # the build's 5 USD/GB (per byte in SI) reaches the row
    assert a.value("model") == "llama-3.1-8b"


def test_the_cli_keeps_its_wording_for_an_accelerator_with_no_tables():
    with pytest.raises(KvtierError, match=r"^--accelerator dgx-spark-gb10: no measured kernel tables"):
        deployments.accelerator_records("dgx-spark-gb10", regen_model="engine", via="--accelerator")


HEAD = "deployments:\n  x:\n    title: X\n"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("deployments: {}\n", "expected a non-empty mapping 'deployments'"),
        (
            HEAD + "    accelerator: h100-sxm\n    per_server: 8\n    assumptions: {model: llama-3-8b}\n"
            "    colour: red\n",
            "deployment 'x' has unknown field 'colour'",
        ),
        (
            HEAD + "    accelerator: tpu\n    per_server: 8\n    assumptions: {model: llama-3-8b}\n",
            "unknown accelerator 'tpu'",
        ),
        (
            HEAD + "    accelerator: h100-sxm\n    per_server: 0\n    assumptions: {model: llama-3-8b}\n",
            "field 'per_server' must be a whole number of accelerators from 1 to 1024",
        ),
        (
            HEAD + "    accelerator: h100-sxm\n    per_server: 8\n    assumptions: {parallel.tq: 2}\n",
            "unknown key 'parallel.tq'",
        ),
    ],
)
def test_a_bad_file_is_refused_in_one_line_naming_it(tmp_path: Path, body: str, message: str):
    path = tmp_path / "mine.yaml"
    path.write_text(body, encoding="utf-8")
    with pytest.raises(KvtierError) as err:
        deployments.load(path)
    text = str(err.value)
    assert "\n" not in text and message in text and "mine.yaml" in text, text


def test_a_named_deployment_is_found_by_name_and_an_unknown_one_named_in_the_refusal():
    assert deployments.named("llama-3.1-70b-h200").accelerator == "h200"
    known = r"known: llama-3.1-70b-h100, llama-3.1-70b-h200, deepseek-v3-h200, llama-3.1-8b-h100$"
    with pytest.raises(KvtierError, match=rf"^no named deployment 'nope' in deployments.yaml; {known}"):
        deployments.named("nope")


def test_the_keys_a_deployment_sets_are_those_it_changes_on_the_seed():
    keys = deployments.keys_set("llama-3.1-70b-h100")
    # its records (model, TP, GPUs per link, engine, regen.model and beyond_grid), the accelerator's (peak, memory
    # bandwidth, kernel system, memory, hour, HBM the hour pays for, board power), the engine's copy cost on the
    # host link, and what follows the model and the engine (parameter count, weight dtype, block)
    assert keys == {
        "model", "parallel.tp", "parallel.gpus_per_link", "engine", "regen.model", "regen.beyond_grid",
        "peak_flops", "regen.mem_bandwidth", "regen.system", "parallel.hbm_capacity", "cost.accelerator_hour",
        "cost.hbm_capacity", "energy.power_batch", "tier_latency.host_link", "param_count", "weight_dtype",
        "block_tokens",
    }  # fmt: skip
    # DeepSeek-V3's spreads its experts too
    assert deployments.keys_set("deepseek-v3-h200") - keys == {"parallel.ep"}


def test_under_a_deployment_the_build_s_own_changes_win_key_by_key():
    # the seed changes nothing: the deployment on the seed, record for record
    assert dict(deployments.under("llama-3.1-70b-h100", seed())) == dict(deployments.on_seed("llama-3.1-70b-h100"))
    # a build's own TP and DRAM price win; the deployment's model, engine and accelerator stay
    own = seed().with_values({"parallel.tp": "8", "cost.dram_gb": "5 USD/GB"}, source="test")
    got = deployments.under("llama-3.1-70b-h100", own)
    assert (got.value("parallel.tp"), got.value("cost.dram_gb")) == (8, pytest.approx(5e-9))
    assert (got.value("model"), got.value("engine"), got.value("peak_flops")) == ("llama-3.1-70b", "vllm", 989e12)
    # a build's own engine: the deployment's is left out before layering, so no vLLM copy cost follows it
    engine = deployments.under("llama-3.1-70b-h100", seed().with_values({"engine": "sglang"}, source="test"))
    assert engine.value("engine") == "sglang"
    assert engine["tier_latency.host_link"] == seed()["tier_latency.host_link"]
    # whether a set names its own model
    assert not deployments.own_model(seed()) and not deployments.own_model(own)
    assert deployments.own_model(seed().with_values({"model": "llama-3-8b"}, source="test"))
