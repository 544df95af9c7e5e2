"""Identity activities against the Authentik stand-in (real HTTP) and the real slapd it syncs into."""

from __future__ import annotations

import asyncio

import pytest
from identity_harness import IdentityLab, make_contract, run_activity
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from tenantflow.activities.common.authentik_client import CREATED_BY
from tenantflow.activities.identity import steps as identity
from tenantflow.lab.authentik.versions import AUTHENTIK_2024_10, AUTHENTIK_2025_2, AUTHENTIK_2025_10, AUTHENTIK_2025_12
from tenantflow.models.onboarding import Facts, StepInput, StepResult, UndoInput
from tenantflow.models.results import EnsureResult, Outcome
from tenantflow.starter.devserver import free_port

pytestmark = pytest.mark.ldap


async def apply_identity(inp: StepInput) -> tuple[StepResult, StepResult, StepResult]:
    group = await run_activity(identity.ensure_group, inp)
    users = await run_activity(identity.ensure_users, inp.model_copy(update={"facts": group.facts}))
    verified = await run_activity(identity.verify_ldap, inp.model_copy(update={"facts": users.facts}))
    return group, users, verified


async def test_group_and_users_created_and_resolve_through_ldap(with_parent: IdentityLab) -> None:
    contract = make_contract()
    inp = StepInput(contract=contract, run_id="tenant/tenant-foo")
    preflight = await run_activity(identity.preflight, inp)
    assert [f.message for f in preflight.findings if not f.ok] == []
    assert await with_parent.writes() == 0

    group, users, verified = await apply_identity(inp)
    assert [r.outcome for r in group.results] == [Outcome.created]
    assert [r.outcome for r in users.results] == [Outcome.created] * 3

    ak_group = await with_parent.group("tenant-foo")
    assert ak_group is not None
    parent = await with_parent.group("tenants")
    assert parent is not None and ak_group["parents"] == [parent["pk"]]
    gid = group.facts.group_gid
    assert gid == 4000 + ak_group["num_pk"]
    assert ak_group["attributes"] == {"tenant_slug": "tenant-foo", "gidNumber": str(gid), CREATED_BY: "test"}
    assert sorted(u["username"] for u in ak_group["users_obj"]) == ["alice", "bob", "carol"]
    for user in contract.users:
        record = await with_parent.user(user.username)
        assert record["attributes"] == {"ssh_keys": "\n".join(user.ssh_keys), "gidNumber": str(gid), CREATED_BY: "test"}
        assert (record["name"], record["email"], record["is_active"]) == (user.name, user.email, True)

    facts = verified.facts
    assert facts.group_pk == ak_group["pk"]
    assert {u.gid_number for u in facts.users.values()} == {gid}
    assert len({u.uid_number for u in facts.users.values()}) == 3
    assert verified.findings[0].ok


async def test_second_run_makes_zero_writes(with_parent: IdentityLab) -> None:
    inp = StepInput(contract=make_contract(), run_id="tenant/tenant-foo")
    first = await apply_identity(inp)
    await with_parent.reset_journal()
    second = await apply_identity(inp)
    assert [r.outcome for step in second for r in step.results] == [Outcome.unchanged] * 4
    assert second[2].facts == first[2].facts
    plan = await run_activity(identity.plan, inp)
    assert {s.action.value for s in plan} == {"unchanged"}
    assert await with_parent.writes() == 0


async def test_verify_fails_clearly_when_a_gid_is_broken(with_parent: IdentityLab) -> None:
    inp = StepInput(contract=make_contract(), run_id="tenant/tenant-foo")
    _, users, _ = await apply_identity(inp)
    bob = await with_parent.user("bob")
    await with_parent.patch(f"/core/users/{bob['pk']}/", {"attributes": {"ssh_keys": "x"}})
    with pytest.raises(ApplicationError) as caught:
        await run_activity(identity.verify_ldap, inp.model_copy(update={"facts": users.facts}))
    err = caught.value
    assert err.type == "InvariantBroken" and err.non_retryable
    assert "still failed after 2 s (LDAP_VERIFY_BUDGET_S)" in err.message
    assert f"bob has gidNumber {2000 + bob['pk']}, not the tenant gid {users.facts.group_gid}" in err.message
    assert "property mapping is broken" in err.message
    assert "alice" not in err.message


