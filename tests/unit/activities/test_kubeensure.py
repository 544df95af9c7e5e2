"""Ensure diffing without a cluster: owned fields, matching, the way back, the plan action, and API paths."""

from __future__ import annotations

from typing import Any

import pytest
from temporalio.exceptions import ApplicationError

from tenantflow.activities.common.kubeensure import (
    before_values,
    describe,
    ensure,
    equal,
    foreign_owner,
    matches,
    matches_before,
    merge_patch_for,
    owned,
    plan_action,
    plan_step,
    same_value,
    undo,
)
from tenantflow.activities.common.kubeobjects import KINDS
from tenantflow.activities.common.manifests import MANAGED_BY, MANAGER, TENANT_LABEL
from tenantflow.lab.kubeapi.patching import merge_patch
from tenantflow.models.plan import Action
from tenantflow.models.results import EnsureResult, Kept, KubeBefore, Outcome, WekaObject
from tests.memory_cluster import MemoryCluster

OURS = {MANAGED_BY: MANAGER, TENANT_LABEL: "tenant-a"}


def quota(hard: dict[str, str], labels: dict[str, str] | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "q", "namespace": "tenant-a", "labels": labels or dict(OURS), **extra},
        "spec": {"hard": hard},
    }


def test_owned_keeps_labels_annotations_and_spec_but_not_name_or_type() -> None:
    desired = quota({"cpu": "4"})
    assert owned(desired) == {"metadata": {"labels": OURS}, "spec": {"hard": {"cpu": "4"}}}


def test_matches_ignores_fields_we_do_not_own_and_compares_lists_whole() -> None:
    want = {"spec": {"hard": {"cpu": "4"}, "ports": [1, 2]}}
    assert matches(want, {"spec": {"hard": {"cpu": "4", "memory": "1Gi"}, "ports": [1, 2]}, "status": {}})
    assert not matches(want, {"spec": {"hard": {"cpu": "8"}, "ports": [1, 2]}})
    assert not matches(want, {"spec": {"hard": {"cpu": "4"}, "ports": [2, 1]}})
    assert matches({"spec": {}}, {"spec": None})


def test_before_values_is_a_merge_patch_back_with_none_for_what_was_absent() -> None:
    want = {"metadata": {"labels": {"a": "1", "b": "2"}}, "spec": {"hard": {"cpu": "4"}}}
    have = {"metadata": {"labels": {"a": "0"}}, "spec": {"hard": {"cpu": "2", "memory": "1Gi"}}}
    back = before_values(want, have)
    assert back == {"metadata": {"labels": {"a": "0", "b": None}}, "spec": {"hard": {"cpu": "2"}}}
    assert matches_before(back, have)
    assert not matches_before(back, {"metadata": {"labels": {"a": "1", "b": "2"}}, "spec": {"hard": {"cpu": "4"}}})


def test_plan_action_creates_adopts_updates_or_leaves() -> None:
    desired = quota({"cpu": "4"})
    assert plan_action(None, desired, "tenant-a") is Action.create
    assert plan_action(quota({"cpu": "4"}, labels={"app": "x"}), desired, "tenant-a") is Action.adopt
    assert plan_action(quota({"cpu": "2"}), desired, "tenant-a") is Action.update
    assert plan_action(quota({"cpu": "4"}, annotations={"x": "y"}), desired, "tenant-a") is Action.unchanged


def test_foreign_owner_reads_our_tenant_label_or_the_namespace_tenant_label() -> None:
    assert foreign_owner(quota({}, labels={TENANT_LABEL: "tenant-b"}), "tenant-a") == "tenant-b"
    assert foreign_owner(quota({}, labels={"tenant": "tenant-b"}), "tenant-a") == "tenant-b"
    assert foreign_owner(quota({}), "tenant-a") is None


