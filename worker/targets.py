"""What a token's grants cover: the tenant, worker cluster or run a request acts on, and whether a role over it is
granted. The HTTP API (:mod:`tenantflow.starter.api_auth`) checks its routes with these, and the codec server
(:mod:`tenantflow.worker.codec`) the workflows its payloads are sealed for.

A grant's pattern (fnmatch-style, case-sensitive, :class:`~tenantflow.worker.tokens.Grant`) is matched against
the target's name: a tenant by its slug; a worker cluster as ``workerclusters/<namespace>/<worker>``; a run of a
tenant (``tenant/<slug>``, ``offboard/<slug>``, ``lifecycle/<slug>``) or of a worker cluster (``enroll/...``,
``decommission/...``) is that target's; any other run, and anything not known to be of a target, is covered only
by the pattern ``*``.
"""

from __future__ import annotations

from dataclasses import dataclass

from tenantflow.models.run_ids import tenant_of_run, worker_of_run
from tenantflow.worker.tokens import Grant, Role

EVERY_TARGET = "*"


@dataclass(frozen=True)
class Target:
    """What a request acts on: its kind (``tenant``, ``worker cluster``, ``run``) and the name patterns match."""

    kind: str
    name: str

    def covered_by(self, grant: Grant) -> bool:
        return grant.pattern == EVERY_TARGET if self.kind == "run" else grant.covers(self.name)

    def __str__(self) -> str:
        return f"{self.kind} {self.name}"


def tenant(slug: str) -> Target:
    return Target("tenant", slug)


def worker_cluster(namespace: str, worker: str) -> Target:
    return Target("worker cluster", f"workerclusters/{namespace}/{worker}")


def target_of_run(workflow_id: str) -> Target:
    """The tenant or worker cluster a run's workflow id names, else the run itself (covered only by ``*``)."""
    slug = tenant_of_run(workflow_id)
    if slug is not None:
        return tenant(slug)
    worker = worker_of_run(workflow_id)
    return worker_cluster(*worker) if worker is not None else Target("run", workflow_id)


def allowed(grants: tuple[Grant, ...], role: Role, target: Target | None) -> bool:
    """Whether ``grants`` give ``role`` over ``target`` (None: over any target at all)."""
    return any(grant.includes(role) and (target is None or target.covered_by(grant)) for grant in grants)
