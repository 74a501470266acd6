"""The words about a scenario (kvtier.report.words): the device, the brackets' hardware, the host link."""

from __future__ import annotations

from kvtier.inputs.assumptions import load_assumptions
from kvtier.report import words
from kvtier.scenario import Scenario


def test_the_lone_device_is_named_when_a_preset_matches_and_described_when_none_does():
    # the seed's 500 TFLOP/s and 3.35 TB/s are the chapter-implied preset; 80 % is regen.mem_efficiency
    assert words.lone_device(Scenario()) == (
        "the source chapter's unnamed accelerator, 500 TFLOP/s and 3.35 TB/s at 80 % memory efficiency"
    )
    # 123 TFLOP/s is no preset's peak: the numbers alone
    other = Scenario(load_assumptions(sets={"peak_flops": "123TFLOP/s"}))
    assert words.lone_device(other) == "a device of 123 TFLOP/s and 3.35 TB/s at 80 % memory efficiency"


def test_a_bracket_is_named_by_the_links_at_its_rate():
    s = Scenario()
    # 32 GB/s = 32 GT/s x 8 lanes / 8 bits: the raw rate of CXL 2.0 x8
    assert words.bracket_hardware(s, "pessimistic") == "the raw rate of CXL 2.0 x8"
    # 45 GB/s is no link's rate, net or raw
    assert words.bracket_hardware(Scenario(load_assumptions(sets={"bandwidth.mid": "45GB/s"})), "mid") == ""


def test_the_host_link_note_and_the_realistic_note_follow_the_brackets():
    s = Scenario()
    # 121 GB/s is above the 64 GB/s raw rate of PCIe 5.0 x16 (55.3 GB/s measured on an H200)
    assert words.host_link_note(s).endswith(
        "So 121 GB/s, the optimistic bracket, needs PCIe 6.0 from the memory to the accelerator, end to end."
    )
    assert words.realistic_note(s).startswith("The pessimistic bracket is no pessimistic tail")
    # a 20 GB/s floor is no CXL 2.0 x8 rate (31.5 net, 32 raw): no note
    assert words.realistic_note(Scenario(load_assumptions(sets={"bandwidth.pessimistic": "20GB/s"}))) == ""


def test_why_a_trace_has_nothing_to_cache_or_no_rate():
    assert words.nothing_to_cache(0, 0.0) == "no prompt holds a block, every input_length being 0"
    assert words.nothing_to_cache(12, 0.0) == "no block is referenced twice"
    assert words.nothing_to_cache(12, 0.25) is None  # a quarter of the references hit: something to cache
    assert words.no_duration(5, 0.001) is None  # 1 ms is a duration
    assert words.no_duration(1, 0.0) == "the trace holds one request: it lasts 0 s and has no rate per second"
    assert words.no_duration(1200, 0.0) == (
        "all 1,200 requests share one timestamp: the trace lasts 0 s and has no rate per second"
    )


def test_the_context_note_says_whether_a_position_fits_the_window():
    s = Scenario()  # llama-3-70b: max_position_embeddings 8,192
    assert words.context_note(s, 50_000) == "past the 8,192-position context window of llama-3-70b"
    assert words.context_note(s, 8_192) == "within the 8,192-position context window of llama-3-70b"
    assert words.context_note(s, 8_193) == "past the 8,192-position context window of llama-3-70b"
    # Llama-3.1-70B: the same geometry with a 131,072-position window holds 50,000 positions
    long = Scenario(load_assumptions(sets={"model": "llama-3.1-70b"}))
    assert words.context_note(long, 50_000) == "within the 131,072-position context window of llama-3.1-70b"


def test_a_list_in_words_and_a_capital_first_letter():
    assert words.listed([]) == ""
    assert words.listed(["HBM"]) == "HBM"
    assert words.listed(["HBM", "host DRAM"]) == "HBM and host DRAM"
    # any iterable, a generator included; no Oxford comma
    assert words.listed(t for t in ("HBM", "host DRAM", "NVMe")) == "HBM, host DRAM and NVMe"
    # only the first letter changes: str.capitalize would lower the rest ("Cxl expander")
    assert words.capitalized("the CXL expander") == "The CXL expander"
    assert words.capitalized("") == ""


