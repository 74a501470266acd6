"""The in-browser calculator: its data (kvtier/pipeline/calculator.py) and, in headless Chromium, its answers.

The browser tests load the calculator's three scripts (``book/_static/``) in a bare page beside the data the
build writes, set random inputs as a reader would, read what the page shows and hold every number to the
package's: ``kvtier compare --json`` run in-process (the same parser and code as the command) for the
fetch, both regimes' regeneration, the ratio and the break-even bandwidth; ``transfer.break_even_latency``
(less a copy's overhead) for the break-even latency; :class:`kvtier.deployment.Deployment` for the tier
ladder. The inputs the package is run with are read from the ``kvtier build --set ...`` command the
calculator prints, so the command is proved to rebuild the book with the values typed (and to pass the
build's whole-set checks).
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import random
import re
import shlex
import shutil
from pathlib import Path

import numpy as np
import pytest

from kvtier.commands import main
from kvtier.deployment import Deployment
from kvtier.errors import KvtierError
from kvtier.formulas import transfer
from kvtier.inputs import hardware
from kvtier.inputs.assumptions import check_consistency, load_assumptions, parse_set_options, seed
from kvtier.pipeline import calculator
from kvtier.scenario import Scenario
from tests.conftest import ROOT

STATIC = ROOT / "book" / "_static"
CHROMIUM = Path("/usr/bin/chromium")
SCRIPTS = ("kvtier-presets.js", "kvtier-formulas.js", "kvtier-calculator.js")
REL = 1e-9


# ---------------------------------------------------------------------------
# the data the build exports
# ---------------------------------------------------------------------------


def test_the_committed_presets_are_the_seed_sets():
    # a plain `jupyter-book build` ships book/_static/kvtier-presets.js; `kvtier build` writes its own set's
    # after a change to the seed set or the presets: .venv/bin/python -m kvtier.pipeline.calculator
    assert (STATIC / calculator.FILE).read_text(encoding="utf-8") == calculator.presets_js(seed())


def test_the_presets_carry_the_seed_values_and_the_model_counts():
    data = calculator.presets(seed())
    k = data["keys"]
    assert k["bandwidth.mid"]["value"] == 64e9 and k["bandwidth.mid"]["text"] == "64 GB/s"
    assert k["mfu.conservative"]["value"] == 0.25 and k["illustrative.mfu"]["value"] == "conservative"
    assert k["param_count"]["value"] == 70e9  # the chapter's nominal 70 B (implied)
    assert k["parallel.hbm_capacity"]["value"] is None
    # the trace's tier: 31,589 blocks of 512 tokens for 90 % of the achievable hits (x 327,680 B = 4,935.8 GiB,
    # the cost page's 4.82 TiB), held at the cost page's prices per byte-second
    trace = data["trace"]
    assert (trace["name"], trace["block_tokens"], trace["hit_target"], trace["capacity_blocks"]) == (
        "conversation",
        512,
        0.9,
        31_589,
    )
    assert set(trace["hold_usd_per_byte_s"]) == {"dram", "cxl", "nvme"}
    # bounds in SI from kvtier.units.LIMITS: bandwidth 1 kB/s to 1 PB/s; tp 1 to 1024
    assert (k["bandwidth.mid"]["low"], k["bandwidth.mid"]["high"]) == (1e3, 1e15)
    assert (k["parallel.tp"]["low"], k["parallel.tp"]["high"]) == (1.0, 1024.0)
    m = data["models"]["llama-3-70b"]
    # 2 (K, V) x 80 layers x 8 KV heads x 128 head dim = 163,840 elements; x 2 B (bf16) = 320 KiB per token
    assert m["kv_elements_per_token"] == 2 * 80 * 8 * 128
    assert (m["layers"], m["kv_heads"], m["max_positions"], m["mla"]) == (80, 8, 8192, False)
    ds = data["models"]["deepseek-v3"]
    # MLA: 61 layers x (512 latent + 64 rope) = 35,136 elements; 256 routed experts, 8 a token, 58 MoE layers
    assert ds["kv_elements_per_token"] == 61 * (512 + 64) and ds["mla"]
    assert (ds["routed_experts"], ds["experts_per_token"], ds["moe_layers"]) == (256, 8, 58)
    assert [t["name"] for t in data["tiers"]] == list(Deployment.of(Scenario(seed())).tiers.names)


def test_the_accelerator_presets_carry_their_memory():
    # as `kvtier compare --accelerator` sets parallel.hbm_capacity: Accelerator.memory_bytes, None where none
    accs = calculator.presets(seed())["accelerators"]
    assert {n: a["memory"] for n, a in accs.items()} == {
        n: acc.memory_bytes for n, acc in hardware.load_accelerators().items()
    }
    # hardware.yaml: H200 141 GB of HBM3e, H100 SXM 80 GB of HBM3; the chapter's unnamed accelerator states none
    assert accs["h200"]["memory"] == 141e9 and accs["h100-sxm"]["memory"] == 80e9
    assert accs["chapter-implied"]["memory"] is None


def test_the_presets_follow_the_build_set():
    a = load_assumptions(sets={"bandwidth.mid": "100GB/s", "model": "llama-3-8b", "parallel.tp": "2"})
    k = calculator.presets(a)["keys"]
    assert k["bandwidth.mid"]["value"] == 100e9 and k["bandwidth.mid"]["seed_value"] == 64e9
    assert k["model"]["value"] == "llama-3-8b" and k["param_count"]["value"] is None  # follows the model
    assert k["parallel.tp"]["value"] == 2.0
    # deterministic: the same set, the same bytes
    assert calculator.presets_js(a) == calculator.presets_js(a)
    assert "NaN" not in calculator.presets_js(a) and "Infinity" not in calculator.presets_js(a)


def test_the_presets_carry_the_engine_models_curves_for_the_builds_model_and_placement():
    data = calculator.presets(seed())
    kernels_ = {(c["accelerator"], c["engine"]): c for c in data["engine_kernels"]}
    # six accelerator presets with tables (a100-sxm, h100-sxm, h200, b200, gb200, l40s) x vllm, sglang, trtllm
    assert len(kernels_) == 18 and data["engine_kernels_start"] is None  # the seed times regeneration by MFU
    h200 = kernels_[("h200", "vllm")]
    assert h200["for"] == {
        "model": "llama-3-70b",
        "tp": 1,
        "pp": 1,
        "ep": 1,
        "kv_dtype": "bf16",
        "weight_dtype": "bf16",
        "step_tokens": 8192,
    }
    # the build's 16-token block, exactly as the engine model times it: the estimator's pass of 16 tokens
    s = Scenario(load_assumptions(sets={"regen.model": "engine"}))
    assert h200["block"]["tokens"] == 16.0
    assert h200["block"]["lone"] == s.kernel_estimator.pass_ms(1, 16, 0) / 1e3
    assert h200["block"]["batch"] == float(s.in_batch_regen_s(0, "resident", 1.0))
    # and the curves RegenCosts holds, which prefill a prompt after a cached prefix (the split)
    rc = s.regen_costs()
    assert h200["tokens"] == list(rc.engine_tokens) and h200["linear"] == list(rc.engine_linear_s)
    assert h200["attention"] == list(rc.engine_attention_s) and h200["batch"] == list(rc.engine_batch_s)
    # the curves end at the grid: 16,384 tokens, or A100's vLLM GEMMs at 8,192 rows
    assert h200["tokens"][-1] == 16_384 and kernels_[("a100-sxm", "vllm")]["tokens"][-1] == 8192
    # a build under the engine model starts the calculator on its own tables
    built = calculator.presets(load_assumptions(sets={"regen.model": "engine", "regen.system": "h100_sxm"}))
    start = built["engine_kernels"][built["engine_kernels_start"]]
    assert (start["accelerator"], start["engine"]) == ("h100-sxm", "vllm")


# ---------------------------------------------------------------------------
# the calculator in a browser
# ---------------------------------------------------------------------------

PAGE = """<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="stylesheet" href="kvtier-calculator.css">
<script src="kvtier-presets.js"></script><script src="kvtier-formulas.js"></script>
<script src="kvtier-calculator.js"></script></head>
<body><main><h1>Calculator</h1><div id="kvtier-calculator" class="kvtier-calculator"></div></main></body></html>
"""

SET_FIELDS = """(values) => {
  const calc = document.querySelector("#kvtier-calculator");
  for (const [name, value] of values) {
    const input = calc.querySelector(`[name="${name}"]`);
    input.value = value;
    input.dispatchEvent(new Event(input.tagName === "SELECT" ? "change" : "input", {bubbles: true}));
  }
}"""

READ_OUTPUTS = """() => {
  const calc = document.querySelector("#kvtier-calculator");
  const out = {state: calc.dataset.state, values: {}, tiers: {}, messages: {}, text: calc.innerText};
  for (const dd of calc.querySelectorAll("[data-key][data-si]")) out.values[dd.dataset.key] = dd.dataset.si;
  for (const tr of calc.querySelectorAll("tr[data-tier]")) {
    const row = {fetch: tr.querySelector("td[data-si]:not([data-regime])").dataset.si};
    for (const td of tr.querySelectorAll("td[data-regime]")) row[td.dataset.regime] = [td.dataset.wins, td.dataset.si];
    out.tiers[tr.dataset.tier] = row;
  }
  out.words = {};
  for (const x of calc.querySelectorAll("[data-key][data-word]")) out.words[x.dataset.key] = x.dataset.word;
  for (const m of calc.querySelectorAll(".kvtier-calc-msg")) if (m.textContent) out.messages[m.id] = m.textContent;
  out.command = calc.querySelector("pre code").textContent;
  return out;
}"""


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """A bare page holding the calculator, its scripts and the seed's data."""
    d = tmp_path_factory.mktemp("calculator")
    for name in (*SCRIPTS, "kvtier-calculator.css"):
        shutil.copy2(STATIC / name, d / name)
    (d / calculator.FILE).write_text(calculator.presets_js(seed()), encoding="utf-8")
    (d / "index.html").write_text(PAGE, encoding="utf-8")
    return d


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.exists():
        if os.environ.get("CI") == "true":
            pytest.fail("Debian's chromium is not installed")
        pytest.skip("Debian's chromium is not installed (scripts/setup.sh installs it)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox", "--disable-gpu"])
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page(browser, site):
    pg = browser.new_page(viewport={"width": 1000, "height": 900})
    errors: list[str] = []
    pg.on("console", lambda msg: msg.type == "error" and errors.append(msg.text))
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.goto((site / "index.html").as_uri(), wait_until="load")
    yield pg
    assert not errors, errors
    pg.close()


