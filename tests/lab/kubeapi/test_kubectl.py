"""The emulator driven by the real kubectl 1.32 (/usr/bin/kubectl) over HTTPS."""

from __future__ import annotations

import base64
import json
import subprocess
import threading

from tests.lab.kubeapi.conftest import Cluster
from tests.lab.kubeapi.test_conformance import RESERVATION_CRD
from tests.runbook_manifests import QUOTA_MANIFEST

RESERVATION = """\
apiVersion: scheduling.example.io/v1alpha1
kind: Reservation
metadata:
  name: tenant-foo-reservation
spec:
  tenant: tenant-foo
  nodeSelector:
    matchLabels:
      hardware-pool: gpu-h100-rack-a
  reservedNodes: [gpu-01, gpu-02, gpu-03, gpu-04, gpu-05, gpu-06, gpu-07, gpu-08]
  applyTaint: true
  taintEffect: {effect}
  evictOnRelease: false
"""


def test_get_nodes_by_label_as_json(cluster: Cluster) -> None:
    out = cluster.kubectl("get", "nodes", "-l", "node.kubernetes.io/instance-type=h100-8x", "-o", "json")
    assert [n["metadata"]["name"] for n in json.loads(out.stdout)["items"]] == ["gpu-01", "gpu-02", "gpu-03"]


def test_apply_runbook_quota_and_limits(cluster: Cluster) -> None:
    ns = cluster.namespace()
    manifest = QUOTA_MANIFEST.format(ns=ns)
    out = cluster.kubectl("apply", "-f", "-", stdin=manifest)
    assert "resourcequota/tenant-foo-quota created" in out.stdout
    assert "unchanged" in cluster.kubectl("apply", "-f", "-", stdin=manifest).stdout
    changed = cluster.kubectl("apply", "-f", "-", stdin=manifest.replace('cpu: "4"', 'cpu: "8"'))
    assert "limitrange/tenant-foo-defaults configured" in changed.stdout
    limits = cluster.store.get("", "limitranges", "tenant-foo-defaults", ns)
    assert limits["spec"]["limits"][0]["default"] == {"cpu": "8", "memory": "16Gi"}
    bad = cluster.kubectl("apply", "-f", "-", check=False, stdin=manifest.replace("hard:", "hard:\n    x: 1\n  bogus:"))
    assert bad.returncode != 0 and "bogus" in bad.stderr


def test_apply_custom_resource(cluster: Cluster) -> None:
    if "reservations" not in [rt.plural for rt in cluster.store.registry.types()]:
        cluster.store.create(RESERVATION_CRD)
    out = cluster.kubectl("apply", "-f", "-", stdin=RESERVATION.format(effect="NoSchedule"))
    assert "reservation.scheduling.example.io/tenant-foo-reservation created" in out.stdout
    got = json.loads(cluster.kubectl("get", "rsv", "tenant-foo-reservation", "-o", "json").stdout)
    assert got["spec"]["reservedNodes"][-1] == "gpu-08"
    bad = cluster.kubectl("apply", "-f", "-", check=False, stdin=RESERVATION.format(effect="Sometimes"))
    assert bad.returncode != 0 and "spec.taintEffect" in bad.stderr
    cluster.kubectl("delete", "reservation", "tenant-foo-reservation")


def test_label_patch_delete(cluster: Cluster) -> None:
    ns = cluster.namespace()
    cluster.kubectl(
        "apply", "-n", ns, "-f", "-", stdin="apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {a: b}\n"
    )
    cluster.kubectl("label", "configmap", "cm", "-n", ns, "team=x")
    cluster.kubectl("patch", "configmap", "cm", "-n", ns, "--type", "merge", "-p", '{"data":{"a":"c"}}')
    obj = cluster.store.get("", "configmaps", "cm", ns)
    assert obj["metadata"]["labels"] == {"team": "x"} and obj["data"] == {"a": "c"}
    cluster.kubectl("label", "node", "gpu-05", "reserved.tenant=tenant-foo")
    assert "gpu-05" in cluster.kubectl("get", "nodes", "-l", "reserved.tenant=tenant-foo").stdout
    cluster.kubectl("label", "node", "gpu-05", "reserved.tenant-")
    assert "deleted" in cluster.kubectl("delete", "configmap", "cm", "-n", ns).stdout
    assert cluster.kubectl("get", "configmap", "cm", "-n", ns, check=False).returncode == 1


