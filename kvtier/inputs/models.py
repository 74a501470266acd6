"""Transformer models from a Hugging Face ``config.json``: KV bytes, parameters, FLOPs.

A :class:`ModelSpec` is read from a ``config.json`` path or a shipped preset name
(the published configs in ``kvtier/data/models``).  It covers decoder-only models
with gated (SwiGLU) MLPs under multi-head (MHA), grouped-query (GQA/MQA) and
multi-head latent (MLA) attention, dense or mixture-of-experts (MoE).

Conventions
-----------
- KV bytes per token, MHA/GQA: ``2 (K and V) x layers x kv_heads x head_dim x bytes``.
  ``num_key_value_heads`` absent means equal to ``num_attention_heads``; an explicit
  ``head_dim`` wins over ``hidden_size / num_attention_heads``.
- KV bytes per token, MLA: the compressed latent plus the decoupled rope key,
  ``layers x (kv_lora_rank + qk_rope_head_dim) x bytes`` (no factor 2).
- Parameters count every weight matrix, bias and norm of the main model (embedding and,
  when untied, the LM head); DeepSeek's multi-token-prediction module is not counted.
- FLOPs per token: ``flops_per_param_token x active parameters`` (2 by convention) plus,
  as a separate component, the attention-score term ``2 x layers x heads x (d_qk + d_v)``
  per cached position attended to.
- The published weight element type (:attr:`ModelSpec.weight_dtype`, what ``weight_dtype: auto`` reads):
  the format ``quantization_config`` names (fp8; AWQ, GPTQ or bitsandbytes at 8 or 4 bits: int8, int4;
  compressed-tensors whose groups agree), else ``torch_dtype`` (``dtype`` in newer configs: bfloat16,
  float16, float32), else bf16, assumed.  Every weight is counted at that type: the tensors a
  checkpoint leaves unquantized (DeepSeek-V3's embeddings, LM head and norms, about 0.3 % of its
  bytes) and the quantization scales (one fp32 per 128 x 128 block there, 0.02 %) are not counted apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from kvtier.data import MODEL_PRESETS
from kvtier.errors import KvtierError, show
from kvtier.inputs.readers import load_json
from kvtier.units import AUTO_DTYPE, DTYPE_BYTES, WEIGHT_DTYPE_BYTES

PRESETS: tuple[str, ...] = MODEL_PRESETS
"""Shipped preset names; each is a published ``config.json`` under ``kvtier/data/models``."""

_REQUIRED = ("num_hidden_layers", "hidden_size", "num_attention_heads", "vocab_size")


@dataclass(frozen=True)
class ModelSpec:
    """Architecture of one decoder-only transformer, as far as the arithmetic needs it.

    Attributes are counts (dimensionless); see the module docstring for conventions.
    """

    name: str
    source: str
    model_type: str
    n_layers: int
    hidden_size: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    tie_embeddings: bool
    qkv_bias: bool = False
    # MLA (DeepSeek-V2/V3); zero when absent
    kv_lora_rank: int = 0
    q_lora_rank: int = 0
    qk_rope_head_dim: int = 0
    qk_nope_head_dim: int = 0
    v_head_dim: int = 0
    # MoE; zero experts means dense
    n_routed_experts: int = 0
    n_shared_experts: int = 0
    experts_per_token: int = 0
    moe_intermediate_size: int = 0
    first_dense_layers: int = 0
    moe_layer_freq: int = 1
    router_bias: bool = False
    # context limits and published weight format; zero or empty when the config does not say
    max_positions: int = 0
    sliding_window: int = 0
    sliding_layers: int = 0
    weight_quantization: str = ""
    # the published weight element type (a key of WEIGHT_DTYPE_BYTES; "" when the config names one kvtier does
    # not know), what in the config says so, and that statement's provenance class
    weight_dtype: str = "bf16"
    weight_dtype_basis: str = "the config states no weight dtype: bf16 assumed"
    weight_dtype_provenance: str = "assumed"

    # ---- classification -------------------------------------------------
    @property
    def attention(self) -> str:
        """``MLA``, ``MHA``, ``MQA`` or ``GQA``."""
        if self.kv_lora_rank:
            return "MLA"
        if self.n_kv_heads == self.n_heads:
            return "MHA"
        if self.n_kv_heads == 1:
            return "MQA"
        return "GQA"

    @property
    def is_moe(self) -> bool:
        """Whether any layer routes tokens among experts."""
        return self.n_routed_experts > 0

    @property
    def n_moe_layers(self) -> int:
        """How many layers hold an MoE block instead of a dense MLP.

        Layer ``i`` (from 0) is MoE when ``i >= first_dense_layers`` and ``i`` is a multiple of
        ``moe_layer_freq``: the multiples of ``q`` in ``[0, n)`` number ``ceil(n / q)``, so the
        count is ``ceil(layers / q) - ceil(first_dense_layers / q)``, never below 0.
        """
        if not self.is_moe:
            return 0
        q = max(self.moe_layer_freq, 1)
        return max(0, -(-self.n_layers // q) - -(-self.first_dense_layers // q))

    # ---- KV cache ---------------------------------------------------------
    def kv_elements_per_token(self) -> int:
        """Cached elements per token over all layers (K and V, or MLA latent + rope key)."""
        if self.attention == "MLA":
            return self.n_layers * (self.kv_lora_rank + self.qk_rope_head_dim)
        return 2 * self.n_layers * self.n_kv_heads * self.head_dim

    def kv_bytes_per_token(self, kv_dtype: str = "bf16") -> int:
        """KV-cache bytes per token for ``kv_dtype`` (bf16, fp16, fp32, fp8)."""
        return self.kv_elements_per_token() * dtype_bytes(kv_dtype, "kv_dtype")

    # ---- parameters -------------------------------------------------------
    def _attention_params(self) -> int:
        h = self.hidden_size
        if self.attention == "MLA":
            qk = self.qk_nope_head_dim + self.qk_rope_head_dim
            if self.q_lora_rank:
                q = h * self.q_lora_rank + self.q_lora_rank + self.q_lora_rank * self.n_heads * qk
            else:
                q = h * self.n_heads * qk
            kv_a = h * (self.kv_lora_rank + self.qk_rope_head_dim) + self.kv_lora_rank
            kv_b = self.kv_lora_rank * self.n_heads * (self.qk_nope_head_dim + self.v_head_dim)
            o = self.n_heads * self.v_head_dim * h
            return q + kv_a + kv_b + o
        q_dim = self.n_heads * self.head_dim
        kv_dim = self.n_kv_heads * self.head_dim
        weights = h * q_dim + 2 * h * kv_dim + q_dim * h
        bias = (q_dim + 2 * kv_dim) if self.qkv_bias else 0
        return weights + bias

    def _mlp_params(self, width: int) -> int:
        # gated MLP: gate, up (hidden -> width) and down (width -> hidden)
        return 3 * self.hidden_size * width

    def _moe_layer_params(self) -> tuple[int, int]:
        """(total, active) parameters of one MoE block."""
        width = self.moe_intermediate_size or self.intermediate_size
        expert = self._mlp_params(width)
        router = self.hidden_size * self.n_routed_experts + (self.n_routed_experts if self.router_bias else 0)
        shared = self.n_shared_experts * expert
        total = self.n_routed_experts * expert + shared + router
        active = self.experts_per_token * expert + shared + router
        return total, active

    def param_counts(self) -> tuple[int, int]:
        """(total, active) parameters of the main model, embeddings and LM head included."""
        norms = 2 * self.hidden_size
        attn = self._attention_params()
        n_moe = self.n_moe_layers
        n_dense = self.n_layers - n_moe
        dense_layer = attn + self._mlp_params(self.intermediate_size) + norms
        total = n_dense * dense_layer
        active = total
        if n_moe:
            moe_total, moe_active = self._moe_layer_params()
            total += n_moe * (attn + moe_total + norms)
            active += n_moe * (attn + moe_active + norms)
        embed = self.vocab_size * self.hidden_size * (1 if self.tie_embeddings else 2)
        final_norm = self.hidden_size
        return total + embed + final_norm, active + embed + final_norm

    @property
    def expert_params(self) -> int:
        """Parameters of one routed expert (a gated MLP of ``moe_intermediate_size``); 0 for a dense model."""
        if not self.is_moe:
            return 0
        return self._mlp_params(self.moe_intermediate_size or self.intermediate_size)

    def routed_param_counts(self) -> tuple[int, int]:
        """(all, per token) parameters of the routed experts over every MoE layer; (0, 0) for a dense model.

        All: ``moe_layers x experts x expert``; per token: ``moe_layers x experts_per_token x expert``.
        Shared experts and routers are not routed: they count with the dense weights.
        """
        one = self.n_moe_layers * self.expert_params
        return self.n_routed_experts * one, self.experts_per_token * one

    @property
    def total_params(self) -> int:
        """All parameters (every expert counted)."""
        return self.param_counts()[0]

    @property
    def active_params(self) -> int:
        """Parameters a single token passes through (routed experts: only the chosen ones)."""
        return self.param_counts()[1]

    # ---- FLOPs ------------------------------------------------------------
    def attention_flops_per_position(self) -> int:
        """Attention-score FLOPs per token per cached position it attends to.

        ``2 x layers x heads x (d_qk + d_v)``: a multiply-add per element of Q·K^T and of
        the probability-weighted sum over V. MLA uses its uncompressed head sizes.
        """
        if self.attention == "MLA":
            d_qk = self.qk_nope_head_dim + self.qk_rope_head_dim
            d_v = self.v_head_dim
        else:
            d_qk = d_v = self.head_dim
        return 2 * self.n_layers * self.n_heads * (d_qk + d_v)


def dtype_bytes(dtype: str, key: str = "dtype") -> int:
    """Bytes per element of ``dtype``; KvtierError naming ``key`` if unknown."""
    try:
        return DTYPE_BYTES[dtype]
    except KeyError:
        raise KvtierError(f"{key} must be one of {', '.join(DTYPE_BYTES)}, got {dtype!r}") from None


def weight_dtype_bytes(dtype: str, key: str = "weight_dtype") -> float:
    """Bytes per weight of ``dtype`` (B; 0.5 for int4); KvtierError naming ``key`` if unknown.

    ``auto`` is no element type: resolve it first with :func:`resolve_weight_dtype`.
    """
    try:
        return WEIGHT_DTYPE_BYTES[dtype]
    except KeyError:
        raise KvtierError(f"{key} must be one of {', '.join(WEIGHT_DTYPE_BYTES)}, got {dtype!r}") from None


def resolve_weight_dtype(model: ModelSpec, dtype: str, key: str = "weight_dtype") -> str:
    """The element type the weights of ``model`` are counted in: ``dtype``, or the published one for ``auto``.

    Parameters
    ----------
    model : ModelSpec
        The model whose published type (:attr:`ModelSpec.weight_dtype`) ``auto`` reads.
    dtype : str
        ``auto`` or a key of :data:`kvtier.units.WEIGHT_DTYPE_BYTES` (a concrete type wins over the config).
    key : str
        The key or option named in an error (``weight_dtype``, ``--weight-dtype``).

    Raises
    ------
    KvtierError
        An unknown ``dtype``, or ``auto`` for a config whose quantization kvtier cannot read, naming the
        config and the key to set.
    """
    if dtype != AUTO_DTYPE:
        if dtype not in WEIGHT_DTYPE_BYTES:
            raise KvtierError(
                f"{key} must be {AUTO_DTYPE} or one of {', '.join(WEIGHT_DTYPE_BYTES)}, got {show(dtype, quote=True)}"
            )
        return dtype
    if not model.weight_dtype:
        raise KvtierError(
            f"{model.source}: {key} is auto but {model.weight_dtype_basis} names no weight dtype kvtier knows;"
            f" set {key} to one of {', '.join(WEIGHT_DTYPE_BYTES)}"
        )
    return model.weight_dtype


MAX_CONFIG_INT = 10**12
"""Largest integer accepted for a config field without a bound of its own in :data:`CONFIG_MAX`."""

_LAYERS_MAX = 100_000
CONFIG_MAX: dict[str, int] = {
    "num_hidden_layers": _LAYERS_MAX,
    "first_k_dense_replace": _LAYERS_MAX,
    "moe_layer_freq": _LAYERS_MAX,
    "sliding_window_pattern": _LAYERS_MAX,
    "max_window_layers": _LAYERS_MAX,
    "hidden_size": 2**20,
    "intermediate_size": 2**24,
    "moe_intermediate_size": 2**24,
    "vocab_size": 2**24,
    "num_attention_heads": 2**16,
    "num_key_value_heads": 2**16,
    "head_dim": 2**16,
    "kv_lora_rank": 2**20,
    "q_lora_rank": 2**20,
    "qk_rope_head_dim": 2**16,
    "qk_nope_head_dim": 2**16,
    "v_head_dim": 2**16,
    "n_routed_experts": 2**16,
    "num_local_experts": 2**16,
    "n_shared_experts": 2**16,
    "num_experts_per_tok": 2**16,
}
"""Largest value of each config field (a count or a size): generous, and each a typo if exceeded.