def sets_of(command: str) -> dict[str, str]:
    """The ``--set KEY=VALUE`` pairs of a ``kvtier build`` command, as a shell would split it."""
    words = shlex.split(command)
    assert words[:2] == ["kvtier", "build"] and words[-2:] == ["--out", "runs/mine"], command
    pairs = {}
    for flag, pair in zip(words[2:-2:2], words[3:-2:2], strict=True):
        assert flag == "--set", command
        key, _, value = pair.partition("=")
        pairs[key] = value
    return pairs


def compare_json(sets: dict[str, str], regime: str) -> dict:
    """``kvtier compare --json`` for the block at position 0 in ``regime``, run in-process.

    Inside a batch: ``--regen-model mfu`` (the block's marginal compute, attention over its own tokens
    included, as the tier ladder and the decision charge it); a lone block: ``--regen-model roofline`` with a
    pass of the block alone (``--batch-tokens 1``: the pass is at least the block).
    """
    argv = ["compare", "--json", "--position", "0"]
    options = ["--regen-model", "mfu"] if regime == "batch" else ["--regen-model", "roofline", "--batch-tokens", "1"]
    # the keys those options set are left to them: an option beside a --set of its key to another value is refused
    taken = {"regen.model"} | ({"regen.batch_tokens"} if regime != "batch" else set())
    for key, value in sets.items():
        if key not in taken:
            argv += ["--set", f"{key}={value}"]
    argv += options
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(argv) == 0, argv
    return json.loads(buf.getvalue())


def close(js: str, py: float | None, what: str) -> None:
    if py is None or math.isinf(py):  # --json writes an infinite break-even bandwidth as null
        assert js == "inf", f"{what}: calculator {js}, package inf"
        return
    got = float(js)
    assert math.isfinite(got), what
    assert abs(got - py) <= REL * abs(py), f"{what}: calculator {got!r}, package {py!r}"


def random_case(rng: random.Random, presets: dict) -> list[tuple[str, str]]:
    """A reader's inputs: field name and text, in the order a reader fills them (model and engine first)."""
    model_name = rng.choice(presets["model_presets"])
    model = presets["models"][model_name]
    case = [("model", model_name)]
    case.append(("kv_dtype", rng.choice(["bf16", "fp16", "fp8", "fp32"])))
    # after the model, which brings auto (its published dtype: fp8 for DeepSeek-V3), as _follow_model does
    case.append(("weight_dtype", rng.choice(["auto", "bf16", "fp8", "fp16", "int8", "int4"])))
    if rng.random() < 0.25:
        case.append(("param_count", f"{rng.uniform(1, 900):.3g}e9"))
    engine = rng.choice(["none"] * 4 + presets["engine_presets"])
    case.append(("engine", engine))
    if rng.random() < 0.5:
        case.append(("block_tokens", str(rng.choice([1, 8, 16, 32, 64, 100, 256, 512, 1024, 4096]))))
    if rng.random() < 0.3:
        case.append(("link", rng.choice(presets["tiers"])["name"]))
    else:
        case.append(("bandwidth", f"{10 ** rng.uniform(-1, 3.5):.4g}"))
        case.append(("latency", rng.choice(["0", f"{rng.uniform(0, 100):.3g}", f"{rng.uniform(0, 5):.2g}"])))
    case.append(("layout", rng.choice(["contiguous", "per-layer"])))
    if rng.random() < 0.4:
        acc = rng.choice([n for n, a in presets["accelerators"].items() if a["peak_flops"] is not None])
        case.append(("accelerator", acc))
    else:
        case.append(("peak", f"{10 ** rng.uniform(1.5, 4):.4g}"))
        case.append(("mem_bandwidth", f"{10 ** rng.uniform(2.5, 4.2):.4g}"))
    case.append(("mfu", f"{rng.uniform(5, 95):.3g}"))
    case.append(("mem_efficiency", f"{rng.uniform(30, 100):.3g}"))
    # the memory each accelerator has (Scenario.check_fit): the preset's or the set's (none), none, ample, an H200's
    memory = rng.choice(["keep", "", "1e5", "141"])
    if memory != "keep":
        case.append(("hbm_capacity", memory))
    # the forward-pass model's terms, where the set has them (kvtier.formulas.roofline.forward_pass_time_s)
    if "regen.launch_floor_per_layer" in presets["keys"]:
        case.append(("launch_floor", rng.choice(["0", f"{rng.uniform(0, 40):.3g}"])))
        case.append(("mem_overhead", rng.choice(["0", f"{rng.uniform(0, 10):.3g}"])))
        case.append(("knee", rng.choice(["0", "1", "1.5", "3", "8"])))
    tp = rng.choice([1, 1, 2, 4, 8])
    ep = 1
    if model["routed_experts"] and rng.random() < 0.5:
        ep = rng.choice([e for e in (1, 2, 4, 8, 16) if e <= model["routed_experts"] and max(e, tp) % min(e, tp) == 0])
    pp = rng.choice([1, 1, 2, 3, 4])
    case += [("tp", str(tp)), ("pp", str(pp)), ("ep", str(ep)), ("gpus_per_link", str(rng.choice([1, 1, 2, 4])))]
    case.append(("regime", rng.choice(["batch", "lone"])))
    # the split's prompt: compare --split's defaults (empty), or a prefix and new tokens typed
    case.append(("prefix", rng.choice(["", "", "0", "16", str(rng.randint(1, 200_000)), str(rng.randint(1, 8192))])))
    case.append(("new_tokens", rng.choice(["", "", "1", str(rng.randint(1, 4096))])))
    return case


