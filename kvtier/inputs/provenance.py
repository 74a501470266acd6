"""A value with its provenance: the one record type of the package.

Every value that a reader should be able to trace is a :class:`Record`: an input of an
assumption set (``bandwidth.mid``), a figure of a hardware preset
(``h100-sxm.peak_flops``, from ``kvtier/data/hardware.yaml``) and a number the source
chapter printed (``chapter.fetch.mid``).  The kinds share the value (in SI base units),
its quantity kind, the text it was written or printed as, a provenance class, a basis
and a source; the fields only some of them need are optional.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvtier.units import KINDS, format_quantity

PROVENANCE_CLASSES = ("measured", "published-spec", "assumed", "implied", "derived")
"""Where an input comes from: measured, a published specification, a modelling choice, forced
by the source's numbers without being stated, or computed from other values."""


@dataclass(frozen=True)
class Record:
    """One value with its provenance.

    Attributes
    ----------
    key : str
        The value's name: a key of an assumption set (``"bandwidth.mid"``), a hardware
        preset and its field (``"h100-sxm.peak_flops"``), or a quotation of the source
        chapter (``"chapter.fetch.mid"``).
    value : float or str or None
        In the SI base unit of ``kind`` (bytes, s, FLOP/s, B/s, ...), or a string for
        ``choice``/``text`` keys; None when there is none (see :attr:`absent`).
    kind : str
        Quantity kind of :mod:`kvtier.units`, or ``choice``/``text``.
    text : str
        The value as written by whoever supplied it (``"64 GB/s"``), or as the source
        chapter printed it (``"82 µs"``); ``"null"`` when there is no value.
    provenance : str
        One of :data:`PROVENANCE_CLASSES`; empty for a quotation, which is no input.
    basis : str
        Why this value, in words (may be empty for a plain published figure).
    source : str
        Where it comes from: document and place in it, datasheet, file, command line.
    figure : str
        For a published figure, which one: dense or sparse, raw or net, per direction or
        aggregate.  Empty otherwise.
    raw_or_net : str
        For a link bandwidth, ``"raw"`` (signalling rate) or ``"net"`` (of encoding and
        framing).  Empty otherwise.
    half_width : float or None
        For a printed number, half the step of its last printed digit (its rounding), in
        the unit of :attr:`value`.  None otherwise.
    absent : str
        What :attr:`display` shows when :attr:`value` is None: ``"from model config"`` for
        an optional key left to the model, ``"not published"`` for a figure no one publishes.
    """

    key: str
    value: float | str | None
    kind: str
    text: str
    provenance: str = ""
    basis: str = ""
    source: str = ""
    figure: str = ""
    raw_or_net: str = ""
    half_width: float | None = None
    absent: str = "not given"

    @property
    def unit(self) -> str:
        """The SI base unit that :attr:`value` is expressed in."""
        kind = KINDS.get(self.kind)
        return kind.si_unit if kind is not None else ""

    @property
    def display(self) -> str:
        """The value formatted for a reader (decimal bandwidths, binary sizes)."""
        if self.value is None:
            return self.absent
        if isinstance(self.value, str):
            return self.value
        return format_quantity(self.value, self.kind)

    def label(self) -> str:
        """Short label ``key = value [provenance]`` for figure footers and tables."""
        return f"{self.key} = {self.display} [{self.provenance}]"
