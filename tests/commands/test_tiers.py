"""`kvtier tiers`: the tier ladder from the command line, equal to the tiers table of record."""

from __future__ import annotations

import re

import pytest

from tests.conftest import csv_rows, run_cli, run_cli_json


def test_tiers_json_agrees_with_the_tiers_table():
    out = run_cli_json("tiers")
    table = {r["link"]: r for r in csv_rows("tiers")}
    assert [row["link"] for row in out["tiers"]] == list(table)
    for row in out["tiers"]:
        ref = table[row["link"]]
        assert row["fetch_time_s"] * 1e6 == pytest.approx(float(ref["fetch_us"]), rel=1e-9)
        assert row["ratio_tail"] == pytest.approx(float(ref["ratio_tail"]), rel=1e-9)
        assert row["bandwidth_bytes_per_s"] == pytest.approx(float(ref["bandwidth_GBps"]) * 1e9)


def test_tiers_shows_both_layouts_and_one_when_asked():
    from tests.conftest import run_cli

    out = run_cli_json("tiers")
    nvme = next(row for row in out["tiers"] if row["link"] == "nvme-gen4-x4")
    # 160 x 92 us + 5,242,880 B / 7e9 B/s = 15,468.98 us per layer chunk; 92 + 748.98 = 840.98 us as one transfer
    assert out["layer_chunks"] == 160 and out["fetch_layout"] == "contiguous"
    assert nvme["fetch_time_s_per_layer"] == pytest.approx(160 * 92e-6 + 5_242_880 / 7e9, rel=1e-12)
    assert nvme["fetch_time_s_contiguous"] == pytest.approx(92e-6 + 5_242_880 / 7e9, rel=1e-12)
    # break-even latency per layer chunk inside a batch: (17.9229 ms - 748.98 us) / 160 = 107.34 us
    assert nvme["break_even_latency_tail_s_per_layer"] == pytest.approx(
        (17.922852e-3 - 5_242_880 / 7e9) / 160, rel=1e-6
    )
    assert nvme["latency_s"] == 92e-6 and nvme["fetch_wins_tail_per_layer"] is True
    both = run_cli("tiers").stdout
    assert "contig fetch" in both and "per-layer fetch" in both
    # the NVMe row per layer chunk: 15.47 ms, 1.16x inside a batch, 3.38x as a lone block
    one = run_cli("tiers", "--layout", "per-layer").stdout
    assert "contig fetch" not in one and "per-layer fetch" in one
    row = next(line for line in one.splitlines() if line.startswith("nvme-gen4-x4"))
    assert "15.47 ms" in row and " 1.16 " in row and " 3.38 " in row


def test_tiers_follow_the_placement():
    # --tp 8 --gpus-per-link 2: each GPU fetches 655,360 B, two of them share each link: 1,310,720 B over it;
    # NVMe Gen4 x4 at 7 GB/s, one transfer: 92 us + 1,310,720 / 7e9 = 92 + 187.25 us
    out = run_cli_json("tiers", "--tp", "8", "--gpus-per-link", "2")
    assert out["placement"]["tp"] == 8 and out["placement"]["link_bytes"] == 1_310_720.0
    nvme = next(row for row in out["tiers"] if row["link"] == "nvme-gen4-x4")
    assert nvme["fetch_time_s_contiguous"] == pytest.approx(92e-6 + 1_310_720 / 7e9, rel=1e-12)
    # pp 2: each stage's shard has 40 of the 80 layers: 80 layer chunks per transfer, not 160
    staged = run_cli_json("tiers", "--pp", "2")
    assert staged["layer_chunks"] == 80 and staged["placement"]["shard_bytes"] == 2_621_440.0


def test_the_ladder_under_an_engines_measured_kernels():
    out = run_cli_json(
        "tiers", "--regen-model", "engine", "--accelerator", "h100-sxm", "--engine", "vllm", "--set", "model=llama-3-8b"
    )
    from kvtier import Scenario, load_assumptions

    s = Scenario(
        load_assumptions(
            sets={"regen.model": "engine", "regen.system": "h100_sxm", "engine": "vllm", "model": "llama-3-8b"}
        )
    )
    hbm = next(t for t in out["tiers"] if t["link"] == "hbm")
    # the lone ratio: the engine's pass of the 16-token tail block over the fetch from HBM, both as the scenario times
    lone = float(s.lone_regen_s(0, "resident", 0.25))
    assert hbm["lone_ratio_tail_contiguous"] == pytest.approx(lone / hbm["fetch_time_s_contiguous"], rel=1e-9)
    # inside a batch: the block's share of an 8,192-token step, far less than alone
    assert hbm["ratio_tail_contiguous"] < hbm["lone_ratio_tail_contiguous"] / 10
    text = run_cli("tiers", "--regen-model", "engine", "--accelerator", "h100-sxm", "--set", "model=llama-3-8b")
    assert "regeneration from h100_sxm vllm 0.24.0's measured kernels" in text.stdout.splitlines()[0]


def test_split_adds_a_third_verdict_per_tier_the_decisions():
    from kvtier.report.pages import answer
    from kvtier.scenario import Scenario

    out = run_cli_json("tiers", "--split")
    # 10 tiers x 2 layouts x 2 regimes, the decision page's split per tier row for row (one computation)
    rows = {(r["tier"], r["layout"], r["regime"]): r for r in out["split"]}
    table = answer.split_table(Scenario()).set_index(["tier", "layout", "regime"])
    assert len(rows) == len(table) == 40
    for key, r in rows.items():
        assert (r["split_tokens"], r["fastest"]) == (table.loc[key, "split_tokens"], table.loc[key, "fastest"])
        assert r["gain"] == pytest.approx(table.loc[key, "gain"], rel=1e-12)
    # NVMe Gen4 per layer chunk inside a batch: 3,712 of the 8,176 tokens computed, 1.83 times (compare --split's)
    text = run_cli("tiers", "--split", "--layout", "per-layer").stdout
    assert "split: a reused prefix of 8,176 tokens and 16 new ones" in text
    assert re.search(r"nvme-gen4-x4\s+\|\s+3,712 tok, 1\.83x\s+3,712 tok, 1\.82x", text)
    # NVLink-C2C alone, copied per layer: fetching whole is fastest, shown as '-'
    # inside a batch a split of 32 tokens gains under 1 %: said as a percentage, not "1.00x" (issue 43)
    assert re.search(r"nvlink-c2c\s+\|\s+32 tok, \+0\.27%\s+-$", text, re.MULTILINE)
