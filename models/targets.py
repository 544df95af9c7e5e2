"""Explicit Kubernetes targets: a kubeconfig path and a context, never the current context."""

from __future__ import annotations

from pydantic import Field

from tenantflow.models.base import Strict


class KubeTarget(Strict):
    """One cluster as the workflow addresses it."""

    kubeconfig: str = Field(..., min_length=1, description="absolute path of the kubeconfig on the worker host")
    context: str = Field(
        ...,
        min_length=1,
        max_length=253,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._@:/-]*$",
        description="context name inside the kubeconfig",
    )

    def describe(self) -> str:
        return f"{self.context} ({self.kubeconfig})"
