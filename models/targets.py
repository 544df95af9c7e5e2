"""Explicit Kubernetes targets: a cluster named in the worker's cluster registry, never the current context.

A contract names a cluster (``context``); the worker alone knows which kubeconfig reaches it
(:mod:`activities.common.clusters`, ``TENANTFLOW_CLUSTERS_FILE``). ``kubeconfig`` is never loaded from a contract: the
contract loaders refuse it, and the worker refuses a target whose ``kubeconfig`` differs from its registry's. The
field stays so that runs recorded before the registry still decode on replay; unset, it is left out of a
serialized target.
"""

from __future__ import annotations

from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from tenantflow.models.base import Strict


class KubeTarget(Strict):
    """One cluster as the workflow addresses it."""

    context: str = Field(
        ...,
        min_length=1,
        max_length=253,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._@:/-]*$",
        description="the cluster's name in the worker's cluster registry (TENANTFLOW_CLUSTERS_FILE)",
    )
    kubeconfig: SkipJsonSchema[str | None] = Field(
        None,
        exclude_if=lambda path: path is None,
        description="not accepted in a contract: the worker's "
        "cluster registry says which kubeconfig reaches the cluster",
    )

    def describe(self) -> str:
        return self.context
