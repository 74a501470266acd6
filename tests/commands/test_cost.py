"""`kvtier cost`: the keep intervals and the trace mix from the command line, text and JSON.

``--json`` prints the tier-pricing model's own SI values (kvtier.formulas.tiering), nothing read back
from the page's display tables.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json

import pytest

from kvtier import analysis
from kvtier.commands import main
from kvtier.errors import KvtierError
from kvtier.formulas import tiering
from kvtier.scenario import TORNADO_KEYS, Scenario


def _args(*argv: str, deployment: str = "build") -> argparse.Namespace:
    """``kvtier cost ARGV``; by default priced with the seed set itself (the source chapter's world, whose hand
    arithmetic these tests check), not the named deployment the seed prices the trace pages for."""
    from kvtier.commands import cost as cost_cli

    parser = argparse.ArgumentParser()
    cost_cli.add_parser(parser.add_subparsers())
    return parser.parse_args(["cost", "--set", f"workload.deployment={deployment}", *argv])


def test_the_cost_command_prints_every_tier(capsys):
    from kvtier.commands import cost as cost_cli

    assert cost_cli.run(_args()) == 0
    out = capsys.readouterr().out
    assert "pcie5-x16" in out and "cxl2-x8" in out and "34.3 h" in out and "cost.cxl_gb" in out
    # the lower bound of the conversation trace: 898 GiB in host DRAM for 0.466 USD/h against 65.0 recomputing
    # (21.65 accelerators x 3 USD/h: parameter FLOPs plus attention over each block's prefix, the workload page's)
    assert (
        "inside a batch, with host DRAM: HBM 0.0 GiB (10 %), host DRAM 897.9 GiB (89 %)" in out
        and "0.466 USD/h against 65 USD/h" in out
    )
    # what it prices first, then the LRU tier: 95 % of the hits in host DRAM, 37,645 blocks x 160 MiB = 5.74 TiB
    head = out.splitlines()
    assert head[0] == "Priced for this build's own set: llama-3-70b on one accelerator with its own link."
    assert head[1].startswith("LRU tier for the conversation trace")
    assert "95% pcie5-x16     5.74 TiB (peak occupancy)" in out
    # NVMe: 8.92 GB/s of writes (188,042 missed blocks x 512 x 327,680 B / 3,536.999 s) over the drive's 5.6 GB/s
    # = 159.3 %
    assert "writes 8.92 GB/s (159.3 % of the device)" in out


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


# ---- --json is the model's values, to the last bit -------------------------------------


@pytest.fixture(scope="module")
def printed() -> dict:
    """``kvtier cost --json`` for the seed set priced with itself (``workload.deployment build``), parsed."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["cost", "--json", "--set", "workload.deployment=build"]) == 0
    return json.loads(out.getvalue())


def test_by_default_the_command_prices_the_named_deployment_as_the_cost_page_and_the_landing_do():
    from kvtier.report import named
    from kvtier.report.pages import page_of

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["cost", "--json"]) == 0
    got = json.loads(out.getvalue())
    assert got["assumption_set"] == "seed" and got["mix_model"] == "llama-3.1-70b"
    assert got["priced_for"].startswith("Priced for Llama-3.1-70B on 4 H100 SXM (TP 4), vLLM, a named deployment:")
    # the cost page's LRU table (its registry entry presents the same deployment) ...
    lru = next(table for table in page_of("13_cost").tables if table.name == "cost_lru").build(Scenario())
    row = lru[(lru["target"] == "90%") & (lru["tier"] == "pcie5-x16")].iloc[0]
    dram = got["lru"]["90%"][0]
    assert dram["tier"] == "pcie5-x16"
    assert dram["saved_usd_per_s"] * 3600 == pytest.approx(row["saved_batch_usd_per_h"], rel=1e-9)
    # ... and the landing's row for the deployment: 12.92 accelerators' prefill saved at the H100's 3 USD/h, less
    # the tier's holding, 11.2147 USD/h for the fleet
    landing = named.named_table(Scenario()).set_index("deployment").loc["llama-3.1-70b-h100"]
    assert dram["saved_usd_per_s"] * 3600 == pytest.approx(landing["saved_usd_h"], rel=1e-9)
    assert landing["saved_usd_h"] == pytest.approx(11.214726, rel=1e-6)


