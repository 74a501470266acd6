"""NVIDIA's measured kernel tables through aiconfigurator-core's estimator (:mod:`kvtier.inputs.kernels`).

The expected latencies are the estimator's over the tables of aiconfigurator-core 0.12.0 (the version
pyproject.toml pins a range around): measured by NVIDIA, not derivable by hand.  What is checked by hand
is what kvtier adds: the table set it picks, its grid and provenance, the refusals, and that the numbers sit
where physics puts them (above the time the accelerator's datasheet peaks allow).
"""

from __future__ import annotations

import json
import re
from importlib import metadata

import pytest

from kvtier.errors import KvtierError
from kvtier.inputs import kernels
from tests.conftest import ROOT

PINNED = metadata.version("aiconfigurator-core") == "0.12.0"
"""The pinned latencies below are those of 0.12.0's tables; another release is checked for its shape only."""


def llama(name: str = "llama-3-8b") -> dict:
    return json.loads((ROOT / "kvtier" / "data" / "models" / f"{name}.json").read_text())


def test_the_newest_table_set_its_grid_and_its_files():
    t = kernels.tables("h200_sxm", "vllm")
    assert (t.system, t.engine) == ("h200_sxm", "vllm")
    assert t.version == kernels.versions("h200_sxm", "vllm")[-1]
    if PINNED:
        # 0.12.0 ships one vLLM version for the H200, measured to 16,384-token sequences, 256 of them, 32,768-row GEMMs
        assert t.version == "0.24.0"
        assert (t.max_sequence_tokens, t.max_batch, t.max_gemm_tokens) == (16_384, 256, 32_768)
    paths = [path for path, _ in t.files]
    assert paths == [
        f"systems/data/h200_sxm/gemm/vllm/{t.version}/gemm_perf.parquet",
        f"systems/data/h200_sxm/attention/vllm/{t.version}/context_attention_perf.parquet",
    ]
    assert all(len(digest) == 64 and int(digest, 16) >= 0 for _, digest in t.files)
    rec = t.record
    assert rec.key == "regen.kernel_tables" and rec.provenance == "measured"
    assert rec.text == f"aiconfigurator-core {t.package_version}: h200_sxm vllm {t.version}"
    assert paths[0] in rec.source and "refused outside it" in rec.basis


def test_versions_sort_as_versions_not_as_text():
    # "0.5.6.post2" sorts after "0.5.14" as text; as a version it comes first
    assert kernels._version_key("0.5.6.post2") < kernels._version_key("0.5.14")
    assert kernels._version_key("1.3.0rc20") < kernels._version_key("1.3.0")


@pytest.mark.parametrize(
    ("call", "needle"),
    [
        (lambda: kernels.tables("h300", "vllm"), "key 'regen.system': 'h300' is not one of a100_sxm, h100_sxm"),
        (lambda: kernels.tables("h200_sxm", "tgi"), "key 'regen.engine': 'tgi' is not one of vllm, sglang, trtllm"),
        (lambda: kernels.tables("h200_sxm", "vllm", "0.1"), "has no vllm 0.1 tables for h200_sxm; it has "),
        (lambda: kernels.tables("b60", "sglang"), "has no sglang tables for b60 (systems with sglang tables: "),
    ],
)
def test_a_table_set_the_package_lacks_is_refused_in_one_line(call, needle):
    with pytest.raises(KvtierError) as err:
        call()
    assert needle in str(err.value) and "\n" not in str(err.value)


def test_a_pass_sums_its_operations_and_sits_above_the_peak_bound():
    est = kernels.estimator(llama(), "llama-3-8b", kernels.tables("h200_sxm", "vllm"))
    whole = est.pass_ms(1, 4096, 0)
    ops = est.op_ms(1, 4096, 0)
    # the estimator's step is the sum of its operations
    assert sum(ops.values()) == pytest.approx(whole, rel=1e-9)
    assert {"context_qkv_gemm", "context_attention", "context_gate_ffn1_gemm"} <= set(ops)
    # 4,096 tokens x 2 x 8,030,261,248 parameters = 6.578e13 FLOP at the H200's 989e12 FLOP/s: 66.5 ms at least
    assert whole > 4096 * 2 * 8_030_261_248 / 989e12 * 1e3
    if PINNED:
        assert whole == pytest.approx(92.8253, rel=1e-5)  # about 87 ms by the issue's own composition of the tables
        assert est.pass_ms(1, 16, 0) == pytest.approx(5.5717, rel=1e-4)


