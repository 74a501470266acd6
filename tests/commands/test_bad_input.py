"""The bad-input catalogue: every kind of bad input is one line on stderr and exit status 2.

Each case runs the CLI in this process (``kvtier compare``, ``kvtier model`` or ``kvtier build``
through ``kvtier.commands.main``; tests/conftest.py ``run_cli``) and checks the contract of
:mod:`kvtier.commands`: exit status 2, stdout empty, stderr exactly one line ``kvtier: error: ...``
naming the offending key or file, and no traceback.  Ten cases, one of each surface and kind, run
again as a real process.  A build case writes into ``--out`` under ``tmp_path``, which holds a
sentinel tree beforehand; input is validated before anything runs, so the tree (and everything
else under ``tmp_path``) must be byte-identical afterwards: nothing lost.

A hardware preset file, which no command takes, is checked in-process through the same reader;
zero latency, which is not bad input, is checked to be accepted from every source.
A notebook that raises is covered by tests/pipeline/test_build.py.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from kvtier.errors import KvtierError
from kvtier.inputs import hardware
from kvtier.inputs.models import PRESETS
from tests.conftest import run_cli, run_cli_process

pytestmark = pytest.mark.surface("compare")
"""A case's surface is the first word of its id (compare, build, model, tiers, cost); else compare."""

YAML = "{tmp}/mine.yaml"
CONFIG = "{tmp}/config.json"
GOOD_CONFIG = {
    "num_hidden_layers": 2,
    "hidden_size": 64,
    "num_attention_heads": 8,
    "intermediate_size": 128,
    "vocab_size": 100,
}
"""A valid small config.json (tests/commands/test_model.py computes its numbers); cases break one field."""
PROVENANCES = "allowed: measured, published-spec, assumed, implied, derived"
MFU_RANGE = "fraction in [0.0001, 1]"
BANDWIDTH_RANGE = "bandwidth in [1 kB/s, 1 PB/s]"
FLOP_RATE_RANGE = "flop_rate in [1 GFLOP/s, 1000 EFLOP/s]"
"""The physical bounds of kvtier.units.LIMITS as messages state them."""
FIELDS = "allowed: value, unit, basis, provenance, source"
BUILD_ID = "0123456789abcdef0123456789abcdef"
SENTINEL_FILES = {
    "out/html/index.html": b"<html>the last good book \xe2\x9c\x93\r\n</html>\n",
    "out/tables/x.csv": b"table,row,value\r\nx,1,81.92e-6\n",
    "out/figures/f.svg": b"<svg/>",
}
SENTINEL = {
    **SENTINEL_FILES,
    # the mark and a manifest listing every file: out/ is an earlier kvtier build, which a build may replace
    "out/.kvtier-build": json.dumps({"kvtier_build": BUILD_ID}).encode() + b"\n",
    "out/manifest.json": json.dumps(
        {"build_id": BUILD_ID, "files": {name.removeprefix("out/"): "sha256" for name in SENTINEL_FILES}}
    ).encode(),
}


def config(**changes) -> str:
    """GOOD_CONFIG as JSON text with ``changes`` applied (a value of None drops the field)."""
    cfg = {**GOOD_CONFIG, **changes}
    return json.dumps({k: v for k, v in cfg.items() if v is not None})


LAUGHS = (
    "description:\n  a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
    + "".join(f"  {b}: &{b} [{', '.join([f'*{a}'] * 9)}]\n" for a, b in zip("abcde", "bcdef", strict=True))
    + "assumptions:\n  bandwidth.mid: *f\n"
)
"""An alias bomb of six levels (9**6 = 531,441 strings once expanded) in an assumptions file."""


