"""Benchmarks (`tenantflow bench`): the five figures, measured against Temporal and the lab."""
