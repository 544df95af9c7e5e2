"""Storage activities against the Weka stand-in and the Kubernetes API stand-in, over real HTTP."""

from __future__ import annotations

import base64
import json
import logging

import pytest
from storage_harness import StorageLab, identity_facts, record_tenant, run_activity

from tenantflow.activities.storage import steps as storage
from tenantflow.lab.weka.app import TiB
from tenantflow.lab.weka.service import QUOTA_LIST_SHAPES
from tenantflow.models.onboarding import StepInput, StepResult, UndoInput
from tenantflow.models.results import Outcome
from tenantflow.models.tenant import StorageIsolation

STEPS = ("filesystems", "quotas", "csi")


async def apply_storage(inp: StepInput) -> dict[str, StepResult]:
    done: dict[str, StepResult] = {}
    for name, fn in zip(STEPS, (storage.ensure_filesystems, storage.ensure_quotas, storage.ensure_csi), strict=True):
        done[name] = await run_activity(fn, inp)
        inp = inp.model_copy(update={"facts": done[name].facts})
    return done


def quota_view(snapshot: dict[str, object], fs_name: str) -> dict[str, tuple[int, int]]:
    fs = next(f for f in snapshot["filesystems"] if f["name"] == fs_name)  # type: ignore[attr-defined]
    return {q["path"]: (q["hard_limit_bytes"], q["soft_limit_bytes"]) for q in fs["quotas"]}


