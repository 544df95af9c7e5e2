"""The login release under pod security, against the kube emulator and the lab's stand-in for Flux's helm-controller:
with the tenant namespace forced to ``restricted`` the plan says the login pod would be refused and the release gives
up within its budget naming the admission's refusal; the login pods are found by label, whatever their names."""

from __future__ import annotations

import copy

import pytest
from temporalio.exceptions import ApplicationError

from tenantflow.activities.kube import steps as kube
from tenantflow.activities.login import steps as login
from tenantflow.lab.kubeapi.media_types import MERGE_PATCH
from tenantflow.models.onboarding import StepInput
from tests.activities.kube.conftest import Lab
from tests.activities.kube.layer import contract, run
from tests.labfixture import exported

REFUSAL = (
    'pods "login-tenant-foo-0" is forbidden: violates PodSecurity "restricted:latest": unrestricted capabilities '
    '(container "sshd" must not include "AUDIT_WRITE", "CHOWN", "SETGID", "SETUID", "SYS_CHROOT" in '
    'securityContext.capabilities.add), runAsNonRoot != true (pod or container "sshd" must set '
    "securityContext.runAsNonRoot=true)"
)
"""What Pod Security Admission answers for the login pod the release asks for (kubernetes/pod-security-admission
``policy/check_capabilities_restricted.go``, ``check_runAsNonRoot.go``)."""


def test_a_restricted_tenant_namespace_is_shown_in_the_plan_and_the_release_gives_up_naming_the_refusal(
    lab: Lab,
) -> None:
    c = contract(lab)
    inp = StepInput(contract=c, run_id=f"tenant/{c.slug}")
    with exported({"TENANT_POD_SECURITY_ENFORCE": "restricted", "LOGIN_READY_BUDGET_S": "2"}):
        run(kube.namespace, inp)
        decision = run(login.plan, inp)[2].detail["podSecurity"]
        with pytest.raises(ApplicationError) as raised:
            run(login.release, inp)
    labels = lab.store.get("", "namespaces", c.slug)["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted"
    assert decision["enforce"] == "restricted"
    assert decision["loginPod"].startswith('refused: violates PodSecurity "restricted:latest": unrestricted capab')
    err = raised.value
    assert err.type == "LoginNotReady" and err.non_retryable
    message = err.message
    assert message.startswith("the login release gave up after 2 s (LOGIN_READY_BUDGET_S): 0 of 2 login pod(s) Ready")
    install_failed = f"Helm install failed for release {c.slug}/login-{c.slug} with chart sunk-login@1.4.x: {REFUSAL}"
    assert f"Ready=False (InstallFailed): {install_failed}" in message, message
    assert f"HelmRelease login-{c.slug} InstallFailed: {install_failed}" in message, message
    assert lab.store.list("", "pods", c.slug) == []


def test_the_login_pods_are_found_by_label_not_by_name(lab: Lab) -> None:
    """A replica named as a Deployment names its pods is verified; a Ready pod named like a StatefulSet's replica
    but without the release's label is not."""
    c = contract(lab)
    inp = StepInput(contract=c, run_id=f"tenant/{c.slug}")
    run(kube.namespace, inp)
    run(login.release, inp)
    second = lab.store.get("", "pods", f"login-{c.slug}-1", c.slug)
    lab.store.delete("", "pods", f"login-{c.slug}-1", c.slug)
    hashed = copy.deepcopy(second)
    hashed["metadata"] = {"name": f"login-{c.slug}-6d9f7-x2x4q", "labels": second["metadata"]["labels"]}
    decoy = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"login-{c.slug}-1", "labels": {"app": "login"}},
        "spec": {"containers": [{"name": "sshd", "image": "sunk-login"}]},
    }
    ready = {"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}
    for pod in (hashed, decoy):
        lab.store.create(pod, c.slug)
        lab.store.patch("", "pods", pod["metadata"]["name"], ready, MERGE_PATCH, c.slug, subresource="status")
    run(login.release, inp)
    lab.store.patch("", "secrets", f"{c.slug}-authorized-keys", {"data": None}, MERGE_PATCH, c.slug)
    messages = [f.message for f in login.checks(inp) if f.check == "login.authorized_keys"]
    assert messages == [
        f"authorized_keys is empty on login-{c.slug}-0 (/etc/ssh/authorized_keys.d/ lists nothing)",
        f"authorized_keys is empty on login-{c.slug}-6d9f7-x2x4q (/etc/ssh/authorized_keys.d/ lists nothing)",
    ]


def test_a_level_that_refuses_the_login_pod_is_refused_at_preflight_before_any_write(lab: Lab) -> None:
    c = contract(lab)
    with exported({"TENANT_POD_SECURITY_ENFORCE": "restricted"}):
        refused = [f for f in run(kube.preflight, StepInput(contract=c)).findings if f.check == "kube.pod_security"]
    assert [f.ok for f in refused] == [False], refused
    assert "enforce pod-security 'restricted' (TENANT_POD_SECURITY_ENFORCE)" in refused[0].message
    assert "runAsNonRoot != true" in refused[0].message
    assert "TENANT_POD_SECURITY_ENFORCE=baseline" in (refused[0].fix or "")
    admitted = run(kube.preflight, StepInput(contract=c)).findings
    assert not [f for f in admitted if f.check == "kube.pod_security"]
    assert lab.writes() == []
