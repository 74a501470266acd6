"""NVIDIA's measured kernel tables, through the estimator of ``aiconfigurator-core``.

``aiconfigurator-core`` (PyPI, Apache-2.0, NVIDIA) ships per-operation latencies measured on real
accelerators with each serving engine's own kernels (GEMMs, context and generation attention, MLA,
MoE, NCCL and custom all-reduce), one table set per system, engine and engine version, under
``aiconfigurator_core/systems/data/<system>/<op>/<engine>/<version>/*.parquet``; and a compiled
estimator (its Rust ``AicEngine``) that walks a model's forward step over those tables,
interpolating between the measured shapes.  This module is kvtier's one door to it:

- :func:`tables` names the table set a system, engine and version select (newest version by
  default), with its grid (the largest sequence, batch and GEMM row count measured), the files and
  their SHA-256, as a provenance :class:`~kvtier.inputs.provenance.Record`;
- :func:`estimator` compiles a model's forward pass under a placement for one table set (once per
  process, ~1 s);
- :meth:`Estimator.pass_ms` is one forward step's latency (the estimator's own step, ms) and
  :meth:`Estimator.op_ms` its per-operation breakdown, both refused outside the measured grid.

The package (and pyarrow) is imported inside the functions that need it, so that a quick answer under the MFU or
roofline model does not load it (``tests/commands/test_commands.py`` checks).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import tempfile
from dataclasses import dataclass, replace
from functools import cache
from importlib import metadata, resources
from pathlib import Path
from typing import Any

from kvtier.data import KERNEL_ENGINES, KERNEL_SYSTEMS
from kvtier.errors import KvtierError
from kvtier.inputs.provenance import Record

PACKAGE = "aiconfigurator-core"
"""The distribution that ships the tables and the estimator."""

ACCELERATOR_SYSTEMS: dict[str, str] = {
    "a100-sxm": "a100_sxm",
    "h100-sxm": "h100_sxm",
    "h200": "h200_sxm",
    "b200": "b200_sxm",
    "gb200": "gb200",
    "l40s": "l40s",
}
"""kvtier's accelerator presets (``kvtier/data/hardware.yaml``) with a table set: the system it is filed under."""

KV_MODES: dict[str, str] = {"bf16": "bfloat16", "fp16": "bfloat16", "fp8": "fp8"}
"""The estimator's KV-cache mode for each ``kv_dtype`` it has tables for (fp16 timed as bf16: same bytes)."""

WEIGHT_MODES: dict[str, str] = {
    "bf16": "bfloat16",
    "fp16": "bfloat16",
    "fp8": "fp8",
    "int8": "int8_wo",
    "int4": "int4_wo",
}
"""The estimator's GEMM mode for each weight type (the resolved ``weight_dtype``; fp16 timed as bf16, int8 and int4
as weight-only quantized GEMMs)."""

_TABLES = ("gemm/gemm_perf.parquet", "attention/context_attention_perf.parquet")
"""The two tables whose grids bound every dense pass: the GEMMs and the context (prefill) attention."""


_NO_WINDOW = (
    "; a sliding attention window, where the config sets one, is not modelled, so a sequence longer than it is"
    " timed with full attention"
)

ARCHITECTURE_ALIASES: dict[str, tuple[str, str]] = {
    "MistralForCausalLM": (
        "LlamaForCausalLM",
        "timed as LlamaForCausalLM, whose layers it shares (aiconfigurator-core has no Mistral model)" + _NO_WINDOW,
    ),
    "Phi3ForCausalLM": (
        "LlamaForCausalLM",
        "timed as LlamaForCausalLM, whose layers it shares (Phi-3's fused QKV and gate-up projections have Llama's"
        " shapes; aiconfigurator-core has no Phi-3 model)" + _NO_WINDOW,
    ),
    "GemmaForCausalLM": (
        "LlamaForCausalLM",
        "timed as LlamaForCausalLM, whose layers it shares (Gemma's GeGLU MLP has SwiGLU's shapes, its head_dim is"
        " read from the config; aiconfigurator-core has no Gemma model)",
    ),
}
"""Architectures the estimator has no model of, timed as the one with the same layers, and what that leaves out."""

_DEEPSEEK_MLA: dict[str, int] = {
    "q_lora_rank": 1536,
    "kv_lora_rank": 512,
    "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64,
    "v_head_dim": 128,
    "n_shared_experts": 1,
}
"""The MLA and shared-expert sizes aiconfigurator-core's DeepSeek model builds whatever the config says (DeepSeek-V3's,
R1's and Kimi-K2's); a DeepseekV3ForCausalLM config with others is refused rather than timed with these."""