def compare_split(sets: dict[str, str], prefix: str, suffix: str) -> dict:
    """``kvtier compare --json --split`` with the calculator's prefix and new tokens (empty: compare's defaults)."""
    argv = ["compare", "--json", "--split"]
    argv += ["--prefix", prefix] if prefix else []
    argv += ["--suffix", suffix] if suffix else []
    for key, value in sets.items():
        argv += ["--set", f"{key}={value}"]
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(argv) == 0, argv
    return json.loads(buf.getvalue())["split"]


SPLIT_TIMES = (
    ("regenerate", "regenerate_s"),
    ("fetch", "fetch_s"),
    ("overlap", "layer_overlap_s"),
    ("split", "split_s"),
)


def close_split(out: dict, theirs: dict) -> None:
    """The calculator's split table against ``compare --split``'s, both regimes: times, tokens, gain and the fastest."""
    v = out["values"]
    for reg in ("batch", "lone"):
        r = theirs[reg]
        for key, field in SPLIT_TIMES:
            close(v[f"split-{reg}-{key}"], r[field], f"split {reg} {key}")
        assert float(v[f"split-{reg}-tokens"]) == r["split_tokens"], (reg, v[f"split-{reg}-tokens"], r)
        close(v[f"split-{reg}-gain"], r["gain_over_better_pure"], f"split {reg} gain")
        assert out["words"][f"split-{reg}-fastest"] == r["fastest"], (reg, out["words"], r)


def break_even_latency(a, mine: dict) -> float:
    """Deployment.break_even_latency's rule at compare's bandwidth: the transfer model's, a copy's overhead off."""
    s = Scenario(a)
    return float(
        transfer.break_even_latency(
            mine["placement"]["link_bytes"],
            mine["bandwidth_bytes_per_s"],
            mine["regen_time_s"],
            mine["fetch_transfers"],
            s.v("fetch.min_transfer_time"),
            s.link_efficiency,
            s.link_overhead_s,
        )
    )


def held_in(capacity_gb: str, command: str) -> tuple[dict[str, str], Scenario]:
    """The ``--set`` pairs of ``command`` plus ``parallel.hbm_capacity`` in GB, and the package's scenario of them."""
    sets = {**sets_of(command), "parallel.hbm_capacity": f"{capacity_gb}GB"}
    return sets, Scenario(load_assumptions(sets=sets))


def refusal_figures(message: str) -> tuple[str, int, int, int]:
    """What one accelerator must hold (GB, as check_fit writes it) and the fewest accelerators (n, tp, pp) of a
    calculator's refusal."""
    hold = re.search(r"must hold ([\d,]+\.\d) GB", message)
    fewest = re.search(r"at least (\d+) accelerators \(e\.g\. tensor-parallel (\d+), (\d+) pipeline stage", message)
    assert hold and fewest, message
    return hold.group(1), *(int(x) for x in fewest.groups())


def test_200_random_inputs_equal_the_package(page):
    presets = calculator.presets(seed())
    rng = random.Random(29)
    seen_models, seen_layouts, seen_regimes, seen_engines, seen_splits = set(), set(), set(), set(), set()
    n = refused = checked = 0
    for _ in range(240):
        case = random_case(rng, presets)
        page.evaluate(SET_FIELDS, case)
        out = page.evaluate(READ_OUTPUTS)
        capacity = page.input_value('#kvtier-calculator [name="hbm_capacity"]')
        if out["state"] == "refused":  # only the fit check refuses these inputs: the package refuses them too
            [message] = [text for id_, text in out["messages"].items() if id_.endswith("-tp-msg")]
            page.evaluate(SET_FIELDS, [("hbm_capacity", "")])  # emptied: the same inputs, not checked
            out = page.evaluate(READ_OUTPUTS)
            _, s = held_in(capacity, out["command"])
            with pytest.raises(KvtierError, match="parallel.hbm_capacity") as exc:
                s.check_fit()
            hold, *fewest = refusal_figures(message)
            assert f"must hold {hold} GB" in str(exc.value), (message, exc.value)
            assert tuple(fewest) == s.min_accelerators(), (message, exc.value)
            refused += 1
        elif capacity:  # checked and held: the command carries the memory and the package's check passes too
            assert sets_of(out["command"])["parallel.hbm_capacity"] == f"{float(capacity):g}GB", (case, out["command"])
            checked += 1
        assert out["state"] == "answered", (case, out["messages"])
        assert "NaN" not in out["text"] and "Infinity" not in out["text"], case
        sets = sets_of(out["command"])
        a = load_assumptions(sets=sets)
        check_consistency(a)  # the command passes the build's whole-set checks
        fields = dict(case)
        regime = fields["regime"]
        other = "lone" if regime == "batch" else "batch"
        mine, theirs = compare_json(sets, regime), compare_json(sets, other)
        v = out["values"]
        # the command carries the values typed: the package's block and placement are the calculator's
        close(v["block-bytes"], mine["block_bytes"], "block bytes")
        close(v["kv-bytes-per-token"], mine["kv_bytes_per_token"], "KV bytes per token")
        close(v["fetch-bytes"], mine["placement"]["link_bytes"], "bytes over one link")
        assert int(v["transfers"]) == mine["fetch_transfers"]
        close(v["fetch-time"], mine["fetch_time_s"], "fetch time")
        close(v[f"regen-{regime}"], mine["regen_time_s"], f"regeneration, {regime}")
        close(v[f"regen-{other}"], theirs["regen_time_s"], f"regeneration, {other}")
        close(v["ratio"], mine["regen_to_fetch_ratio"], "ratio")
        close(v["ratio-other"], theirs["regen_to_fetch_ratio"], "ratio, other regime")
        close(v["break-even-bandwidth"], mine["break_even_bandwidth_bytes_per_s"], "break-even bandwidth")
        close(v["break-even-latency"], break_even_latency(a, mine), "break-even latency")
        # the tier ladder: Deployment's fetch and verdicts, in the layout chosen, both regimes
        d = Deployment.of(Scenario(a))
        layout = fields["layout"]
        for j, name in enumerate(d.tiers.names):
            row = out["tiers"][name]
            close(row["fetch"], float(d.fetch_s(layout)[j]), f"{name} fetch")
            for reg in ("batch", "lone"):
                wins, ratio = row[reg]
                assert wins == str(bool(d.fetch_wins(reg, layout)[j])).lower(), (name, reg, case)
                close(ratio, float(d.ratio(reg, layout)[j]), f"{name} ratio {reg}")
        # the split: compare --split with the same prefix and new tokens, both regimes
        close_split(out, compare_split(sets, fields["prefix"], fields["new_tokens"]))
        seen_splits.add(out["words"][f"split-{regime}-fastest"])
        seen_models.add(fields["model"])
        seen_layouts.add(layout)
        seen_regimes.add(regime)
        seen_engines.add(fields["engine"])
        n += 1
    assert n >= 200 and refused >= 10 and checked >= 10, (n, refused, checked)
    assert seen_models == set(presets["model_presets"]) and seen_layouts == {"contiguous", "per-layer"}
    assert seen_regimes == {"batch", "lone"} and seen_engines == {"none", *presets["engine_presets"]}
    # every way is the fastest somewhere: regenerate, fetch (one piece, or layer by layer) and a strict split
    assert seen_splits == {"regenerate", "fetch", "layer-by-layer fetch", "split"}, seen_splits


