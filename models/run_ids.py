"""The workflow id of every kind of run, one function each: what the CLI, the API and the workflows address runs by.

One run of a kind per target at a time: a start under an id that is running is refused. An onboarding and a
change of the same tenant share ``tenant/<slug>``; its offboarding is ``offboard/<slug>``. A read-only plan
(``tenantflow plan``) is ``plan/<slug>/<nonce>``, one per invocation: plans never exclude each other.
"""

from __future__ import annotations


def onboarding_id(slug: str) -> str:
    """The workflow id of a tenant's onboarding, and of every later change of it."""
    return f"tenant/{slug}"


def enrollment_id(namespace: str, workercluster: str) -> str:
    """The workflow id of the enrollment of the worker cluster ``workercluster`` of the Hub namespace."""
    return f"enroll/{namespace}/{workercluster}"


def offboarding_id(slug: str) -> str:
    """The workflow id of a tenant's offboarding."""
    return f"offboard/{slug}"


def decommission_id(namespace: str, workercluster: str) -> str:
    """The workflow id of the decommission of the worker cluster ``workercluster`` of the Hub namespace."""
    return f"decommission/{namespace}/{workercluster}"


def hold_id(slug: str) -> str:
    """The workflow id of a tenant's hold (``TenantHold``): the child its running onboarding, change or offboarding
    starts first, so a second of them finds the id taken (``workflows/tenant_hold.py``)."""
    return f"hold/{slug}"


def lifecycle_id(slug: str) -> str:
    """The workflow id of a tenant's lifecycle: one per tenant."""
    return f"lifecycle/{slug}"


def plan_id(slug: str, nonce: str) -> str:
    """The workflow id of one read-only plan of a tenant's contract (``TenantPlan``)."""
    return f"plan/{slug}/{nonce}"


def drift_check_id(nonce: str) -> str:
    """The workflow id of one on-demand drift check (``tenantflow drift``, ``GET /tenants/{slug}/drift``)."""
    return f"drift/{nonce}"


def records_read_id(nonce: str) -> str:
    """The workflow id of one read of records (``TenantRecords``: ``tenantflow tenants``, ``handover``, ``apply``,
    ``offboard``; ``WorkerClusterRecords``: ``decommission``)."""
    return f"records/{nonce}"


def planned_onboarding(workflow_id: str) -> str | None:
    """The onboarding a plan run of :func:`plan_id` previews (its reads see the world as that run would); None for
    any other id."""
    parts = workflow_id.split("/")
    if len(parts) == 3 and all(parts) and workflow_id == plan_id(parts[1], parts[2]):
        return onboarding_id(parts[1])
    return None


def tenant_of_run(workflow_id: str) -> str | None:
    """The tenant slug of a run of one of the tenant's kinds (onboarding or change, offboarding, lifecycle); None
    for any other id."""
    _, _, slug = workflow_id.partition("/")
    if slug and "/" not in slug and workflow_id in (onboarding_id(slug), offboarding_id(slug), lifecycle_id(slug)):
        return slug
    return None


def worker_of_run(workflow_id: str) -> tuple[str, str] | None:
    """The (Hub namespace, worker cluster) of an enrollment or decommission run; None for any other id."""
    parts = workflow_id.split("/")
    if len(parts) != 3 or not all(parts):
        return None
    _, namespace, worker = parts
    if workflow_id in (enrollment_id(namespace, worker), decommission_id(namespace, worker)):
        return namespace, worker
    return None
