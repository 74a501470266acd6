"""The report's words about a scenario: sentences and phrases built from its numbers.

The scenario (:class:`~kvtier.scenario.Scenario`) holds numbers only; the pages and the
commands that describe its hardware in English call these.  Each function takes a scenario
and returns text: the device a lone block is regenerated on (:func:`lone_device`), how a recomputed
prefix is priced (:func:`regen_pricing`), the link
presets a bandwidth bracket stands for (:func:`bracket_hardware`), what the accelerator's own
host link means for the brackets (:func:`host_link_note`), whether the lowest bracket is
the realistic case for a CXL tier (:func:`realistic_note`), and whether a position lies within the
model's context window (:func:`context_note`); whether the build differs from the seed set as printed
(:func:`differs_as_printed`), and an English list (:func:`listed`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np

from kvtier import analysis
from kvtier.formulas.cache.report import share_longer
from kvtier.inputs import deployments, hardware
from kvtier.inputs.keys import BANDWIDTH_LABELS
from kvtier.scenario import Scenario
from kvtier.units import format_time


def lone_device(s: Scenario) -> str:
    """The lone-block regime's device in words: its peak, memory bandwidth and efficiency."""
    peak, bw = s.v("peak_flops"), s.v("regen.mem_bandwidth")
    named = [
        acc.title[0].lower() + acc.title[1:] if acc.title.startswith("The ") else acc.title
        for acc in hardware.load_accelerators().values()
        if acc.peak_flop_per_s is not None
        and math.isclose(acc.peak_flop_per_s, peak, rel_tol=1e-9)
        and math.isclose(acc.mem_bandwidth_bytes_per_s, bw, rel_tol=1e-9)
    ]
    what = f"{named[0]}, " if named else "a device of "
    return (
        f"{what}{peak / 1e12:g} TFLOP/s and {bw / 1e12:g} TB/s at"
        f" {s.v('regen.mem_efficiency') * 100:g} % memory efficiency"
    )


def regen_drivers(s: Scenario) -> tuple[str, str]:
    """The two inputs a recomputed prefix's time turns on, for a figure's footer: the measured kernel tables'
    system and the tensor-parallel size under ``regen.model: engine``, else the peak and the illustrative MFU."""
    if s.assumptions.value("regen.model") == "engine":
        return ("regen.system", "parallel.tp")
    return ("peak_flops", f"mfu.{s.illustrative['mfu_label']}")


def regen_pricing(s: Scenario) -> dict[str, str]:
    """How the trace pages price a recomputed prefix, in words: ``pricing`` (after "priced"), ``batch_how`` and
    ``lone_how`` (what each regime's time is).

    The analytic model: at the MFU of the peak, the marginal compute inside a batch and the roofline of
    :func:`lone_device` alone.  ``regen.model: engine``: the measured kernel tables, a prefix's share of a
    ``regen.step_tokens`` step inside a batch and its own pass alone
    (:meth:`kvtier.scenario.Scenario.engine_curves`).
    """
    if s.assumptions.value("regen.model") == "engine":
        t = s.kernel_tables
        return {
            "pricing": f"with the kernels NVIDIA measured for {t.engine} {t.version} on {t.system}"
            f" (aiconfigurator-core {t.package_version}; the engine regeneration model)",
            "batch_how": f"its share of a step of {s.v('regen.step_tokens'):,.0f} tokens",
            "lone_how": "its own pass on those kernels",
        }
    return {
        "pricing": f"at {s.mfu(str(s.assumptions.value('illustrative.mfu'))) * 100:g} % MFU of"
        f" {s.v('peak_flops') / 1e12:g} TFLOP/s",
        "batch_how": "marginal compute",
        "lone_how": f"roofline on {lone_device(s)}",
    }


