"""Side effects, one module per layer; thin typed clients live beside them.

Every apply activity is an idempotent ensure named ``<layer>.<step>``: it reads,
compares, then creates or patches, and returns what it did as
:class:`models.results.EnsureResult` values. ``<layer>.undo`` removes only what a
run created and releases what it adopted.
"""