def _supported() -> tuple[str, ...]:
    """The architectures the installed estimator has a model of (its ``ARCHITECTURE_TO_MODEL_FAMILY``)."""
    _package_root()
    from aiconfigurator_core.sdk.common import ARCHITECTURE_TO_MODEL_FAMILY

    return tuple(ARCHITECTURE_TO_MODEL_FAMILY)


def engine_config(config: dict[str, Any], model_name: str) -> tuple[dict[str, Any], str]:
    """The config the estimator is given for a model's ``config.json``, and how it is timed where not as itself.

    An architecture the estimator has no model of is timed as one whose layers it shares
    (:data:`ARCHITECTURE_ALIASES`, said in the second element); one it has a model of but would
    time with other shapes than the config's is refused, as is one it has no model of.

    Raises
    ------
    KvtierError
        One line naming the architecture (or the config field) and what the engine model times.
    """
    architectures = config.get("architectures")
    arch = architectures[0] if isinstance(architectures, list) and architectures else None
    supported = _supported()
    times = ", ".join(sorted({*supported, *ARCHITECTURE_ALIASES}))
    if not isinstance(arch, str):
        raise KvtierError(
            f"model {model_name}: its config.json names no architecture (field 'architectures'), which the engine"
            f" model needs to pick {PACKAGE}'s model of it; it times {times}"
        )
    where = f"model {model_name}: the engine model cannot time {arch}"
    timed_as = ""
    if arch in ARCHITECTURE_ALIASES:
        alias, timed_as = ARCHITECTURE_ALIASES[arch]
        config = {**config, "architectures": [alias, *architectures[1:]]}
    elif arch not in supported:
        raise KvtierError(f"{where}: {PACKAGE} {package_version()} has no model of it; it times {times}")
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else config
    if arch == "Qwen2MoeForCausalLM" and (text.get("shared_expert_intermediate_size") or 0) > 0:
        raise KvtierError(
            f"{where}: its shared expert (shared_expert_intermediate_size"
            f" {text['shared_expert_intermediate_size']}) is left out by {PACKAGE}'s MoE model"
        )
    if text.get("mlp_only_layers") or (text.get("decoder_sparse_step") or 1) != 1:
        raise KvtierError(
            f"{where}: dense layers among its MoE layers (mlp_only_layers {text.get('mlp_only_layers') or []},"
            f" decoder_sparse_step {text.get('decoder_sparse_step')}) are not modelled by {PACKAGE}, which makes every"
            " layer MoE"
        )
    if arch in ("DeepseekV3ForCausalLM", "DeepSeekForCausalLM"):
        other = [
            f"{key} {text.get(key)} (not {value})"
            for key, value in _DEEPSEEK_MLA.items()
            if key in text and text.get(key) != value
        ]
        if other:
            raise KvtierError(
                f"{where}: {PACKAGE}'s DeepSeek model builds DeepSeek-V3's attention and shared expert, and this"
                f" config's differ: {', '.join(other)}"
            )
    return config, timed_as


class OutsideGrid(KvtierError):
    """A pass outside a table set's measured grid: refused, not extrapolated (:meth:`Estimator.check`)."""


def _package_root() -> Path:
    """Where ``aiconfigurator_core`` is installed; KvtierError naming the package when it is not."""
    try:
        import aiconfigurator_core
    except ImportError as exc:  # a core dependency: only a broken install gets here
        raise KvtierError(
            f"regen.model engine needs the Python package {PACKAGE} (pip install {PACKAGE}); it is not importable"
        ) from exc
    return Path(aiconfigurator_core.__file__).parent


def package_version() -> str:
    """The installed ``aiconfigurator-core`` version (e.g. ``"0.12.0"``)."""
    _package_root()
    return metadata.version(PACKAGE)


def _version_key(text: str) -> tuple[Any, ...]:
    """Sort key of an engine version folder name (``0.24.0``, ``1.3.0rc20``, ``0.5.6.post2``)."""
    from packaging.version import InvalidVersion, Version

    try:
        return (1, Version(text))
    except InvalidVersion:
        return (0, text)


def versions(system: str, engine: str) -> list[str]:
    """Engine versions with both a GEMM and a context-attention table on ``system``, oldest first."""
    data = _package_root() / "systems" / "data" / system
    found = []
    for folder in sorted((data / "attention" / engine).glob("*")):
        if (folder / "context_attention_perf.parquet").is_file() and (
            data / "gemm" / engine / folder.name / "gemm_perf.parquet"
        ).is_file():
            found.append(folder.name)
    return sorted(found, key=_version_key)


