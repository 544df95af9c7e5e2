"""slurmctld's view of the tenant's users: each must resolve through NSS before its association is usable.

slurmctld turns an association's user name into a uid (``getpwnam``) when the
association reaches it from slurmdbd. A name its NSS does not know yet (SUNK's
nsscache has not dumped the new LDAP users) is kept with no uid, shown as
``UserName=alice(4294967294)`` by ``scontrol show assoc_mgr``, and every job of
that user is refused with "Invalid account or account/partition combination"
until ``scontrol reconfigure`` looks the names up again. So the users step first
waits until the controller resolves every user, and after writing the
associations makes sure none is left without a uid.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from temporalio.exceptions import ApplicationError

from tenantflow.activities.common import directory_ids
from tenantflow.activities.common.errors import TRANSIENT
from tenantflow.activities.common.polling import from_poll_interval, poll_until
from tenantflow.activities.common.slurm_cli import SlurmCtl, batches, word, words

NO_UID = "4294967294"
"""Slurm's NO_VAL: the uid slurmctld records for a user name it could not resolve."""
RESOLVE_BUDGET_S = 60.0
NSS_HINT = (
    "slurmctld resolves users through its pod's NSS (nsscache or nslcd fed from the LDAP outpost): check "
    "that it syncs the new users; the step is retried"
)


@dataclass(frozen=True)
class Account:
    """A user as the Slurm controller resolves it (``getent passwd``)."""

    name: str
    uid: str
    gid: str
    home: str


def resolve_user(ctl: SlurmCtl, user: str) -> Account | None:
    """``getent passwd <user>`` in the slurmctld pod; None when it does not know the user."""
    out = ctl.run(["getent", "passwd", word(user)], check=False)
    fields = out.stdout.strip().split(":")
    if out.exit_code != 0 or len(fields) < 7:
        return None
    return Account(fields[0], fields[2], fields[3], fields[5])


def unresolved(ctl: SlurmCtl, users: list[str]) -> list[str]:
    """The users the slurmctld pod does not resolve, from ``getent passwd u1 u2 ...`` for :data:`BATCH` users at a
    time (it prints the ones it finds and exits 2 when any is missing)."""
    found: set[str] = set()
    for batch in batches(users):
        out = ctl.run(["getent", "passwd", *(word(u) for u in batch)], check=False)
        found.update(line.split(":", 1)[0] for line in out.stdout.split("\n"))
    return [u for u in users if u not in found]


def uidless(ctl: SlurmCtl, users: list[str]) -> list[str]:
    """Users whose association slurmctld holds without a uid (``scontrol show assoc_mgr``, :data:`BATCH` users a
    command)."""
    held = [
        ctl.run(["scontrol", "show", "assoc_mgr", f"users={words(batch)}", "flags=assoc"]).stdout
        for batch in batches(users)
    ]
    pairs = (pair for out in held for pair in re.findall(r"UserName=([^(\s]+)\((\d+)\)", out))
    return sorted({name for name, uid in pairs if uid == NO_UID})


def wait_resolved(ctl: SlurmCtl, users: list[str], budget_s: float = RESOLVE_BUDGET_S) -> None:
    """Poll (heartbeating) until slurmctld resolves every user; a retryable error when the budget runs out."""
    waited = poll_until(
        lambda: unresolved(ctl, users),
        lambda missing: not missing,
        every=from_poll_interval(2),
        budget_s=budget_s,
        detail=lambda missing: {"unresolved": missing},
    )
    if not waited.done:
        raise unresolved_error(waited.value, budget_s)


def unresolved_error(missing: list[str], budget_s: float) -> ApplicationError:
    """Why slurmctld still does not resolve ``missing``, as far as the directory shows: a uid collision fails
    the step (it does not heal by waiting), a user missing from the directory or nothing visible is retried."""
    text = f"slurmctld does not resolve user(s) {', '.join(missing)} after {budget_s:.0f} s"
    try:
        causes = directory_ids.unresolved_causes(missing)
    except ApplicationError as err:
        causes, text = [], f"{text} (the LDAP outpost could not be asked why: {err})"
    if not causes:
        return ApplicationError(f"{text}; {NSS_HINT}", type=TRANSIENT)
    detail = "; ".join(f"{c.message} (fix: {c.fix})" for c in causes)
    if any(c.check == directory_ids.CHECK for c in causes):
        return ApplicationError(
            f"{text}: {detail}",
            *[c.model_dump(mode="json") for c in causes],
            type=directory_ids.COLLISION,
            non_retryable=True,
        )
    return ApplicationError(
        f"{text}: {detail}; {NSS_HINT}", *[c.model_dump(mode="json") for c in causes], type=TRANSIENT
    )


def ensure_uids(ctl: SlurmCtl, users: list[str]) -> bool:
    """Make slurmctld look up users it recorded without a uid (``scontrol reconfigure``); True when it had to."""
    if not uidless(ctl, users):
        return False
    ctl.run(["scontrol", "reconfigure"])
    if still := uidless(ctl, users):
        raise ApplicationError(
            f"slurmctld still holds the associations of {', '.join(still)} without a uid after "
            f"scontrol reconfigure; {NSS_HINT}",
            type=TRANSIENT,
        )
    return True
