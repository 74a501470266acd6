"""Neither fetch nor regenerate alone: compute a reused prefix's head while its tail is fetched (the split).

A request reuses a prefix of ``n`` tokens that a slower tier holds, followed by ``P - n`` new tokens. The two pure
strategies of the source chapter, applied to the whole prefix:

- **regenerate**: prefill all ``P`` tokens, as if nothing were cached (:meth:`RegenCosts.rest_wall_s` of the prompt
  with no hit);
- **fetch**: copy the prefix's KV over the tier's link (:meth:`kvtier.formulas.ttft.Fetch.time_s`), then prefill
  the ``P - n`` new tokens (:func:`kvtier.formulas.ttft.rest_prefill_s`).

The **split** does both at once, as Cake (Jin et al., ICML 2025) schedules it: the accelerator prefills the first
``s`` tokens from the start (attending only to what it computes) while the tier sends the KV of tokens ``s .. n``
from the end; when both are in, the new tokens are prefilled against the whole prefix::

    T(s) = max(head(s), tail(n - s)) + rest(P, n)

``head(s)`` rises with ``s`` and ``tail`` falls, so the best ``s`` is where they cross. The fetch moves whole blocks
of the serving engine (``Fetch.block_tokens``), so ``s`` is taken on block boundaries (``0, b, 2b, ..., n``) and
found by bisection on the sign of ``head - tail`` (:func:`best_split`); :func:`brute_force_split` evaluates every
boundary, for the tests. At ``s = 0`` the split is the pure fetch (copied after, not under, the prefill); at
``s = n`` nothing is fetched and the prompt is prefilled in one pass, the pure regeneration, so the split is never
slower than either of them. Inside a batch with the analytic model the crossing has a closed form
(:func:`balanced_tokens_batch`), which the block boundaries bracket.

The copies can slow the prefill they run beside (``slowdown``, 0 by default; the H200 measured about 4 %). Not
modelled: the prefill slowing the copies, and the merge of the two halves (each layer's KV is written where the
engine keeps it either way).

Times are seconds (wall time of the placement), sizes tokens; every function is vectorized over requests.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kvtier.formulas.cache.regen import RegenCosts
from kvtier.formulas.ttft import Fetch, overlapped_s, rest_prefill_s


def head_s(rc: RegenCosts, tokens: np.ndarray, regime: str) -> np.ndarray:
    """Prefilling the first ``tokens`` tokens of a prompt from its start, nothing cached, in ``regime`` (s)."""
    tokens = np.asarray(tokens, dtype=float)
    return rest_prefill_s(rc, tokens, np.zeros_like(tokens), regime)


@dataclass(frozen=True)
class Split:
    """A reused prefix served four ways: regenerated, fetched, fetched layer by layer, split (per request).

    Attributes
    ----------
    prefix_tokens, prompt_tokens : ndarray
        The prefix the tier holds and the whole prompt (tokens).
    regenerate_s : ndarray
        The whole prompt prefilled, nothing fetched (s).
    fetch_s : ndarray
        The prefix fetched, then the new tokens prefilled (s).
    overlap_s : ndarray
        The same with the fetch loaded layer by layer under the prefill
        (:func:`kvtier.formulas.ttft.overlapped_s`, over ``Fetch.layers``), whether or not the engine does (s).
    split_tokens : ndarray
        The best split: tokens computed from the start while the rest of the prefix is fetched (tokens; 0 is the
        pure fetch, the prefix the pure regeneration).
    split_s : ndarray
        Its time to the first token: ``max(head, tail) + rest`` (s).
    head_s, tail_s, rest_s : ndarray
        At the best split: the head's prefill, the tail's fetch and the new tokens' prefill (s); where the best is
        the pure regeneration, the one pass over the prompt, 0 and 0.
    """

    prefix_tokens: np.ndarray
    prompt_tokens: np.ndarray
    regenerate_s: np.ndarray
    fetch_s: np.ndarray
    overlap_s: np.ndarray
    split_tokens: np.ndarray
    split_s: np.ndarray
    head_s: np.ndarray
    tail_s: np.ndarray
    rest_s: np.ndarray

    @property
    def best_pure_s(self) -> np.ndarray:
        """The faster of the two pure strategies, regenerate or fetch (s)."""
        return np.minimum(self.regenerate_s, self.fetch_s)

    @property
    def gain(self) -> np.ndarray:
        """How many times faster the split is than the better pure strategy (``best_pure_s / split_s``, >= 1)."""
        return self.best_pure_s / self.split_s

    @property
    def strict(self) -> np.ndarray:
        """True where the best split computes part of the prefix and fetches the rest (neither pure strategy)."""
        return (self.split_tokens > 0) & (self.split_tokens < self.prefix_tokens)

    def fastest(self, overlap: bool) -> list[str]:
        """Per request, the fastest way: ``regenerate``, the engine's fetch (``layer-by-layer fetch`` where it
        load overlaps the prefill, ``fetch`` otherwise) or a strict ``split``; the first on a tie."""
        fetch_name, fetch = ("layer-by-layer fetch", self.overlap_s) if overlap else ("fetch", self.fetch_s)
        split = np.where(self.strict, self.split_s, np.inf)
        times = np.stack([self.regenerate_s, fetch, split])
        names = ("regenerate", fetch_name, "split")
        return [names[i] for i in np.argmin(times, axis=0)]


def _boundaries(prefix: np.ndarray, fetch: Fetch, k: np.ndarray) -> np.ndarray:
    """The ``k``-th block boundary of each prefix: ``min(k x block, prefix)`` (tokens)."""
    return np.minimum(k * float(fetch.block_tokens), prefix)


def split_time_s(
    rc: RegenCosts,
    fetch: Fetch,
    prefix_tokens: np.ndarray,
    prompt_tokens: np.ndarray,
    split_tokens: np.ndarray,
    regime: str,
    slowdown: float = 0.0,
) -> np.ndarray:
    """Time to first token with the first ``split_tokens`` of the prefix computed and the rest fetched, ``T(s)`` (s).

    ``max(head(s) x (1 + slowdown), tail(n - s)) + rest(P, n)``; at ``s = 0`` the pure fetch, at ``s = n`` the prompt
    prefilled in one pass, the pure regeneration.  ``slowdown`` is the share by which the head's prefill slows while
    copies run beside it on the same device (0 by default).
    """
    prefix, prompt = _check(prefix_tokens, prompt_tokens)
    rest = rest_prefill_s(rc, prompt, prefix, regime)
    s = np.asarray(split_tokens, dtype=float)
    return _time_at(rc, fetch, prefix, prompt, s, regime, rest, slowdown)[0]


def _time_at(
    rc: RegenCosts,
    fetch: Fetch,
    prefix: np.ndarray,
    prompt: np.ndarray,
    s: np.ndarray,
    regime: str,
    rest: np.ndarray,
    slowdown: float = 0.0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(T(s), head, tail)`` at ``s`` head tokens (the head slowed by ``slowdown`` while the tail's copies run); at
    ``s = prefix`` the prompt in one pass (the pure regeneration)."""
    head = head_s(rc, s, regime) * (1.0 + slowdown)
    tail = fetch.time_s(prefix - s)
    whole = head_s(rc, prompt, regime)
    t = np.where(s >= prefix, whole, np.maximum(head, tail) + rest)
    return t, np.where(s >= prefix, whole, head), np.where(s >= prefix, 0.0, tail)


