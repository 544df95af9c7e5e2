"""Capacity, Kubernetes and login activities against the kube emulator over HTTP, with the lab controllers."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from tenantflow.activities import capacity, kube, login
from tenantflow.lab.daemons.slapd import SlapdHandle
from tenantflow.lab.daemons.slurm import SlurmHandle
from tenantflow.models.onboarding import Facts, StepInput, StepResult, UndoInput, UserFacts
from tenantflow.models.results import EnsureResult, Outcome
from tenantflow.models.tenant import TenantContract
from tests.layers_kube.conftest import Lab

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tenant-foo.yaml"
HEALTHY = [*(f"gpu-{i:02d}" for i in range(1, 14)), "gpu-16"]


def contract(lab: Lab, **capacity_fields: Any) -> TenantContract:
    data = yaml.safe_load(EXAMPLE.read_text())
    data["cluster"] = lab.target.model_dump()
    data["capacity"].update(capacity_fields)
    return TenantContract.model_validate(data)


def run(fn: Any, arg: Any) -> Any:
    return ActivityEnvironment().run(fn, arg)


def preflight(c: TenantContract) -> StepResult:
    result: StepResult = run(capacity.preflight, StepInput(contract=c, run_id=f"tenant/{c.slug}"))
    return result


def errors(result: StepResult) -> list[str]:
    return [f.message for f in result.findings if not f.ok]


def reserve(lab: Lab, c: TenantContract) -> tuple[StepInput, list[EnsureResult]]:
    pre = preflight(c)
    assert errors(pre) == []
    inp = StepInput(contract=c, facts=pre.facts, run_id=f"tenant/{c.slug}")
    created = run(capacity.reservation, inp).results
    run(capacity.wait_reservation, inp)
    return inp, created


def test_preflight_picks_healthy_unreserved_nodes(lab: Lab) -> None:
    result = preflight(contract(lab))
    assert errors(result) == []
    assert result.facts.nodes == HEALTHY[:8]
    assert lab.writes() == []


def test_preflight_fails_clearly_when_too_few(lab: Lab) -> None:
    result = preflight(contract(lab, gpus=15 * 8))
    [message] = errors(result)
    assert "need 15 healthy unreserved nodes" in message and "only 14 are available" in message
    assert "1 NotReady, 1 cordoned" in message
    assert result.facts.nodes == []
    assert lab.writes() == []


def test_preflight_unknown_sku_and_explicit_node_problems(lab: Lab) -> None:
    assert "no node has node.kubernetes.io/instance-type=a100-8x" in errors(preflight(contract(lab, sku="a100-8x")))[0]
    nodes = [*HEALTHY[:6], "gpu-14", "gpu-15"]
    messages = errors(preflight(contract(lab, gpus=64, nodes=nodes)))
    assert messages == ["node gpu-14 is NotReady", "node gpu-15 is cordoned (SchedulingDisabled)"]
    other = contract(lab).model_copy(update={"slug": "tenant-bar"})
    run(capacity.reservation, StepInput(contract=other, facts=Facts(nodes=["gpu-02"]), run_id="x"))
    lab.reset_journal()
    messages = errors(preflight(contract(lab, gpus=64, nodes=HEALTHY[:8])))
    assert messages == ["node gpu-02 is reserved by tenant tenant-bar (Reservation tenant-bar-reservation)"]
    assert lab.writes() == []


def test_reservation_labels_exactly_the_nodes_and_reruns_are_idempotent(lab: Lab) -> None:
    c = contract(lab)
    [planned] = run(capacity.plan, StepInput(contract=c, facts=Facts(nodes=HEALTHY[:8])))
    assert planned.action.value == "create" and planned.detail["nodes"] == HEALTHY[:8]
    inp, created = reserve(lab, c)
    assert [r.outcome for r in created] == [Outcome.created]
    assert [s.action.value for s in run(capacity.plan, inp)] == ["unchanged"]
    assert lab.node_labels() == {n: c.slug for n in HEALTHY[:8]}
    node = lab.store.get("", "nodes", "gpu-01")
    assert {"key": "reserved.tenant", "value": c.slug, "effect": "NoSchedule"} in node["spec"]["taints"]
    res = lab.store.get("scheduling.example.io", "reservations", c.reservation_name)
    assert res["spec"]["evictOnRelease"] is False and res["status"]["phase"] == "Ready"
    lab.reset_journal()
    again = preflight(c)
    assert errors(again) == [] and again.facts.nodes == HEALTHY[:8]
    assert [r.outcome for r in run(capacity.reservation, inp).results] == [Outcome.unchanged]
    run(capacity.wait_reservation, inp)
    assert lab.writes() == []
    undo = UndoInput(contract=c, facts=inp.facts, step="reservation", results=created)
    assert [r.outcome for r in run(capacity.undo, undo)] == [Outcome.deleted]
    assert lab.node_labels() == {}
    assert "taints" not in lab.store.get("", "nodes", "gpu-01")["spec"]
    assert [r.outcome for r in run(capacity.undo, undo)] == [Outcome.absent]


def test_conflict_with_another_tenants_reservation_is_named(lab: Lab) -> None:
    c = contract(lab)
    pre = preflight(c)
    other = contract(lab).model_copy(update={"slug": "tenant-bar"})
    run(capacity.reservation, StepInput(contract=other, facts=Facts(nodes=["gpu-03"]), run_id="x"))
    inp = StepInput(contract=c, facts=pre.facts, run_id=f"tenant/{c.slug}")
    run(capacity.reservation, inp)
    with pytest.raises(ApplicationError) as err:
        run(capacity.wait_reservation, inp)
    assert err.value.type == "Conflict" and err.value.non_retryable
    assert "node gpu-03 is already in Reservation tenant-bar-reservation of tenant tenant-bar" in str(err.value)
    assert lab.node_labels()["gpu-03"] == "tenant-bar"
    assert errors(preflight(c)) == ["node gpu-03 of Reservation tenant-foo-reservation is also held by tenant "
                                    "tenant-bar (Reservation tenant-bar-reservation)"]


def test_preflight_reports_slug_in_use(lab: Lab) -> None:
    lab.store.create({"apiVersion": "v1", "kind": "Namespace",
                      "metadata": {"name": "tenant-foo", "labels": {"tenant": "tenant-other"}}})
    assert any("namespace tenant-foo already exists and belongs to tenant-other" in m
               for m in errors(preflight(contract(lab))))


KUBE_STEPS = (kube.namespace, kube.quota, kube.binding, kube.network_policy, kube.rbac)


def test_kube_objects_have_runbook_values_and_undo_cleanly(lab: Lab) -> None:
    c = contract(lab)
    assert errors(run(kube.preflight, StepInput(contract=c))) == []
    inp = StepInput(contract=c, facts=Facts(nodes=HEALTHY[:8]), run_id=f"tenant/{c.slug}")
    plan = run(kube.plan, inp)
    assert [(s.kind, s.action.value) for s in plan] == [
        ("Namespace", "create"), ("ResourceQuota", "create"), ("LimitRange", "create"),
        ("ReservationBinding", "create"), ("NetworkPolicy", "create"), ("NetworkPolicy", "create"),
        ("RoleBinding", "create")]
    applied = {fn.__name__: run(fn, inp).results for fn in KUBE_STEPS}
    ns = lab.store.get("", "namespaces", c.slug)["metadata"]["labels"]
    assert ns["tenant"] == c.slug
    assert all(ns[f"pod-security.kubernetes.io/{m}"] == "restricted" for m in ("enforce", "audit", "warn"))
    quota = lab.store.get("", "resourcequotas", f"{c.slug}-quota", c.slug)["spec"]["hard"]
    assert quota == {"requests.nvidia.com/gpu": "64", "requests.cpu": "1024", "requests.memory": "8Ti",
                     "limits.memory": "10Ti", "persistentvolumeclaims": "50", "requests.storage": "100Ti"}
    limits = lab.store.get("", "limitranges", f"{c.slug}-defaults", c.slug)["spec"]["limits"][0]
    assert limits["default"] == {"cpu": "4", "memory": "16Gi"}
    binding = lab.store.get("scheduling.example.io", "reservationbindings", f"{c.slug}-binding", c.slug)["spec"]
    assert binding["reservationName"] == c.reservation_name
    assert binding["podSelector"] == {"matchLabels": {"app.kubernetes.io/managed-by": c.slug}}
    deny = lab.store.get("networking.k8s.io", "networkpolicies", f"{c.slug}-deny-all", c.slug)["spec"]
    assert deny == {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}
    allow = lab.store.get("networking.k8s.io", "networkpolicies", f"{c.slug}-allow", c.slug)["spec"]
    assert [p["port"] for p in allow["egress"][0]["ports"]] == [53, 636, 443]
    rb = lab.store.get("rbac.authorization.k8s.io", "rolebindings", f"{c.slug}-admins", c.slug)
    assert rb["roleRef"]["name"] == "edit" and rb["subjects"][0]["name"] == f"{c.slug}-admins"
    lab.reset_journal()
    for fn in KUBE_STEPS:
        assert {r.outcome for r in run(fn, inp).results} == {Outcome.unchanged}
    assert {s.action.value for s in run(kube.plan, inp)} == {"unchanged"}
    assert lab.writes() == []
    before = {(o["resource"], o["name"]) for o in lab.store.snapshot()["objects"]}
    undone = run(kube.undo, UndoInput(contract=c, facts=inp.facts, step="network_policy",
                                      results=applied["network_policy"]))
    assert [r.outcome for r in undone] == [Outcome.deleted, Outcome.deleted]
    after = {(o["resource"], o["name"]) for o in lab.store.snapshot()["objects"]}
    assert before - after == {("networkpolicies", f"{c.slug}-deny-all"), ("networkpolicies", f"{c.slug}-allow")}
    for step in ("rbac", "binding", "quota", "namespace"):
        run(kube.undo, UndoInput(contract=c, facts=inp.facts, step=step, results=applied[step]))
    assert not any(o["namespace"] == c.slug or o["name"] == c.slug for o in lab.store.snapshot()["objects"])


def test_adopted_namespace_is_released_not_deleted(lab: Lab) -> None:
    c = contract(lab)
    lab.store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": c.slug}})
    inp = StepInput(contract=c, run_id=f"tenant/{c.slug}")
    [result] = run(kube.namespace, inp).results
    assert result.outcome is Outcome.adopted
    run(kube.undo, UndoInput(contract=c, facts=inp.facts, step="namespace", results=[result]))
    labels = lab.store.get("", "namespaces", c.slug)["metadata"]["labels"]
    assert labels == {"kubernetes.io/metadata.name": c.slug}


def test_login_release_pods_and_verify(lab: Lab, slapd: SlapdHandle | None) -> None:
    c = contract(lab)
    inp = StepInput(contract=c, run_id=f"tenant/{c.slug}")
    run(kube.namespace, inp)
    assert [s.action.value for s in run(login.plan, inp)] == ["create", "create", "create"]
    released = run(login.release, inp).results
    assert [(r.kind, r.name) for r in released] == [
        ("Secret", "ldap-bind-creds"), ("Secret", f"{c.slug}-authorized-keys"), ("HelmRelease", f"login-{c.slug}")]
    copied = lab.store.get("", "secrets", "ldap-bind-creds", c.slug)["data"]
    assert copied == lab.store.get("", "secrets", "ldap-bind-creds", "auth")["data"]
    pods = {p["metadata"]["name"] for p in lab.store.list("", "pods", c.slug)}
    assert pods == {"login-tenant-foo-0", "login-tenant-foo-1"}
    values = lab.store.get("helm.example.io", "helmreleases", "login-tenant-foo", c.slug)["spec"]["values"]
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


def test_login_verify_finds_empty_authorized_keys(lab: Lab, slapd: SlapdHandle | None) -> None:
    c = contract(lab)
    inp = StepInput(contract=c, run_id=f"tenant/{c.slug}")
    run(kube.namespace, inp)
    run(login.release, inp)
    lab.store.patch("", "secrets", f"{c.slug}-authorized-keys", {"data": None}, "application/merge-patch+json",
                    c.slug)
    messages = [f.message for f in login.checks(inp) if f.check == "login.authorized_keys"]
    assert messages == ["authorized_keys is empty on login-tenant-foo-0 (/etc/ssh/authorized_keys.d/ lists nothing)"]


def reservation_status(lab: Lab, name: str, phase: str) -> dict[str, Any]:
    """The Reservation's status once the operator has set ``phase`` (it reconciles asynchronously)."""
    deadline = time.monotonic() + 10
    while True:
        status: dict[str, Any] = lab.store.get("scheduling.example.io", "reservations", name).get("status") or {}
        if status.get("phase") == phase or time.monotonic() > deadline:
            return status
        time.sleep(0.05)


