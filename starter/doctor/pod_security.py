"""Pod security: does the level tenant namespaces enforce admit the login pod, and do the login pods that run pass
the level their own namespace enforces?

Tenant namespaces enforce ``TENANT_POD_SECURITY_ENFORCE`` (``baseline`` by default, with ``warn`` and ``audit`` at
``restricted``: :data:`activities.common.manifests.LOGIN_POD_SECURITY_WHY`). tenantflow renders the login release
(a Flux HelmRelease of the login chart), not its pods: the chart does, with the ``securityContext`` the release's
values ask for. So the check evaluates statically (:mod:`activities.common.podsecurity`, the Pod Security
Standards) the login container tenantflow asks for against that level, and each login pod the chart runs
(``GET /api/v1/pods?labelSelector=app=login``, the chart's label) against the ``pod-security.kubernetes.io/enforce``
label of its namespace (``GET /api/v1/namespaces/<ns>``; ``privileged`` when unset, Pod Security Admission's
default, https://kubernetes.io/docs/concepts/security/pod-security-admission/): a pod that level refuses is not
recreated after a restart or an upgrade.
"""

from __future__ import annotations

from tenantflow.activities.common.loginpod import login_pod_refusals
from tenantflow.activities.common.podsecurity import violations
from tenantflow.activities.common.settings import settings
from tenantflow.starter.doctor.report import Estate, Result, failed, ok

NAME = "login.pod_security"
GRANT = "list on Pods in every namespace and get on Namespaces"
LOGIN_SELECTOR = "app=login"
ENFORCE_LABEL = "pod-security.kubernetes.io/enforce"
ADMISSION_DEFAULT = "privileged"
FIX = (
    "give the login pods a securityContext the level admits (root sshd needs baseline: capabilities SETUID, SETGID, "
    "SYS_CHROOT), or label the namespace {label}=baseline (TENANT_POD_SECURITY_ENFORCE=baseline for new tenants)"
)


def _refused(level: str, found: list[str]) -> str:
    return f'violates PodSecurity "{level}:latest": {", ".join(found)}' if found else ""


def login_pod_security(estate: Estate) -> Result:
    """The login container tenantflow renders against ``TENANT_POD_SECURITY_ENFORCE``; every login pod that runs
    against its namespace's enforced level."""
    cfg = settings()
    level = cfg.tenant_pod_security_enforce
    fix = FIX.format(label=ENFORCE_LABEL)
    if refused := _refused(level, login_pod_refusals(level)):
        return failed(
            NAME,
            f"tenant namespaces enforce {level} (TENANT_POD_SECURITY_ENFORCE), which would refuse the login pod "
            f"tenantflow's release asks for: {refused}",
            fix,
        )
    pods = estate.kube.list("Pod", None, label_selector=LOGIN_SELECTOR)
    levels: dict[str, str] = {}
    bad: dict[str, str] = {}
    for pod in pods:
        ns = str(pod["metadata"].get("namespace"))
        if ns not in levels:
            namespace = estate.kube.get("Namespace", ns) or {}
            labels = (namespace.get("metadata") or {}).get("labels") or {}
            levels[ns] = labels.get(ENFORCE_LABEL, ADMISSION_DEFAULT)
        if refused := _refused(levels[ns], violations(levels[ns], pod.get("spec") or {})):
            bad[f"{ns}/{pod['metadata']['name']}"] = f"namespace {ns} enforces {levels[ns]}: {refused}"
    if bad:
        where, why = next(iter(bad.items()))
        others = f" (and {len(bad) - 1} more login pod(s))" if len(bad) > 1 else ""
        return failed(NAME, f"login pod {where}{others} would be refused when recreated; {why}", fix)
    running = f"; its {len(pods)} login pod(s) pass their namespaces' levels" if pods else "; no login pod runs yet"
    return ok(NAME, f"tenant namespaces enforce {level}, which admits the login pod tenantflow asks for{running}")
