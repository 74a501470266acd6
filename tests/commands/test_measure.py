"""`kvtier measure` from the command line: a model without dense attention refused, a set written.

Refusals in the catalogue are in tests/commands/test_bad_input_measure.py; the measuring itself in
tests/inputs/probe/.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
import yaml

from kvtier.commands import measure as measure_command
from kvtier.errors import KvtierError
from kvtier.inputs.probe import measuring


def test_the_command_line_refuses_a_model_without_dense_attention(tmp_path):
    parser = argparse.ArgumentParser(prog="kvtier")
    measure_command.add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(
        ["measure", "--out", str(tmp_path / "m.yaml"), "--model", "deepseek-v3", "--device", "cpu"]
    )
    with pytest.raises(KvtierError, match="dense MHA/GQA decoders only; this one is MLA"):
        args.func(args)
    assert not (tmp_path / "m.yaml").exists()


def test_the_command_line_writes_a_set(tiny, tmp_path, monkeypatch):
    monkeypatch.setattr(measuring, "SIZES_QUICK", (4096, 2**20))
    monkeypatch.setattr(measuring, "SWEEP_QUICK", (1, 16))
    parser = argparse.ArgumentParser(prog="kvtier")
    measure_command.add_parser(parser.add_subparsers(dest="command", required=True))
    out = tmp_path / "m.yaml"
    args = parser.parse_args(["measure", "--out", str(out), "--model", tiny, "--device", "cpu", "--quick"])
    assert args.func(args) == 0
    assert yaml.safe_load(out.read_text())["name"] == "measured-cpu"
    assert Path(out).read_text().startswith("# Written by kvtier measure")