@dataclass(frozen=True)
class Tables:
    """One table set: a system, an engine and its version, and the grid its tables were measured on.

    Attributes
    ----------
    system, engine, version : str
        As the package files them (``"h200_sxm"``, ``"vllm"``, ``"0.24.0"``).
    package_version : str
        The ``aiconfigurator-core`` release the tables come from.
    max_sequence_tokens : int
        Longest sequence the context-attention table measured (tokens).
    max_batch : int
        Most sequences in one context-attention measurement (count).
    max_gemm_tokens : int
        Most rows (tokens) of a measured GEMM (count).
    files : tuple of (str, str)
        Each table's path under ``aiconfigurator_core/`` and its SHA-256.
    gemm_modes : tuple of str
        The GEMM element types the GEMM table measured (``bfloat16``, ``fp8``, ...).
    """

    system: str
    engine: str
    version: str
    package_version: str
    max_sequence_tokens: int
    max_batch: int
    max_gemm_tokens: int
    files: tuple[tuple[str, str], ...]
    gemm_modes: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """``h200_sxm vllm 0.24.0``: the table set in words."""
        return f"{self.system} {self.engine} {self.version}"

    @property
    def record(self) -> Record:
        """The table set as a provenance record (``regen.kernel_tables``): measured by NVIDIA, with its files."""
        files = "; ".join(f"{path} (sha256 {digest[:12]})" for path, digest in self.files)
        return Record(
            "regen.kernel_tables",
            self.label,
            "text",
            f"{PACKAGE} {self.package_version}: {self.label}",
            "measured",
            f"per-operation latencies NVIDIA measured on {self.system} with {self.engine} {self.version}'s kernels,"
            f" composed into a forward step by the package's estimator (AicEngine), interpolated inside the"
            f" measured grid (sequences up to {self.max_sequence_tokens:,} tokens, batches up to {self.max_batch},"
            f" GEMMs up to {self.max_gemm_tokens:,} rows) and refused outside it",
            f"PyPI {PACKAGE} {self.package_version} (Apache-2.0), aiconfigurator_core/{files}",
        )


def _column_values(path: Path, column: str) -> tuple[str, ...]:
    """The distinct values of ``column`` in a parquet table, sorted."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    return tuple(sorted(str(v) for v in pc.unique(pq.read_table(path, columns=[column])[column]).to_pylist()))


def _column_max(path: Path, column: str) -> int:
    """The largest value of ``column`` in a parquet table."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    return int(pc.max(pq.read_table(path, columns=[column])[column]).as_py())


@cache
def tables(system: str, engine: str, version: str = "newest") -> Tables:
    """The table set of ``system``, ``engine`` and ``version`` (``"newest"``: the newest in the package).

    Raises
    ------
    KvtierError
        One line naming the key: a system, engine or version the installed package has no
        tables for, with the ones it has.
    """
    if system not in KERNEL_SYSTEMS:
        raise KvtierError(f"key 'regen.system': {system!r} is not one of {', '.join(KERNEL_SYSTEMS)}")
    if engine not in KERNEL_ENGINES:
        raise KvtierError(f"key 'regen.engine': {engine!r} is not one of {', '.join(KERNEL_ENGINES)}")
    have = versions(system, engine)
    if not have:
        raise KvtierError(
            f"key 'regen.system': {PACKAGE} {package_version()} has no {engine} tables for {system}"
            f" (systems with {engine} tables: {', '.join(s for s in KERNEL_SYSTEMS if versions(s, engine))})"
        )
    chosen = have[-1] if version == "newest" else version
    if chosen not in have:
        raise KvtierError(
            f"key 'regen.engine_version': {PACKAGE} {package_version()} has no {engine} {version} tables for"
            f" {system}; it has {', '.join(have)} (or newest)"
        )
    root = _package_root()
    paths = [root / "systems" / "data" / system / t.split("/")[0] / engine / chosen / t.split("/")[1] for t in _TABLES]
    gemm, attention = paths
    return Tables(
        system=system,
        engine=engine,
        version=chosen,
        package_version=package_version(),
        max_sequence_tokens=_column_max(attention, "isl"),
        max_batch=_column_max(attention, "batch_size"),
        max_gemm_tokens=_column_max(gemm, "m"),
        gemm_modes=_column_values(gemm, "gemm_dtype"),
        files=tuple((str(p.relative_to(root)), hashlib.sha256(p.read_bytes()).hexdigest()) for p in (gemm, attention)),
    )