def bracket_hardware(s: Scenario, label: str) -> str:
    """The link presets whose bandwidth equals the bracket ``label``, in words ('' if none).

    Read from :func:`kvtier.inputs.hardware.load_links`, net and raw figures alike, so that the
    name follows the bracket's value under any rerun.
    """
    bw = s.bandwidth(label)
    names: dict[str, list[str]] = {"net": [], "raw": []}
    for link in hardware.load_links().values():
        short = link.title.split(" (")[0].removesuffix(" to host DRAM").removesuffix(" memory expander")
        if math.isclose(link.bandwidth_bytes_per_s, bw, rel_tol=1e-9) and link.raw_or_net == "net":
            names["net"].append(short)
        elif link.raw_bandwidth_bytes_per_s is not None and math.isclose(
            link.raw_bandwidth_bytes_per_s, bw, rel_tol=1e-9
        ):
            names["raw"].append(short)

    def either(items: list[str]) -> str:
        return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} or {items[-1]}"

    parts = []
    if names["net"]:
        parts.append(f"{either(names['net'])} after line coding and flit overhead")
    if names["raw"]:
        parts.append(f"the raw rate of {either(names['raw'])}")
    return "; ".join(parts)


def host_link_note(s: Scenario) -> str:
    """What the accelerator's own host link means for the brackets faster than it, in words.

    An H100 or H200 reaches CXL or host memory through its PCIe 5.0 x16 host link; a bracket
    above that link's raw rate needs PCIe 6.0 end to end.  The measured host-link rate is
    ``reference.h200_host_link``.
    """
    host = s.v("reference.h200_host_link")
    pcie5 = hardware.link("pcie5-x16")
    raw = pcie5.raw_bandwidth_bytes_per_s or pcie5.bandwidth_bytes_per_s
    above = [label for label in BANDWIDTH_LABELS if s.bandwidth(label) > raw]
    head = (
        "An H100 or H200 reaches CXL or host memory through its own PCIe 5.0 x16 host link, whose raw rate is"
        f" {raw / 1e9:g} GB/s and which moved {host / 1e9:.1f} GB/s in pinned host-to-device copies measured"
        " on an H200"
    )
    if not above:
        return f"{head}; no bracket here is faster than that link's raw rate."
    names = " and ".join(f"{s.bandwidth(label) / 1e9:g} GB/s, the {label} bracket," for label in above)
    verb = "needs" if len(above) == 1 else "need"
    return f"{head}. So {names} {verb} PCIe 6.0 from the memory to the accelerator, end to end."


def realistic_note(s: Scenario) -> str:
    """Whether the lowest bracket is the interface of the CXL expanders shipping today, in words ('' if not)."""
    expander = hardware.link("cxl2-x8")
    label = BANDWIDTH_LABELS[-1]
    bw = s.bandwidth(label)
    if not any(
        x is not None and math.isclose(x, bw, rel_tol=1e-9)
        for x in (expander.raw_bandwidth_bytes_per_s, expander.bandwidth_bytes_per_s)
    ):
        return ""
    return (
        f"The {label} bracket is no pessimistic tail: a CXL 2.0 x8 link is the interface of the CXL memory"
        " expanders shipping today, so it is the realistic case for a CXL tier."
    )


def nothing_to_cache(references: int, hit_ratio: float) -> str | None:
    """Why a trace has nothing to cache: no blocks at all, or none referenced twice; ``None`` when it has.

    Zero reuse is a real answer: nothing to cache, so every tier's capacity is 0 and saves nothing.

    Parameters
    ----------
    references : int
        Block references in the trace.
    hit_ratio : float
        Hit ratio of an infinite cache (fraction).
    """
    if references == 0:
        return "no prompt holds a block, every input_length being 0"
    if hit_ratio == 0:
        return "no block is referenced twice"
    return None


def no_duration(requests: int, duration_s: float) -> str | None:
    """Why a trace has no rates: it lasts 0 s (one request, or all at one timestamp); ``None`` when it lasts.

    Parameters
    ----------
    requests : int
        Requests in the trace.
    duration_s : float
        Time from its first request to its last (s).
    """
    if duration_s > 0:
        return None
    if requests == 1:
        return "the trace holds one request: it lasts 0 s and has no rate per second"
    return f"all {requests:,} requests share one timestamp: the trace lasts 0 s and has no rate per second"