# Assumption YAML files: (id, file text, substrings of the one error line).
# Each runs as `compare --assumptions FILE` and as `build --assumptions FILE`.
ASSUMPTION_FILES = [
    # the file as a whole: unparseable, empty, wrong shape, wrong top-level keys
    ("malformed-yaml", "assumptions: [unclosed\n", [f"{YAML}: malformed YAML at line 2"]),
    ("empty-file", "", [f"{YAML}: assumptions file is empty"]),
    ("whitespace-only", "  \n\n", [f"{YAML}: assumptions file is empty"]),
    (
        "top-level-list",
        "- bandwidth.mid\n- 64GB/s\n",
        [f"{YAML}: expected a mapping with a top-level 'assumptions' key"],
    ),
    (
        "unknown-top-level-key",
        "name: lab\nassumption:\n  block_tokens: 16\n",
        [f"{YAML}: unknown top-level key 'assumption'; allowed: name, description, assumptions"],
    ),
    ("assumptions-not-a-mapping", "assumptions: [1, 2]\n", [f"{YAML}: 'assumptions' must be a non-empty mapping"]),
    # a quantity with a unit needs it: 64000000000 could be meant as B/s or as anything else
    (
        "bare-bandwidth",
        "assumptions:\n  bandwidth.mid: 64000000000\n",
        [f"{YAML}: key 'bandwidth.mid' = 64000000000 needs a unit, for example 64GB/s"],
    ),
    # keys and record fields: unknown names, a record without a value
    (
        "unknown-assumption-key",
        "assumptions:\n  bandwidth.middle: 64GB/s\n",
        [f"{YAML}: unknown key 'bandwidth.middle'; known keys: ", "bandwidth.mid,"],
    ),
    (
        "unknown-record-field",
        "assumptions:\n  bandwidth.mid: {value: 64GB/s, units: GB/s}\n",
        [f"{YAML}: key 'bandwidth.mid' has unknown field 'units'; {FIELDS}"],
    ),
    (
        "record-without-value",
        "assumptions:\n  bandwidth.mid: {provenance: measured}\n",
        [f"{YAML}: key 'bandwidth.mid' has no 'value'"],
    ),
    # wrong types: a mapping or list as a value, a number as provenance
    (
        "value-is-a-mapping",
        "assumptions:\n  bandwidth.mid: {value: {GB/s: 64}}\n",
        [f"{YAML}: key 'bandwidth.mid': cannot read {{'GB/s': 64}} as bandwidth (got a dict)"],
    ),
    (
        "value-is-a-list",
        "assumptions:\n  bandwidth.mid: {value: [64, GB/s]}\n",
        [f"{YAML}: key 'bandwidth.mid': cannot read [64, 'GB/s'] as bandwidth (got a list)"],
    ),
    (
        "text-value-is-a-mapping",
        "assumptions:\n  model: {value: {name: llama-3-8b}}\n",
        [f"{YAML}: key 'model' must be a non-empty string, got {{'name': 'llama-3-8b'}}"],
    ),
    (
        "provenance-is-a-number",
        "assumptions:\n  bandwidth.mid: {value: 64GB/s, provenance: 5}\n",
        [f"{YAML}: key 'bandwidth.mid' field 'provenance' must be a string"],
    ),
    # provenance outside the five classes
    (
        "provenance-not-a-class",
        "assumptions:\n  bandwidth.mid: {value: 64GB/s, provenance: hearsay}\n",
        [f"{YAML}: key 'bandwidth.mid' has provenance 'hearsay'; {PROVENANCES}"],
    ),
    # out of range: the message gives the allowed interval
    (
        "mfu-zero",
        "assumptions:\n  mfu.typical: 0\n",
        [f"{YAML}: key 'mfu.typical' = 0 is out of range; allowed: {MFU_RANGE}"],
    ),
    (
        "mfu-150-percent",
        "assumptions:\n  mfu.typical: 150%\n",
        [f"{YAML}: key 'mfu.typical' = '150%' is out of range; allowed: {MFU_RANGE}"],
    ),
    (
        "negative-bandwidth",
        "assumptions:\n  bandwidth.mid: -64 GB/s\n",
        [f"{YAML}: key 'bandwidth.mid' = '-64 GB/s' is out of range; allowed: {BANDWIDTH_RANGE}"],
    ),
    (
        "block-tokens-zero",
        "assumptions:\n  block_tokens: 0\n",
        [f"{YAML}: key 'block_tokens' = 0 is out of range; allowed: a whole number of tokens in [1, 1024M]"],
    ),
    (
        "block-tokens-fractional",
        "assumptions:\n  block_tokens: 2.5\n",
        [f"{YAML}: key 'block_tokens' = 2.5 must be a whole number"],
    ),
    # not finite: YAML's .nan/.inf and the strings "nan GB/s", "inf"
    (
        "yaml-nan",
        "assumptions:\n  bandwidth.mid: .nan\n",
        [f"{YAML}: key 'bandwidth.mid' must be finite, got nan; allowed: {BANDWIDTH_RANGE}"],
    ),
    (
        "yaml-inf",
        "assumptions:\n  peak_flops: .inf\n",
        [f"{YAML}: key 'peak_flops' must be finite, got inf; allowed: {FLOP_RATE_RANGE}"],
    ),
    (
        "nan-with-unit",
        "assumptions:\n  bandwidth.mid: nan GB/s\n",
        [f"{YAML}: key 'bandwidth.mid' must be finite, got 'nan GB/s'"],
    ),
    (
        "inf-string",
        'assumptions:\n  bandwidth.mid: "inf"\n',
        [f"{YAML}: key 'bandwidth.mid' must be finite, got 'inf'"],
    ),
    # an integer too large for a float is not finite either
    (
        "integer-beyond-float",
        "assumptions:\n  block_tokens: " + "9" * 400 + "\n",
        [f"{YAML}: key 'block_tokens'"],
    ),
    # a unit that does not parse, inline or in the record's `unit` field
    (
        "unknown-unit",
        "assumptions:\n  bandwidth.mid: 64 furlongs/s\n",
        [f"{YAML}: key 'bandwidth.mid': cannot read '64 furlongs/s' as bandwidth (unknown unit 'furlongs/s')"],
    ),
    (
        "unknown-unit-field",
        "assumptions:\n  bandwidth.mid: {value: 64, unit: furlongs/s}\n",
        [f"{YAML}: key 'bandwidth.mid': cannot read '64 furlongs/s' as bandwidth (unknown unit 'furlongs/s')"],
    ),
    # unbounded input. YAML anchors and aliases are refused outright: an alias bomb ("billion laughs", each
    # level nine aliases of the one before) is a few hundred bytes that expand without bound; refused at the
    # first anchor. Cut to 9**6 strings here, so that a regression fails on the message instead of on memory.
    ("alias-bomb", LAUGHS, [f"{YAML}: YAML anchors and aliases (& and *) are not accepted (line 2)"]),
    # even a harmless alias: one rule, no judging which expansions are small enough
    (
        "alias",
        "assumptions:\n  bandwidth.mid: &bw 64GB/s\n  bandwidth.optimistic: *bw\n",
        [f"{YAML}: YAML anchors and aliases (& and *) are not accepted (line 2)"],
    ),
    # 2,000 levels of nesting overflowed the recursive composer (RecursionError traceback); 40 levels parse
    # but exceed kvtier.inputs.readers.MAX_DEPTH = 32 (libyaml words the first case itself, hence the loose match)
    (
        "nesting-2000-deep",
        "assumptions:\n  bandwidth.mid: " + "[" * 2000 + "]" * 2000 + "\n",
        [f"{YAML}: ", "line 2", "nest"],
    ),
    (
        "nesting-40-deep",
        "assumptions:\n  bandwidth.mid: " + "[" * 40 + "]" * 40 + "\n",
        [f"{YAML}: nested more than 32 levels deep (line 2)"],
    ),
    # over 1 MiB (kvtier.inputs.readers.MAX_BYTES): refused after reading one byte past the limit, before parsing
    # (a 50 MB list would take minutes)
    (
        "larger-than-1-MiB",
        "assumptions:\n  block_tokens: 16\n" + "#" * (1 << 20),
        [f"{YAML}: assumptions file is larger than 1,048,576 bytes; refused"],
    ),
    # keys that are not strings next to keys that are: sorting them for the message raised TypeError
    ("integer-top-level-key", "1: x\n", [f"{YAML}: unknown top-level key 1; allowed: name, description, assumptions"]),
    (
        "integer-key-among-names",
        "name: lab\n1: x\nassumptions:\n  block_tokens: 16\n",
        [f"{YAML}: unknown top-level key 1; allowed: name, description, assumptions"],
    ),
    (
        "integer-record-field",
        "assumptions:\n  bandwidth.mid: {value: 1GB/s, provenance: measured, 2: x, colour: red}\n",
        [f"{YAML}: key 'bandwidth.mid' has unknown field 2; {FIELDS}"],
    ),
    (
        "null-record-field",
        "assumptions:\n  bandwidth.mid:\n    value: 1GB/s\n    null: x\n    colour: y\n",
        [f"{YAML}: key 'bandwidth.mid' has unknown field None; {FIELDS}"],
    ),
    # a record field no record has (the example)
    (
        "colour-record-field",
        "assumptions:\n  bandwidth.mid: {value: 1GB/s, provenance: measured, colour: red}\n",
        [f"{YAML}: key 'bandwidth.mid' has unknown field 'colour'; {FIELDS}"],
    ),
    # a newline inside a key: the message shows it escaped and stays one line
    (
        "newline-in-key",
        'assumptions:\n  "bandwidth.mid\\nx": 64GB/s\n',
        [f"{YAML}: unknown key 'bandwidth.mid\\nx'; known keys: "],
    ),
    # a key given twice: the last one silently won, so a second `assumptions:` block dropped the first
    (
        "duplicate-assumptions-block",
        "assumptions:\n  bandwidth.mid: 1GB/s\nassumptions:\n  mfu.typical: 50%\n",
        [f"{YAML}: duplicate key 'assumptions' (line 3)"],
    ),
    (
        "duplicate-key",
        "assumptions:\n  bandwidth.mid: 64GB/s\n  bandwidth.mid: 32GB/s\n",
        [f"{YAML}: duplicate key 'bandwidth.mid' (line 3)"],
    ),
    # values the YAML parser cannot build (ValueError tracebacks): an integer of more than 4300 digits,
    # a date with month 13
    (
        "integer-beyond-4300-digits",
        "assumptions:\n  block_tokens: " + "9" * 5000 + "\n",
        [f"{YAML}: cannot read a value (Exceeds the limit (4300 digits)"],
    ),
    (
        "impossible-date",
        "assumptions:\n  model: 2024-13-45\n",
        [f"{YAML}: cannot read a value (month must be in 1..12)"],
    ),
    # values outside the physical bounds of kvtier.units.LIMITS, which passed before: an MFU of 1e-320 made
    # regeneration times inf; 1e-300 B/s a 300-digit fetch time; the others are typos by orders of magnitude
    (
        "mfu-1e-320",
        "assumptions:\n  mfu.typical: 1e-320\n",
        [f"{YAML}: key 'mfu.typical' = '1e-320' is out of range; allowed: {MFU_RANGE}"],
    ),
    (
        "bandwidth-1e-300",
        "assumptions:\n  bandwidth.mid: 1e-300 B/s\n",
        [f"{YAML}: key 'bandwidth.mid' = '1e-300 B/s' is out of range; allowed: {BANDWIDTH_RANGE}"],
    ),
    (
        "bandwidth-beyond-1-PB/s",
        "assumptions:\n  bandwidth.mid: 2 PB/s\n",
        [f"{YAML}: key 'bandwidth.mid' = '2 PB/s' is out of range; allowed: {BANDWIDTH_RANGE}"],
    ),
    (
        "peak-below-1-GFLOP/s",
        "assumptions:\n  peak_flops: 1 MFLOP/s\n",
        [f"{YAML}: key 'peak_flops' = '1 MFLOP/s' is out of range; allowed: {FLOP_RATE_RANGE}"],
    ),
    (
        "latency-beyond-10-s",
        "assumptions:\n  fetch_latency: 11 s\n",
        [f"{YAML}: key 'fetch_latency' = '11 s' is out of range; allowed: time in [0 s, 10 s]"],
    ),
    (
        "context-beyond-1024M",
        "assumptions:\n  context.long: 2048M\n",
        [f"{YAML}: key 'context.long' = '2048M' is out of range; allowed: a whole number of tokens in [1, 1024M]"],
    ),
    (
        "param-count-zero",
        "assumptions:\n  param_count: 0\n",
        [f"{YAML}: key 'param_count' = 0 is out of range; allowed: count in [1, 1e15] or null"],
    ),
    # a NUL byte in a model path (YAML "\0"): no file system can open it (ValueError traceback)
    ("nul-in-model-path", 'assumptions:\n  model: "a\\0b.json"\n', ["a\\x00b.json: cannot read model config file"]),
]

