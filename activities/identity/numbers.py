"""Authentik numbers and desired state of a tenant's identity, as the LDAP outpost computes and serves them.

The group's gid is explicit, as a string (the outpost ignores non-string numbers):
``gid_start_number + num_pk`` of the group, moved up past any gid or uid already in use.
Every tenant user gets ``attributes.gidNumber`` = that gid and ``attributes.ssh_keys``
(one key per line).
"""

from __future__ import annotations

from typing import Any

from temporalio import activity

from tenantflow.activities.common.authentik_client import CREATED_BY, AuthentikClient, Group, LdapProvider, User
from tenantflow.activities.common.errors import fail
from tenantflow.activities.common.runs import this_workflow
from tenantflow.models.tenant import TenantUser


def string_number(attributes: dict[str, Any], key: str) -> int | None:
    value = attributes.get(key)
    return int(value) if isinstance(value, str) and value.isdigit() and int(value) > 0 else None


def group_gid(group: Group, provider: LdapProvider) -> int:
    return string_number(group.attributes, "gidNumber") or provider.gid_start_number + group.num_pk


def user_uid(user: User, provider: LdapProvider) -> int:
    return string_number(user.attributes, "uidNumber") or provider.uid_start_number + user.pk


def _taken_numbers(ak: AuthentikClient, provider: LdapProvider, group_pk: str) -> set[int]:
    """gidNumbers in use by anyone but the group and its members: every other group's, every user's own
    (virtual) group's, i.e. their uidNumbers, and the ``gidNumber`` attribute of users outside the group.

    The last matters after a rollback or an offboarding without purge: the deactivated users keep the
    old group's gid as their attribute (the outpost still serves it), so a new group given that number
    would share it with them. The group's own members hold its gid by design and do not count.
    """
    taken = {group_gid(g, provider) for g in ak.groups.list(include_users="false") if g.pk != group_pk}
    for user in ak.users.list(include_groups="false"):
        taken.add(user_uid(user, provider))
        held = string_number(user.attributes, "gidNumber")
        if held is not None and group_pk not in user.groups:
            taken.add(held)
    return taken


def choose_gid(ak: AuthentikClient, provider: LdapProvider, group: Group) -> int:
    """The group's explicit gid if it is free, else ``gid_start + num_pk`` moved past every taken number."""
    taken = _taken_numbers(ak, provider, group.pk)
    explicit = string_number(group.attributes, "gidNumber")
    if explicit is not None and explicit not in taken:
        return explicit
    gid = provider.gid_start_number + group.num_pk
    while gid in taken:
        gid += 1
    return gid


def ldap_provider(ak: AuthentikClient) -> LdapProvider:
    providers = ak.ldap_providers.list()
    if not providers:
        raise fail("NotFound", "Authentik has no LDAP provider; deploy the LDAP provider and outpost (runbook 2c)")
    return providers[0]


OFFBOARDING = "TenantOffboarding"
"""The workflow type that tears a tenant down after an approved plan: it may undo the tenant's own objects."""


def made_by_this_workflow(attributes: dict[str, Any]) -> bool:
    return attributes.get(CREATED_BY) == this_workflow()


def may_undo(attributes: dict[str, Any], of_tenant: bool) -> bool:
    """An undo's proof of ownership: this workflow made the object, or this is the tenant's approved
    offboarding and the object is the tenant's (its group, or a member of it)."""
    return made_by_this_workflow(attributes) or (of_tenant and activity.info().workflow_type == OFFBOARDING)


def tenant_of(user: User, slug: str) -> bool:
    """Whether the user is already this tenant's: a member of its group, or created by this workflow."""
    return any(g.attributes.get("tenant_slug") == slug for g in user.groups_obj or []) or made_by_this_workflow(
        user.attributes
    )


def other_tenant(user: User, slug: str) -> str | None:
    """The tenant_slug of another tenant's group the user belongs to, if any."""
    for group in user.groups_obj or []:
        owner = group.attributes.get("tenant_slug")
        if owner and owner != slug:
            return str(owner)
    return None


# -- desired state -------------------------------------------------------------------------------


def desired_user(user: TenantUser, gid: int) -> dict[str, Any]:
    return {
        "name": user.name,
        "email": user.email,
        "attributes": {"ssh_keys": "\n".join(user.ssh_keys), "gidNumber": str(gid)},
    }


def user_patch(existing: User, desired: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The PATCH body that brings ``existing`` to ``desired`` and the previous values it overwrites."""
    patch: dict[str, Any] = {}
    previous: dict[str, Any] = {}
    for key in ("name", "email"):
        if getattr(existing, key) != desired[key]:
            patch[key], previous[key] = desired[key], getattr(existing, key)
    if not existing.is_active:
        patch["is_active"], previous["is_active"] = True, False
    attributes = {**existing.attributes, **desired["attributes"]}
    if attributes != existing.attributes:
        patch["attributes"], previous["attributes"] = attributes, existing.attributes
    return patch, previous


def require_group(ak: AuthentikClient, slug: str, provider: LdapProvider) -> tuple[Group, int]:
    group = ak.groups.named(slug)
    gid = string_number(group.attributes, "gidNumber") if group else None
    if group is None or gid is None:
        raise fail(
            "NotFound", f"Authentik group {slug} with an explicit gidNumber is missing; run identity.group first"
        )
    return group, gid
