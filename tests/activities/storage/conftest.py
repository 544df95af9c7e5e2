"""Fixtures of the storage layer tests; they live in :mod:`storage_harness` with its helpers."""

from storage_harness import storage_lab, weka_total_bytes

__all__ = ["storage_lab", "weka_total_bytes"]