@dataclass(frozen=True)
class Estimator:
    """A model's forward pass compiled for one table set and placement.

    Attributes
    ----------
    tables : Tables
        The table set it times with.
    handle : Any
        The package's ``EngineHandle``.
    timed_as : str
        How the model's architecture was timed where the estimator has no model of its own name
        (:data:`ARCHITECTURE_ALIASES`); empty when it has one.
    """

    tables: Tables
    handle: Any
    timed_as: str = ""

    def crossed(self, batch: int, sequence_tokens: int, new_tokens: int) -> str:
        """The first bound of the measured grid a pass crosses, in words; empty inside the grid.

        Parameters
        ----------
        batch : int
            Sequences in the pass (count).
        sequence_tokens : int
            Each sequence's length, its cached prefix included (tokens).
        new_tokens : int
            Tokens each sequence computes (tokens); ``batch x new_tokens`` are a GEMM's rows.
        """
        t = self.tables
        for value, bound, what in (
            (sequence_tokens, t.max_sequence_tokens, "a sequence of {:,} tokens (context attention measured to {:,})"),
            (batch, t.max_batch, "{:,} sequences in one pass (context attention measured to {:,})"),
            (batch * new_tokens, t.max_gemm_tokens, "{:,} tokens in one pass (GEMMs measured to {:,} rows)"),
        ):
            if value > bound:
                return what.format(value, bound)
        return ""

    def check(self, batch: int, sequence_tokens: int, new_tokens: int) -> None:
        """Refuse a pass outside the measured grid (:meth:`crossed`): one line naming the table set and the bound."""
        what = self.crossed(batch, sequence_tokens, new_tokens)
        if what:
            raise OutsideGrid(
                f"regen.model engine: {what} is outside the measured grid of {self.tables.label}"
                f" ({PACKAGE} {self.tables.package_version}); regen.beyond_grid=extrapolate"
                " (--beyond-grid extrapolate) times it by the package's extrapolation"
            )

    def pass_ms(self, batch: int, sequence_tokens: int, cached_tokens: int, extrapolate: bool = False) -> float:
        """One prefill step's latency by the estimator (ms): ``batch`` sequences of ``sequence_tokens``
        tokens each, the first ``cached_tokens`` of each already cached.  Outside the measured grid
        it refuses (:meth:`check`) unless ``extrapolate``, when the package's engine extrapolates its
        tables (context attention grows as the square of the sequence, a GEMM with its rows)."""
        if not extrapolate:
            self.check(batch, sequence_tokens, sequence_tokens - cached_tokens)
        return _pass_ms(self, batch, sequence_tokens, cached_tokens)

    def op_ms(
        self, batch: int, sequence_tokens: int, cached_tokens: int, extrapolate: bool = False
    ) -> dict[str, float]:
        """The same step's latency per operation (ms), by the estimator's operation name (``context_attention``...)."""
        if not extrapolate:
            self.check(batch, sequence_tokens, sequence_tokens - cached_tokens)
        return _op_ms(self, batch, sequence_tokens, cached_tokens)


def _one_line(exc: Exception, est: Estimator) -> KvtierError:
    """The estimator's own error as one line naming the table set (its messages run to several)."""
    text = (str(exc).strip() or type(exc).__name__).splitlines()[0]
    # a missing table's path in the installed package (its key names it) and the fallbacks it tried
    text = re.sub(r" at /\S+", "", text).split(": tried lane_order")[0]
    return KvtierError(f"regen.model engine: {PACKAGE} cannot time the pass on {est.tables.label}: {text}")


@cache
def _pass_ms(est: Estimator, batch: int, sequence_tokens: int, cached_tokens: int) -> float:
    try:
        return float(est.handle.predict_prefill_latency(batch, sequence_tokens, cached_tokens))
    except Exception as exc:  # its own error types, a missing table among them
        raise _one_line(exc, est) from exc


@cache
def _op_ms(est: Estimator, batch: int, sequence_tokens: int, cached_tokens: int) -> dict[str, float]:
    try:
        ops, _ = est.handle.run_static_per_op(batch_size=batch, isl=sequence_tokens, osl=1, prefix=cached_tokens)
    except Exception as exc:
        raise _one_line(exc, est) from exc
    out: dict[str, float] = {}
    for op in ops:
        out[op[0]] = out.get(op[0], 0.0) + float(op[1])
    return out


