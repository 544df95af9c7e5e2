"""Identity layer (runbook step 2): the tenant's Authentik group and users, checked through the LDAP outpost.

The group ``<slug>`` hangs under the platform group ``tenants`` (settings ``authentik_parent_group``;
it is platform state, so a missing parent fails preflight instead of being created) and carries
``{"tenant_slug": slug, "gidNumber": "<gid>"}``. The gid is explicit, as a string (the outpost ignores
non-string numbers): ``gid_start_number + num_pk`` of the group, moved up past any gid or uid already
in use. Every tenant user gets ``attributes.gidNumber`` = that gid (one primary gid for the tenant),
``attributes.ssh_keys`` (one key per line) and membership of the group. Undo deactivates users and
removes them from the group, never deletes them; the group is deleted only when empty.

The group is nested through ``parent`` (Authentik up to 2025.10) or ``parents`` (later), whichever the server
serializes its groups with (:meth:`AuthentikClient.parent_field`). Users and groups this layer creates carry
the attribute ``tenantflow.io/created-by: <workflow id>``, and undo touches only what it can prove it made
(:mod:`activities.identity.undo`). A username Authentik already knows (active or not) that is not this
tenant's is refused at preflight unless the contract sets ``adopt_existing: true`` for that user; a user
of another tenant is never taken. An adopted account that no longer is as the approved plan line showed it is
refused before any write (:func:`~activities.identity.checks.changed_refusal`), and so is one the approved plan does
not adopt, unless its email is the contract's (:func:`~activities.identity.checks.unapproved_refusal`).
"""

from __future__ import annotations

import itertools
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from tenantflow.activities.common import directory_ids, ldap_check
from tenantflow.activities.common.adoption import ADOPTED, adopted_by_this_run, adoption_detail, give_back, marker
from tenantflow.activities.common.authentik_client import CREATED_BY, AuthentikClient, Group, User
from tenantflow.activities.common.errors import fail, transient
from tenantflow.activities.common.fanout import fan_out
from tenantflow.activities.common.polling import from_poll_interval, poll_until
from tenantflow.activities.common.registered import defn
from tenantflow.activities.common.runs import this_workflow
from tenantflow.activities.common.settings import settings
from tenantflow.activities.identity.checks import (
    account_state,
    authentik_findings,
    changed_refusal,
    foreign_refusal,
    ldap_finding,
    unapproved_refusal,
)
from tenantflow.activities.identity.numbers import (
    choose_gid,
    desired_user,
    ldap_provider,
    require_group,
    string_number,
    tenant_of,
    user_patch,
    user_uid,
)
from tenantflow.activities.identity.undo import tenant_group_pk, undo_group, undo_user
from tenantflow.models import runbook
from tenantflow.models.onboarding import StepInput, StepResult, UndoInput, UserFacts
from tenantflow.models.plan import Action, PlanStep
from tenantflow.models.results import AuthentikGroup, AuthentikUser, EnsureResult, Finding, Outcome
from tenantflow.models.tenant import TenantContract, TenantUser

LAYER = "identity"
PROPERTY_MAPPING_HINT = (
    "If gidNumber is 0 or missing, the property mapping is broken — fix that before "
    "continuing or every file the tenant writes will be owned by nobody:nogroup"
)


# -- preflight and plan --------------------------------------------------------------------------


@defn(runbook.IDENTITY.preflight)
def preflight(inp: StepInput) -> StepResult:
    """Authentik reachable with the token, LDAP outpost healthy, group and usernames free (read-only)."""
    findings = [
        ldap_finding(),
        *ldap_check.tls_findings(),
        *directory_ids.preflight_findings(inp.contract, inp.facts.remove_users),
    ]
    try:
        with AuthentikClient.from_settings() as ak:
            findings.extend(authentik_findings(ak, inp.contract))
    except ApplicationError as err:
        if transient(err):
            raise
        findings.append(
            Finding.failed(
                "identity.authentik",
                f"Authentik API is not usable: {err}",
                "check AUTHENTIK_URL and that the API token is valid and may read users, groups and providers",
            )
        )
    return StepResult(facts=inp.facts, findings=findings)


