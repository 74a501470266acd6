"""What flips a verdict beyond links and prices: the accelerator, tensor-parallel size, copy method and kernels.

Each input is tried at the values a team chooses between (every accelerator preset, tensor-parallel
sizes 1 to 8, each copy method, each engine's measured kernels), the rest of the build held, and
each try is set against the build's 40 verdicts (every tier, regime and layout of
:func:`kvtier.deployment.Deployment`): how many flip, and where the build's closest call then
stands.  For the accelerator's speed, the peak at which the closest call flips is found as well.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from weakref import WeakKeyDictionary

import numpy as np
import pandas as pd

from kvtier.deployment import Deployment
from kvtier.errors import KvtierError
from kvtier.inputs import engines, hardware, kernels
from kvtier.inputs.assumptions import AssumptionSet
from kvtier.inputs.deployments import accelerator_records
from kvtier.inputs.keys import LAYOUTS
from kvtier.report import words
from kvtier.report.columns import Column, declare, named
from kvtier.scenario import Scenario
from kvtier.units import format_quantity

INPUTS = ("accelerator", "tensor-parallel size", "copy method", "engine kernels")
"""The inputs tried, in the order the page lists them."""

TP_SIZES = (1, 2, 4, 8)
"""The tensor-parallel sizes tried: the powers of two within one 8-GPU server."""

SOURCE = "what would change the answer"


def _verdicts(s: Scenario) -> tuple[np.ndarray, np.ndarray]:
    """Every verdict of ``s`` (fetch wins, per regime, layout and tier) and every ratio, in one fixed order."""
    d = Deployment.of(s)
    wins, ratios = [], []
    for regime in ("lone", "batch"):
        for layout in LAYOUTS:
            wins.append(d.fetch_wins(regime, layout))
            ratios.append(d.ratio(regime, layout))
    return np.concatenate(wins), np.concatenate(ratios)


def _closest(s: Scenario) -> int:
    """The index, in :func:`_verdicts`' order, of the build's verdict nearest to flipping."""
    _, ratios = _verdicts(s)
    return int(np.argmin(np.abs(np.log(ratios))))


def _speed(records: dict[str, Any]) -> dict[str, Any]:
    """An accelerator preset's speed alone: its peak, memory bandwidth and kernel tables, not its memory.

    Whether a placement fits the preset's memory is the tensor-parallel size's question, tried on its own.
    """
    return {key: rec for key, rec in records.items() if key != "parallel.hbm_capacity"}


def _tries(s: Scenario) -> list[tuple[str, str, Callable[[], AssumptionSet]]]:
    """(input, setting, the set with it) for every try of :data:`INPUTS`."""
    a = s.assumptions
    model = str(a.value("regen.model"))
    tries: list[tuple[str, str, Callable[[], AssumptionSet]]] = []
    for name, acc in hardware.load_accelerators().items():
        if acc.peak_flop_per_s is None:
            continue
        tries.append(
            (
                "accelerator",
                f"{name} ({format_quantity(acc.peak_flop_per_s, 'flop_rate')})",
                lambda name=name: a.with_records(_speed(accelerator_records(name, regen_model=model))),
            )
        )
    for tp in TP_SIZES:
        tries.append(
            ("tensor-parallel size", f"TP {tp}", lambda tp=tp: a.with_values({"parallel.tp": tp}, source=SOURCE))
        )
    for method in engines.COPY_METHODS:
        key = engines.COPY_COST_KEYS[method]
        tries.append(
            (
                "copy method",
                f"{method} ({a[key].display} a copy over the host link)",
                lambda key=key: a.with_values({"tier_latency.host_link": a[key].text}, source=SOURCE),
            )
        )
    system = str(a.value("regen.system"))
    for engine in ("vllm", "sglang", "trtllm"):
        version = (kernels.versions(system, engine) or ["none"])[-1]
        tries.append(
            (
                "engine kernels",
                f"{engine} {version} on {system}",
                lambda engine=engine: a.with_values({"regen.model": "engine", "regen.engine": engine}, source=SOURCE),
            )
        )
    return tries


FLIP_COLUMNS = (
    *named("input", "setting"),
    Column("is_build", "this build's"),
    Column("verdicts_flipped", "verdicts flipped", "of 40"),
    Column("wins_lone_contiguous", "fetch wins alone, one copy", "tiers"),
    Column("wins_batch_contiguous", "fetch wins inside a batch, one copy", "tiers"),
    Column("wins_batch_per_layer", "fetch wins inside a batch, per-chunk copies", "tiers"),
    Column("closest_ratio", "the build's closest call", "×"),
    *named("refused"),
)
"""The columns of :func:`flip_inputs`, in words with their units."""


def flip_inputs(s: Scenario) -> pd.DataFrame:
    """Every try of :data:`INPUTS` against the build's verdicts.

    ``verdicts_flipped`` counts the verdicts (of the 40: ten tiers, two regimes, two layouts) that
    differ from the build's; ``wins_*`` the tiers fetching wins from in three of the four
    (regime, layout) pairs; ``closest_ratio`` the regenerate/fetch ratio of the build's verdict
    nearest to flipping under the try (below 1 it has flipped).  ``is_build`` marks the settings the
    build already has.  A try the package refuses (a placement that does not fit, a model the
    kernel tables cannot time) names why in ``refused``.
    """
    found = _FLIPS.get(s)
    if found is not None:
        return found
    base, base_ratios = _verdicts(s)
    closest = int(np.argmin(np.abs(np.log(base_ratios))))  # the build's verdict nearest to flipping
    n = len(Deployment.of(s).tiers.names)
    rows = []
    for what, setting, make in _tries(s):
        row: dict[str, object] = {"input": what, "setting": setting}
        try:
            sc = Scenario(make())
            wins, ratios = _verdicts(sc)
        except KvtierError as exc:
            rows.append(row | {"is_build": False, "refused": str(exc)})
            continue
        row |= {
            "is_build": bool(np.array_equal(ratios, base_ratios)),
            "verdicts_flipped": int((wins != base).sum()),
            "wins_lone_contiguous": int(wins[:n].sum()),
            "wins_batch_contiguous": int(wins[2 * n : 3 * n].sum()),
            "wins_batch_per_layer": int(wins[3 * n :].sum()),
            "closest_ratio": float(ratios[closest]),
            "refused": "",
        }
        rows.append(row)
    out = declare(pd.DataFrame(rows), FLIP_COLUMNS)
    _FLIPS[s] = out
    return out


_FLIPS: WeakKeyDictionary[Scenario, pd.DataFrame] = WeakKeyDictionary()


def flip_peak(s: Scenario) -> float | None:
    """The dense peak (FLOP/s) at which the build's closest call flips, the rest held; None if none within 1000x.

    Under the engine model the kernels time regeneration and the peak is not read: None.
    """
    if s.assumptions.value("regen.model") == "engine":
        return None
    closest = _closest(s)
    peak = s.v("peak_flops")

    def ratio(x: float) -> float:
        sc = Scenario(s.assumptions.with_values({"peak_flops": f"{x} FLOP/s"}, source=SOURCE))
        return float(_verdicts(sc)[1][closest])

    lo, hi = peak / 1000, peak * 1000
    f_lo, f_hi = np.log(ratio(lo)), np.log(ratio(hi))
    if np.sign(f_lo) == np.sign(f_hi):
        return None
    for _ in range(60):  # bisection in log space: the ratio moves monotonically with the peak
        mid = float(np.sqrt(lo * hi))
        f_mid = np.log(ratio(mid))
        if np.sign(f_mid) == np.sign(f_lo):
            lo, f_lo = mid, f_mid
        else:
            hi = mid
        if hi / lo < 1 + 1e-6:
            break
    return float(np.sqrt(lo * hi))


def _together(settings: list[str]) -> str:
    """Settings in words, a detail they share said once: ``h100-sxm and h200 (989 TFLOP/s)``."""
    names, _, tails = zip(*(setting.partition(" (") for setting in settings), strict=True)
    if len(settings) > 1 and len(set(tails)) == 1 and tails[0]:
        return f"{words.listed(names)} ({tails[0]}"
    return words.listed(settings)


def flip_sentences(s: Scenario) -> dict[str, str]:
    """One sentence per input of :data:`INPUTS`: which of its settings flip verdicts, and how many."""
    df = flip_inputs(s)
    out = {}
    for what in INPUTS:
        rows = df[df["input"] == what]
        ok = rows[rows["refused"] == ""]
        flipping = ok[ok["verdicts_flipped"] > 0]
        refused = rows[rows["refused"] != ""]
        if flipping.empty:
            text = f"none of the {len(ok)} settings tried flips a verdict"
        else:
            # settings with the same outcome (an H100 and an H200 have one peak) are named together
            groups: dict[tuple[int, str], list[str]] = {}
            for _, r in flipping.iterrows():
                outcome = (int(r["verdicts_flipped"]), f"{r['closest_ratio']:.3g}")
                groups.setdefault(outcome, []).append(str(r["setting"]))
            text = "; ".join(
                f"{_together(settings)} flip{'s' if len(settings) == 1 else ''} {n} (the closest call at {ratio}×)"
                for (n, ratio), settings in groups.items()
            )
        if len(refused):
            text += f" ({len(refused)} refused: {', '.join(refused['setting'])})"
        out[what] = text
    peak = flip_peak(s)
    if peak is not None:
        out["peak"] = (
            f"the closest call flips at a dense peak of {format_quantity(peak, 'flop_rate')},"
            f" {peak / s.v('peak_flops'):.3g} times this build's"
        )
    else:
        out["peak"] = "no peak flips the closest call (the kernels, not the peak, time regeneration)"
    return out
