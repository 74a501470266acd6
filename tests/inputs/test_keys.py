"""kvtier.inputs.keys: a key's kind, range, allowed values, help text and groups live in one record, its KeySpec."""

from __future__ import annotations

import pytest

from kvtier.inputs.keys import SCHEMA, KeySpec, describe


def test_every_key_says_what_it_is_in_one_line_of_its_own_spec():
    for key, spec in SCHEMA.items():
        assert spec.help and spec.help == spec.help.strip(), key
        assert "\n" not in spec.help, key  # papermill reads a parameter's help from one comment line
        assert describe(key).startswith(f"{spec.help}; "), key


def test_every_schema_key_has_a_one_line_description():
    assert all("\n" not in describe(key) and "=" not in describe(key) for key in SCHEMA)  # papermill reads one line
    assert (
        describe("peak_flops")
        == "dense peak of the accelerator that regenerates; flop rate with a unit, e.g. 500TFLOP/s"
    )
    assert describe("mfu.typical").endswith("; fraction, e.g. 40% or 0.4")


def test_a_key_is_one_record():
    # the mid bracket: a bandwidth in the kind's physical range (1 kB/s to 1 PB/s), and what it is
    assert SCHEMA["bandwidth.mid"] == KeySpec(
        "bandwidth", "link bandwidth of the mid bracket, one direction", groups=("point",)
    )
    assert SCHEMA["uncertainty.draws"] == KeySpec(
        "count", "Monte Carlo draws per regime", low="1", high="1e8", integer=True
    )
    assert SCHEMA["param_count"] == KeySpec(
        "count",
        "parameters that regeneration runs through (null: the exact count of the model config)",
        low="1",
        optional=True,
        groups=("point",),
    )
    assert SCHEMA["kv_dtype"].choices == ("bf16", "fp16", "fp32", "fp8")


@pytest.mark.parametrize(
    ("key", "line"),
    [
        # a kind that needs a unit names it with its one example
        ("bandwidth.mid", "link bandwidth of the mid bracket, one direction; bandwidth with a unit, e.g. 64GB/s"),
        (
            "fetch_latency",
            "fixed latency of one transfer, paid once per transfer a fetch needs; time with a unit, e.g. 5us",
        ),
        (
            "cost.amortisation",
            "period over which purchased memory and storage are written off; period with a unit, e.g. 5y",
        ),
        (
            "energy.nvme_w_per_gb",
            "power to hold a GB on NVMe flash, the drive's idle power over its capacity;"
            " power capacity with a unit, e.g. 0.15W/GB",
        ),
        # fractions, tokens, counts read a bare number
        ("mfu.typical", "model FLOPs utilization of the typical bracket; fraction, e.g. 40% or 0.4"),
        ("block_tokens", "tokens one KV block covers; tokens, e.g. 16 or 32K"),
        ("uncertainty.draws", "Monte Carlo draws per regime; a number, whole"),
        ("flops_per_param_token", "forward-pass FLOPs per parameter per token (2: one multiply, one add); a number"),
        # a choice lists its values; a text is any non-empty string
        (
            "regen.model",
            "regeneration time model: compute only (mfu), bounded by memory reads too (roofline), or an engine's"
            " measured kernels (engine); one of mfu, roofline, engine",
        ),
        ("model", "the model: a preset name or the path of a Hugging Face config.json; a non-empty string"),
    ],
)
def test_describe_by_hand(key, line):
    assert describe(key) == line == SCHEMA[key].describe()


@pytest.mark.parametrize(
    ("key", "allowed"),
    [
        ("uncertainty.draws", "a whole number of count in [1, 1e8]"),  # its own ends
        ("bandwidth.mid", "bandwidth in [1 kB/s, 1 PB/s]"),  # the kind's physical ends
        ("param_count", "count in [1, 1e15] or null"),  # its own low end, the kind's high end
        ("cost.hbm_capacity", "bytes in [1 GB, 1024 PiB]"),
        ("fetch_layout", "one of contiguous, per-layer"),
    ],
)
def test_allowed_values_in_words(key, allowed):
    assert SCHEMA[key].allowed() == allowed


def test_a_group_of_keys_is_read_from_the_records_in_schema_order():
    from kvtier.inputs.keys import GROUPS, SCHEMA, keys_in
    from kvtier.pipeline.calculator import FORWARD_TERMS
    from kvtier.scenario import FORWARD_KEYS, POINT_KEYS

    # the forward-pass model's 8 keys, as the schema lists them: the memory side first, then the per-layer terms
    assert (
        keys_in("forward")
        == FORWARD_KEYS
        == (
            "regen.mem_bandwidth",
            "regen.mem_efficiency",
            "regen.mem_overhead_per_layer",
            "regen.launch_floor_per_layer",
            "regen.knee_sharpness",
            "regen.attention",
            "regen.attention_fixed_per_layer",
            "regen.attention_efficiency",
        )
    )
    # the calculator's terms beyond the plain roofline: the same less the memory side (6)
    assert FORWARD_TERMS == FORWARD_KEYS[2:]
    # the point: its own 20 keys (19 and regen.model), the placement's 12 (4 counts, 3 more: how a block is stored
    # in a tier, the fit check, the activations' type; context.long, 4 collective links), the forward pass's 8, the
    # transfer's 10 (6, then fetch.copy_method and the three fetch.copy_cost.*) and the engine model's kernel tables
    # 5 (system, engine, version, step tokens, what is done beyond the grid): 55, none twice
    assert len(POINT_KEYS) == len(set(POINT_KEYS)) == 20 + 12 + 8 + 10 + 5
    kernel_keys = ("regen.system", "regen.engine", "regen.engine_version", "regen.step_tokens", "regen.beyond_grid")
    assert keys_in("kernels") == kernel_keys
    trace = ("workload.trace", "workload.block_tokens", "workload.trace_format", "workload.hit_count")
    assert keys_in("trace") == trace
    # every group a record names is declared, and a group no record has is refused by name
    assert {g for spec in SCHEMA.values() for g in spec.groups} == set(GROUPS)
    with pytest.raises(ValueError, match="no key group 'forwards'"):
        keys_in("forwards")
