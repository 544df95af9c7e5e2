"""Who may do what in the HTTP API: every route needs a role of the token file (:class:`~worker.tokens.Role`) over
the target it acts on, and a token without it is refused (403) with the role, the target and the fix.

- ``viewer`` reads: a run's status and result, the run list, a tenant's term. Every other role includes it.
- ``requester`` starts and stops: onboard, change, renew, offboard, enroll, decommission, cancel a run.
- ``approver`` answers gates: approve or reject a plan, confirm a purge, retry a rollback, every yes/no gate.
- ``admin`` may do all of it.

A grant's pattern (fnmatch-style, case-sensitive) is matched against the target's name:

- a **tenant** by its slug (``requester:tenant-a*``); a run of a tenant (``tenant/<slug>``, ``offboard/<slug>``,
  ``lifecycle/<slug>``) is that tenant's, so renewing ``tenant-a`` needs requester and approving its renewal
  (at ``lifecycle/tenant-a``) approver, both over ``tenant-a``;
- a **worker cluster** as ``workerclusters/<namespace>/<worker>``, the path of its routes, and so are its
  enrollment and decommission runs: worker clusters take the same roles as tenants, scoped by their own patterns
  (``requester:workerclusters/org-a/*``). A pattern of tenants (``tenant-*``) does not match them, and one of
  worker clusters no tenant; ``*`` matches every tenant and worker cluster alike;
- a run whose id is of no tenant or worker cluster is covered only by the pattern ``*``.

``GET /runs`` lists only the runs the token may view. ``GET /openapi.json`` needs a token, no role.
"""

from __future__ import annotations

from dataclasses import dataclass

from aiohttp import web

from tenantflow.models.api import RunPath, TenantPath, WorkerPath
from tenantflow.models.run_ids import tenant_of_run, worker_of_run
from tenantflow.starter.problems import ApiProblem
from tenantflow.worker.tokens import GRANTS_KEY, USER_KEY, Grant, Role

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


def of_tenant_path(path: TenantPath) -> Target:
    return tenant(path.slug)


def of_worker_path(path: WorkerPath) -> Target:
    return worker_cluster(path.namespace, path.worker)


def of_run_path(path: RunPath) -> Target:
    return target_of_run(path.id)


def allowed(grants: tuple[Grant, ...], role: Role, target: Target | None) -> bool:
    """Whether ``grants`` give ``role`` over ``target`` (None: over any target at all)."""
    return any(grant.includes(role) and (target is None or target.covered_by(grant)) for grant in grants)


def may_view(request: web.Request, target: Target) -> bool:
    return allowed(request[GRANTS_KEY], Role.viewer, target)


def authorize(request: web.Request, role: Role, target: Target | None = None) -> None:
    """Nothing when the request's token has ``role`` over ``target`` (None: over any target, the check before the
    body names one); else 403 naming the role, the target and the fix."""
    grants = request[GRANTS_KEY]
    if allowed(grants, role, target):
        return
    user = request[USER_KEY]
    where = f"{target}" if target is not None else "any tenant or worker cluster"
    pattern = EVERY_TARGET if target is None or target.kind == "run" else target.name
    raise ApiProblem(
        403,
        f"{request.method} {request.path} needs the {role} role (or admin) for {where}; {user}'s token grants "
        f"{' '.join(map(str, grants))}: add {role}:{pattern} (or a pattern matching it) to {user}'s line of the "
        "token file",
    )