@defn(runbook.IDENTITY.plan)
def plan(inp: StepInput) -> list[PlanStep]:
    """The group and one step per user, with the action a run would take now."""
    contract = inp.contract
    with AuthentikClient.from_settings() as ak:
        provider = ldap_provider(ak)
        group = ak.groups.named(contract.slug)
        gid = choose_gid(ak, provider, group) if group else None
        group_action = Action.create
        if group is not None:
            same = (
                string_number(group.attributes, "gidNumber") == gid
                and group.attributes.get("tenant_slug") == contract.slug
            )
            group_action = Action.unchanged if same else Action.update
        steps = [
            PlanStep(
                layer=LAYER,
                kind="Group",
                name=contract.slug,
                action=group_action,
                detail={
                    "parent": settings().authentik_parent_group,
                    "nested_by": ak.parent_field() or "the parent group is missing",
                    "tenant_slug": contract.slug,
                    "gidNumber": str(gid) if gid else f"{provider.gid_start_number} + num_pk unless taken",
                },
            )
        ]
        found = fan_out(ak.users.named, contract.usernames, "plan")
        for user, existing in zip(contract.users, found, strict=True):
            action = Action.create
            detail: dict[str, object] = {
                "email": user.email,
                "name": user.name,
                "ssh_keys": len(user.ssh_keys),
                "group": contract.slug,
            }
            if existing is not None and not tenant_of(existing, contract.slug):
                action = Action.adopt
                detail.update(adoption_detail(existing, user, account_state(existing)))
            elif existing is not None:
                member = group is not None and group.pk in existing.groups
                in_sync = gid is not None and member and not user_patch(existing, desired_user(user, gid))[0]
                action = Action.unchanged if in_sync else Action.update
            steps.append(PlanStep(layer=LAYER, kind="User", name=user.username, action=action, detail=detail))
    return steps


# -- apply ---------------------------------------------------------------------------------------


@defn(runbook.IDENTITY_GROUP)
def ensure_group(inp: StepInput) -> StepResult:
    """Group ``<slug>`` under the parent group with tenant_slug and an explicit, collision-free gidNumber."""
    slug = inp.contract.slug
    with AuthentikClient.from_settings() as ak:
        provider = ldap_provider(ak)
        parent = ak.groups.named(settings().authentik_parent_group)
        if parent is None:
            raise fail(
                "NotFound",
                f"the platform group {settings().authentik_parent_group!r} does not exist; "
                "create it in Authentik and re-run",
            )
        field = ak.parent_field() or "parents"
        group = ak.groups.named(slug)
        previous: dict[str, Any] = {}
        if group is None:
            group = ak.groups.create(
                {
                    "name": slug,
                    field: parent.pk if field == "parent" else [parent.pk],
                    "attributes": {"tenant_slug": slug, CREATED_BY: this_workflow()},
                }
            )
            outcome = Outcome.created
        else:
            if group.attributes.get("tenant_slug") != slug:
                raise fail(
                    "Conflict",
                    f"Authentik group {slug} exists with tenant_slug="
                    f"{group.attributes.get('tenant_slug')!r}; it belongs to someone else",
                )
            outcome = Outcome.unchanged
        gid = choose_gid(ak, provider, group)
        patch: dict[str, Any] = {}
        if parent.pk not in group.parent_pks:
            patch[field] = parent.pk if field == "parent" else [*group.parents, parent.pk]
            previous[field] = group.parent if field == "parent" else group.parents
        if group.attributes.get("gidNumber") != str(gid):
            patch["attributes"] = {**group.attributes, "gidNumber": str(gid)}
            previous["attributes"] = group.attributes
        if patch:
            group = ak.groups.patch(group.pk, patch)
            if outcome is Outcome.unchanged:
                outcome = Outcome.updated
        if parent.pk not in group.parent_pks:
            raise fail(
                "Unsupported",
                f"Authentik did not nest group {slug} under {parent.name} through "
                f"{field!r}; check the server version (GET /api/v3/admin/version/)",
            )
        activity.logger.info("identity.group %s: %s (gid %s)", slug, outcome.value, gid)
    data = (
        AuthentikGroup(pk=group.pk, gid=gid, previous=previous)
        if outcome is Outcome.updated
        else AuthentikGroup(pk=group.pk, gid=gid)
    )
    result = EnsureResult(layer=LAYER, kind="Group", name=slug, outcome=outcome, data=data)
    return StepResult(results=[result], facts=inp.facts.model_copy(update={"group_pk": group.pk, "group_gid": gid}))