def test_it_starts_from_the_build_set_and_its_command_is_bare(page):
    out = page.evaluate(READ_OUTPUTS)
    assert out["command"] == "kvtier build --out runs/mine"
    s = Scenario(seed())
    d = Deployment.of(s)
    # the seed's tail block: 16 tokens x 327,680 B = 5,242,880 B (5 MiB) over 64 GB/s, no latency: 81.92 us
    assert float(out["values"]["block-bytes"]) == 16 * 327_680
    close(out["values"]["fetch-time"], 16 * 327_680 / 64e9, "fetch time")
    close(out["values"]["regen-batch"], d.regen_s("batch"), "batch regeneration")
    close(out["values"]["regen-lone"], d.regen_s("lone"), "lone regeneration")


REFUSED = [
    ("bandwidth-word", [("bandwidth", "fast")], "bandwidth", "is not a number"),
    # a decimal comma is refused as the command line refuses it, not read as 15 (issue 43)
    ("bandwidth-decimal-comma", [("bandwidth", "1,5")], "bandwidth", "a comma only between thousands (1,024)"),
    ("bandwidth-zero", [("bandwidth", "0")], "bandwidth", "Must lie between"),
    ("mfu-above-100", [("mfu", "150")], "mfu", "Must lie between"),
    ("block-tokens-fraction", [("block_tokens", "16.5")], "block_tokens", "whole number"),
    ("latency-empty", [("latency", "")], "latency", "Type a number"),
    ("placement-ep-dense-model", [("model", "llama-3-70b"), ("ep", "8")], "ep", "needs an MoE model"),
    ("placement-ep-tp", [("model", "deepseek-v3"), ("tp", "4"), ("ep", "6")], "ep", "multiple of the smaller"),
    ("placement-pp-layers", [("model", "llama-2-7b"), ("pp", "64")], "pp", "At most the model's 32 layers"),
    # Llama-3-70B's 64 query heads: 3 ranks do not divide them (vLLM refuses it), nor 1,024
    ("tp-3", [("model", "llama-3-70b"), ("tp", "3")], "tp", "64 attention heads, which 3 ranks do not divide"),
    ("tp-1024", [("model", "llama-3-70b"), ("tp", "1024")], "tp", "64 attention heads, which 1024 ranks do not divide"),
    ("peak-unpublished", [("accelerator", "dgx-spark-gb10")], "peak", "publishes no peak"),
    ("peak-overflow", [("peak", "1e400")], "peak", "too large"),
    ("hbm-below-1-gb", [("hbm_capacity", "0.5")], "hbm_capacity", "Must lie between 1 and"),  # at least 1 GB
]
"""The calculator's refusals, each a case of the bad-input catalogue (``scripts/catalogue.py``, surface
``calculator``): ``(id, fields typed, the field refused, words of its message)``."""


@pytest.mark.surface("calculator")
@pytest.mark.parametrize(("inputs", "field", "words"), [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED])
def test_impossible_inputs_are_refused_in_words_beside_the_field(page, inputs, field, words):
    page.evaluate(SET_FIELDS, inputs)
    out = page.evaluate(READ_OUTPUTS)
    assert out["state"] == "refused", inputs
    msg = [text for id_, text in out["messages"].items() if id_.endswith(f"-{field}-msg")]
    assert msg and words in msg[0], (inputs, out["messages"])
    assert out["values"] == {} and "NaN" not in out["text"] and "Infinity" not in out["text"]
    invalid = page.get_attribute(f'#kvtier-calculator [name="{field}"]', "aria-invalid")
    assert invalid == "true"


HBM = '#kvtier-calculator [name="hbm_capacity"]'


def tp_message(out: dict) -> str:
    [message] = [text for id_, text in out["messages"].items() if id_.endswith("-tp-msg")]
    return message


def set_args(out: dict) -> list[str]:
    """The ``--set KEY=VALUE`` words of the calculator's command, for another kvtier command."""
    return [w for key, value in sets_of(out["command"]).items() for w in ("--set", f"{key}={value}")]


def set_options(command: str) -> list[str]:
    """The ``KEY=VALUE`` words after each ``--set`` of a command, as a shell splits them."""
    words = shlex.split(command)
    return [value for flag, value in zip(words, words[1:], strict=False) if flag == "--set"]


def kvtier_refuses(argv: list[str]) -> str:
    """The one-line error of a kvtier command the package refuses (exit status 2), run in-process."""
    buf = io.StringIO()
    with contextlib.redirect_stderr(buf), contextlib.redirect_stdout(io.StringIO()):
        assert main(argv) == 2, argv
    return buf.getvalue()


def kernel_option(presets_data: dict, accelerator: str, engine: str) -> str:
    """The calculator's ``regen`` option for an accelerator preset's and an engine's measured kernels."""
    kernels_ = presets_data["engine_kernels"]
    return str(next(j for j, c in enumerate(kernels_) if (c["accelerator"], c["engine"]) == (accelerator, engine)))