def test_the_copy_method_sentence_names_the_method_each_verdict_assumes() -> None:
    from kvtier import Scenario, load_assumptions
    from kvtier.report.words import copy_method_sentence

    # the seed: no copy method, the per-transfer latency (0 us, fetch_latency) each transfer; the ladder's 160 chunk
    # copies (80 layers x K, V)
    seed = copy_method_sentence(Scenario())
    assert "each of the 160 chunk copies the tier's own per-copy latency" in seed
    assert seed.endswith(
        "This set names no copy method (engine none), so a fetch at the bracket bandwidths pays"
        " the set's per-transfer latency, 0 µs, each transfer."
    )
    # vLLM >= 0.12: one cross-layer copy issued back to back at 3.53 us (fetch.copy_cost.batched_dma)
    vllm = copy_method_sentence(Scenario(load_assumptions(sets={"engine": "vllm"})))
    assert "Under engine vllm (>= 0.12) a llama-3-70b block moves in 1 copy, issued as batched-dma at 3.53 µs" in vllm
    # SGLang on DeepSeek-V3 (MLA, 61 layers): 61 chunk copies, 61 kernel launches of 0.5 us
    mla = copy_method_sentence(Scenario(load_assumptions(sets={"engine": "sglang", "model": "deepseek-v3"})))
    assert "each of the 61 chunk copies" in mla and "moves in 61 copies, each issued as kernel at 0.5 µs" in mla


def test_how_a_recomputed_prefix_is_priced_follows_the_regeneration_model() -> None:
    # the seed: 25 % (illustrative.mfu conservative) of the implied 500 TFLOP/s, the roofline alone
    seed = words.regen_pricing(Scenario(load_assumptions()))
    assert seed["pricing"] == "at 25 % MFU of 500 TFLOP/s"
    assert seed["batch_how"] == "marginal compute"
    assert seed["lone_how"] == "roofline on " + words.lone_device(Scenario(load_assumptions()))
    engine = words.regen_pricing(Scenario(load_assumptions(sets={"regen.model": "engine"})))
    assert engine == {
        "pricing": "with the kernels NVIDIA measured for vllm 0.24.0 on h200_sxm (aiconfigurator-core 0.12.0;"
        " the engine regeneration model)",
        "batch_how": "its share of a step of 8,192 tokens",  # regen.step_tokens
        "lone_how": "its own pass on those kernels",
    }


def test_the_window_sentence_says_how_much_of_the_trace_the_model_cannot_hold() -> None:
    from kvtier import Scenario, load_assumptions

    # the conversation trace: 5,411 of 12,031 prompts longer than Llama-3-70B's 8,192 positions = 45.0 %, with
    # 122,643,880 of its 144,793,823 prompt tokens = 84.7 %; the longest, 126,195 tokens, fits Llama-3.1-70B's 131,072
    seed = words.window_sentence(Scenario(), "this build's row")
    assert seed.startswith(
        "45.0 % of the trace's prompts, with 84.7 % of its prompt tokens, are longer than llama-3-70b's 8,192-token"
        " window: this build's row sizes and prices their blocks"
    )
    assert seed.endswith("llama-3.1-70b, with the same KV per token and a 131,072-token window, holds them all.")
    # Llama-3.1-70B itself holds every prompt; a model of other shapes is not offered as the same
    assert words.window_sentence(
        Scenario(load_assumptions(sets={"model": "llama-3.1-70b", "param_count": "null"}))
    ) == ("Every prompt of the trace fits llama-3.1-70b's 131,072-token window.")
    mixtral = words.window_sentence(Scenario(load_assumptions(sets={"model": "mixtral-8x7b", "param_count": "null"})))
    assert "longer than mixtral-8x7b's 32,768-token window" in mixtral and "llama-3.1-70b" not in mixtral


def test_the_priced_sentence_names_the_deployment_and_what_of_it_is_the_build_s() -> None:
    from kvtier import analysis

    def sentence(**sets: str) -> str:
        return words.priced_sentence(analysis.priced(Scenario(load_assumptions(sets=sets))))

    assert sentence() == (
        "Priced for Llama-3.1-70B on 4 H100 SXM (TP 4), vLLM, a named deployment: its model, placement, engine and"
        " accelerator (its hour, memory and power) replace the source chapter's."
    )
    # the peak the deployment's own (989 TFLOP/s) is not the build's own input; TP 8 is
    assert sentence(peak_flops="989TFLOP/s") == sentence()
    assert sentence(**{"parallel.tp": "8"}) == (
        "Priced for the named deployment Llama-3.1-70B on 4 H100 SXM (TP 4), vLLM with this build's own placement:"
        " llama-3.1-70b on 8 accelerators (tensor-parallel 8), 2 sharing each link."
    )
    assert sentence(model="llama-3-8b") == (
        "Priced for this build's own set, llama-3-8b on one accelerator with its own link: it names its own model, so"
        " the named deployment Llama-3.1-70B on 4 H100 SXM (TP 4), vLLM, chosen for another, is left out."
    )
    assert sentence(**{"workload.deployment": "build"}) == (
        "Priced for this build's own set: llama-3-70b on one accelerator with its own link."
    )


