"""Kubernetes-layer activities (namespace, quota, policies, RBAC) against the kube emulator over HTTP."""

from __future__ import annotations

from tenantflow.activities import kube
from tenantflow.models.onboarding import Facts, StepInput, UndoInput
from tenantflow.models.results import Outcome
from tests.activities.kube.conftest import Lab
from tests.activities.kube.layer import HEALTHY, KUBE_STEPS, contract, errors, run


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
        ("RoleBinding", "create"),
    ]
    applied = {fn.__name__: run(fn, inp).results for fn in KUBE_STEPS}
    ns = lab.store.get("", "namespaces", c.slug)["metadata"]["labels"]
    assert ns["tenant"] == c.slug
    assert all(ns[f"pod-security.kubernetes.io/{m}"] == "restricted" for m in ("enforce", "audit", "warn"))
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