def test_imperative_create_sends_protobuf_and_is_understood(cluster: Cluster) -> None:
    """The runbook's ``kubectl create namespace`` + ``label``, and the other objects kubectl creates
    imperatively, arrive as protobuf; the emulator stores what kubectl sent."""
    ns = f"imp-{cluster.namespace()}"
    assert f"namespace/{ns} created" in cluster.kubectl("create", "namespace", ns).stdout
    cluster.kubectl("label", "namespace", ns, "pod-security.kubernetes.io/enforce=restricted", "tenant=foo")
    cluster.kubectl("create", "configmap", "cm", "-n", ns, "--from-literal=a=b", "--from-literal=c=d")
    cluster.kubectl("create", "secret", "generic", "creds", "-n", ns, "--from-literal=token=s3cr=t")
    cluster.kubectl("create", "serviceaccount", "runner", "-n", ns)
    namespace = cluster.store.get("", "namespaces", ns)
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    assert namespace["metadata"]["labels"]["tenant"] == "foo"
    assert cluster.store.get("", "configmaps", "cm", ns)["data"] == {"a": "b", "c": "d"}
    secret = cluster.store.get("", "secrets", "creds", ns)
    assert secret["type"] == "Opaque" and base64.b64decode(secret["data"]["token"]) == b"s3cr=t"
    assert cluster.store.get("", "serviceaccounts", "runner", ns)["metadata"]["namespace"] == ns
    again = cluster.kubectl("create", "namespace", ns, check=False)
    assert again.returncode != 0 and "AlreadyExists" in again.stderr
    quota = cluster.kubectl("create", "quota", "q", "-n", ns, "--hard=pods=4", check=False)
    assert quota.returncode != 0 and "not ResourceQuota" in quota.stderr and "kubectl apply" in quota.stderr


def _trainy_crd(kind: str, plural: str, scope: str) -> dict:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.trainy.ai"},
        "spec": {
            "group": "trainy.ai",
            "scope": scope,
            "names": {"kind": kind, "plural": plural},
            "versions": [
                {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {"type": "object"}}}
            ],
        },
    }


def test_auth_can_i(cluster: Cluster) -> None:
    cluster.store.create(_trainy_crd("BootstrapEnrollment", "bootstrapenrollments", "Namespaced"))
    cluster.store.create(_trainy_crd("Organization", "organizations", "Cluster"))
    yes = cluster.kubectl(
        "auth",
        "can-i",
        "create",
        "bootstrapenrollments.trainy.ai",
        "-n",
        "forecasting",
        context="restricted",
        check=False,
    )
    assert yes.stdout.strip() == "yes"
    no = cluster.kubectl("auth", "can-i", "create", "organizations.trainy.ai", context="restricted", check=False)
    assert no.stdout.strip() == "no" and no.returncode == 1
    denied = cluster.kubectl("get", "pods", "-n", "default", context="restricted", check=False)
    assert 'User "alice" cannot list resource "pods"' in denied.stderr
    assert cluster.kubectl("auth", "can-i", "create", "organizations.trainy.ai").stdout.strip() == "yes"


def test_exec_deployment(cluster: Cluster) -> None:
    out = cluster.kubectl("exec", "deploy/slurmctld", "-n", "slurm-control", "--", "sacctmgr", "show", "cluster")
    assert out.stdout == "slurm-control/slurmctld-0/slurmctld: sacctmgr show cluster stdin=\n"
    failed = cluster.kubectl("exec", "slurmctld-0", "-n", "slurm-control", "--", "false", check=False)
    assert failed.returncode == 3 and "boom" in failed.stderr
    piped = cluster.kubectl("exec", "-i", "slurmctld-0", "-n", "slurm-control", "--", "cat", stdin="hello")
    assert piped.stdout.endswith("stdin=hello\n")


def test_get_watch(cluster: Cluster) -> None:
    ns = cluster.namespace()
    env_args = ("get", "configmaps", "-n", ns, "-w", "--request-timeout=4s", "-o", "name")
    cluster.store.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "first"}}, ns)
    timer = threading.Timer(
        1.0, lambda: cluster.store.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "second"}}, ns)
    )
    timer.start()
    try:
        out = cluster.kubectl(*env_args, check=False)
    except subprocess.TimeoutExpired as exc:  # pragma: no cover - reported as failure below
        raise AssertionError("kubectl get -w did not end") from exc
    assert "configmap/first" in out.stdout and "configmap/second" in out.stdout
