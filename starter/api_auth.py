"""Who may do what in the HTTP API: every route needs a role of the token file (:class:`~worker.tokens.Role`) over
the target it acts on, and a token without it is refused (403) with the role, the target and the fix.

- ``viewer`` reads: a run's status and result, the run list, a tenant's term, handover sheet and drift (the worker
  reads them), the tenants recorded in a cluster (only those it may view are listed). Every other role includes it.
- ``requester`` starts and stops: onboard, change, renew, offboard, enroll, decommission, cancel a run (but a
  tenant's lifecycle, ``lifecycle/<slug>``: cancelling it would leave the tenant without an end, so admin); and
  plans a contract (``POST /plans``): a plan writes nothing, but it is the onboarding's own preflight and plan run
  by the worker against every service with its credentials, and it tells what the world holds under the names the
  contract chooses (accounts, groups, quotas), so only who may start the tenant's onboarding may preview it.
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

``GET /runs`` lists only the runs the token may view. ``GET /openapi.json``, ``GET /schemas`` and the validation of
a contract (``POST /contracts/tenant``, ``/contracts/workercluster``) need a token, no role: they read nothing of
any tenant or worker cluster, only the body sent and the code's own models.
"""

from __future__ import annotations

from aiohttp import web

from tenantflow.models.api import RunPath, TenantPath, WorkerPath
from tenantflow.starter.problems import ApiProblem
from tenantflow.worker.bearer import GRANTS_KEY, USER_KEY
from tenantflow.worker.targets import EVERY_TARGET, Target, allowed, target_of_run, tenant, worker_cluster
from tenantflow.worker.tokens import Role


def of_tenant_path(path: TenantPath) -> Target:
    return tenant(path.slug)


def of_worker_path(path: WorkerPath) -> Target:
    return worker_cluster(path.namespace, path.worker)


def of_run_path(path: RunPath) -> Target:
    return target_of_run(path.id)


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
    needed = f"the {role} role" if role is Role.admin else f"the {role} role (or admin)"
    raise ApiProblem(
        403,
        f"{request.method} {request.path} needs {needed} for {where}; {user}'s token grants "
        f"{' '.join(map(str, grants))}: add {role}:{pattern} (or a pattern matching it) to {user}'s line of the "
        "token file",
    )