The largest published models have about 130 layers, hidden size 2**14 to 2**15, 128 heads,
a vocabulary of 2**18 and 256 experts; these bounds are 100 to 1000 times that, and keep
every count computed from them (parameters, KV bytes, FLOPs) far below float overflow.
"""


def _int(config: dict[str, Any], key: str, where: str, default: int | None = None, low: int = 0) -> int:
    """Config field ``key`` as an integer in ``[low, CONFIG_MAX[key]]``; ``default`` when absent or null."""
    value = config.get(key)
    if value is None:  # absent, or an explicit null: the default applies where there is one
        value = default
    if value is None:
        raise KvtierError(f"{where}: missing required field '{key}'")
    high = CONFIG_MAX.get(key, MAX_CONFIG_INT)
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    ok = ok and low <= value <= high and value == int(value)  # NaN and inf fail the range test
    if not ok:
        raise KvtierError(
            f"{where}: field '{key}' must be an integer in [{low}, {high:,}], got {show(value, quote=True, limit=40)}"
        )
    return int(value)


def _bool(config: dict[str, Any], key: str, where: str) -> bool:
    """Config field ``key`` as a JSON boolean (``true``/``false``); False when absent or null.

    A string is refused rather than read by truthiness: ``"false"`` would be true.
    """
    value = config.get(key)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise KvtierError(
            f"{where}: field '{key}' must be true or false (a JSON boolean), got {show(value, quote=True)}"
        )
    return value


def _kv_heads(config: dict[str, Any], n_heads: int, where: str) -> int:
    """``num_key_value_heads`` (``num_attention_heads`` when absent), checked against the query heads.

    Grouped-query attention shares each KV head among ``heads / kv_heads`` query heads, so
    the KV heads must divide the query heads (and so cannot outnumber them); 0 is refused.
    """
    n_kv = _int(config, "num_key_value_heads", where, default=n_heads, low=1)
    if n_kv > n_heads or n_heads % n_kv:
        raise KvtierError(
            f"{where}: 'num_attention_heads' ({n_heads}) must be a multiple of 'num_key_value_heads' ({n_kv})"
        )
    return n_kv


def _experts(config: dict[str, Any], where: str) -> tuple[int, int]:
    """(routed experts, experts per token); (0, 0) for a dense model.

    The experts are ``n_routed_experts`` (DeepSeek), ``num_local_experts`` (Mixtral, gpt-oss) or ``num_experts``
    (Qwen2-MoE, Qwen3-MoE); a
    token cannot be routed to more of them than there are.
    """
    for key in ("n_routed_experts", "num_local_experts", "num_experts"):
        n_routed = _int(config, key, where, default=0)
        if n_routed:
            break
    if not n_routed:
        return 0, 0
    per_token = _int(config, "num_experts_per_tok", where, default=0)
    if per_token > n_routed:
        raise KvtierError(f"{where}: 'num_experts_per_tok' ({per_token}) exceeds '{key}' ({n_routed})")
    return n_routed, per_token


def _sliding_layers(config: dict[str, Any], where: str, n_layers: int) -> int:
    """How many layers attend only to the last ``sliding_window`` tokens (0 when there is no window).

    In the order transformers uses: ``layer_types`` lists each layer's kind; else
    ``sliding_window_pattern = p`` (Gemma-3, Cohere2) makes every p-th layer global and
    the rest local; else Gemma-2 (``model_type: gemma2``) alternates, local first, so
    ``ceil(layers / 2)`` are local; else ``max_window_layers = m`` (Qwen2) makes layers
    ``m`` and up local; else every layer is (Mistral).  A ``hybrid`` cache with none of
    these cannot say which layers are local and is refused.
    """
    if "layer_types" in config:
        types = config["layer_types"]
        if not isinstance(types, list) or len(types) != n_layers or not all(isinstance(t, str) for t in types):
            raise KvtierError(f"{where}: field 'layer_types' must be a list of {n_layers} strings, one per layer")
        return sum(kind == "sliding_attention" for kind in types)
    if config.get("sliding_window_pattern") is not None:
        return n_layers - n_layers // _int(config, "sliding_window_pattern", where, low=1)
    if config.get("model_type") == "gemma2":
        return (n_layers + 1) // 2
    if config.get("max_window_layers") is not None:
        return max(0, n_layers - _int(config, "max_window_layers", where))
    if config.get("cache_implementation") == "hybrid":
        raise KvtierError(
            f"{where}: 'cache_implementation' is 'hybrid' (local and global layers) but neither"
            " 'layer_types' nor 'sliding_window_pattern' says which layers are local"
        )
    return n_layers


def from_config(config: dict[str, Any], name: str, where: str) -> ModelSpec:
    """Build a :class:`ModelSpec` from a parsed Hugging Face ``config.json``.

    Parameters
    ----------
    config : dict
        The parsed JSON.
    name : str
        Display name of the model.
    where : str
        File or preset name used in error messages.

    Raises
    ------
    KvtierError
        A missing field, a size outside its bound (:data:`CONFIG_MAX`), a flag that is no
        JSON boolean, or a geometry no model has (KV heads that do not divide the query
        heads, more experts per token than experts).
    """
    if not isinstance(config, dict):
        raise KvtierError(f"{where}: expected a JSON object")
    if "text_config" in config and "hidden_size" not in config:
        if not isinstance(config["text_config"], dict):
            raise KvtierError(f"{where}: field 'text_config' must be a JSON object")
        config = {**config["text_config"], **{k: v for k, v in config.items() if k != "text_config"}}
    for key in _REQUIRED:
        _int(config, key, where)
    n_heads = _int(config, "num_attention_heads", where)
    hidden = _int(config, "hidden_size", where)
    if n_heads == 0 or hidden == 0:
        raise KvtierError(f"{where}: 'num_attention_heads' and 'hidden_size' must be positive")
    n_kv = _kv_heads(config, n_heads, where)
    head_dim = config.get("head_dim")
    head_dim = _int(config, "head_dim", where, low=1) if head_dim is not None else hidden // n_heads
    if head_dim < 1:
        raise KvtierError(f"{where}: hidden_size / num_attention_heads must be at least 1 (or give 'head_dim')")
    n_routed, per_token = _experts(config, where)
    mla = config.get("kv_lora_rank") is not None
    if "intermediate_size" not in config and not n_routed:
        raise KvtierError(f"{where}: missing required field 'intermediate_size'")
    model_type = str(config.get("model_type", "unknown"))
    qkv_bias = _bool(config, "attention_bias", where) or model_type == "qwen2"
    n_layers = _int(config, "num_hidden_layers", where, low=1)
    # Qwen2 configs state a window but switch it off with use_sliding_window: false
    use_window = _bool(config, "use_sliding_window", where) if "use_sliding_window" in config else True
    window = _int(config, "sliding_window", where, default=0) if use_window else 0
    sliding_layers = _sliding_layers(config, where, n_layers) if window else 0
    return ModelSpec(
        name=name,
        source=where,
        model_type=model_type,
        n_layers=n_layers,
        hidden_size=hidden,
        n_heads=n_heads,
        n_kv_heads=n_kv,
        head_dim=head_dim,
        intermediate_size=_int(config, "intermediate_size", where, default=0),
        vocab_size=_int(config, "vocab_size", where),
        tie_embeddings=_bool(config, "tie_word_embeddings", where),
        qkv_bias=qkv_bias,
        kv_lora_rank=_int(config, "kv_lora_rank", where, default=0) if mla else 0,
        q_lora_rank=_int(config, "q_lora_rank", where, default=0) if mla else 0,
        qk_rope_head_dim=_int(config, "qk_rope_head_dim", where) if mla else 0,
        qk_nope_head_dim=_int(config, "qk_nope_head_dim", where) if mla else 0,
        v_head_dim=_int(config, "v_head_dim", where) if mla else 0,
        n_routed_experts=n_routed,
        n_shared_experts=_int(config, "n_shared_experts", where, default=0),
        experts_per_token=per_token,
        moe_intermediate_size=_int(config, "moe_intermediate_size", where, default=0),
        first_dense_layers=_int(config, "first_k_dense_replace", where, default=0),
        moe_layer_freq=_int(config, "moe_layer_freq", where, default=1),
        router_bias=config.get("topk_method") == "noaux_tc",
        max_positions=_int(config, "max_position_embeddings", where, default=0),
        sliding_window=window if sliding_layers else 0,
        sliding_layers=sliding_layers,
        weight_quantization=_quantization(config, where),
        **_published_weight_dtype(config),
    )


def load_model(spec: str) -> ModelSpec:
    """Load a model from a preset name or a ``config.json`` path.

    Parameters
    ----------
    spec : str
        One of :data:`PRESETS`, or a path to a Hugging Face ``config.json`` (or to a
        directory holding one).

    Raises
    ------
    KvtierError
        Unknown preset; a missing, oversized or malformed file (see :mod:`kvtier.inputs.readers`);
        or a config :func:`from_config` refuses.
    """
    if spec in PRESETS:
        ref = resources.files("kvtier.data").joinpath("models", f"{spec}.json")
        with resources.as_file(ref) as path:
            where = f"preset {spec}"
            return from_config(load_json(path, "model config file", where), spec, where)
    path = config_path(spec)
    if path is None:
        raise KvtierError(
            f"model {show(spec, quote=True)}: unknown preset; presets: {', '.join(PRESETS)}, or a config.json path"
        )
    where = show(path)
    return from_config(load_json(path, "model config file"), path.parent.name or path.stem, where)


def _quantization(config: dict[str, Any], where: str) -> str:
    """The published weight format from ``quantization_config`` (e.g. ``"fp8 e4m3"``), or ``""``."""
    q = config.get("quantization_config")
    if q is None:
        return ""
    if not isinstance(q, dict):
        raise KvtierError(f"{where}: field 'quantization_config' must be a JSON object")
    return " ".join(str(q[k]) for k in ("quant_method", "fmt") if q.get(k))


_TORCH_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}
"""``torch_dtype`` names of a config and the weight element types they are."""

_QUANT_BITS = {8: "int8", 4: "int4"}
"""Bits per weight of an integer weight-only quantization and its element type."""


def _bits_dtype(bits: object) -> str:
    """int8 or int4 for a JSON integer of 8 or 4 bits per weight; ``""`` for anything else."""
    return _QUANT_BITS.get(bits, "") if isinstance(bits, int) and not isinstance(bits, bool) else ""


def _quantized_dtype(q: dict[str, Any]) -> str:
    """The element type ``quantization_config`` ``q`` stores weights in, or ``""`` when it names none kvtier knows.

    fp8 (``quant_method`` fp8 or fbgemm_fp8, or a ``fmt`` of e4m3 or e5m2); ``bits`` (AWQ, GPTQ; ``w_bit`` in
    AWQ's own files) or bitsandbytes' ``load_in_8bit``/``load_in_4bit``: int8 or int4; compressed-tensors:
    the ``weights`` of every ``config_groups`` entry, when they agree (8-bit float: fp8, 8- or 4-bit int).
    """
    method = str(q.get("quant_method", "")).lower()
    if method in ("fp8", "fbgemm_fp8") or str(q.get("fmt", "")).lower() in ("e4m3", "e5m2"):
        return "fp8"
    if q.get("load_in_8bit") is True or q.get("load_in_4bit") is True:
        return "int8" if q.get("load_in_8bit") is True else "int4"
    bits = q.get("bits", q.get("w_bit"))
    if bits is not None:
        return _bits_dtype(bits)
    groups = q.get("config_groups")
    if method == "compressed-tensors" and isinstance(groups, dict) and groups:
        found = set()
        for group in groups.values():
            weights = group.get("weights") if isinstance(group, dict) else None
            if not isinstance(weights, dict):
                return ""
            kind, n = weights.get("type"), weights.get("num_bits")
            found.add("fp8" if (kind, n) == ("float", 8) else _bits_dtype(n) if kind == "int" else "")
        return found.pop() if len(found) == 1 else ""
    return ""


def _published_weight_dtype(config: dict[str, Any]) -> dict[str, str]:
    """The :class:`ModelSpec` fields of the published weight element type: its name, basis and provenance class.

    From ``quantization_config`` (see :func:`_quantized_dtype`), else ``torch_dtype`` (or ``dtype``),
    else bf16, assumed.  A format kvtier does not know leaves the type empty, with a basis that says
    what the config names: ``weight_dtype: auto`` refuses it (:func:`resolve_weight_dtype`), a concrete
    ``weight_dtype`` does not need it.
    """
    q = config.get("quantization_config")
    if isinstance(q, dict):
        shown = ", ".join(f"{k} {show(q[k], limit=20)}" for k in ("quant_method", "fmt", "bits") if k in q)
        return {
            "weight_dtype": _quantized_dtype(q),
            "weight_dtype_basis": f"its quantization_config ({shown or 'no quant_method'})",
            "weight_dtype_provenance": "published-spec",
        }
    for key in ("torch_dtype", "dtype"):
        if config.get(key) is not None:
            raw = config[key]
            name = raw.removeprefix("torch.") if isinstance(raw, str) else ""
            return {
                "weight_dtype": _TORCH_DTYPES.get(name, ""),
                "weight_dtype_basis": f"its {key} ({show(raw, quote=True, limit=20)})",
                "weight_dtype_provenance": "published-spec",
            }
    return {}


def config_path(spec: str) -> Path | None:
    """The ``config.json`` a model spec that is not a preset names (a file, or a directory holding one).

    None when ``spec`` does not look like a path (then it is an unknown preset name).
    """
    if spec in PRESETS:
        return None
    path = Path(spec)
    if not (path.suffix == ".json" or "/" in spec or path.exists()):
        return None
    return path / "config.json" if path.is_dir() else path
