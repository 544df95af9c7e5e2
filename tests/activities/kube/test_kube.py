"""Kubernetes-layer activities (namespace, quota, policies, RBAC) against the kube emulator over HTTP."""

from __future__ import annotations

import os
import subprocess

import httpx
import pytest
from temporalio.exceptions import ApplicationError

from tenantflow.activities.common.kubeensure import owned
from tenantflow.activities.common.kubeobjects import KubeObjects
from tenantflow.activities.drift.extras import leaf_differences
from tenantflow.activities.kube import steps as kube
from tenantflow.activities.kube.steps import step_manifests
from tenantflow.activities.login import steps as login
from tenantflow.activities.validate import steps as validate
from tenantflow.lab.daemons.slapd import SlapdHandle
from tenantflow.lab.kubeapi.media_types import MERGE_PATCH
from tenantflow.models import runbook
from tenantflow.models.onboarding import Facts, StepInput, UndoInput
from tenantflow.models.results import Outcome
from tenantflow.models.tenant import TenantContract
from tests.activities.kube.conftest import Lab
from tests.activities.kube.layer import HEALTHY, KUBE_STEPS, contract, errors, run
from tests.runbook_manifests import OUTPOST_PORTS, runbook_allow_policy

NAME = "kubernetes.io/metadata.name"


def test_kube_objects_have_runbook_values_and_undo_cleanly(lab: Lab) -> None:
    c = contract(lab)
    assert errors(run(kube.preflight, StepInput(contract=c))) == []
    inp = StepInput(contract=c, facts=Facts(nodes=HEALTHY[:8]), run_id=f"tenant/{c.slug}")
    plan = run(kube.plan, inp)
    assert [(s.kind, s.action.value) for s in plan] == [
        ("Namespace", "create"),
        ("ResourceQuota", "create"),
        ("LimitRange", "create"),
        ("ReservationBinding", "create"),
        ("NetworkPolicy", "create"),
        ("NetworkPolicy", "create"),
        ("NetworkPolicy", "create"),
        ("RoleBinding", "create"),
    ]
    applied = {fn.__name__: run(fn, inp).results for fn in KUBE_STEPS}
    ns = lab.store.get("", "namespaces", c.slug)["metadata"]["labels"]
    assert ns["tenant"] == c.slug
    assert ns["pod-security.kubernetes.io/enforce"] == "baseline"
    assert all(ns[f"pod-security.kubernetes.io/{m}"] == "restricted" for m in ("audit", "warn"))
    quota = lab.store.get("", "resourcequotas", f"{c.slug}-quota", c.slug)["spec"]["hard"]
    assert quota == {
        "requests.nvidia.com/gpu": "64",
        "requests.cpu": "1024",
        "requests.memory": "8Ti",
        "limits.memory": "10Ti",
        "persistentvolumeclaims": "50",
        "requests.storage": "100Ti",
    }
    limits = lab.store.get("", "limitranges", f"{c.slug}-defaults", c.slug)["spec"]["limits"][0]
    assert limits["default"] == {"cpu": "4", "memory": "16Gi"}
    binding = lab.store.get("scheduling.example.io", "reservationbindings", f"{c.slug}-binding", c.slug)["spec"]
    assert binding["reservationName"] == c.reservation_name
    assert binding["podSelector"] == {"matchLabels": {"app.kubernetes.io/managed-by": c.slug}}
    deny = lab.store.get("networking.k8s.io", "networkpolicies", f"{c.slug}-deny-all", c.slug)["spec"]
    assert deny == {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}
    allow = lab.store.get("networking.k8s.io", "networkpolicies", f"{c.slug}-allow", c.slug)["spec"]
    assert [p["port"] for p in allow["egress"][0]["ports"]] == [53, 636, 443]
    assert [
        ([p["namespaceSelector"]["matchLabels"][NAME] for p in r["to"]], r.get("ports")) for r in allow["egress"][1:]
    ] == [
        ([c.slug], None),
        (["auth"], [{"port": 6636, "protocol": "TCP"}]),  # the lab's outpost Service maps 636 to pod port 6636
        (["slurm-control"], [{"port": 6817, "protocol": "TCP"}, {"port": 6818, "protocol": "TCP"}]),
        (["kube-system"], [{"port": 53, "protocol": "UDP"}, {"port": 53, "protocol": "TCP"}]),
    ]
    assert len(allow["ingress"]) == 1, "no SrunPortRange without Slurm: the ingress from slurm-control admits it"
    ssh = lab.store.get("networking.k8s.io", "networkpolicies", f"{c.slug}-login-ssh", c.slug)["spec"]
    assert ssh["podSelector"] == {"matchLabels": {"app.kubernetes.io/instance": f"login-{c.slug}"}}
    assert ssh["ingress"][0]["ports"] == [{"port": 22, "protocol": "TCP"}]
    rb = lab.store.get("rbac.authorization.k8s.io", "rolebindings", f"{c.slug}-admins", c.slug)
    assert rb["roleRef"]["name"] == "edit" and rb["subjects"][0]["name"] == f"{c.slug}-admins"
    lab.reset_journal()
    for fn in KUBE_STEPS:
        assert {r.outcome for r in run(fn, inp).results} == {Outcome.unchanged}
    assert {s.action.value for s in run(kube.plan, inp)} == {"unchanged"}
    assert lab.writes() == []
    before = {(o["resource"], o["name"]) for o in lab.store.snapshot()["objects"]}
    undone = run(
        kube.undo, UndoInput(contract=c, facts=inp.facts, step="network_policy", results=applied["network_policy"])
    )
    assert [r.outcome for r in undone] == [Outcome.deleted] * 3
    after = {(o["resource"], o["name"]) for o in lab.store.snapshot()["objects"]}
    assert before - after == {("networkpolicies", f"{c.slug}-{name}") for name in ("deny-all", "allow", "login-ssh")}
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


