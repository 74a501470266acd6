"""What the source chapter printed, for side-by-side comparison with our computation.

These are quotations, not inputs: no formula reads them.  The book sets each beside
the value kvtier computes from the seed assumptions, so a reader sees where the
chapter rounded, and the implied peak FLOP/s is solved from the printed times.
All values in SI base units; ``rounding_s`` is the half-width of the printed rounding.
"""

from __future__ import annotations

from dataclasses import dataclass

SOURCE = "source chapter (../shared/seeds/000_e0b3b1a93d64e24e.txt)"


@dataclass(frozen=True)
class Quote:
    """A number as the source chapter printed it.

    Attributes
    ----------
    value : float
        The printed value in SI base units.
    half_width : float
        Half of the last printed digit's step (the rounding uncertainty), same unit.
    where : str
        Where in the chapter it appears.
    """

    value: float
    half_width: float
    where: str


FETCH_S = {
    "optimistic": Quote(43e-6, 0.5e-6, "fetch-time table, 121 GB/s row"),
    "mid": Quote(82e-6, 0.5e-6, "fetch-time table, 64 GB/s row"),
    "pessimistic": Quote(164e-6, 0.5e-6, "fetch-time table, 32 GB/s row"),
}
REGEN_S = {
    "optimistic": Quote(9e-3, 0.5e-3, "regeneration table, 50 % MFU row"),
    "typical": Quote(11e-3, 0.5e-3, "regeneration table, 40 % MFU row"),
    "conservative": Quote(18e-3, 0.5e-3, "regeneration table, 25 % MFU row"),
}
REGEN_CONSERVATIVE_UNROUNDED_S = Quote(17.9e-3, 0.05e-3, "illustrative point, '17.9 ms before rounding'")
ILLUSTRATIVE_RATIO = Quote(218.0, 0.5, "illustrative point, '17.9 ms / 82 us = 218x'")
CLAIM_ORDERS = (2.0, 3.0)
"""'Two to three orders of magnitude': the regenerate/fetch ratio between 10**2 and 10**3."""
CLAIM_LOW, CLAIM_HIGH = 10.0 ** CLAIM_ORDERS[0], 10.0 ** CLAIM_ORDERS[1]
"""The claimed band as ratios: 100x to 1000x."""
CROSSOVER_TOKENS = Quote(427_000.0, 500.0, "capacity section, 'roughly 427,000 tokens'")
SHARE_SHORT = Quote(0.08, 0.005, "capacity table, 32K row")
SHARE_LONG = Quote(0.31, 0.005, "capacity table, 128K row")

IMPLIED_PEAK_QUOTES: tuple[tuple[str, Quote], ...] = (
    *REGEN_S.items(),
    ("conservative", REGEN_CONSERVATIVE_UNROUNDED_S),
)
"""The printed regeneration times, with their MFU labels, that pin down the unstated peak."""