def test_kind_paths_for_core_grouped_namespaced_and_cluster_scoped_kinds() -> None:
    assert KINDS["Secret"].path("ns", "s") == "/api/v1/namespaces/ns/secrets/s"
    assert KINDS["Deployment"].path("ns") == "/apis/apps/v1/namespaces/ns/deployments"
    assert KINDS["Deployment"].path() == "/apis/apps/v1/deployments"
    assert KINDS["Reservation"].path("ignored", "r") == "/apis/scheduling.example.io/v1alpha1/reservations/r"
    assert (
        KINDS["WorkerCluster"].at("v1alpha1").path("t", "w") == "/apis/trainy.ai/v1alpha1/namespaces/t/workerclusters/w"
    )
    with pytest.raises(ValueError, match="comes from discovery"):
        KINDS["WorkerCluster"].path("t", "w")


def test_resource_list_quantities_match_by_amount_and_nothing_else_does() -> None:
    quota = {"spec": {"hard": {"requests.memory": "8192Gi", "requests.cpu": "1024", "pods": "100"}}}
    stored = {"spec": {"hard": {"requests.memory": "8Ti", "requests.cpu": "1024", "pods": "100"}}}
    assert matches(quota, stored)
    assert not matches(quota, {"spec": {"hard": {**stored["spec"]["hard"], "requests.memory": "9Ti"}}})
    limits = {"spec": {"limits": [{"type": "Container", "default": {"memory": "16384Mi", "cpu": "4"}}]}}
    assert matches(limits, {"spec": {"limits": [{"type": "Container", "default": {"memory": "16Gi", "cpu": "4"}}]}})
    extra_key = {"type": "Container", "default": {"memory": "16Gi", "cpu": "4"}, "max": {"cpu": "8"}}
    assert not matches(limits, {"spec": {"limits": [extra_key]}}), "list items are still compared whole"
    assert not matches({"metadata": {"labels": {"tier": "1"}}}, {"metadata": {"labels": {"tier": "1.0"}}})
    assert not matches({"spec": {"replicas": 2}}, {"spec": {"replicas": "2"}})


def test_the_patch_of_an_empty_selector_clears_what_the_object_selected() -> None:
    """Found by tests/generated: ensure patched a deny-all whose podSelector had been narrowed with
    ``podSelector: {}``, which a JSON merge patch (RFC 7386, applied here by the lab apiserver's implementation)
    leaves as it was: the policy still denied only the selected pods, and every run reported it updated."""
    want = {"spec": {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}}
    have = {"spec": {"podSelector": {"matchLabels": {"app": "web"}}, "policyTypes": ["Ingress"]}, "status": {}}
    patch = merge_patch_for(want, have)
    assert patch == {"spec": {"podSelector": {"matchLabels": None}, "policyTypes": ["Ingress", "Egress"]}}
    assert matches(want, merge_patch(have, patch))
    labels = {"metadata": {"labels": {"a": "1"}}}
    assert merge_patch_for(labels, {"metadata": {"labels": {"b": "2"}}}) == labels, "other maps merge as before"


def test_equal_compares_structure_exactly_and_quantities_by_amount_only_in_resource_lists() -> None:
    assert equal({"a": [1, {"b": "x"}]}, {"a": [1, {"b": "x"}]})
    assert not equal({"a": [1]}, {"a": [1, 2]}), "a list with more items"
    assert not equal({"a": 1}, {"a": 1, "b": 2}), "a map with more keys"
    assert not equal({"a": {"b": 1}}, {"a": [1]}) and not equal([1], {"a": 1})
    assert equal({"hard": {"cpu": "1000m"}}, {"hard": {"cpu": "1"}}) and equal(
        {"hard": {"cpu": 2}}, {"hard": {"cpu": "2"}}
    )
    assert not equal({"spec": {"cpu": "1000m"}}, {"spec": {"cpu": "1"}}), "outside a ResourceList spelling counts"
    assert not equal({"hard": {"cpu": "1"}}, {"hard": {"cpu": "2"}})


def test_same_value_parses_only_quantity_leaves_that_are_numbers_or_strings() -> None:
    assert same_value("1Gi", "1024Mi", quantity=True) and not same_value("1Gi", "1024Mi", quantity=False)
    assert not same_value(True, "1", quantity=True) and not same_value("1", True, quantity=True)
    assert not same_value(1.0, "1", quantity=True) and not same_value("1", None, quantity=True)
    assert not same_value("lots", "lots of", quantity=True), "what is no quantity compares as text"
    assert same_value("x", "x", quantity=False)