async def test_undo_deactivates_users_and_removes_the_empty_group(with_parent: IdentityLab) -> None:
    contract = make_contract()
    inp = StepInput(contract=contract, run_id="tenant/tenant-foo")
    group, users, _ = await apply_identity(inp)
    undone = await run_activity(
        identity.undo, UndoInput(contract=contract, facts=users.facts, step="users", results=users.results)
    )
    assert [r.outcome for r in undone] == [Outcome.updated] * 3
    for name in contract.usernames:
        record = await with_parent.user(name)
        assert record["is_active"] is False and record["groups"] == []
    undone_group = await run_activity(
        identity.undo, UndoInput(contract=contract, facts=users.facts, step="group", results=group.results)
    )
    assert [r.outcome for r in undone_group] == [Outcome.deleted]
    assert await with_parent.group("tenant-foo") is None

    await with_parent.reset_journal()
    again = [
        await run_activity(
            identity.undo, UndoInput(contract=contract, facts=users.facts, step=step, results=result.results)
        )
        for step, result in (("users", users), ("group", group))
    ]
    assert {r.outcome for batch in again for r in batch} == {Outcome.absent}
    assert await with_parent.writes() == 0


async def test_undo_keeps_a_created_group_that_has_other_members(with_parent: IdentityLab) -> None:
    contract = make_contract(usernames=("alice",))
    inp = StepInput(contract=contract, run_id="tenant/tenant-foo")
    group, _, _ = await apply_identity(inp)
    dave = await with_parent.post("/core/users/", {"username": "dave", "name": "Dave"})
    await with_parent.post(f"/core/groups/{group.facts.group_pk}/add_user/", {"pk": dave["pk"]})
    undone = await run_activity(
        identity.undo, UndoInput(contract=contract, facts=group.facts, step="group", results=group.results)
    )
    assert undone[0].outcome is Outcome.unchanged
    assert await with_parent.group("tenant-foo") is not None


async def test_existing_user_is_patched_and_restored_by_undo(with_parent: IdentityLab) -> None:
    contract = make_contract(usernames=("alice",), adopt=("alice",))
    before = await with_parent.post(
        "/core/users/", {"username": "alice", "name": "Old Name", "attributes": {"department": "ml"}}
    )
    inp = StepInput(contract=contract, run_id="tenant/tenant-foo")
    approved = [s for s in await run_activity(identity.plan, inp) if s.kind == "User"]  # her adopt line
    _, users, _ = await apply_identity(inp.model_copy(update={"adoptions": approved}))
    assert users.results[0].outcome is Outcome.updated
    patched = await with_parent.user("alice")
    assert patched["name"] == "Alice Researcher" and patched["attributes"]["department"] == "ml"
    await run_activity(
        identity.undo, UndoInput(contract=contract, facts=users.facts, step="users", results=users.results)
    )
    restored = await with_parent.user("alice")
    assert (restored["name"], restored["attributes"], restored["groups"], restored["is_active"]) == (
        before["name"],
        before["attributes"],
        [],
        True,
    )


async def unnumbered_group(lab: IdentityLab) -> int:
    """Group tenant-foo under the platform group without a gidNumber; the gid the provider would give it."""
    parent = await lab.group("tenants")
    assert parent is not None
    ours = await lab.post(
        "/core/groups/", {"name": "tenant-foo", "parents": [parent["pk"]], "attributes": {"tenant_slug": "tenant-foo"}}
    )
    return 4000 + int(ours["num_pk"])


async def test_gid_moves_past_a_taken_number(with_parent: IdentityLab) -> None:
    default_gid = await unnumbered_group(with_parent)
    await with_parent.post(
        "/core/groups/",
        {"name": "tenant-bar", "attributes": {"tenant_slug": "tenant-bar", "gidNumber": str(default_gid)}},
    )
    result = await run_activity(identity.ensure_group, StepInput(contract=make_contract(), run_id="r"))
    assert result.results[0].outcome is Outcome.updated
    assert result.facts.group_gid == default_gid + 1
    assert (await with_parent.group("tenant-foo") or {})["attributes"]["gidNumber"] == str(default_gid + 1)


