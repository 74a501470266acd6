"""The data shipped with kvtier, and the names by which a user asks for it.

The names live here, below every reader, so that the assumption schema (which must tell a
shipped name from a file path) and the readers that open the files share one list.
"""

MODEL_PRESETS: tuple[str, ...] = (
    "llama-2-7b",
    "llama-3-8b",
    "llama-3.1-8b",
    "llama-3-70b",
    "llama-3.1-70b",
    "llama-3.1-405b",
    "mistral-7b",
    "mixtral-8x7b",
    "qwen2.5-72b",
    "deepseek-v3",
)
"""Shipped model preset names; each is a published ``config.json`` under ``kvtier/data/models``."""

TRACE_DIR = "traces/mooncake-fast25"
"""Where the shipped traces live inside ``kvtier/data``."""

SHIPPED_TRACES: dict[str, str] = {
    "conversation": "conversation_trace.jsonl",
    "synthetic": "synthetic_trace.jsonl",
}
"""The shipped traces by name (files under :data:`TRACE_DIR`): Mooncake's FAST'25 conversation and synthetic traces."""

ENGINE_PRESETS: tuple[str, ...] = (
    "vllm",
    "vllm-0.11",
    "sglang",
    "sglang-layer-first",
    "tensorrt-llm",
    "lmcache",
    "lmcache-layerwise",
    "mooncake",
)
"""Serving-engine layout presets (``kvtier/data/engines.yaml``), the values of the ``engine`` key besides ``none``."""

DEPLOYMENT_PRESETS: tuple[str, ...] = (
    "llama-3.1-70b-h100",
    "llama-3.1-70b-h200",
    "deepseek-v3-h200",
    "llama-3.1-8b-h100",
)
"""Named deployments (``kvtier/data/deployments.yaml``), the values of ``workload.deployment`` besides ``build``."""

KERNEL_SYSTEMS: tuple[str, ...] = (
    "a100_sxm",
    "h100_sxm",
    "h200_sxm",
    "b200_sxm",
    "b300_sxm",
    "gb200",
    "gb300",
    "l40s",
    "rtx_pro_6000_server",
    "b60",
)
"""Systems ``aiconfigurator-core`` 0.12 ships measured kernel tables for (the values of ``regen.system``;
:mod:`kvtier.inputs.kernels`)."""

KERNEL_ENGINES: tuple[str, ...] = ("vllm", "sglang", "trtllm")
"""Engines whose kernels those tables time (the values of ``regen.engine`` besides ``auto``)."""
