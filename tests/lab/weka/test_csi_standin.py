"""The csi-wekafs stand-in refuses what the real driver refuses: a PVC whose API Secret lacks csi-wekafs's keys
stays Pending with a ProvisioningFailed event, a correct Secret binds it, and the directory Job fails when its
mount would (issue 11, "a lab that refuses what the real systems refuse")."""

from __future__ import annotations

import base64
from typing import Any

from weka_harness import PASSWORD, USERNAME

from tenantflow.lab.controllers.csi import CsiWekafs
from tenantflow.lab.kubeapi.podexec import annotation_logs
from tenantflow.lab.kubeapi.store import Store
from tenantflow.lab.weka.app import TiB, build_app
from tenantflow.lab.weka.service import SERVICE_KEY
from tenantflow.lab.weka.state import ClusterState
from tenantflow.models.weka_mount import (
    DirectorySpec,
    Owner,
    directory_command,
    filesystem_handle,
    parse_owners,
    secret_parameters,
)

NS = "tenant-foo"


def _b64(values: dict[str, str]) -> dict[str, str]:
    return {k: base64.b64encode(v.encode()).decode() for k, v in values.items()}


def lab() -> tuple[Store, CsiWekafs]:
    app = build_app(USERNAME, PASSWORD, total_bytes=1000 * TiB, filesystems={"scratch": 100 * TiB})
    store = Store()
    store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    return store, CsiWekafs(store, app[SERVICE_KEY])


def secret(store: Store, name: str, values: dict[str, str]) -> None:
    store.create(
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": NS}, "data": _b64(values)}
    )


GOOD = {"username": USERNAME, "password": PASSWORD, "organization": "Root", "endpoints": "127.0.0.1:14000"}
RUNBOOK_SKETCH = {"endpoint": "https://weka:14000", "org": "Root", "token": "abc"}


def pvc_of_class(store: Store, secret_name: str) -> dict[str, Any]:
    store.create(
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": "weka"},
            "provisioner": "csi.weka.io",
            "parameters": {"volumeType": "dir/v1", "filesystemName": "scratch", **secret_parameters(secret_name, NS)},
        }
    )
    return store.create(
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "data", "namespace": NS},
            "spec": {
                "accessModes": ["ReadWriteMany"],
                "storageClassName": "weka",
                "resources": {"requests": {"storage": "1Gi"}},
            },
        }
    )


def phase(store: Store) -> str:
    return str((store.get("", "persistentvolumeclaims", "data", NS).get("status") or {}).get("phase", "Pending"))


def test_a_secret_in_the_runbooks_format_leaves_the_pvc_pending_with_an_event() -> None:
    store, csi = lab()
    secret(store, "creds", RUNBOOK_SKETCH)
    pvc_of_class(store, "creds")
    csi.reconcile()
    csi.reconcile()
    assert phase(store) == "Pending"
    events = store.list("", "events", NS)
    assert len(events) == 1, "one event per distinct failure, however often it is retried"
    assert events[0]["reason"] == "ProvisioningFailed" and events[0]["involvedObject"]["name"] == "data"
    assert "lacks username, password, organization, endpoints" in events[0]["message"]


def test_a_csi_wekafs_secret_binds_the_pvc_to_a_directory_with_a_quota() -> None:
    store, csi = lab()
    secret(store, "creds", GOOD)
    pvc_of_class(store, "creds")
    csi.reconcile()
    assert phase(store) == "Bound"
    pv = store.get("", "persistentvolumes", store.get("", "persistentvolumeclaims", "data", NS)["spec"]["volumeName"])
    handle = pv["spec"]["csi"]["volumeHandle"]
    assert handle.startswith("dir/v1/scratch/csi-volumes/pvc-")
    fs = next(iter(csi.weka.cluster.filesystems.values()))
    inode = fs.directories[handle.removeprefix("dir/v1/scratch")]
    assert fs.quotas[inode].hard_limit_bytes == 2**30


def test_a_wrong_password_is_refused_like_a_failed_login() -> None:
    store, csi = lab()
    secret(store, "creds", {**GOOD, "password": "wrong"})
    pvc_of_class(store, "creds")
    csi.reconcile()
    assert phase(store) == "Pending"
    assert "Username or password are incorrect" in store.list("", "events", NS)[0]["message"]


def directory_job(store: Store, secret_name: str, command: list[str]) -> dict[str, Any]:
    ref = {"name": secret_name, "namespace": NS}
    store.create(
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": "root"},
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteMany"],
                "storageClassName": "",
                "claimRef": {"name": "root", "namespace": NS},
                "csi": {
                    "driver": "csi.weka.io",
                    "volumeHandle": filesystem_handle("scratch"),
                    "nodePublishSecretRef": ref,
                },
            },
        }
    )
    store.create(
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "root", "namespace": NS},
            "spec": {
                "accessModes": ["ReadWriteMany"],
                "storageClassName": "",
                "volumeName": "root",
                "resources": {"requests": {"storage": "1Gi"}},
            },
        }
    )
    return job(store, command)