def test_a_cached_prefix_is_not_recomputed():
    est = kernels.estimator(llama(), "llama-3-8b", kernels.tables("h200_sxm", "vllm"))
    # 512 new tokens after 3,584 cached cost a fraction of the 4,096-token prefill, more than 16 new tokens
    whole, tail, block = est.pass_ms(1, 4096, 0), est.pass_ms(1, 4096, 3584), est.pass_ms(1, 4096, 4080)
    assert block < tail < whole / 4


@pytest.mark.parametrize(
    ("batch", "sequence", "cached", "needle"),
    [
        (1, 16_385, 0, "a sequence of 16,385 tokens (context attention measured to 16,384)"),
        (257, 32, 16, "257 sequences in one pass (context attention measured to 256)"),
        (3, 11_000, 0, "33,000 tokens in one pass (GEMMs measured to 32,768 rows)"),
    ],
)
def test_a_pass_outside_the_measured_grid_is_refused(batch, sequence, cached, needle):
    if not PINNED:
        pytest.skip("the grid of another release")
    est = kernels.estimator(llama(), "llama-3-8b", kernels.tables("h200_sxm", "vllm"))
    with pytest.raises(KvtierError) as err:
        est.pass_ms(batch, sequence, cached)
    assert str(err.value) == (
        f"regen.model engine: {needle} is outside the measured grid of h200_sxm vllm 0.24.0"
        " (aiconfigurator-core 0.12.0); regen.beyond_grid=extrapolate (--beyond-grid extrapolate) times it by the"
        " package's extrapolation"
    )
    # extrapolate: the same pass is timed, and crossed() names the same bound
    assert est.crossed(batch, sequence, sequence - cached) == needle
    assert est.pass_ms(batch, sequence, cached, extrapolate=True) > 0


def test_beyond_the_grid_attention_grows_as_the_square_of_the_sequence():
    # the package's extrapolation, as the seed's regen.beyond_grid basis describes it: doubling a sequence past the
    # 16,384-token grid multiplies context attention by (32,768 / 16,384)^2 = 4, the FLOPs' form (within 5 %)
    est = kernels.estimator(llama(), "llama-3-8b", kernels.tables("h200_sxm", "vllm"))
    at = {n: est.op_ms(1, n, 0, extrapolate=True)["context_attention"] for n in (16_384, 32_768, 65_536)}
    assert at[32_768] / at[16_384] == pytest.approx(4.0, rel=0.05)
    assert at[65_536] / at[32_768] == pytest.approx(4.0, rel=0.05)
    assert est.crossed(1, 16_384, 16_384) == ""  # the grid's last sequence is inside it


def test_what_the_estimator_cannot_time_is_one_line():
    t = kernels.tables("h200_sxm", "vllm")
    with pytest.raises(KvtierError, match=r"^key 'kv_dtype': the engine model times bf16, fp16, fp8 KV caches"):
        kernels.estimator(llama(), "x", t, kv_dtype="fp32")
    with pytest.raises(
        KvtierError, match=r"^key 'parallel.ep': the engine model needs ep \(3\) and tp \(4\) to divide"
    ):
        kernels.estimator(llama(), "x", t, tp=4, ep=3)
    # an architecture it has no model of: named, with the ones the engine model times, in one line
    falcon = {**llama(), "architectures": ["FalconForCausalLM"]}
    with pytest.raises(KvtierError) as err:
        kernels.estimator(falcon, "falcon", t)
    text = str(err.value)
    assert (
        text.startswith("model falcon: the engine model cannot time FalconForCausalLM: aiconfigurator-core")
        and "has no model of it; it times " in text
    )
    assert "\n" not in text and "LlamaForCausalLM, " in text and "Phi3ForCausalLM" in text


def config(name: str) -> dict:
    """A published config.json under tests/inputs/configs (copied from the Hugging Face hub's)."""
    return json.loads((ROOT / "tests" / "inputs" / "configs" / f"{name}.json").read_text())