# --set KEY=VALUE: (id, option, substrings). Each runs under `compare` and `build`.
SET_OPTIONS = [
    ("unknown-key", "bandwidth.middle=64GB/s", ["--set: unknown key 'bandwidth.middle'; known keys: "]),
    ("no-equals", "bandwidth.mid", ["--set 'bandwidth.mid': expected KEY=VALUE"]),
    ("empty-key", "=64GB/s", ["--set '=64GB/s': expected KEY=VALUE"]),
    ("bad-value", "bandwidth.mid=fast", ["key 'bandwidth.mid': cannot read 'fast' as bandwidth"]),
    ("nan", "mfu.typical=NaN", [f"key 'mfu.typical' must be finite, got 'NaN'; allowed: {MFU_RANGE}"]),
    ("inf", "block_tokens=inf", ["key 'block_tokens' must be finite, got 'inf'"]),
    # a newline inside an option: the message shows it escaped and stays one line
    ("newline-in-key", "bandwidth.mid\nx=64GB/s", ["--set: unknown key 'bandwidth.mid\\nx'; known keys: "]),
    ("newline-in-model", "model=lla\nma", ["model 'lla\\nma': unknown preset"]),
    # outside the physical bounds: an MFU of 1e-320 made regeneration times inf; 1e-300 B/s a 300-digit time
    ("mfu-1e-320", "mfu.typical=1e-320", [f"key 'mfu.typical' = '1e-320' is out of range; allowed: {MFU_RANGE}"]),
    (
        "bandwidth-1e-300",
        "bandwidth.mid=1e-300B/s",
        [f"key 'bandwidth.mid' = '1e-300B/s' is out of range; allowed: {BANDWIDTH_RANGE}"],
    ),
    (
        "latency-11-s",
        "fetch_latency=11s",
        ["key 'fetch_latency' = '11s' is out of range; allowed: time in [0 s, 10 s]"],
    ),
    # bare numbers for keys with a unit (zero alone is the same in every unit, so it stays accepted)
    ("bare-bandwidth", "bandwidth.mid=64e9", ["key 'bandwidth.mid' = '64e9' needs a unit, for example 64GB/s"]),
    ("bare-peak", "peak_flops=5e14", ["key 'peak_flops' = '5e14' needs a unit, for example 500TFLOP/s"]),
    ("bare-latency", "fetch_latency=5", ["key 'fetch_latency' = '5' needs a unit, for example 5us"]),
    ("regen-system-unknown", "regen.system=h300", ["key 'regen.system' must be one of a100_sxm, h100_sxm"]),
    # how each copy is issued, and its per-copy cost; an engine version the presets do not describe
    (
        "copy-method-unknown",
        "fetch.copy_method=cudaMemcpy",
        ["key 'fetch.copy_method' must be one of engine, none, lone-dma, batched-dma, kernel, got 'cudaMemcpy'"],
    ),
    (
        "copy-cost-negative",
        "fetch.copy_cost.kernel=-1us",
        ["key 'fetch.copy_cost.kernel' = '-1us' is out of range; allowed: time in [0 s, 10 s]"],
    ),
    ("copy-cost-bare", "fetch.copy_cost.batched_dma=6", ["key 'fetch.copy_cost.batched_dma' = '6' needs a unit"]),
    ("engine-old-version", "engine=vllm-0.10", ["key 'engine' must be one of none, vllm, vllm-0.11, sglang,"]),
]

