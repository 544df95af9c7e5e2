"""Layer ``workercluster``: the worker cluster's Kueue objects, invariants and reset."""