def test_the_landing_names_the_row_the_trace_pages_derive() -> None:
    assert words.trace_pages_row(Scenario()) == "the row of Llama-3.1-70B on 4 H100 SXM (TP 4), vLLM"
    other = Scenario(load_assumptions(sets={"workload.deployment": "llama-3.1-70b-h200"}))
    assert words.trace_pages_row(other) == "the row of Llama-3.1-70B on 2 H200 SXM (TP 2), vLLM"
    for sets in ({"workload.deployment": "build"}, {"model": "llama-3-8b"}):
        assert words.trace_pages_row(Scenario(load_assumptions(sets=sets))) == "this build's row"


def test_a_negative_saving_is_worded_as_a_loss():
    # issue 43: "saves -0.0159 USD/h" read as a saving; below zero it is a loss of the same amount
    assert words.saves(1.234, "USD/h") == "saves 1.23 USD/h"
    assert words.saves(-0.0159, "USD/h") == "loses 0.0159 USD/h"
    assert words.saves(0.0, "USD an hour") == "saves 0 USD an hour"


def test_a_range_of_savings_across_zero_says_both_ends():
    # issue 43: "saves -1.23 to 1.24 USD/h per accelerator" across the named deployments
    assert words.saves_span(0.5, 1.24, "USD/h") == "saves 0.50 to 1.24 USD/h"
    assert words.saves_span(-1.23, -0.5, "USD/h") == "loses 0.50 to 1.23 USD/h"
    assert words.saves_span(-1.23, 1.24, "USD/h") == "ranges from losing 1.23 to saving 1.24 USD/h"
    assert words.saves_span(2.0, 2.001, "USD/h") == "saves 2.00 USD/h"  # both ends print alike: one figure


def test_ratios_are_never_rounded_to_zero_and_say_which_side_is_faster():
    # issue 43: with every link at 100 MB/s the findings read "0× to 0× faster"; below 1 the other side is faster
    assert words.times(1234.4) == "1,234×" and words.times(3.44) == "3.4×" and words.times(0.0449) == "0.045×"
    assert words.faster(120.0, 3400.0, "fetching", "regenerating") == "fetching is 120× to 3,400× faster"
    # fetching 0.02 to 0.5 of regenerating's speed: regenerating is 1/0.5 = 2 to 1/0.02 = 50 times faster
    assert words.faster(0.02, 0.5, "fetching", "regenerating") == "regenerating is 2.0× to 50× faster than fetching"
    assert words.faster(0.5, 40.0, "fetching", "regenerating") == "fetching ranges from 2.0× slower to 40× faster"
    assert words.faster(7.0, 7.01, "fetching", "regenerating") == "fetching is 7.0× faster"


def test_a_net_saving_below_zero_is_a_loss_and_never_minus_zero():
    # issue 43: "nets -0.00 dollars an hour ... and -0.37 as one pool: a tier in each node's DRAM pays more"
    assert words.nets(1.234) == "nets 1.23 dollars an hour"
    assert words.nets(-0.37) == "loses 0.37 dollars an hour"
    assert words.nets(-0.004) == "nets 0.00 dollars an hour"  # rounds to nothing: neither "-0.00" nor a loss
    assert words.nets(-0.68, unit="") == "loses 0.68"
    # which of two nets is better: of two losses, the smaller loss, said as one
    assert words.which_pays(2.0, 1.0, "the pool", "a tier on each node") == "the pool saves more"
    assert words.which_pays(-0.37, -0.004, "the pool", "a tier on each node") == (
        "neither pays: a tier on each node loses less"
    )


def test_a_wear_out_under_a_day_is_said_in_its_own_unit():
    # issue 43: "flash of its own size would wear out in 0.0 days"; 12.2 days stays in days
    assert words.days(12.2 * 86400) == "12.2 days"
    assert words.days(2.4 * 3600) == "2.40 h"
    assert words.days(90.0) == "1.50 min"
