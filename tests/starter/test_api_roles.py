"""The HTTP API's roles over a real socket, with the token file on disk as ``serve-api`` reads it: a viewer reads
but cannot approve, change, renew or purge; a requester of ``tenant-a*`` cannot touch ``tenant-b``; an approver
answers only its tenants' gates; worker clusters need roles over ``workerclusters/<ns>/<worker>``; the run list
shows only what the token may view; a token removed from the file stops working at once, without a restart; a bare
token (no ``Bearer``) is refused saying so; malformed JSON is a 400 naming the problem."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import httpx
import pytest_asyncio
from temporalio.client import WorkflowExecutionStatus
from temporalio.service import RPCError
from temporalio.testing import WorkflowEnvironment

from tenantflow.models.lifecycle import LifecycleInput
from tenantflow.models.run_ids import lifecycle_id
from tenantflow.starter.client import TenantflowClient
from tenantflow.worker.tokens import TokenFile, new_token
from tenantflow.workflows.lifecycle import TenantLifecycle
from tests.security.four_eyes import client_as, four_eyes_worker
from tests.starter.conftest import http_api
from tests.workflows.contract import example_tenant
from tests.workflows.harness import wait_for_stage
from tests.workflows.test_gate_updates import ENROLLMENT

TOKENS = {
    "reviewer": ["admin:*"],
    "vera": ["viewer:*"],
    "alice": ["requester:tenant-a*"],
    "carol": ["approver:tenant-a*"],
    "bob": ["approver:tenant-b*"],
    "wanda": [f"requester:workerclusters/{ENROLLMENT.tenant_namespace}/*"],
}
"""Each user's grants (``reviewer`` and ``bob`` are principals of the session's identity map)."""
MADE = {user: new_token(user, grants) for user, grants in TOKENS.items()}


def auth(user: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {MADE[user][0]}"}


def slug(prefix: str) -> str:
    return f"tenant-{prefix}{uuid.uuid4().hex[:6]}"


def write_tokens(path: Path, *users: str) -> None:
    """The token file granting ``users`` their :data:`TOKENS`, written in place (as an editor does)."""
    path.write_text("# who may call the API\n" + "".join(f"{MADE[user][1]}\n" for user in users))


@dataclass(frozen=True)
class Served:
    http: httpx.AsyncClient
    api: TenantflowClient
    token_file: Path


@pytest_asyncio.fixture
async def served(dev_env: WorkflowEnvironment, tmp_path: Path) -> AsyncIterator[Served]:
    """The API over a four-eyes worker, reading the token file ``tmp_path/tokens`` (every user of :data:`TOKENS`)."""
    token_file = tmp_path / "tokens"
    write_tokens(token_file, *TOKENS)
    async with four_eyes_worker(dev_env) as queue:
        api = await client_as(dev_env, "tenantflow-api@api-host", queue)
        async with http_api(api, TokenFile(token_file)) as http:
            yield Served(http, api, token_file)


async def onboard(http: httpx.AsyncClient, tenant: str, user: str) -> httpx.Response:
    return await http.post("/runs/onboarding", json=example_tenant(tenant).model_dump(mode="json"), headers=auth(user))


def refused_for(response: httpx.Response, role: str, target: str) -> bool:
    """A 403 whose problem names the role needed and the tenant (or worker cluster)."""
    error = response.json()["error"]
    return response.status_code == 403 and f"needs the {role} role" in error and target in error


async def test_a_viewer_reads_but_cannot_approve_change_renew_or_purge(served: Served) -> None:
    http, tenant = served.http, slug("v")
    contract = example_tenant(tenant).model_dump(mode="json")
    status = await http.get(f"/runs/tenant/{tenant}", headers=auth("vera"))
    assert status.status_code == 404, status.text  # past the role check: Temporal knows no such run
    term = await http.get(f"/tenants/{tenant}/term", headers=auth("vera"))
    assert term.status_code == 404 and "has no lifecycle" in term.json()["error"], term.text
    unchecked = {"/runs/onboarding", f"/tenants/{tenant}/change"}  # an admin's would start a run, read a cluster
    writes = {
        "approver": [
            (f"/runs/tenant/{tenant}/gates/approve_plan", {"plan_hash": "0" * 16}),
            (f"/runs/tenant/{tenant}/gates/reject_plan", {"reason": "no"}),
            (f"/runs/tenant/{tenant}/gates/smoke_failed", {"choice": "rerun"}),
            (f"/runs/offboard/{tenant}/gates/confirm_purge", {}),
            (f"/runs/tenant/{tenant}/gates/retry_rollback", {}),
            (f"/runs/lifecycle/{tenant}/gates/approve_plan", {"plan_hash": "0" * 16}),
        ],
        "requester": [
            (f"/tenants/{tenant}/change", contract),
            (f"/tenants/{tenant}/renew", {"days": 30}),
            (f"/tenants/{tenant}/offboarding", {"purge_data": True}),
            ("/runs/onboarding", contract),
            (f"/runs/tenant/{tenant}/cancel", None),
        ],
    }
    for role, requests in writes.items():
        for path, body in requests:
            refused = await http.post(path, json=body, headers=auth("vera"))
            target = "any tenant or worker cluster" if path == "/runs/onboarding" else f"tenant {tenant}"
            assert refused_for(refused, role, target), (path, refused.text)
            assert "vera's token grants viewer:*" in refused.json()["error"]
            if path in unchecked:
                continue
            admitted = await http.post(path, json=body, headers=auth("reviewer"))
            assert admitted.status_code == 404, (path, admitted.text)  # past the role check: no such run


async def test_a_requester_of_tenant_a_is_refused_on_tenant_b_and_approvers_only_answer_their_tenants(
    served: Served,
) -> None:
    http, api = served.http, served.api
    a, b = slug("a"), slug("b")
    mine = await onboard(http, a, "alice")
    assert mine.status_code == 201, mine.text
    other = await onboard(http, b, "alice")
    assert refused_for(other, "requester", f"tenant {b}"), other.text
    assert "add requester:" + b in other.json()["error"], "the fix names the grant that would allow it"
    theirs = await onboard(http, b, "reviewer")
    assert theirs.status_code == 201, theirs.text
    try:
        contract_b = example_tenant(b).model_dump(mode="json")
        for path, body in (
            (f"/tenants/{b}/change", contract_b),
            (f"/tenants/{b}/renew", {"days": 30}),
            (f"/tenants/{b}/offboarding", {}),
            (f"/runs/tenant/{b}/cancel", None),
        ):
            refused = await http.post(path, json=body, headers=auth("alice"))
            assert refused_for(refused, "requester", f"tenant {b}"), (path, refused.text)
        assert (await http.get(f"/runs/tenant/{a}", headers=auth("alice"))).status_code == 200, "requesters view"
        assert refused_for(await http.get(f"/runs/tenant/{b}", headers=auth("alice")), "viewer", f"tenant {b}")

        status = await wait_for_stage(api, api.handle(f"tenant/{b}"), "gate:approve_plan")
        gate = f"/runs/tenant/{b}/gates/approve_plan"
        by_carol = await http.post(gate, json={"plan_hash": status.plan_hash}, headers=auth("carol"))
        assert refused_for(by_carol, "approver", f"tenant {b}"), by_carol.text
        own_gate = f"/runs/tenant/{a}/gates/approve_plan"
        by_alice = await http.post(own_gate, json={"plan_hash": "0" * 16}, headers=auth("alice"))
        assert refused_for(by_alice, "approver", f"tenant {a}"), "a requester does not approve"
        by_bob = await http.post(gate, json={"plan_hash": status.plan_hash}, headers=auth("bob"))
        assert by_bob.status_code == 200 and by_bob.json()["answer"].endswith("approved by bob"), by_bob.text

        listed = await http.get("/runs", params={"limit": 1000}, headers=auth("alice"))
        ids = {run["id"] for run in listed.json()}
        assert f"tenant/{a}" in ids and f"tenant/{b}" not in ids, ids
        assert all(run_id.split("/", 1)[1].startswith("tenant-a") for run_id in ids), ids
        filtered = await http.get("/runs", params={"tenant": b}, headers=auth("alice"))
        assert filtered.status_code == 200 and filtered.json() == []
        everything = await http.get("/runs", params={"tenant": b}, headers=auth("reviewer"))
        assert [run["id"] for run in everything.json()] == [f"tenant/{b}"]
    finally:
        for run_id in (f"tenant/{a}", f"tenant/{b}"):
            with contextlib.suppress(RPCError):  # b has completed
                await api.handle(run_id).terminate("test done")


async def test_worker_clusters_need_roles_over_their_own_pattern(served: Served) -> None:
    http = served.http
    worker = ENROLLMENT.model_copy(update={"worker_name": f"w{uuid.uuid4().hex[:6]}"})
    target = f"worker cluster workerclusters/{worker.tenant_namespace}/{worker.worker_name}"
    decommission = f"/workerclusters/{worker.tenant_namespace}/{worker.worker_name}/decommission"
    enroll = await http.post("/runs/enrollment", json=worker.model_dump(mode="json"), headers=auth("alice"))
    assert refused_for(enroll, "requester", target), "a tenant pattern covers no worker cluster"
    assert refused_for(await http.post(decommission, headers=auth("alice")), "requester", target)
    allowed = await http.post(decommission, headers=auth("wanda"))
    assert allowed.status_code == 404 and "send the contract" in allowed.json()["error"], allowed.text
    tenant = await onboard(http, slug("w"), "wanda")
    assert tenant.status_code == 403, "a worker cluster pattern covers no tenant"


async def test_a_token_removed_from_the_file_stops_working_without_a_restart(served: Served) -> None:
    http, run = served.http, f"/runs/tenant/{slug('r')}"
    assert (await http.get(run, headers=auth("vera"))).status_code == 404
    write_tokens(served.token_file, "reviewer")
    revoked = await http.get(run, headers=auth("vera"))
    assert (
        revoked.status_code == 401 and "unknown bearer token: it is not in the token file" in revoked.json()["error"]
    ), revoked.text
    assert (await http.get(run, headers=auth("reviewer"))).status_code == 404, "the others still work"
    served.token_file.write_text(f"{MADE['reviewer'][1]}\n{MADE['vera'][1].rsplit(' ', 1)[0]}\n")
    broken = await http.get(run, headers=auth("reviewer"))
    assert broken.status_code == 503, broken.text
    assert "line 2: no roles for vera: append ROLE:PATTERN" in broken.json()["error"], "names the line and the fix"
    write_tokens(served.token_file, "reviewer", "vera")
    assert (await http.get(run, headers=auth("vera"))).status_code == 404, "a token added works at once"


async def test_only_the_bearer_scheme_is_accepted(served: Served) -> None:
    http, run, token = served.http, f"/runs/tenant/{slug('t')}", MADE["vera"][0]
    bare = await http.get(run, headers={"Authorization": token})
    assert bare.status_code == 401 and "must be `Bearer <token>`" in bare.json()["error"], bare.text
    assert bare.headers["WWW-Authenticate"] == "Bearer"
    basic = await http.get(run, headers={"Authorization": f"Basic {token}"})
    assert basic.status_code == 401 and "Bearer" in basic.json()["error"]
    missing = await http.get(run)
    assert missing.status_code == 401 and "no Authorization header" in missing.json()["error"]
    assert (await http.get(run, headers={"Authorization": f"bearer {token}"})).status_code == 404, "RFC 7235: any case"


async def test_malformed_json_is_a_400_naming_the_problem(served: Served) -> None:
    http, tenant = served.http, slug("a")
    truncated = await http.post("/runs/onboarding", content=b'{"slug": ', headers=auth("alice"))
    assert truncated.status_code == 400 and "request body: not JSON (Expecting value" in truncated.json()["error"]
    array = await http.post(f"/tenants/{tenant}/renew", content=b"[30]", headers=auth("alice"))
    assert array.status_code == 400 and "expected a JSON object, not list" in array.json()["error"], array.text


async def test_only_an_admin_cancels_a_tenants_lifecycle(served: Served, dev_env: WorkflowEnvironment) -> None:
    """Cancelling ``lifecycle/<slug>`` ends the watch over the term (the tenant would never expire): a requester of
    the tenant, who may cancel its other runs, is refused; an admin is not."""
    http, tenant = served.http, slug("a")
    end = await dev_env.get_current_time() + timedelta(days=365)
    lifecycle = await dev_env.client.start_workflow(  # no worker polls this queue: the run only has to exist
        TenantLifecycle.run,
        LifecycleInput(contract=example_tenant(tenant), term_end=end),
        id=lifecycle_id(tenant),
        task_queue=f"nobody-{tenant}",
    )
    try:
        refused = await http.post(f"/runs/{lifecycle.id}/cancel", headers=auth("alice"))
        assert refused_for(refused, "admin", f"tenant {tenant}"), refused.text
        assert "(or admin)" not in refused.json()["error"]
        assert (await lifecycle.describe()).status == WorkflowExecutionStatus.RUNNING, "the refusal cancelled nothing"
        other = await http.post(f"/runs/tenant/{tenant}/cancel", headers=auth("alice"))
        assert other.status_code == 404, other.text  # past the role check: her requester role covers other runs
        cancelled = await http.post(f"/runs/{lifecycle.id}/cancel", headers=auth("reviewer"))
        assert cancelled.status_code == 202, cancelled.text
    finally:
        await lifecycle.terminate("test over")
