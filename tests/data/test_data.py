"""kvtier.data: the names of the shipped presets and traces match the files shipped with the package."""

from __future__ import annotations

import json
from importlib import resources

from kvtier.data import MODEL_PRESETS, SHIPPED_TRACES, TRACE_DIR

DATA = resources.files("kvtier.data")


def test_every_model_preset_is_a_shipped_config_and_every_config_a_preset():
    shipped = sorted(
        p.name.removesuffix(".json") for p in DATA.joinpath("models").iterdir() if p.name.endswith(".json")
    )
    assert sorted(MODEL_PRESETS) == shipped
    assert len(MODEL_PRESETS) == len(set(MODEL_PRESETS)) == 10


def test_every_preset_config_is_a_json_object_with_layers():
    for name in MODEL_PRESETS:
        config = json.loads(DATA.joinpath("models", f"{name}.json").read_text())
        assert config["num_hidden_layers"] >= 1, name


def test_the_shipped_traces_are_files_of_json_lines():
    assert set(SHIPPED_TRACES) == {"conversation", "synthetic"}
    for name, file in SHIPPED_TRACES.items():
        path = DATA.joinpath(*TRACE_DIR.split("/"), file)
        first = path.open().readline()
        assert {"timestamp", "input_length", "output_length", "hash_ids"} <= set(json.loads(first)), name


def test_the_deployment_names_are_the_shipped_file_s_and_the_key_s_choices():
    from kvtier.data import DEPLOYMENT_PRESETS
    from kvtier.inputs import deployments
    from kvtier.inputs.keys import SCHEMA

    assert tuple(dep.name for dep in deployments.load()) == DEPLOYMENT_PRESETS
    assert SCHEMA["workload.deployment"].choices == ("build", *DEPLOYMENT_PRESETS)