# The set as a whole: every uncertainty range holds the values it stands for (the bandwidth and MFU
# brackets, peak_flops, regen.mem_bandwidth and regen.mem_efficiency), or the set is refused naming both keys.
# (id, file text, substrings). Each runs as `build --assumptions FILE` and `cost --assumptions FILE`, the commands
# that check keys against each other (`compare` takes single values and draws nothing).
RANGE_RULE = "an uncertainty range must hold the values it stands for"
WHOLE_SET_FILES = [
    # the case: a CPU's measured peak with the seed's 500-989 TFLOP/s range (the landing page said the
    # brackets run 19,223x to 464,058x while 100 % of Monte Carlo draws fell below 100x)
    (
        "measured-peak-seed-range",
        "assumptions:\n  peak_flops: 1.2 TFLOP/s\n",
        ["key 'peak_flops' (1.2 TFLOP/s) lies below 'uncertainty.peak_low' (500 TFLOP/s)", RANGE_RULE],
    ),
    (
        "peak-above-its-range",
        "assumptions:\n  peak_flops: 2250 TFLOP/s\n",
        ["key 'peak_flops' (2.25 PFLOP/s) lies above 'uncertainty.peak_high' (989 TFLOP/s)"],
    ),
    # a range moved away from the value it stands for
    (
        "range-moved-off-its-value",
        "assumptions:\n  uncertainty.peak_low: 600 TFLOP/s\n",
        ["key 'peak_flops' (500 TFLOP/s) lies below 'uncertainty.peak_low' (600 TFLOP/s)"],
    ),
    # every bracket, not only the illustrative one: the ratio page quotes the ratio across the brackets
    (
        "optimistic-bandwidth-above",
        "assumptions:\n  bandwidth.optimistic: 242 GB/s\n",
        ["key 'bandwidth.optimistic' (242 GB/s) lies above 'uncertainty.bandwidth_high' (121 GB/s)"],
    ),
    (
        "pessimistic-bandwidth-below",
        "assumptions:\n  bandwidth.pessimistic: 27.57 GB/s\n",
        ["key 'bandwidth.pessimistic' (27.57 GB/s) lies below 'uncertainty.bandwidth_low' (32 GB/s)"],
    ),
    # the illustrative MFU (mfu.typical here) outside 25-50 %, with the brackets still ordered
    (
        "illustrative-mfu-above",
        "assumptions:\n  mfu.optimistic: 80%\n  mfu.typical: 60%\n  illustrative.mfu: typical\n",
        ["key 'mfu.optimistic' (80%) lies above 'uncertainty.mfu_high' (60%)"],
    ),
    (
        "conservative-mfu-below",
        "assumptions:\n  mfu.conservative: 10%\n",
        ["key 'mfu.conservative' (10%) lies below 'uncertainty.mfu_low' (25%)"],
    ),
    # the lone-block regime's inputs: an H200's 4.8 TB/s is the seed's top; a B200's 8 TB/s is beyond it
    (
        "memory-bandwidth-above",
        "assumptions:\n  regen.mem_bandwidth: 8 TB/s\n",
        ["key 'regen.mem_bandwidth' (8 TB/s) lies above 'uncertainty.mem_bandwidth_high' (4.8 TB/s)"],
    ),
    (
        "memory-efficiency-below",
        "assumptions:\n  regen.mem_efficiency: 50%\n",
        ["key 'regen.mem_efficiency' (50%) lies below 'uncertainty.mem_efficiency_low' (60%)"],
    ),
]
# the same rule for --set (id, option, substrings), under `build` and `cost`
WHOLE_SET_OPTIONS = [
    (
        "peak-above-its-range",
        "peak_flops=2250TFLOP/s",
        ["key 'peak_flops' (2.25 PFLOP/s) lies above 'uncertainty.peak_high' (989 TFLOP/s)", RANGE_RULE],
    ),
    (
        "range-high-below-its-value",
        "uncertainty.mem_efficiency_high=70%",
        ["key 'regen.mem_efficiency' (80%) lies above 'uncertainty.mem_efficiency_high' (70%)"],
    ),
]