def test_matches_wants_an_empty_map_empty_or_absent() -> None:
    assert matches({"podSelector": {}}, {"podSelector": {}}) and matches({"podSelector": {}}, {})
    assert not matches({"podSelector": {}}, {"podSelector": {"matchLabels": {"a": "b"}}})
    assert not matches({"spec": {"a": 1}}, {"spec": [1]})


class OneObject:
    """What ``KubeObjects.get`` answers for a cluster holding at most ``found``."""

    def __init__(self, found: dict[str, Any] | None) -> None:
        self.found = found

    def get(self, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        return self.found


def test_a_plan_step_names_the_object_and_the_action_the_world_calls_for() -> None:
    desired = quota({"cpu": "4"})
    step = plan_step(OneObject(None), "kube", desired, "tenant-a", {"hard": {"cpu": "4"}})  # type: ignore[arg-type]
    assert (step.layer, step.kind, step.name, step.namespace, step.action, step.detail) == (
        "kube",
        "ResourceQuota",
        "q",
        "tenant-a",
        Action.create,
        {"hard": {"cpu": "4"}},
    )
    assert plan_step(OneObject(quota({"cpu": "2"})), "kube", desired, "tenant-a").action is Action.update  # type: ignore[arg-type]
    assert plan_step(OneObject(desired), "kube", desired, "tenant-a").detail == {}  # type: ignore[arg-type]
    cluster_scoped = {"kind": "Namespace", "metadata": {"name": "tenant-a"}}
    assert plan_step(OneObject(None), "kube", cluster_scoped, "tenant-a").namespace is None  # type: ignore[arg-type]


def test_an_object_is_described_with_its_namespace_when_it_has_one() -> None:
    assert describe("ResourceQuota", "q", "tenant-a") == "ResourceQuota tenant-a/q"
    assert describe("Namespace", "tenant-a", None) == "Namespace tenant-a"


def test_ensure_refuses_another_tenants_object_naming_it() -> None:
    theirs = quota({"cpu": "2"}, labels={MANAGED_BY: MANAGER, TENANT_LABEL: "tenant-b"})
    cluster = MemoryCluster(theirs)
    with pytest.raises(ApplicationError) as refused:
        ensure(cluster, "kube", quota({"cpu": "4"}), "tenant-a", "tenant/run")  # type: ignore[arg-type]
    assert refused.value.type == "Conflict"
    assert str(refused.value) == (
        "Conflict: ResourceQuota tenant-a/q already exists and belongs to tenant-b; pick another tenant slug or "
        "remove the other object"
    )
    assert cluster.get("ResourceQuota", "q", "tenant-a") == theirs


def result(outcome: Outcome, kind: str = "ResourceQuota", before: dict[str, Any] | None = None) -> EnsureResult:
    data = KubeBefore(before=before) if before is not None else KubeBefore(before={})
    return EnsureResult(layer="kube", kind=kind, name="q", namespace="tenant-a", outcome=outcome, data=data)


def test_undo_reports_what_it_found_for_each_result_latest_first() -> None:
    gone = MemoryCluster()
    assert [(r.outcome, r.namespace) for r in undo(gone, "kube", [result(Outcome.created)], "tenant-a")] == [  # type: ignore[arg-type]
        (Outcome.absent, "tenant-a")
    ]
    deleting = MemoryCluster({**quota({"cpu": "4"}), "metadata": {**quota({})["metadata"], "deletionTimestamp": "x"}})
    assert [r.outcome for r in undo(deleting, "kube", [result(Outcome.created)], "tenant-a")] == [Outcome.absent]  # type: ignore[arg-type]
    taken = MemoryCluster(quota({"cpu": "4"}, labels={"app": "x"}))
    assert [r.outcome for r in undo(taken, "kube", [result(Outcome.created)], "tenant-a")] == [Outcome.unchanged]  # type: ignore[arg-type]
    assert taken.get("ResourceQuota", "q", "tenant-a") is not None, "no longer ours: left alone"
    restored = MemoryCluster(quota({"cpu": "2"}))
    back = result(Outcome.updated, before={"spec": {"hard": {"cpu": "2"}}})
    assert [r.outcome for r in undo(restored, "kube", [back], "tenant-a")] == [Outcome.unchanged]  # type: ignore[arg-type]
    both = MemoryCluster(quota({"cpu": "4"}))
    results = [
        result(Outcome.updated, before={"spec": {"hard": {"cpu": "2"}}}),
        result(Outcome.created, "Widget"),
        result(Outcome.unchanged),
    ]
    assert [(r.kind, r.outcome) for r in undo(both, "kube", results, "tenant-a")] == [
        ("ResourceQuota", Outcome.updated)
    ]  # type: ignore[arg-type]
    assert both.get("ResourceQuota", "q", "tenant-a")["spec"] == {"hard": {"cpu": "2"}}  # type: ignore[index]
    twice = MemoryCluster(quota({"cpu": "4"}, uid="u-1"))
    made = result(Outcome.created).model_copy(update={"data": WekaObject(uid="u-1")})
    order = [made, result(Outcome.updated, before={"spec": {"hard": {"cpu": "2"}}})]
    assert [r.outcome for r in undo(twice, "kube", order, "tenant-a")] == [Outcome.updated, Outcome.deleted]  # type: ignore[arg-type]


def test_a_create_records_the_uid_and_its_undo_deletes_only_that_object() -> None:
    cluster = MemoryCluster()
    made = ensure(cluster, "kube", quota({"cpu": "4"}), "tenant-a", "tenant/tenant-a")  # type: ignore[arg-type]
    first = cluster.get("ResourceQuota", "q", "tenant-a")
    assert first is not None and made.outcome is Outcome.created
    assert made.data == WekaObject(uid=first["metadata"]["uid"])
    assert first["metadata"]["annotations"]["tenantflow.io/created-by"] == "tenant/tenant-a"
    cluster.delete("ResourceQuota", "q", "tenant-a")
    again = cluster.create(quota({"cpu": "4"}))  # same name and labels, made by someone else
    (left,) = undo(cluster, "kube", [made], "tenant-a")  # type: ignore[arg-type]
    assert left.outcome is Outcome.unchanged and isinstance(left.data, Kept)
    assert again["metadata"]["uid"] in left.data.kept and first["metadata"]["uid"] in left.data.kept
    assert cluster.get("ResourceQuota", "q", "tenant-a") == again
    (gone,) = undo(
        cluster, "kube", [made.model_copy(update={"data": WekaObject(uid=again["metadata"]["uid"])})], "tenant-a"
    )  # type: ignore[arg-type]
    assert gone.outcome is Outcome.deleted and cluster.get("ResourceQuota", "q", "tenant-a") is None


def test_an_adopted_object_reported_created_without_a_uid_is_left_alone() -> None:
    """A namespace made by hand after the re-plan and adopted by a step whose answer was lost: the retry finds it
    ours and the saga counts the planned creation as made; its labels and the run annotation are the adoption's
    own, so they prove nothing."""
    cluster = MemoryCluster(quota({"cpu": "2"}, labels={"team": "ml"}))
    adopted = ensure(cluster, "kube", quota({"cpu": "4"}), "tenant-a", "tenant/tenant-a")  # type: ignore[arg-type]
    assert adopted.outcome is Outcome.adopted
    assert cluster.get("ResourceQuota", "q", "tenant-a")["metadata"]["annotations"] == {  # type: ignore[index]
        "tenantflow.io/run": "tenant/tenant-a",
        "tenantflow.io/adopted-by": "tenant/tenant-a",
    }
    planned = EnsureResult(layer="kube", kind="ResourceQuota", name="q", namespace="tenant-a", outcome=Outcome.created)
    (left,) = undo(cluster, "kube", [planned], "tenant-a")  # type: ignore[arg-type]
    assert left.outcome is Outcome.unchanged and isinstance(left.data, Kept)
    assert "adopted" in left.data.kept
    assert cluster.get("ResourceQuota", "q", "tenant-a") is not None
