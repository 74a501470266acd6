"""`kvtier workload`: a trace analysed from the command line, text and JSON, streamed or not."""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np
import pytest

from kvtier.commands import workload as workload_cli
from kvtier.errors import KvtierError
from kvtier.inputs import traces
from tests.conftest import BAD, GOOD, HAND, run_cli, write_trace


def cli(argv: list[str], capsys, deployment: str = "build") -> tuple[int, str, str]:
    """``kvtier workload ARGV`` through add_parser and run, with the command line's error contract.

    Priced with the seed set itself by default (``workload.deployment build``: the source chapter's Llama-3-70B
    at 25 % of 500 TFLOP/s, whose hand arithmetic these tests check), not the named deployment the seed prices
    the workload page for; ``deployment`` names another.
    """
    parser = argparse.ArgumentParser(prog="kvtier")
    workload_cli.add_parser(parser.add_subparsers())
    args = parser.parse_args(["workload", "--set", f"workload.deployment={deployment}", *argv])
    try:
        status = args.func(args)
    except KvtierError as exc:  # what kvtier.commands.main does with every user error
        print(f"kvtier: error: {exc}", file=sys.stderr)
        status = 2
    out = capsys.readouterr()
    return status, out.out, out.err


def test_an_unknown_trace_names_the_shipped_ones(tmp_path, capsys):
    status, out, err = cli([str(tmp_path / "nope.jsonl")], capsys)
    assert (status, out) == (2, "")
    assert (
        err == f"kvtier: error: {tmp_path / 'nope.jsonl'}: trace not found; name a file or a shipped trace:"
        " conversation, synthetic\n"
    )


def test_the_real_command_line_exits_2_once_wired(tmp_path, capsys):
    from kvtier import commands as kvtier_cli

    if "workload" not in kvtier_cli.build_parser().format_help():
        pytest.skip("kvtier.commands does not register `workload` yet")
    path = write_trace(tmp_path / "bad.jsonl", [GOOD, {**GOOD, "timestamp": -1}])
    assert kvtier_cli.main(["workload", str(path)]) == 2
    out = capsys.readouterr()
    assert (
        out.out == ""
        and out.err == f"kvtier: error: {path}: line 2: timestamp -1 ms goes backwards (the line before: 0)\n"
    )


# ---------------------------------------------------------------------------
# the command
# ---------------------------------------------------------------------------


def test_the_command_reports_the_hand_trace_in_json(hand, capsys):
    status, out, err = cli([str(hand), "--block-tokens", "4", "--json"], capsys)
    assert (status, err) == (0, "")
    rep = json.loads(out)
    assert rep["trace"]["requests"] == 5 and rep["trace"]["duration_s"] == 5.0
    assert rep["trace"]["requests_per_s"] == 1.0  # 5 requests over 5 s
    assert (rep["blocks"]["references"], rep["blocks"]["unique"]) == (11, 5)
    assert rep["blocks"]["hit_ratio_infinite_blocks"] == pytest.approx(6 / 11)
    # Llama-3 70B in bf16: 2 x 80 layers x 8 KV heads x 128 x 2 B = 327,680 B a token; x 4 tokens a block
    assert rep["block_bytes"] == 327_680 * 4
    tiers = {t["target_pct"]: t for t in rep["tiers"]}
    assert sorted(tiers) == [50, 80, 90, 95, 100]
    assert [tiers[t]["capacity_blocks"] for t in (50, 80, 100)] == [2, 5, 5]
    # at C = 2: 12 hit tokens over 5 s; inside a batch each prefix costs 2 x 70e9 x h + 2,621,440 x h (h + 1) / 2
    # FLOP at 25 % of 500 TFLOP/s: R2 h = 8 and R5 h = 4
    flops = sum(2 * 70e9 * h + 2_621_440 * h * (h + 1) / 2 for h in (8, 4))
    assert tiers[50]["hit_tokens_per_s"] == pytest.approx(12 / 5)
    assert tiers[50]["in_batch_gpu_s_per_s"] == pytest.approx(flops / (500e12 * 0.25) / 5)
    # alone, each prefix streams 140e9 B of weights at 3.35 TB/s x 80 %: 52.24 ms, far above its compute
    assert tiers[50]["lone_gpu_s_per_s"] == pytest.approx(2 * 140e9 / (3.35e12 * 0.8) / 5)
    assert tiers[50]["lone_memory_bound_share"] == 1.0
    # the CXL 2.0 x8 expander preset: 31.5 GB/s net; 12 tokens x 327,680 B / 31.5e9 over 5 s, and a latency per
    # block of the serving engine's 16 tokens (block_tokens): R2's 8 and R5's 4 hit tokens are 1 copy each, 2 in all
    link = next(k for k in tiers[50]["links"] if k["link"] == "cxl2-x8")
    lat = 9.049e-6  # tier_latency.host_link: the seed's per-transfer latency of the host link and CXL
    assert link["fetch_link_s_per_s"] == pytest.approx((12 * 327_680 / 31.5e9 + 2 * lat) / 5)


