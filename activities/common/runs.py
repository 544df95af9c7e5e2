"""Which workflow run an activity works for: the ids tenantflow marks what it creates with."""

from __future__ import annotations

from temporalio import activity

from tenantflow.activities.common.errors import fail


def tenant_run(slug: str) -> str:
    """The workflow id of the tenant's onboarding and change runs (``tenant/<slug>``)."""
    return f"tenant/{slug}"


def this_run() -> str:
    """The workflow id of the running activity; "" outside an activity (or for an activity outside a workflow)."""
    return (activity.info().workflow_id or "") if activity.in_activity() else ""


def this_workflow() -> str:
    """The workflow id of the running activity; refused when there is none, since it marks what the run creates."""
    workflow_id = this_run()
    if not workflow_id:
        raise fail(
            "Unsupported",
            "tenantflow marks what an activity creates with its workflow's id; run the activity from a workflow",
        )
    return workflow_id