def test_an_engines_measured_kernels_time_the_block_as_the_package_does(page):
    data = calculator.presets(seed())
    page.evaluate(SET_FIELDS, [("regen", kernel_option(data, "h100-sxm", "vllm"))])
    out = page.evaluate(READ_OUTPUTS)
    assert out["state"] == "answered"
    # the command is the engine model on the H100's vLLM tables
    assert sorted(set_options(out["command"])) == ["regen.engine=vllm", "regen.model=engine", "regen.system=h100_sxm"]
    s = Scenario(load_assumptions(sets=sets_of(out["command"])))
    d = Deployment.of(s)
    # the seed's 16-token block: alone the estimator's pass of 16 tokens, inside a batch its share of an 8,192-token
    # step; the build's block is tabulated exactly, so the two agree to the last digit
    est = s.kernel_estimator
    assert d.regen_s("lone") == est.pass_ms(1, 16, 0) / 1e3
    close(out["values"]["regen-lone"], d.regen_s("lone"), "lone regeneration")
    close(out["values"]["regen-batch"], d.regen_s("batch"), "batch regeneration")
    # every tier's verdict and ratio in both regimes, as the tier ladder of that build
    for j, name in enumerate(d.tiers.names):
        for regime in ("batch", "lone"):
            close(out["tiers"][name][regime][1], float(d.ratio(regime, "contiguous")[j]), f"{name} {regime}")
    assert "Regeneration as a lone block (h100_sxm vllm kernels)" in out["text"]
    # a 512-token block: between two tabulated lengths, interpolated as RegenCosts.engine_curve does
    page.evaluate(SET_FIELDS, [("block_tokens", "512")])
    rc = s.regen_costs()
    lone = float(rc.lone_s(np.array(512.0)))
    close(page.evaluate(READ_OUTPUTS)["values"]["regen-lone"], lone, "lone regeneration, 512 tokens")
    # the split under the measured kernels: the interior position capped by Llama-3-70B's 8,192-token window less a
    # 16-token block (8,176 tokens), then prefixes inside and past the tables' 16,384 tokens
    page.evaluate(SET_FIELDS, [("block_tokens", "16")])
    out = page.evaluate(READ_OUTPUTS)
    sets = sets_of(out["command"])
    close_split(out, compare_split(sets, "", ""))
    assert "A prompt of 8,192 tokens whose first 8,176 the tier holds" in out["text"]
    page.evaluate(SET_FIELDS, [("link", "nvme-gen4-x4"), ("prefix", "12000"), ("new_tokens", "300")])
    out = page.evaluate(READ_OUTPUTS)
    close_split(out, compare_split(sets_of(out["command"]), "12000", "300"))
    page.evaluate(SET_FIELDS, [("prefix", "16200")])  # 16,500 tokens: past the tables
    out = page.evaluate(READ_OUTPUTS)
    assert out["state"] == "answered" and "split-batch-split" not in out["values"]
    assert "tabulated for prompts of at most 16,384 tokens; this prompt has 16,500" in out["text"]
    assert "16,384" in kvtier_refuses(["compare", "--split", "--prefix", "16200", "--suffix", "300", *set_args(out)])


def test_measured_kernels_are_refused_for_what_they_were_not_tabulated_for(page):
    data = calculator.presets(seed())
    option = kernel_option(data, "h200", "sglang")
    page.evaluate(SET_FIELDS, [("regen", option), ("tp", "2")])
    out = page.evaluate(READ_OUTPUTS)
    assert out["state"] == "refused" and out["values"] == {}
    [message] = [text for id_, text in out["messages"].items() if id_.endswith("-regen-msg")]
    assert message == (
        "These kernels are tabulated for tensor-parallel 1, 1 pipeline stage, expert-parallel 1; for these values run"
        " kvtier compare --regen-model engine --accelerator h200 --engine sglang."
    )
    # a block past the tables' grid (16,384 tokens on the H200's SGLang tables)
    page.evaluate(SET_FIELDS, [("tp", "1"), ("block_tokens", "20000")])
    out = page.evaluate(READ_OUTPUTS)
    assert "blocks of at most 16,384 tokens (the tables' grid)" in " ".join(out["messages"].values())
    # back to the MFU: answered again, and the command drops the engine model
    page.evaluate(SET_FIELDS, [("regen", "mfu"), ("block_tokens", "16")])
    out = page.evaluate(READ_OUTPUTS)
    assert out["state"] == "answered" and out["command"] == "kvtier build --out runs/mine"


def test_the_h200_preset_brings_its_memory_and_one_cannot_hold_deepseek_v3_in_its_published_fp8(page):
    page.evaluate(SET_FIELDS, [("model", "deepseek-v3"), ("accelerator", "h200")])
    assert page.input_value('#kvtier-calculator [name="weight_dtype"]') == "auto"  # the model brings its own
    message = tp_message(page.evaluate(READ_OUTPUTS))
    # its config's fp8 (quantization_config fp8 e4m3): 671,026,419,200 x 1 B + 9,210,691,584 B of latent
    # = 680,237,110,784 B = 680.2 GB on one; TP 8 holds 83.9 + 9.2 GB each
    assert refusal_figures(message) == ("680.2", 8, 8, 1) and "(its weights in fp8 and" in message
    refusal = kvtier_refuses(["compare", "--model", "deepseek-v3", "--accelerator", "h200"])
    assert "must hold 680.2 GB" in refusal
    assert "at least 8 accelerators (e.g. --set parallel.tp=8 --set parallel.pp=1)" in refusal


def test_the_h200_preset_brings_its_memory_and_one_cannot_hold_deepseek_v3_in_bf16(page):
    page.evaluate(SET_FIELDS, [("model", "deepseek-v3"), ("weight_dtype", "bf16"), ("accelerator", "h200")])
    assert page.input_value(HBM) == "141"  # hardware.yaml: h200.memory 141 GB, filled beside peak and bandwidth
    out = page.evaluate(READ_OUTPUTS)
    assert out["state"] == "refused" and out["values"] == {}
    assert "(the placement does not fit" in out["command"]
    message = tp_message(out)
    # DeepSeek-V3 in bf16 at TP 1: its config's 671,026,419,200 parameters x 2 B (bf16) = 1,342,052,838,400 B of
    # weights, plus one sequence of context.long = 131,072 tokens x 61 layers x (512 + 64) latent x 2 B = 70,272 B
    # a token = 9,210,691,584 B of KV: 1,351,263,529,984 B = 1,351.3 GB, above the 141 GB of one H200
    sets = {"model": "deepseek-v3", "weight_dtype": "bf16", "parallel.hbm_capacity": "141GB"}
    s = Scenario(load_assumptions(sets=sets))
    assert s.rank_memory_bytes() == 671_026_419_200 * 2 + 131_072 * 70_272 == 1_351_263_529_984
    assert "must hold 1,351.3 GB" in message and "131,072 tokens of KV" in message and "141.0 GB of memory" in message
    # the fewest that hold it: TP 8 x PP 2 = 16 (TP 8 alone keeps 1,342.05 / 8 = 167.8 GB of weights, too many)
    assert refusal_figures(message) == ("1,351.3", 16, 8, 2)
    # the command's own refusal, word for word where the two say the same thing
    refusal = kvtier_refuses(["compare", "--model", "deepseek-v3", "--accelerator", "h200", "--weight-dtype", "bf16"])
    assert "must hold 1,351.3 GB" in refusal and "(141.0 GB)" in refusal
    assert "at least 16 accelerators (e.g. --set parallel.tp=8 --set parallel.pp=2)" in refusal


