"""Compensation of the identity layer: restore or deactivate users and remove or restore the tenant group.

Undo deactivates the users it created and removes them from the group, never deletes them; an adopted account
gets back what tenantflow overwrote and leaves the group, never deactivated; the group is deleted
only when empty. It touches only what it can prove this workflow made or changed: a created user or
group must carry :data:`~activities.identity.numbers.CREATED_BY` with this workflow's id (the tenant's
offboarding may also undo the tenant's group and its members); an updated one must be the pk the
step recorded. Anything else, such as a same-named user another tenant created meanwhile, is left
alone and reported as kept.
"""

from __future__ import annotations

from tenantflow.activities.common.adoption import ADOPTED, give_back, restore
from tenantflow.activities.common.authentik_client import CREATED_BY, AuthentikClient
from tenantflow.activities.identity.numbers import may_undo
from tenantflow.models.results import (
    AuthentikGroup,
    AuthentikUser,
    EnsureResult,
    Kept,
    NoUndoData,
    Outcome,
    Restored,
)


def _kept(result: EnsureResult, why: str) -> EnsureResult:
    return result.model_copy(update={"outcome": Outcome.unchanged, "data": Kept(kept=why)})


def tenant_group_pk(ak: AuthentikClient, results: list[EnsureResult], slug: str) -> str:
    """The tenant group's pk for user results that did not record it (planned creations, an offboarding's
    deletions), looked up once for all of them; empty when none needs it or the group is gone."""
    if all(r.data_as(AuthentikUser).group_pk for r in results):
        return ""
    group = ak.groups.named(slug)
    return str(group.pk) if group else ""


def undo_user(ak: AuthentikClient, result: EnsureResult, slug: str, group_pk_found: str = "") -> EnsureResult:
    """Created users: deactivate and leave the group. Updated users: restore what we changed, where it still holds
    what we wrote (a field changed since is left alone and reported, :func:`~activities.common.adoption.restore`).
    An adopted account
    (:data:`~activities.common.adoption.ADOPTED`, or no tenantflow ``created-by`` marker at all) reported created
    (the tenant's offboarding) gets back what the adoption overwrote and leaves the group; it stays active.

    A result without data (a planned creation whose step failed before returning) finds the user by
    username, and undoes it only when its :data:`CREATED_BY` marker names this workflow; the group it leaves is
    the one it recorded, else ``group_pk_found`` (:func:`tenant_group_pk`).
    """
    data = result.data_as(AuthentikUser)
    user = ak.users.get(data.pk) if data.pk else ak.users.named(result.name)
    group_pk = str(data.group_pk or group_pk_found)
    if user is None:
        return result.model_copy(update={"outcome": Outcome.absent, "data": NoUndoData()})
    if result.outcome is Outcome.created:
        of_tenant = any(g.attributes.get("tenant_slug") == slug for g in user.groups_obj or [])
        if not may_undo(user.attributes, of_tenant):
            return _kept(
                result,
                f"user {user.username} (pk {user.pk}) was not created by this run "
                f"({CREATED_BY}={user.attributes.get(CREATED_BY)!r}); left alone",
            )
        if ADOPTED in user.attributes or CREATED_BY not in user.attributes:
            patch, leave, left = give_back(user, group_pk)  # adopted (or made by no tenantflow run): never deactivated
        else:
            patch, leave, left = ({"is_active": False} if user.is_active else {}), group_pk in user.groups, []
    elif not data.pk:
        return _kept(result, f"no record of what this run changed on user {user.username}; left alone")
    else:
        patch, left = restore(user, data.previous or {}, data.wrote)
        leave = bool(data.added_to_group) and group_pk in user.groups
    if patch:
        ak.users.patch(user.pk, patch)
    if leave:
        ak.remove_user(group_pk, user.pk)
    changed = bool(patch or leave)
    restored = Restored(restored=sorted(patch), left_group=leave, **({"left_alone": left} if left else {}))
    return result.model_copy(update={"outcome": Outcome.updated if changed else Outcome.absent, "data": restored})


def undo_group(ak: AuthentikClient, result: EnsureResult, slug: str) -> EnsureResult:
    """A created group is deleted when empty; an updated one gets its previous parents/attributes back."""
    data = result.data_as(AuthentikGroup)
    group = ak.groups.get(str(data.pk)) if data.pk else ak.groups.named(result.name)
    if group is None:
        return result.model_copy(update={"outcome": Outcome.absent, "data": NoUndoData()})
    if result.outcome is Outcome.created:
        if not may_undo(group.attributes, group.attributes.get("tenant_slug") == slug):
            return _kept(
                result,
                f"group {group.name} was not created by this run "
                f"({CREATED_BY}={group.attributes.get(CREATED_BY)!r}); left alone",
            )
        if group.users:
            return result.model_copy(
                update={"outcome": Outcome.unchanged, "data": Kept(kept=f"still has {len(group.users)} members")}
            )
        ak.groups.delete(group.pk)
        return result.model_copy(update={"outcome": Outcome.deleted, "data": NoUndoData()})
    patch = {key: value for key, value in (data.previous or {}).items() if getattr(group, key) != value}
    if patch:
        ak.groups.patch(group.pk, patch)
    return result.model_copy(
        update={"outcome": Outcome.updated if patch else Outcome.absent, "data": Restored(restored=sorted(patch))}
    )
