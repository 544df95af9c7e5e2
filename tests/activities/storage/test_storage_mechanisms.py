"""Storage reaches Weka only by mechanisms real clusters have: directories made on a csi-wekafs mount by a Job,
quotas by inode, a csi-wekafs API Secret, and a PVC waited on until Bound (issue 11, items 1 and 4)."""

from __future__ import annotations

import asyncio
import contextlib
import re
from pathlib import Path
from typing import Any

import pytest
from storage_harness import GROUP_GID, UIDS, StorageLab, identity_facts, record_tenant, run_activity
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from tenantflow.activities.common.weka_client import csi_user_credentials
from tenantflow.activities.storage import csi as storage_csi
from tenantflow.activities.storage import dirs as storage_dirs
from tenantflow.activities.storage import steps as storage
from tenantflow.models.onboarding import StepInput
from tenantflow.models.results import Kept
from tenantflow.models.tenant import StorageIsolation

ROOT = Path(__file__).resolve().parents[3]
HELPER_KINDS = ("secrets", "persistentvolumes", "persistentvolumeclaims", "jobs", "pods")


def test_the_product_reaches_no_lab_route() -> None:
    hits = [
        f"{path.relative_to(ROOT)}:{n}"
        for folder in ("activities", "workflows", "worker", "starter", "models")
        for path in sorted((ROOT / folder).rglob("*.py"))
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"/_lab\b", line)
    ]
    assert hits == []


def _jobs_seen(lab: StorageLab) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []

    def on_event(kind: str, key: Any, obj: dict[str, Any]) -> None:
        if kind == "ADDED" and obj.get("kind") == "Job":
            seen.append(obj)

    lab.store.subscribe(on_event)
    return seen


def _helpers_left(lab: StorageLab) -> list[str]:
    return [
        f"{o['resource']}/{o['name']}"
        for o in lab.store.snapshot()["objects"]
        if o["resource"] in HELPER_KINDS and o["name"].startswith("tenantflow-weka-dirs-")
    ]


async def _helpers_gone(lab: StorageLab) -> list[str]:
    """The helper objects left once the garbage collector is done with the Job's pod (background propagation
    removes it after the Job, as on a real cluster): woken by each change of the store, for at most 5 s."""
    loop, changed = asyncio.get_running_loop(), asyncio.Event()
    stop = lab.store.subscribe(lambda *_: loop.call_soon_threadsafe(changed.set))
    try:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(5):
                while True:
                    changed.clear()
                    if not _helpers_left(lab):
                        break
                    await changed.wait()
    finally:
        stop()
    return _helpers_left(lab)


async def test_directories_are_made_and_owned_by_a_job_on_a_csi_mount(storage_lab: StorageLab) -> None:
    jobs = _jobs_seen(storage_lab)
    contract = storage_lab.contract(StorageIsolation.shared_org)
    done = await run_activity(storage.ensure_filesystems, StepInput(contract=contract, facts=identity_facts()))
    assert {r.name: r.outcome.value for r in done.results} == {
        "/home/alice": "created",
        "/home/bob": "created",
        "/scratch/tenant-foo": "created",
    }
    assert len(jobs) == 2, "one directory Job per filesystem"
    assert {j["metadata"]["namespace"] for j in jobs} == {"tenantflow-system"}, "root may not run in the tenant's"
    pod = jobs[0]["spec"]["template"]["spec"]
    assert pod["volumes"][0]["persistentVolumeClaim"]["claimName"] == jobs[0]["metadata"]["name"]
    assert pod["containers"][0]["command"][:2] == ["/bin/sh", "-ec"]
    filesystems = {f.name: f for f in storage_lab.weka.cluster.filesystems.values()}
    assert filesystems["home"].owners == {
        "/alice": [UIDS["alice"], GROUP_GID, 0o700],
        "/bob": [UIDS["bob"], GROUP_GID, 0o700],
    }
    assert filesystems["scratch"].owners == {"/tenant-foo": [0, GROUP_GID, 0o2770]}
    assert await _helpers_gone(storage_lab) == []
    again = await run_activity(storage.ensure_filesystems, StepInput(contract=contract, facts=identity_facts()))
    assert {r.outcome.value for r in again.results} == {"unchanged"}
    assert len(jobs) == 3, "no record yet: /scratch/tenant-foo is checked, the shared homes are left as found"
    assert {r.name for r in again.results if isinstance(r.data, Kept)} == {"/home/alice", "/home/bob"}
    await record_tenant(contract, done.results)
    third = await run_activity(storage.ensure_filesystems, StepInput(contract=contract, facts=identity_facts()))
    assert {r.outcome.value for r in third.results} == {"unchanged"} and len(jobs) == 3, "the record proves it"


