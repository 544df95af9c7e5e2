"""The HTTP API's routes that read without starting a run, over a real socket against the lab: a contract's plan
(run by the worker as ``TenantPlan``, writing nothing), a contract's validation (pure), the JSON Schemas, and the
tenant records, a handover sheet and a drift check (the worker's ``TenantRecords`` and ``TenantDrift``); the CLI's
``tenants``, ``handover``, ``apply`` and ``offboard`` with only Temporal settings (and an approval key) in its
environment; and the change and the offboarding of ``tenantflow serve-api`` run with only those settings too (issue
27: the worker reads the records, with its own credentials)."""

from __future__ import annotations

import asyncio
import json
import socket
import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
import yaml
from temporalio.testing import WorkflowEnvironment

from tenantflow.activities.common.kubeobjects import KubeObjects
from tenantflow.activities.common.recordstore import store
from tenantflow.lab.endpoints import LabEndpoints
from tenantflow.models.change import ChangeInput
from tenantflow.models.offboarding import OffboardingInput
from tenantflow.models.records import DEFAULT_NAMESPACE, RunStamp, TenantRecord
from tenantflow.models.run_ids import offboarding_id, onboarding_id
from tenantflow.models.runbook import PLAN
from tenantflow.models.targets import KubeTarget
from tenantflow.models.tenant import TenantContract
from tenantflow.starter.client import TenantflowClient
from tenantflow.worker.signatures import APPROVAL_KEY_ENV
from tenantflow.worker.tokens import TOKENS_FILE_ENV, TokenTable, new_token
from tests.integration.test_offboarding_e2e import small_tenant
from tests.labfixture import journal_writes, lab_worker, reset_journals
from tests.starter.conftest import CLI, http_api, only_temporal_env, unique_slug
from tests.workflows.contract import EXAMPLES

OTHER, OTHER_LINE = new_token("olga", ["viewer:tenant-other*"])
AS_OTHER = {"Authorization": f"Bearer {OTHER}"}
PLANNER, PLANNER_LINE = new_token("petra", ["requester:tenant-foo"])
VIEWER, VIEWER_LINE = new_token("victor", ["viewer:*"])
AS_PLANNER = {"Authorization": f"Bearer {PLANNER}"}
AS_VIEWER = {"Authorization": f"Bearer {VIEWER}"}
CHANGER, CHANGER_LINE = new_token("rhea", ["requester:tenant-c*"])
AS_CHANGER = {"Authorization": f"Bearer {CHANGER}"}


@pytest_asyncio.fixture
async def worker(dev_env: WorkflowEnvironment, lab: LabEndpoints) -> AsyncIterator[TenantflowClient]:
    async with lab_worker(dev_env.client, lab) as api:
        yield api


@pytest_asyncio.fixture
async def http(worker: TenantflowClient) -> AsyncIterator[httpx.AsyncClient]:
    async with http_api(worker, TokenTable.parse([PLANNER_LINE, VIEWER_LINE, OTHER_LINE])) as client:
        yield client


@pytest.fixture
def recorded(lab: LabEndpoints) -> Iterator[TenantContract]:
    """A tenant record in the lab's tenant cluster (of a tenant never applied), removed afterwards."""
    contract = small_tenant(lab).model_copy(update={"slug": unique_slug()})
    stamp = RunStamp(
        workflow_id=onboarding_id(contract.slug),
        run_id=uuid.uuid4().hex,
        plan_hash="feedfacefeedface",
        approver="recorder",
        recorded_at=datetime.now(UTC),
    )
    stored = store(TenantRecord(contract=contract, run=stamp), DEFAULT_NAMESPACE)
    try:
        yield contract
    finally:
        KubeObjects(contract.cluster).delete("Secret", stored.name, DEFAULT_NAMESPACE)


def tenant_foo() -> dict[str, Any]:
    contract = yaml.safe_load((EXAMPLES / "tenant-foo.yaml").read_text())
    assert isinstance(contract, dict)
    return contract


async def test_a_plan_over_http_is_the_workers_and_writes_nothing(http: httpx.AsyncClient, lab: LabEndpoints) -> None:
    contract = tenant_foo()
    refused = await http.post("/plans", json=contract, headers=AS_VIEWER)
    assert refused.status_code == 403 and "requester" in refused.json()["error"], refused.text
    other = await http.post("/plans", json={**contract, "slug": "tenant-bar"}, headers=AS_PLANNER)
    assert other.status_code == 403 and "tenant-bar" in other.json()["error"], other.text
    reset_journals(lab)
    planned = await http.post("/plans", json=contract, headers=AS_PLANNER)
    assert planned.status_code == 200, planned.text
    report = planned.json()
    assert report["ok"] and report["plan_hash"] and len(report["nodes"]) == 8, report
    assert {s["layer"] for s in report["plan"]["steps"]} == {s.layer for s in PLAN}
    assert ("kube", "Namespace", "tenant-foo") in {(s["layer"], s["kind"], s["name"]) for s in report["plan"]["steps"]}
    assert set(journal_writes(lab).values()) == {0}, journal_writes(lab)

    capacity = {**contract["capacity"], "gpus": 640}
    too_big = await http.post("/plans", json={**contract, "capacity": capacity}, headers=AS_PLANNER)
    assert too_big.status_code == 200, too_big.text
    assert not too_big.json()["ok"] and too_big.json()["plan"] is None
    assert any(f["severity"] == "error" for f in too_big.json()["findings"]), too_big.json()