# Models: (id, config.json text or None for no file, spec, substrings). Each runs as
# `model SPEC`, `compare --model SPEC` and `build --set model=SPEC`.
MODELS = [
    # a preset name that does not exist; a config.json path that does not exist
    ("unknown-preset", None, "llama-9", [f"model 'llama-9': unknown preset; presets: {', '.join(PRESETS)}"]),
    ("missing-config", None, "{tmp}/absent/config.json", ["{tmp}/absent/config.json: model config file not found"]),
    # config.json that is not a JSON object of the right fields
    ("malformed-json", '{"num_hidden_layers": 2,', CONFIG, [f"{CONFIG}: malformed JSON at line 1 column 25"]),
    ("empty-json", "", CONFIG, [f"{CONFIG}: malformed JSON at line 1 column 1"]),
    ("json-list", "[1, 2]", CONFIG, [f"{CONFIG}: expected a JSON object"]),
    (
        "missing-field",
        config(num_hidden_layers=None),
        CONFIG,
        [f"{CONFIG}: missing required field 'num_hidden_layers'"],
    ),
    (
        "field-is-a-string",
        config(num_hidden_layers="2"),
        CONFIG,
        [f"{CONFIG}: field 'num_hidden_layers' must be an integer in [0, 100,000], got '2'"],
    ),
    (
        "zero-heads",
        config(num_attention_heads=0),
        CONFIG,
        [f"{CONFIG}: 'num_attention_heads' and 'hidden_size' must be positive"],
    ),
    # values JSON parses but no model has: NaN, Infinity, an integer beyond a float; a text_config that is no object
    ("field-nan", config(num_hidden_layers=float("nan")), CONFIG, [CONFIG, "'num_hidden_layers'"]),
    ("field-infinity", config(num_hidden_layers=float("inf")), CONFIG, [CONFIG, "'num_hidden_layers'"]),
    ("field-beyond-float", config(num_hidden_layers=10**400), CONFIG, [CONFIG, "'num_hidden_layers'"]),
    ("text-config-not-an-object", json.dumps({"text_config": [1]}), CONFIG, [CONFIG, "'text_config'"]),
    # unbounded input: /dev/zero never ends (MemoryError); a file over 1 MiB; JSON nested 1,500 deep
    # (RecursionError traceback); an integer of more than 4300 digits (ValueError traceback)
    ("dev-zero", None, "/dev/zero", ["/dev/zero: model config file is not a regular file"]),
    (
        "larger-than-1-MiB",
        config() + " " * (1 << 20),
        CONFIG,
        [f"{CONFIG}: model config file is larger than 1,048,576 bytes; refused"],
    ),
    ("nesting-1500-deep", '{"a": ' * 1500 + "1" + "}" * 1500, CONFIG, [f"{CONFIG}: nested more than 32 levels deep"]),
    (
        "integer-beyond-4300-digits",
        '{"num_hidden_layers": ' + "9" * 5000 + "}",
        CONFIG,
        [f"{CONFIG}: cannot read a value (Exceeds the limit (4300 digits)"],
    ),
    # a key given twice: the last one silently won
    (
        "duplicate-key",
        config()[:-1] + ', "num_hidden_layers": 80}',
        CONFIG,
        [f"{CONFIG}: duplicate key 'num_hidden_layers'"],
    ),
    # absurd sizes: 1e12 layers of an MoE model never returned (a loop over layers); each size has a bound
    (
        "1e12-layers-moe",
        config(num_hidden_layers=1e12, num_local_experts=8, num_experts_per_tok=2),
        CONFIG,
        [f"{CONFIG}: field 'num_hidden_layers' must be an integer in [0, 100,000], got 1000000000000.0"],
    ),
    (
        "hidden-size-2-pow-21",
        config(hidden_size=2**21),
        CONFIG,
        [f"{CONFIG}: field 'hidden_size' must be an integer in [0, 1,048,576], got 2097152"],
    ),
    (
        "a-million-experts",
        config(n_routed_experts=10**6, num_experts_per_tok=2),
        CONFIG,
        [f"{CONFIG}: field 'n_routed_experts' must be an integer in [0, 65,536], got 1000000"],
    ),
    # geometry no model has: grouped-query attention shares each KV head among heads / kv_heads query
    # heads, so KV heads must divide the query heads (8 by 3 does not; 16 KV heads outnumber 8)
    (
        "kv-heads-not-dividing",
        config(num_key_value_heads=3),
        CONFIG,
        [f"{CONFIG}: 'num_attention_heads' (8) must be a multiple of 'num_key_value_heads' (3)"],
    ),
    (
        "more-kv-heads-than-heads",
        config(num_key_value_heads=16),
        CONFIG,
        [f"{CONFIG}: 'num_attention_heads' (8) must be a multiple of 'num_key_value_heads' (16)"],
    ),
    # 0 KV heads is refused, not read as "absent" (multi-head attention)
    (
        "zero-kv-heads",
        config(num_key_value_heads=0),
        CONFIG,
        [f"{CONFIG}: field 'num_key_value_heads' must be an integer in [1, 65,536], got 0"],
    ),
    # a flag must be a JSON boolean: the string "false" is refused, not read as true
    (
        "tie-embeddings-string",
        config(tie_word_embeddings="false"),
        CONFIG,
        [f"{CONFIG}: field 'tie_word_embeddings' must be true or false (a JSON boolean), got 'false'"],
    ),
    # a token cannot be routed to more experts than there are (Mixtral's and DeepSeek's names)
    (
        "more-active-than-local-experts",
        config(num_local_experts=4, num_experts_per_tok=8),
        CONFIG,
        [f"{CONFIG}: 'num_experts_per_tok' (8) exceeds 'num_local_experts' (4)"],
    ),
    (
        "more-active-than-routed-experts",
        config(n_routed_experts=4, num_experts_per_tok=8),
        CONFIG,
        [f"{CONFIG}: 'num_experts_per_tok' (8) exceeds 'n_routed_experts' (4)"],
    ),
    # a hybrid (local + global) cache that does not say which layers are local: reading it as all-local
    # would claim the whole cache stops growing at the window
    (
        "hybrid-cache-without-pattern",
        config(sliding_window=4, cache_implementation="hybrid"),
        CONFIG,
        [f"{CONFIG}: 'cache_implementation' is 'hybrid' (local and global layers) but neither"],
    ),
    (
        "layer-types-wrong-length",
        config(sliding_window=4, layer_types=["sliding_attention"]),
        CONFIG,
        [f"{CONFIG}: field 'layer_types' must be a list of 2 strings, one per layer"],
    ),
    # weight_dtype auto (what a new model brings) and a published format kvtier cannot count: refused, naming the
    # config and the key to set, never read as bf16
    (
        "quantization-unknown",
        config(quantization_config={"quant_method": "mxfp4"}),
        CONFIG,
        [f"{CONFIG}: ", "is auto but its quantization_config (quant_method mxfp4) names no weight dtype kvtier knows"],
    ),
    (
        "quantization-3-bits",
        config(quantization_config={"quant_method": "gptq", "bits": 3}),
        CONFIG,
        [f"{CONFIG}: ", "is auto but its quantization_config (quant_method gptq, bits 3) names no weight dtype"],
    ),
    (
        "torch-dtype-unknown",
        config(torch_dtype="float64"),
        CONFIG,
        [f"{CONFIG}: ", "is auto but its torch_dtype ('float64') names no weight dtype kvtier knows; set"],
    ),
    # a newline in the path: the message shows it escaped and stays one line
    ("newline-in-path", None, "{tmp}/a\nb/config.json", ["{tmp}/a\\nb/config.json: model config file not found"]),
]
MODEL_COMMANDS = {
    "model": lambda spec: ("model", spec),
    "compare": lambda spec: ("compare", "--model", spec),
    "build": lambda spec: ("build", "--set", f"model={spec}"),
}