def test_the_h200_holds_deepseek_v3_at_tp_8_and_pp_2(page):
    fields = [("model", "deepseek-v3"), ("weight_dtype", "bf16"), ("accelerator", "h200"), ("tp", "8"), ("pp", "2")]
    page.evaluate(SET_FIELDS, fields)
    out = page.evaluate(READ_OUTPUTS)
    assert out["state"] == "answered", out["messages"]
    sets = sets_of(out["command"])
    assert sets["weight_dtype"] == "bf16"  # not the model's own (auto): the command says so
    assert sets["parallel.hbm_capacity"] == "141GB" and (sets["parallel.tp"], sets["parallel.pp"]) == ("8", "2")
    # the busiest rank: 1,342,052,838,400 B / (8 x 2) = 83,878,302,400 B of weights, plus the KV of its 31 of 61
    # layers (ceil(61 / 2); MLA's latent is whole on every TP rank): 9,210,691,584 x 31 / 61 = 4,680,843,264 B;
    # 88,559,145,664 B = 88.6 GB, within 141 GB
    s = Scenario(load_assumptions(sets=sets))
    assert s.rank_memory_bytes() == pytest.approx(83_878_302_400 + 4_680_843_264, rel=1e-12)
    s.check_fit()  # the package holds it too, and `kvtier compare` answers the same numbers
    mine = compare_json(sets, "batch")
    close(out["values"]["regen-batch"], mine["regen_time_s"], "regeneration inside a batch")
    close(out["values"]["fetch-time"], mine["fetch_time_s"], "fetch time")


def test_emptying_the_memory_skips_the_check(page):
    page.evaluate(SET_FIELDS, [("model", "deepseek-v3"), ("accelerator", "h200"), ("hbm_capacity", "")])
    out = page.evaluate(READ_OUTPUTS)
    assert out["state"] == "answered", out["messages"]
    # typing the memory leaves the preset menu, as typing the peak does; the other fields keep the preset's
    assert page.input_value('#kvtier-calculator [name="accelerator"]') == ""
    assert page.input_value('#kvtier-calculator [name="peak"]') == "989"  # hardware.yaml: h200 989 TFLOP/s dense
    sets = sets_of(out["command"])
    assert "parallel.hbm_capacity" not in sets  # the seed's null: not checked, nothing to set
    assert load_assumptions(sets=sets).value("parallel.hbm_capacity") is None
    close(out["values"]["regen-batch"], compare_json(sets, "batch")["regen_time_s"], "regeneration at TP 1, unchecked")


def test_the_command_carries_the_memory_typed(page):
    # the seed's block on one accelerator: 70e9 x 2 B (bf16) = 140 GB of weights plus one sequence of Llama 3 70B's
    # 8,192-token window (context.long, 131,072, is past it) x 327,680 B = 2,684,354,560 B of KV: 142.7 GB
    assert Scenario(seed()).rank_memory_bytes() == 140e9 + 8192 * 327_680
    page.evaluate(SET_FIELDS, [("hbm_capacity", "142.6")])
    out = page.evaluate(READ_OUTPUTS)
    assert out["state"] == "refused" and "must hold 142.7 GB" in tp_message(out), out["messages"]
    assert "one sequence of 8,192 tokens of KV" in tp_message(out)
    for typed, text, si in (("183", "183GB", 183e9), ("1.5e3", "1500GB", 1.5e12), ("192.5", "192.5GB", 192.5e9)):
        page.evaluate(SET_FIELDS, [("hbm_capacity", typed)])
        out = page.evaluate(READ_OUTPUTS)
        assert out["state"] == "answered", (typed, out["messages"])
        options = set_options(out["command"])
        parsed = parse_set_options(options)  # kvtier's own option parser, as `kvtier build --set` reads them
        assert parsed == {"parallel.hbm_capacity": text}, options
        assert load_assumptions(sets=parsed).value("parallel.hbm_capacity") == si


def presets_site(directory: Path, data: dict) -> Path:
    """A bare page holding the calculator beside the data ``data`` (a :func:`calculator.presets` record)."""
    for name in (*SCRIPTS, "kvtier-calculator.css"):
        shutil.copy2(STATIC / name, directory / name)
    body = json.dumps(data, sort_keys=True, indent=1, allow_nan=False)
    (directory / calculator.FILE).write_text(f"window.{calculator.GLOBAL} = {body};\n", encoding="utf-8")
    (directory / "index.html").write_text(PAGE, encoding="utf-8")
    return directory / "index.html"


def test_a_set_with_memory_starts_there_and_emptying_it_is_written(browser, tmp_path):
    built = load_assumptions(sets={"parallel.hbm_capacity": "200GB"})
    data = calculator.presets(built)
    pg = browser.new_page()
    pg.goto(presets_site(tmp_path, data).as_uri(), wait_until="load")
    assert pg.input_value(HBM) == "200"  # the set's 200 GB (the seed's block needs 182.9 GB), in GB
    assert parse_set_options(set_options(pg.evaluate(READ_OUTPUTS)["command"]))["parallel.hbm_capacity"] == "200GB"
    pg.evaluate(SET_FIELDS, [("hbm_capacity", "")])
    out = pg.evaluate(READ_OUTPUTS)
    # `kvtier build` starts from the seed, whose memory is null: emptied, the command sets nothing, and gives null
    assert out["state"] == "answered" and "parallel.hbm_capacity" not in sets_of(out["command"])
    # a seed that gives a memory (the data edited so): emptied, the command writes the null the build must set
    data["keys"]["parallel.hbm_capacity"].update(seed_value=200e9, seed_text="200 GB")
    pg.goto(presets_site(tmp_path, data).as_uri(), wait_until="load")
    assert pg.evaluate(READ_OUTPUTS)["command"] == "kvtier build --out runs/mine"  # untouched: the seed's own
    pg.evaluate(SET_FIELDS, [("hbm_capacity", "")])
    out = pg.evaluate(READ_OUTPUTS)
    pg.close()
    parsed = parse_set_options(set_options(out["command"]))
    assert parsed == {"parallel.hbm_capacity": "null"}, out["command"]
    assert load_assumptions(sets=parsed).value("parallel.hbm_capacity") is None


def test_no_bandwidth_wins_when_the_latency_outlasts_regeneration(page):
    # 1 s per transfer against a regeneration of milliseconds: no break-even bandwidth, said in words
    page.evaluate(SET_FIELDS, [("latency", "1000000")])
    out = page.evaluate(READ_OUTPUTS)
    assert out["values"]["break-even-bandwidth"] == "inf"
    assert "none: the latency alone outlasts regeneration" in out["text"]
    assert "Infinity" not in out["text"] and "NaN" not in out["text"]


def test_every_input_has_a_label_and_the_keyboard_reaches_it(page):
    labels = page.evaluate(
        """() => [...document.querySelectorAll("#kvtier-calculator input, #kvtier-calculator select")].map(
             (c) => [c.name, c.labels.length ? c.labels[0].textContent : ""])"""
    )
    assert len(labels) >= 20 and all(text.strip() for _, text in labels), labels
    # Tab from the page's start reaches every field in order, and typing changes the answer
    names = [name for name, _ in labels]
    reached = []
    for _ in range(len(names) + 5):
        page.keyboard.press("Tab")
        reached.append(page.evaluate("() => document.activeElement.name || document.activeElement.textContent"))
    assert [r for r in reached if r in names][: len(names)] == names
    page.focus('#kvtier-calculator [name="bandwidth"]')
    page.keyboard.press("Control+A")
    page.keyboard.type("200")
    out = page.evaluate(READ_OUTPUTS)
    assert "bandwidth.mid=200GB/s" in out["command"]
    # 200 GB/s is above the optimistic bracket (121 GB/s): the command moves it and the range with it
    assert "bandwidth.optimistic=200GB/s" in out["command"]
    assert "uncertainty.bandwidth_high=200GB/s" in out["command"]
    close(out["values"]["fetch-time"], 16 * 327_680 / 200e9, "fetch time at 200 GB/s")