async def test_a_refused_mount_fails_the_step_naming_it(
    storage_lab: StorageLab, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = storage_dirs.api_secret_data
    monkeypatch.setattr(
        storage_dirs, "api_secret_data", lambda creds: {k: v for k, v in real(creds).items() if k != "organization"}
    )
    contract = storage_lab.contract(StorageIsolation.shared_org)
    with pytest.raises(ApplicationError) as failed:
        await run_activity(storage.ensure_filesystems, StepInput(contract=contract, facts=identity_facts()))
    assert failed.value.type == "DirectoryJobFailed"
    assert "lacks organization" in str(failed.value) and "/alice" in str(failed.value)
    assert await _helpers_gone(storage_lab) == []
    assert all(not f.owners for f in storage_lab.weka.cluster.filesystems.values())


async def test_quota_step_heartbeats_its_progress_over_every_directory(storage_lab: StorageLab) -> None:
    contract = storage_lab.contract(StorageIsolation.shared_org)
    inp = StepInput(contract=contract, facts=identity_facts())
    await run_activity(storage.ensure_filesystems, inp)
    beats: list[Any] = []
    env = ActivityEnvironment()
    env.on_heartbeat = lambda *details: beats.append(details)
    await run_activity(storage.ensure_quotas, inp, env=env)
    assert ({"quotas": {"done": 3, "of": 3}},) in beats, beats


async def test_a_pvc_that_stays_pending_fails_naming_the_event(
    storage_lab: StorageLab, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(storage_csi, "BIND_BUDGET_S", 1.5)
    contract = storage_lab.contract()
    inp = StepInput(contract=contract, facts=identity_facts(), run_id="tenant/tenant-foo")
    for step in (storage.ensure_filesystems, storage.ensure_quotas):
        inp = inp.model_copy(update={"facts": (await run_activity(step, inp)).facts})
    cluster = storage_lab.weka.cluster
    creds = csi_user_credentials(contract.slug)
    org = cluster.org_by_name(contract.slug)
    assert org is not None
    cluster.create_user(org.id, creds.username, creds.password.get_secret_value(), "ReadOnly")
    with pytest.raises(ApplicationError) as failed:
        await run_activity(storage.ensure_csi, inp)
    message = str(failed.value)
    assert failed.value.type == "PvcPending"
    assert "training-scratch stays Pending" in message and "ProvisioningFailed" in message
    assert "role ReadOnly" in message


async def test_a_missing_helper_namespace_is_named(storage_lab: StorageLab) -> None:
    storage_lab.store.delete("", "namespaces", "tenantflow-system")
    contract = storage_lab.contract(StorageIsolation.shared_org)
    with pytest.raises(ApplicationError, match="WEKA_HELPER_NAMESPACE"):
        await run_activity(storage.ensure_filesystems, StepInput(contract=contract, facts=identity_facts()))


async def test_lost_answers_while_waiting_and_cleaning_up_do_not_run_the_job_again(storage_lab: StorageLab) -> None:
    """The Job's status read answers 503 four times running (more than a read is retried in place) and the answer
    to each helper's DELETE is lost after the deletion happened: one attempt still ends well, with one Job per
    filesystem and no helper left."""
    jobs = _jobs_seen(storage_lab)
    helper = r"/tenantflow-weka-dirs-[0-9a-f]+$"
    rules = [
        {"path": "/jobs" + helper, "methods": ["GET"], "error_rate": 1.0, "max_fires": 4},
        {"path": helper, "methods": ["DELETE"], "drop_after_rate": 1.0, "max_fires": 4},
    ]
    (await storage_lab.api.put(storage_lab.kube_url + "/_lab/faults", json={"rules": rules})).raise_for_status()
    contract = storage_lab.contract(StorageIsolation.shared_org)
    done = await run_activity(storage.ensure_filesystems, StepInput(contract=contract, facts=identity_facts()))
    entries = (await storage_lab.api.get(storage_lab.kube_url + "/_lab/requests")).json()["requests"]
    faulted = [(e["method"], e["status"]) for e in entries if e["injected"]]
    assert faulted.count(("GET", 503)) == 4 and sum(m == "DELETE" for m, _ in faulted) == 4, faulted
    assert {r.outcome.value for r in done.results} == {"created"}
    assert len(jobs) == 2, "one Job per filesystem: no lost answer made the step run a Job again"
    assert await _helpers_gone(storage_lab) == []