CASES = [
    *(
        pytest.param((cmd, "--assumptions", YAML), {"mine.yaml": text}, needles, id=f"{cmd}-yaml-{name}")
        for name, text, needles in ASSUMPTION_FILES
        for cmd in ("compare", "build")
    ),
    # an assumptions file that does not exist
    *(
        pytest.param(
            (cmd, "--assumptions", "{tmp}/absent.yaml"),
            {},
            ["{tmp}/absent.yaml: assumptions file not found"],
            id=f"{cmd}-yaml-missing-file",
        )
        for cmd in ("compare", "tiers", "build")
    ),
    *(
        pytest.param((cmd, "--set", option), {}, needles, id=f"{cmd}-set-{name}")
        for name, option, needles in SET_OPTIONS
        for cmd in ("compare", "tiers", "build")
    ),
    *(
        pytest.param(make(spec), {"config.json": text} if text is not None else {}, needles, id=f"{cmd}-model-{name}")
        for name, text, spec, needles in MODELS
        for cmd, make in MODEL_COMMANDS.items()
    ),
    # files that are no regular file: /dev/zero never ends (MemoryError), a directory is no file
    *(
        pytest.param(
            (cmd, "--assumptions", path),
            {},
            [f"{path}: assumptions file is not a regular file"],
            id=f"{cmd}-yaml-{name}",
        )
        for name, path in (("dev-zero", "/dev/zero"), ("directory", "{tmp}"))
        for cmd in ("compare", "build")
    ),
    # a newline in the path of an assumptions file: the message shows it escaped and stays one line
    *(
        pytest.param(
            (cmd, "--assumptions", "{tmp}/a\nb.yaml"),
            {"a\nb.yaml": "assumptions: [1]\n"},
            ["{tmp}/a\\nb.yaml: 'assumptions' must be a non-empty mapping"],
            id=f"{cmd}-yaml-newline-in-path",
        )
        for cmd in ("compare", "build")
    ),
    # compare's own --bandwidth, outside the physical bounds (it printed a 300-digit fetch time)
    pytest.param(
        ("compare", "--bandwidth", "1e-300B/s"),
        {},
        [f"key 'bandwidth.mid' = '1e-300B/s' is out of range; allowed: {BANDWIDTH_RANGE}"],
        id="compare-bandwidth-1e-300",
    ),
    pytest.param(
        ("compare", "--bandwidth", "64"),
        {},
        # named as the option typed (issue 43: it said "command line")
        ["--bandwidth 64: key 'bandwidth.mid' = '64' needs a unit, for example 64GB/s"],
        id="compare-bandwidth-bare",
    ),
    pytest.param(
        ("compare", "--peak-flops", "989e12"),
        {},
        ["--peak-flops 989e12: key 'peak_flops' = '989e12' needs a unit, for example 500TFLOP/s"],
        id="compare-peak-bare",
    ),
    # the engine model: outside the measured grid, an accelerator or version without tables, a model it cannot build
    pytest.param(
        ("compare", "--regen-model", "engine", "--model", "llama-3-8b", "--position", "20000"),
        {},
        ["regen.model engine: a sequence of 20,016 tokens (context attention measured to 16,384) is outside"],
        id="compare-engine-outside-the-grid",
    ),
    pytest.param(
        ("compare", "--regen-model", "engine", "--accelerator", "dgx-spark-gb10", "--peak-flops", "100TFLOP/s"),
        {},
        ["--accelerator dgx-spark-gb10: no measured kernel tables for it (regen.model engine)"],
        id="compare-engine-accelerator-without-tables",
    ),
    pytest.param(
        ("compare", "--regen-model", "engine", "--model", "llama-3-8b", "--set", "regen.engine_version=0.1"),
        {},
        ["key 'regen.engine_version': aiconfigurator-core", "has no vllm 0.1 tables for h200_sxm"],
        id="compare-engine-version-absent",
    ),
    pytest.param(
        ("compare", "--regen-model", "engine", "--model", CONFIG),
        {"config.json": json.dumps({**GOOD_CONFIG, "architectures": ["FalconForCausalLM"]})},
        [f"model {CONFIG}: the engine model cannot time FalconForCausalLM: aiconfigurator-core", "LlamaForCausalLM"],
        id="compare-engine-model-unsupported",
    ),
    pytest.param(
        ("compare", "--regen-model", "engine", "--model", "llama-3-8b", "--kv-dtype", "fp32"),
        {},
        ["key 'kv_dtype': the engine model times bf16, fp16, fp8 KV caches, not fp32"],
        id="compare-engine-kv-fp32",
    ),
    pytest.param(
        ("compare", "--regen-model", "engine", "--model", "llama-3-8b", "--weight-dtype", "int4"),
        {},
        ["key 'weight_dtype': h200_sxm vllm", "has GEMM tables for bfloat16, fp8, fp8_block, not int4 (int4_wo)"],
        id="compare-engine-weights-int4",
    ),
    # build's own options
    pytest.param(("build", "--jobs", "0"), {}, ["--jobs must be at least 1, got 0"], id="build-jobs-0"),
    pytest.param(("build", "--jobs", "-1"), {}, ["--jobs must be at least 1, got -1"], id="build-jobs-negative"),
    pytest.param(
        ("build", "--jobs", "abc"), {}, ["kvtier build: argument --jobs: invalid int value: 'abc'"], id="build-jobs-abc"
    ),
    # model's own options and arguments
    pytest.param(
        ("model", "llama-3-8b", "--kv-dtype", "int3"),
        {},
        ["--kv-dtype must be one of bf16, fp16, fp32, fp8, got 'int3'"],
        id="model-kv-dtype-int3",
    ),
    pytest.param(
        ("model", "llama-3-8b", "--weight-dtype", "int3"),
        {},
        ["--weight-dtype must be auto or one of bf16, fp16, fp32, fp8, int8, int4, got 'int3'"],
        id="model-weight-dtype-int3",
    ),
    # --weight-dtype of the commands that place and regenerate a model: an alias of --set weight_dtype=D
    *(
        pytest.param(
            (cmd, "--weight-dtype", "fp4"),
            {},
            ["key 'weight_dtype' must be one of auto, bf16, fp16, fp32, fp8, int8, int4, got 'fp4'"],
            id=f"{cmd}-weight-dtype-fp4",
        )
        for cmd in ("compare", "tiers", "cost")
    ),
    pytest.param(("model",), {}, ["the following arguments are required: spec"], id="model-no-spec"),
    # an empty name: said as typed, not as a config.json the user never named (issue 43)
    pytest.param(("model", ""), {}, ["model: name a preset or a config.json"], id="model-empty-spec"),
    # the set as a whole
    *(
        pytest.param((cmd, "--assumptions", YAML), {"mine.yaml": text}, needles, id=f"{cmd}-whole-set-{name}")
        for name, text, needles in WHOLE_SET_FILES
        for cmd in ("build", "cost")
    ),
    *(
        pytest.param((cmd, "--set", option), {}, needles, id=f"{cmd}-whole-set-set-{name}")
        for name, option, needles in WHOLE_SET_OPTIONS
        for cmd in ("build", "cost")
    ),
    # a tensor-parallel size no serving engine runs: 3 ranks do not divide Llama-3-70B's 64 query heads (vLLM:
    # "Total number of attention heads (64) must be divisible by tensor parallel size (3)"), nor do 1,024
    *(
        pytest.param(
            (*cmd, "--set", f"parallel.tp={tp}", "--set", "workload.deployment=build"),
            {},
            [f"key 'parallel.tp' ({tp}): llama-3-70b has 64 attention heads, which {tp} ranks do not divide;"],
            id=f"{cmd[0]}-tp-{tp}-divides-no-heads",
        )
        for cmd in (("compare",), ("tiers",), ("build",), ("cost",), ("workload", "conversation"))
        for tp in (3, 1024)
    ),
    # 12 query heads split over 6 ranks, but 4 KV heads neither split over them nor replicate to them
    pytest.param(
        ("compare", "--model", CONFIG, "--tp", "6"),
        {"config.json": config(num_attention_heads=12, num_key_value_heads=4, hidden_size=96)},
        ["key 'parallel.tp' (6): ", "has 4 KV heads, which 6 ranks neither divide nor replicate (6 is no multiple"],
        id="compare-tp-6-splits-no-kv-heads",
    ),
    # an option and a --set that give one key two values: neither silently wins (the option won before)
    *(
        pytest.param(
            (cmd, option, value, "--set", f"{key}={other}"),
            {},
            [f"{option} {value} and --set {key}={other} both set {key}: give one"],
            id=f"{cmd}-{option.removeprefix('--')}-and-set-{key.replace('.', '-').replace('_', '-')}",
        )
        for cmd, option, value, key, other in (
            ("tiers", "--regen-model", "roofline", "regen.model", "analytic"),
            ("cost", "--weight-dtype", "fp8", "weight_dtype", "bf16"),
            ("compare", "--model", "llama-3-8b", "model", "llama-3-70b"),
            ("compare", "--tp", "8", "parallel.tp", "4"),
            ("tiers", "--tp", "8", "parallel.tp", "4"),
        )
    ),
    # an option the command does not take: named with the command, once ("kvtier: error: kvtier: ..." before)
    pytest.param(
        ("cost", "--tp", "4"),
        {},
        ["cost: unrecognized arguments: --tp 4 (kvtier cost --help lists its options)"],
        id="cost-unknown-option-tp",
    ),
    # a placement that does not fit suggests the --set form every command takes (cost has no --tp)
    pytest.param(
        ("cost", "--set", "parallel.hbm_capacity=80GB", "--set", "workload.deployment=build"),
        {},
        ["needs at least 2 accelerators (e.g. --set parallel.tp=2 --set parallel.pp=1)"],
        id="cost-placement-does-not-fit-suggests-set",
    ),
    # one key given twice by --set: the last one silently won (issue 43)
    pytest.param(
        ("compare", "--set", "parallel.tp=4", "--set", "parallel.tp=8"),
        {},
        ["--set parallel.tp=4 and --set parallel.tp=8: give one"],
        id="compare-set-twice-placement",
    ),
    # cost and workload refuse a placement that does not fit its accelerators, as compare does (Llama-3-70B's
    # weights alone are 141 GB in bf16 on one accelerator of 1 GB)
    *(
        pytest.param(
            (*cmd, "--set", "parallel.hbm_capacity=1GB", "--set", "workload.deployment=build"),
            {},
            ["each accelerator must hold 142.7 GB", "above 'parallel.hbm_capacity' (1.0 GB)"],
            id=f"{cmd[0]}-placement-does-not-fit",
        )
        for cmd in (("cost",), ("workload", "conversation"))
    ),
]


