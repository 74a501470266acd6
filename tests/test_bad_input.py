"""The bad-input catalogue: every kind of bad input is one line on stderr and exit status 2.

Each case runs the real CLI in a subprocess (``kvtier compare``, ``kvtier model`` or
``kvtier build``) and checks the contract of :mod:`kvtier.cli`: exit status 2, stdout
empty, stderr exactly one line ``kvtier: error: ...`` naming the offending key or file,
and no traceback.  A build case writes into ``--out`` under ``tmp_path``, which holds a
sentinel tree beforehand; input is validated before anything runs, so the tree (and
everything else under ``tmp_path``) must be byte-identical afterwards: nothing lost.

A notebook that raises is covered by tests/test_book.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvtier.models import PRESETS
from tests.conftest import run_cli

YAML = "{tmp}/mine.yaml"
CONFIG = "{tmp}/config.json"
GOOD_CONFIG = {
    "num_hidden_layers": 2,
    "hidden_size": 64,
    "num_attention_heads": 8,
    "intermediate_size": 128,
    "vocab_size": 100,
}
"""A valid small config.json (tests/test_cli.py computes its numbers); cases break one field."""
PROVENANCES = "allowed: measured, published-spec, assumed, implied, derived"
FIELDS = "allowed: value, unit, basis, provenance, source"
SENTINEL = {
    "out/html/index.html": b"<html>the last good book \xe2\x9c\x93\r\n</html>\n",
    "out/tables/x.csv": b"table,row,value\r\nx,1,81.92e-6\n",
    "out/figures/f.svg": b"<svg/>",
    "out/manifest.json": b"{}\n",  # marks out/ as an earlier kvtier build, which a build may replace
}


def config(**changes) -> str:
    """GOOD_CONFIG as JSON text with ``changes`` applied (a value of None drops the field)."""
    cfg = {**GOOD_CONFIG, **changes}
    return json.dumps({k: v for k, v in cfg.items() if v is not None})


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
        [f"{YAML}: key 'mfu.typical' = 0 is out of range; allowed: fraction in (0, 1]"],
    ),
    (
        "mfu-150-percent",
        "assumptions:\n  mfu.typical: 150%\n",
        [f"{YAML}: key 'mfu.typical' = '150%' is out of range; allowed: fraction in (0, 1]"],
    ),
    (
        "negative-bandwidth",
        "assumptions:\n  bandwidth.mid: -64 GB/s\n",
        [f"{YAML}: key 'bandwidth.mid' = '-64 GB/s' is out of range; allowed: bandwidth in (0, inf)"],
    ),
    (
        "block-tokens-zero",
        "assumptions:\n  block_tokens: 0\n",
        [f"{YAML}: key 'block_tokens' = 0 is out of range; allowed: a whole number of tokens in [1, inf)"],
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
        [f"{YAML}: key 'bandwidth.mid' must be finite, got nan; allowed: bandwidth in (0, inf)"],
    ),
    (
        "yaml-inf",
        "assumptions:\n  peak_flops: .inf\n",
        [f"{YAML}: key 'peak_flops' must be finite, got inf; allowed: flop_rate in (0, inf)"],
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
]

# --set KEY=VALUE: (id, option, substrings). Each runs under `compare` and `build`.
SET_OPTIONS = [
    ("unknown-key", "bandwidth.middle=64GB/s", ["--set: unknown key 'bandwidth.middle'; known keys: "]),
    ("no-equals", "bandwidth.mid", ["--set 'bandwidth.mid': expected KEY=VALUE"]),
    ("empty-key", "=64GB/s", ["--set '=64GB/s': expected KEY=VALUE"]),
    ("bad-value", "bandwidth.mid=fast", ["key 'bandwidth.mid': cannot read 'fast' as bandwidth"]),
    ("nan", "mfu.typical=NaN", ["key 'mfu.typical' must be finite, got 'NaN'; allowed: fraction in (0, 1]"]),
    ("inf", "block_tokens=inf", ["key 'block_tokens' must be finite, got 'inf'"]),
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
        [f"{CONFIG}: field 'num_hidden_layers' must be an integer in [0, 1e+12], got '2'"],
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
        for cmd in ("compare", "build")
    ),
    *(
        pytest.param((cmd, "--set", option), {}, needles, id=f"{cmd}-set-{name}")
        for name, option, needles in SET_OPTIONS
        for cmd in ("compare", "build")
    ),
    *(
        pytest.param(make(spec), {"config.json": text} if text is not None else {}, needles, id=f"{cmd}-model-{name}")
        for name, text, spec, needles in MODELS
        for cmd, make in MODEL_COMMANDS.items()
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
    pytest.param(("model",), {}, ["the following arguments are required: spec"], id="model-no-spec"),
]


def snapshot(directory: Path) -> dict[str, bytes | None]:
    """Every file (its bytes) and directory (None) under ``directory``."""
    return {
        p.relative_to(directory).as_posix(): (p.read_bytes() if p.is_file() else None)
        for p in sorted(directory.rglob("*"))
    }


@pytest.mark.parametrize(("argv", "files", "needles"), CASES)
def test_bad_input_is_one_line_exit_2_and_loses_nothing(tmp_path, argv, files, needles):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    args = [arg.replace("{tmp}", str(tmp_path)) for arg in argv]
    if args[0] == "build":
        for name, data in SENTINEL.items():
            (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / name).write_bytes(data)
        args += ["--out", str(tmp_path / "out")]
    before = snapshot(tmp_path)

    proc = run_cli(*args)

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