def test_every_interval_and_price_is_the_model_s_value(printed):
    s = Scenario()
    grid = tiering.interval_grid(s.tier_prices(), s.tier_links, s.cost_blocks)
    assert list(grid) == [(16, "lone"), (16, "batch"), (512, "lone"), (512, "batch")]
    assert list(printed["tiers"]) == sorted(s.tier_links.names)  # JSON keys sorted; 11 presets
    for (tokens, regime), iv in grid.items():
        case = f"{tokens}_{regime}"
        # equal to the last bit: the JSON holds the model's floats, not values undone from display units
        assert printed["blocks"][case] == {
            "regen_s": iv.regen_s,
            "recompute_usd": iv.recompute_usd,
            "recompute_J": iv.recompute_j,
        }
        for name in iv.tiers:
            at = iv.at(name)
            tier = printed["tiers"][name]
            assert tier["keep_s"][case] == {"usd": at["keep_usd_s"], "J": at["keep_j_s"]}
            assert tier["hold_usd_per_byte_s"] == at["hold_usd_per_byte_s"]
            assert tier["hold_w_per_byte"] == at["hold_w_per_byte"]
            assert tier["medium"] == tiering.medium(name)
    # and those values are the seed's: host DRAM over PCIe 5.0 x16 keeps a 16-token lone block for
    # (4.35323e-5 - 92.2693e-6 x 3/3600) USD / (6.7126e-17 x 5,242,880 = 3.51932e-10 USD/s) = 123,476 s = 34.30 h
    # (the fetch pays tier_latency.host_link's 9.049 us + 5,242,880 B / 63e9 B/s)
    assert printed["tiers"]["pcie5-x16"]["keep_s"]["16_lone"]["usd"] == pytest.approx(123_476, rel=1e-4)
    # CXL memory at 12 USD/GB over 5 y plus 3.75e-18 USD/(B s) of energy: 7.9801e-17 USD/(B s)
    assert printed["tiers"]["cxl2-x8"]["hold_usd_per_byte_s"] == pytest.approx(7.9801e-17, rel=1e-4)


def test_the_decisive_input_is_the_tornado_s_first(printed):
    s = Scenario()
    rows = tiering.interval_tornado(
        s.tier_prices(), s.price_ends(TORNADO_KEYS), s.tier_links, s.tier_block(), tiering.CXL_TIER, "lone"
    )
    assert printed["decisive_input"] == {"key": rows[0]["input"], "swing": rows[0]["swing_usd"], "tier": "cxl2-x8"}
    # CXL memory from 5 to 25 USD/GB: holding 3.5438e-17 to 1.6219e-16 USD/(B s), a factor of 4.5767
    assert printed["decisive_input"]["key"] == "cost.cxl_gb"
    assert printed["decisive_input"]["swing"] == pytest.approx(4.5767, rel=1e-4)