def snapshot(directory: Path) -> dict[str, bytes | None]:
    """Every file (its bytes) and directory (None) under ``directory``."""
    return {
        p.relative_to(directory).as_posix(): (p.read_bytes() if p.is_file() else None)
        for p in sorted(directory.rglob("*"))
    }


PROCESS_CASES = [
    case
    for case in CASES
    if case.id
    in {
        "compare-yaml-malformed-yaml",
        "compare-yaml-missing-file",
        "compare-model-hidden-size-2-pow-21",
        "build-yaml-text-value-is-a-mapping",
        "build-model-missing-config",
        "build-whole-set-range-moved-off-its-value",
        "model-model-field-beyond-float",
        "tiers-set-newline-in-model",
        "build-jobs-abc",
        "model-no-spec",
    }
]
"""A case of each surface and kind, run again as a real process: the exit status and the stream a shell sees."""


@pytest.mark.parametrize(("argv", "files", "needles"), CASES)
def test_bad_input_is_one_line_exit_2_and_loses_nothing(tmp_path, argv, files, needles):
    check_case(tmp_path, argv, files, needles, run_cli)


@pytest.mark.parametrize(("argv", "files", "needles"), PROCESS_CASES)
def test_a_process_shows_the_same_one_line_and_exit_2(tmp_path, argv, files, needles):
    assert len(PROCESS_CASES) == 10
    check_case(tmp_path, argv, files, needles, run_cli_process)