def job(store: Store, command: list[str]) -> dict[str, Any]:
    """The Job running ``command`` on the volume ``root`` (made by :func:`directory_job`)."""
    return store.create(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "mkdir", "namespace": NS},
            "spec": {
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [
                            {
                                "name": "mkdir",
                                "image": "busybox",
                                "command": command,
                                "volumeMounts": [{"name": "weka", "mountPath": "/weka"}],
                            }
                        ],
                        "volumes": [{"name": "weka", "persistentVolumeClaim": {"claimName": "root"}}],
                    }
                }
            },
        }
    )


def job_condition(store: Store) -> tuple[str, str]:
    cond = (store.get("batch", "jobs", "mkdir", NS).get("status") or {}).get("conditions") or [{}]
    return str(cond[0].get("type", "")), str(cond[0].get("message", ""))


def test_the_directory_job_makes_and_owns_directories_on_the_mount() -> None:
    store, csi = lab()
    secret(store, "creds", GOOD)
    directory_job(store, "creds", directory_command([DirectorySpec("/tenant-foo", 0, 5000, "2770")]))
    csi.reconcile()
    csi.reconcile()
    assert job_condition(store)[0] == "Complete"
    fs = next(iter(csi.weka.cluster.filesystems.values()))
    assert "/tenant-foo" in fs.directories and fs.owners["/tenant-foo"] == [0, 5000, 0o2770]


def job_pods(store: Store) -> list[dict[str, Any]]:
    return store.list("", "pods", NS, label_selector="job-name=mkdir")


def test_the_lab_records_the_owner_the_job_set_and_a_later_job_logs_it() -> None:
    """Weka keeps the owner a chown/chmod on a mount set (what a pod's ``stat`` shows), never one derived from a
    group's name: a directory left with a gone group's gid keeps it until a Job sets another, and that Job's pod
    logs the owner it found, as the script's ``stat`` prints it."""
    store, csi = lab()
    secret(store, "creds", GOOD)
    made = directory_job(store, "creds", directory_command([DirectorySpec("/tenant-foo", 0, 5000, "2770")]))
    csi.reconcile()
    [pod] = job_pods(store)
    assert pod["metadata"]["ownerReferences"][0]["uid"] == made["metadata"]["uid"]
    assert pod["status"]["phase"] == "Succeeded" and annotation_logs(NS, "", "mkdir", pod) == "", "it was new"
    snapshot = {f["name"]: f for f in csi.weka.cluster.snapshot()["filesystems"]}["scratch"]
    assert snapshot["owners"]["/tenant-foo"] == {"uid": 0, "gid": 5000, "mode": "2770"}
    assert snapshot["owners"]["/"] == {"uid": 0, "gid": 0, "mode": "755"}, "never chowned: root's"

    store.delete("batch", "jobs", "mkdir", NS)
    csi.reconcile()
    assert job_pods(store) == [], "the pod goes with its Job"
    job(store, directory_command([DirectorySpec("/tenant-foo", 0, 6000, "2770"), DirectorySpec("/b", 7, 6000, "700")]))
    csi.reconcile()
    assert job_condition(store)[0] == "Complete"
    [pod] = job_pods(store)
    log = annotation_logs(NS, "", "mkdir", pod)
    assert log == "before /tenant-foo 0 5000 2770\n"
    assert parse_owners(log) == {"/tenant-foo": Owner(0, 5000, 0o2770)}
    owners = {f["name"]: f for f in csi.weka.cluster.snapshot()["filesystems"]}["scratch"]["owners"]
    assert owners["/tenant-foo"] == {"uid": 0, "gid": 6000, "mode": "2770"}
    assert owners["/b"] == {"uid": 7, "gid": 6000, "mode": "700"}
    assert csi.weka.cluster.snapshot() == ClusterState.restore(csi.weka.cluster.dump()).snapshot(), "kept on restart"


def test_the_directory_job_fails_when_the_mount_would() -> None:
    store, csi = lab()
    cluster = csi.weka.cluster
    other = cluster.create_org("tenant-bar", "admin-bar", "pw", 0, 0)
    secret(store, "creds", {**GOOD, "username": "admin-bar", "password": "pw", "organization": other.name})
    directory_job(store, "creds", directory_command([DirectorySpec("/tenant-foo", 0, 5000, "2770")]))
    csi.reconcile()
    csi.reconcile()
    kind, message = job_condition(store)
    assert kind == "Failed" and "filesystem scratch not found in organization tenant-bar" in message
    assert "/tenant-foo" not in next(iter(cluster.filesystems.values())).directories


def test_other_jobs_are_not_run() -> None:
    store, csi = lab()
    secret(store, "creds", GOOD)
    directory_job(store, "creds", ["/bin/sh", "-c", "rm -rf /weka/*"])
    csi.reconcile()
    assert job_condition(store) == ("", "")