def test_every_mix_is_the_model_s_mix_of_the_trace(printed):
    # the command streams the trace twice; here the same mixes from the trace held in memory, every reuse at once
    s = Scenario()
    reuse, block = analysis.reuse(s), s.mix_block()
    t = reuse.trace
    at = (t.timestamps_s[t.request_of_ref] - t.timestamps_s[0])[reuse.prev >= 0]
    assert printed["mix_model"] == "llama-3-70b" and printed["trace"] == "conversation" and printed["notes"] == {}
    words = {"lone": "regenerated alone", "batch": "regenerated inside a batch"}
    for regime in tiering.REGIMES:
        for ladder, names in tiering.LADDERS.items():
            m = tiering.trace_mix(
                s.tier_prices(),
                s.tier_links.pick(names),
                block,
                regime,
                reuse.reuse_interval_s,
                reuse.trace.duration_s,
                recompute_s=s.regen_costs().per_reference_s(t, regime)[reuse.prev >= 0],
                reuse_at_s=at,
            )
            got = printed["mix"][f"{words[regime]}, {ladder}"]
            assert got["share"] == tiering.by_medium(m.share, names)  # counts of reuses: equal exactly
            held = tiering.by_medium(m.bytes_held, names)
            assert got["bytes_held"] == pytest.approx({k: held[k] for k in tiering.MEDIA}, rel=1e-12)
            peak = tiering.by_medium(m.peak_bytes_held, names)
            assert got["peak_bytes_held"] == {k: peak[k] for k in tiering.MEDIA}  # whole blocks: equal exactly
            # sums over the reuses in another order: equal to a few units in the last place
            assert (got["usd_per_s"], got["recompute_all_usd_per_s"]) == pytest.approx(
                (m.usd_per_s, m.recompute_all_usd_per_s), rel=1e-12
            )
            assert (got["usd"], got["recompute_all_usd"], got["saving"]) == pytest.approx(
                (m.usd, m.recompute_all_usd, m.saving), rel=1e-12
            )
    # the page's 0.466 USD/h against 65.0 USD/h to recompute every reuse, inside a batch with host DRAM: the
    # workload page's 21.6548 accelerators x 3 USD/h = 64.964 USD/h
    main_mix = printed["mix"]["regenerated inside a batch, with host DRAM"]
    assert main_mix["usd_per_s"] * 3600 == pytest.approx(0.466, rel=1e-3)
    assert main_mix["recompute_all_usd_per_s"] * 3600 == pytest.approx(21.654790 * 3, rel=1e-6)


def test_the_lru_tiers_are_the_scenario_s_plan(printed):
    s = Scenario()
    for target in ("90%", "95%"):
        plan = analysis.lru_plan(s, int(target[:-1]) / 100)
        got = printed["lru"][target]
        assert [t["tier"] for t in got] == ["pcie5-x16", "cxl2-x8", "nvme-gen4-x4"]
        for row, tier in zip(got, plan, strict=True):
            assert row["saved_usd_per_s"] == tier.saved_usd_per_s
            assert row["write_bytes_per_s"] == tier.write_bytes_per_s
    # DRAM and CXL memory do not wear: null in JSON
    assert printed["lru"]["95%"][0]["endurance_used"] is None
    assert printed["lru"]["95%"][0]["drives"] is None  # nor buy drives
    # NVMe buys whole drives: the 90 % tier's writes, 193,346 missed blocks of 512 tokens x 327,680 B over the trace's
    # 3,536.999 s = 9.1711 GB/s,
    # wear through 52 drives of 15.36 TB a day's rating (9.1711e9 x 86,400 / 15.36e12 = 51.59), where 1 holds its
    # 4.82 TiB and 2 take its writes at 5.6 GB/s each
    drives = printed["lru"]["90%"][2]["drives"]
    assert (drives["count"], drives["for_capacity"], drives["for_bandwidth"], drives["for_endurance"]) == (52, 1, 2, 52)
    # and its holding pays for them: 52 x 15.36e12 B at the flash's price per byte-second
    plan = {t.tier: t for t in analysis.lru_plan(s, 0.9)}["nvme-gen4-x4"]
    hold = tiering.hold_usd_per_byte_s(s.tier_prices())["nvme"]
    assert printed["lru"]["90%"][2]["hold_usd_per_s"] == pytest.approx(hold * 52 * 15.36e12, rel=1e-12)
    assert plan.drives.flash_bytes == 52 * 15.36e12


def test_the_cost_command_reads_a_trace_past_the_in_memory_limit(monkeypatch, capsys):
    # the conversation trace holds 288,500 block references; with the in-memory reader
    # limited to 1,000 it is refused there, while the command streams it twice and prints the same figures
    from kvtier.commands import cost as cost_cli
    from kvtier.inputs import traces

    assert cost_cli.run(_args("--json")) == 0
    whole = json.loads(capsys.readouterr().out)
    monkeypatch.setattr("kvtier.inputs.traces.load.MAX_TRACE_REFS", 1_000)
    with pytest.raises(KvtierError, match="1,000"):
        traces.read_trace("conversation")
    assert cost_cli.run(_args("--json")) == 0
    assert json.loads(capsys.readouterr().out) == whole
