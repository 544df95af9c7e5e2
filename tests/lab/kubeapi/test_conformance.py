"""Conformance of the Kubernetes API emulator, driven by the real ``kubernetes`` client."""

from __future__ import annotations

import threading

import pytest
from kubernetes import client, dynamic, watch
from kubernetes.client.rest import ApiException
from kubernetes.stream import stream

from tests.lab.kubeapi.conftest import Cluster

RESERVATION_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "reservations.scheduling.example.io"},
    "spec": {
        "group": "scheduling.example.io",
        "scope": "Cluster",
        "names": {"kind": "Reservation", "plural": "reservations", "singular": "reservation", "shortNames": ["rsv"]},
        "versions": [
            {
                "name": "v1alpha1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "required": ["tenant"],
                                "properties": {
                                    "tenant": {"type": "string"},
                                    "nodeSelector": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                                    "reservedNodes": {"type": "array", "items": {"type": "string"}},
                                    "applyTaint": {"type": "boolean"},
                                    "taintEffect": {"type": "string", "enum": ["NoSchedule", "NoExecute"]},
                                    "evictOnRelease": {"type": "boolean"},
                                },
                            },
                            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                        },
                    }
                },
            }
        ],
    },
}


def _cm(name: str, **data: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def _deployment(name: str) -> dict:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "containers": [
                        {"name": "main", "image": "a:1", "env": [{"name": "A", "value": "1"}]},
                        {"name": "side", "image": "b:1"},
                    ]
                },
            },
        },
    }


@pytest.fixture(scope="module")
def crd(cluster: Cluster) -> str:
    ext = client.ApiextensionsV1Api(cluster.api())
    ext.create_custom_resource_definition(RESERVATION_CRD)
    return "reservations.scheduling.example.io"


