"""The client reaches runs through the workflow classes' methods: each name it keys them by is the one on the wire."""

from __future__ import annotations

import pytest
from temporalio import workflow

from tenantflow.starter.run_kinds import ENROLLMENT_GATES, RUNS, YES_NO_GATES


@pytest.mark.parametrize("workflow_type", sorted(RUNS))
def test_each_run_method_belongs_to_the_workflow_type_it_is_looked_up_by(workflow_type: str) -> None:
    assert workflow._Definition.must_from_run_fn(RUNS[workflow_type]).name == workflow_type


@pytest.mark.parametrize("gate", sorted(YES_NO_GATES))
def test_each_gate_is_answered_by_the_update_of_its_own_name(gate: str) -> None:
    assert YES_NO_GATES[gate]._defn.name == gate


def test_the_gates_are_the_runbooks() -> None:
    assert list(ENROLLMENT_GATES) == ["submissions_paused", "approve_adoption", "uncordon", "resume_submissions"]
    assert set(YES_NO_GATES) == {*ENROLLMENT_GATES, "confirm_purge", "retry_rollback"}
    assert sorted(RUNS) == sorted(
        [
            "TenantOnboarding",
            "TenantChange",
            "TenantOffboarding",
            "WorkerEnrollment",
            "WorkerDecommission",
            "TenantLifecycle",
        ]
    )
