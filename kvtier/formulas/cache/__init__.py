"""The cache simulation of a trace: block ids, exact LRU stack distances, the LRU curve in memory and streamed,
spatial sampling, what the hits are worth, the report, and replays of policies and hierarchies.

One module per concern: :mod:`.trace` (the arrays), :mod:`.ids`, :mod:`.distances` (the Fenwick sweep),
:mod:`.curve`, :mod:`.stream` (:class:`~.stream.LruStream`), :mod:`.sampling` (SHARDS), :mod:`.regen`
(:class:`~.regen.RegenCosts`), :mod:`.report`, :mod:`.policies`, :mod:`.hierarchy`, :mod:`.replay`,
:mod:`.fleet` (compiled in :mod:`.fleet_loop`, its Python oracle :mod:`.fleet_oracle`) and :mod:`.admission`
(:mod:`.admission_loop`, :mod:`.admission_oracle`).
Pure: arrays in, numbers out, no file read and no assumption key.
"""
