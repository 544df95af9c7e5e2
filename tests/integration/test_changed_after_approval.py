"""Issue 13 acceptance: a namespace made by hand between approval and apply reopens the approval gate with a new
plan hash saying so; a user made by hand is refused at the re-plan's preflight (issue 26); nothing of them is
adopted silently (whole lab, real worker)."""

from __future__ import annotations

import subprocess

import httpx
import pytest
from temporalio.client import WorkflowFailureError
from temporalio.testing import WorkflowEnvironment

from tenantflow.lab.endpoints import LabEndpoints
from tenantflow.models.runbook import APPLY
from tests.approvers import reviewer
from tests.integration.rollback_rig import tenant
from tests.integration.world import describe_diff, world_snapshot
from tests.labfixture import authentik_api, lab_worker
from tests.workflows.harness import wait_for_stage


def kubectl(lab: LabEndpoints, *args: str) -> None:
    argv = ["kubectl", "--kubeconfig", str(lab.kubeconfig), "--context", "tenant-cluster", *args]
    subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True)


async def test_a_namespace_made_by_hand_after_approval_reopens_the_gate_and_a_user_is_refused(
    dev_env: WorkflowEnvironment, lab: LabEndpoints
) -> None:
    """The namespace reopens ``approve_plan`` naming it (adopting it needs an approval that names it); a username
    made by hand (no email of the contract, no tenantflow marker) is refused by the re-plan's preflight with its
    fix (issue 26, item 2: a refusal never becomes an approvable line): the run fails, nothing is applied."""
    contract = tenant(lab, "hx")
    username = contract.users[0].username
    before = world_snapshot(lab)
    made: httpx.Response | None = None
    async with lab_worker(dev_env.client, lab) as api:
        handle = await api.start_onboarding(contract)
        first = await api.wait_for_plan(handle.id)
        assert first.plan_hash
        kubectl(lab, "create", "namespace", contract.namespace)
        try:
            await reviewer(api).approve(handle.id, first.plan_hash)
            again = await wait_for_stage(api, handle, "gate:approve_plan")
            while again.plan_hash == first.plan_hash:
                again = await wait_for_stage(api, handle, "gate:approve_plan")
            [gate] = again.gates
            assert "CHANGED since the last approval" in gate.description, gate.description
            assert f"Namespace {contract.namespace}" in gate.description, gate.description
            assert not {s.name for s in again.steps} & {s.name for s in APPLY}, "nothing applied on a changed plan"
            with authentik_api(lab) as ak:
                made = ak.post("/core/users/", json={"username": username, "name": "Made By Hand"})
                made.raise_for_status()
            await reviewer(api).approve(handle.id, again.plan_hash or "")
            with pytest.raises(WorkflowFailureError) as failed:
                await handle.result()
            refusal = str(failed.value.cause)
            assert "preflight failed, nothing was written" in refusal, refusal
            assert f"username {username} is already an Authentik account" in refusal, refusal
            assert f"adopt_existing: true for {username}" in refusal, refusal
            status = await api.status(handle.id)
            assert not {s.name for s in status.steps} & {s.name for s in APPLY}, "nothing applied"
            with authentik_api(lab) as ak:
                [user] = ak.get("/core/users/", params={"username": username}).json()["results"]
            assert user["name"] == "Made By Hand" and not user["groups"], "the hand-made user was not adopted"
        finally:
            kubectl(lab, "delete", "namespace", contract.namespace)
            if made is not None:
                with authentik_api(lab) as ak:
                    ak.delete(f"/core/users/{made.json()['pk']}/").raise_for_status()
    after = world_snapshot(lab)
    assert before == after, describe_diff(before, after)
