"""The house style of the figures: style, an assumptions footer on every figure, deterministic output.

The figures themselves live with their pages (:mod:`kvtier.report.pages`); each is drawn on
:func:`new_figure` (at most :data:`MAX_WIDTH_IN` wide, text at least :data:`MIN_FONT_PT`, so that
it reads on a phone) and ends with :func:`finish`: a footer line drawn on the figure names the
assumptions that drive it, and its caption says what to conclude and how to read it, in at most
:data:`CAPTION_MAX_WORDS` words, before the page's link to every input.  Output is deterministic:
a fixed SVG hash salt and no date in the SVG a notebook prints (:data:`SVG_PRINT`).
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from kvtier.inputs.assumptions import Assumption
from kvtier.inputs.keys import SCHEMA

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.axis import Axis
    from matplotlib.figure import Figure
    from matplotlib.text import Annotation

HASH_SALT = "kvtier"
SVG_PRINT: dict[str, object] = {"bbox_inches": "tight", "metadata": {"Date": None}}
"""How a notebook prints a figure as SVG (``InlineBackend.print_figure_kwargs``): tight, no date."""
MIN_FONT_PT = 9.0
"""Smallest text on a figure (pt).  An SVG point is 4/3 CSS px: 9 pt shows at 12 px at full size."""
MIN_SHOWN_PX = 9.0
"""Smallest text a reader is shown (CSS px), at every width the book is read at (:data:`SHOWN_WIDTHS_PX`)."""
SHOWN_WIDTHS_PX = {1400: 720.0, 420: 370.0}
"""By browser width (CSS px): the widest a figure is shown in the article there.  A figure narrower
than that is shown at its natural size; a wider one is scaled down to fit, and its text with it."""
CSS_PX_PER_IN = 96.0
"""A figure's natural size in CSS px: matplotlib's SVG is sized in points, 72 a inch, each 4/3 px."""
MAX_WIDTH_IN = 5.0
"""The widest a figure is drawn (in): at 420 px it is shown at 370 / 480 = 77 % of its size, so 9 pt
(12 px) text stays above 9 px.  A figure with more to show grows down, not across."""


PALETTE = ("#1b6ca8", "#d1495b", "#edae49", "#66a182", "#6a4c93", "#2e4057", "#8d96a3", "#00798c")

STYLE: dict[str, object] = {
    "svg.hashsalt": HASH_SALT,
    "svg.fonttype": "path",
    "figure.figsize": (5.0, 3.8),
    "figure.dpi": 100,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "font.size": 10,
    "xtick.labelsize": 9.5,
    "ytick.labelsize": 9.5,
    "legend.fontsize": 9.5,
    "legend.frameon": False,
    "text.usetex": False,  # a matplotlibrc in the build's directory must not turn user text into TeX
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


def new_figure(width_in: float = 5.0, height_in: float = 3.8) -> tuple[Figure, Axes]:
    """A styled figure with one axes, ``width_in`` x ``height_in`` inches."""
    import matplotlib.pyplot as plt

    apply_style()
    fig, ax = plt.subplots(figsize=(width_in, height_in))
    return fig, ax


FOOTER_PREFIX = "Drawn with: "
"""How the on-figure line of the assumptions that drive a figure starts."""


def add_footer(fig: Figure, records: Iterable[Assumption]) -> None:
    """Draw the assumptions that drive ``fig`` (with provenance) at its bottom, below the axes.

    The line is :data:`MIN_FONT_PT` high and wrapped to the figure's width; the axes move up
    to make room for it, the tick labels and the axis label.
    """
    width_in, height_in = fig.get_size_inches()
    chars = int(width_in * 72 / (MIN_FONT_PT * 0.62))  # monospace glyphs are about 0.6 em wide
    label = FOOTER_PREFIX + "; ".join(rec.label() for rec in records) + ". All inputs: the assumptions page."
    text = "\n".join(textwrap.wrap(label, chars))
    n_lines = text.count("\n") + 1
    fig.text(0.01, 0.005, text, fontsize=MIN_FONT_PT, color="#444444", ha="left", va="bottom", family="monospace")
    fig.subplots_adjust(bottom=(50 + 11 * n_lines) / (height_in * 72))


def _what(rec: Assumption) -> str:
    """What ``rec`` is, in words: its key's :attr:`~kvtier.inputs.keys.KeySpec.help`, else its figure or key."""
    spec = SCHEMA.get(rec.key)
    return spec.help if spec is not None else rec.figure or rec.key


CAPTION_MAX_WORDS = 60
"""The most words a caption shows: what to conclude and how to read the figure.  The inputs behind it
are on the figure's footer and, every one with its provenance, on the assumptions page the caption links."""


