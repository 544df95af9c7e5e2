"""Which workflow run an activity works for: the ids tenantflow marks what it creates with."""

from __future__ import annotations

from temporalio import activity

from tenantflow.activities.common.errors import fail
from tenantflow.models.preview import PLAN_WORKFLOW
from tenantflow.models.run_ids import planned_onboarding


def this_run() -> str:
    """The workflow id of the running activity; "" outside an activity (or for an activity outside a workflow). A
    read-only ``TenantPlan`` run reads as the onboarding it previews, so its ownership checks (objects this run
    made) see what that onboarding's would."""
    if not activity.in_activity():
        return ""
    info = activity.info()
    workflow_id = info.workflow_id or ""
    if info.workflow_type == PLAN_WORKFLOW:
        return planned_onboarding(workflow_id) or workflow_id
    return workflow_id


def this_workflow() -> str:
    """The workflow id of the running activity; refused when there is none, since it marks what the run creates."""
    workflow_id = this_run()
    if not workflow_id:
        raise fail(
            "Unsupported",
            "tenantflow marks what an activity creates with its workflow's id; run the activity from a workflow",
        )
    return workflow_id