def test_it_reads_at_420_px(browser, site):
    pg = browser.new_page(viewport={"width": 420, "height": 900})
    pg.goto((site / "index.html").as_uri(), wait_until="load")
    widths = pg.evaluate(
        """() => {
          const calc = document.querySelector("#kvtier-calculator");
          const wide = [];
          for (const el of calc.querySelectorAll("label, input, select, p, dl, pre, button, h3")) {
            const right = el.getBoundingClientRect().right;
            if (right > document.documentElement.clientWidth + 1) wide.push(el.outerHTML.slice(0, 80));
          }
          const small = [...calc.querySelectorAll("label, dd, dt, td, th")].filter(
            (el) => parseFloat(getComputedStyle(el).fontSize) < 12).length;
          return {page: [document.documentElement.scrollWidth, document.documentElement.clientWidth], wide, small};
        }"""
    )
    pg.close()
    assert widths["page"][0] <= widths["page"][1] + 1, widths
    assert not widths["wide"] and widths["small"] == 0, widths


def test_the_tier_for_the_trace_is_the_cost_pages_lru_tier_for_the_kv_typed(page):
    from kvtier import analysis

    page.evaluate(SET_FIELDS, [["model", "qwen2.5-72b"], ["kv_dtype", "fp8"]])
    out = page.evaluate(READ_OUTPUTS)
    # the trace's 90 % LRU tier is 31,589 blocks of 512 tokens whatever the model; Qwen2.5-72B in fp8 keeps
    # 2 x 80 layers x 8 KV heads x 128 x 1 B = 163,840 B a token: 31,589 x 512 x 163,840 = 2,649,877,381,120 B
    close(out["values"]["tier-capacity"], 2_649_877_381_120, "the tier's bytes")
    s = Scenario(load_assumptions(sets={"model": "qwen2.5-72b", "param_count": "null", "kv_dtype": "fp8"}))
    plan = {t.medium: t for t in analysis.lru_plan(s, 0.9)}
    close(out["values"]["tier-capacity"], plan["dram"].capacity_bytes, "the cost page's LRU tier")
    # held in host DRAM and in a CXL expander: the cost page's holding per hour, at this book's prices
    close(out["values"]["tier-hold-dram"], plan["dram"].hold_usd_per_s * 3600, "host DRAM's holding")
    close(out["values"]["tier-hold-cxl"], plan["cxl"].hold_usd_per_s * 3600, "the CXL expander's holding")
    assert "LRU tier for 90 % of the achievable hits on the conversation trace" in out["text"]


def money_of(out: dict, s: Scenario) -> None:
    """Hold the calculator's tier money (``out``) to :func:`kvtier.analysis.lru_plan` of ``s``, medium by medium."""
    from kvtier import analysis

    plan = {t.medium: t for t in analysis.lru_plan(s, s.v("decision.hit_target"))}
    for m, t in plan.items():
        close(out["values"][f"hold-{m}"], t.hold_usd_per_s, f"{m}: holding")
        close(out["values"][f"fetch-{m}"], t.fetch_usd_per_s, f"{m}: fetching")
        close(out["values"][f"saved-{m}"], t.saved_usd_per_s, f"{m}: saved")
    best = max(plan.values(), key=lambda t: t.saved_usd_per_s)
    busy = best.prefill_accelerators
    close(out["values"]["tier-saved-best"], best.saved_usd_per_s / busy * 3600, "saved per accelerator")
    close(out["values"]["tier-per-accelerator"], best.capacity_bytes / busy, "tier per accelerator")


def test_the_tier_for_the_trace_costs_and_saves_per_accelerator_what_the_cost_page_prices(page):
    out = page.evaluate(READ_OUTPUTS)
    # the seed's world: the trace's prefill keeps 59.92 accelerators busy (inside a batch, 500 TFLOP/s at 25 %); the
    # 90 % tier of 5,299,754,762,240 B in host DRAM saves 56.21 USD/h for the fleet, 56.21 / 59.92 = 0.9381 USD/h an
    # accelerator, the landing's "this build" row
    close(out["values"]["tier-saved-best"], 56.2104681975939 / 59.92017977712778, "saved per accelerator")
    money_of(out, Scenario(seed()))
    # NVMe buys 52 drives: 9.17 GB/s of writes x 86,400 s / (1 drive write a day x 15.36 TB) = 51.6, for their wear;
    # flash of the tier's own 5.30 TB wears out at that rate in 5.30e12 x 5 years / 9.17 GB/s = 12.2 days
    assert "NVMe flash (52 drives)" in out["text"]
    assert "52 for their wear" in out["text"] and "wear out in 12.2 days" in out["text"]
    assert "Saved per accelerator, the tier in host DRAM" in out["text"]
    # a placement and an engine's copies: TP 2 with two accelerators a link, vLLM's 16-token blocks copied per layer,
    # a faster accelerator at 40 %, Qwen2.5-72B's KV in fp8
    page.evaluate(
        SET_FIELDS,
        [
            ["model", "qwen2.5-72b"],
            ["kv_dtype", "fp8"],
            ["engine", "vllm"],
            ["tp", "2"],
            ["gpus_per_link", "2"],
            ["peak", "989"],
            ["mfu", "40"],
        ],
    )
    out = page.evaluate(READ_OUTPUTS)
    assert out["state"] == "answered"
    money_of(out, Scenario(load_assumptions(sets=sets_of(out["command"]))))


def test_under_measured_kernels_the_tiers_money_is_left_to_the_build(page):
    data = calculator.presets(seed())
    page.evaluate(SET_FIELDS, [("regen", kernel_option(data, "h100-sxm", "vllm"))])
    out = page.evaluate(READ_OUTPUTS)
    assert out["state"] == "answered"
    # the prompts are summed for the analytic model only: no saving is shown, and the page says why
    assert "tier-saved-best" not in out["values"] and "saved-dram" not in out["values"]
    assert "Under measured kernels this calculator does not price the conversation trace's tier" in out["text"]
    # back to the MFU: priced again
    page.evaluate(SET_FIELDS, [("regen", "mfu")])
    assert "tier-saved-best" in page.evaluate(READ_OUTPUTS)["values"]


