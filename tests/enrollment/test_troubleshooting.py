"""Each condition that does not converge within its budget yields the runbook's troubleshooting finding,
and the run is rolled back without touching what existed before."""

from __future__ import annotations

import asyncio
import base64

from temporalio.testing import WorkflowEnvironment

from tenantflow.lab.controllers.hub import redeem
from tenantflow.lab.kubeapi.errors import ApiError
from tenantflow.lab.kubeapi.store import ObjectKey
from tenantflow.models.enrollment_workflows import ADOPTION_REFUSAL, INSTALLED_BY, preset_objects
from tenantflow.models.results import Finding
from tests.enrollment.conftest import Lab, World, enrollment_worker, failure, start_approved, world

BUDGET = 1.5


def failed_conditions(findings: list[Finding]) -> dict[str, Finding]:
    return {f.check.removeprefix("condition."): f for f in findings if f.check.startswith("condition.") and not f.ok}


async def enroll_and_fail(dev_env: WorkflowEnvironment, lab: Lab) -> dict[str, Finding]:
    async with enrollment_worker(dev_env) as (client, queue):
        handle = await start_approved(client, queue, lab.contract(), condition_budget_s=BUDGET)
        kind, status = await failure(handle)
    assert kind == "NotConverged"
    assert status.stage == "rolled-back"
    assert not lab.hub.list("trainy.ai", "bootstrapenrollments", "forecasting")
    assert not lab.hub.list("trainy.ai", "workerclusters", "forecasting")
    assert not lab.hub.list("", "secrets", "forecasting")
    assert not lab.worker.list("", "namespaces", label_selector=INSTALLED_BY)
    [components] = [f for f in status.findings if f.check == "worker.components"]
    assert "trainy-system: " in components.message and "trainy-byoc-system: " in components.message
    return failed_conditions(status.findings)


def untouched(before: World, lab: Lab) -> None:
    after = world(lab)
    for store, objects in before.items():
        assert {key: after[store].get(key) for key in objects} == objects, f"pre-existing {store} objects changed"


async def test_registered_false_when_no_agent_redeems(dev_env: WorkflowEnvironment, no_agent: Lab) -> None:
    before = world(no_agent)
    failed = await enroll_and_fail(dev_env, no_agent)
    assert set(failed) == {"Registered", "Connected"}
    assert "status.usedAt" in failed["Registered"].message and "empty" in failed["Registered"].message
    assert "get bootstrapenrollment" in failed["Registered"].fix
    assert world(no_agent) == before


async def test_connected_false_when_the_tunnel_never_comes_up(dev_env: WorkflowEnvironment, no_agent: Lab) -> None:
    """The redemption token bootstrap left is redeemed (as the agent would) but no heartbeat ever arrives."""
    before = world(no_agent)

    async def redeem_without_tunnel() -> None:
        while True:
            try:
                secret = no_agent.worker.get("", "secrets", "trainy-bootstrap", "trainy-system")
            except ApiError:
                await asyncio.sleep(0.05)
                continue
            redeem(no_agent.hub, base64.b64decode(secret["data"]["token"]).decode())
            return

    redeemer = asyncio.create_task(redeem_without_tunnel())
    failed = await enroll_and_fail(dev_env, no_agent)
    await redeemer
    assert set(failed) == {"Connected"}
    assert "NoHeartbeat" in failed["Connected"].message
    assert "logs deploy/trainy-worker-agent" in failed["Connected"].fix
    untouched(before, no_agent)


async def test_worker_configured_false_names_the_adoption_refusal(
    dev_env: WorkflowEnvironment, greenfield: Lab
) -> None:
    """A customer ClusterQueue named like the preset's: the agent refuses to adopt it; the run does not."""
    [queue] = [o for o in preset_objects("gke-dws", []) if o["kind"] == "ClusterQueue"]
    greenfield.worker.seed([queue])
    before = world(greenfield)
    failed = await enroll_and_fail(dev_env, greenfield)
    assert set(failed) == {"WorkerConfigured", "DispatchReady"}
    assert ADOPTION_REFUSAL in failed["WorkerConfigured"].message
    assert "ClusterQueue/cluster-queue" in failed["WorkerConfigured"].message
    assert "adoption review" in failed["WorkerConfigured"].fix
    untouched(before, greenfield)


async def test_dispatch_ready_false_while_cordoned(dev_env: WorkflowEnvironment, greenfield: Lab) -> None:
    """Someone cordons the WorkerCluster the moment it appears; greenfield never uncordons."""

    def cordon_on_arrival(event: str, key: ObjectKey, _obj: object) -> None:
        if event == "ADDED" and key.resource == "workerclusters":
            greenfield.hub.patch(
                "trainy.ai",
                "workerclusters",
                key.name,
                {"spec": {"cordoned": True}},
                "application/merge-patch+json",
                key.namespace,
            )

    greenfield.hub.subscribe(cordon_on_arrival)
    before = world(greenfield)
    failed = await enroll_and_fail(dev_env, greenfield)
    assert set(failed) == {"DispatchReady"}
    assert "Cordoned" in failed["DispatchReady"].message
    assert "not cordoned" in failed["DispatchReady"].fix and "generation" in failed["DispatchReady"].fix
    untouched(before, greenfield)
