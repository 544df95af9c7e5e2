"""The kit below every layer: errors, settings, activity registration, polling, fan-out, HTTP retries, the
cluster registry, the Kubernetes client and ensure plumbing, the rendered tenant objects and the konduktor CLI.

The kit imports no layer (an import-linter contract in pyproject.toml).
"""