def _raced(ak: AuthentikClient, user: TenantUser, slug: str) -> ApplicationError | None:
    """After a failed create: the Conflict of :func:`~activities.identity.checks.foreign_refusal` when another run
    created the username since the lookup (two tenants racing for it); None when there is none or it cannot be
    read (the create's error stands)."""
    try:
        now = ak.users.named(user.username)
    except ApplicationError:
        return None
    return foreign_refusal(user, now, slug)


def _ensure_user(
    ak: AuthentikClient, user: TenantUser, existing: User | None, group: Group, gid: int
) -> tuple[User, EnsureResult]:
    """Create ``user``, or bring ``existing`` (already checked by
    :func:`~activities.identity.checks.foreign_refusal`) to the contract."""
    desired = desired_user(user, gid)
    if existing is None:
        attributes = {**desired["attributes"], CREATED_BY: this_workflow()}
        try:
            created = ak.users.create(
                {
                    "username": user.username,
                    **desired,
                    "attributes": attributes,
                    "is_active": True,
                    "groups": [group.pk],
                }
            )
        except ApplicationError:
            if (conflict := _raced(ak, user, group.name)) is None:
                raise
            raise conflict from None
        return created, EnsureResult(
            layer=LAYER,
            kind="User",
            name=user.username,
            outcome=Outcome.created,
            data=AuthentikUser(group_pk=group.pk, pk=created.pk),
        )
    patch, previous = user_patch(existing, desired)
    added = group.pk not in existing.groups
    if not tenant_of(existing, group.name):  # adopted: its marker keeps what is overwritten
        previous.setdefault("attributes", existing.attributes)
        adopted = marker(previous, patch, added)
        patch["attributes"] = {**patch.get("attributes", existing.attributes), ADOPTED: adopted}
    elif not (patch or added) and (earlier := adopted_by_this_run(existing)) is not None:
        previous, added = give_back(existing, "")[0], bool(earlier.get("added_to_group"))  # its answer was lost
        patch = {}
    wrote = {key: patch.get(key, getattr(existing, key)) for key in previous}
    current = ak.users.patch(existing.pk, patch) if patch else existing
    if added and group.pk not in existing.groups:
        ak.add_user(group.pk, existing.pk)
    outcome = Outcome.updated if patch or added or previous else Outcome.unchanged
    data = (
        AuthentikUser(group_pk=group.pk, previous=previous, added_to_group=added, pk=existing.pk, wrote=wrote)
        if outcome is Outcome.updated
        else AuthentikUser(group_pk=group.pk, pk=existing.pk)
    )
    return current, EnsureResult(layer=LAYER, kind="User", name=user.username, outcome=outcome, data=data)


@defn(runbook.IDENTITY_USERS)
def ensure_users(inp: StepInput) -> StepResult:
    """Every contract user with name, email, ssh_keys, the tenant gid, and membership of the group. Every
    account is looked up and checked first (a foreign one, one the approved plan does not adopt and that is not
    provably the person's, or an adopted one that changed since the approval, fails the step before any write),
    then the users are created or updated a few at a time (:mod:`activities.common.fanout`)."""
    contract = inp.contract
    results: list[EnsureResult] = []
    users: dict[str, UserFacts] = dict(inp.facts.users)
    with AuthentikClient.from_settings() as ak:
        provider = ldap_provider(ak)
        group, gid = require_group(ak, contract.slug, provider)
        found = fan_out(ak.users.named, contract.usernames, "lookup")
        approved = {line.name: line for line in inp.adoptions if line.kind == "User"}
        for user, existing in zip(contract.users, found, strict=True):
            if (conflict := foreign_refusal(user, existing, contract.slug)) is not None:
                raise conflict
            line = approved.get(user.username)
            for refusal in (changed_refusal, unapproved_refusal):
                if (refused := refusal(line, user, existing, contract.slug)) is not None:
                    raise refused
        pairs = list(zip(contract.users, found, strict=True))
        ensured = fan_out(lambda pair: _ensure_user(ak, *pair, group, gid), pairs, "users")
        for user, (record, result) in zip(contract.users, ensured, strict=True):
            results.append(result)
            users[user.username] = UserFacts(pk=record.pk, uid_number=user_uid(record, provider), gid_number=gid)
    activity.logger.info(
        "identity.users %s: %s", contract.slug, ", ".join(f"{r.name}={r.outcome.value}" for r in results)
    )
    return StepResult(results=results, facts=inp.facts.model_copy(update={"users": users}))


