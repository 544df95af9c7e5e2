"""Login activities (release, verify) against the kube emulator, the lab's login controller, real slapd and Slurm."""

from __future__ import annotations

import base64
import json

import pytest

from tenantflow.activities.kube import steps as kube
from tenantflow.activities.login import steps as login
from tenantflow.lab.daemons.slapd import SlapdHandle
from tenantflow.lab.daemons.slurm import SlurmHandle
from tenantflow.models.onboarding import Facts, StepInput, UndoInput, UserFacts
from tenantflow.models.results import Outcome
from tests.activities.kube.conftest import Lab
from tests.activities.kube.layer import contract, kubectl, run


def test_login_release_pods_and_verify(lab: Lab, slapd: SlapdHandle | None) -> None:
    c = contract(lab)
    inp = StepInput(contract=c, run_id=f"tenant/{c.slug}")
    run(kube.namespace, inp)
    planned = run(login.plan, inp)
    assert [s.action.value for s in planned] == ["create", "create", "create"]
    decision = planned[2].detail["podSecurity"]
    assert {k: decision[k] for k in ("namespace", "enforce", "warn", "audit", "loginPod")} == {
        "namespace": c.slug,
        "enforce": "baseline",
        "warn": "restricted",
        "audit": "restricted",
        "loginPod": "admitted",
    }
    assert "SETUID" in decision["why"] and "restricted" in decision["why"]
    released = run(login.release, inp).results
    assert [(r.kind, r.name) for r in released] == [
        ("Secret", "ldap-bind-creds"),
        ("Secret", f"{c.slug}-authorized-keys"),
        ("HelmRelease", f"login-{c.slug}"),
    ]
    copied = lab.store.get("", "secrets", "ldap-bind-creds", c.slug)["data"]
    assert copied == lab.store.get("", "secrets", "ldap-bind-creds", "auth")["data"]
    pods = {p["metadata"]["name"] for p in lab.store.list("", "pods", c.slug)}
    assert pods == {"login-tenant-foo-0", "login-tenant-foo-1"}
    release = lab.store.get("helm.toolkit.fluxcd.io", "helmreleases", "login-tenant-foo", c.slug)
    assert {(x["type"], x["status"], x["reason"]) for x in release["status"]["conditions"]} == {
        ("Ready", "True", "InstallSucceeded"),
        ("Released", "True", "InstallSucceeded"),
    }
    values = release["spec"]["values"]
    assert values["ldap"]["bindPasswordSecret"] == "ldap-bind-creds" and "password" not in str(values["ldap"])
    assert values["service"]["annotations"]["external-dns.alpha.kubernetes.io/hostname"] == c.login_hostname
    lab.reset_journal()
    assert {r.outcome for r in run(login.release, inp).results} == {Outcome.unchanged}
    assert lab.writes() == []
    findings = login.checks(inp)
    failed = {f.check for f in findings if not f.ok}
    if slapd is None:
        failed -= {"login.getent_passwd", "login.getent_group"}
    assert failed == ({"login.sinfo"} if not lab.ctx.slurm_env else set())
    undone = run(login.undo, UndoInput(contract=c, facts=inp.facts, step="release", results=released))
    assert [r.outcome for r in undone] == [Outcome.deleted, Outcome.deleted, Outcome.deleted]
    assert lab.store.list("", "pods", c.slug) == []
    assert lab.store.get("", "secrets", "ldap-bind-creds", "auth")


