"""Reading a tenant's login pods: which they are, a command in their login container, and ``getent`` as a pod's
NSS answers it.

The login chart's pods are found by the label the chart puts on them (:func:`activities.common.manifests.
login_selector`, ``app.kubernetes.io/instance=login-<slug>``, Helm's release label), never by name: a StatefulSet
names them ``-0..n-1``, a Deployment by hash. The login step waits for and verifies them with these
(:mod:`activities.login.steps`) and validation reads them again (:mod:`activities.validate.steps`).
"""

from __future__ import annotations

from tenantflow.activities.common import kubeclient
from tenantflow.activities.common.kubeobjects import KubeObjects
from tenantflow.activities.common.manifests import Manifest, login_pod_selector, login_security_context
from tenantflow.activities.common.podsecurity import violations
from tenantflow.activities.common.polling import from_poll_interval, heartbeat, poll_until
from tenantflow.activities.common.settings import settings
from tenantflow.models.tenant import TenantContract

KEYS_DIR = "/etc/ssh/authorized_keys.d/"
GETENT_ATTEMPTS = 3
GETENT_BATCH = 100
"""Users per ``getent passwd`` exec: keeps the exec's argv a few kilobytes."""


def login_pod_refusals(level: str) -> list[str]:
    """What pod-security ``level`` refuses in the login container tenantflow's release asks the chart for (its
    securityContext: a root sshd), checked as the namespace's admission would (:mod:`activities.common.podsecurity`);
    empty when the level admits it."""
    container = {"name": settings().login_container, "securityContext": login_security_context()}
    return violations(level, {"containers": [container]})


def login_pods(objs: KubeObjects, contract: TenantContract) -> list[Manifest]:
    """The tenant's login pods (``GET pods?labelSelector=``), by name; those being deleted left out."""
    pods = objs.list("Pod", contract.namespace, label_selector=login_pod_selector(contract))
    return sorted(
        (p for p in pods if not (p.get("metadata") or {}).get("deletionTimestamp")), key=lambda p: p["metadata"]["name"]
    )


def is_ready(pod: Manifest) -> bool:
    """Running with condition ``Ready`` True (Kubernetes "Pod Lifecycle": the pod can serve)."""
    status = pod.get("status") or {}
    return status.get("phase") == "Running" and any(
        c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or []
    )


def ready_login_pods(objs: KubeObjects, contract: TenantContract) -> list[str]:
    """The names of the tenant's Ready login pods."""
    return [p["metadata"]["name"] for p in login_pods(objs, contract) if is_ready(p)]


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
