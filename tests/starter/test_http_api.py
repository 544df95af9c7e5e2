"""The HTTP API over a real socket: per-user tokens, start an onboarding, read its status, answer its gate as the
token's user (never as a name the client chooses), the four-eyes rule, and contracts that name kubeconfig files."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest_asyncio
from aiohttp import web
from openapi_spec_validator import validate
from temporalio.testing import WorkflowEnvironment

from tenantflow.starter.client import TenantflowClient
from tenantflow.starter.devserver import free_port
from tenantflow.starter.http_api import make_api_app
from tenantflow.worker.tokens import TokenTable, new_token
from tests.security.four_eyes import client_as, four_eyes_worker
from tests.starter.conftest import unique_slug
from tests.workflows.contract import example_tenant
from tests.workflows.harness import wait_for_stage

ALICE, ALICE_LINE = new_token("alice")
BOB, BOB_LINE = new_token("bob")
AS_ALICE = {"Authorization": f"Bearer {ALICE}"}
AS_BOB = {"Authorization": f"Bearer {BOB}"}


@pytest_asyncio.fixture
async def api(dev_env: WorkflowEnvironment) -> AsyncIterator[TenantflowClient]:
    async with four_eyes_worker(dev_env) as queue:
        yield await client_as(dev_env, "tenantflow-api@api-host", queue)


@pytest_asyncio.fixture
async def http(api: TenantflowClient) -> AsyncIterator[httpx.AsyncClient]:
    runner = web.AppRunner(make_api_app(api, TokenTable.parse([ALICE_LINE, BOB_LINE])))
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
            yield client
    finally:
        await runner.cleanup()


async def test_requests_without_a_known_token_are_refused(http: httpx.AsyncClient) -> None:
    contract = example_tenant(unique_slug()).model_dump(mode="json")
    assert (await http.post("/runs/onboarding", json=contract)).status_code == 401
    wrong = {"Authorization": "Bearer nope"}
    assert (await http.post("/runs/onboarding", json=contract, headers=wrong)).status_code == 401
    assert (await http.get("/runs/tenant/x")).status_code == 401


async def test_start_status_and_approve_as_the_tokens_user(http: httpx.AsyncClient, api: TenantflowClient) -> None:
    slug = unique_slug()
    contract = example_tenant(slug).model_dump(mode="json")
    bad = await http.post("/runs/onboarding", json={**contract, "slug": "Not A Slug"}, headers=AS_ALICE)
    assert bad.status_code == 422 and "slug" in bad.json()["error"]
    started = await http.post("/runs/onboarding", json=contract, headers=AS_ALICE)
    assert started.status_code == 201, started.text
    workflow_id = started.json()["workflow_id"]
    assert workflow_id == f"tenant/{slug}"
    described = await api.handle(workflow_id).describe()
    assert await described.static_summary() == f"Onboard {slug}: 64 GPUs h100-8x, 3 users"
    details = await described.static_details()
    assert details is not None and "started by: `alice`" in details
    assert (await http.post("/runs/onboarding", json=contract, headers=AS_ALICE)).status_code == 409
    await wait_for_stage(api, api.handle(workflow_id), "gate:approve_plan")

    status = (await http.get(f"/runs/{workflow_id}", headers=AS_BOB)).json()
    assert status["stage"] == "gate:approve_plan"
    assert (await http.get("/runs/tenant/no-such-run", headers=AS_BOB)).status_code == 404
    gate = f"/runs/{workflow_id}/gates/approve_plan"
    stale = await http.post(gate, json={"plan_hash": "0" * 16}, headers=AS_BOB)
    assert stale.status_code == 409 and "stale" in stale.json()["error"]
    impersonating = await http.post(gate, json={"plan_hash": status["plan_hash"], "approver": "carol"}, headers=AS_BOB)
    assert impersonating.status_code == 403 and "'bob'" in impersonating.json()["error"]
    own = await http.post(gate, json={"plan_hash": status["plan_hash"]}, headers=AS_ALICE)
    assert own.status_code == 409 and "four-eyes rule: 'alice' started this run" in own.json()["error"]
    approved = await http.post(gate, json={"plan_hash": status["plan_hash"], "approver": "bob"}, headers=AS_BOB)
    assert approved.status_code == 200, approved.text
    assert approved.json()["answer"].endswith("approved by bob")
    assert (await api.result(workflow_id)).status == "completed"


async def test_a_contract_naming_a_kubeconfig_file_is_refused(http: httpx.AsyncClient, tmp_path: Path) -> None:
    contract = example_tenant(unique_slug()).model_dump(mode="json")
    contract["cluster"]["kubeconfig"] = str(tmp_path / "evil")
    refused = await http.post("/runs/onboarding", json=contract, headers=AS_ALICE)
    assert refused.status_code == 422
    assert "cluster.kubeconfig: a contract cannot choose a kubeconfig file" in refused.json()["error"]


async def test_a_change_that_renames_the_tenant_is_refused_with_the_reason(http: httpx.AsyncClient) -> None:
    contract = example_tenant(unique_slug()).model_dump(mode="json")
    renamed = await http.post("/tenants/tenant-old/change", json=contract, headers=AS_ALICE)
    assert renamed.status_code == 422 and "cannot be renamed in place" in renamed.json()["error"], renamed.text
    bad = await http.post(f"/tenants/{contract['slug']}/change", json={**contract, "users": []}, headers=AS_ALICE)
    assert bad.status_code == 422 and "users" in bad.json()["error"], bad.text
    path = await http.post(
        f"/tenants/{contract['slug']}/change",
        json={**contract, "cluster": {**contract["cluster"], "kubeconfig": "/tmp/evil"}},
        headers=AS_ALICE,
    )
    assert path.status_code == 422 and "cluster.kubeconfig" in path.json()["error"], path.text


async def test_the_api_serves_its_openapi_document(http: httpx.AsyncClient) -> None:
    assert (await http.get("/openapi.json")).status_code == 401
    served = await http.get("/openapi.json", headers=AS_ALICE)
    assert served.status_code == 200, served.text
    document = served.json()
    validate(document)
    assert document["openapi"] == "3.1.0"
    approve = document["paths"]["/runs/{id}/gates/approve_plan"]["post"]
    assert approve["requestBody"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/ApprovePlanBody"
    }
    assert {"200", "401", "403", "404", "409", "422"} <= set(approve["responses"])
    assert document["components"]["schemas"]["TenantContract"]["required"] == [
        "slug",
        "display_name",
        "cluster",
        "users",
    ]


async def test_malformed_requests_get_a_problem_naming_the_reason_or_the_field(http: httpx.AsyncClient) -> None:
    """Each of these answered 500 (aiohttp's text page) before the API turned every refusal into a problem."""
    start = "/runs/onboarding"
    truncated = await http.post(start, content=b'{"slug": ', headers=AS_ALICE)
    assert truncated.status_code == 400 and "request body: not JSON (Expecting value" in truncated.json()["error"]
    not_utf8 = await http.post(start, content=b'{"slug": "\xff"}', headers=AS_ALICE)
    assert not_utf8.status_code == 400 and "not JSON" in not_utf8.json()["error"]
    nested = await http.post(start, content=b"[" * 200_000, headers=AS_ALICE)
    assert nested.status_code == 400 and "not JSON" in nested.json()["error"]
    array = await http.post(start, json=[1], headers=AS_ALICE)
    assert array.status_code == 400 and "expected a JSON object, not list" in array.json()["error"]
    contract = example_tenant(unique_slug()).model_dump(mode="json")
    wrong = await http.post(start, json={**contract, "users": "alice"}, headers=AS_ALICE)
    assert wrong.status_code == 422 and wrong.json()["fields"] == ["contract.users"]
    assert "contract.users: Input should be a valid list" in wrong.json()["error"]
    oversized = await http.post(start, content=b" " * (2 << 20), headers=AS_ALICE)
    assert oversized.status_code == 413 and "Maximum request body size" in oversized.json()["error"]
    nowhere = await http.get("/runz", headers=AS_ALICE)
    assert nowhere.status_code == 404 and nowhere.json()["error"].startswith("no route GET /runz")
    wrong_method = await http.delete("/tenants/tenant-x/change", headers=AS_ALICE)
    assert wrong_method.status_code == 405 and "(allowed: POST)" in wrong_method.json()["error"]
    gate = await http.post("/runs/tenant/x/gates/approve-plan", json={}, headers=AS_ALICE)
    assert gate.status_code == 422 and gate.json()["fields"] == ["gate"], gate.text
    assert "answer one of submissions_paused" in gate.json()["error"]
    slug = await http.get("/tenants/Tenant_X/term", headers=AS_ALICE)
    assert slug.status_code == 422 and slug.json()["fields"] == ["slug"]