def ldap_problems(contract: TenantContract, gid: int) -> list[str]:
    """What is wrong with the tenant as the LDAP outpost serves it (empty when consistent)."""
    group_dn = ldap_check.group_dn(contract.slug).lower()
    entries = ldap_check.lookup_users(contract.usernames)
    problems: list[str] = []
    seen: dict[int, str] = {}
    for username, entry in entries.items():
        if entry is None:
            problems.append(f"{username} does not resolve through the LDAP outpost")
            continue
        if not entry.uid_number:
            problems.append(f"{username} has uidNumber 0 or missing")
        elif entry.uid_number in seen:
            problems.append(f"{username} shares uidNumber {entry.uid_number} with {seen[entry.uid_number]}")
        else:
            seen[entry.uid_number] = username
        if not entry.gid_number:
            problems.append(f"{username} has gidNumber 0 or missing")
        elif entry.gid_number != gid:
            problems.append(f"{username} has gidNumber {entry.gid_number}, not the tenant gid {gid}")
        if group_dn not in {dn.lower() for dn in entry.member_of}:
            problems.append(f"{username} is not memberOf {ldap_check.group_dn(contract.slug)}")
    group = ldap_check.lookup_group(contract.slug)
    if group is None or group.gid_number != gid:
        problems.append(f"group {contract.slug} has gidNumber {group.gid_number if group else 'missing'}, not {gid}")
    return problems


def verify_budget_s() -> float:
    """``LDAP_VERIFY_BUDGET_S``, kept 30 s inside the attempt's start-to-close timeout."""
    timeout = activity.info().start_to_close_timeout
    budget = settings().ldap_verify_budget_s
    return min(budget, timeout.total_seconds() - 30) if timeout and timeout.total_seconds() > 60 else budget


@defn(runbook.IDENTITY_VERIFY_LDAP)
def verify_ldap(inp: StepInput) -> StepResult:
    """Every user resolves with non-zero uid/gid, the group's gid for all, distinct uids, memberOf the group."""
    contract = inp.contract
    gid = inp.facts.group_gid
    if gid is None:
        with AuthentikClient.from_settings() as ak:
            _, gid = require_group(ak, contract.slug, ldap_provider(ak))
    attempt = itertools.count(1)
    budget = verify_budget_s()
    problems = poll_until(
        lambda: ldap_problems(contract, gid),
        lambda found: not found,
        every=from_poll_interval(2, 10.0),
        budget_s=budget,
        detail=lambda found: f"attempt {next(attempt)}: {len(found)} problems",
    ).value
    directory_ids.fail_on_collisions(contract, inp.facts.remove_users)
    if problems:
        raise fail(
            "InvariantBroken",
            f"LDAP check of {contract.slug} still failed after {budget:.0f} s "
            f"(LDAP_VERIFY_BUDGET_S): {'; '.join(problems)}. Every user "
            f"must resolve with non-zero uidNumber and gidNumber, the same gidNumber ({gid}) and distinct "
            f"uidNumbers. {PROPERTY_MAPPING_HINT}",
        )
    finding = Finding.passed(
        check="identity.ldap",
        message=f"{len(contract.users)} users resolve through LDAP with gidNumber {gid}",
    )
    return StepResult(facts=inp.facts, findings=[finding])


@defn(runbook.IDENTITY.undo)
def undo(inp: UndoInput) -> list[EnsureResult]:
    """Compensate ``identity.group`` or ``identity.users``; only objects this run created or updated, a few users at
    a time (:mod:`activities.common.fanout`, heartbeating), each with its own ownership check."""
    slug = inp.contract.slug
    kinds = {runbook.IDENTITY_USERS.short: "User", runbook.IDENTITY_GROUP.short: "Group"}
    if inp.step not in kinds:
        return []
    changed = [r for r in inp.results if r.kind == kinds[inp.step] and r.outcome in (Outcome.created, Outcome.updated)]
    with AuthentikClient.from_settings() as ak:
        if inp.step == runbook.IDENTITY_GROUP.short:
            return fan_out(lambda r: undo_group(ak, r, slug), changed, "undo")
        group_pk = tenant_group_pk(ak, changed, slug)
        return fan_out(lambda r: undo_user(ak, r, slug, group_pk), changed, "undo")


ACTIVITIES = [preflight, plan, ensure_group, ensure_users, verify_ldap, undo]
