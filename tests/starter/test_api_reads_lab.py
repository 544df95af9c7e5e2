"""The HTTP API's routes that read without starting a run, over a real socket against the lab: a contract's plan
(run by the worker as ``TenantPlan``, writing nothing), a contract's validation (pure) and the JSON Schemas."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest_asyncio
import yaml
from temporalio.testing import WorkflowEnvironment

from tenantflow.lab.endpoints import LabEndpoints
from tenantflow.models.runbook import PLAN
from tenantflow.worker.tokens import TokenTable, new_token
from tests.labfixture import journal_writes, lab_worker, reset_journals
from tests.starter.conftest import http_api
from tests.workflows.contract import EXAMPLES

PLANNER, PLANNER_LINE = new_token("petra", ["requester:tenant-foo"])
VIEWER, VIEWER_LINE = new_token("victor", ["viewer:*"])
AS_PLANNER = {"Authorization": f"Bearer {PLANNER}"}
AS_VIEWER = {"Authorization": f"Bearer {VIEWER}"}


@pytest_asyncio.fixture
async def http(dev_env: WorkflowEnvironment, lab: LabEndpoints) -> AsyncIterator[httpx.AsyncClient]:
    async with (
        lab_worker(dev_env.client, lab) as api,
        http_api(api, TokenTable.parse([PLANNER_LINE, VIEWER_LINE])) as client,
    ):
        yield client


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
    assert bad.status_code == 422 and bad.json()["fields"] == ["slug"], bad.text
    kubeconfig = {**contract, "cluster": {"context": "tenant-cluster", "kubeconfig": "/tmp/evil"}}
    named = await http.post("/contracts/tenant", json=kubeconfig, headers=AS_VIEWER)
    assert named.status_code == 422 and named.json()["fields"] == ["cluster.kubeconfig"], named.text
    worker = await http.post("/contracts/workercluster", json=contract, headers=AS_VIEWER)
    assert worker.status_code == 422 and worker.json()["fields"], worker.text
    schemas = await http.get("/schemas", headers=AS_VIEWER)
    assert schemas.status_code == 200
    assert {"TenantContract", "WorkerEnrollment", "PlanInput"} <= set(schemas.json())
    assert schemas.json()["TenantContract"]["properties"]["slug"]["pattern"]