def test_typed_crud_of_every_builtin_kind(cluster: Cluster) -> None:
    api = cluster.api()
    ns = cluster.namespace()
    core, apps, rbac = client.CoreV1Api(api), client.AppsV1Api(api), client.RbacAuthorizationV1Api(api)
    net, storage, batch = client.NetworkingV1Api(api), client.StorageV1Api(api), client.BatchV1Api(api)
    pod_spec = {"containers": [{"name": "c", "image": "i"}]}
    namespaced = [
        (
            core.create_namespaced_secret,
            core.read_namespaced_secret,
            core.delete_namespaced_secret,
            {"metadata": {"name": "s"}, "stringData": {"k": "v"}},
        ),
        (
            core.create_namespaced_config_map,
            core.read_namespaced_config_map,
            core.delete_namespaced_config_map,
            _cm("cm", k="v"),
        ),
        (
            core.create_namespaced_pod,
            core.read_namespaced_pod,
            core.delete_namespaced_pod,
            {"metadata": {"name": "p"}, "spec": pod_spec},
        ),
        (
            core.create_namespaced_service,
            core.read_namespaced_service,
            core.delete_namespaced_service,
            {"metadata": {"name": "svc"}, "spec": {"ports": [{"port": 80}]}},
        ),
        (
            core.create_namespaced_service_account,
            core.read_namespaced_service_account,
            core.delete_namespaced_service_account,
            {"metadata": {"name": "sa"}},
        ),
        (
            core.create_namespaced_persistent_volume_claim,
            core.read_namespaced_persistent_volume_claim,
            core.delete_namespaced_persistent_volume_claim,
            {
                "metadata": {"name": "pvc"},
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
            },
        ),
        (
            core.create_namespaced_resource_quota,
            core.read_namespaced_resource_quota,
            core.delete_namespaced_resource_quota,
            {"metadata": {"name": "q"}, "spec": {"hard": {"pods": "1"}}},
        ),
        (
            core.create_namespaced_limit_range,
            core.read_namespaced_limit_range,
            core.delete_namespaced_limit_range,
            {"metadata": {"name": "lr"}, "spec": {"limits": [{"type": "Container", "default": {"cpu": "1"}}]}},
        ),
        (
            core.create_namespaced_event,
            core.read_namespaced_event,
            core.delete_namespaced_event,
            {"metadata": {"name": "ev"}, "involvedObject": {"kind": "Pod", "name": "p"}},
        ),
        (
            apps.create_namespaced_deployment,
            apps.read_namespaced_deployment,
            apps.delete_namespaced_deployment,
            _deployment("d"),
        ),
        (
            apps.create_namespaced_stateful_set,
            apps.read_namespaced_stateful_set,
            apps.delete_namespaced_stateful_set,
            {
                "metadata": {"name": "sts"},
                "spec": {
                    "selector": {"matchLabels": {"a": "b"}},
                    "serviceName": "s",
                    "template": {"metadata": {"labels": {"a": "b"}}, "spec": pod_spec},
                },
            },
        ),
        (
            batch.create_namespaced_job,
            batch.read_namespaced_job,
            batch.delete_namespaced_job,
            {"metadata": {"name": "j"}, "spec": {"template": {"spec": {**pod_spec, "restartPolicy": "Never"}}}},
        ),
        (
            rbac.create_namespaced_role,
            rbac.read_namespaced_role,
            rbac.delete_namespaced_role,
            {"metadata": {"name": "r"}, "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]},
        ),
        (
            rbac.create_namespaced_role_binding,
            rbac.read_namespaced_role_binding,
            rbac.delete_namespaced_role_binding,
            {
                "metadata": {"name": "rb"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
                "subjects": [{"kind": "User", "name": "u"}],
            },
        ),
        (
            net.create_namespaced_network_policy,
            net.read_namespaced_network_policy,
            net.delete_namespaced_network_policy,
            {"metadata": {"name": "np"}, "spec": {"podSelector": {}}},
        ),
    ]
    for create, read, delete, body in namespaced:
        created = create(ns, body, _preload_content=False)
        assert created.status == 201, body
        name = body["metadata"]["name"]
        obj = read(name, ns)
        assert obj.metadata.uid and obj.metadata.resource_version and obj.metadata.namespace == ns
        delete(name, ns)
        with pytest.raises(ApiException) as exc:
            read(name, ns)
        assert exc.value.status == 404
    cluster_scoped = [
        (
            rbac.create_cluster_role,
            rbac.read_cluster_role,
            rbac.delete_cluster_role,
            {"metadata": {"name": f"cr-{ns}"}, "rules": []},
        ),
        (
            rbac.create_cluster_role_binding,
            rbac.read_cluster_role_binding,
            rbac.delete_cluster_role_binding,
            {
                "metadata": {"name": f"crb-{ns}"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "x"},
            },
        ),
        (
            storage.create_storage_class,
            storage.read_storage_class,
            storage.delete_storage_class,
            {"metadata": {"name": f"sc-{ns}"}, "provisioner": "csi.weka.io", "parameters": {"volumeType": "dir/v1"}},
        ),
        (core.create_node, core.read_node, core.delete_node, {"metadata": {"name": f"n-{ns}"}}),
    ]
    for create, read, delete, body in cluster_scoped:
        assert create(body, _preload_content=False).status == 201
        assert read(body["metadata"]["name"]).metadata.generation == 1
        delete(body["metadata"]["name"])


def test_conflicts_not_found_and_invalid(cluster: Cluster) -> None:
    core = client.CoreV1Api(cluster.api())
    ns = cluster.namespace()
    first = core.create_namespaced_config_map(ns, _cm("a", k="1"))
    with pytest.raises(ApiException) as exc:
        core.create_namespaced_config_map(ns, _cm("a"))
    assert exc.value.status == 409 and '"reason": "AlreadyExists"' in exc.value.body
    core.patch_namespaced_config_map("a", ns, {"data": {"k": "2"}})
    first.data = {"k": "3"}
    with pytest.raises(ApiException) as exc:
        core.replace_namespaced_config_map("a", ns, first)
    assert exc.value.status == 409 and '"reason": "Conflict"' in exc.value.body
    with pytest.raises(ApiException) as exc:
        core.patch_namespaced_config_map("a", ns, {"metadata": {"resourceVersion": first.metadata.resource_version}})
    assert exc.value.status == 409
    with pytest.raises(ApiException) as exc:
        core.read_namespaced_config_map("missing", ns)
    assert exc.value.status == 404 and '"reason": "NotFound"' in exc.value.body
    with pytest.raises(ApiException) as exc:
        core.create_namespaced_config_map("no-such-ns", _cm("x"))
    assert exc.value.status == 404 and 'namespaces \\"no-such-ns\\" not found' in exc.value.body
    code, status = cluster.raw(
        "POST",
        f"/api/v1/namespaces/{ns}/configmaps",
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}, "data": {"k": 1}},
    )
    assert code == 422 and status["reason"] == "Invalid" and "data.k" in status["message"]
    dry = core.create_namespaced_config_map(ns, _cm("dry"), dry_run="All")
    assert dry.metadata.name == "dry"
    assert [c.metadata.name for c in core.list_namespaced_config_map(ns).items] == ["a"]


