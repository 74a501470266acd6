"""kvtier's own formulas in the setups of the papers the split page cites (Cake's split, HCache's restore).

Each setup of :func:`kvtier.inputs.published.setups` (a model, an accelerator preset, prefixes, new tokens and
link bandwidths) is priced as the split page prices its deployment, in the lone regime (a request's prefill is its
own forward pass, as both papers time one request's first token): regenerate the whole prompt, fetch the prefix's
KV then prefill the new tokens, the best split (:func:`kvtier.formulas.split.best_split`) and restoring the prefix
from stored hidden states (:func:`kvtier.formulas.hidden.restore_s`) then prefilling the new tokens.  The links
carry bandwidth only (no per-copy latency): the comparison is of bytes against FLOPs.  The model and accelerator
replace the build's; its MFU, element types, block and forward-pass model stay, so a reader's MFU reaches these
rows too.  Seconds, tokens, bytes per second.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kvtier.formulas import hidden, ttft
from kvtier.formulas import split as split_formulas
from kvtier.inputs.deployments import accelerator_records
from kvtier.inputs.published import Setup, setups
from kvtier.scenario import Scenario

REGIME = "lone"
"""The regime of every row: one request's prefill as its own pass."""

METHOD = {"Cake": "split", "HCache": "restore"}
"""Each paper's way, as the rows name it: Cake splits the prefix, HCache restores it from hidden states."""


def setup_scenario(s: Scenario, setup: Setup) -> Scenario:
    """The build's scenario on ``setup``'s model and accelerator, alone on it (one accelerator, no engine, the MFU
    model of a pass); every other key keeps the build's value."""
    sets = {
        "model": setup.model,
        "param_count": None,  # the model's own count, as a new model brings (_follow_model)
        "weight_dtype": "auto",
        "regen.model": "mfu",
        "engine": "none",
        "parallel.tp": 1,
        "parallel.pp": 1,
        "parallel.ep": 1,
        "parallel.gpus_per_link": 1,
    }
    a = s.assumptions.with_values(sets, source=f"the {setup.paper} setup ({setup.name}) of the split page")
    return Scenario(a.with_records(accelerator_records(setup.accelerator, regen_model="mfu")))


def setup_rows(s: Scenario, setup: Setup) -> list[dict[str, Any]]:
    """Per prefix and link of ``setup``: the four ways' times to the first token (s) and the paper's way's gains.

    ``method_vs_regenerate`` and ``method_vs_fetch``: the paper's way (:data:`METHOD`) against computing the prompt
    alone and against loading the prefix alone; ``split_vs_better``: the split against the faster of the two
    (ratios, x).  ``hidden_to_kv``: the hidden states' bytes over the KV's per token.
    """
    sc = setup_scenario(s, setup)
    rc = sc.regen_costs()
    m = sc.model
    kv_bytes = float(sc.kv_bytes_per_token)
    hidden_bytes = hidden.hidden_bytes_per_token(m.hidden_size, m.n_layers, kv_bytes, m.kv_elements_per_token())
    restore_flops = hidden.restore_flops_per_token(m.hidden_size, m.kv_elements_per_token(), rc.flops_per_param_token)
    prefix = np.array(setup.prefix_tokens, dtype=float)
    prompt = prefix + setup.new_tokens
    rest = ttft.rest_prefill_s(rc, prompt, prefix, REGIME)
    rows = []
    for gbps in setup.bandwidth_GBps:
        bw = gbps * 1e9
        fetch = ttft.Fetch(bw, 0.0, sc.block_tokens, 1, m.n_layers, False, kv_bytes)
        r = split_formulas.best_split(rc, fetch, prefix, prompt, REGIME)
        restore = hidden.restore_s(prefix, hidden_bytes, restore_flops, bw, rc.peak_flop_per_s, rc.mfu) + rest
        way = {"split": r.split_s, "restore": restore}[METHOD[setup.paper]]
        for j, n in enumerate(setup.prefix_tokens):
            rows.append(
                {
                    "paper": setup.paper,
                    "setup": setup.title,
                    "prefix_tokens": n,
                    "new_tokens": setup.new_tokens,
                    "bandwidth_GBps": gbps,
                    "regenerate_s": float(r.regenerate_s[j]),
                    "fetch_s": float(r.fetch_s[j]),
                    "split_s": float(r.split_s[j]),
                    "restore_s": float(restore[j]),
                    "method": METHOD[setup.paper],
                    "method_vs_regenerate": float(r.regenerate_s[j] / way[j]),
                    "method_vs_fetch": float(r.fetch_s[j] / way[j]),
                    "split_vs_better": float(r.gain[j]),
                    "hidden_to_kv": hidden_bytes / kv_bytes,
                }
            )
    return rows


def rows(s: Scenario) -> list[dict[str, Any]]:
    """:func:`setup_rows` of every shipped setup, in the file's order."""
    return [row for setup in setups().values() for row in setup_rows(s, setup)]
