"""The HTTP API's routes that read without starting a run, over a real socket against the lab: a contract's plan
(run by the worker as ``TenantPlan``, writing nothing), a contract's validation (pure), the JSON Schemas, and the
tenant records, a handover sheet and a drift check (the worker's ``TenantRecords`` and ``TenantDrift``); and the
CLI's ``tenants`` and ``handover`` with only Temporal settings in its environment."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
import pytest_asyncio
import yaml
from temporalio.testing import WorkflowEnvironment

from tenantflow.activities.common.kubeobjects import KubeObjects
from tenantflow.activities.common.recordstore import store
from tenantflow.lab.endpoints import LabEndpoints
from tenantflow.models.records import DEFAULT_NAMESPACE, RunStamp, TenantRecord
from tenantflow.models.run_ids import onboarding_id
from tenantflow.models.runbook import PLAN
from tenantflow.models.tenant import TenantContract
from tenantflow.starter.client import TenantflowClient
from tenantflow.worker.tokens import TokenTable, new_token
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


async def cli(api: TenantflowClient, *args: str) -> tuple[int, str, str]:
    """The CLI with only the Temporal settings of ``api``: no kubeconfig, no service credential."""
    proc = await asyncio.create_subprocess_exec(
        CLI, *args, env=only_temporal_env(api), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()