def check_case(tmp_path, argv, files, needles, run) -> None:
    """Write ``files``, run ``argv`` with ``run``, and check the one-line contract and that nothing changed."""
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    args = [arg.replace("{tmp}", str(tmp_path)) for arg in argv]
    if args[0] == "build":
        for name, data in SENTINEL.items():
            (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / name).write_bytes(data)
        args += ["--out", str(tmp_path / "out")]
    before = snapshot(tmp_path)

    proc = run(*args)

    shown = f"rc={proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    assert "Traceback" not in proc.stderr + proc.stdout, shown
    assert proc.returncode == 2, shown
    assert proc.stdout == "", shown
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and proc.stderr == lines[0] + "\n", shown
    assert lines[0].startswith("kvtier: error: "), shown
    for needle in needles:
        assert needle.replace("{tmp}", str(tmp_path)) in lines[0], shown
    # nothing lost, nothing left behind: the sentinel tree and the inputs are byte-identical
    assert snapshot(tmp_path) == before
    if args[0] == "build":
        assert {name: (tmp_path / name).read_bytes() for name in SENTINEL} == SENTINEL


def test_fifo_is_refused_without_waiting_for_a_writer(tmp_path):
    # a named pipe is no regular file: opening it to read would block until something writes to it
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)
    proc = run_cli("compare", "--assumptions", str(fifo))
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == f"kvtier: error: {fifo}: assumptions file is not a regular file\n"


@pytest.mark.surface("tiers")  # the link presets that `kvtier tiers` reads
def test_hardware_file_goes_through_the_same_reader(tmp_path):
    # a hardware preset file is read like an assumptions file: an alias (here a harmless one) is refused,
    # naming the file and line, and so is a second `links:` block that would silently replace the first
    path = tmp_path / "hw.yaml"
    link = "{title: L, bandwidth: {value: 8 GB/s, raw_or_net: raw, provenance: published-spec, figure: f, source: s}}"
    path.write_text(f"links:\n  l1: &l {link}\n  l2: *l\n")
    with pytest.raises(KvtierError, match=re.escape(f"{path}: YAML anchors and aliases (& and *) are not accepted")):
        hardware.load_links(path)
    path.write_text(f"links:\n  l1: {link}\nlinks:\n  l2: {link}\n")
    with pytest.raises(KvtierError, match=re.escape(f"{path}: duplicate key 'links' (line 3)")):
        hardware.load_links(path)
    # a link of 1 B/s is outside the physical bounds, as it would be as an assumption
    path.write_text("links:\n  l1: " + link.replace("8 GB/s", "1 B/s") + "\n")
    with pytest.raises(
        KvtierError, match=re.escape("field 'bandwidth' = '1 B/s' is out of range; allowed: bandwidth in")
    ):
        hardware.load_links(path)


@pytest.mark.parametrize(
    "args",
    [("--set", "fetch_latency=0"), ("--latency", "0"), ("--set", "fetch_latency=0 us"), ("--assumptions", "FILE")],
    ids=["set", "latency-option", "set-with-unit", "file"],
)
def test_zero_latency_is_accepted_from_every_source(tmp_path, args):
    # not bad input: no fixed per-transfer latency is the seed's own choice ("0 us"); a bare 0 is accepted
    # from `--set fetch_latency=0` as from `fetch_latency: 0` in a file
    path = tmp_path / "zero.yaml"
    path.write_text("assumptions:\n  fetch_latency: 0\n")
    proc = run_cli("compare", *(str(path) if arg == "FILE" else arg for arg in args), "--json")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    # 5,242,880 B / 64e9 B/s + 0 s = 81.92 us
    assert result["assumptions"]["fetch_latency"]["value"] == 0.0
    assert result["fetch_time_s"] == pytest.approx(81.92e-6, rel=1e-12)


@pytest.mark.surface("cost")
def test_a_set_that_moves_a_value_and_its_range_together_is_accepted(tmp_path):
    # not bad input: the neighbour of the whole-set cases. A B200-class peak with a range that holds it
    path = tmp_path / "b200.yaml"
    path.write_text("assumptions:\n  peak_flops: 2250 TFLOP/s\n  uncertainty.peak_high: 2250 TFLOP/s\n")
    proc = run_cli("cost", "--assumptions", str(path), "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["assumption_set"] == "b200"
