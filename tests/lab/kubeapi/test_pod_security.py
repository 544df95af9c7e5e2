"""Pod Security Admission in the emulator, driven by the real ``kubernetes`` client: a namespace's ``enforce`` label
refuses a pod with kube-apiserver's status and words, its ``warn`` label only warns. The expected texts are written
from kubernetes/pod-security-admission (``policy/check_*.go``, ``admission/admission.go``), not from the lab."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.lab.kubeapi.conftest import Cluster

ENFORCE = "pod-security.kubernetes.io/enforce"
WARN = "pod-security.kubernetes.io/warn"
SSHD_CAPABILITIES = ["AUDIT_WRITE", "CHOWN", "NET_BIND_SERVICE", "SETGID", "SETUID", "SYS_CHROOT"]


def _pod(name: str, security: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "sshd", "image": "sunk-login", "securityContext": security}], **spec},
    }


def _labelled(cluster: Cluster, labels: dict[str, str]) -> str:
    ns = cluster.namespace()
    client.CoreV1Api(cluster.api()).patch_namespace(ns, {"metadata": {"labels": labels}})
    return ns


ROOT_SSHD = {
    "privileged": False,
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"], "add": SSHD_CAPABILITIES},
    "seccompProfile": {"type": "RuntimeDefault"},
}


def test_restricted_refuses_a_root_sshd_with_upstreams_status_and_words(cluster: Cluster) -> None:
    core = client.CoreV1Api(cluster.api())
    ns = _labelled(cluster, {ENFORCE: "restricted"})
    with pytest.raises(ApiException) as exc:
        core.create_namespaced_pod(ns, _pod("login-x-0", ROOT_SSHD))
    assert exc.value.status == 403
    status = exc.value.body
    assert '"reason": "Forbidden"' in status, status
    message = (
        'pods "login-x-0" is forbidden: violates PodSecurity "restricted:latest": unrestricted capabilities '
        '(container "sshd" must not include "AUDIT_WRITE", "CHOWN", "SETGID", "SETUID", "SYS_CHROOT" in '
        'securityContext.capabilities.add), runAsNonRoot != true (pod or container "sshd" must set '
        "securityContext.runAsNonRoot=true)"
    )
    assert cluster.raw("POST", f"/api/v1/namespaces/{ns}/pods", _pod("login-x-0", ROOT_SSHD)) == (
        403,
        {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": message,
            "reason": "Forbidden",
            "code": 403,
            "details": {"name": "login-x-0", "kind": "pods"},
        },
    )
    assert core.list_namespaced_pod(ns).items == []


def test_a_bare_pod_fails_every_restricted_rule_in_upstreams_order(cluster: Cluster) -> None:
    ns = _labelled(cluster, {ENFORCE: "restricted"})
    code, status = cluster.raw("POST", f"/api/v1/namespaces/{ns}/pods", _pod("bare", {"runAsUser": 0}))
    assert code == 403
    assert status["message"] == (
        'pods "bare" is forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false '
        '(container "sshd" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities '
        '(container "sshd" must set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or '
        'container "sshd" must set securityContext.runAsNonRoot=true), runAsUser=0 (container "sshd" must not set '
        'runAsUser=0), seccompProfile (pod or container "sshd" must set securityContext.seccompProfile.type to '
        '"RuntimeDefault" or "Localhost")'
    )


def test_baseline_admits_the_root_sshd_and_warns_at_restricted(cluster: Cluster) -> None:
    core = client.CoreV1Api(cluster.api())
    ns = _labelled(cluster, {ENFORCE: "baseline", WARN: "restricted"})
    created, code, headers = core.create_namespaced_pod_with_http_info(ns, _pod("login-y-0", ROOT_SSHD))
    assert code == 201 and created.metadata.name == "login-y-0"
    assert headers["Warning"] == (
        '299 - "would violate PodSecurity \\"restricted:latest\\": unrestricted capabilities (container \\"sshd\\" '
        'must not include \\"AUDIT_WRITE\\", \\"CHOWN\\", \\"SETGID\\", \\"SETUID\\", \\"SYS_CHROOT\\" in '
        'securityContext.capabilities.add), runAsNonRoot != true (pod or container \\"sshd\\" must set '
        'securityContext.runAsNonRoot=true)"'
    )


def test_baseline_refuses_host_access_and_privilege(cluster: Cluster) -> None:
    ns = _labelled(cluster, {ENFORCE: "baseline"})
    pod = _pod(
        "escape",
        {"privileged": True, "capabilities": {"add": ["SYS_ADMIN"]}},
        hostNetwork=True,
        hostPID=True,
        volumes=[{"name": "root", "hostPath": {"path": "/"}}],
    )
    code, status = cluster.raw("POST", f"/api/v1/namespaces/{ns}/pods", pod)
    assert code == 403
    assert status["message"] == (
        'pods "escape" is forbidden: violates PodSecurity "baseline:latest": non-default capabilities (container '
        '"sshd" must not include "SYS_ADMIN" in securityContext.capabilities.add), host namespaces '
        '(hostNetwork=true, hostPID=true), hostPath volumes (volume "root"), privileged (container "sshd" must not '
        "set securityContext.privileged=true)"
    )


def test_a_namespace_without_labels_admits_anything(cluster: Cluster) -> None:
    core = client.CoreV1Api(cluster.api())
    ns = cluster.namespace()
    pod = _pod("anything", {"privileged": True}, hostNetwork=True)
    _, code, headers = core.create_namespaced_pod_with_http_info(ns, pod)
    assert code == 201 and "Warning" not in headers
