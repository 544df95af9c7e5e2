"""Records tests run against the emulated cluster of the kube API tests (an admin and a restricted context)."""

from __future__ import annotations

from tests.kubeapi.conftest import cluster

__all__ = ["cluster"]
