"""Report: what the book and ``kvtier diff`` present.

The house style of figures (:mod:`~kvtier.report.figures`), the table machinery
(:mod:`~kvtier.report.tables`) and the words that describe a scenario
(:mod:`~kvtier.report.words`); one module per page under :mod:`kvtier.report.pages`, whose
``__init__`` is the page registry (:data:`~kvtier.report.pages.PAGES`); the helpers a page
notebook calls (:mod:`~kvtier.report.notebook`, :mod:`~kvtier.report.preview`); and the
comparison of two runs' tables of record (:mod:`~kvtier.report.diff`).

May import everything below it (:mod:`kvtier.errors`, :mod:`kvtier.data`,
:mod:`kvtier.units`, :mod:`kvtier.inputs`, :mod:`kvtier.formulas`,
:mod:`kvtier.scenario`) and, lowest first, the modules of this folder: figures, tables, words <
the page registry < the page modules < notebook, preview, diff.  The registry names no
page (it lists its folder), so a page may ask it for the others; no page imports another.
Never the pipeline or the commands.
"""
