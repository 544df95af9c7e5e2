"""The HTTP API over a real socket: per-user tokens, start an onboarding, read its status, answer its gate as the
token's user (never as a name the client chooses), the four-eyes rule, contracts that name kubeconfig files, its
OpenAPI document, refusals of malformed requests, and the routes of the rest of the CLI (result, list, offboard,
cancel, enroll, decommission)."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest_asyncio
from openapi_spec_validator import validate
from temporalio.client import WorkflowFailureError
from temporalio.testing import WorkflowEnvironment

from tenantflow.starter.client import TenantflowClient
from tenantflow.worker.tokens import TokenTable, new_token
from tests.security.four_eyes import client_as, four_eyes_worker
from tests.starter.conftest import http_api, unique_slug
from tests.workflows.contract import example_tenant
from tests.workflows.harness import wait_for_stage
from tests.workflows.test_gate_updates import ENROLLMENT

ALICE, ALICE_LINE = new_token("alice", ["requester:*", "approver:*"])
BOB, BOB_LINE = new_token("bob", ["requester:*", "approver:*"])
AS_ALICE = {"Authorization": f"Bearer {ALICE}"}
AS_BOB = {"Authorization": f"Bearer {BOB}"}


@pytest_asyncio.fixture
async def api(dev_env: WorkflowEnvironment) -> AsyncIterator[TenantflowClient]:
    async with four_eyes_worker(dev_env) as queue:
        yield await client_as(dev_env, "tenantflow-api@api-host", queue)


@pytest_asyncio.fixture
async def http(api: TenantflowClient) -> AsyncIterator[httpx.AsyncClient]:
    async with http_api(api, TokenTable.parse([ALICE_LINE, BOB_LINE])) as client:
        yield client


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
    stage = next(p for p in document["paths"]["/runs"]["get"]["parameters"] if p["name"] == "stage")
    assert stage["schema"] == {"type": "string", "pattern": "^[a-z_]+(:[a-z_.]+)?$"}, "a query string has no null"
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
    infinite = await http.post(start, content=b'{"approval_escalate_after_s": Infinity}', headers=AS_ALICE)
    assert infinite.status_code == 400 and "Infinity is not a JSON number" in infinite.json()["error"]
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
    nameless = await http.get("/runs?=x&limit=1", headers=AS_ALICE)
    assert nameless.status_code == 422 and nameless.json()["fields"] == ["''"]
    assert "  - '': unknown field" in nameless.json()["error"]
    blank = await http.get("/runs/%09", headers=AS_ALICE)
    assert blank.status_code == 404 and "not found" in blank.json()["error"], blank.text
    slug = await http.get("/tenants/Tenant_X/term", headers=AS_ALICE)
    assert slug.status_code == 422 and slug.json()["fields"] == ["slug"]


async def finished(api: TenantflowClient, workflow_id: str) -> None:
    """Wait for the run to close, however it ends."""
    with contextlib.suppress(WorkflowFailureError):
        await api.handle(workflow_id).result()


async def test_result_list_offboarding_and_cancel_over_http(http: httpx.AsyncClient, api: TenantflowClient) -> None:
    slug = unique_slug()
    workflow_id = (
        await http.post("/runs/onboarding", json=example_tenant(slug).model_dump(mode="json"), headers=AS_ALICE)
    ).json()["workflow_id"]
    status = await wait_for_stage(api, api.handle(workflow_id), "gate:approve_plan")
    running = await http.get(f"/runs/{workflow_id}/result", headers=AS_BOB)
    assert running.status_code == 409 and "still in progress (stage gate:approve_plan)" in running.json()["error"]
    gate = f"/runs/{workflow_id}/gates/approve_plan"
    assert (await http.post(gate, json={"plan_hash": status.plan_hash}, headers=AS_BOB)).status_code == 200
    await finished(api, workflow_id)
    result = await http.get(f"/runs/{quote(workflow_id, safe='')}/result", headers=AS_ALICE)
    assert result.status_code == 200, result.text
    body = result.json()
    assert (body["workflow_type"], body["status"], body["failure"]) == ("TenantOnboarding", "COMPLETED", None)
    assert body["result"]["slug"] == slug and "approved (plan" in body["result"]["handover"]["markdown"]
    listed = (await http.get("/runs", params={"tenant": slug}, headers=AS_BOB)).json()
    assert [(r["id"], r["status"]) for r in listed] == [(workflow_id, "COMPLETED")]

    offboarding = await http.post(f"/tenants/{slug}/offboarding", json={}, headers=AS_ALICE)
    assert offboarding.status_code == 201, offboarding.text
    leaving = offboarding.json()["workflow_id"]
    assert leaving == f"offboard/{slug}"
    details = await (await api.handle(leaving).describe()).static_details()
    assert details is not None and "started by: `alice`" in details, "the token's user started it, not the API"
    await wait_for_stage(api, api.handle(leaving), "gate:approve_plan")
    cancelled = await http.post(f"/runs/{leaving}/cancel", headers=AS_BOB)
    assert cancelled.status_code == 202 and cancelled.json()["answer"] == f"cancel requested for {leaving}"
    await finished(api, leaving)
    ended = (await http.get(f"/runs/{leaving}/result", headers=AS_BOB)).json()
    assert (ended["status"], ended["result"]) == ("CANCELED", None) and ended["failure"], ended
    assert (ended["explanation"]["error_type"], ended["explanation"]["stage"]) == ("Cancelled", "gate:approve_plan")
    other = example_tenant(unique_slug()).model_dump(mode="json")
    mismatch = await http.post(f"/tenants/{slug}/offboarding", json={"contract": other}, headers=AS_ALICE)
    assert mismatch.status_code == 422 and mismatch.json()["fields"] == ["contract.slug"]
    unknown = await http.post(f"/tenants/{unique_slug()}/offboarding", json={}, headers=AS_ALICE)
    assert unknown.status_code == 404 and "send the tenant's contract" in unknown.json()["error"]
    assert (await http.post("/runs/tenant/none-such/cancel", headers=AS_BOB)).status_code == 404


async def test_enrollment_and_decommission_start_over_http(http: httpx.AsyncClient, api: TenantflowClient) -> None:
    worker = ENROLLMENT.model_copy(update={"worker_name": f"w{uuid.uuid4().hex[:6]}"})
    where = f"{worker.tenant_namespace}/{worker.worker_name}"
    started = await http.post("/runs/enrollment", json=worker.model_dump(mode="json"), headers=AS_ALICE)
    assert started.status_code == 201, started.text
    assert started.json()["workflow_id"] == f"enroll/{where}"
    again = await http.post("/runs/enrollment", json={"contract": worker.model_dump(mode="json")}, headers=AS_BOB)
    assert again.status_code == 409 and f"enroll/{where} is already in progress" in again.json()["error"]
    renamed = await http.post(
        f"/workerclusters/{worker.tenant_namespace}/other/decommission",
        json={"contract": worker.model_dump(mode="json")},
        headers=AS_BOB,
    )
    assert renamed.status_code == 422 and "contract.worker_name" in renamed.json()["fields"]
    decommission = await http.post(f"/workerclusters/{where}/decommission", headers=AS_BOB)
    assert decommission.status_code == 201, decommission.text
    workflow_id = decommission.json()["workflow_id"]
    assert workflow_id == f"decommission/{where}"
    details = await (await api.handle(workflow_id).describe()).static_details()
    assert details is not None and "started by: `bob`" in details
    for run in (f"enroll/{where}", workflow_id):
        await api.handle(run).terminate("test done")
