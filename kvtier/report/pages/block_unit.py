"""The block-unit page (``notebooks/01_block_unit.md``): KV bytes per token and the block."""

from __future__ import annotations

from typing import Any

import pandas as pd

from kvtier.inputs.models import dtype_bytes
from kvtier.report.columns import declare, named
from kvtier.scenario import Scenario
from kvtier.units import MIB

NOTEBOOK = "01_block_unit"
"""The page's text notebook, ``notebooks/NOTEBOOK.md``."""
TITLE = "the block unit"
"""The page's name as another page writes it mid-sentence (the registry's ``Page.title``)."""

KEYS: tuple[str, ...] = (
    "block_tokens",
    "kv_dtype",
    "model",
)
"""The assumption keys the page reads; its notebook's ``parameters`` cell declares exactly these."""


def numbers(s: Scenario) -> dict[str, Any]:
    """The block unit: the model's attention geometry, KV bytes per token, the block."""
    m = s.model
    elem = dtype_bytes(s.kv_dtype, "kv_dtype")
    if m.attention == "MLA":
        formula = f"{m.n_layers} layers × ({m.kv_lora_rank} latent + {m.qk_rope_head_dim} rope) elements × {elem} B"
    else:
        formula = f"2 (K and V) × {m.n_layers} layers × {m.n_kv_heads} KV heads × {m.head_dim} head_dim × {elem} B"
    block_bytes = s.block_bytes
    return {
        "model_name": m.name,
        "attention": m.attention,
        "layers": m.n_layers,
        "attention_heads": m.n_heads,
        "kv_heads": m.n_kv_heads,
        "head_dim": m.head_dim,
        "query_heads_per_kv_head": m.n_heads / m.n_kv_heads,
        "kv_dtype": s.kv_dtype,
        "kv_element_bytes": elem,
        "kv_formula": formula,
        "kv_bytes_per_token": s.kv_bytes_per_token,
        "kv_kib_per_token": s.kv_bytes_per_token / 1024,
        "block_tokens": s.block_tokens,
        "block_bytes": block_bytes,
        "block_mib": block_bytes / MIB,
        "block_mb": block_bytes / 1e6,
        "mib_over_mb_pct": (MIB / 1e6 - 1) * 100,
    }


COLUMNS = ("quantity", "value", "unit", "basis", "provenance")
"""The columns of :func:`table`: words a reader reads as they are."""


def table(s: Scenario) -> pd.DataFrame:
    """The block unit derived step by step: KV bytes per token, then the block."""
    m = s.model
    kv_bytes = dtype_bytes(s.kv_dtype, "kv_dtype")
    # a shipped preset is a published configuration; a user's config.json carries the model record's class
    cls = "published-spec" if m.source.startswith("preset ") else s.a("model").provenance
    cfg = f"{cls} ({m.source})"
    if m.attention == "MLA":
        rows = [
            ("layers", m.n_layers, "count", "config num_hidden_layers", cfg),
            ("kv_lora_rank", m.kv_lora_rank, "elements", "compressed KV latent per layer", cfg),
            ("qk_rope_head_dim", m.qk_rope_head_dim, "elements", "decoupled rope key per layer", cfg),
        ]
        formula = "layers × (kv_lora_rank + qk_rope_head_dim) × bytes"
    else:
        rows = [
            ("layers", m.n_layers, "count", "config num_hidden_layers", cfg),
            ("kv_heads", m.n_kv_heads, "count", f"config num_key_value_heads ({m.attention})", cfg),
            ("head_dim", m.head_dim, "elements", "config head_dim, else hidden_size / heads", cfg),
            ("K and V", 2, "count", "one key and one value vector per head", "derived"),
        ]
        formula = "2 × layers × kv_heads × head_dim × bytes"
    rows += [
        ("bytes_per_element", kv_bytes, "B", f"kv_dtype = {s.kv_dtype}", s.a("kv_dtype").provenance),
        ("kv_per_token", s.kv_bytes_per_token, "B", formula, "derived"),
        ("block_tokens", s.block_tokens, "tokens", s.a("block_tokens").basis, s.a("block_tokens").provenance),
        ("block", s.block_bytes, "B", "kv_per_token × block_tokens", "derived"),
    ]
    return declare(pd.DataFrame(rows, columns=list(COLUMNS)), named(*COLUMNS))


TABLES = (("block_unit", table, ("quantity",)),)
"""The page's tables of record: (name, builder, key columns)."""
FIGURES = ()
"""The page's figures: (glue name, function returning the figure and its caption)."""