def estimator(
    config: dict[str, Any],
    model_name: str,
    tables_: Tables,
    *,
    tp: int = 1,
    pp: int = 1,
    ep: int = 1,
    kv_dtype: str = "bf16",
    weight_dtype: str = "bf16",
) -> Estimator:
    """A model's forward pass compiled for ``tables_`` under a placement (cached per process).

    Parameters
    ----------
    config : dict
        The model's Hugging Face ``config.json``, parsed.
    model_name : str
        The model's name, for messages.
    tables_ : Tables
        The table set (:func:`tables`).
    tp, pp, ep : int
        Tensor-, pipeline- and expert-parallel sizes (``pp x max(tp, ep)`` accelerators, as
        :class:`kvtier.scenario.placement.Placement` counts them): the MoE layers run ``tp / ep``-way tensor
        parallel, and for ``ep`` above ``tp`` attention runs ``ep / tp`` data-parallel replicas.
    kv_dtype, weight_dtype : str
        Element types of the KV cache and the weights (:data:`KV_MODES`, :data:`WEIGHT_MODES`); ``auto`` weights
        leave the estimator to read the config's ``quantization_config`` (block-scaled fp8 for DeepSeek-V3).

    Raises
    ------
    KvtierError
        One line: a dtype or placement the tables do not time, or a model the estimator cannot build.
    """
    if kv_dtype not in KV_MODES:
        raise KvtierError(f"key 'kv_dtype': the engine model times {', '.join(KV_MODES)} KV caches, not {kv_dtype}")
    if weight_dtype != "auto" and weight_dtype not in WEIGHT_MODES:
        raise KvtierError(
            f"key 'weight_dtype': the engine model times {', '.join(WEIGHT_MODES)} weights, not {weight_dtype}"
        )
    mode = WEIGHT_MODES.get(weight_dtype)  # None for auto: the estimator infers it from quantization_config
    if mode is not None and mode not in tables_.gemm_modes:
        raise KvtierError(
            f"key 'weight_dtype': {tables_.label} has GEMM tables for {', '.join(tables_.gemm_modes)}, not"
            f" {weight_dtype} ({mode})"
        )
    if max(tp, ep) % min(tp, ep):
        raise KvtierError(f"key 'parallel.ep': the engine model needs ep ({ep}) and tp ({tp}) to divide one another")
    config, timed_as = engine_config(config, model_name)
    text = json.dumps(config, sort_keys=True)
    est = _compile(text, model_name, tables_, tp, pp, ep, KV_MODES[kv_dtype], mode)
    return replace(est, timed_as=timed_as) if timed_as else est


@cache
def _compile(
    config_text: str, model_name: str, t: Tables, tp: int, pp: int, ep: int, kv_mode: str, gemm_mode: str | None
) -> Estimator:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach for the network
    _package_root()
    from aiconfigurator_core.sdk.engine import EngineHandle

    quiet = logging.getLogger("aiconfigurator_core")
    level = quiet.level
    quiet.setLevel(logging.ERROR)  # it logs every fallback table it reads at WARNING
    try:
        # the estimator reads a directory holding config.json (given a file path it would try the Hugging Face hub);
        # it reads it while compiling, so the directory is removed right after
        with tempfile.TemporaryDirectory(prefix="kvtier-model-") as folder:
            Path(folder, "config.json").write_text(config_text)
            handle = EngineHandle.compile(
                folder,
                t.system,
                t.engine,
                backend_version=t.version,
                tp_size=tp,
                pp_size=pp,
                # ep above tp: attention runs ep / tp data-parallel replicas over the same accelerators
                attention_dp_size=max(1, ep // tp),
                moe_tp_size=max(1, tp // ep),
                moe_ep_size=ep,
                kvcache_quant_mode=kv_mode,
                gemm_quant_mode=gemm_mode,
            )
    except Exception as exc:  # the estimator raises its own types; one line, the cause kept
        text = str(exc).strip() or type(exc).__name__
        first = text.splitlines()[0].split(" Supported architectures:")[0]  # not the list of 30 names
        raise KvtierError(f"model {model_name}: {PACKAGE} cannot build its forward pass on {t.label}: {first}") from exc
    finally:
        quiet.setLevel(level)
    return Estimator(t, handle)


def model_config(spec: str) -> dict[str, Any]:
    """The ``config.json`` of the ``model`` key's value, parsed: a shipped preset's, or the file it names."""
    from kvtier.inputs.models import PRESETS, config_path
    from kvtier.inputs.readers import load_json

    if spec in PRESETS:
        with resources.as_file(resources.files("kvtier.data").joinpath("models", f"{spec}.json")) as path:
            return load_json(path, "model config file", f"preset {spec}")
    path = config_path(spec)
    if path is None:
        raise KvtierError(f"model {spec!r}: unknown preset")
    return load_json(path, "model config file")