def test_delete_preconditions_as_kube_apiserver_words_them(cluster: Cluster) -> None:
    """DeleteOptions ``preconditions`` (kubernetes.io/docs/reference/kubernetes-api/common-definitions/
    delete-options/): a uid or resourceVersion that is not the object's is 409 Conflict with the message of
    k8s.io/apiserver's ``Preconditions.Check``, and the object stays; the matching uid deletes."""
    core = client.CoreV1Api(cluster.api())
    ns = cluster.namespace()
    made = core.create_namespaced_config_map(ns, _cm("pre"))
    uid, rv = made.metadata.uid, made.metadata.resource_version
    wrong = client.V1DeleteOptions(preconditions=client.V1Preconditions(uid="not-" + uid))
    with pytest.raises(ApiException) as exc:
        core.delete_namespaced_config_map("pre", ns, body=wrong)
    assert exc.value.status == 409 and '"reason": "Conflict"' in exc.value.body
    assert f"Precondition failed: UID in precondition: not-{uid}, UID in object meta: {uid}" in exc.value.body
    assert 'Operation cannot be fulfilled on configmaps \\"pre\\"' in exc.value.body
    core.patch_namespaced_config_map("pre", ns, {"data": {"k": "2"}})
    stale = client.V1DeleteOptions(preconditions=client.V1Preconditions(resource_version=rv))
    with pytest.raises(ApiException) as exc:
        core.delete_namespaced_config_map("pre", ns, body=stale)
    assert exc.value.status == 409 and f"ResourceVersion in precondition: {rv}, ResourceVersion in object" in (
        exc.value.body
    )
    assert core.read_namespaced_config_map("pre", ns).metadata.uid == uid
    code, status = cluster.raw(
        "DELETE", f"/api/v1/namespaces/{ns}", {"kind": "DeleteOptions", "preconditions": {"uid": "someone-else"}}
    )
    assert code == 409 and "UID in precondition: someone-else" in status["message"], status
    assert core.read_namespace(ns).status.phase != "Terminating"
    right = client.V1DeleteOptions(preconditions=client.V1Preconditions(uid=uid))
    core.delete_namespaced_config_map("pre", ns, body=right)
    with pytest.raises(ApiException) as exc:
        core.read_namespaced_config_map("pre", ns)
    assert exc.value.status == 404