@pytest.mark.parametrize(
    ("name", "needle"),
    [
        # the estimator has no model of these: named, with the list of what it times (not the estimator's own words)
        ("gemma-2-9b", "the engine model cannot time Gemma2ForCausalLM: aiconfigurator-core"),
        ("gemma-3-1b", "the engine model cannot time Gemma3ForCausalLM: aiconfigurator-core"),
        ("gemma-3-27b", "the engine model cannot time Gemma3ForConditionalGeneration: aiconfigurator-core"),
        ("deepseek-v2-lite", "the engine model cannot time DeepseekV2ForCausalLM: aiconfigurator-core"),
        ("falcon-7b", "the engine model cannot time FalconForCausalLM: aiconfigurator-core"),
        # it has a model, but one that would leave out what the config has: Qwen2-MoE's shared expert
        (
            "qwen2-57b-a14b",
            "the engine model cannot time Qwen2MoeForCausalLM: its shared expert (shared_expert_intermediate_size"
            " 20480) is left out by aiconfigurator-core's MoE model",
        ),
    ],
)
def test_an_architecture_the_estimator_cannot_time_is_refused_in_one_line(name, needle):
    with pytest.raises(KvtierError) as err:
        kernels.engine_config(config(name), name)
    assert str(err.value).startswith(f"model {name}: {needle}") and "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("fields", "needle"),
    [
        # Qwen3-MoE with dense layers among its MoE ones: the estimator makes every layer MoE
        ({"mlp_only_layers": [0, 1]}, "dense layers among its MoE layers (mlp_only_layers [0, 1]"),
        ({"decoder_sparse_step": 2}, "decoder_sparse_step 2) are not modelled"),
    ],
)
def test_moe_layers_the_estimator_would_time_as_moe_are_refused(fields, needle):
    with pytest.raises(KvtierError, match=re.escape(needle)):
        kernels.engine_config({**config("qwen3-30b-a3b"), **fields}, "q")


def test_a_deepseek_config_with_other_mla_sizes_is_refused_not_timed_as_v3():
    # aiconfigurator-core's DeepSeek model builds q_lora_rank 1536, kv_lora_rank 512 and one shared expert whatever
    # the config says; DeepSeek-V3's own config passes, one with a smaller latent is refused naming the field
    assert kernels.engine_config(config("deepseek-v3"), "v3") == (config("deepseek-v3"), "")
    with pytest.raises(KvtierError) as err:
        kernels.engine_config({**config("deepseek-v3"), "kv_lora_rank": 256, "n_shared_experts": 2}, "small")
    assert str(err.value) == (
        "model small: the engine model cannot time DeepseekV3ForCausalLM: aiconfigurator-core's DeepSeek model builds"
        " DeepSeek-V3's attention and shared expert, and this config's differ: kv_lora_rank 256 (not 512),"
        " n_shared_experts 2 (not 1)"
    )


def test_a_config_naming_no_architecture_is_refused_in_one_line():
    fields = {k: v for k, v in llama().items() if k != "architectures"}
    with pytest.raises(KvtierError, match=r"^model x: its config.json names no architecture \(field 'architectures'\)"):
        kernels.engine_config(fields, "x")