def context_note(s: Scenario, tokens: float) -> str:
    """Whether ``tokens`` positions fit the model's context window, in words, for the same sentence as the figure.

    A ratio or crossover at a position past ``max_position_embeddings`` describes a sequence the model
    cannot hold (a long-context variant with the same geometry could); the note says so.

    Parameters
    ----------
    s : Scenario
        The build's scenario; its model's ``max_positions`` is the window (0: the configuration states none).
    tokens : float
        The position or context length the figure is taken at (tokens).
    """
    window = s.model.max_positions
    if not window:
        return f"{s.model.name}'s configuration states no context window to check {tokens:,.0f} tokens against"
    if tokens > window:
        return f"past the {window:,}-position context window of {s.model.name}"
    return f"within the {window:,}-position context window of {s.model.name}"


LONG_WINDOW_MODEL = "llama-3.1-70b"
"""The model the window sentences name for prompts past the build's model's window: Llama-3-70B's shapes, 131,072
positions."""


def window_sentence(s: Scenario, here: str = "this page") -> str:
    """How much of the trace the build's model cannot hold, for the pages that price the trace (one sentence).

    The prompts longer than the model's context window, as a share of the requests and of the prompt tokens
    (:attr:`kvtier.formulas.cache.curve.LruHistogram.input_tokens`); the trace pages count their blocks as a model
    with the same shapes and a longer window would, which :data:`LONG_WINDOW_MODEL` is when its KV per token is the
    build's.  ``here`` names what sizes and prices them (the landing page: "this build's row").  Empty for a model
    whose configuration states no window.
    """
    window = s.model.max_positions
    if not window:
        return ""
    curve = analysis.curve(s)
    share = share_longer(curve, window) * 100
    if not share:
        return f"Every prompt of the trace fits {s.model.name}'s {window:,}-token window."
    values, counts = (np.asarray(x, dtype=float) for x in curve.input_tokens)
    weighted = values * counts  # prompt tokens, by prompt length
    token_share = float(weighted[values > window].sum()) / float(weighted.sum()) * 100
    other = s.with_block(s.block_tokens, LONG_WINDOW_MODEL)
    alike = (
        f"; {other.model.name}, with the same KV per token and a {other.model.max_positions:,}-token window, holds"
        f" {'them all' if values.max() <= other.model.max_positions else 'more of them'}"
        if other.kv_bytes_per_token == s.kv_bytes_per_token and other.model.max_positions > window
        else ""
    )
    return (
        f"{share:.1f} % of the trace's prompts, with {token_share:.1f} % of its prompt tokens, are longer than"
        f" {s.model.name}'s {window:,}-token window: {here} sizes and prices their blocks as a model of the same"
        f" shapes with a window long enough would hold them{alike}."
    )


_SET_BY_DEPLOYMENT = {
    "model": "model",
    "param_count": "model",
    "weight_dtype": "model",
    "parallel.tp": "placement",
    "parallel.pp": "placement",
    "parallel.ep": "placement",
    "parallel.gpus_per_link": "placement",
    "engine": "engine",
    "block_tokens": "block",
    "tier_latency.host_link": "per-copy cost",
    "peak_flops": "peak",
    "regen.model": "regeneration timing",
    "regen.system": "regeneration timing",
    "regen.beyond_grid": "regeneration timing",
    "regen.mem_bandwidth": "regeneration timing",
    "parallel.hbm_capacity": "accelerator memory",
    "cost.hbm_capacity": "accelerator memory",
    "cost.accelerator_hour": "accelerator prices",
    "energy.power_batch": "accelerator prices",
}
"""What each key a named deployment sets is, in words, for :func:`priced_sentence`."""


def named_deployment(s: Scenario) -> str:
    """The named deployment a trace page's scenario ``s`` prices (:func:`kvtier.analysis.priced`), or "" when it is
    the build's own set (``workload.deployment`` build, or a set that names its own model): the set is named for
    the deployment when the deployment applies."""
    name = str(s.assumptions.value("workload.deployment"))
    return name if name != analysis.BUILD and s.assumptions.name == name else ""


def trace_pages_row(s: Scenario) -> str:
    """Which row of the landing's table of named deployments the trace pages derive, for the build ``s``: "the
    row of TITLE", or "this build's row" when they price the build's own set (:func:`kvtier.analysis.priced`)."""
    name = named_deployment(analysis.priced(s))
    return f"the row of {deployments.named(name).title}" if name else "this build's row"


