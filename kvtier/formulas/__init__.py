"""Formulas: the arithmetic of the report, vectorized over numpy arrays, in SI base units.

Fetch and regeneration time (:mod:`~kvtier.formulas.costs`), capacity
(:mod:`~kvtier.formulas.capacity`), the roofline (:mod:`~kvtier.formulas.roofline`), Monte
Carlo uncertainty (:mod:`~kvtier.formulas.uncertainty`), money
(:mod:`~kvtier.formulas.economics`), the tier-pricing model built on it
(:mod:`~kvtier.formulas.tiering`), the fits of timing models to measurements
(:mod:`~kvtier.formulas.fits`) and block reuse under LRU on a trace's arrays of ids and
lengths (:mod:`~kvtier.formulas.cache`; :mod:`kvtier.inputs.traces` reads the trace files).
These are the modules mutation testing targets.

May import: :mod:`kvtier.errors`, :mod:`kvtier.data`, :mod:`kvtier.units` and, lowest
first, the modules of this folder: costs, capacity, economics < roofline, uncertainty,
fits, tiering < reuse.  Never the inputs, the scenario, the report, the pipeline or the commands: a
formula takes numbers, not files or assumption sets.
"""