async def test_gid_moves_past_the_gid_a_former_tenants_user_keeps(with_parent: IdentityLab) -> None:
    """A rolled-back tenant's users stay, deactivated, with its group's gid as their attribute: a new
    group must not take that number (the directory would show both as owners of the same files)."""
    default_gid = await unnumbered_group(with_parent)
    await with_parent.post(
        "/core/users/",
        {"username": "former", "name": "Former", "is_active": False, "attributes": {"gidNumber": str(default_gid)}},
    )
    result = await run_activity(identity.ensure_group, StepInput(contract=make_contract(), run_id="r"))
    assert result.facts.group_gid == default_gid + 1
    again = await run_activity(identity.ensure_group, StepInput(contract=make_contract(), run_id="r"))
    assert again.results[0].outcome is Outcome.unchanged


async def test_preflight_names_each_problem_and_writes_nothing(identity_lab: IdentityLab) -> None:
    await identity_lab.post("/core/groups/", {"name": "tenant-foo", "attributes": {"tenant_slug": "tenant-bar"}})
    bar = await identity_lab.post("/core/groups/", {"name": "tenant-bar", "attributes": {"tenant_slug": "tenant-bar"}})
    await identity_lab.post("/core/users/", {"username": "bob", "name": "Bob", "groups": [bar["pk"]]})
    await identity_lab.reset_journal()
    result = await run_activity(identity.preflight, StepInput(contract=make_contract()))
    failed = {f.check: f for f in result.findings if not f.ok}
    assert set(failed) == {"identity.parent_group", "identity.group", "identity.username"}
    assert "'tenants' does not exist" in failed["identity.parent_group"].message
    assert "tenant_slug='tenant-bar'" in failed["identity.group"].message
    assert failed["identity.username"].message == "username bob is taken by a user of tenant tenant-bar"
    assert all(f.fix for f in failed.values())
    assert await identity_lab.writes() == 0


