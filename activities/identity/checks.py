"""Identity checks: at preflight Authentik reachable and configured, usernames free or adopted, the LDAP outpost; at
write time the refusals of ``identity.users`` before it writes (an account that is not ours, one the approved plan
does not adopt, or an adopted one that changed since the approval)."""

from __future__ import annotations

from temporalio.exceptions import ApplicationError

from tenantflow.activities.common import ldap_check
from tenantflow.activities.common.adoption import adopted_by_this_run, changed_since_approval, proven
from tenantflow.activities.common.authentik_client import AuthentikClient, User
from tenantflow.activities.common.errors import fail, transient
from tenantflow.activities.common.fanout import fan_out
from tenantflow.activities.common.settings import settings
from tenantflow.activities.identity.numbers import (
    other_tenant,
    tenant_of,
)
from tenantflow.models import runbook
from tenantflow.models.plan import PlanStep
from tenantflow.models.results import Finding, Severity
from tenantflow.models.tenant import TenantContract, TenantUser


def authentik_findings(ak: AuthentikClient, contract: TenantContract) -> list[Finding]:
    slug, parent_name = contract.slug, settings().authentik_parent_group
    providers = ak.ldap_providers.list()
    findings = [
        Finding.of_problem(
            "identity.ldap_provider",
            None if providers else "Authentik has no LDAP provider",
            f"LDAP provider {providers[0].name if providers else ''} serves {contract.slug}",
            "deploy the LDAP provider and outpost (runbook 2c) before onboarding tenants",
        )
    ]
    parent = ak.groups.named(parent_name)
    findings.append(
        Finding.of_problem(
            "identity.parent_group",
            None if parent else f"the platform group {parent_name!r} does not exist",
            f"parent group {parent_name} exists",
            f"create the Authentik group {parent_name!r} (platform state, parent of every tenant group) and re-run",
        )
    )
    group = ak.groups.named(slug)
    owner = group.attributes.get("tenant_slug") if group else None
    problem = None
    if group is not None and owner != slug:
        problem = (
            f"Authentik group {slug} already exists with tenant_slug={owner!r}"
            if owner
            else f"Authentik group {slug} already exists and is not marked as a tenant group"
        )
    findings.append(
        Finding.of_problem(
            runbook.IDENTITY_GROUP.name,
            problem,
            f"group {slug} is free or already ours",
            f"rename or remove the existing group {slug}, or set its attribute tenant_slug={slug} to adopt it",
        )
    )
    found = fan_out(ak.users.named, contract.usernames, "preflight")
    for user, existing in zip(contract.users, found, strict=True):
        findings.extend(username_findings(existing, user, slug))
    return findings


def account_state(existing: User) -> str:
    return f"{'active' if existing.is_active else 'inactive'}, pk {existing.pk}"


def username_findings(existing: User | None, user: TenantUser, slug: str) -> list[Finding]:
    """A username Authentik already knows is refused unless it is this tenant's or ``adopt_existing`` says so."""
    name = user.username
    if existing is None or tenant_of(existing, slug):
        return [Finding.passed("identity.username", f"username {name} is free or already ours")]
    other = other_tenant(existing, slug)
    if other:
        return [
            Finding.failed(
                "identity.username",
                f"username {name} is taken by a user of tenant {other}",
                f"choose another username than {name} in the contract (adopt_existing never takes a "
                "user from another tenant)",
            )
        ]
    if not user.adopt_existing:
        return [
            Finding.failed(
                "identity.username",
                f"username {name} is already an Authentik account "
                f"({account_state(existing)}, in no tenant); tenantflow does not take it over",
                f"set adopt_existing: true for {name} in the contract if that account is this person's, "
                "or choose another username",
            )
        ]
    return [
        Finding.passed(
            "identity.username",
            f"username {name}: the existing Authentik account "
            f"({account_state(existing)}) is adopted (adopt_existing: true)",
        ),
        Finding.failed(
            check="identity.adopted_home",
            severity=Severity.warning,
            message=f"{name} reuses an existing Authentik account and keeps its uid; a home directory "
            f"/home/{name} left by an earlier tenant must not be handed over",
            fix=f"storage: create /home/{name} afresh for {slug} (never reuse another tenant's), or "
            "archive the old one first",
        ),
    ]


