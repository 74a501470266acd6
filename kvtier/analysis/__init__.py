"""Analysis: a trace analysed once per build, whatever page or command asks.

May import the scenario, the inputs and the formulas; the report and the commands import it.
:mod:`~kvtier.analysis.store` keeps each result once per key, in memory and in the build's
directory that its notebooks' kernels share.
"""