def test_a_rotated_bind_password_never_enters_the_undo_state(lab: Lab) -> None:
    """After the platform rotates the LDAP bind password, re-applying updates the tenant's copy; the old password
    (base64 or plain) appears nowhere in the step's result, and the undo leaves the current password in place
    (the platform's Secret owns it) while the authorized keys, public, still go back."""
    c = contract(lab)
    inp = StepInput(contract=c, run_id=f"tenant/{c.slug}")
    run(kube.namespace, inp)
    run(login.release, inp)
    old = base64.b64decode(lab.store.get("", "secrets", "ldap-bind-creds", "auth")["data"]["password"]).decode()
    new = base64.b64encode(b"rotated-by-the-platform").decode()
    lab.store.patch(
        "", "secrets", "ldap-bind-creds", {"data": {"password": new}}, "application/merge-patch+json", "auth"
    )
    alice, bob = c.users[0], c.users[1]
    keys = c.model_copy(update={"users": [alice.model_copy(update={"ssh_keys": bob.ssh_keys}), *c.users[1:]]})
    reapplied = run(login.release, StepInput(contract=keys, run_id=f"tenant/{c.slug}")).results
    assert [r.outcome for r in reapplied[:2]] == [Outcome.updated, Outcome.updated]
    recorded = json.dumps([r.model_dump(mode="json") for r in reapplied])
    assert old not in recorded and base64.b64encode(old.encode()).decode() not in recorded, recorded
    undo = UndoInput(contract=keys, facts=inp.facts, step="release", results=reapplied)
    run(login.undo, undo)
    assert lab.store.get("", "secrets", "ldap-bind-creds", c.slug)["data"]["password"] == new
    restored = lab.store.get("", "secrets", f"{c.slug}-authorized-keys", c.slug)["data"]
    assert base64.b64decode(restored[alice.username]).decode() == "\n".join(alice.ssh_keys) + "\n"


def test_login_verify_finds_empty_authorized_keys(lab: Lab, slapd: SlapdHandle | None) -> None:
    c = contract(lab)
    inp = StepInput(contract=c, run_id=f"tenant/{c.slug}")
    run(kube.namespace, inp)
    run(login.release, inp)
    lab.store.patch("", "secrets", f"{c.slug}-authorized-keys", {"data": None}, "application/merge-patch+json", c.slug)
    messages = [f.message for f in login.checks(inp) if f.check == "login.authorized_keys"]
    assert messages == [
        "authorized_keys is empty on login-tenant-foo-0 (/etc/ssh/authorized_keys.d/ lists nothing)",
        "authorized_keys is empty on login-tenant-foo-1 (/etc/ssh/authorized_keys.d/ lists nothing)",
    ]


@pytest.mark.ldap
def test_login_pod_resolves_users_from_slapd(lab: Lab, slapd: SlapdHandle | None) -> None:
    if slapd is None:
        pytest.skip("slapd is not installed")
    c = contract(lab)
    inp = StepInput(contract=c, run_id=f"tenant/{c.slug}")
    run(kube.namespace, inp)
    run(login.release, inp)
    out = kubectl(lab, "-n", c.slug, "exec", "login-tenant-foo-0", "--", "getent", "passwd", "alice")
    assert out == "alice:x:2147:4099:Alice Researcher:/home/alice:/bin/bash\n"
    out = kubectl(lab, "-n", c.slug, "exec", "login-tenant-foo-0", "--", "getent", "group", c.slug)
    assert out == "tenant-foo:*:4099:alice,bob,carol\n"
    wrong = inp.model_copy(
        update={"facts": Facts(users={"bob": UserFacts(pk=1, uid_number=2999, gid_number=4099)}, group_gid=4099)}
    )
    messages = [f.message for f in login.checks(wrong) if f.check.startswith("login.getent")]
    assert messages == [
        "bob is uid 2148 gid 4099 on login-tenant-foo-0 but 2999/4099 in LDAP",
        "bob is uid 2148 gid 4099 on login-tenant-foo-1 but 2999/4099 in LDAP",
    ]


@pytest.mark.slurm
@pytest.mark.ldap
def test_login_verify_passes_against_real_slapd_and_slurm(
    lab: Lab, slapd: SlapdHandle | None, slurm: SlurmHandle
) -> None:
    if slapd is None:
        pytest.skip("slapd is not installed")
    lab.ctx.slurm_env = {"SLURM_CONF": str(slurm.slurm_conf)}
    c = contract(lab)
    inp = StepInput(contract=c, run_id=f"tenant/{c.slug}")
    run(kube.namespace, inp)
    run(login.release, inp)
    result = run(login.verify, inp)
    assert [(f.check, f.ok) for f in result.findings] == [("login.verify", True)]
    out = kubectl(lab, "-n", c.slug, "exec", "login-tenant-foo-0", "--", "sinfo", "-h", "-p", c.slug, "-o", "%P %N")
    assert out.split() == ["tenant-foo", "gpu-[01-08]"]
