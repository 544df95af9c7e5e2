"""Pod security of the Weka directory Job: does its namespace's enforced level admit the pod tenantflow renders?

The storage layer runs its directory Job in ``WEKA_HELPER_NAMESPACE`` as root (to ``chown`` the tenant's
directories), with the pod :func:`activities.storage.dirs.helper_pod_spec` renders. The namespace's level is its
``pod-security.kubernetes.io/enforce`` label (``privileged`` when unset, the admission's default: Pod Security
Admission, https://kubernetes.io/docs/concepts/security/pod-security-admission/), read with
``GET /api/v1/namespaces/<ns>``; the spec is checked statically against it (:mod:`activities.common.podsecurity`).
"""

from __future__ import annotations

from tenantflow.activities.common.podsecurity import violations
from tenantflow.activities.common.settings import settings
from tenantflow.activities.storage.dirs import helper_pod_spec
from tenantflow.models.weka_mount import directory_command
from tenantflow.starter.doctor.report import Estate, Result, failed, ok

NAME = "storage.helper_security"
GRANT = "get on Namespaces"
ENFORCE_LABEL = "pod-security.kubernetes.io/enforce"
ADMISSION_DEFAULT = "privileged"


def helper_pod_security(estate: Estate) -> Result:
    """The directory Job's pod against the level ``WEKA_HELPER_NAMESPACE`` enforces."""
    ns = settings().weka_helper_namespace
    namespace = estate.kube.get("Namespace", ns)
    if namespace is None:
        return failed(
            NAME,
            f"no namespace {ns} (WEKA_HELPER_NAMESPACE), where the Weka directory Job runs",
            f"create namespace {ns} with the label {ENFORCE_LABEL}=baseline",
        )
    level = ((namespace.get("metadata") or {}).get("labels") or {}).get(ENFORCE_LABEL, ADMISSION_DEFAULT)
    found = violations(level, helper_pod_spec("doctor", directory_command([])))
    if found:
        return failed(
            NAME,
            f"namespace {ns} enforces {level}, which refuses the Weka directory Job's pod (root, to chown): "
            f'violates PodSecurity "{level}:latest": {", ".join(found)}',
            f"label namespace {ns} {ENFORCE_LABEL}=baseline, or set WEKA_HELPER_NAMESPACE to a platform namespace "
            "at baseline",
        )
    return ok(NAME, f"namespace {ns} enforces {level}, which admits the Weka directory Job's pod")
