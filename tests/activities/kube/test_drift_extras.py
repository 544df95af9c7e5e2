"""The Kubernetes part of the drift check on the lab's emulator: a NetworkPolicy labelled as the tenant's that the
contract does not render is extra, a tenant admin's own policy is not; a deleted policy is missing and an edited
quota names the field that changed."""

from __future__ import annotations

from tenantflow.activities.common import manifests
from tenantflow.activities.drift.extras import kube_changes, kube_extras
from tenantflow.activities.kube import steps as kube
from tenantflow.models.drift import DriftItem, DriftKind
from tenantflow.models.onboarding import StepInput
from tests.activities.kube.conftest import Lab
from tests.activities.kube.layer import contract, run
from tests.runbook_manifests import OUTPOST_PORTS


def policy(name: str, namespace: str, labels: dict[str, str]) -> dict[str, object]:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {"podSelector": {}, "policyTypes": ["Ingress"]},
    }


def test_kube_drift_names_extra_missing_and_changed_objects(lab: Lab) -> None:
    c = contract(lab)
    inp = StepInput(contract=c, run_id=f"tenant/{c.slug}")
    for step in (kube.namespace, kube.quota, kube.network_policy):  # the binding and RBAC are left out here
        run(step, inp)
    assert kube_extras(c) == []

    lab.store.create(policy("left-over", c.namespace, manifests.owner_labels(c.slug)))
    lab.store.create(policy("admins-own", c.namespace, {"team": "ml"}))
    [extra] = kube_extras(c)
    assert (extra.kind, extra.name, extra.drift) == ("NetworkPolicy", "left-over", DriftKind.extra)

    deleted = manifests.network_policies(c, OUTPOST_PORTS)[0]["metadata"]["name"]
    lab.store.delete("networking.k8s.io", "networkpolicies", deleted, c.namespace)
    quota = f"{c.slug}-quota"
    lab.store.patch(
        "", "resourcequotas", quota, {"spec": {"hard": {"requests.cpu": "8"}}}, "application/merge-patch+json", c.slug
    )
    applied = {"Namespace", "ResourceQuota", "LimitRange", "NetworkPolicy"}
    drift = {
        (item.kind, item.name): item
        for step in run(kube.plan, inp)
        if step.kind in applied and (item := DriftItem.of_step(step)) is not None
    }
    assert {key: item.drift for key, item in drift.items()} == {
        ("NetworkPolicy", deleted): DriftKind.missing,
        ("ResourceQuota", quota): DriftKind.changed,
    }
    assert kube_changes(c, drift[("ResourceQuota", quota)]) == "spec.hard.requests.cpu: 8 (want 1024)"
