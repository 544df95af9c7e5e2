"""Storage never harms what it did not make (issue 13, storage layer): adoption is refused for foreign objects,
and an undo touches only what it can prove this run created, reporting the rest as left alone."""

from __future__ import annotations

import dataclasses

import pytest
from storage_harness import StorageLab, identity_facts, run_activity
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from tenantflow.activities.storage import steps as storage
from tenantflow.models.onboarding import StepInput, StepResult, UndoInput
from tenantflow.models.results import EnsureResult, Kept, Outcome
from tenantflow.models.tenant import StorageIsolation, TenantContract

RUN = "tenant/tenant-foo"


def planned(result: EnsureResult) -> EnsureResult:
    """How the saga records a planned creation the step never reported: created, nothing recorded."""
    return EnsureResult(
        layer=result.layer, kind=result.kind, name=result.name, namespace=result.namespace, outcome=Outcome.created
    )


def as_run(workflow_id: str, workflow_type: str = "TenantOnboarding") -> ActivityEnvironment:
    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, workflow_id=workflow_id, workflow_type=workflow_type)
    return env


async def onboard_storage(contract: TenantContract) -> tuple[StepInput, dict[str, StepResult]]:
    """Run the three storage steps as run RUN; the input carries their facts, the results are by step."""
    inp = StepInput(contract=contract, facts=identity_facts(), run_id=RUN)
    done = {}
    for name, step in (
        ("filesystems", storage.ensure_filesystems),
        ("quotas", storage.ensure_quotas),
        ("csi", storage.ensure_csi),
    ):
        done[name] = await run_activity(step, inp)
        inp = inp.model_copy(update={"facts": done[name].facts})
    return inp, done


async def test_a_foreign_csi_secret_is_refused_not_adopted(storage_lab: StorageLab) -> None:
    contract = storage_lab.contract()
    storage_lab.store.create(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "weka-tenant-foo-creds", "namespace": "tenant-foo"},
            "data": {"token": "c29tZW9uZQ=="},
        }
    )
    inp = StepInput(contract=contract, facts=identity_facts(), run_id=RUN)
    for step in (storage.ensure_filesystems, storage.ensure_quotas):
        inp = inp.model_copy(update={"facts": (await run_activity(step, inp)).facts})
    with pytest.raises(ApplicationError, match="is not this tenant's"):
        await run_activity(storage.ensure_csi, inp)
    secret = storage_lab.store.get("", "secrets", "weka-tenant-foo-creds", "tenant-foo")
    assert secret["data"] == {"token": "c29tZW9uZQ=="}


async def test_undo_leaves_alone_what_another_run_made(storage_lab: StorageLab) -> None:
    contract = storage_lab.contract()
    inp, done = await onboard_storage(contract)
    weka_before, kube_before = await storage_lab.snapshot(), await storage_lab.kube_snapshot()
    undone = await run_activity(
        storage.undo,
        UndoInput(
            contract=contract,
            facts=inp.facts,
            step="csi",
            results=[planned(r) for r in done["csi"].results if r.kind != "WekaUser"],
        ),
        env=as_run("tenant/someone-else"),
    )
    assert await storage_lab.snapshot() == weka_before
    assert await storage_lab.kube_snapshot() == kube_before
    assert {r.outcome for r in undone} == {Outcome.unchanged}
    assert all(isinstance(r.data, Kept) and r.data.kept for r in undone)
    kept = await run_activity(
        storage.undo,
        UndoInput(
            contract=contract,
            facts=inp.facts,
            step="filesystems",
            results=[r for r in done["filesystems"].results if r.kind == "WekaDirectory"],
        ),
    )
    assert {r.data_as(Kept).kept.split(":")[0] for r in kept} == {"directories stay"}

    own = await run_activity(
        storage.undo,
        UndoInput(
            contract=contract,
            facts=inp.facts,
            step="csi",
            results=[planned(r) for r in done["csi"].results if r.kind != "WekaUser"],
        ),
        env=as_run(RUN),
    )
    assert {r.kind: r.outcome for r in own} == {
        "Secret": Outcome.deleted,
        "StorageClass": Outcome.deleted,
        "PersistentVolumeClaim": Outcome.deleted,
        "PersistentVolume": Outcome.deleted,
    }


async def test_shared_org_rollback_keeps_another_tenants_quota(storage_lab: StorageLab) -> None:
    foo = storage_lab.contract(StorageIsolation.shared_org)
    inp = StepInput(contract=foo, facts=identity_facts())
    await run_activity(storage.ensure_filesystems, inp)
    await run_activity(storage.ensure_quotas, inp)
    before = await storage_lab.snapshot()
    bar = storage_lab.contract(StorageIsolation.shared_org, slug="tenant-bar")
    result = EnsureResult(layer="storage", kind="WekaQuota", name="/home/alice", outcome=Outcome.created)
    undone = await run_activity(
        storage.undo, UndoInput(contract=bar, facts=identity_facts(), step="quotas", results=[result])
    )
    assert await storage_lab.snapshot() == before
    assert [r.outcome for r in undone] == [Outcome.unchanged]
    assert "tenantflow:tenant-foo" in undone[0].data_as(Kept).kept


async def test_the_tenants_teardown_removes_what_carries_its_markers(storage_lab: StorageLab) -> None:
    contract = storage_lab.contract()
    inp, done = await onboard_storage(contract)
    teardown = as_run("offboard/tenant-foo", "TenantOffboarding")
    for name in ("csi", "quotas", "filesystems"):
        await run_activity(
            storage.undo,
            UndoInput(
                contract=contract,
                facts=inp.facts,
                step=name,
                results=[planned(r) for r in done[name].results if r.kind != "WekaDirectory"],
            ),
            env=teardown,
        )
    snap = await storage_lab.snapshot()
    assert [o["name"] for o in snap["organizations"]] == ["Root"]
    assert storage_lab.store.list("", "secrets", "tenant-foo") == []
