"""Pod security: would the level tenantflow gives tenant namespaces refuse the login release's pods?

Tenant namespaces enforce :data:`activities.common.manifests.POD_SECURITY_LEVEL` (``restricted``, runbook step
3a). tenantflow renders the login release (a HelmRelease of the login chart), not its pods: the chart does. So the
check reads the login pods the chart runs (``GET /api/v1/pods?labelSelector=app=login``, the chart's label) and
evaluates each spec statically against that level (:mod:`starter.doctor.pss`, the Pod Security Standards); before
the first onboarding there is none, and the line says so.
"""

from __future__ import annotations

from tenantflow.activities.common.manifests import POD_SECURITY_LEVEL
from tenantflow.starter.doctor.pss import violations
from tenantflow.starter.doctor.report import Estate, Result, failed, ok

NAME = "login.pod_security"
GRANT = "list on Pods in every namespace"
LOGIN_SELECTOR = "app=login"


def login_pod_security(estate: Estate) -> Result:
    """Every login pod admitted by ``POD_SECURITY_LEVEL``, checked statically against its spec."""
    pods = estate.kube.list("Pod", None, label_selector=LOGIN_SELECTOR)
    refused = {
        f"{p['metadata'].get('namespace')}/{p['metadata']['name']}": found
        for p in pods
        if (found := violations(POD_SECURITY_LEVEL, p.get("spec") or {}))
    }
    if refused:
        where, found = next(iter(refused.items()))
        others = f" (and {len(refused) - 1} more login pod(s))" if len(refused) > 1 else ""
        return failed(
            NAME,
            f"tenant namespaces enforce {POD_SECURITY_LEVEL}, which would refuse login pod {where}{others}: "
            f'violates PodSecurity "{POD_SECURITY_LEVEL}:latest": {", ".join(found)}',
            "give the login pods a securityContext the level admits (runAsNonRoot, no privilege escalation, "
            "capabilities dropped, RuntimeDefault seccomp) or run the login release in a namespace of its own "
            "at baseline",
        )
    if not pods:
        return ok(NAME, f"tenant namespaces enforce {POD_SECURITY_LEVEL}; no login pod runs yet to check against it")
    return ok(NAME, f"tenant namespaces enforce {POD_SECURITY_LEVEL}; its {len(pods)} login pod(s) pass it")