def test_the_command_prints_text_and_takes_another_model(hand, capsys):
    status, out, _ = cli([str(hand), "--block-tokens", "4", "--model", "llama-3-8b"], capsys)
    assert status == 0
    # Llama-3 8B: 2 x 32 layers x 8 x 128 x 2 B = 131,072 B a token, x 4 = 512 KiB a block
    assert "llama-3-8b, bf16 KV: 512.00 KiB a block" in out
    assert "blocks: 11 references, 5 unique; an infinite cache hits 54.5 % of blocks, 56.4 % of tokens" in out
    assert "5 of 5 requests have stack distances that never fall" in out


def test_the_engine_model_prices_the_hits_with_the_measured_kernels(hand, capsys):
    from kvtier import Scenario, load_assumptions

    engine = ["--set", "regen.model=engine", "--model", "llama-3-8b"]
    status, out, err = cli([str(hand), "--block-tokens", "4", *engine, "--json"], capsys)
    assert (status, err) == (0, "")
    rep = json.loads(out)
    # every prompt of the hand trace is a few blocks of 4 tokens, far inside the 16,384-token grid
    assert rep["engine"] == {"tables": "h200_sxm vllm 0.24.0", "grid_tokens": 16384.0, "prompts_beyond_grid": 0.0}
    # the hits' prefill alone is the estimator's pass of each hit prefix (R2 h = 8, R5 h = 4 at C = 2), over 5 s
    rc = Scenario(load_assumptions(sets={"regen.model": "engine", "model": "llama-3-8b"})).regen_costs()
    tiers = {t["target_pct"]: t for t in rep["tiers"]}
    assert tiers[50]["lone_gpu_s_per_s"] == pytest.approx(float(rc.lone_s(np.array([8.0, 4.0])).sum()) / 5)
    status, out, _ = cli([str(hand), "--block-tokens", "4", *engine], capsys)
    assert "regeneration by h200_sxm vllm 0.24.0's measured kernels (regen.model engine)" in out
    assert "0.0 % of the prompts are longer than the 16,384 tokens the tables measured" in out


def test_the_engine_model_refuses_a_trace_past_its_grid_unless_told_to_extrapolate(capsys):
    status, _, err = cli(["conversation", "--set", "regen.model=engine"], capsys)
    assert status == 2 and err.count("\n") == 1
    assert "a prompt prefix of 122,880 tokens is longer than 16,384 on h200_sxm vllm 0.24.0" in err