def test_core_quantities_read_back_in_canonical_form(cluster: Cluster) -> None:
    """kube-apiserver decodes a ResourceList into resource.Quantity values and stores them canonically, so
    ``kubectl get`` shows ``8Ti`` for a quota written as ``8192Gi`` (k8s.io/apimachinery resource.Quantity)."""
    core = client.CoreV1Api(cluster.api())
    ns = cluster.namespace()
    hard = {"requests.memory": "8192Gi", "requests.cpu": "1024", "limits.cpu": "1500m", "requests.storage": "1024Ti"}
    core.create_namespaced_resource_quota(ns, {"metadata": {"name": "q"}, "spec": {"hard": hard}})
    stored = core.read_namespaced_resource_quota("q", ns).spec.hard
    assert stored == {
        "requests.memory": "8Ti",
        "requests.cpu": "1024",
        "limits.cpu": "1500m",
        "requests.storage": "1Pi",
    }
    core.patch_namespaced_resource_quota("q", ns, {"spec": {"hard": {"requests.memory": "2048Mi"}}})
    assert core.read_namespaced_resource_quota("q", ns).spec.hard["requests.memory"] == "2Gi"
    limits = [{"type": "Container", "default": {"memory": "16384Mi"}, "defaultRequest": {"cpu": "1000m"}}]
    core.create_namespaced_limit_range(ns, {"metadata": {"name": "l"}, "spec": {"limits": limits}})
    [item] = core.read_namespaced_limit_range("l", ns).spec.limits
    assert (item.default, item.default_request) == ({"memory": "16Gi"}, {"cpu": "1"})


def test_field_validation(cluster: Cluster) -> None:
    ns = cluster.namespace()
    body = {**_cm("u", k="v"), "bogus": 1}
    path = f"/api/v1/namespaces/{ns}/configmaps"
    code, status = cluster.raw("POST", path + "?fieldValidation=Strict", body)
    assert code == 400 and 'unknown field "bogus"' in status["message"]
    assert cluster.raw("POST", path, body)[0] == 201
    assert "bogus" not in cluster.store.get("", "configmaps", "u", ns)


def test_selectors(cluster: Cluster) -> None:
    core = client.CoreV1Api(cluster.api())
    names = lambda items: sorted(i.metadata.name for i in items)  # noqa: E731
    assert names(core.list_node(label_selector="node.kubernetes.io/instance-type=h100-8x").items) == [
        "gpu-01",
        "gpu-02",
        "gpu-03",
    ]
    assert "gpu-04" in names(core.list_node(label_selector="node.kubernetes.io/instance-type!=h100-8x").items)
    assert names(core.list_node(label_selector="node.kubernetes.io/instance-type in (a100-8x),!missing").items) == [
        "gpu-04",
        "gpu-05",
    ]
    assert names(core.list_node(label_selector="node.kubernetes.io/instance-type notin (a100-8x)").items)[:3] == [
        "gpu-01",
        "gpu-02",
        "gpu-03",
    ]
    assert names(core.list_node(field_selector="metadata.name=gpu-02").items) == ["gpu-02"]
    pods = core.list_pod_for_all_namespaces(field_selector="spec.nodeName=gpu-01,status.phase=Running").items
    assert names(pods) == ["slurmctld-0"]
    assert (
        core.list_pod_for_all_namespaces(field_selector="status.phase!=Running,metadata.namespace=slurm-control").items
        == []
    )


def test_patches_and_put(cluster: Cluster) -> None:
    apps = client.AppsV1Api(cluster.api())
    ns = cluster.namespace()
    apps.create_namespaced_deployment(ns, _deployment("web"))
    path = f"/apis/apps/v1/namespaces/{ns}/deployments/web"
    code, patched = cluster.raw(
        "PATCH",
        path,
        {
            "spec": {
                "template": {
                    "spec": {
                        "containers": [
                            {"name": "main", "image": "a:2", "env": [{"name": "B", "value": "2"}]},
                            {"name": "side", "$patch": "delete"},
                        ]
                    }
                }
            }
        },
        "application/strategic-merge-patch+json",
    )
    containers = patched["spec"]["template"]["spec"]["containers"]
    assert code == 200 and [(c["name"], c["image"]) for c in containers] == [("main", "a:2")]
    assert [e["name"] for e in containers[0]["env"]] == ["A", "B"]
    assert patched["metadata"]["generation"] == 2
    _, merged = cluster.raw("PATCH", path, {"metadata": {"labels": {"tier": "web"}}}, "application/merge-patch+json")
    assert merged["metadata"]["labels"] == {"tier": "web"} and merged["metadata"]["generation"] == 2
    _, jp = cluster.raw(
        "PATCH", path, [{"op": "add", "path": "/spec/replicas", "value": 3}], "application/json-patch+json"
    )
    assert jp["spec"]["replicas"] == 3
    current = apps.read_namespaced_deployment("web", ns)
    current.spec.replicas = 5
    replaced = apps.replace_namespaced_deployment("web", ns, current)
    assert replaced.spec.replicas == 5
    assert int(replaced.metadata.resource_version) > int(current.metadata.resource_version)