def test_changed_quota_is_updated_and_undo_puts_it_back(lab: Lab) -> None:
    c = contract(lab)
    inp = StepInput(contract=c, run_id=f"tenant/{c.slug}")
    run(kube.namespace, inp)
    run(kube.quota, inp)
    lab.store.patch(
        "",
        "resourcequotas",
        f"{c.slug}-quota",
        {"spec": {"hard": {"requests.cpu": "8"}}},
        "application/merge-patch+json",
        c.slug,
    )
    assert [s.action.value for s in run(kube.plan, inp)][1] == "update"
    results = run(kube.quota, inp).results
    assert [r.outcome for r in results] == [Outcome.updated, Outcome.unchanged]
    hard = lab.store.get("", "resourcequotas", f"{c.slug}-quota", c.slug)["spec"]["hard"]
    assert hard["requests.cpu"] == "1024"
    run(kube.undo, UndoInput(contract=c, facts=inp.facts, step="quota", results=results))
    hard = lab.store.get("", "resourcequotas", f"{c.slug}-quota", c.slug)["spec"]["hard"]
    assert hard["requests.cpu"] == "8"


def test_quantities_the_apiserver_respells_are_unchanged_on_a_second_run_and_no_drift(lab: Lab) -> None:
    """kube-apiserver stores a Quantity canonically (8192Gi reads back as 8Ti): the second run writes nothing and
    the plan (which drift reads) finds nothing to change."""
    data = contract(lab).model_dump(mode="json")
    data["kube_quota"].update(requests_memory="8192Gi", limits_memory="10240Gi", default_memory="16384Mi")
    c = TenantContract.model_validate(data)
    inp = StepInput(contract=c, run_id=f"tenant/{c.slug}")
    run(kube.namespace, inp)
    first = run(kube.quota, inp).results
    assert [r.outcome for r in first] == [Outcome.created, Outcome.created]
    hard = lab.store.get("", "resourcequotas", f"{c.slug}-quota", c.slug)["spec"]["hard"]
    assert (hard["requests.memory"], hard["limits.memory"]) == ("8Ti", "10Ti")
    [limits] = lab.store.get("", "limitranges", f"{c.slug}-defaults", c.slug)["spec"]["limits"]
    assert limits["default"]["memory"] == "16Gi"
    assert [r.outcome for r in run(kube.quota, inp).results] == [Outcome.unchanged, Outcome.unchanged]
    actions = {(s.kind, s.action.value) for s in run(kube.plan, inp) if s.kind in {"ResourceQuota", "LimitRange"}}
    assert actions == {("ResourceQuota", "unchanged"), ("LimitRange", "unchanged")}
    for desired in step_manifests(c, OUTPOST_PORTS)[runbook.KUBE_QUOTA]:
        stored = KubeObjects(c.cluster).get(desired["kind"], desired["metadata"]["name"], c.namespace)
        assert leaf_differences(owned(desired), stored) == [], "tenantflow drift's field comparison"