def ldap_finding() -> Finding:
    """The outpost's bind and search as a finding. A transient failure (no connection, busy) fails the attempt, to
    be retried like Authentik's 5xx: as a finding it refused an approved run when the outpost blinked during the
    re-plan before the first write."""
    try:
        entries = ldap_check.probe()
    except ApplicationError as err:
        if transient(err):
            raise
        return Finding.failed(
            "identity.ldap_outpost",
            f"the LDAP outpost does not answer a bind and search: {err}",
            "check the outpost (kubectl -n auth get pods | grep ldap-outpost) and the bind Secret "
            f"{settings().ldap_bind_secret_namespace}/{settings().ldap_bind_secret}",
        )
    return Finding.passed("identity.ldap_outpost", f"LDAP outpost answered (bind + search, {entries} users)")


# -- at write time -------------------------------------------------------------------------------


def foreign_refusal(user: TenantUser, existing: User | None, slug: str) -> ApplicationError | None:
    """The Conflict when ``existing`` (the account named like ``user``) is another tenant's, or not this tenant's
    and not adopted by the contract; None when it may be ensured."""
    if existing is None:
        return None
    other = other_tenant(existing, slug)
    if other:
        return fail("Conflict", f"Authentik user {user.username} belongs to tenant {other}; choose another username")
    if not tenant_of(existing, slug) and not user.adopt_existing:
        return fail(
            "Conflict",
            f"Authentik user {user.username} appeared after the plan ({account_state(existing)}) "
            "and is not this tenant's; re-plan, and set adopt_existing: true for it only if it is this "
            "person's account",
        )
    return None


def changed_refusal(
    line: PlanStep | None, user: TenantUser, existing: User | None, slug: str
) -> ApplicationError | None:
    """The refusal when ``line`` (the approved plan's adoption of ``user``'s account) no longer describes the account:
    it changed, was deleted or joined the tenant's group since the approval; None when it is as approved, when this
    run already adopted it (a retry whose answer was lost) or when the plan adopts nothing for it."""
    if line is None or (existing is not None and adopted_by_this_run(existing) is not None):
        return None
    state = account_state(existing) if existing is not None else ""
    changes = changed_since_approval(line.detail, existing, user, state)
    if existing is not None and tenant_of(existing, slug):
        changes.append(f"group: in no tenant when approved, a member of {slug} now")
    if not changes:
        return None
    return fail(
        "AdoptionRefused",
        f"Authentik user {user.username} changed after the plan adopting it was approved ({'; '.join(changes)}); "
        "nothing was written to it. Fix: start the run again, and approve its plan only if the account as it "
        "shows now is this person's",
    )


def unapproved_refusal(
    line: PlanStep | None, user: TenantUser, existing: User | None, slug: str
) -> ApplicationError | None:
    """The refusal when writing ``user`` would adopt ``existing`` without an approval that names it: the account is
    not the tenant's (no tenantflow marker, not in its group), the approved plan has no adopt line for it (``line``:
    it appeared after the re-plan, whose line said create) and it does not provably belong to the contract's person
    (its email is not the contract's). A run whose step got no adopt lines because it was recorded before they were
    passed (patch ``adoptions-checked-at-write``) cannot be told from that, and is refused the same way: starting
    again shows the account on the plan. None when the account may be written."""
    if line is not None or existing is None or tenant_of(existing, slug) or proven(existing, user):
        return None
    if adopted_by_this_run(existing) is not None:
        return None
    return fail(
        "AdoptionRefused",
        f"Authentik user {user.username} exists ({account_state(existing)}, email {existing.email or 'none'}, in no "
        f"tenant) and the approved plan does not adopt it: it appeared after the plan was made. adopt_existing: true "
        f"takes an account without an approval naming it only when its email is the contract's ({user.email}); "
        "nothing was written. Fix: start the run again so that its plan shows the account with its old and new "
        "values, and approve it only if the account is this person's",
    )