async def test_strict_org_with_quotas_and_csi_objects(
    storage_lab: StorageLab, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    contract = storage_lab.contract()
    inp = StepInput(contract=contract, facts=identity_facts(), run_id="tenant/tenant-foo")
    preflight = await run_activity(storage.preflight, inp)
    assert [f.message for f in preflight.findings if not f.ok] == []
    done = await apply_storage(inp)

    snap = await storage_lab.snapshot()
    assert {"name": "tenant-foo", "ssd_quota": 0, "total_quota": 0} in snap["organizations"]
    assert {"org": "tenant-foo", "username": "admin-foo", "role": "OrgAdmin"} in snap["users"]
    fss = {f["name"]: f for f in snap["filesystems"]}
    assert fss["tenant-foo-home"]["org"] == "tenant-foo" and fss["tenant-foo-home"]["total_capacity"] == 5 * 10**12
    assert fss["tenant-foo-scratch"]["total_capacity"] == 50 * 10**12
    assert quota_view(snap, "tenant-foo-home") == {
        "/alice": (100 * 10**9, 90 * 10**9),
        "/bob": (100 * 10**9, 90 * 10**9),
    }
    scratch = quota_view(snap, "tenant-foo-scratch")
    assert scratch.pop("/tenant-foo") == (50 * 10**12, 45 * 10**12)
    assert [p.rpartition("/")[0] for p in scratch] == ["/csi-volumes"], "the PVC's volume, made by csi-wekafs"
    facts = done["csi"].facts
    assert facts.weka_org_uid and set(facts.weka_filesystems) == {"home", "scratch"}
    assert facts.csi_secret == "weka-tenant-foo-creds"

    secret = storage_lab.store.get("", "secrets", "weka-tenant-foo-creds", "tenant-foo")
    values = {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}
    host = storage_lab.weka_url.removeprefix("http://")
    assert {k: v for k, v in values.items() if k != "password"} == {
        "username": "csi-foo",
        "organization": "tenant-foo",
        "endpoints": host,
        "scheme": "http",
    }
    token = values["password"]
    assert len(token) > 20
    assert {"org": "tenant-foo", "username": "csi-foo", "role": "CSI"} in snap["users"]
    sc = storage_lab.store.get("storage.k8s.io", "storageclasses", "weka-tenant-foo")
    assert sc["provisioner"] == "csi.weka.io" and sc["reclaimPolicy"] == "Retain"
    assert sc["volumeBindingMode"] == "Immediate" and sc["allowVolumeExpansion"] is True
    secret_ref = {
        f"csi.storage.k8s.io/{use}-secret-{part}": value
        for use in ("provisioner", "controller-publish", "controller-expand", "node-stage", "node-publish")
        for part, value in (("name", "weka-tenant-foo-creds"), ("namespace", "tenant-foo"))
    }
    assert sc["parameters"] == {
        "volumeType": "dir/v1",
        "filesystemName": "tenant-foo-scratch",
        "capacityEnforcement": "HARD",
        **secret_ref,
    }
    pvc = storage_lab.store.get("", "persistentvolumeclaims", "training-scratch", "tenant-foo")
    assert pvc["spec"]["accessModes"] == ["ReadWriteMany"] and pvc["spec"]["storageClassName"] == "weka-tenant-foo"
    assert pvc["spec"]["resources"]["requests"]["storage"] == "10Ti"
    assert pvc["status"]["phase"] == "Bound"

    everything = json.dumps([r.model_dump(mode="json") for r in done.values()]) + caplog.text
    assert token not in everything

    await record_tenant(contract, [r for step in done.values() for r in step.results])
    await storage_lab.reset()
    again = await apply_storage(inp)
    assert {r.outcome for step in again.values() for r in step.results} == {Outcome.unchanged}
    plan = await run_activity(storage.plan, inp)
    assert {s.action.value for s in plan} == {"unchanged"}
    assert await storage_lab.writes() == 0 and await storage_lab.kube_writes() == 0, "the record proves the owners"


async def test_undo_removes_only_what_the_run_created(storage_lab: StorageLab) -> None:
    contract = storage_lab.contract()
    weka_before, kube_before = await storage_lab.snapshot(), await storage_lab.kube_snapshot()
    inp = StepInput(contract=contract, facts=identity_facts(), run_id="tenant/tenant-foo")
    done = await apply_storage(inp)
    for step in reversed(STEPS):
        await run_activity(
            storage.undo, UndoInput(contract=contract, facts=done["csi"].facts, step=step, results=done[step].results)
        )
    assert await storage_lab.snapshot() == weka_before
    assert await storage_lab.kube_snapshot() == kube_before, "the PVC's volume object goes with it"
    await storage_lab.reset()
    again = [
        await run_activity(
            storage.undo, UndoInput(contract=contract, facts=done["csi"].facts, step=step, results=done[step].results)
        )
        for step in reversed(STEPS)
    ]
    assert {r.outcome for batch in again for r in batch} <= {Outcome.absent, Outcome.unchanged}
    assert await storage_lab.writes() == 0 and await storage_lab.kube_writes() == 0


async def test_shared_org_directories_and_quotas(storage_lab: StorageLab) -> None:
    contract = storage_lab.contract(StorageIsolation.shared_org)
    inp = StepInput(contract=contract, facts=identity_facts(), run_id="tenant/tenant-foo")
    done = await apply_storage(inp)
    assert done["csi"].results == []
    snap = await storage_lab.snapshot()
    assert quota_view(snap, "home") == {"/alice": (100 * 10**9, 90 * 10**9), "/bob": (100 * 10**9, 90 * 10**9)}
    assert quota_view(snap, "scratch") == {"/tenant-foo": (50 * 10**12, 45 * 10**12)}
    await run_activity(
        storage.undo,
        UndoInput(contract=contract, facts=done["quotas"].facts, step="quotas", results=done["quotas"].results),
    )
    snap = await storage_lab.snapshot()
    assert quota_view(snap, "home") == {} and quota_view(snap, "scratch") == {}


@pytest.mark.parametrize("shape", QUOTA_LIST_SHAPES)
async def test_quotas_are_read_in_either_shape_the_quota_list_comes_in(storage_lab: StorageLab, shape: str) -> None:
    """The Weka stand-in answers the quota list as an object keyed by quota id or as a list (as csi-wekafs decodes
    it): either way the existing quotas are found, a second run writes nothing and the plan changes nothing."""
    storage_lab.weka.quota_list = shape
    contract = storage_lab.contract(StorageIsolation.shared_org)
    inp = StepInput(contract=contract, facts=identity_facts(), run_id="tenant/tenant-foo")
    await apply_storage(inp)
    await storage_lab.reset()
    again = await run_activity(storage.ensure_quotas, inp)
    assert {r.outcome for r in again.results} == {Outcome.unchanged}
    assert await storage_lab.writes() == 0


@pytest.mark.parametrize("weka_total_bytes", [610 * TiB])
async def test_capacity_preflight_fails_with_numbers(storage_lab: StorageLab) -> None:
    await storage_lab.reset()
    result = await run_activity(storage.preflight, StepInput(contract=storage_lab.contract()))
    failed = [f for f in result.findings if not f.ok]
    assert [f.check for f in failed] == ["storage.capacity"]
    free = 10 * TiB
    assert failed[0].message == (
        f"Weka has {free} bytes free; the tenant needs {66 * 10**12} bytes ({55 * 10**12} requested + 20%)"
    )
    assert "free at least" in failed[0].fix
    assert await storage_lab.writes() == 0