@pytest.mark.parametrize(
    ("name", "said", "tp", "floor_ms"),
    [
        # Phi-4 on 8 accelerators (its 10 KV heads on one are not in the attention table: refused below): per layer
        # attention 5120 x 5120 x 2 (q, o) + 2 x 5120 x 1280 (k, v; 10 KV heads of 128) = 65,536,000, MLP
        # 3 x 5120 x 17920 = 275,251,200, norms 10,240: 340,797,440 x 40 layers = 13,631,897,600 weights;
        # 2 x 13,631,897,600 x 4,096 tokens / 8 accelerators = 1.3959e13 FLOP each / 989e12 FLOP/s = 14.11 ms
        ("phi-4", "Phi-3's fused QKV", 8, 14.11),
        # Gemma-7B: attention 4 x 3072 x 4096 (16 heads of 256, as many KV heads) = 50,331,648, GeGLU MLP
        # 3 x 3072 x 24576 = 226,492,416, norms 6,144: 276,830,208 x 28 layers = 7,751,245,824 weights;
        # 2 x 7,751,245,824 x 4,096 / 989e12 = 64.20 ms
        ("gemma-7b", "Gemma's GeGLU MLP", 1, 64.20),
    ],
)
def test_phi3_and_gemma_are_timed_as_llama_whose_layers_they_share_and_say_so(name, said, tp, floor_ms):
    t = kernels.tables("h200_sxm", "vllm")
    est = kernels.estimator(config(name), name, t, tp=tp)
    assert est.timed_as.startswith("timed as LlamaForCausalLM, whose layers it shares") and said in est.timed_as
    as_llama = {**config(name), "architectures": ["LlamaForCausalLM"]}
    ms = est.pass_ms(1, 4096, 0)
    assert ms == kernels.estimator(as_llama, "l", t, tp=tp).pass_ms(1, 4096, 0)
    # above what the H200's dense bf16 peak (989 TFLOP/s) allows for the layers' weights, and not far above it
    assert floor_ms < ms < 5 * floor_ms
    if name == "phi-4":
        with pytest.raises(KvtierError, match=r"context attention data missing .* n_kv_lookup: 10, head_size: 128"):
            kernels.estimator(config(name), name, t).pass_ms(1, 4096, 0)


def test_a_missing_table_is_one_line_without_the_packages_path():
    # SGLang's H200 tables have no context attention over an fp8 KV cache: the estimator's message names the key,
    # then the path of the table it looked in and the kernels it tried; kvtier keeps the key only
    t = kernels.tables("h200_sxm", "sglang")
    with pytest.raises(KvtierError) as err:
        kernels.estimator(llama(), "x", t, kv_dtype="fp8").pass_ms(1, 4096, 0)
    text = str(err.value)
    assert text.startswith("regen.model engine: aiconfigurator-core cannot time the pass on h200_sxm sglang")
    assert "context attention data missing" in text and 'kv_quant: "fp8"' in text
    assert " at /" not in text and "lane_order" not in text and "\n" not in text


def test_mistral_is_timed_as_llama_and_says_so():
    t = kernels.tables("h200_sxm", "vllm")
    mistral = kernels.estimator(llama("mistral-7b"), "mistral-7b", t)
    assert mistral.timed_as.startswith("timed as LlamaForCausalLM") and "sliding attention window" in mistral.timed_as
    # the same layers under Llama's name time the same
    as_llama = {**llama("mistral-7b"), "architectures": ["LlamaForCausalLM"]}
    assert mistral.pass_ms(1, 1024, 0) == kernels.estimator(as_llama, "m", t).pass_ms(1, 1024, 0)
    assert kernels.estimator(llama(), "llama-3-8b", t).timed_as == ""


def test_tensor_parallelism_shortens_the_pass():
    t = kernels.tables("h200_sxm", "vllm")
    one = kernels.estimator(llama(), "llama-3-8b", t).pass_ms(1, 4096, 0)
    two = kernels.estimator(llama(), "llama-3-8b", t, tp=2).pass_ms(1, 4096, 0)
    # half the GEMM work per GPU plus two all-reduces a layer: faster than one GPU, slower than half of it
    assert one / 2 < two < one


def test_a_presets_config_and_a_users_file_read_the_same(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(llama()))
    assert kernels.model_config(str(path)) == kernels.model_config("llama-3-8b") == llama()


def test_weights_are_timed_in_their_dtype_where_the_tables_have_it():
    t = kernels.tables("h200_sxm", "vllm")
    bf16 = kernels.estimator(llama(), "llama-3-8b", t).pass_ms(1, 16, 0)
    fp8 = kernels.estimator(llama(), "llama-3-8b", t, weight_dtype="fp8").pass_ms(1, 16, 0)
    # a lone 16-token pass streams the weights: fp8 reads half the bytes of bf16, so it is faster, not twice as fast
    assert bf16 / 2 < fp8 < bf16
    if PINNED:
        assert t.gemm_modes == ("bfloat16", "fp8", "fp8_block")
        with pytest.raises(KvtierError) as err:
            kernels.estimator(llama(), "x", t, weight_dtype="int4")
        assert str(err.value) == (
            "key 'weight_dtype': h200_sxm vllm 0.24.0 has GEMM tables for bfloat16, fp8, fp8_block, not int4 (int4_wo)"
        )
