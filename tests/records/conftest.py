"""Records tests run against the emulated cluster of the kube API tests (an admin and a restricted context) and the
enrollment lab (a Hub and a greenfield worker cluster)."""

from __future__ import annotations

from tests.enrollment.conftest import greenfield
from tests.lab.kubeapi.conftest import cluster

__all__ = ["cluster", "greenfield"]