def _check(prefix_tokens: np.ndarray, prompt_tokens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    prefix = np.asarray(prefix_tokens, dtype=float)
    prompt = np.asarray(prompt_tokens, dtype=float)
    prefix, prompt = np.broadcast_arrays(prefix, prompt)
    if np.any(prefix < 0) or np.any(prompt < prefix):
        raise ValueError("a split needs 0 <= prefix tokens <= prompt tokens")
    return prefix.astype(float), prompt.astype(float)


def _result(
    rc: RegenCosts,
    fetch: Fetch,
    prefix: np.ndarray,
    prompt: np.ndarray,
    s: np.ndarray,
    regime: str,
    slowdown: float = 0.0,
) -> Split:
    rest = rest_prefill_s(rc, prompt, prefix, regime)
    t, head, tail = _time_at(rc, fetch, prefix, prompt, s, regime, rest, slowdown)
    fetched = fetch.time_s(prefix)
    return Split(
        prefix_tokens=prefix,
        prompt_tokens=prompt,
        regenerate_s=head_s(rc, prompt, regime),
        fetch_s=fetched + rest,
        overlap_s=overlapped_s(fetched, rest * (1.0 + slowdown), max(int(fetch.layers), 1)),
        split_tokens=s,
        split_s=t,
        head_s=head,
        tail_s=tail,
        rest_s=np.where(s >= prefix, 0.0, rest),
    )


def best_split(
    rc: RegenCosts,
    fetch: Fetch,
    prefix_tokens: np.ndarray,
    prompt_tokens: np.ndarray,
    regime: str,
    slowdown: float = 0.0,
) -> Split:
    """The best split of each request's prefix on the engine's block boundaries, by bisection (:class:`Split`).

    The head's prefill never falls as it grows and the tail's fetch never rises as it shrinks, so ``head - tail``
    changes sign once along the boundaries ``0, b, ..., n``: bisection finds the first boundary where the head
    outlasts the tail (about ``log2(n / b)`` steps, every request at once); the best split is it or the boundary
    before, or a pure strategy where one is faster (``s = 0``: the fetch; ``s = n``: one pass, the regeneration).

    Parameters
    ----------
    rc : RegenCosts
        The model, accelerator and placement (:meth:`kvtier.scenario.Scenario.regen_costs`).
    fetch : Fetch
        The tier's link and the engine's blocks and copies (:func:`kvtier.report.serving.fetch_of`).
    prefix_tokens, prompt_tokens : array_like
        Each request's prefix held by the tier and its whole prompt (tokens; ``0 <= prefix <= prompt``).
    regime : str
        ``"lone"`` (the request's prefill is its own pass) or ``"batch"`` (its marginal compute in a batch).
    slowdown : float, optional
        Share by which a prefill slows while copies run beside it on the same device: the split's head under its
        tail's copies, the layer-by-layer fetch's prefill under its loads (0, the default: none; the H200 measured
        about 4 %, :func:`kvtier.report.pages.split.cited_numbers`).
    """
    prefix, prompt = _check(prefix_tokens, prompt_tokens)
    rest = rest_prefill_s(rc, prompt, prefix, regime)
    top = np.ceil(prefix / fetch.block_tokens)
    lo, hi = np.zeros_like(prefix), top.copy()
    while np.any(lo < hi):  # the first k with head(s_k) >= tail(s_k)
        mid = np.floor((lo + hi) / 2.0)
        s = _boundaries(prefix, fetch, mid)
        ahead = head_s(rc, s, regime) * (1.0 + slowdown) >= fetch.time_s(prefix - s)
        active = lo < hi
        hi = np.where(active & ahead, mid, hi)
        lo = np.where(active & ~ahead, mid + 1.0, lo)
    candidates = [np.zeros_like(prefix), _boundaries(prefix, fetch, np.maximum(lo - 1.0, 0.0))]
    candidates += [_boundaries(prefix, fetch, lo), prefix]
    times = np.stack([_time_at(rc, fetch, prefix, prompt, c, regime, rest, slowdown)[0] for c in candidates])
    pick = np.argmin(times, axis=0)  # the first of equal times: the fewest tokens computed
    s = np.choose(pick, np.stack(candidates))
    return _result(rc, fetch, prefix, prompt, s, regime, slowdown)


def brute_force_split(
    rc: RegenCosts, fetch: Fetch, prefix_tokens: float, prompt_tokens: float, regime: str, slowdown: float = 0.0
) -> Split:
    """:func:`best_split` of one request by evaluating ``T`` at every block boundary (for the tests: O(n / b))."""
    prefix, prompt = (float(x) for x in _check(prefix_tokens, prompt_tokens))
    s = _boundaries(np.float64(prefix), fetch, np.arange(int(np.ceil(prefix / fetch.block_tokens)) + 1, dtype=float))
    s = np.unique(np.append(s, prefix))
    rest = rest_prefill_s(rc, np.array(prompt), np.array(prefix), regime)
    full = np.full_like
    t = _time_at(rc, fetch, full(s, prefix), full(s, prompt), s, regime, full(s, rest), slowdown)[0]
    best = s[int(np.argmin(t))]
    return _result(rc, fetch, np.array([prefix]), np.array([prompt]), np.array([best]), regime, slowdown)


def balanced_tokens_batch(rc: RegenCosts, fetch: Fetch, prefix_tokens: np.ndarray) -> np.ndarray:
    """Where the head's prefill inside a batch equals the tail's fetch, with the analytic model (tokens, continuous).

    Inside a batch the head of ``s`` tokens costs ``alpha s^2 + beta s`` (:meth:`RegenCosts.in_batch_latency_s` of
    :meth:`RegenCosts.prefix_flops`: ``alpha = f / (2 Phi)``, ``beta = (k N + f / 2) / Phi + c / stages``, with
    ``Phi`` = accelerators x peak x MFU and ``c`` the collectives per token); the tail, its blocks' latency spread over
    their tokens, ``a (n - s)`` with ``a = bytes per token / (bandwidth x efficiency) + copies per block x (latency +
    overhead) / block``.  They cross at the root of ``alpha s^2 + (beta + a) s - a n = 0`` in ``[0, n]``:
    ``s* = 2 a n / ((beta + a) + sqrt((beta + a)^2 + 4 alpha a n))``.  It ignores the transfer floor and the last
    block's rounding: for a prefix of whole blocks and no floor, the first block boundary where the head outlasts
    the tail lies within a block above it (a partial last block adds up to one copy's latency to the tail).

    Raises
    ------
    ValueError
        Under the engine model (its measured curves have no closed form).
    """
    if rc.engine:
        raise ValueError("balanced_tokens_batch: the engine model's measured curves have no closed form")
    n = np.asarray(prefix_tokens, dtype=float)
    phi = rc.peak_flop_per_s * rc.accelerators * rc.mfu
    alpha = rc.attention_flops_per_position / (2.0 * phi)
    beta = (rc.flops_per_param_token * rc.active_params + rc.attention_flops_per_position / 2.0) / phi
    beta += rc.collective_s_per_token / rc.pipeline_stages
    a = fetch.link_bytes_per_token / (fetch.bandwidth_bytes_per_s * fetch.efficiency)
    a += fetch.transfers_per_block * (fetch.latency_s + fetch.overhead_s) / fetch.block_tokens
    b = beta + a
    return 2.0 * a * n / (b + np.sqrt(b * b + 4.0 * alpha * a * n))