def priced_sentence(s: Scenario) -> str:
    """Which deployment a trace page prices the trace for, and what of it is the build's (one sentence).

    ``s`` is the scenario the page presents (:func:`kvtier.analysis.priced`), a set named for the deployment when
    the deployment applies: the keys it sets whose value is the build's rather than the deployment's are named in
    words.
    """
    name = str(s.assumptions.value("workload.deployment"))
    if name == analysis.BUILD:
        return f"Priced for this build's own set: {s.model.name} on {deployment_words(s)}."
    if not named_deployment(s):  # the build's own set: it names its own model
        return (
            f"Priced for this build's own set, {s.model.name} on {deployment_words(s)}: it names its own model, so"
            f" the named deployment {deployments.named(name).title}, chosen for another, is left out."
        )
    title = deployments.named(name).title
    reference = deployments.on_seed(name)
    own = dict.fromkeys(
        _SET_BY_DEPLOYMENT.get(key, "inputs")
        for key in sorted(deployments.keys_set(name))
        if s.assumptions.value(key) != reference.value(key)
    )
    if not own:
        return (
            f"Priced for {title}, a named deployment: its model, placement, engine and accelerator (its hour, memory"
            " and power) replace the source chapter's."
        )
    return (
        f"Priced for the named deployment {title} with this build's own {listed(own)}: {s.model.name} on"
        f" {deployment_words(s)}."
    )


def listed(items: Iterable[str]) -> str:
    """``items`` as an English list: ``a``, ``a and b``, ``a, b and c``; none is the empty string."""
    items = list(items)
    if len(items) < 2:
        return "".join(items)
    return f"{', '.join(items[:-1])} and {items[-1]}"


def times(ratio: float) -> str:
    """A ratio as the prose writes it, never rounded to 0: ``1,234×``, ``3.4×``, ``0.045×`` (two figures below 1)."""
    if ratio >= 10:
        return f"{ratio:,.0f}×"
    return f"{ratio:.1f}×" if ratio >= 1 else f"{ratio:.2g}×"


def faster(low: float, high: float, subject: str, other: str) -> str:
    """``SUBJECT is LOW× to HIGH× faster``, turned round where ``other`` is the faster one: the ratios are ``other``'s
    time over ``subject``'s, and below 1 ``other`` is faster by their inverse; a span across 1 says both ends."""

    def span(a: float, b: float) -> str:
        return times(a) if times(a) == times(b) else f"{times(a).removesuffix('×')}× to {times(b)}"

    if low >= 1:
        return f"{subject} is {span(low, high)} faster"
    if high <= 1:
        return f"{other} is {span(1 / high, 1 / low)} faster than {subject}"
    return f"{subject} ranges from {times(1 / low)} slower to {times(high)} faster"


def saves(amount: float, unit: str, spec: str = ".3g") -> str:
    """``saves AMOUNT UNIT`` for a net saving of 0 or more, ``loses -AMOUNT UNIT`` below 0: a saving below zero is
    a loss, never "saves -0.0159"."""
    return f"saves {amount:{spec}} {unit}" if amount >= 0 else f"loses {-amount:{spec}} {unit}"


def nets(amount: float, unit: str = "dollars an hour", spec: str = ",.2f") -> str:
    """``nets AMOUNT UNIT`` for 0 or more, ``loses -AMOUNT UNIT`` below 0; what rounds to zero is never "-0.00"."""
    shown = format(abs(amount), spec)
    lost = amount < 0 and any(c in "123456789" for c in shown)
    return f"{'loses' if lost else 'nets'} {shown} {unit}".rstrip()


def which_pays(a: float, b: float, name_a: str, name_b: str) -> str:
    """Which of two net savings is better, said by the numbers: ``A saves more`` or, where both lose, ``A loses
    less`` (never "A pays more" of two losses)."""
    best = name_a if a > b else name_b
    return f"{best} saves more" if max(a, b) >= 0 else f"neither pays: {best} loses less"


def days(seconds: float) -> str:
    """A long duration in days (``12.2 days``), a shorter one in its own unit (``2.40 h``): never "0.0 days"."""
    return f"{seconds / 86400:,.1f} days" if seconds >= 86400 else format_time(seconds)