def caption(lead: str, text: str) -> str:
    """A figure's caption: what to conclude (``lead``, computed from the numbers), then how to read it.

    The assumptions are not listed: the figure's footer names those that drive it, and the page
    links the assumptions table after the caption.
    """
    return f"{lead} {text}".strip()


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
    x_min = ax.get_xlim()[0]
    # in the right part of a log axis the label goes left of the line, clear of a right-hand axis
    right = math.log(max_positions / x_min) > 0.55 * math.log(x_max / x_min)
    ax.annotate(
        f"{name} context limit\nmax_position_embeddings = {max_positions:,}",
        xy=(max_positions, 0.02),
        xycoords=ax.get_xaxis_transform(),
        xytext=(-4 if right else 4, 0),
        textcoords="offset points",
        ha="right" if right else "left",
        va="bottom",
        fontsize=MIN_FONT_PT,
        color=CONTEXT_LIMIT_COLOR,
    )
    return (
        f" The dashed line marks {name}'s context limit ({max_positions:,} positions, its max_position_embeddings):"
        " to its right the curves describe a long-context model with the same cache geometry, not this one."
    )


def keep_label_inside(ax: Axes, label: Annotation) -> None:
    """Keep a line's label inside the axes: left of the line, else right of it, else in the top-left corner.

    :func:`mark_context_limit` puts its label left of the line in the right part of a log axis; on a
    narrow figure that label can run past the axes into the tick labels.  For a figure whose top-left
    corner is empty (a cache or a time that rises from the bottom left, as on the capacity and interior
    pages), where a label that would still cross its line breaks its long line in two.
    """
    fig = ax.figure

    def inside() -> bool:
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        box, frame = label.get_window_extent(renderer), ax.get_window_extent(renderer)
        return box.x0 >= frame.x0 and box.x1 <= frame.x1

    if inside():
        return
    label.set_ha("left")
    label.xyann = (4, label.xyann[1])
    if inside():
        return
    line_x = label.xy[0]  # the line's position in data units, before the label leaves it
    label.xycoords = "axes fraction"
    label.xy = (0.0, 0.98)
    label.set_va("top")
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    if label.get_window_extent(renderer).x1 >= ax.transData.transform((line_x, 1.0))[0]:
        # in the corner the label runs into its own line: its long line breaks in two
        label.set_text(label.get_text().replace(" = ", "\n= "))


def finish(
    fig: Figure, records: list[Assumption], text: str, *, lead: str, drivers: Iterable[str], extra: str = ""
) -> tuple[Figure, str]:
    """Draw the footer of the assumptions that drive the figure and return it with its caption.

    Every figure function of a page ends here, so that every figure of the book names on
    itself the assumptions that drive it (``drivers``, keys of ``records``, the figure's
    inputs) and carries a caption that opens with ``lead``, what to conclude, then ``text``,
    how to read it (:func:`caption`).  ``extra`` is kept for the callers that name presets
    shown in a table; it is not printed.
    """
    by_key = {rec.key: rec for rec in records}
    chosen = [by_key[key] for key in drivers]
    add_footer(fig, chosen)
    plain_text(fig)
    del extra
    return fig, caption(lead, text)


def plain_text(fig: Figure) -> None:
    """Show every text the page put on ``fig`` as it is written: ``$`` is a dollar sign, not mathtext.

    Model names (a config's directory name), assumption footers and basis strings are the
    user's text: ``$x^2$`` in a directory name must not render as math, and invalid mathtext
    (``$\\frac{a$``) must not fail the build.  Titles, labels, legends, annotations and figure
    texts stop parsing math (and never use TeX).  Tick labels are drawn later, as new texts,
    from the axis's formatter: those the page wrote (``set_yticks(y, labels)``, which
    matplotlib keeps as a ``FuncFormatter`` or ``FixedFormatter``; a ``FuncFormatter`` of its
    own) have their ``$`` escaped.  Tick labels of matplotlib's numeric formatters keep their
    intended mathtext (a log axis's ``$\\mathdefault{10^{3}}$``), as does each axis's offset text.
    """
    from matplotlib.axis import Axis
    from matplotlib.text import Text

    from_formatters: set[int] = set()
    for axis in fig.findobj(Axis):  # of every axes, a secondary axis's included
        from_formatters.add(id(axis.offsetText))
        for tick in (*axis.majorTicks, *axis.minorTicks):
            from_formatters |= {id(tick.label1), id(tick.label2)}
        _escape_page_labels(axis)
    for artist in fig.findobj(Text):
        if id(artist) not in from_formatters:
            artist.set_usetex(False)
            artist.set_parse_math(False)