def kubectl(lab: Lab, *args: str) -> str:
    env = {**os.environ, "KUBECONFIG": lab.target.kubeconfig, "KUBECACHEDIR": str(Path(lab.target.kubeconfig).parent)}
    return subprocess.run(["kubectl", "--context", lab.target.context, *args], capture_output=True, text=True,
                          env=env, check=True, timeout=30).stdout


def test_runbook_kubectl_view_of_the_reservation(lab: Lab) -> None:
    c = contract(lab)
    reserve(lab, c)
    names = kubectl(lab, "get", "nodes", "-l", f"reserved.tenant={c.slug}", "-o", "name").split()
    assert names == [f"node/{n}" for n in HEALTHY[:8]]
    assert kubectl(lab, "get", "reservation", c.reservation_name, "-o", "jsonpath={.status.phase}") == "Ready"


def test_released_nodes_go_to_the_waiting_reservation(lab: Lab) -> None:
    c = contract(lab)
    inp, created = reserve(lab, c)
    other = contract(lab).model_copy(update={"slug": "tenant-bar"})
    run(capacity.reservation, StepInput(contract=other, facts=Facts(nodes=["gpu-03"]), run_id="x"))
    bar = reservation_status(lab, "tenant-bar-reservation", "Conflict")
    assert bar["phase"] == "Conflict" and bar["conflicts"][0]["node"] == "gpu-03"
    run(capacity.undo, UndoInput(contract=c, facts=inp.facts, step="reservation", results=created))
    bar = reservation_status(lab, "tenant-bar-reservation", "Ready")
    assert bar["phase"] == "Ready" and bar["reservedNodes"] == ["gpu-03"]
    assert lab.node_labels() == {"gpu-03": "tenant-bar"}


