"""Fixtures of the identity layer tests; they live in :mod:`identity_harness` with its helpers."""

from identity_harness import authentik_version, identity_lab, slapd, with_parent

__all__ = ["authentik_version", "identity_lab", "slapd", "with_parent"]