def test_the_presets_carry_the_traces_hits_and_prompt_sums():
    from kvtier import analysis

    s = Scenario(seed())
    tr = calculator.presets(seed())["trace"]
    traffic = analysis.lru_traffic(s, 0.9)
    # 12,031 requests in all, each counted once among the distinct (hit blocks, hit tokens) pairs
    assert sum(tr["hits"]["requests"]) == 12_031 == traffic.weights.sum()
    assert tr["written_tokens"] == traffic.written_tokens
    # the prompt sums give the package's prefill: FLOPs = 2 N x sum T + f x sum T (T + 1) / 2, over 500 TFLOP/s x 25 %
    rc = s.regen_costs()
    flops = 2 * rc.active_params * tr["prompt_tokens"] + rc.attention_flops_per_position * tr["prompt_attention"]
    assert flops / (rc.peak_flop_per_s * rc.mfu) == pytest.approx(traffic.prefill_s, rel=1e-12)
    assert tr["tiers"] == ["pcie5-x16", "cxl2-x8", "nvme-gen4-x4"]


def test_a_link_carries_the_typed_values_and_opens_them(browser, site):
    pg = browser.new_page(viewport={"width": 1000, "height": 900})
    pg.goto((site / "index.html").as_uri(), wait_until="load")
    pg.evaluate(SET_FIELDS, [["model", "llama-3.1-70b"], ["bandwidth", "100"]])
    # only the fields that differ from the start travel: the model (which brings its published weight dtype and its
    # own parameter count, emptied) and 100 GB/s
    url = pg.evaluate("() => window.location.href")
    assert url.endswith("#calc:model=llama-3.1-70b&weight_dtype=auto&param_count=&bandwidth=100"), url
    assert pg.evaluate("() => document.querySelector('.kvtier-calc-link code').textContent") == url
    pg.close()
    again = browser.new_page(viewport={"width": 1000, "height": 900})
    again.goto(url, wait_until="load")
    out = again.evaluate(READ_OUTPUTS)
    assert again.evaluate("() => document.querySelector('[name=bandwidth]').value") == "100"
    # the same block over 100 GB/s: 16 tokens x 327,680 B (Llama-3.1-70B has Llama-3-70B's KV shapes) = 52.43 us
    close(out["values"]["fetch-time"], 16 * 327_680 / 100e9, "fetch time of the opened link")
    assert "model=llama-3.1-70b" in out["command"] and "bandwidth.mid=100GB/s" in out["command"]
    again.close()
    # a value a select does not offer is left at the start
    odd = browser.new_page(viewport={"width": 1000, "height": 900})
    odd.goto((site / "index.html").as_uri() + "#calc:model=no-such-model&mfu=30", wait_until="load")
    assert odd.evaluate("() => document.querySelector('[name=model]').value") == "llama-3-70b"
    assert odd.evaluate("() => document.querySelector('[name=mfu]').value") == "30"
    odd.close()


@pytest.mark.parametrize("width", [1400, 420])
def test_the_answer_stays_beside_the_fields_or_in_view_above_them(browser, site, width):
    pg = browser.new_page(viewport={"width": width, "height": 800})
    pg.goto((site / "index.html").as_uri(), wait_until="load")
    box = """() => {
      const r = (sel) => document.querySelector(sel).getBoundingClientRect();
      const field = r("[name=mfu]");
      return {answer: r(".kvtier-calc-answer"), form: r(".kvtier-calc-form"), field, height: innerHeight};
    }"""
    at = pg.evaluate(box)
    if width == 1400:  # side by side: the answer's column starts right of the fields', at the first field's height
        assert at["answer"]["left"] >= at["form"]["right"] and at["answer"]["top"] <= at["form"]["top"] + 1, at
    else:  # one column: the answer above the fields
        assert at["answer"]["bottom"] <= at["form"]["top"] + 1, at
    # scrolled to the MFU field, the answer is still on the screen, whole or in its box
    pg.evaluate("() => document.querySelector('[name=mfu]').scrollIntoView({block: 'end'})")
    at = pg.evaluate(box)
    assert at["field"]["bottom"] <= at["height"] + 1 and at["answer"]["top"] >= -1, at
    assert at["answer"]["top"] < at["height"] / 2 and at["answer"]["bottom"] > at["answer"]["top"] + 40, at
    pg.close()


def test_a_book_built_from_another_set_starts_there_and_its_command_rebuilds_it(browser, tmp_path):
    # the measured H200 set (its brackets, ranges, latencies and, with the forward-pass keys, their fitted
    # values) with a placement and an engine: the page opens on it and its bare command carries it
    path = ROOT / "kvtier" / "data" / "h200-measured.yaml"
    # ... fetched from pageable host memory over a link busy both ways: its floor, shares and overhead per copy
    transfer_sets = {"fetch.host_memory": "pageable", "fetch.contention": "duplex"}
    built = load_assumptions(path, {"parallel.tp": "2", "engine": "vllm", "model": "llama-3-8b", **transfer_sets})
    for name in (*SCRIPTS, "kvtier-calculator.css"):
        shutil.copy2(STATIC / name, tmp_path / name)
    (tmp_path / calculator.FILE).write_text(calculator.presets_js(built), encoding="utf-8")
    (tmp_path / "index.html").write_text(PAGE, encoding="utf-8")
    pg = browser.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.goto((tmp_path / "index.html").as_uri(), wait_until="load")
    out = pg.evaluate(READ_OUTPUTS)
    pg.close()
    assert not errors and out["state"] == "answered"
    sets = sets_of(out["command"])
    assert sets["parallel.tp"] == "2" and sets["engine"] == "vllm" and sets["model"] == "llama-3-8b"
    assert sets["fetch.host_memory"] == "pageable" and "fetch.pageable_overhead" in sets
    rebuilt = load_assumptions(sets=sets)
    check_consistency(rebuilt)
    d = Deployment.of(Scenario(built))
    for regime in ("batch", "lone"):
        mine = compare_json(sets, regime)
        v = out["values"]
        close(v[f"regen-{regime}"], mine["regen_time_s"], f"regeneration, {regime}")
        close(v["fetch-time"], mine["fetch_time_s"], "fetch time")
        if regime == "batch":  # the headline's regime until a reader picks another
            close(v["break-even-bandwidth"], mine["break_even_bandwidth_bytes_per_s"], "break-even bandwidth")
            close(v["break-even-latency"], break_even_latency(rebuilt, mine), "break-even latency")
        # the command's set gives the built set's numbers: the decision's regeneration, by Deployment
        close(v[f"regen-{regime}"], Deployment.of(Scenario(built)).regen_s(regime), f"built set, {regime}")
    # the tier ladder under the same transfer model: Deployment's fetch from every tier
    layout = str(built.value("fetch_layout"))
    for j, name in enumerate(d.tiers.names):
        close(out["tiers"][name]["fetch"], float(d.fetch_s(layout)[j]), f"{name} fetch")


def test_the_book_carries_the_calculator_on_the_landing_and_tier_pages(seed_build):
    html = seed_build / "html"
    # the build writes the data of its own set (here the seed's) beside the two scripts it ships
    assert (html / "_static" / calculator.FILE).read_text(encoding="utf-8") == calculator.presets_js(seed())
    for name in SCRIPTS:
        assert (html / "_static" / name).is_file()
    for page_path in ("book/intro.html", "notebooks/08_tiers.html"):
        text = (html / page_path).read_text(encoding="utf-8")
        assert 'id="kvtier-calculator"' in text, page_path
        # in order: the data, the formulas, the calculator (each a local file: nothing fetched at view time)
        at = [text.index(f'src="../_static/{name}') for name in SCRIPTS]
        assert at == sorted(at), page_path
