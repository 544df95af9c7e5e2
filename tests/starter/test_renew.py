"""``tenantflow renew`` (the CLI as a subprocess) and the HTTP API's term routes against a running lifecycle on the
dev server: a renewal waits at the lifecycle's approve_plan gate, and once approved the end moves by exactly the days
asked; bad days are refused, naming the field, before any change; an ended term is refused with the reason. The
renewal is recorded under the identity the caller authenticated as (the CLI's Temporal client identity, the API
token's user), never a name the caller types."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime, timedelta

import pytest
import pytest_asyncio
from temporalio.testing import WorkflowEnvironment

from tenantflow.models.lifecycle import OFFBOARDED_SIGNAL, TermStatus
from tenantflow.starter.client import TenantflowClient
from tenantflow.worker.tokens import TokenTable, new_token
from tests.starter.conftest import http_api, tenantflow, unique_slug
from tests.workflows.contract import example_tenant
from tests.workflows.fakes import FakeWorld
from tests.workflows.lifecycle_harness import notify_sink, start_term, term_worker, wait_renewed

TOKEN, TOKEN_LINE = new_token("svc", ["requester:tenant-*", "approver:tenant-*"])
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest_asyncio.fixture
async def term_api(dev_env: WorkflowEnvironment) -> AsyncIterator[tuple[TenantflowClient, str, datetime]]:
    """A worker running lifecycles, and one lifecycle whose term ends in a year: (api, slug, its end)."""
    slug = unique_slug()
    async with notify_sink() as sink, term_worker(dev_env, FakeWorld(), sink) as api:
        handle, end = await start_term(dev_env, api, example_tenant(slug))
        try:
            yield api, slug, end
        finally:
            await handle.terminate("test done")


async def test_cli_renew_waits_for_approval_then_moves_the_end_and_refuses_bad_days(
    term_api: tuple[TenantflowClient, str, datetime], monkeypatch: pytest.MonkeyPatch
) -> None:
    api, slug, end = term_api
    monkeypatch.setenv("TEMPORAL_IDENTITY", "ops@cli-host")  # the identity the CLI's Temporal client presents
    code, _, err = await tenantflow(api, "renew", slug, "--days", "0")
    assert code == 2 and "--days" in err
    code, _, err = await tenantflow(api, "renew", slug, "--days", "30", "--approver", "mallory")
    assert code == 2 and "--approver" in err, "the renewer is the client's identity, not a name typed"
    code, out, err = await tenantflow(api, "renew", slug, "--days", "30")
    assert code == 0, err
    pending = (await api.term(slug) or pytest.fail("no term")).pending_renewal
    assert pending is not None and (pending.days, pending.requested_by) == (30, "ops@cli-host")
    assert "waits for another person's approval" in out and f"--plan-hash {pending.plan_hash}" in out
    monkeypatch.setenv("TEMPORAL_IDENTITY", "lead@cli-host")
    code, out, err = await tenantflow(api, "approve", f"lifecycle/{slug}", "--plan-hash", pending.plan_hash)
    assert code == 0, err
    renewed = await wait_renewed(api, slug)
    assert renewed.term_end == end + timedelta(days=30)
    assert [(r.days, r.requested_by, r.approver) for r in renewed.renewals] == [(30, "ops@cli-host", "lead@cli-host")]
    code, _, err = await tenantflow(api, "renew", unique_slug(), "--days", "5")
    assert code == 4 and "has no lifecycle" in err


async def test_http_renew_and_term(term_api: tuple[TenantflowClient, str, datetime]) -> None:
    api, slug, end = term_api
    async with http_api(api, TokenTable.parse([TOKEN_LINE])) as http:
        bad = await http.post(f"/tenants/{slug}/renew", json={"days": 0}, headers=AUTH)
        assert bad.status_code == 422 and "days=0" in bad.json()["error"]
        typo = await http.post(f"/tenants/{slug}/renew", json={"dayz": 10}, headers=AUTH)
        assert typo.status_code == 422 and "days" in typo.json()["error"]
        impersonating = await http.post(f"/tenants/{slug}/renew", json={"days": 10, "approver": "ops"}, headers=AUTH)
        assert impersonating.status_code == 403 and "'svc'" in impersonating.json()["error"]
        asked = await http.post(f"/tenants/{slug}/renew", json={"days": 10}, headers=AUTH)
        assert asked.status_code == 200, asked.text
        pending = TermStatus.model_validate_json(asked.text).pending_renewal
        assert pending is not None and pending.requested_by == "svc"
        gate = f"/runs/lifecycle/{slug}/gates/approve_plan"
        approved = await http.post(gate, json={"plan_hash": pending.plan_hash}, headers=AUTH)
        assert approved.status_code == 200, approved.text
        term = await wait_renewed(api, slug)
        assert term.term_end == end + timedelta(days=10), "only the token user's renewal moved the end"
        assert [(r.days, r.approver) for r in term.renewals] == [(10, "svc")]
        missing = await http.post(f"/tenants/{unique_slug()}/renew", json={"days": 10}, headers=AUTH)
        assert missing.status_code == 404
        assert (await http.get(f"/tenants/{slug}/term")).status_code == 401


async def test_an_ended_term_is_not_renewed(dev_env: WorkflowEnvironment) -> None:
    slug = unique_slug()
    async with notify_sink() as sink, term_worker(dev_env, FakeWorld(), sink) as api:
        handle, _ = await start_term(dev_env, api, example_tenant(slug))
        await handle.signal(OFFBOARDED_SIGNAL, f"offboard/{slug}")
        assert (await handle.result()).status == "offboarded"
        code, _, err = await tenantflow(api, "renew", slug, "--days", "5")
        assert code == 4 and "ended (term:offboarded" in err
        async with http_api(api, TokenTable.parse([TOKEN_LINE])) as http:
            refused = await http.post(f"/tenants/{slug}/renew", json={"days": 5}, headers=AUTH)
        assert refused.status_code == 409 and "ended (term:offboarded)" in refused.json()["error"]