def test_by_default_the_command_prices_the_trace_as_the_workload_page_does(capsys):
    from kvtier import analysis
    from kvtier.report.pages import page_of
    from kvtier.scenario import Scenario

    status, out, err = cli(["conversation", "--json"], capsys, deployment="llama-3.1-70b-h100")
    assert (status, err) == (0, "")
    rep = json.loads(out)
    assert rep["priced_for"].startswith("Priced for Llama-3.1-70B on 4 H100 SXM (TP 4), vLLM, a named deployment:")
    # the workload page's tiers table (the registry presents the same deployment): the accelerators whose prefill
    # the 90 % tier avoids, timed on the H100's kernel tables
    table = next(t for t in page_of("12_workload").tables if t.name == "workload_tiers").build(Scenario())
    row = table[(table["trace"] == "conversation") & (table["target"] == "90%")].iloc[0]
    tier = next(t for t in rep["tiers"] if t["target_pct"] == 90)
    assert tier["in_batch_gpu_s_per_s"] == pytest.approx(row["prefill_avoided_in_batch_gpus"], rel=1e-9)
    traffic = analysis.lru_traffic(analysis.priced(Scenario()), 0.9)
    assert tier["in_batch_gpu_s_per_s"] == pytest.approx(traffic.recompute_avoided_s / traffic.duration_s, rel=1e-9)
    # a set naming its own model prices the trace with itself: the deployment was chosen for another model
    status, out, _ = cli(["conversation", "--json", "--model", "llama-3-8b"], capsys, deployment="llama-3.1-70b-h100")
    assert status == 0 and json.loads(out)["priced_for"].startswith("Priced for this build's own set,")


def test_the_command_runs_the_shipped_trace_by_name(capsys):
    status, out, _ = cli(["synthetic"], capsys)
    # what priced it first (here the seed set itself), then the trace
    priced, first = out.splitlines()[:2]
    assert status == 0
    assert priced == "Priced for this build's own set: llama-3-70b on one accelerator with its own link."
    assert first.startswith("trace synthetic: 3,993 requests over 17.03 min")


def test_stream_is_accepted_and_changes_nothing(hand, capsys):
    status, out, _ = cli([str(hand), "--block-tokens", "4", "--json"], capsys)
    whole = json.loads(out)
    status_s, out_s, _ = cli([str(hand), "--block-tokens", "4", "--json", "--stream"], capsys)
    streamed = json.loads(out_s)
    assert status == status_s == 0
    # one code path: the command always streams, and --stream is accepted for the scripts that pass it
    assert streamed == whole
    status, out, err = cli([str(write_trace(hand, HAND[1:] + HAND[:1])), "--block-tokens", "4", "--stream"], capsys)
    assert (status, out) == (2, "") and err.startswith(f"kvtier: error: {hand}: line 5: timestamp 0 ms goes backwards")


def test_the_command_declares_the_format_and_warns_when_hits_follow_a_miss(qwen, capsys):
    status, out, err = cli([str(qwen), "--format", "qwen", "--json"], capsys)
    assert (status, err) == (0, "")
    rep = json.loads(out)
    # --format qwen sets 16 tokens a block: 16 references over 6 s, 4 / 6 requests a second
    assert (rep["trace"]["format"], rep["trace"]["block_tokens"], rep["trace"]["duration_s"]) == ("qwen", 16, 6.0)
    assert rep["trace"]["requests_per_s"] == pytest.approx(4 / 6)
    assert rep["blocks"]["hit_ratio_infinite_blocks"] == 0.5
    note = "format qwen: timestamps in s, one id per block, chained here as a prefix cache does"
    assert rep["notes"] == {"format": note}
    # read as the default format the hits after a miss are warned of in the normal output, not only in --json
    status, out, err = cli([str(qwen), "--block-tokens", "16"], capsys)
    assert status == 0 and err == ""
    warning = out.splitlines()[0]
    assert warning.startswith("warning: in 1 of 4 requests a block hits after an earlier block of the same prompt")
    assert warning.endswith("declare a format that chains them (--format qwen)")
    status, out, _ = cli([str(qwen), "--block-tokens", "16", "--stream"], capsys)
    assert status == 0 and out.startswith("warning: in 1 of 4 requests")
    status, out, _ = cli([str(qwen), "--format", "qwen", "--stream", "--json"], capsys)
    streamed = json.loads(out)
    # the stream chains the same way: 8 distinct prefixes, half the references hit, none after a miss
    assert (streamed["blocks"]["unique"], streamed["blocks"]["hit_ratio_infinite_blocks"]) == (8, 0.5)
    assert streamed["prefix"]["requests_with_a_hit_after_a_miss"] == 0


