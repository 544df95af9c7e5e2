"""Side effects, one subpackage per runbook layer over a shared kit (:mod:`activities.common`).

Every apply activity is an idempotent ensure named ``<layer>.<step>``: it reads,
compares, then creates or patches, and returns what it did as
:class:`models.results.EnsureResult` values. ``<layer>.undo`` removes only what a
run created and releases what it adopted. A layer's activities live in ``<layer>/steps.py``, its clients and
helpers beside them; the kit imports no layer.
"""