async def test_validation_and_schemas_over_http(http: httpx.AsyncClient) -> None:
    contract = tenant_foo()
    valid = await http.post("/contracts/tenant", json=contract, headers=AS_VIEWER)
    assert valid.status_code == 200, valid.text
    assert valid.json()["slug"] == "tenant-foo" and valid.json()["capacity"]["gpus"] == 64
    bad = await http.post("/contracts/tenant", json={**contract, "slug": "Not A Slug"}, headers=AS_VIEWER)
    assert bad.status_code == 422 and bad.json()["fields"] == ["contract.slug"], bad.text
    kubeconfig = {**contract, "cluster": {"context": "tenant-cluster", "kubeconfig": "/tmp/evil"}}
    named = await http.post("/contracts/tenant", json=kubeconfig, headers=AS_VIEWER)
    assert named.status_code == 422 and named.json()["fields"] == ["cluster.kubeconfig"], named.text
    worker = await http.post("/contracts/workercluster", json=contract, headers=AS_VIEWER)
    assert worker.status_code == 422 and worker.json()["fields"], worker.text
    schemas = await http.get("/schemas", headers=AS_VIEWER)
    assert schemas.status_code == 200
    assert {"TenantContract", "WorkerEnrollment", "PlanInput"} <= set(schemas.json())
    assert schemas.json()["TenantContract"]["properties"]["slug"]["pattern"]


async def test_tenants_handover_and_drift_are_read_by_the_worker(
    http: httpx.AsyncClient, worker: TenantflowClient, recorded: TenantContract, lab: LabEndpoints
) -> None:
    slug, cluster = recorded.slug, {"cluster": recorded.cluster.context}
    listed = await http.get("/tenants", params=cluster, headers=AS_VIEWER)
    assert listed.status_code == 200, listed.text
    [row] = [r for r in listed.json() if r["slug"] == slug]
    assert (row["status"], row["version"], row["plan_hash"]) == ("onboarded", 1, "feedfacefeedface")
    hidden = await http.get("/tenants", params=cluster, headers=AS_OTHER)
    assert hidden.status_code == 200 and slug not in {r["slug"] for r in hidden.json()}
    unknown = await http.get("/tenants", params={"cluster": "no-such-cluster"}, headers=AS_VIEWER)
    assert unknown.status_code == 422 and unknown.json()["fields"] == ["cluster"], unknown.text

    sheet = await http.get(f"/tenants/{slug}/handover", params=cluster, headers=AS_VIEWER)
    assert sheet.status_code == 200, sheet.text
    assert (sheet.json()["slug"], sheet.json()["plan_hash"]) == (slug, "feedfacefeedface")
    assert (await http.get(f"/tenants/{slug}/handover", params=cluster, headers=AS_OTHER)).status_code == 403

    reset_journals(lab)
    drifted = await http.get(f"/tenants/{slug}/drift", params=cluster, headers=AS_VIEWER)
    assert drifted.status_code == 200, drifted.text
    missing = {(i["layer"], i["kind"], i["drift"]) for i in drifted.json()["items"]}
    assert ("kube", "Namespace", "missing") in missing, drifted.json()
    assert set(journal_writes(lab).values()) == {0}, journal_writes(lab)
    nobody = await http.get(f"/tenants/{unique_slug()}/drift", params=cluster, headers=AS_VIEWER)
    assert nobody.status_code == 404, nobody.text

    code, out, err = await cli(worker, "tenants", "--context", recorded.cluster.context, "-o", "json")
    assert code == 0, err
    assert slug in {r["slug"] for r in json.loads(out)}
    code, out, err = await cli(worker, "handover", slug, "--context", recorded.cluster.context, "-o", "json")
    assert code == 0, err
    assert json.loads(out)["plan_hash"] == "feedfacefeedface"


def temporal_and_key(api: TenantflowClient) -> dict[str, str]:
    """The Temporal settings of ``api`` and the approval key it signs starts with: no env file, no kubeconfig, no
    service credential."""
    assert api.signer is not None, "the lab worker's client signs its starts"
    return only_temporal_env(api) | {APPROVAL_KEY_ENV: str(api.signer.path)}