def test_the_set_declares_the_format_for_the_command(qwen, capsys):
    status, out, _ = cli([str(qwen), "--set", "workload.trace_format=qwen", "--block-tokens", "16", "--json"], capsys)
    assert status == 0 and json.loads(out)["trace"]["duration_s"] == 6.0


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_bad_trace_is_one_line_naming_file_and_line(case, tmp_path, capsys):
    rows, line, message = BAD[case]
    path = write_trace(tmp_path / "bad.jsonl", rows)
    with pytest.raises(KvtierError) as err:
        traces.read_trace(path)
    text = str(err.value)
    assert text.startswith(f"{path}: line {line}: ") and message in text and "\n" not in text, text
    status, out, err_text = cli([str(path)], capsys)
    assert (status, out) == (2, "")
    assert err_text == f"kvtier: error: {text}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.jsonl"]  # nothing written


def test_a_u2028_in_a_string_is_content_in_both_modes(tmp_path, capsys):
    path = tmp_path / "sep.jsonl"
    rows = [{**HAND[0], "type": "a\u2028b\u0085c"}, *HAND[1:]]
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    status, out, _ = cli([str(path), "--block-tokens", "4", "--json"], capsys)
    status_s, out_s, _ = cli([str(path), "--block-tokens", "4", "--json", "--stream"], capsys)
    # the five requests of HAND, 11 references, 5 distinct blocks, in both modes
    assert status == status_s == 0
    assert (json.loads(out)["trace"]["requests"], json.loads(out_s)["trace"]["requests"]) == (5, 5)
    assert json.loads(out)["blocks"]["references"] == json.loads(out_s)["blocks"]["references"] == 11


def test_a_sampled_run_states_each_figures_measured_error(capsys):
    # --sample 0.1 on the synthetic trace: the shipped traces sampled alike, each figure's error against the exact
    status, out, err = cli(["synthetic", "--sample", "0.1", "--json"], capsys, deployment="llama-3.1-70b-h100")
    assert status == 0, err
    rep = json.loads(out)
    se = rep["sample_error"]
    assert se["rate"] == 0.1 and set(se["traces"]) == {"conversation", "synthetic"}
    # the largest of each figure's error is the larger of the two traces'
    for k, v in se["largest"].items():
        assert v == max(t[k] for t in se["traces"].values())
    # the synthetic trace's own row is its sampled report against its exact one: the tier sizes, by hand from the
    # two runs' tiers (kvtier.formulas.cache.report.figure_errors takes the largest relative gap over the tiers)
    _, exact_out, _ = cli(["synthetic", "--json"], capsys, deployment="llama-3.1-70b-h100")
    exact = json.loads(exact_out)
    gaps = [
        abs(t["capacity_blocks"] / e["capacity_blocks"] - 1) for t, e in zip(rep["tiers"], exact["tiers"], strict=True)
    ]
    assert se["traces"]["synthetic"]["capacity_rel"] == pytest.approx(max(gaps), rel=1e-12)
    # and in words, one line a figure; the prefix property is not stated of a sample
    _, text, _ = cli(["synthetic", "--sample", "0.1"], capsys, deployment="llama-3.1-70b-h100")
    assert "tier sizes within" in text and "prefill saved per second within" in text
    assert "prefix property: not checked on a sample" in text


def test_over_time_refuses_a_sample(capsys):
    status, out, err = cli(["synthetic", "--sample", "0.1", "--over-time", "100"], capsys)
    assert status == 2 and out == ""
    assert "--over-time replays every block" in err


