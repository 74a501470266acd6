"""The answer for named deployments: the landing's decision and money per deployment, beside the build's own.

Three kinds of row (a :class:`World` each): the build's own assumption set (under the seed, the
source chapter's world: its implied 500 TFLOP/s accelerator at 25 % MFU), each named deployment
of ``kvtier/data/deployments.yaml`` layered on the build's set
(:func:`kvtier.inputs.deployments.assumption_set`), and the book's own measured set
(``h200-measured.yaml``, its records layered on the build's set like a deployment's).  Each row is one resolved
:class:`~kvtier.deployment.Deployment`: the same verdicts and the same LRU tier as the decision
page computes for the build, so that the build's row equals that page's numbers
(``tests/test_agreement.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from weakref import WeakKeyDictionary

import pandas as pd

from kvtier.deployment import Deployment
from kvtier.errors import KvtierError
from kvtier.inputs import deployments
from kvtier.report import serving, words
from kvtier.report.columns import Column, declare, named
from kvtier.scenario import Scenario, measured_on

MEDIUM_WORDS = {"dram": "host DRAM", "cxl": "CXL memory", "nvme": "NVMe flash"}


@dataclass(frozen=True)
class World:
    """One row of the named table: a deployment resolved, or the one line that refused it.

    Attributes
    ----------
    name : str
        ``this build``, a named deployment's name, or ``h200-measured``.
    kind : str
        ``this build``, ``named`` or ``measured set``.
    title : str
        How the row is named for a reader.
    scenario : Scenario or None
        The resolved set; None where it was refused (:attr:`refused`).
    per_server : int
        Accelerators in one server (1 where the set names no server).
    refused : str
        Why the set could not be resolved (the error's one line); empty when it was.
    """

    name: str
    kind: str
    title: str
    scenario: Scenario | None
    per_server: int
    refused: str = ""


def _build_title(s: Scenario) -> str:
    """The build's own row, in words: under the seed set, the source chapter's world."""
    chapter = s.assumptions.name == "seed"
    what = "the source chapter's world" if chapter else f"this build ({s.assumptions.name})"
    pricing = words.regen_pricing(s)["pricing"].removeprefix("at ").removeprefix("with ")
    return f"{what}: {s.model.name}, {words.deployment_words(s)}, regenerated at {pricing}"


def _resolve(name: str, kind: str, title: str, make: Callable[[], Scenario], per_server: int) -> World:
    try:
        sc = make()
        Deployment.of(sc)  # the fit check and the kernel tables refuse here, in one line
        return World(name, kind, title, sc, per_server)
    except KvtierError as exc:
        return World(name, kind, title, None, per_server, str(exc))


def worlds(s: Scenario) -> tuple[World, ...]:
    """The rows of :func:`named_table` for the build ``s``: itself, each named deployment, the measured set."""
    found = _WORLDS.get(s)
    if found is not None:
        return found
    rows = [World("this build", "this build", _build_title(s), s, 1)]
    for dep in deployments.load():
        rows.append(
            _resolve(
                dep.name,
                "named",
                dep.title,
                lambda dep=dep: Scenario(deployments.assumption_set(dep, s.assumptions)),
                int(dep.per_server.value),
            )
        )
    if s.assumptions.name != "h200-measured":
        rows.append(
            _resolve(
                "h200-measured",
                "measured set",
                "the book's measured set: Llama-3-70B on one H200, its copies and forward passes as measured",
                lambda: measured_on(s),
                1,
            )
        )
    out = tuple(rows)
    _WORLDS[s] = out
    return out


_WORLDS: WeakKeyDictionary[Scenario, tuple[World, ...]] = WeakKeyDictionary()

NAMED_COLUMNS = (
    *named("deployment", "kind", "title"),
    Column("accelerator_hour_usd", "accelerator hour", "USD/h"),
    Column("block_tokens", "block", "tokens"),
    Column("engine_copies", "copies a block takes, the engine's way"),
    Column("chunk_copies", "copies a block takes, per layer chunk"),
    Column("n_tiers", "tiers"),
    Column("fetch_wins", "tiers fetch wins from (alone, batch, chunks)"),
    Column("wins_lone_engine", "fetch wins alone, the engine's copies", "tiers"),
    Column("wins_batch_engine", "fetch wins inside a batch, the engine's copies", "tiers"),
    Column("wins_batch_chunks", "fetch wins inside a batch, per-chunk copies", "tiers"),
    Column("min_ratio_batch_engine", "lowest in-batch ratio, the engine's copies", "×"),
    Column("min_ratio_batch_chunks", "lowest in-batch ratio, per-chunk copies", "×"),
    Column("split_prefix_tokens", "reused prefix the split serves", "tokens"),
    Column("split_tiers", "tiers a split is fastest from (alone, batch)"),
    Column("split_gain_max", "largest split gain over the better pure way", "×"),
    *named("medium"),
    Column("tier_gib_per_accelerator", "tier per accelerator", "GiB"),
    Column("tier_gib_per_server", "tier per server", "GiB"),
    Column("cost_usd_h_per_accelerator", "tier cost per accelerator", "USD/h"),
    Column("saved_usd_h_per_accelerator", "saved per accelerator", "USD/h"),
    Column("saved_usd_h_per_server", "saved per server", "USD/h"),
    Column("saved_usd_h", "saved by the fleet", "USD/h"),
    Column("busy_accelerators", "accelerators the trace keeps busy"),
    Column("per_server", "accelerators per server"),
    *named("refused"),
)
"""The columns of :func:`named_table`, in words with their units."""

SHOWN = (
    "deployment",
    "fetch_wins",
    "medium",
    "tier_gib_per_accelerator",
    "tier_gib_per_server",
    "cost_usd_h_per_accelerator",
    "saved_usd_h_per_accelerator",
    "saved_usd_h_per_server",
)
"""The columns the landing page shows first."""


def _row(w: World) -> dict[str, object]:
    row: dict[str, object] = {"deployment": w.name, "kind": w.kind, "title": w.title, "per_server": w.per_server}
    if w.scenario is None:
        return row | {"refused": w.refused}
    sc = w.scenario
    d = Deployment.of(sc)
    engine_fetch = d.block.fetch_s(d.tiers, sc.fetch_transfers)
    ratio = {regime: d.regen_s(regime) / engine_fetch for regime in ("lone", "batch")}
    best, feasible = d.best_tier("batch")
    per = best.accelerators  # at least one: "per accelerator" never exceeds the total (issue 43)
    per_acc = best.capacity_bytes / per
    usd_h = 3600.0
    wins = (int((ratio["lone"] > 1).sum()), int((ratio["batch"] > 1).sum()), d.n_fetch_wins("batch", "per-layer"))
    splits = pd.DataFrame(serving.engine_split(sc))
    split_wins = [int(((splits["regime"] == r) & (splits["fastest"] == "split")).sum()) for r in ("lone", "batch")]
    row |= {
        "accelerator_hour_usd": sc.v("cost.accelerator_hour") * usd_h,
        "block_tokens": sc.block_tokens,
        "engine_copies": sc.fetch_transfers,
        "chunk_copies": d.transfers["per-layer"],
        "n_tiers": len(d.tiers.names),
        "wins_lone_engine": wins[0],
        "wins_batch_engine": wins[1],
        "wins_batch_chunks": wins[2],
        "fetch_wins": "/".join(str(k) for k in wins),
        "min_ratio_batch_engine": float(ratio["batch"].min()),
        "min_ratio_batch_chunks": float(d.ratio("batch", "per-layer").min()),
        "split_prefix_tokens": serving.split_prefix(sc)[0],
        "split_tiers": "/".join(str(k) for k in split_wins),
        "split_gain_max": float(splits["gain"].max()),
        "medium": MEDIUM_WORDS[best.medium] + ("" if feasible else " (over its device's traffic)"),
        "tier_gib_per_accelerator": per_acc / 2**30,
        "tier_gib_per_server": best.capacity_bytes / best.servers(w.per_server) / 2**30,
        "cost_usd_h_per_accelerator": (best.hold_usd_per_s + best.fetch_usd_per_s) / per * usd_h,
        "saved_usd_h_per_accelerator": best.saved_usd_per_s / per * usd_h,
        "saved_usd_h_per_server": best.saved_usd_per_s / best.servers(w.per_server) * usd_h,
        "saved_usd_h": best.saved_usd_per_s * usd_h,
        "busy_accelerators": best.prefill_accelerators,
        "refused": "",
    }
    return row


def named_table(s: Scenario) -> pd.DataFrame:
    """Per row of :func:`worlds`: the verdicts by regime and copy path, the LRU tier and its money.

    ``split_tiers`` counts the tiers from which splitting the reused prefix of
    :func:`kvtier.report.serving.split_prefix` (``split_prefix_tokens``) is the fastest way, alone and inside a
    batch, the engine's copies
    (:func:`kvtier.report.serving.engine_split`); ``split_gain_max`` is its largest gain over the better pure way.
    ``wins_*`` count the tiers (of ``n_tiers``) from which fetching a block beats regenerating it:
    alone or inside a batch, copied the engine's way (``engine_copies`` copies, each paying the tier's
    per-copy latency; one copy under ``engine: none``) or as one copy per layer chunk
    (``chunk_copies``).  The tier is the decision's LRU tier for ``decision.hit_target`` of the
    trace's achievable hits, recomputation priced inside a batch (:meth:`Deployment.best_tier`):
    its size per accelerator the trace's prefill keeps busy (``busy_accelerators``) and per server
    (``per_server`` of them), its holding and fetching cost and its net saving per accelerator (USD/h),
    per server, and for the fleet.  A refused row names why in ``refused`` and holds no numbers.
    """
    return declare(pd.DataFrame([_row(w) for w in worlds(s)]), NAMED_COLUMNS)


def _span(values: pd.Series, fmt: str, unit: str = "") -> str:
    cast = int if fmt.endswith("d") else float
    lo, hi = format(cast(values.min()), fmt), format(cast(values.max()), fmt)
    return f"{lo}{unit}" if lo == hi else f"{lo} to {hi}{unit}"


def spread_sentence(s: Scenario) -> str:
    """How far the answer moves across the rows of :func:`named_table`, in one sentence."""
    df = named_table(s)
    ok = df[df["refused"] == ""]
    if ok.empty:
        return "No deployment could be resolved with this build's assumptions."
    if not ok["saved_usd_h"].notna().all():
        return (
            "The trace has no rate per second (it lasts no time), so no tier can be priced per hour for it; the"
            " verdicts per block are in the table."
        )
    n_named = int((ok["kind"] == "named").sum())
    n = int(ok["n_tiers"].iloc[0])
    saved = ok["saved_usd_h_per_accelerator"].astype(float)
    refused = df[df["refused"] != ""]
    tail = f" ({len(refused)} refused: {', '.join(refused['deployment'])})" if len(refused) else ""
    kinds = ["this build"] + ([f"{n_named} named deployment{'s' if n_named > 1 else ''}"] if n_named else [])
    if (ok["kind"] == "measured set").any():
        kinds.append("the book's measured set")
    return (
        f"Across {words.listed(kinds)}{tail}, fetching a block beats"
        f" regenerating it inside a batch from {_span(ok['wins_batch_engine'], 'd')} of {n} tiers when it is copied"
        f" the engine's way and from {_span(ok['wins_batch_chunks'], 'd')} copied layer chunk by layer chunk"
        f" (alone, from {_span(ok['wins_lone_engine'], 'd')} of {n}); the tier the trace calls for"
        f" {words.saves_span(saved.min(), saved.max(), 'USD/h')} per accelerator."
    )


def split_spread_sentence(s: Scenario) -> str:
    """Where a split of the reused prefix is the fastest way across the rows of :func:`named_table`, in one sentence."""
    df = named_table(s)
    ok = df[df["refused"] == ""]
    if ok.empty:
        return ""
    batch = ok["split_tiers"].str.split("/").str[1].astype(int)
    best = ok.loc[ok["split_gain_max"].idxmax()]
    n = int(ok["n_tiers"].iloc[0])
    return (
        f"Serving a reused prefix ({_span(ok['split_prefix_tokens'], ',d')} tokens) with the engine's own copies,"
        f" computing its head while its tail is fetched is the fastest way inside a batch from {_span(batch, 'd')}"
        f" of {n} tiers, by at most {best['split_gain_max']:.3g} times over the better pure way ({best['deployment']})."
    )


def confidence_sentence(s: Scenario, keys: tuple[str, ...]) -> str:
    """How the answer is known: the provenance of the inputs ``keys`` the build reads, counted; what was measured."""
    records = [s.assumptions[key] for key in keys if key in s.assumptions]
    counts: dict[str, int] = {}
    for rec in records:
        counts[rec.provenance] = counts.get(rec.provenance, 0) + 1
    order = ("measured", "published-spec", "derived", "implied", "assumed")
    listed = ", ".join(f"{counts[c]} {c}" for c in order if counts.get(c))
    return (
        f"How sure: of the {len(records)} inputs this build's decision reads, {listed}; the named deployments take"
        " their kernels from NVIDIA's measured tables, the measured set its copies and passes from one H200, and no"
        " CXL link was measured."
    )


def pool_sentence(s: Scenario) -> str:
    """What "per server" assumes: the tier is one pool for the fleet, in words with the first named row's numbers."""
    df = named_table(s)
    ok = df[(df["kind"] == "named") & (df["refused"] == "")]
    if ok.empty:
        return "No named deployment could be resolved, so no tier is sized per server."
    row = ok.iloc[0]
    if not (row["busy_accelerators"] > 0 and row["tier_gib_per_accelerator"] > 0):
        return "The trace keeps no accelerator busy or reuses nothing, so there is no tier to share or split."
    total_tib = row["tier_gib_per_accelerator"] * max(row["busy_accelerators"], 1.0) / 1024  # as the table divides
    servers = row["busy_accelerators"] / row["per_server"]
    lead = (
        "Each tier is one pool: the trace replayed through one LRU cache that every accelerator of the fleet"
        f" reaches. For {row['deployment']} that is {total_tib:,.3g} TiB for the {row['busy_accelerators']:,.3g}"
        " accelerators the trace keeps busy"
    )
    if servers <= 1:  # the fleet fits one server: its tier is the pool, nothing to split
        return lead + f", all within one server of {int(row['per_server'])}, so a tier per server is the pool itself."
    return lead + (
        f", {servers:,.3g} servers of {int(row['per_server'])}; held as one tier per server instead, each server's"
        f" {row['tier_gib_per_server']:,.4g} GiB keeps the same hits only if the router sends every turn of a"
        " conversation to the server that holds its prefix, and fewer under any other routing (the workload page"
        " replays each router, the cost page prices each choice)."
    )
