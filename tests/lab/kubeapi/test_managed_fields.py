"""Field managers on the emulated apiserver, over HTTPS with the kubernetes client and kubectl: managedFields
recorded as kube-apiserver records them (manager, operation, apiVersion, time, FieldsV1), the field managers it
refuses, server-side apply (create, conflicts, force, removing fields no longer applied) and the
PodDisruptionBudget kind."""

from __future__ import annotations

import json
from typing import Any

import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.lab.kubeapi.conftest import Cluster

APPLY = "application/apply-patch+yaml"


def _configmap(ns: str, **data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "cfg", "namespace": ns, "labels": {"app": "x"}},
        "data": data,
    }


def _managed(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {entry["manager"]: entry for entry in obj["metadata"]["managedFields"]}


def test_a_create_records_its_manager_and_every_field_it_set(cluster: Cluster) -> None:
    ns = cluster.namespace()
    core = client.CoreV1Api(cluster.api())
    core.create_namespaced_config_map(ns, _configmap(ns, a="1", b="2"), field_manager="tenantflow")
    _, cm = cluster.raw("GET", f"/api/v1/namespaces/{ns}/configmaps/cfg")
    (entry,) = cm["metadata"]["managedFields"]
    assert entry["manager"] == "tenantflow" and entry["operation"] == "Update"
    assert entry["apiVersion"] == "v1" and entry["fieldsType"] == "FieldsV1" and entry["time"].endswith("Z")
    assert entry["fieldsV1"] == {
        "f:data": {".": {}, "f:a": {}, "f:b": {}},
        "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
    }


def test_without_a_field_manager_the_user_agent_is_recorded(cluster: Cluster) -> None:
    ns = cluster.namespace()
    client.CoreV1Api(cluster.api()).create_namespaced_config_map(ns, _configmap(ns, a="1"))
    _, cm = cluster.raw("GET", f"/api/v1/namespaces/{ns}/configmaps/cfg")
    assert list(_managed(cm)) == ["OpenAPI-Generator"]


def test_an_update_takes_the_fields_it_changed_and_a_no_op_writes_nothing(cluster: Cluster) -> None:
    ns = cluster.namespace()
    core = client.CoreV1Api(cluster.api())
    core.create_namespaced_config_map(ns, _configmap(ns, a="1", b="2"), field_manager="first")
    core.patch_namespaced_config_map("cfg", ns, {"data": {"b": "3", "c": "4"}}, field_manager="second")
    _, cm = cluster.raw("GET", f"/api/v1/namespaces/{ns}/configmaps/cfg")
    managed = _managed(cm)
    assert managed["first"]["fieldsV1"] == {
        "f:data": {".": {}, "f:a": {}},
        "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
    }
    assert managed["second"]["fieldsV1"] == {"f:data": {"f:b": {}, "f:c": {}}}
    core.patch_namespaced_config_map("cfg", ns, {"data": {"b": "3"}}, field_manager="second")
    _, again = cluster.raw("GET", f"/api/v1/namespaces/{ns}/configmaps/cfg")
    assert again["metadata"]["resourceVersion"] == cm["metadata"]["resourceVersion"]
    assert again["metadata"]["managedFields"] == cm["metadata"]["managedFields"]
    core.patch_namespaced_config_map("cfg", ns, {"data": {"a": None}}, field_manager="second")
    _, removed = cluster.raw("GET", f"/api/v1/namespaces/{ns}/configmaps/cfg")
    assert _managed(removed)["first"]["fieldsV1"] == {"f:data": {}, "f:metadata": {"f:labels": {".": {}, "f:app": {}}}}


def test_a_status_write_is_recorded_against_the_status_subresource(cluster: Cluster) -> None:
    ns = cluster.namespace()
    apps = client.AppsV1Api(cluster.api())
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": ns},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "w", "image": "w"}]}},
        },
    }
    apps.create_namespaced_deployment(ns, deployment, field_manager="tenantflow")
    apps.patch_namespaced_deployment_status("web", ns, {"status": {"replicas": 1}}, field_manager="controller")
    _, dep = cluster.raw("GET", f"/apis/apps/v1/namespaces/{ns}/deployments/web")
    managed = _managed(dep)
    assert managed["controller"]["subresource"] == "status"
    assert managed["controller"]["fieldsV1"] == {"f:status": {"f:replicas": {}}}
    assert "subresource" not in managed["tenantflow"] and "f:status" not in managed["tenantflow"]["fieldsV1"]
    containers = managed["tenantflow"]["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"]
    assert containers['k:{"name":"w"}'] == {".": {}, "f:image": {}, "f:name": {}}