def _split_trace(tmp_path, n_requests: int) -> tuple:
    """A generated trace written whole and as two files of its halves: ``(whole, parts directory)``."""
    t = traces.generate_trace(n_requests, seed=4, n_prefixes=30, new_blocks=(1, 6))
    lines = list(traces.to_jsonl(t))
    parts = tmp_path / "parts"
    parts.mkdir()
    half = n_requests // 2
    (parts / "p0.jsonl").write_text("\n".join(lines[:half]) + "\n")
    (parts / "p1.jsonl").write_text("\n".join(lines[half:]) + "\n")
    whole = tmp_path / "whole.jsonl"
    whole.write_text("\n".join(lines) + "\n")
    return whole, parts


def test_windows_report_the_traces_blocks_from_the_single_pass(tmp_path):
    # issue 43: --parts --window printed the windows' "unique" (the most one window held: 5,046 of 54,559
    # references) beside their infinite cache's 6.1 %, a pair no trace has; the blocks line is the trace's, seen in
    # one pass, and the windows' own infinite cache is said beside their gap
    pytest.importorskip("distributed")
    whole, parts = _split_trace(tmp_path, 400)
    single = json.loads(run_cli("workload", str(whole), "--json").stdout)
    proc = run_cli("workload", str(parts), "--parts", "--workers", "1", "--window", "20", "--json")
    rep = json.loads(proc.stdout)
    # the trace's own figures: those of one pass over the whole file
    for key in ("references", "unique", "hit_ratio_infinite_blocks", "reuse_interval_s"):
        assert rep["blocks"][key] == single["blocks"][key], key
    # the windows forget what lies before each (no warm-up): their infinite cache hits less than the single pass's
    assert rep["parts"]["windowed_hit_ratio_infinite_blocks"] < rep["blocks"]["hit_ratio_infinite_blocks"]
    text = run_cli("workload", str(parts), "--parts", "--workers", "1", "--window", "20").stdout
    assert "the tiers below are the windows' curve, each window a cache of its own" in text


def test_a_sampled_run_on_parts_says_how_good_its_estimates_are(tmp_path):
    # issue 43: with --parts a sampled run dropped the caveat the one-file run prints (the shipped traces' errors
    # sampled alike); both runs carry the same one, measured on the shipped traces at the same rate
    pytest.importorskip("distributed")
    whole, parts = _split_trace(tmp_path, 300)
    one = json.loads(run_cli("workload", str(whole), "--sample", "0.5", "--json").stdout)
    split = json.loads(run_cli("workload", str(parts), "--parts", "--workers", "1", "--sample", "0.5", "--json").stdout)
    assert split["sample_error"] == one["sample_error"] and one["sample_error"]["rate"] == 0.5
    text = run_cli("workload", str(parts), "--parts", "--workers", "1", "--sample", "0.5").stdout
    assert "the sampled figures are estimates; sampled alike, the shipped traces (conversation, synthetic)" in text


def test_one_request_is_one_request_in_the_prefix_line(tmp_path):
    # issue 43: "1 of 1 requests have stack distances"
    trace = tmp_path / "one.jsonl"
    trace.write_text('{"timestamp": 0, "input_length": 512, "output_length": 1, "hash_ids": [1]}\n')
    out = run_cli("workload", str(trace)).stdout
    assert "prefix property: 1 of 1 request has stack distances that never fall along the prompt" in out


def test_a_sampled_blocks_line_says_its_figures_are_two_estimates():
    # second round: "54,559 references, 38,819 unique; an infinite cache hits 29.3 %" read as 1 - 38,819 / 54,559
    # (28.85 %); sampled, the distinct blocks and the infinite cache are separate estimates, and the line says so
    out = run_cli("workload", "conversation", "--sample", "0.5").stdout
    assert "; estimated from the sample, about " in out and "(two estimates, not one from the other)" in out
    assert "unique; an infinite cache hits" not in out
