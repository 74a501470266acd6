"""Figures: house style, an assumptions footer on every figure, deterministic output.

Every figure of the book states the assumptions behind it twice: in a footer line drawn
on the figure itself and in its caption (see :func:`assumption_text`).  Output is
deterministic: a fixed SVG hash salt, no dates in SVG metadata, no software tag in PNG.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable
from pathlib import Path

import matplotlib as mpl
import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from kvtier.assumptions import Assumption

HASH_SALT = "kvtier"
SVG_METADATA = {"Date": None, "Creator": None}
PNG_METADATA = {"Software": None}
PALETTE = ("#1b6ca8", "#d1495b", "#edae49", "#66a182", "#6a4c93", "#2e4057", "#8d96a3", "#00798c")

STYLE = {
    "svg.hashsalt": HASH_SALT,
    "svg.fonttype": "path",
    "figure.figsize": (7.5, 4.6),
    "figure.dpi": 100,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.prop_cycle": mpl.cycler(color=PALETTE),
    "font.size": 10,
    "legend.frameon": False,
}


def apply_style() -> None:
    """Set the house style and the deterministic-output settings on matplotlib."""
    mpl.rcParams.update(STYLE)


def setup_notebook() -> None:
    """House style plus inline SVG output without dates, for executed notebooks."""
    apply_style()
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython ships with the notebook stack
        return
    ip = get_ipython()
    if ip is None:
        return
    ip.run_line_magic("config", "InlineBackend.figure_formats = ['svg']")
    ip.run_line_magic(
        "config", "InlineBackend.print_figure_kwargs = {'bbox_inches': 'tight', 'metadata': {'Date': None}}"
    )


def assumption_text(records: Iterable[Assumption], extra: str = "") -> str:
    """One line naming each assumption with its value and provenance class."""
    parts = [rec.label() for rec in records]
    if extra:
        parts.append(extra)
    return "Assumptions: " + "; ".join(parts)


def new_figure(width_in: float = 7.5, height_in: float = 4.6) -> tuple[Figure, plt.Axes]:
    """A styled figure with one axes."""
    apply_style()
    fig, ax = plt.subplots(figsize=(width_in, height_in))
    return fig, ax


def add_footer(fig: Figure, records: Iterable[Assumption], extra: str = "", width_chars: int = 130) -> None:
    """Draw the assumptions line(s) at the bottom of ``fig``, below the axes."""
    text = "\n".join(textwrap.wrap(assumption_text(records, extra), width_chars))
    n_lines = text.count("\n") + 1
    fig.text(0.01, 0.005, text, fontsize=6.5, color="#444444", ha="left", va="bottom", family="monospace")
    fig.subplots_adjust(bottom=0.12 + 0.03 * n_lines)


def save(fig: Figure, path: str | Path) -> Path:
    """Save ``fig`` deterministically as SVG or PNG (by suffix); return the path."""
    path = Path(path)
    apply_style()
    metadata = SVG_METADATA if path.suffix == ".svg" else PNG_METADATA
    fig.savefig(path, metadata=metadata, bbox_inches="tight")
    return path
