"""The model placed across accelerators: shards, shared links, collectives and routed experts.

Pure, vectorized formulas in SI base units (bytes, s, B/s; bandwidths decimal).  A *placement*
is a tensor-parallel size ``tp``, a pipeline-parallel size ``pp`` and an expert-parallel size
``ep``; within one pipeline stage the ``group = max(tp, ep)`` accelerators hold the layers of
that stage (:func:`group_size`).  The conventions, each read from the serving engines:

- **KV heads under tensor parallelism.** Each rank holds ``max(1, kv_heads // tp)`` KV heads:
  split across the group, and replicated where the group is larger than the number of KV heads
  (vLLM ``vllm/config/model.py``, ``ModelConfig.get_num_kv_heads``, main as of 2025:
  ``return max(1, total_num_kv_heads // parallel_config.tensor_parallel_size)``).
- **MLA's latent under tensor parallelism.** vLLM's same function returns 1 for an MLA model
  ("When using MLA during decode it becomes MQA"): every rank caches the whole compressed latent
  of its layers, so the latent is replicated on every tensor-parallel rank, not split.
- **Layers under pipeline parallelism.** Each stage holds a contiguous run of layers and their KV
  (vLLM ``get_pp_indices``); the largest stage holds ``ceil(layers / pp)`` (:func:`stage_layers`).
- **Experts under expert parallelism.** The routed experts are spread over the whole group (vLLM's
  ``--enable-expert-parallel``: EP size = TP x DP); without it they are tensor-split over the TP
  ranks.  Either way one rank holds ``1 / group`` of the routed weights (:func:`rank_weight_bytes`).
- **Collectives.** Megatron-style tensor parallelism ends each layer's attention and its MLP with
  one all-reduce each (two per layer); expert parallelism sends each token's activations to its
  ``k`` experts and back (an all-to-all dispatch and combine per MoE layer); pipeline stages hand
  the activations on point to point.  Each costs ``latency + wire bytes / bandwidth``, the wire
  bytes following nccl-tests' bus-bandwidth convention (``doc/PERFORMANCE.md``: a ring all-reduce
  moves ``2 (n - 1) / n`` of the message per rank, an all-to-all ``(n - 1) / n``).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

FloatArray = NDArray[np.float64]


def _f(x: ArrayLike) -> FloatArray:
    return np.asarray(x, dtype=np.float64)


def group_size(tp: ArrayLike, ep: ArrayLike) -> NDArray[np.int64]:
    """Accelerators in one pipeline stage: ``max(tp, ep)`` (count).

    Attention and the dense layers are split over ``tp`` ranks (and replicated data-parallel
    over ``group / tp`` copies of that split); the routed experts over all ``group`` ranks.
    """
    return np.maximum(np.asarray(tp, dtype=np.int64), np.asarray(ep, dtype=np.int64))


def accelerators(tp: ArrayLike, pp: ArrayLike, ep: ArrayLike) -> NDArray[np.int64]:
    """Accelerators a placement takes: ``pp x max(tp, ep)`` (count)."""
    return np.asarray(pp, dtype=np.int64) * group_size(tp, ep)


def kv_heads_per_rank(kv_heads: ArrayLike, tp: ArrayLike) -> NDArray[np.int64]:
    """KV heads one tensor-parallel rank caches: ``max(1, kv_heads // tp)`` (count), vLLM's rule."""
    return np.maximum(1, np.asarray(kv_heads, dtype=np.int64) // np.asarray(tp, dtype=np.int64))


def stage_layers(layers: ArrayLike, pp: ArrayLike) -> NDArray[np.int64]:
    """Layers of the largest pipeline stage: ``ceil(layers / pp)`` (count)."""
    n, p = np.asarray(layers, dtype=np.int64), np.asarray(pp, dtype=np.int64)
    return -(-n // p)


def kv_shard_share(kv_heads: ArrayLike, layers: ArrayLike, tp: ArrayLike, pp: ArrayLike, latent: bool) -> FloatArray:
    """Share of a block's KV bytes one accelerator caches and fetches (dimensionless).

    ``(kv_heads_per_rank / kv_heads) x (stage_layers / layers)``; for an MLA latent the first
    factor is 1 (the latent is replicated on every tensor-parallel rank).  1 exactly for
    ``tp = pp = 1``.  Above 1 / (tp x pp) where heads are replicated (``tp > kv_heads``) or the
    layers do not divide evenly.

    Parameters
    ----------
    kv_heads : array_like
        KV heads of the model (count; ignored for a latent).
    layers : array_like
        Layers of the model (count).
    tp, pp : array_like
        Tensor- and pipeline-parallel sizes (count, >= 1).
    latent : bool
        Whether the cache is MLA's compressed latent.
    """
    heads = 1.0 if latent else kv_heads_per_rank(kv_heads, tp) / _f(kv_heads)
    return _f(heads) * (stage_layers(layers, pp) / _f(layers))


STORAGE_MODES: tuple[str, ...] = ("per-rank", "mla-once", "once")
"""How a tensor-parallel group writes a block to a tier: every rank the KV it holds (``per-rank``), the same but an
MLA latent written by one rank (``mla-once``), or each distinct byte once (``once``)."""


def stored_copies(kv_heads: ArrayLike, tp: ArrayLike, latent: bool, storage: str) -> FloatArray:
    """Copies of a logical block's KV a tier holds when a tensor-parallel group writes it (dimensionless).

    ``once``: 1, whatever the placement.  ``per-rank`` (each rank writes the KV it holds):
    ``max(1, tp x kv_heads_per_rank / kv_heads)``, which is 1 while the heads split evenly (``tp``
    divides ``kv_heads``) and above 1 where ranks replicate heads; ``tp`` for an MLA latent, which
    every rank holds whole.  ``mla-once``: ``per-rank``, but a latent written by one rank (1).  Pipeline
    stages hold disjoint layers, so they add no copy.  A tier of ``C`` bytes then holds
    ``C / (block_bytes x stored_copies)`` logical blocks.

    Parameters
    ----------
    kv_heads : array_like
        KV heads of the model (count; ignored for a latent).
    tp : array_like
        Tensor-parallel size (count, >= 1).
    latent : bool
        Whether the cache is MLA's compressed latent.
    storage : str
        One of :data:`STORAGE_MODES`.

    Examples
    --------
    DeepSeek-V3 (MLA) at TP 8 stored per rank: 8 copies; Llama-3.1-70B (8 KV heads) at TP 8: 1;
    at TP 16: ``16 x 1 / 8 = 2``.
    """
    if storage not in STORAGE_MODES:
        raise ValueError(f"storage must be one of {', '.join(STORAGE_MODES)}, not {storage!r}")
    t = _f(tp)
    if storage == "once" or (latent and storage == "mla-once"):
        return np.ones_like(t)
    if latent:
        return t
    return np.maximum(1.0, t * kv_heads_per_rank(kv_heads, tp) / _f(kv_heads))


def link_bytes(shard_bytes: ArrayLike, gpus_per_link: ArrayLike) -> FloatArray:
    """Bytes that cross one shared link when every accelerator behind it fetches its shard (B).

    ``shard_bytes x gpus_per_link``: the accelerators of a group that share one link (two GPUs
    behind one PCIe switch, several behind one CXL expander or one NIC) fetch their shards of the
    same block at once, so each sees ``bandwidth / gpus_per_link``.
    """
    return _f(shard_bytes) * _f(gpus_per_link)


def distinct_experts(n_experts: ArrayLike, per_token: ArrayLike, tokens: ArrayLike) -> FloatArray:
    """Expected distinct experts ``tokens`` tokens touch in one MoE layer: ``E (1 - (1 - k / E)^t)`` (count).

    Under *uniform* routing (each token picks ``k`` of ``E`` experts, each expert equally likely,
    tokens independent) an expert is missed by one token with probability ``1 - k / E`` and by
    all ``t`` with its ``t``-th power.  A real router is skewed, which touches fewer; a measured
    skew can replace this.  DeepSeek-V3 (E = 256, k = 8) over 16 tokens: about 102.  0 for a
    dense model (``E = 0``).
    """
    e, k, t = _f(n_experts), _f(per_token), _f(tokens)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(e > 0, e * (1.0 - (1.0 - k / np.where(e > 0, e, 1.0)) ** t), 0.0)


def rank_weight_bytes(
    dense_bytes: ArrayLike, routed_bytes: ArrayLike, tp: ArrayLike, group: ArrayLike, pp: ArrayLike = 1
) -> FloatArray:
    """Weight bytes one accelerator holds: ``(dense / tp + routed / group) / pp`` (B).

    ``dense_bytes``: every weight but the routed experts (attention, dense MLPs, shared experts,
    embeddings), split over the tensor-parallel ranks; ``routed_bytes``: the routed experts, spread
    over the stage's group.  Pass ``pp = 1`` for what one rank reads across all the stages a lone
    pass crosses one after another.
    """
    return (_f(dense_bytes) / _f(tp) + _f(routed_bytes) / _f(group)) / _f(pp)


def touched_rank_weight_bytes(
    dense_bytes: ArrayLike,
    routed_bytes: ArrayLike,
    n_experts: ArrayLike,
    per_token: ArrayLike,
    tokens: ArrayLike,
    tp: ArrayLike,
    group: ArrayLike,
) -> FloatArray:
    """Weight bytes one rank reads in a pass over ``tokens`` tokens, over every stage it crosses (B).

    ``dense / tp + routed x distinct_experts(E, k, tokens) / E / group``: the dense weights split
    over the tensor-parallel ranks; of the routed experts only those the pass's tokens are routed
    to (:func:`distinct_experts`, uniform routing), spread over the stage's group.  For a dense
    model (``E = 0``) ``dense / tp``; on one accelerator all the weights a pass touches.
    """
    e = _f(n_experts)
    with np.errstate(divide="ignore", invalid="ignore"):
        touched = np.where(e > 0, distinct_experts(e, per_token, tokens) / np.where(e > 0, e, 1.0), 1.0)
    return rank_weight_bytes(dense_bytes, _f(routed_bytes) * touched, tp, group)


def compute_share(dense_params: ArrayLike, routed_params: ArrayLike, tp: ArrayLike, group: ArrayLike) -> FloatArray:
    """Share of a pass's FLOPs the busiest rank of a stage computes (dimensionless).

    ``(dense / tp + routed / group) / (dense + routed)`` over the parameters a token passes
    through; exactly 1 where ``tp = group = 1``.
    """
    d, r, tp_, g = _f(dense_params), _f(routed_params), _f(tp), _f(group)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = (d / tp_ + r / g) / (d + r)
    return np.where((tp_ == 1) & (g == 1), 1.0, share)


def allreduce_time_s(
    message_bytes: ArrayLike, ranks: ArrayLike, latency_s: ArrayLike, bandwidth: ArrayLike
) -> FloatArray:
    """One all-reduce of ``message_bytes`` over ``ranks`` accelerators (s); 0 for one rank.

    ``latency + 2 (n - 1) / n x bytes / bandwidth``: a ring all-reduce moves ``2 (n - 1) / n`` of
    the message through each rank's link (nccl-tests' bus bandwidth), ``bandwidth`` per direction.
    """
    n = _f(ranks)
    wire = 2.0 * (n - 1.0) / n * _f(message_bytes)
    return np.where(n > 1, _f(latency_s) + wire / _f(bandwidth), 0.0)


def all_to_all_time_s(
    message_bytes: ArrayLike, ranks: ArrayLike, latency_s: ArrayLike, bandwidth: ArrayLike
) -> FloatArray:
    """One all-to-all of ``message_bytes`` (all ranks' sends together) over ``ranks`` (s); 0 for one rank.

    ``latency + (n - 1) / n x bytes / bandwidth``: a uniform all-to-all keeps ``1 / n`` of the
    data local and sends the rest (nccl-tests' bus bandwidth for alltoall).
    """
    n = _f(ranks)
    wire = (n - 1.0) / n * _f(message_bytes)
    return np.where(n > 1, _f(latency_s) + wire / _f(bandwidth), 0.0)


def collectives_time_s(
    tokens: ArrayLike,
    hidden: ArrayLike,
    activation_bytes: ArrayLike,
    layers: ArrayLike,
    moe_layers: ArrayLike,
    experts_per_token: ArrayLike,
    tp: ArrayLike,
    ep: ArrayLike,
    pp: ArrayLike,
    nvlink_latency_s: ArrayLike,
    nvlink_bandwidth: ArrayLike,
    ib_latency_s: ArrayLike,
    ib_bandwidth: ArrayLike,
    latency_share: ArrayLike = 1.0,
) -> FloatArray:
    """Communication time a forward pass over ``tokens`` tokens adds under a placement (s).

    ``2 x layers`` all-reduces of ``tokens x hidden x activation_bytes`` over ``tp`` ranks (NVLink),
    ``2 x moe_layers`` all-to-alls (dispatch and combine) of ``tokens x k x hidden x
    activation_bytes`` over ``ep`` ranks (NVLink), and ``pp - 1`` hand-offs of ``tokens x hidden x
    activation_bytes`` between stages (InfiniBand), one after another and not overlapped with
    compute.  ``latency_share`` is the share of each operation's latency charged to these tokens:
    1 for a lone pass, ``tokens / batch`` for tokens sharing a pass, 0 for the marginal cost inside
    a large batch.  0 for ``tp = ep = pp = 1``.
    """
    message = _f(tokens) * _f(hidden) * _f(activation_bytes)
    share = _f(latency_share)
    nv_lat = _f(nvlink_latency_s) * share
    tp_s = 2.0 * _f(layers) * allreduce_time_s(message, tp, nv_lat, nvlink_bandwidth)
    ep_s = 2.0 * _f(moe_layers) * all_to_all_time_s(message * _f(experts_per_token), ep, nv_lat, nvlink_bandwidth)
    hops = _f(pp) - 1.0
    pp_s = hops * (_f(ib_latency_s) * share + message / _f(ib_bandwidth))
    return tp_s + ep_s + np.where(hops > 0, pp_s, 0.0)


def fits(rank_bytes: ArrayLike, capacity_bytes: ArrayLike) -> NDArray[np.bool_]:
    """Whether what one accelerator must hold fits its memory: ``rank_bytes <= capacity`` (elementwise)."""
    return _f(rank_bytes) <= _f(capacity_bytes)
