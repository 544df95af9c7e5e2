"""Two tenants racing for one username: the one whose create meets the other's new account (created between its
lookup and its create) fails with the Conflict naming the user and its tenant, alone (not Authentik's bare 400)."""

from __future__ import annotations

import pytest
from identity_harness import IdentityLab, make_contract, run_activity
from temporalio.exceptions import ApplicationError

from tenantflow.activities.common.authentik_client import AuthentikClient
from tenantflow.activities.identity import steps as identity
from tenantflow.activities.identity.numbers import ldap_provider, require_group
from tenantflow.models.onboarding import StepInput
from tenantflow.models.tenant import TenantContract

pytestmark = pytest.mark.ldap


def create_after_a_stale_lookup(contract: TenantContract) -> None:
    """The create of ``identity.users`` for the contract's first user, whose lookup found no account."""
    with AuthentikClient.from_settings() as ak:
        group, gid = require_group(ak, contract.slug, ldap_provider(ak))
        identity._ensure_user(ak, contract.users[0], None, group, gid)


async def test_a_username_taken_between_the_lookup_and_the_create_is_a_conflict_naming_it(
    with_parent: IdentityLab,
) -> None:
    tenant_a, tenant_b = make_contract("tenant-a", ("alice",)), make_contract("tenant-b", ("alice",))
    for contract in (tenant_a, tenant_b):
        await run_activity(identity.ensure_group, StepInput(contract=contract), workflow_id=f"tenant/{contract.slug}")
    await run_activity(identity.ensure_users, StepInput(contract=tenant_a), workflow_id="tenant/tenant-a")
    with pytest.raises(ApplicationError) as caught:
        await run_activity(create_after_a_stale_lookup, tenant_b, workflow_id="tenant/tenant-b")
    assert caught.value.type == "Conflict", caught.value
    assert caught.value.__suppress_context__, "Authentik's 400 would be reported as the Conflict's cause"
    assert caught.value.message == "Authentik user alice belongs to tenant tenant-a; choose another username"
    alice = await with_parent.user("alice")
    assert alice["is_active"] is True and alice["groups"] == [(await with_parent.group("tenant-a") or {})["pk"]]
