"""The HTTP API over a real socket: bearer token, start an onboarding, read its status, answer its gate."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest_asyncio
from aiohttp import web

from tenantflow.starter.client import TenantflowClient
from tenantflow.starter.devserver import free_port
from tenantflow.starter.http_api import make_api_app
from tests.starter.conftest import unique_slug
from tests.workflows.contract import example_tenant
from tests.workflows.harness import wait_for_stage

TOKEN = "s3cret-test-token"


@pytest_asyncio.fixture
async def http(fake_api: TenantflowClient) -> AsyncIterator[httpx.AsyncClient]:
    runner = web.AppRunner(make_api_app(fake_api, TOKEN))
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
            yield client
    finally:
        await runner.cleanup()


async def test_requests_without_the_token_are_refused(http: httpx.AsyncClient) -> None:
    contract = example_tenant(unique_slug()).model_dump(mode="json")
    assert (await http.post("/runs/onboarding", json=contract)).status_code == 401
    wrong = {"Authorization": "Bearer nope"}
    assert (await http.post("/runs/onboarding", json=contract, headers=wrong)).status_code == 401
    assert (await http.get("/runs/tenant/x")).status_code == 401


async def test_start_status_and_approve(http: httpx.AsyncClient, fake_api: TenantflowClient) -> None:
    auth = {"Authorization": f"Bearer {TOKEN}"}
    slug = unique_slug()
    contract = example_tenant(slug).model_dump(mode="json")
    bad = await http.post("/runs/onboarding", json={**contract, "slug": "Not A Slug"}, headers=auth)
    assert bad.status_code == 422 and "slug" in bad.json()["error"]
    started = await http.post("/runs/onboarding", json=contract, headers=auth)
    assert started.status_code == 201, started.text
    workflow_id = started.json()["workflow_id"]
    assert workflow_id == f"tenant/{slug}"
    described = await fake_api.handle(workflow_id).describe()
    assert await described.static_summary() == f"Onboard {slug}: 64 GPUs h100-8x, 3 users"
    details = await described.static_details()
    assert details is not None and f"started by: `{fake_api.identity}`" in details
    assert (await http.post("/runs/onboarding", json=contract, headers=auth)).status_code == 409
    await wait_for_stage(fake_api, fake_api.handle(workflow_id), "gate:approve_plan")

    status = (await http.get(f"/runs/{workflow_id}", headers=auth)).json()
    assert status["stage"] == "gate:approve_plan"
    assert (await http.get("/runs/tenant/no-such-run", headers=auth)).status_code == 404
    stale = await http.post(f"/runs/{workflow_id}/gates/approve_plan", json={"plan_hash": "0" * 16}, headers=auth)
    assert stale.status_code == 409 and "stale" in stale.json()["error"]
    approved = await http.post(
        f"/runs/{workflow_id}/gates/approve_plan",
        json={"plan_hash": status["plan_hash"], "approver": "svc"},
        headers=auth,
    )
    assert approved.status_code == 200, approved.text
    assert (await fake_api.result(workflow_id)).status == "completed"


async def test_a_change_that_renames_the_tenant_is_refused_with_the_reason(http: httpx.AsyncClient) -> None:
    auth = {"Authorization": f"Bearer {TOKEN}"}
    contract = example_tenant(unique_slug()).model_dump(mode="json")
    renamed = await http.post("/tenants/tenant-old/change", json=contract, headers=auth)
    assert renamed.status_code == 422 and "cannot be renamed in place" in renamed.json()["error"], renamed.text
    bad = await http.post(f"/tenants/{contract['slug']}/change", json={**contract, "users": []}, headers=auth)
    assert bad.status_code == 422 and "users" in bad.json()["error"], bad.text