def test_status_subresource(cluster: Cluster, crd: str) -> None:
    custom = client.CustomObjectsApi(cluster.api())
    args = ("scheduling.example.io", "v1alpha1", "reservations")
    body = {
        "apiVersion": "scheduling.example.io/v1alpha1",
        "kind": "Reservation",
        "metadata": {"name": "r-status"},
        "spec": {"tenant": "a"},
        "status": {"phase": "Ignored"},
    }
    created = custom.create_cluster_custom_object(*args, body)
    assert "status" not in created and created["metadata"]["generation"] == 1
    custom.patch_cluster_custom_object(*args, "r-status", {"status": {"phase": "Main"}})
    assert "status" not in custom.get_cluster_custom_object(*args, "r-status")
    after = custom.patch_cluster_custom_object_status(
        *args, "r-status", {"status": {"phase": "Ready"}, "spec": {"tenant": "changed"}}
    )
    assert after["status"] == {"phase": "Ready"} and after["spec"]["tenant"] == "a"
    assert after["metadata"]["generation"] == 1
    apps = client.AppsV1Api(cluster.api())
    ns = cluster.namespace()
    apps.create_namespaced_deployment(ns, _deployment("d"))
    apps.patch_namespaced_deployment_status("d", ns, {"status": {"readyReplicas": 1}})
    assert apps.read_namespaced_deployment_status("d", ns).status.ready_replicas == 1


def test_crd_then_custom_resources(cluster: Cluster, crd: str) -> None:
    dyn = dynamic.DynamicClient(cluster.api())
    res = dyn.resources.get(api_version="scheduling.example.io/v1alpha1", kind="Reservation")
    assert res.namespaced is False and "rsv" in res.short_names
    body = {
        "apiVersion": "scheduling.example.io/v1alpha1",
        "kind": "Reservation",
        "metadata": {"name": "r-dyn"},
        "spec": {"tenant": "tenant-foo", "reservedNodes": ["gpu-01"]},
    }
    created = res.create(body=body)
    assert created.metadata.uid
    assert res.get(name="r-dyn").spec.tenant == "tenant-foo"
    with pytest.raises(ApiException) as exc:
        res.create(body={**body, "metadata": {"name": "bad"}, "spec": {"tenant": 5, "taintEffect": "Nope"}})
    assert exc.value.status == 422 and "spec.tenant" in exc.value.body and "spec.taintEffect" in exc.value.body
    res.patch(name="r-dyn", body={"spec": {"applyTaint": True}}, content_type="application/merge-patch+json")
    assert [i.metadata.name for i in res.get(label_selector="!missing").items if i.metadata.name == "r-dyn"]
    res.delete(name="r-dyn")
    assert "r-dyn" not in [i.metadata.name for i in res.get().items]