def _with_policies(lab: Lab, policies: list[dict[str, object]]) -> TenantContract:
    data = contract(lab).model_dump(mode="json", by_alias=True, exclude_none=True)
    data["network"]["policies"] = policies
    return TenantContract.model_validate(data)


def test_the_runbooks_verbatim_policy_is_refused_at_plan_time_naming_each_blocked_path(lab: Lab) -> None:
    """The outpost Service maps 636 to pod port 6636: the runbook's literal 636 opens nothing LDAPS reaches."""
    c = _with_policies(lab, [runbook_allow_policy()])
    result = run(kube.preflight, StepInput(contract=c))
    blocked = [f.message for f in result.findings if f.check == "kube.network_policy" and not f.ok]
    assert [m.split(" is blocked")[0].removeprefix("under the tenant's NetworkPolicies the ") for m in blocked] == [
        "login pod to slurmctld 6817/TCP",
        "login pod to the LDAP outpost 6636/TCP",
        "login pod to DNS 53/TCP",
        "login pod from SSH clients 22/TCP",
        "login pod to slurmd 6818/TCP",
    ], blocked
    assert not any("53/UDP" in m for m in blocked)


def test_the_generated_policies_pass_and_the_plan_says_why_they_add_rules(lab: Lab) -> None:
    c = contract(lab)
    result = run(kube.preflight, StepInput(contract=c))
    assert [f.ok for f in result.findings if f.check == "kube.network_policy"] == [True]
    plan = run(kube.plan, StepInput(contract=c, facts=Facts(nodes=HEALTHY[:8]), run_id=f"tenant/{c.slug}"))
    [allow] = [s for s in plan if s.name == f"{c.slug}-allow"]
    assert any("6817/TCP" in why for why in allow.detail["why"])
    assert any(
        "maps 636 to pod port 6636" in why and "runbook's literal 636 would drop LDAPS" in why
        for why in allow.detail["why"]
    ), allow.detail["why"]
    assert "the LDAP outpost: Service auth/authentik-ldap-outpost 636/TCP -> pod port 6636" in allow.detail["why"]


def test_a_hand_made_policy_in_the_namespace_is_evaluated_with_ours(lab: Lab) -> None:
    c = _with_policies(lab, [])
    lab.store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": c.slug}})
    lab.store.create({**runbook_allow_policy(), "metadata": {"name": "hand-made", "namespace": c.slug}})
    messages = [
        f.message
        for f in run(kube.preflight, StepInput(contract=c)).findings
        if f.check == "kube.network_policy" and not f.ok
    ]
    assert len(messages) == 5 and "hand-made" not in messages[0]


def test_the_labs_login_probes_obey_the_tenant_policies(lab: Lab) -> None:
    """With the runbook's verbatim allow policy in place (applied by hand), the lab's login pod cannot reach
    slurmctld, as on a real cluster; with ours it can."""
    c = contract(lab)
    inp = StepInput(contract=c, run_id=f"tenant/{c.slug}")
    for fn in (kube.namespace, kube.network_policy, login.release):
        run(fn, inp)
    ours = [f.message for f in login.checks(inp) if f.check == "login.sinfo"]
    assert not any("NetworkPolicy" in m for m in ours), ours
    lab.store.delete("networking.k8s.io", "networkpolicies", f"{c.slug}-allow", c.slug)
    lab.store.create(runbook_allow_policy())
    refused = [f.message for f in login.checks(inp) if f.check == "login.sinfo"]
    assert [m.split(" failed: ")[0] for m in refused] == [f"sinfo -p {c.slug} on login-{c.slug}-{i}" for i in (0, 1)]
    for sinfo in refused:
        assert "Unable to contact slurm controller" in sinfo and "slurmctld.slurm-control:6817/TCP" in sinfo, sinfo


