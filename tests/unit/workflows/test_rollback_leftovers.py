"""What a failed undo reports: the innermost error of an activity failure, and each object left, described."""

from __future__ import annotations

from temporalio.exceptions import ActivityError, ApplicationError, RetryState

from tenantflow.models.rollback import Leftover
from tenantflow.workflows.saga import root_message


def test_root_message_is_the_activitys_own_error_with_its_type() -> None:
    cause = ApplicationError("slurmdbd unreachable", type="Unavailable")
    failure = ActivityError(
        "Activity task failed",
        scheduled_event_id=1,
        started_event_id=2,
        identity="w",
        activity_type="slurm.undo",
        activity_id="9",
        retry_state=RetryState.MAXIMUM_ATTEMPTS_REACHED,
    )
    failure.__cause__ = cause
    assert root_message(failure) == "Unavailable: slurmdbd unreachable"


def test_a_leftover_says_where_it_is_and_why() -> None:
    left = Leftover(layer="kube", kind="Namespace", name="tenant-a", step="kube.namespace", why="forbidden")
    assert left.describe() == "kube Namespace tenant-a (kube.namespace: forbidden)"
    inside = left.model_copy(update={"kind": "Role", "namespace": "tenant-a", "name": "admins"})
    assert inside.describe() == "kube Role tenant-a/admins (kube.namespace: forbidden)"