def test_watch_events(cluster: Cluster) -> None:
    core = client.CoreV1Api(cluster.api())
    ns = cluster.namespace()
    core.create_namespaced_config_map(ns, _cm("pre"))
    seen: list[tuple[str, str]] = []
    started = threading.Event()

    def consume() -> None:
        w = watch.Watch()
        for event in w.stream(core.list_namespaced_config_map, ns, timeout_seconds=5):
            seen.append((event["type"], event["object"].metadata.name))
            started.set()
            if event["type"] == "DELETED":
                w.stop()

    thread = threading.Thread(target=consume)
    thread.start()
    assert started.wait(5)
    core.create_namespaced_config_map(ns, _cm("live"))
    core.patch_namespaced_config_map("live", ns, {"data": {"x": "y"}})
    core.delete_namespaced_config_map("live", ns)
    thread.join(10)
    assert seen == [("ADDED", "pre"), ("ADDED", "live"), ("MODIFIED", "live"), ("DELETED", "live")]
    rv = core.list_namespaced_config_map(ns).metadata.resource_version
    core.patch_namespaced_config_map("pre", ns, {"data": {"z": "1"}})
    events = list(watch.Watch().stream(core.list_namespaced_config_map, ns, resource_version=rv, timeout_seconds=1))
    assert [(e["type"], e["object"].metadata.name) for e in events] == [("MODIFIED", "pre")]


def test_namespace_deletion_and_finalizers(cluster: Cluster) -> None:
    core = client.CoreV1Api(cluster.api())
    ns = cluster.namespace()
    core.create_namespaced_config_map(ns, _cm("plain"))
    held = _cm("held")
    held["metadata"]["finalizers"] = ["lab/test"]
    core.create_namespaced_config_map(ns, held)
    core.delete_namespace(ns)
    assert core.read_namespace(ns).status.phase == "Terminating"
    assert core.read_namespaced_config_map("held", ns).metadata.deletion_timestamp
    with pytest.raises(ApiException):
        core.read_namespaced_config_map("plain", ns)
    core.patch_namespaced_config_map("held", ns, {"metadata": {"finalizers": None}})
    with pytest.raises(ApiException) as exc:
        core.read_namespace(ns)
    assert exc.value.status == 404


def test_namespace_deletion_with_contents_is_immediate(cluster: Cluster) -> None:
    core = client.CoreV1Api(cluster.api())
    ns = cluster.namespace()
    core.create_namespaced_config_map(ns, _cm("one"))
    core.create_namespaced_config_map(ns, _cm("two"))
    core.delete_namespace(ns)
    with pytest.raises(ApiException) as exc:
        core.read_namespace(ns)
    assert exc.value.status == 404
    assert not core.list_namespaced_config_map(ns).items


def test_subscription_and_snapshot(cluster: Cluster) -> None:
    events: list[tuple[str, str]] = []
    unsubscribe = cluster.store.subscribe(lambda t, key, obj: events.append((t, key.name)))
    ns = cluster.namespace()
    client.CoreV1Api(cluster.api()).create_namespaced_config_map(ns, _cm("sub"))
    unsubscribe()
    assert events == [("ADDED", ns), ("ADDED", "sub")]
    snap = cluster.store.snapshot()
    entry = next(o for o in snap["objects"] if o["name"] == "sub")
    assert entry["namespace"] == ns and "uid" not in entry["object"]["metadata"]


def test_exec_via_stream(cluster: Cluster) -> None:
    core = client.CoreV1Api(cluster.api())
    ws = stream(
        core.connect_get_namespaced_pod_exec,
        "slurmctld-0",
        "slurm-control",
        command=["sacctmgr", "show", "cluster"],
        stderr=True,
        stdin=False,
        stdout=True,
        tty=False,
        _preload_content=False,
    )
    ws.run_forever(timeout=5)
    assert ws.read_stdout() == "slurm-control/slurmctld-0/slurmctld: sacctmgr show cluster stdin=\n"
    assert ws.returncode == 0
    ws = stream(
        core.connect_get_namespaced_pod_exec,
        "slurmctld-0",
        "slurm-control",
        command=["false"],
        stderr=True,
        stdin=False,
        stdout=True,
        tty=False,
        _preload_content=False,
    )
    ws.run_forever(timeout=5)
    assert ws.read_stderr() == "boom\n" and ws.returncode == 3
