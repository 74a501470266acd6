"""`kvtier cost`: the keep intervals and the trace mix from the command line, text and JSON."""

from __future__ import annotations

import argparse
import json

import pytest

from kvtier.errors import KvtierError


def _args(*argv: str) -> argparse.Namespace:
    from kvtier.commands import cost as cost_cli

    parser = argparse.ArgumentParser()
    cost_cli.add_parser(parser.add_subparsers())
    return parser.parse_args(["cost", *argv])


def test_the_cost_command_prints_every_tier(capsys):
    from kvtier.commands import cost as cost_cli

    assert cost_cli.run(_args()) == 0
    out = capsys.readouterr().out
    assert "pcie5-x16" in out and "cxl2-x8" in out and "34.3 h" in out and "cost.cxl_gb" in out
    # the mix of the conversation trace: 898 GiB in host DRAM for 0.465 USD/h against 51.7 recomputing
    assert (
        "inside a batch, with host DRAM: HBM 0.0 GiB (10 %), host DRAM 897.9 GiB (89 %)" in out
        and "0.465 USD/h against 51.7 USD/h" in out
    )


def test_the_cost_command_json_follows_a_set_price(capsys):
    from kvtier.commands import cost as cost_cli

    assert cost_cli.run(_args("--json")) == 0
    base = json.loads(capsys.readouterr().out)
    assert cost_cli.run(_args("--json", "--set", "cost.accelerator_hour=4USD/h")) == 0
    dear = json.loads(capsys.readouterr().out)
    assert set(base["tiers"]) == set(dear["tiers"]) and len(base["tiers"]) == 11
    # the host-DRAM interval grows with the accelerator price (about 4/3, less the fetch's share)
    b, d = (
        base["tiers"]["pcie5-x16"]["keep_s"]["16_lone"]["usd"],
        dear["tiers"]["pcie5-x16"]["keep_s"]["16_lone"]["usd"],
    )
    assert d / b == pytest.approx(4 / 3, rel=1e-9)


def test_the_cost_command_refuses_a_price_without_currency():
    from kvtier.commands import cost as cost_cli

    with pytest.raises(KvtierError, match="cost.cxl_gb"):
        cost_cli.run(_args("--set", "cost.cxl_gb=12/GB"))
