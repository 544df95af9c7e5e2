"""Issue 13 acceptance: a namespace and a user made by hand between approval and apply reopen the approval gate
with a new plan hash saying so, and nothing of them is adopted silently (whole lab, real worker)."""

from __future__ import annotations

import subprocess

import httpx
from temporalio.testing import WorkflowEnvironment

from tenantflow.lab.endpoints import LabEndpoints
from tenantflow.models.onboarding import OnboardingResult
from tenantflow.models.runbook import APPLY
from tests.approvers import reviewer
from tests.integration.rollback_rig import tenant
from tests.integration.world import describe_diff, world_snapshot
from tests.labfixture import lab_worker
from tests.workflows.harness import wait_for_stage


def kubectl(lab: LabEndpoints, *args: str) -> None:
    argv = ["kubectl", "--kubeconfig", str(lab.kubeconfig), "--context", "tenant-cluster", *args]
    subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True)


def authentik(lab: LabEndpoints) -> httpx.Client:
    return httpx.Client(
        base_url=f"{lab.authentik_url}/api/v3",
        headers={"Authorization": f"Bearer {lab.authentik_token}"},
        verify=False,
        timeout=10,
    )


async def test_a_namespace_and_a_user_made_by_hand_after_approval_reopen_the_gate(
    dev_env: WorkflowEnvironment, lab: LabEndpoints
) -> None:
    contract = tenant(lab, "hx")
    username = contract.users[0].username
    before = world_snapshot(lab)
    async with lab_worker(dev_env.client, lab) as api:
        handle = await api.start_onboarding(contract)
        first = await api.wait_for_plan(handle.id)
        assert first.plan_hash
        kubectl(lab, "create", "namespace", contract.namespace)
        with authentik(lab) as ak:
            made = ak.post("/core/users/", json={"username": username, "name": "Made By Hand"})
            made.raise_for_status()
        try:
            await reviewer(api).approve(handle.id, first.plan_hash)
            again = await wait_for_stage(api, handle, "gate:approve_plan")
            while again.plan_hash == first.plan_hash:
                again = await wait_for_stage(api, handle, "gate:approve_plan")
            [gate] = again.gates
            assert "CHANGED since the last approval" in gate.description, gate.description
            assert f"Namespace {contract.namespace}" in gate.description, gate.description
            assert f"User {username}" in gate.description, gate.description
            assert not {s.name for s in again.steps} & {s.name for s in APPLY}, "nothing applied on a changed plan"
            await api.reject(handle.id, "made by hand after approval")
            result: OnboardingResult = await handle.result()
            assert result.status == "rejected"
            with authentik(lab) as ak:
                [user] = ak.get("/core/users/", params={"username": username}).json()["results"]
            assert user["name"] == "Made By Hand" and not user["groups"], "the hand-made user was not adopted"
        finally:
            kubectl(lab, "delete", "namespace", contract.namespace)
            with authentik(lab) as ak:
                ak.delete(f"/core/users/{made.json()['pk']}/").raise_for_status()
    after = world_snapshot(lab)
    assert before == after, describe_diff(before, after)