def test_an_outpost_service_whose_named_target_port_no_pod_declares_is_refused_at_preflight(lab: Lab) -> None:
    ports = lab.store.get("", "services", "authentik-ldap-outpost", "auth")["spec"]["ports"]
    ports = [{**p, "targetPort": "secure-ldap"} if p["port"] == 636 else p for p in ports]
    lab.store.patch("", "services", "authentik-ldap-outpost", {"spec": {"ports": ports}}, MERGE_PATCH, namespace="auth")
    c = contract(lab)
    refused = [(f.check, f.message) for f in run(kube.preflight, StepInput(contract=c)).findings if not f.ok]
    assert refused == [
        (
            "kube.network_policy",
            "Service auth/authentik-ldap-outpost maps 636/TCP to the port name 'secure-ldap', which no pod it selects "
            "declares ({'app': 'authentik-ldap-outpost'}); name the containerPort 'secure-ldap' in those pods, or "
            "give the Service a numeric targetPort",
        )
    ]
    with pytest.raises(ApplicationError, match="NetworkPolicy cannot be computed: Service auth/authentik-ldap-outpost"):
        run(kube.plan, StepInput(contract=c, facts=Facts(nodes=HEALTHY[:8]), run_id=f"tenant/{c.slug}"))


def _exec(lab: Lab, c: TenantContract, *argv: str) -> subprocess.CompletedProcess[str]:
    """``kubectl exec`` in the first login pod, its exit code and stderr kept."""
    env = {**os.environ, "KUBECONFIG": os.environ["TENANTFLOW_KUBECONFIG"]}
    args = ["kubectl", "--context", lab.target.context, "-n", c.slug, "exec", f"login-{c.slug}-0", "--", *argv]
    return subprocess.run(args, capture_output=True, text=True, env=env, check=False, timeout=30)


def test_the_runbooks_literal_636_policy_fails_the_login_check_on_an_outpost_serving_6636(
    lab: Lab, slapd: SlapdHandle | None
) -> None:
    """The lab's outpost Service maps 636 to pod port 6636 (Authentik's): under the policy tenantflow computes, the
    login pod's LDAPS lookups pass; under the runbook's literal allow policy (636 only) the login check fails."""
    if slapd is None:
        pytest.skip("slapd is not installed")
    c = contract(lab)
    inp = StepInput(contract=c, run_id=f"tenant/{c.slug}")
    for fn in (kube.namespace, kube.network_policy, login.release):
        run(fn, inp)
    assert not [f for f in login.checks(inp) if f.check.startswith("login.getent") and not f.ok]
    lab.store.delete("networking.k8s.io", "networkpolicies", f"{c.slug}-allow", c.slug)
    lab.store.create(runbook_allow_policy())
    failed = [f.message for f in login.checks(inp) if f.check == "login.getent_passwd" and not f.ok]
    assert failed == [
        f"getent passwd {u.username} on login-{c.slug}-{i} found nothing" for i in (0, 1) for u in c.users
    ]
    getent = _exec(lab, c, "getent", "passwd", "alice")
    assert getent.returncode == 2
    assert "Can't contact LDAP server" in getent.stderr
    assert "authentik-ldap-outpost.auth:636/TCP (egress, pod port 6636)" in getent.stderr, getent.stderr


def test_an_interactive_srun_passes_the_computed_policy_and_the_runbooks_drops_it(lab: Lab) -> None:
    """srun from the login pod needs slurmctld, slurmd's pods on 6818 and slurmd's connection back on
    SrunPortRange; the lab refuses it with srun's own words when a policy drops one of them (this lab runs no
    Slurm: a srun the policies let through says so)."""
    c = contract(lab)
    inp = StepInput(contract=c, run_id=f"tenant/{c.slug}")
    for fn in (kube.namespace, kube.network_policy, login.release):
        run(fn, inp)
    passed = _exec(lab, c, "srun", "-N1", "hostname")
    assert passed.stderr.startswith("srun: error: Slurm is not running in this lab (no SLURM_CONF)\n"), passed.stderr
    lab.store.delete("networking.k8s.io", "networkpolicies", f"{c.slug}-allow", c.slug)
    lab.store.create(runbook_allow_policy())
    refused = _exec(lab, c, "srun", "-N1", "hostname")
    assert refused.returncode == 1
    assert refused.stderr.startswith("srun: error: Unable to allocate resources: Unable to contact slurm controller")
    slurm = {"namespaceSelector": {"matchLabels": {NAME: "slurm-control"}}}
    ctld_only = {"to": [slurm], "ports": [{"port": 6817, "protocol": "TCP"}]}
    _allow(lab, c, "ctld", {"podSelector": {}, "policyTypes": ["Egress"], "egress": [ctld_only]})
    refused = _exec(lab, c, "srun", "-N1", "hostname")
    assert "Communication connection failure" in refused.stderr, refused.stderr
    assert "slurm-control:6818/TCP (egress)" in refused.stderr, refused.stderr
    lab.store.delete("networking.k8s.io", "networkpolicies", f"{c.slug}-allow", c.slug)
    dns = {"namespaceSelector": {"matchLabels": {NAME: "kube-system"}}}
    _allow(lab, c, "out", {"podSelector": {}, "policyTypes": ["Egress"], "egress": [{"to": [slurm, dns]}]})
    tenant_only = {"from": [{"namespaceSelector": {"matchLabels": {NAME: c.slug}}}]}
    _allow(lab, c, "in", {"podSelector": {}, "policyTypes": ["Ingress"], "ingress": [tenant_only]})
    refused = _exec(lab, c, "srun", "-N1", "hostname")
    assert refused.stderr.startswith("slurmstepd: error: connect io: Connection timed out"), refused.stderr
    assert ":60001/TCP (ingress)" in refused.stderr
    assert "srun: error: timeout waiting for task launch, started 0 of 1 tasks\nsrun: Job step aborted\n" in (
        refused.stderr
    )


