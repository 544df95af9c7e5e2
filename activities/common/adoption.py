"""Adopting an existing Authentik account: the proof, what the plan shows, and how it is given back (the identity
layer adopts and undoes; the change layer gives an account back when a change drops its user).

A username Authentik already knows outside any tenant is adopted only with ``adopt_existing: true`` (else
preflight refuses it, :func:`activities.identity.checks.username_findings`), and then either it provably is the
contract's person (:func:`proven`: the account's email is the contract's, compared case-insensitively) or the plan
line shows what the adoption overwrites (:func:`adoption_detail`: the old and new email, name and the SHA256
fingerprints of the SSH keys, as ``ssh-keygen -l`` prints them), so the approved plan hash covers exactly those
values; the plan changes, and ``approve_plan`` opens again, when any of them changes before the re-plan. At write
time the step compares the account with the approved line again (:func:`changed_since_approval`) and writes
nothing to an account that changed since.

The adoption writes :data:`ADOPTED` into the account's attributes: the workflow and run that adopted it, what it
overwrote (name, email, active, the attributes it set), what it wrote instead and whether it added the account to
the group. From it an undo whose answer was lost, and the tenant's offboarding (which has no record of the
onboarding's results), put back what tenantflow changed where the account still holds tenantflow's value (a field
the person changed since is left as they made it, and reported) and remove the membership (:func:`give_back`); an
adopted account is never deactivated nor deleted.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from typing import Any

from temporalio import activity

from tenantflow.activities.common.authentik_client import User
from tenantflow.models.tenant import TenantUser

ADOPTED = "tenantflow.io/adopted"
"""Attribute of an adopted account: ``{"by": workflow id, "run": run id, "previous": {...}, "wrote": {...},
"added_to_group": ..}``."""
SET_ATTRIBUTES = ("ssh_keys", "gidNumber")
"""The attributes tenantflow sets on a tenant user (:func:`activities.identity.numbers.desired_user`)."""


def fingerprint(key: str) -> str:
    """The SHA256 fingerprint of an OpenSSH public key line (``SHA256:`` and the unpadded base64 of the
    digest of the key blob, as OpenSSH's ``sshkey_fingerprint`` prints it); the key's type when the blob does not
    decode."""
    parts = key.split()
    try:
        blob = base64.b64decode(parts[1], validate=True) if len(parts) > 1 else b""
    except (binascii.Error, ValueError):
        blob = b""
    if not blob:
        return f"unreadable {parts[0] if parts else 'key'}"
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")


def fingerprints(keys: str | list[str] | None) -> list[str]:
    """The fingerprints of keys given one per line (Authentik's ``ssh_keys`` attribute) or as a list."""
    lines = keys.splitlines() if isinstance(keys, str) else list(keys or [])
    return [fingerprint(line) for line in lines if line.strip()]


def proven(existing: User, user: TenantUser) -> bool:
    """The account provably is the contract's person: its email is the contract's (case-insensitively)."""
    have = existing.email.strip().lower()
    return bool(have) and have == user.email.strip().lower()


def _change(old: object, new: object) -> str:
    return f"unchanged ({new})" if old == new else f"{old} -> {new}"


def adoption_detail(existing: User, user: TenantUser, state: str) -> dict[str, object]:
    """The plan line of an adoption: the proof, or the old and new values the approval takes over. ``state``:
    the account as :func:`activities.identity.checks.account_state` describes it."""
    keys = _change(
        ", ".join(fingerprints(existing.attributes.get("ssh_keys"))) or "none",
        ", ".join(fingerprints(list(user.ssh_keys))),
    )
    detail: dict[str, object] = {
        "adopt_existing": f"{user.adopt_existing} (existing account: {state})",
        "proof": "the account's email is the contract's"
        if proven(existing, user)
        else "none: approving this plan overwrites the values below",
        "email": _change(existing.email or "none", user.email),
        "name": _change(existing.name, user.name),
        "ssh_keys": keys,
    }
    if not existing.is_active:
        detail["is_active"] = "false -> true"
    return detail


SHOWN = ("adopt_existing", "proof", "email", "name", "ssh_keys", "is_active")
"""The keys of an adoption's plan line that describe the existing account (:func:`adoption_detail`)."""


def changed_since_approval(approved: dict[str, object], now: User | None, user: TenantUser, state: str) -> list[str]:
    """How the account ``now`` differs from the adoption line the approver saw (its ``detail``), one
    ``field: ... when approved, ... now`` each; empty when it is as approved. ``state``: as for
    :func:`adoption_detail`."""
    if now is None:
        return ["account: existed when approved, deleted now"]
    current = adoption_detail(now, user, state)
    return [
        f"{key}: {approved.get(key, 'not shown')} when approved, {current.get(key, 'not shown')} now"
        for key in SHOWN
        if approved.get(key) != current.get(key)
    ]


def this_run_ids() -> tuple[str, str]:
    """The workflow id and run id of the running activity (empty outside one)."""
    if not activity.in_activity():
        return "", ""
    info = activity.info()
    return info.workflow_id or "", info.workflow_run_id or ""


def marker(previous: dict[str, Any], patch: dict[str, Any], added_to_group: bool) -> dict[str, Any]:
    """The :data:`ADOPTED` attribute an adoption writes with ``patch``: who adopted, what it overwrote and what it
    wrote instead (so giving back touches only what still holds tenantflow's value)."""
    by, run = this_run_ids()
    kept = {key: value for key, value in previous.items() if key != "attributes"}
    wrote: dict[str, Any] = {key: patch[key] for key in ("name", "email") if key in previous}
    before = previous.get("attributes")
    if before is not None:
        kept["attributes"] = {key: before.get(key) for key in SET_ATTRIBUTES}
        wrote["attributes"] = {key: patch.get("attributes", before).get(key) for key in SET_ATTRIBUTES}
    return {"by": by, "run": run, "previous": kept, "wrote": wrote, "added_to_group": added_to_group}


def adopted_by_this_run(user: User) -> dict[str, Any] | None:
    """The :data:`ADOPTED` marker when this very run adopted the account (a retry whose answer was lost)."""
    found = user.attributes.get(ADOPTED)
    _, run = this_run_ids()
    return found if isinstance(found, dict) and run and found.get("run") == run else None


def restore(user: User, previous: dict[str, Any], wrote: dict[str, Any] | None) -> tuple[dict[str, Any], list[str]]:
    """The PATCH that puts ``previous`` back on ``user`` where it still holds the value tenantflow wrote (``wrote``;
    attributes key by key), and each field left alone because it holds another value (the person's own later edit,
    or no record of what tenantflow wrote: an adoption or result recorded before it was kept)."""
    wrote = wrote or {}
    patch: dict[str, Any] = {}
    left: list[str] = []

    def put_back(field: str, old: object, now: object, ours: object, recorded: bool) -> bool:
        if now == old or (old == ours and recorded):
            return False
        if recorded and now == ours:
            return True
        wrote_what = f"not the {ours!r} tenantflow wrote" if recorded else "and no record of what tenantflow wrote"
        left.append(f"{field}: {now!r}, {wrote_what}; left as it is, not put back to {old!r}")
        return False

    for key, old in previous.items():
        if key != "attributes" and put_back(key, old, getattr(user, key), wrote.get(key), key in wrote):
            patch[key] = old
    if "attributes" in previous:
        before: dict[str, Any] = previous["attributes"] or {}
        written: dict[str, Any] = wrote.get("attributes") or {}
        attributes = dict(user.attributes)
        for key in sorted(set(before) | set(written)):
            old, now = before.get(key), user.attributes.get(key)
            if put_back(f"attributes.{key}", old, now, written.get(key), "attributes" in wrote):
                if old is None:
                    attributes.pop(key, None)
                else:
                    attributes[key] = old
        if attributes != user.attributes:
            patch["attributes"] = attributes
    return patch, left


def give_back(user: User, group_pk: str) -> tuple[dict[str, Any], bool, list[str]]:
    """For an account tenantflow adopted: the PATCH that puts back what the adoption overwrote (only where the
    account still holds tenantflow's value, :func:`restore`) and drops the marker, whether it leaves ``group_pk``,
    and the fields left as the person has them now. Never ``is_active: false``: an adopted account stays the
    person's."""
    found = user.attributes.get(ADOPTED)
    leave = bool(group_pk) and group_pk in user.groups
    if not isinstance(found, dict):
        return {}, leave, []
    previous = {key: value for key, value in (found.get("previous") or {}).items() if key != "is_active"}
    patch, left = restore(user, previous, found.get("wrote"))
    attributes = {key: value for key, value in patch.get("attributes", user.attributes).items() if key != ADOPTED}
    patch["attributes"] = attributes
    return {key: value for key, value in patch.items() if getattr(user, key) != value}, leave, left
