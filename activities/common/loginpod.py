"""Reading a tenant's login pod: a command in its login container, and ``getent`` as the pod's NSS answers it.

The login step verifies its pods with these (:mod:`activities.login.steps`) and validation reads them again
(:mod:`activities.validate.steps`).
"""

from __future__ import annotations

from tenantflow.activities.common import kubeclient
from tenantflow.activities.common.polling import from_poll_interval, heartbeat, poll_until
from tenantflow.activities.common.settings import settings
from tenantflow.models.tenant import TenantContract

KEYS_DIR = "/etc/ssh/authorized_keys.d/"
GETENT_ATTEMPTS = 3
GETENT_BATCH = 100
"""Users per ``getent passwd`` exec: keeps the exec's argv a few kilobytes."""


def login_exec(contract: TenantContract, pod: str, argv: list[str]) -> kubeclient.ExecOutput:
    """Run ``argv`` in the login container (setting ``login_container``) of one of the tenant's login pods."""
    cfg = settings()
    return kubeclient.exec_in(
        contract.cluster, contract.namespace, pod, cfg.login_container, argv, timeout_s=cfg.exec_timeout_s
    )


def getent_warm(contract: TenantContract, pod: str, argv: list[str]) -> kubeclient.ExecOutput:
    """getent, asked again a few times when it finds nothing: a cold or throttled outpost drops lookups."""
    return poll_until(
        lambda: login_exec(contract, pod, argv),
        lambda out: out.exit_code != 2,
        every=from_poll_interval(1),
        attempts=GETENT_ATTEMPTS,
    ).value


def passwd_entries(contract: TenantContract, pod: str) -> dict[str, list[str]]:
    """``getent passwd`` fields of every user that resolves on ``pod``, :data:`GETENT_BATCH` names an exec
    (getent(1) takes several keys, prints a line for each one found and exits 2 when any is missing); names a
    lookup did not find are asked again, as a cold or throttled outpost drops lookups."""
    users = contract.usernames
    entries: dict[str, list[str]] = {}
    for start in range(0, len(users), GETENT_BATCH):
        names = users[start : start + GETENT_BATCH]
        heartbeat({"getent": {"done": start, "of": len(users)}})

        def unresolved(names: list[str] = names) -> list[str]:
            out = login_exec(contract, pod, ["getent", "passwd", *(n for n in names if n not in entries)])
            for line in out.stdout.split("\n"):
                fields = line.strip().split(":")
                if len(fields) >= 7 and fields[0] in names:
                    entries[fields[0]] = fields
            return [n for n in names if n not in entries]

        poll_until(unresolved, lambda missing: not missing, every=from_poll_interval(1), attempts=GETENT_ATTEMPTS)
    return entries
