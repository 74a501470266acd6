"""Pipeline: the book build (:mod:`~kvtier.pipeline.build`: plan, execute the notebooks,
write the tables of record, build the HTML), the output directory it swaps in whole
(:mod:`~kvtier.pipeline.outdir`) and the kernels it runs notebooks in
(:mod:`~kvtier.pipeline.kernels`).

Named ``pipeline``, not ``build``: ``.gitignore`` ignores ``build/``.

May import everything below it (the report and all its imports) and, lowest first, the
modules of this folder: outdir, kernels < build.  Never the commands.
"""