def test_changed_quota_is_updated_and_undo_puts_it_back(lab: Lab) -> None:
    c = contract(lab)
    inp = StepInput(contract=c, run_id=f"tenant/{c.slug}")
    run(kube.namespace, inp)
    run(kube.quota, inp)
    lab.store.patch("", "resourcequotas", f"{c.slug}-quota", {"spec": {"hard": {"requests.cpu": "8"}}},
                    "application/merge-patch+json", c.slug)
    assert [s.action.value for s in run(kube.plan, inp)][1] == "update"
    results = run(kube.quota, inp).results
    assert [r.outcome for r in results] == [Outcome.updated, Outcome.unchanged]
    hard = lab.store.get("", "resourcequotas", f"{c.slug}-quota", c.slug)["spec"]["hard"]
    assert hard["requests.cpu"] == "1024"
    run(kube.undo, UndoInput(contract=c, facts=inp.facts, step="quota", results=results))
    hard = lab.store.get("", "resourcequotas", f"{c.slug}-quota", c.slug)["spec"]["hard"]
    assert hard["requests.cpu"] == "8"


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
    wrong = inp.model_copy(update={"facts": Facts(users={"bob": UserFacts(pk=1, uid_number=2999, gid_number=4099)},
                                                  group_gid=4099)})
    messages = [f.message for f in login.checks(wrong) if f.check.startswith("login.getent")]
    assert messages == ["bob is uid 2148 gid 4099 on login-tenant-foo-0 but 2999/4099 in LDAP"]


@pytest.mark.slurm
@pytest.mark.ldap
def test_login_verify_passes_against_real_slapd_and_slurm(lab: Lab, slapd: SlapdHandle | None,
                                                          slurm: SlurmHandle) -> None:
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