def test_the_field_managers_the_apiserver_refuses(cluster: Cluster) -> None:
    ns = cluster.namespace()
    core = client.CoreV1Api(cluster.api())
    refusals = [
        (
            lambda: core.create_namespaced_config_map(ns, _configmap(ns), field_manager="m" * 129),
            'CreateOptions.meta.k8s.io "" is invalid: fieldManager: Too long: may not be more than 128 bytes',
        ),
        (
            lambda: core.create_namespaced_config_map(ns, _configmap(ns), field_manager="tab\there"),
            'fieldManager: Invalid value: "tab\\there": invalid character U+0009 (at position 3)',
        ),
    ]
    for call, message in refusals:
        try:
            call()
        except ApiException as exc:
            assert exc.status == 422 and message in json.loads(exc.body)["message"], exc.body
        else:
            raise AssertionError(f"accepted: {message}")
    core.create_namespaced_config_map(ns, _configmap(ns), field_manager="m" * 128)
    path = f"/api/v1/namespaces/{ns}/configmaps/cfg"
    code, body = cluster.raw("PUT", path + "?fieldManager=" + "m" * 129, _configmap(ns))
    assert code == 422 and body["message"].startswith('UpdateOptions.meta.k8s.io "" is invalid'), body
    code, body = cluster.raw("PATCH", path, yaml.safe_dump(_configmap(ns)), APPLY)
    assert (code, body["reason"]) == (422, "Invalid"), body
    assert body["message"] == (
        'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch'
    )
    code, body = cluster.raw("PATCH", path + "?force=true", {"data": {}}, "application/merge-patch+json")
    assert code == 422 and "force: Forbidden: may not be specified for non-apply patch" in body["message"], body


def test_server_side_apply_creates_conflicts_forces_and_removes(cluster: Cluster) -> None:
    ns = cluster.namespace()
    applied = _configmap(ns, a="1", b="2")
    done = cluster.kubectl("apply", "--server-side", "-f", "-", stdin=yaml.safe_dump(applied))
    assert "serverside-applied" in done.stdout, done.stdout
    _, cm = cluster.raw("GET", f"/api/v1/namespaces/{ns}/configmaps/cfg")
    assert _managed(cm)["kubectl"]["operation"] == "Apply"
    rival = _configmap(ns, a="9")
    refused = cluster.kubectl(
        "apply", "--server-side", "--field-manager", "rival", "-f", "-", check=False, stdin=yaml.safe_dump(rival)
    )
    assert refused.returncode != 0
    assert 'Apply failed with 1 conflict: conflict with "kubectl": .data.a' in refused.stderr, refused.stderr
    forced = cluster.kubectl(
        "apply",
        "--server-side",
        "--force-conflicts",
        "--field-manager",
        "rival",
        "-f",
        "-",
        stdin=yaml.safe_dump(rival),
    )
    assert forced.returncode == 0, forced.stderr
    applied["data"] = {"a": "9"}
    cluster.kubectl("apply", "--server-side", "-f", "-", stdin=yaml.safe_dump(applied))
    _, cm = cluster.raw("GET", f"/api/v1/namespaces/{ns}/configmaps/cfg")
    assert cm["data"] == {"a": "9"}, "b was applied by kubectl only and is applied no more"
    managed = _managed(cm)
    assert managed["rival"]["fieldsV1"]["f:data"] == {"f:a": {}}
    assert managed["kubectl"]["fieldsV1"]["f:data"] == {"f:a": {}}
    rv = cm["metadata"]["resourceVersion"]
    cluster.kubectl("apply", "--server-side", "-f", "-", stdin=yaml.safe_dump(applied))
    _, same = cluster.raw("GET", f"/api/v1/namespaces/{ns}/configmaps/cfg")
    assert same["metadata"]["resourceVersion"] == rv


def test_pod_disruption_budgets_are_served(cluster: Cluster) -> None:
    ns = cluster.namespace()
    pdb = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "web", "namespace": ns},
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "web"}}},
    }
    cluster.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(pdb))
    read = client.PolicyV1Api(cluster.api()).read_namespaced_pod_disruption_budget("web", ns)
    assert read.spec.max_unavailable == 1
    assert [m.manager for m in read.metadata.managed_fields] == ["kubectl-client-side-apply"]
    bad = {**pdb, "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "web"}}, "bogus": 1}}
    refused = cluster.kubectl("apply", "-f", "-", check=False, stdin=yaml.safe_dump(bad))
    assert refused.returncode != 0 and 'unknown field "spec.bogus"' in refused.stderr, refused.stderr