def saves_span(low: float, high: float, unit: str, spec: str = ",.2f") -> str:
    """A range of net savings in words: ``saves LOW to HIGH UNIT``, ``loses ...`` when all are losses, and
    ``ranges from losing -LOW to saving HIGH UNIT`` across zero (never "saves -1.23 to 1.24")."""

    def span(a: float, b: float) -> str:
        lo, hi = format(a, spec), format(b, spec)
        return f"{lo} {unit}" if lo == hi else f"{lo} to {hi} {unit}"

    if low >= 0:
        return f"saves {span(low, high)}"
    if high <= 0:
        return f"loses {span(-high, -low)}"
    return f"ranges from losing {-low:{spec}} to saving {high:{spec}} {unit}"


def capitalized(text: str) -> str:
    """``text`` with its first letter upper case, the rest as it is (``str.capitalize`` lowers the rest)."""
    return text[:1].upper() + text[1:]


def differs_as_printed(build: Sequence[float], seed: Sequence[float], spec: str) -> bool:
    """Whether the build's numbers and the seed set's differ as a reader sees them, each formatted with ``spec``.

    A page compares its build with the seed set only when they differ: the seed build would
    otherwise print the same numbers twice ("43.33 ... With the seed assumptions these are 43.33").

    Parameters
    ----------
    build, seed : sequence of float
        The same quantities for the build and for the seed set, in the same order.
    spec : str
        The format the page prints them with (``".2f"``).
    """
    return [format(x, spec) for x in build] != [format(x, spec) for x in seed]


def deployment_words(s: Scenario) -> str:
    """The placement in words: ``"one accelerator"`` or ``"8 accelerators (tensor-parallel 8)"``."""
    p = s.placement
    if p.accelerators == 1:
        words = "one accelerator" + (" with its own link" if p.gpus_per_link == 1 else "")
    else:
        parts = [
            f"{name} {n}"
            for name, n in (("tensor-parallel", p.tp), ("pipeline", p.pp), ("expert-parallel", p.ep))
            if n > 1
        ]
        words = f"{p.accelerators} accelerators ({', '.join(parts)})"
        if p.gpus_per_link == 1:
            words += ", each with its own link"
    if p.gpus_per_link > 1:  # more than the deployment's own: other instances' accelerators share its links
        others = " (other instances' among them)" if p.gpus_per_link > p.accelerators else ""
        words += f", {p.gpus_per_link} sharing each link{others}"
    return words


def copy_method_sentence(s: Scenario) -> str:
    """Which copy method the page's verdicts assume, from the set's ``engine`` and ``fetch.copy_method``.

    The tier ladder's per-layer verdicts charge each tier's own ``tier_latency.*`` per chunk copy (over
    the host link, the H200's lone synchronised copy); the brackets' fetch charges
    :attr:`~kvtier.scenario.Scenario.transfer_latency_s` per transfer: the copy method's per-copy cost
    where one applies, else ``fetch_latency``.
    """
    chunks = s.layer_chunks
    ladder = (
        f"The tiers' verdicts in the per-layer layout charge each of the {chunks:,} chunk copies the tier's own"
        " per-copy latency (each tier's latency input; over the host link a lone synchronised cudaMemcpyAsync,"
        " lone-dma),"
        " those in one piece one copy."
    )
    method = s.copy_method
    latency = f"{s.transfer_latency_s * 1e6:.3g} µs"
    if method == "none":
        return (
            f"{ladder} This set names no copy method (engine {s.assumptions.value('engine')}), so a fetch at the"
            f" bracket bandwidths pays the set's per-transfer latency, {latency}, each transfer."
        )
    n = s.fetch_transfers
    engine = s.engine
    who = f"Under engine {engine.name} ({engine.version}) a" if engine is not None else "In this set a"
    return (
        f"{ladder} {who} {s.model.name} block moves in {n:,} cop{'y' if n == 1 else 'ies'},"
        f" {'issued' if n == 1 else 'each issued'} as {method} at {latency},"
        " which replaces the set's per-transfer latency at the bracket bandwidths."
    )
