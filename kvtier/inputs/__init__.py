"""Inputs: everything the report reads, checked and given its provenance.

Readers of bounded files (:mod:`~kvtier.inputs.readers`), values with their provenance
(:mod:`~kvtier.inputs.provenance`), assumption sets and their schema
(:mod:`~kvtier.inputs.assumptions`), model configs (:mod:`~kvtier.inputs.models`),
hardware presets (:mod:`~kvtier.inputs.hardware`), the source chapter's printed numbers
(:mod:`~kvtier.inputs.chapter`), the committed H200 measurements, fitted with
:mod:`kvtier.formulas.fits` (:mod:`~kvtier.inputs.measurements`), serving traces read and validated
into the arrays :mod:`kvtier.formulas.cache` measures (:mod:`~kvtier.inputs.traces`) and the probe
that measures a machine (:mod:`~kvtier.inputs.probe`).

May import: :mod:`kvtier.errors`, :mod:`kvtier.data`, :mod:`kvtier.units`,
:mod:`kvtier.formulas` (the measurements are fitted with the package's own fits and roofline, a
trace is measured with its reuse) and, lowest first, the modules of this folder: readers <
provenance < assumptions < models < hardware, chapter, measurements, traces < probe.  Never the
scenario, the report, the pipeline or the commands.
"""
