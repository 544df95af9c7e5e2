"""The bootstrap plan and the reset dry run name the clusters they are for, so that an approval binds them: a plan
hash covers the plan's steps only, and an HTTP API requester of a worker cluster's name may send a contract whose
``worker`` is any cluster of the worker's registry. Before, a bootstrap or a ``worker reset`` of another cluster
showed the approver the same steps, with the same hash, as one of the cluster the approver had in mind. Against the
lab's worker API server through two registry names (``worker`` and ``worker-viewer``: one server, so the objects,
and the dry run's text, are the same)."""

from __future__ import annotations

from temporalio.testing import ActivityEnvironment

from tenantflow.activities.workercluster.steps import plan, reset_plan
from tenantflow.models.enrollment_workflows import RESET_DRY_RUN, EnrollmentStep
from tenantflow.models.plan import Plan
from tests.enrollment.conftest import Lab


def test_the_bootstrap_plan_names_its_clusters(no_agent: Lab) -> None:
    plans = {
        worker: Plan(
            title="enroll",
            steps=ActivityEnvironment().run(plan, EnrollmentStep(contract=no_agent.contract(worker=worker))),
        )
        for worker in ("worker", "worker-viewer")
    }
    assert plans["worker"].plan_hash != plans["worker-viewer"].plan_hash
    for worker, made in plans.items():
        for step in made.steps:
            assert step.detail.get("cluster" if step.layer == "worker" else "hub") == (
                worker if step.layer == "worker" else "hub"
            ), step


def test_the_reset_dry_run_names_its_cluster(no_agent: Lab) -> None:
    dry_runs = {
        worker: next(
            s
            for s in ActivityEnvironment().run(reset_plan, EnrollmentStep(contract=no_agent.contract(worker=worker)))
            if s.kind == RESET_DRY_RUN
        )
        for worker in ("worker", "worker-viewer")
    }
    assert dry_runs["worker"].detail["dry_run"] == dry_runs["worker-viewer"].detail["dry_run"]
    assert (
        Plan(title="r", steps=[dry_runs["worker"]]).plan_hash
        != Plan(title="r", steps=[dry_runs["worker-viewer"]]).plan_hash
    )
    assert dry_runs["worker-viewer"].detail["cluster"] == "worker-viewer"