async def test_preflight_reports_a_bad_token_and_a_dead_outpost(
    identity_lab: IdentityLab, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tenantflow.activities.common.settings import settings

    monkeypatch.setenv("AUTHENTIK_TOKEN", "wrong")
    monkeypatch.setenv("LDAP_BIND_PASSWORD", "wrong")
    settings.cache_clear()
    result = await run_activity(identity.preflight, StepInput(contract=make_contract()))
    failed = {f.check: f.message for f in result.findings if not f.ok}
    assert "HTTP 403" in failed["identity.authentik"]
    assert "refused the bind" in failed["identity.ldap_outpost"]
    assert "wrong" not in " ".join(failed.values())


async def test_an_outpost_that_does_not_answer_fails_the_preflight_attempt_to_be_retried(
    identity_lab: IdentityLab, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing listens on the outpost's port: the attempt fails retryably, as for a 5xx from Authentik, instead of a
    finding that would refuse an approved run during its re-plan before the first write."""
    from tenantflow.activities.common.settings import settings

    monkeypatch.setenv("LDAP_URL", f"ldap://127.0.0.1:{free_port()}")
    settings.cache_clear()
    with pytest.raises(ApplicationError) as raised:
        await run_activity(identity.preflight, StepInput(contract=make_contract()))
    assert raised.value.type == "Unavailable" and not raised.value.non_retryable, raised.value
    assert "is unreachable" in str(raised.value)


async def test_a_base_dn_the_outpost_does_not_serve_is_a_finding_naming_the_setting(
    identity_lab: IdentityLab, monkeypatch: pytest.MonkeyPatch
) -> None:
    """slapd answers noSuchObject for ``ou=users`` under a base it does not hold: a setting to fix, not a blip."""
    from tenantflow.activities.common.settings import settings

    monkeypatch.setenv("LDAP_BASE_DN", "dc=nowhere,dc=example")
    settings.cache_clear()
    result = await run_activity(identity.preflight, StepInput(contract=make_contract()))
    failed = {f.check: f.message for f in result.findings if not f.ok}
    assert "LDAPNoSuchObjectResult" in failed["identity.ldap_outpost"], failed
    assert "LDAP_BASE_DN (dc=nowhere,dc=example)" in failed["identity.ldap_outpost"], failed


async def test_a_username_authentik_already_knows_is_refused_unless_adopted(with_parent: IdentityLab) -> None:
    await with_parent.post("/core/users/", {"username": "bob", "name": "Old Bob", "is_active": False})
    refused = await run_activity(identity.preflight, StepInput(contract=make_contract()))
    [failed] = [f for f in refused.findings if not f.ok]
    assert failed.check == "identity.username" and failed.severity == "error"
    assert "bob is already an Authentik account (inactive" in failed.message
    assert "adopt_existing: true for bob" in failed.fix

    adopting = StepInput(contract=make_contract(adopt=("bob",)))
    allowed = await run_activity(identity.preflight, adopting)
    assert [(f.check, f.severity) for f in allowed.findings if not f.ok] == [("identity.adopted_home", "warning")]
    plan = {s.name: s for s in await run_activity(identity.plan, adopting)}
    assert plan["bob"].action.value == "adopt" and "True" in str(plan["bob"].detail["adopt_existing"])
    assert plan["alice"].action.value == "create"


async def test_a_user_another_tenant_made_after_the_plan_is_never_touched_by_our_undo(with_parent: IdentityLab) -> None:
    """Issue 13: B plans alice as new; A creates alice; B's apply fails and B's undo leaves A's alice alone."""
    tenant_a, tenant_b = make_contract("tenant-a", ("alice",)), make_contract("tenant-b", ("alice", "bob"))
    plan_b = await run_activity(identity.plan, StepInput(contract=tenant_b), workflow_id="onboard/tenant-b")
    assert [s.action.value for s in plan_b if s.kind == "User"] == ["create", "create"]
    for contract, workflow in ((tenant_a, "onboard/tenant-a"), (tenant_b, "onboard/tenant-b")):
        await run_activity(identity.ensure_group, StepInput(contract=contract), workflow_id=workflow)
    a_users = await run_activity(identity.ensure_users, StepInput(contract=tenant_a), workflow_id="onboard/tenant-a")
    assert [r.outcome for r in a_users.results] == [Outcome.created]
    with pytest.raises(ApplicationError) as caught:
        await run_activity(identity.ensure_users, StepInput(contract=tenant_b), workflow_id="onboard/tenant-b")
    assert caught.value.type == "Conflict" and "tenant tenant-a" in caught.value.message

    planned = [
        EnsureResult(layer="identity", kind="User", name=name, outcome=Outcome.created) for name in tenant_b.usernames
    ]
    undone = await run_activity(
        identity.undo,
        UndoInput(contract=tenant_b, facts=Facts(), step="users", results=planned),
        workflow_id="onboard/tenant-b",
    )
    assert [r.outcome for r in undone] == [Outcome.unchanged, Outcome.absent]
    assert "not created by this run" in str(undone[0].data)
    alice = await with_parent.user("alice")
    group_a = await with_parent.group("tenant-a")
    assert alice["is_active"] is True and group_a is not None and group_a["pk"] in alice["groups"]


async def test_undo_of_a_planned_creation_undoes_what_this_workflow_made(with_parent: IdentityLab) -> None:
    contract = make_contract(usernames=("alice",))
    await run_activity(identity.ensure_group, StepInput(contract=contract), workflow_id="onboard/tenant-foo")
    await run_activity(identity.ensure_users, StepInput(contract=contract), workflow_id="onboard/tenant-foo")
    planned = [EnsureResult(layer="identity", kind="User", name="alice", outcome=Outcome.created)]
    await run_activity(
        identity.undo,
        UndoInput(contract=contract, facts=Facts(), step="users", results=planned),
        workflow_id="onboard/tenant-foo",
    )
    assert (await with_parent.user("alice"))["is_active"] is False


async def test_the_tenants_offboarding_undoes_its_group_and_members_only(with_parent: IdentityLab) -> None:
    contract, other = make_contract(usernames=("alice", "bob")), make_contract("tenant-bar", ("carol",))
    for c in (contract, other):
        inp = StepInput(contract=c)
        await run_activity(identity.ensure_group, inp, workflow_id=f"onboard/{c.slug}")
        await run_activity(identity.ensure_users, inp, workflow_id=f"onboard/{c.slug}")
    teardown = [
        EnsureResult(layer="identity", kind="User", name=name, outcome=Outcome.created)
        for name in ("alice", "bob", "carol")
    ]
    for step, results in (
        ("users", teardown),
        ("group", [EnsureResult(layer="identity", kind="Group", name=contract.slug, outcome=Outcome.created)]),
    ):
        await run_activity(
            identity.undo,
            UndoInput(contract=contract, facts=Facts(), step=step, results=results),
            workflow_id="offboard/tenant-foo",
            workflow_type="TenantOffboarding",
        )
    assert [(await with_parent.user(n))["is_active"] for n in ("alice", "bob", "carol")] == [False, False, True]
    assert await with_parent.group("tenant-foo") is None and await with_parent.group("tenant-bar") is not None


@pytest.mark.parametrize(
    ("authentik_version", "field"),
    [
        (AUTHENTIK_2024_10, "parent"),
        (AUTHENTIK_2025_2, "parent"),
        (AUTHENTIK_2025_10, "parent"),
        (AUTHENTIK_2025_12, "parents"),
    ],
)
async def test_the_group_is_nested_through_the_field_the_release_serves(with_parent: IdentityLab, field: str) -> None:
    """The field is read from how the server serializes the platform group, not from the year: ``parent`` up to
    2025.10 (2025 releases included), ``parents`` from 2025.12; a second run writes nothing."""
    inp = StepInput(contract=make_contract(usernames=("alice",)))
    group, _, _ = await apply_identity(inp)
    assert [r.outcome for r in group.results] == [Outcome.created]
    ak_group = await with_parent.group("tenant-foo")
    parent = await with_parent.group("tenants")
    assert ak_group is not None and parent is not None
    other = "parents" if field == "parent" else "parent"
    assert ak_group[field] == (parent["pk"] if field == "parent" else [parent["pk"]]) and other not in ak_group
    await with_parent.reset_journal()
    again = await run_activity(identity.ensure_group, inp)
    assert [r.outcome for r in again.results] == [Outcome.unchanged]
    assert await with_parent.writes() == 0
    plan = await run_activity(identity.plan, inp)
    assert plan[0].detail["nested_by"] == field


async def test_verify_waits_heartbeating_for_an_outpost_that_serves_the_fix_late(with_parent: IdentityLab) -> None:
    """A cached outpost serves changes late: verify keeps probing within its budget instead of failing."""
    inp = StepInput(contract=make_contract(usernames=("alice", "bob")))
    _, users, _ = await apply_identity(inp)
    bob = await with_parent.user("bob")
    good = bob["attributes"]
    await with_parent.patch(f"/core/users/{bob['pk']}/", {"attributes": {"ssh_keys": "x"}})
    heartbeats: list[object] = []

    def verify() -> StepResult:
        env = ActivityEnvironment()
        env.on_heartbeat = lambda *details: heartbeats.append(details)
        result: StepResult = env.run(identity.verify_ldap, inp.model_copy(update={"facts": users.facts}))
        return result

    task = asyncio.create_task(asyncio.to_thread(verify))
    while not heartbeats:
        await asyncio.sleep(0.05)
    await with_parent.patch(f"/core/users/{bob['pk']}/", {"attributes": good})
    verified = await task
    assert verified.findings[0].ok
    assert "problems" in str(heartbeats[0])


def test_the_default_verify_budget_outlasts_an_outpost_cache_refresh() -> None:
    from tenantflow.activities.common.settings import ServiceSettings
    from tenantflow.models.runbook import ONBOARDING

    budget = ServiceSettings().ldap_verify_budget_s
    assert budget >= 300
    [step] = [s for s in ONBOARDING if s.name == "identity.verify_ldap"]
    assert step.timeout.total_seconds() > budget
