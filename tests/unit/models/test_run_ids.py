"""The tenant or worker cluster a run's workflow id names (what the HTTP API checks a token's roles against), the
inverse of the id makers; any other id names neither. A plan's id names the onboarding it previews."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tenantflow.models.run_ids import (
    decommission_id,
    enrollment_id,
    lifecycle_id,
    offboarding_id,
    onboarding_id,
    plan_id,
    planned_onboarding,
    tenant_of_run,
    worker_of_run,
)


@pytest.mark.parametrize("make", [onboarding_id, offboarding_id, lifecycle_id])
def test_a_tenant_run_names_its_tenant(make: Callable[[str], str]) -> None:
    workflow_id = make("tenant-foo")
    assert tenant_of_run(workflow_id) == "tenant-foo" and worker_of_run(workflow_id) is None


@pytest.mark.parametrize("make", [enrollment_id, decommission_id])
def test_a_worker_cluster_run_names_its_worker_cluster(make: Callable[[str, str], str]) -> None:
    workflow_id = make("forecasting", "gpu-1")
    assert worker_of_run(workflow_id) == ("forecasting", "gpu-1") and tenant_of_run(workflow_id) is None


@pytest.mark.parametrize(
    "workflow_id",
    ["tenant/", "tenant/tenant-a/x", "tenants/tenant-a", "tenant-a", "enroll/ns", "enroll/ns/w/x", "enroll//w", ""],
)
def test_any_other_id_names_neither(workflow_id: str) -> None:
    assert tenant_of_run(workflow_id) is None and worker_of_run(workflow_id) is None


def test_a_plan_names_the_onboarding_it_previews_and_no_tenant_or_worker() -> None:
    workflow_id = plan_id("tenant-foo", "1f2e3d")
    assert planned_onboarding(workflow_id) == onboarding_id("tenant-foo")
    assert tenant_of_run(workflow_id) is None and worker_of_run(workflow_id) is None


@pytest.mark.parametrize("workflow_id", ["plan/tenant-foo", "plan//x", "plan/tenant-foo/", "tenant/tenant-foo", ""])
def test_any_other_id_previews_nothing(workflow_id: str) -> None:
    assert planned_onboarding(workflow_id) is None