def _escape_page_labels(axis: Axis) -> None:
    """Escape ``$`` in the tick labels of ``axis`` that the page wrote (not a numeric formatter's)."""
    from matplotlib.ticker import FixedFormatter, FuncFormatter

    for formatter in (axis.get_major_formatter(), axis.get_minor_formatter()):
        if isinstance(formatter, FixedFormatter):
            formatter.seq = [escape_dollars(str(label)) for label in formatter.seq]
        elif isinstance(formatter, FuncFormatter) and not isinstance(formatter.func, _Escaping):
            formatter.func = _Escaping(formatter.func)


class _Escaping:
    """A tick-label function whose labels show ``$`` as a dollar sign (wraps the page's own)."""

    def __init__(self, func: Callable[..., object]) -> None:
        self.func = func

    def __call__(self, value: float, pos: int | None = None) -> str:
        return escape_dollars(str(self.func(value, pos)))


def escape_dollars(text: str) -> str:
    """``text`` with every ``$`` escaped, so that matplotlib shows it as a dollar sign (``$x$`` -> ``\\$x\\$``)."""
    return text.replace("$", r"\$")


def text_boxes(fig: Figure) -> list[tuple[str, float, tuple[float, float, float, float]]]:
    """Every visible, non-empty text of ``fig``: its text, size (pt) and box (x0, y0, x1, y1 in px).

    Titles, axis labels, tick labels, legend entries, annotations and figure texts alike,
    as drawn by the Agg renderer at the figure's dpi.
    """
    from matplotlib.text import Text

    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    # a tick label is drawn only while its tick lies inside the view: matplotlib keeps the others, stale
    ticks, drawn = set(), set()
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            for tick in (*axis.get_major_ticks(), *axis.get_minor_ticks()):
                ticks |= {id(tick.label1), id(tick.label2)}
            for tick in axis._update_ticks():  # the ticks drawn (private, but the one place matplotlib says so)
                drawn |= {id(tick.label1), id(tick.label2)}
    out = []
    for artist in fig.findobj(Text):
        if not artist.get_visible() or not artist.get_text().strip() or (id(artist) in ticks - drawn):
            continue
        box = artist.get_window_extent(renderer)
        if box.width <= 0 or box.height <= 0:
            continue
        out.append((artist.get_text(), float(artist.get_fontsize()), (box.x0, box.y0, box.x1, box.y1)))
    return out


def natural_width_px(fig: Figure) -> float:
    """The width ``fig`` is printed at (CSS px): its tight bounding box, as the notebook prints the SVG."""
    fig.canvas.draw()
    box = fig.get_tightbbox(fig.canvas.get_renderer())
    return float(box.width + 2 * 0.1) * CSS_PX_PER_IN  # bbox_inches="tight" pads 0.1 in each side


def shown_scale(fig: Figure, browser_px: int) -> float:
    """How much ``fig`` is scaled when shown in a browser ``browser_px`` wide (1: its natural size)."""
    return min(1.0, SHOWN_WIDTHS_PX[browser_px] / natural_width_px(fig))


def legibility_problems(fig: Figure, min_px: float = MIN_SHOWN_PX) -> list[str]:
    """What makes ``fig`` hard to read: text shown below ``min_px`` at any width, and texts that overlap.

    A text of ``size`` pt is shown at ``size x 4/3 x scale`` CSS px, where the scale is
    :func:`shown_scale` at each of :data:`SHOWN_WIDTHS_PX`.  Two texts overlap when their boxes
    share more than 1 px in both directions; each problem is one line naming the texts.
    """
    boxes = text_boxes(fig)
    problems = []
    for width in SHOWN_WIDTHS_PX:
        scale = shown_scale(fig, width)
        for text, size, _ in boxes:
            px = size * 4 / 3 * scale
            if px < min_px - 1e-9:
                problems.append(f"{text!r} is shown at {px:.1f} px at {width} px, below {min_px:g} px")
    for i, (a, _, (ax0, ay0, ax1, ay1)) in enumerate(boxes):
        for b, _, (bx0, by0, bx1, by1) in boxes[i + 1 :]:
            if min(ax1, bx1) - max(ax0, bx0) > 1 and min(ay1, by1) - max(ay0, by0) > 1:
                problems.append(f"{a!r} overlaps {b!r}")
    return problems


def plain_log_ticks(axis: Axis, subs: tuple[float, ...] = (1.0, 2.0, 5.0)) -> None:
    """Label a log ``axis`` at ``subs`` of each decade (1, 2 and 5) in plain numbers (``20``, not ``2×10¹``)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    axis.set_major_locator(LogLocator(base=10, subs=subs))
    axis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:,.10g}"))
    axis.set_minor_formatter(NullFormatter())
