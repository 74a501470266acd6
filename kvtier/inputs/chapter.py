"""What the source chapter printed, for side-by-side comparison with our computation.

These are quotations, not inputs: no formula reads them.  The book sets each beside
the value kvtier computes from the seed assumptions, so a reader sees where the
chapter rounded, and the implied peak FLOP/s is solved from the printed times.
Each is a :class:`~kvtier.inputs.provenance.Record` with no provenance class: its value in SI
base units, its text as printed, where in the chapter it appears as its source, and
the half-width of the printed rounding.
"""

from __future__ import annotations

from kvtier.inputs.provenance import Record

SOURCE = "source chapter (../shared/seeds/000_e0b3b1a93d64e24e.txt)"


def _quote(key: str, value: float, half_width: float, kind: str, text: str, where: str) -> Record:
    """The number printed as ``text`` at ``where`` in the chapter: ``value`` (SI) +- ``half_width``."""
    return Record(f"chapter.{key}", value, kind, text, source=f"{SOURCE}, {where}", half_width=half_width)


FETCH_S = {
    "optimistic": _quote("fetch.optimistic", 43e-6, 0.5e-6, "time", "43 µs", "fetch-time table, 121 GB/s row"),
    "mid": _quote("fetch.mid", 82e-6, 0.5e-6, "time", "82 µs", "fetch-time table, 64 GB/s row"),
    "pessimistic": _quote("fetch.pessimistic", 164e-6, 0.5e-6, "time", "164 µs", "fetch-time table, 32 GB/s row"),
}
REGEN_S = {
    "optimistic": _quote("regen.optimistic", 9e-3, 0.5e-3, "time", "9 ms", "regeneration table, 50 % MFU row"),
    "typical": _quote("regen.typical", 11e-3, 0.5e-3, "time", "11 ms", "regeneration table, 40 % MFU row"),
    "conservative": _quote("regen.conservative", 18e-3, 0.5e-3, "time", "18 ms", "regeneration table, 25 % MFU row"),
}
REGEN_CONSERVATIVE_UNROUNDED_S = _quote(
    "regen.conservative_unrounded", 17.9e-3, 0.05e-3, "time", "17.9 ms", "illustrative point, '17.9 ms before rounding'"
)
ILLUSTRATIVE_RATIO = _quote("ratio", 218.0, 0.5, "count", "218×", "illustrative point, '17.9 ms / 82 us = 218x'")
CLAIM_ORDERS = (2.0, 3.0)
"""'Two to three orders of magnitude': the regenerate/fetch ratio between 10**2 and 10**3."""
CLAIM_LOW, CLAIM_HIGH = 10.0 ** CLAIM_ORDERS[0], 10.0 ** CLAIM_ORDERS[1]
"""The claimed band as ratios: 100x to 1000x."""
CROSSOVER_TOKENS = _quote(
    "crossover_tokens", 427_000.0, 500.0, "tokens", "roughly 427,000", "capacity section, 'roughly 427,000 tokens'"
)
SHARE_SHORT = _quote("share.short", 0.08, 0.005, "fraction", "8%", "capacity table, 32K row")
SHARE_LONG = _quote("share.long", 0.31, 0.005, "fraction", "31%", "capacity table, 128K row")

IMPLIED_PEAK_QUOTES: tuple[tuple[str, Record], ...] = (
    *REGEN_S.items(),
    ("conservative", REGEN_CONSERVATIVE_UNROUNDED_S),
)
"""The printed regeneration times, with their MFU labels, that pin down the unstated peak."""
