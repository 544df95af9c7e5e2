"""``tenantflow drift`` against the lab (issue 15): after onboarding, a quota edited by hand, a Slurm association
deleted and a user added to the tenant's Authentik group are named, exactly, with exit 3; a re-onboard through the
plan gate repairs the first two, once the third is gone. Onboarding plans never delete (removing users through the
plan gate is issue 17): while the hand-added member is there, the re-onboard's validation fails (the group's members
must be the contract's users) and its rollback puts the hand edits back, so the operator removes the member the
drift check named, by hand, re-onboards, and drift exits 0.
The nightly schedule is created idempotently, names the records' cluster as the worker's registry does (no
kubeconfig path), is listed by ``temporal schedule list``, and a triggered run reports the lab's tenants."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import pytest
from temporalio.client import ScheduleActionStartWorkflow, WorkflowFailureError, WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from tenantflow.activities.common import manifests
from tenantflow.activities.common.authentik_client import AuthentikClient
from tenantflow.activities.common.kubeobjects import KubeObjects
from tenantflow.activities.common.slurm_cli import SlurmCtl
from tenantflow.lab.endpoints import LabEndpoints
from tenantflow.models.drift import DRIFT_SCHEDULE_ID, FleetDriftInput, FleetDriftReport
from tenantflow.models.targets import KubeTarget
from tenantflow.models.tenant import TenantContract
from tenantflow.starter.client import TenantflowClient
from tests.integration.runs import onboard
from tests.integration.test_offboarding_e2e import small_tenant
from tests.labfixture import journal_writes, lab_worker, reset_journals
from tests.starter.conftest import tenantflow
from tests.starter.test_temporal_cli import temporal

CONTEXT = ("--context", "tenant-cluster")


def drift_tenant(lab: LabEndpoints) -> TenantContract:
    base = small_tenant(lab)
    users = [
        u.model_copy(update={"username": name, "email": f"{name}@tenant-drift.example"})
        for u, name in zip(base.users, ("nora", "omar"), strict=True)
    ]
    return base.model_copy(
        update={
            "slug": "tenant-drift",
            "display_name": "Tenant Drift",
            "users": users,
            "slurm": base.slurm.model_copy(update={"team_account": "ml-team-drift"}),
        }
    )


async def drift(api: TenantflowClient, lab: LabEndpoints, *args: str) -> tuple[int, Any]:
    code, out, err = await tenantflow(api, "drift", *args, *CONTEXT, "--kubeconfig", str(lab.kubeconfig), "-o", "json")
    assert code in (0, 3), err
    return code, json.loads(out)


def named(report: dict[str, Any], slug: str) -> set[tuple[str, str, str, str]]:
    [tenant] = [t for t in report["tenants"] if t["slug"] == slug]
    assert not tenant["error"], tenant["error"]
    return {(i["layer"], i["kind"], i["name"], i["drift"]) for i in tenant["items"]}


def edit_by_hand(contract: TenantContract, intruder: str) -> str:
    """Halve the GPU quota, delete omar's Slurm association, set the tenant account's Fairshare to 7, add
    ``intruder`` to the group; the quota's name."""
    quota = manifests.resource_quota(contract)["metadata"]["name"]
    KubeObjects(contract.cluster).patch(
        "ResourceQuota", quota, contract.namespace, {"spec": {"hard": {f"requests.{manifests.GPU_RESOURCE}": "8"}}}
    )
    SlurmCtl.connect(contract.cluster).run(
        ["sacctmgr", "-i", "delete", "user", "name=omar", f"account={contract.user_account}"]
    )
    SlurmCtl.connect(contract.cluster).run(
        ["sacctmgr", "-i", "modify", "account", "where", f"name={contract.slug}", "set", "fairshare=7"]
    )
    with AuthentikClient.from_settings() as ak:
        user = ak.users.create({"username": intruder, "name": "Added By Hand", "email": f"{intruder}@example.org"})
        group = ak.groups.named(contract.slug)
        assert group is not None
        ak.add_user(group.pk, user.pk)
    return quota


def remove_by_hand(contract: TenantContract, intruder: str) -> None:
    with AuthentikClient.from_settings() as ak:
        group, user = ak.groups.named(contract.slug), ak.users.named(intruder)
        assert group is not None and user is not None
        ak.remove_user(group.pk, user.pk)