async def cli(api: TenantflowClient, *args: str) -> tuple[int, str, str]:
    """The CLI with only the Temporal settings of ``api`` and its approval key: no kubeconfig, no service
    credential."""
    proc = await asyncio.create_subprocess_exec(
        CLI, *args, env=temporal_and_key(api), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


def renamed(contract: TenantContract) -> TenantContract:
    return contract.model_copy(update={"display_name": "Renamed By A Change"})


async def stop(api: TenantflowClient, workflow_id: str) -> None:
    """Terminate a run the test started only to see it start: nothing was applied before its plan gate."""
    await api.handle(workflow_id).terminate(reason="the test only checks that it started")


async def test_apply_and_offboard_with_only_temporal_settings(
    worker: TenantflowClient, recorded: TenantContract, tmp_path: Path
) -> None:
    """``apply`` and ``offboard`` start their runs from the record the worker reads; a cluster the worker does not
    know is a message naming the worker's registry and what named the cluster (the file, ``--context``)."""
    slug = recorded.slug
    path = tmp_path / "changed.json"
    path.write_text(renamed(recorded).model_dump_json())
    code, out, err = await cli(worker, "apply", str(path), "--no-wait", "-o", "json")
    assert code == 0, err
    assert json.loads(out)["workflow_id"] == onboarding_id(slug)
    change = await worker._started_input(onboarding_id(slug), ChangeInput)
    await stop(worker, onboarding_id(slug))
    assert (change.previous, change.contract) == (recorded, renamed(recorded)), "from the record, to the file"

    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text(
        recorded.model_copy(update={"cluster": KubeTarget(context="no-such-cluster")}).model_dump_json()
    )
    code, _, err = await cli(worker, "apply", str(elsewhere), "--no-wait")
    assert code == 1, err
    assert "the worker cannot read the record of" in err and f"{elsewhere}: cluster" in err, err
    assert "'no-such-cluster' is not in the cluster registry" in err and "Traceback" not in err, err

    code, _, err = await cli(worker, "offboard", slug, "--context", "no-such-cluster")
    assert code == 1 and "--context" in err and "'no-such-cluster' is not in the cluster registry" in err, err
    code, _, err = await cli(worker, "offboard", slug, "--context", "worker")
    assert code == 2 and "holds no record of it" in err and "tenant-cluster" in err, "never the run of another cluster"
    code, out, err = await cli(worker, "offboard", slug, "--context", recorded.cluster.context, "-o", "json")
    assert code == 0, err
    assert json.loads(out)["workflow_id"] == offboarding_id(slug)
    offboarding = await worker._started_input(offboarding_id(slug), OffboardingInput)
    await stop(worker, offboarding_id(slug))
    assert offboarding.contract == recorded, "the record's contract, not that of the latest run (the change)"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest_asyncio.fixture
async def served(worker: TenantflowClient, tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    """``tenantflow serve-api`` as a process of its own with only the Temporal settings, the approval key and the
    token file: no env file, no kubeconfig, no service credential."""
    tokens = tmp_path / "api-tokens"
    tokens.write_text(CHANGER_LINE + "\n")
    port = free_port()
    proc = await asyncio.create_subprocess_exec(
        CLI,
        "serve-api",
        "--port",
        str(port),
        env=temporal_and_key(worker) | {TOKENS_FILE_ENV: str(tokens)},
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=60) as http:
            for _ in range(300):
                assert proc.returncode is None, "serve-api exited"
                try:
                    await http.get("/openapi.json")
                    break
                except httpx.TransportError:
                    await asyncio.sleep(0.1)
            yield http
    finally:
        proc.terminate()
        try:
            await asyncio.wait_for(proc.wait(), 10)
        except TimeoutError:
            proc.kill()
            await proc.wait()


async def test_a_change_and_an_offboarding_over_http_need_only_temporal(
    served: httpx.AsyncClient, worker: TenantflowClient, recorded: TenantContract
) -> None:
    slug = recorded.slug
    body = renamed(recorded).model_dump(mode="json")
    changed = await served.post(f"/tenants/{slug}/change", json=body, headers=AS_CHANGER)
    assert changed.status_code == 201, changed.text
    change = await worker._started_input(onboarding_id(slug), ChangeInput)
    await stop(worker, onboarding_id(slug))
    assert change.previous == recorded, "the worker read the record"

    elsewhere = {**body, "cluster": {"context": "no-such-cluster"}}
    unknown = await served.post(f"/tenants/{slug}/change", json=elsewhere, headers=AS_CHANGER)
    assert unknown.status_code == 422 and unknown.json()["fields"] == ["cluster.context"], unknown.text
    assert "'no-such-cluster' is not in the cluster registry" in unknown.json()["error"], unknown.text

    other = await served.post(f"/tenants/{slug}/offboarding", json={}, params={"cluster": "worker"}, headers=AS_CHANGER)
    assert other.status_code == 404 and other.json()["fields"] == ["cluster"], other.text
    assert "is of tenant-cluster" in other.json()["error"], "never the run of another cluster"
    params = {"cluster": recorded.cluster.context}
    offboarding = await served.post(f"/tenants/{slug}/offboarding", json={}, params=params, headers=AS_CHANGER)
    assert offboarding.status_code == 201, offboarding.text
    started = await worker._started_input(offboarding_id(slug), OffboardingInput)
    await stop(worker, offboarding_id(slug))
    assert started.contract == recorded, "the record's contract, not that of the latest run (the change)"
