"""Fixtures of the identity layer tests; they live in :mod:`identity_harness` with its helpers."""

from identity_harness import identity_lab, slapd, with_parent

__all__ = ["identity_lab", "slapd", "with_parent"]
