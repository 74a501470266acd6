"""The house style of the figures: style, an assumptions footer on every figure, deterministic output.

The figures themselves live with their pages (:mod:`kvtier.pages`); each is drawn on
:func:`new_figure` and ends with :func:`finish`, so that it states the assumptions behind
it twice: in a footer line drawn on the figure itself and in its caption (see
:func:`assumption_text`).  Output is deterministic: a fixed SVG hash salt and no date in
the SVG a notebook prints (:data:`SVG_PRINT`).
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable
from typing import TYPE_CHECKING

from kvtier.assumptions import Assumption

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

HASH_SALT = "kvtier"
SVG_PRINT: dict[str, object] = {"bbox_inches": "tight", "metadata": {"Date": None}}
"""How a notebook prints a figure as SVG (``InlineBackend.print_figure_kwargs``): tight, no date."""
PALETTE = ("#1b6ca8", "#d1495b", "#edae49", "#66a182", "#6a4c93", "#2e4057", "#8d96a3", "#00798c")

STYLE: dict[str, object] = {
    "svg.hashsalt": HASH_SALT,
    "svg.fonttype": "path",
    "figure.figsize": (7.5, 4.6),
    "figure.dpi": 100,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "font.size": 10,
    "legend.frameon": False,
}
"""The house style's matplotlib settings; :func:`apply_style` adds the colour cycle of :data:`PALETTE`.

matplotlib is imported only by the functions that draw: a process that computes the
tables of record (the build itself) never loads it.
"""


def apply_style() -> None:
    """Set the house style and the deterministic-output settings on matplotlib."""
    import matplotlib as mpl

    mpl.rcParams.update({**STYLE, "axes.prop_cycle": mpl.cycler(color=PALETTE)})


def assumption_text(records: Iterable[Assumption], extra: str = "") -> str:
    """One line naming each assumption with its value and provenance class."""
    parts = [rec.label() for rec in records]
    if extra:
        parts.append(extra)
    return "Assumptions: " + "; ".join(parts)


def new_figure(width_in: float = 7.5, height_in: float = 4.6) -> tuple[Figure, Axes]:
    """A styled figure with one axes, ``width_in`` x ``height_in`` inches."""
    import matplotlib.pyplot as plt

    apply_style()
    fig, ax = plt.subplots(figsize=(width_in, height_in))
    return fig, ax


def add_footer(fig: Figure, records: Iterable[Assumption], extra: str = "", width_chars: int = 130) -> None:
    """Draw the assumptions line(s) at the bottom of ``fig``, below the axes."""
    text = "\n".join(textwrap.wrap(assumption_text(records, extra), width_chars))
    n_lines = text.count("\n") + 1
    fig.text(0.01, 0.005, text, fontsize=6.5, color="#444444", ha="left", va="bottom", family="monospace")
    fig.subplots_adjust(bottom=0.12 + 0.03 * n_lines)


def caption(text: str, records: Iterable[Assumption]) -> str:
    """A figure's caption: ``text`` followed by the assumptions line of ``records``."""
    return f"{text} {assumption_text(records)}."


CONTEXT_LIMIT_COLOR = "#b03a2e"


def mark_context_limit(ax: Axes, name: str, max_positions: int, x_max: float) -> str:
    """Mark a model's context window where the x axis (positions or context tokens) runs past it.

    Draws a vertical line at ``max_positions`` labelled with the model's name and its
    ``max_position_embeddings``, and returns a caption sentence saying what lies beyond it;
    draws nothing and returns "" when the configuration states no limit or the axis stops
    inside it.
    """
    if not max_positions or x_max <= max_positions:
        return ""
    ax.axvline(max_positions, color=CONTEXT_LIMIT_COLOR, lw=1.0, ls=(0, (4, 2)))
    ax.annotate(
        f"{name} context limit\nmax_position_embeddings = {max_positions:,}",
        xy=(max_positions, 0.98),
        xycoords=ax.get_xaxis_transform(),
        xytext=(4, 0),
        textcoords="offset points",
        va="top",
        fontsize=7,
        color=CONTEXT_LIMIT_COLOR,
    )
    return (
        f" The dashed line marks {name}'s context limit ({max_positions:,} positions, its max_position_embeddings):"
        " to its right the curves describe a long-context model with the same cache geometry, not this one."
    )


def finish(fig: Figure, records: list[Assumption], text: str, extra: str = "") -> tuple[Figure, str]:
    """Draw the assumptions footer and return the figure with its caption (which names them too).

    Every figure function of a page ends here, so that every figure of the book states its
    assumptions twice: on the figure and in the caption.
    """
    add_footer(fig, records, extra=extra)
    return fig, caption(text, records)