async def test_drift_names_the_hand_edits_a_reonboard_repairs_them_and_the_schedule_reports_the_tenants(
    dev_env: WorkflowEnvironment, lab: LabEndpoints
) -> None:
    contract = drift_tenant(lab)
    intruder = f"mallory{uuid.uuid4().hex[:4]}"
    async with lab_worker(dev_env.client, lab) as api:
        onboarded = await onboard(api, contract)
        assert onboarded.status == "completed", onboarded.message
        reset_journals(lab)
        code, report = await drift(api, lab, contract.slug)
        assert (code, named(report, contract.slug)) == (0, set()), report
        assert set(journal_writes(lab).values()) == {0}, "the drift check only reads"

        quota = await asyncio.to_thread(edit_by_hand, contract, intruder)
        code, report = await drift(api, lab, contract.slug)
        assert code == 3
        assert named(report, contract.slug) == {
            ("kube", "ResourceQuota", quota, "changed"),
            ("slurm", "user", "omar", "missing"),
            ("slurm", "account", contract.slug, "changed"),
            ("identity", "GroupMember", intruder, "extra"),
        }
        [changed] = [i for t in report["tenants"] for i in t["items"] if i["kind"] == "ResourceQuota"]
        assert f"requests.{manifests.GPU_RESOURCE}: 8 (want 16)" in changed["detail"]
        [account] = [i for t in report["tenants"] for i in t["items"] if i["kind"] == "account"]
        assert account["detail"] == f"Fairshare: 7 (want {contract.slurm.fairshare})", account
        text_code, text, _ = await tenantflow(
            api, "drift", contract.slug, *CONTEXT, "--kubeconfig", str(lab.kubeconfig)
        )
        assert text_code == 3 and intruder in text and "omar" in text
        assert max(len(line) for line in text.splitlines()) <= 80, text

        with pytest.raises(WorkflowFailureError) as refused:
            await onboard(api, contract)
        assert "identity.group_members" in str(refused.value.cause), refused.value.cause
        code, report = await drift(api, lab, contract.slug)
        assert (code, len(named(report, contract.slug))) == (3, 4), "the rollback put the hand edits back"

        await asyncio.to_thread(remove_by_hand, contract, intruder)
        repaired = await onboard(api, contract)
        assert repaired.status == "completed", repaired.message
        code, report = await drift(api, lab, "--all")
        assert code == 0 and contract.slug in {t["slug"] for t in report["tenants"]}, report
        await scheduled_check_reports(api, lab, {t["slug"] for t in report["tenants"]})


async def scheduled_check_reports(api: TenantflowClient, lab: LabEndpoints, tenants: set[str]) -> None:
    """``drift --schedule`` twice (created, then updated), listed by ``temporal schedule list``; a triggered run
    reports ``tenants``, every one checked."""
    args = ("drift", "--schedule", *CONTEXT, "--kubeconfig", str(lab.kubeconfig), "-o", "json")
    first, again = [await tenantflow(api, *args) for _ in range(2)]
    assert (first[0], again[0]) == (0, 0), (first, again)
    assert (json.loads(first[1])["schedule"], json.loads(again[1])["schedule"]) == ("created", "updated")
    handle = api.client.get_schedule_handle(DRIFT_SCHEDULE_ID)
    try:
        action = (await handle.describe()).schedule.action
        assert isinstance(action, ScheduleActionStartWorkflow)
        [params] = await api.client.data_converter.decode(action.args, [FleetDriftInput])
        assert params.records == KubeTarget(context="tenant-cluster"), "a registered cluster, no kubeconfig path"
        listed = await temporal(api, "schedule", "list")
        assert DRIFT_SCHEDULE_ID in listed, listed
        reset_journals(lab)
        await handle.trigger()
        run = await triggered_run(api)
        report: FleetDriftReport = await run.result()
        assert set(journal_writes(lab).values()) == {0}, "the scheduled drift check only reads"
        assert {t.slug for t in report.tenants} == tenants and not report.failed, report
    finally:
        await handle.delete()


async def triggered_run(api: TenantflowClient) -> WorkflowHandle[Any, FleetDriftReport]:
    handle = api.client.get_schedule_handle(DRIFT_SCHEDULE_ID)
    deadline = asyncio.get_running_loop().time() + 30
    while asyncio.get_running_loop().time() < deadline:
        actions = (await handle.describe()).info.recent_actions
        if actions:
            started = actions[-1].action
            return api.client.get_workflow_handle(
                started.workflow_id, run_id=started.first_execution_run_id, result_type=FleetDriftReport
            )
        await asyncio.sleep(0.2)
    raise AssertionError("the triggered run never started")