def _allow(lab: Lab, c: TenantContract, name: str, spec: dict[str, object]) -> None:
    lab.store.create(
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": {"name": name, "namespace": c.slug},
            "spec": spec,
        }
    )


def test_preflight_names_the_apply_step_of_an_object_another_tenant_holds(lab: Lab) -> None:
    c = contract(lab)
    run(kube.namespace, StepInput(contract=c, run_id=f"tenant/{c.slug}"))
    lab.store.create(
        {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": f"{c.slug}-quota", "namespace": c.slug, "labels": {"tenant": "tenant-other"}},
            "spec": {"hard": {"requests.cpu": "1"}},
        }
    )
    refused = [f for f in run(kube.preflight, StepInput(contract=c)).findings if not f.ok]
    assert [(f.check, f.message) for f in refused] == [
        ("kube.quota", f"ResourceQuota {c.slug}/{c.slug}-quota already exists and belongs to tenant-other")
    ]


def test_the_binding_check_asks_the_api_server_which_pods_the_selector_selects(lab: Lab) -> None:
    """A ReservationBinding's podSelector may use matchExpressions (a LabelSelector): which pods it selects is the API
    server's answer to it as a labelSelector query, so an expression that selects the tenant's pods passes and one
    that leaves out the login pods names them."""
    c = contract(lab)
    inp = StepInput(contract=c, facts=Facts(nodes=HEALTHY[:2]), run_id=f"tenant/{c.slug}")
    for fn in (kube.namespace, kube.binding, login.release):
        run(fn, inp)
    name = f"{c.slug}-binding"
    for node in HEALTHY[:2]:  # what the SUNK chart's NodeSet template does for the tenant's slurmd pods
        labels = {"metadata": {"labels": {"app.kubernetes.io/managed-by": c.slug}}}
        lab.store.patch("", "pods", f"slurmd-{node}", labels, MERGE_PATCH, "slurm-control")

    def select(expression: dict[str, object]) -> str:
        selector = {"matchLabels": None, "matchExpressions": [expression]}
        lab.store.patch(
            "scheduling.example.io",
            "reservationbindings",
            name,
            {"spec": {"podSelector": selector}},
            MERGE_PATCH,
            c.slug,
        )
        found = validate.binding_selects_tenant_pods(inp)
        return "ok" if found.ok else found.message

    key = "app.kubernetes.io/managed-by"
    assert select({"key": key, "operator": "In", "values": [c.slug]}) == "ok"
    refused = select({"key": key, "operator": "NotIn", "values": [c.slug]})
    assert f"selects {key} notin ({c.slug})" in refused and f"login-{c.slug}-0" in refused, refused


def test_a_transient_failure_reading_slurms_ports_fails_the_plan_attempt_instead_of_changing_the_plan(
    lab: Lab,
) -> None:
    """slurmctld's exec answered 503 on every try: the attempt fails to be retried, rather than planning with
    slurm.conf's default port (a plan read again before the first write would differ and reopen the gate)."""
    c = contract(lab)
    rule = {"path": "/pods/slurmctld-0/exec$", "error_rate": 1.0, "error_status": 503}
    httpx.put(f"{lab.url}/_lab/faults", json={"rules": [rule]}, verify=False).raise_for_status()
    with pytest.raises(ApplicationError) as failed:
        run(kube.plan, StepInput(contract=c, facts=Facts(nodes=HEALTHY[:8]), run_id=f"tenant/{c.slug}"))
    assert failed.value.type == "Unavailable" and "503" in failed.value.message, failed.value
