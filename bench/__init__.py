"""Benchmarks of issue 7 (`tenantflow bench`): the five figures, measured against Temporal and the lab."""
