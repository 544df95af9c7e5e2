"""The tenant cluster's start-up state: GPU nodes, platform namespaces, the LDAP bind Secret, slurmctld, CRDs.

:func:`seed_tenant_cluster` fills a :class:`lab.kubeapi.store.Store`: the CRDs in
``lab/crds/``; namespaces ``default``, ``auth``, ``slurm-control``, ``kube-system``, ``tenantflow-system``
(where the Weka directory Job runs; it enforces pod-security ``baseline``, as a platform namespace that runs a root
``chown`` Job would, so the lab's admission checks that Job's pod);
in ``auth`` the Secret ``ldap-bind-creds``, the ``authentik-ldap-outpost`` Service and its pod, which map LDAPS
636 to container port 6636 as Authentik's outpost controller declares them (``DeploymentPort(636, "ldaps", "tcp",
6636)`` in ``authentik/providers/ldap/controllers/kubernetes.py``: the Service's ``targetPort`` and the pod's
``containerPort``); in ``slurm-control`` the ``slurmctld`` Deployment, Service and pod
``slurmctld-0``, and per GPU node a SUNK NodeSet pod ``slurmd-<node>`` (containers ``slurmd`` and
``nsscache``, ``spec.nodeName`` the node, labelled ``app.kubernetes.io/component=slurmd``); ClusterRole
``edit``; csi-wekafs's ``CSIDriver`` ``csi.weka.io``; and nodes ``gpu-01..gpu-NN`` (``h100-8x``,
``hardware-pool=gpu-h100-rack-a``, 8 ``nvidia.com/gpu``), of which
:data:`NOT_READY` are NotReady and :data:`CORDONED` cordoned.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import yaml

from tenantflow.lab.enrollment_seed import seed_hub, seed_worker
from tenantflow.lab.kubeapi.store import Store
from tenantflow.lab.weka.csi_facts import CSI_DRIVER_OBJECT

CRD_DIR = Path(__file__).parent / "crds"
NOT_READY = ("gpu-14",)
CORDONED = ("gpu-15",)
PLATFORM_NAMESPACES = ("default", "auth", "slurm-control", "kube-system")
HELPER_NAMESPACE = "tenantflow-system"
OUTPOST_LDAPS_POD_PORT = 6636
"""The outpost container's LDAPS port, behind the Service's 636."""
SLURMD_PORT = 6818
"""slurmd's port in its pod (slurm.conf(5) ``SlurmdPort``, default 6818)."""
Obj = dict[str, Any]


def crds() -> list[Obj]:
    """The CustomResourceDefinitions the lab serves (Reservation, ReservationBinding, HelmRelease)."""
    return [yaml.safe_load(path.read_text()) for path in sorted(CRD_DIR.glob("*.yaml"))]


def gpu_node(
    name: str,
    *,
    ready: bool = True,
    cordoned: bool = False,
    sku: str = "h100-8x",
    pool: str = "gpu-h100-rack-a",
    gpus: int = 8,
) -> Obj:
    node: Obj = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/hostname": name, "node.kubernetes.io/instance-type": sku, "hardware-pool": pool},
        },
        "spec": {"unschedulable": True} if cordoned else {},
        "status": {
            "capacity": {"cpu": "128", "memory": "2Ti", "nvidia.com/gpu": str(gpus), "pods": "110"},
            "allocatable": {"cpu": "126", "memory": "2000Gi", "nvidia.com/gpu": str(gpus), "pods": "110"},
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True" if ready else "False",
                    "reason": "KubeletReady" if ready else "KubeletNotReady",
                }
            ],
            "nodeInfo": {
                "architecture": "amd64",
                "bootID": f"boot-{name}",
                "machineID": f"machine-{name}",
                "systemUUID": f"uuid-{name}",
                "containerRuntimeVersion": "containerd://1.7.17-k3s1",
                "kernelVersion": "6.8.0-45-generic",
                "kubeProxyVersion": "v1.30.4+rke2r1",
                "kubeletVersion": "v1.30.4+rke2r1",
                "operatingSystem": "linux",
                "osImage": "Ubuntu 24.04.1 LTS",
            },
        },
    }
    return node


def _pod(name: str, namespace: str, labels: dict[str, str], image: str, ports: list[tuple[str, int]]) -> Obj:
    container = {
        "name": labels["app"],
        "image": image,
        "ports": [{"name": pname, "containerPort": port, "protocol": "TCP"} for pname, port in ports],
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {"containers": [container]},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
    }


def _service(name: str, namespace: str, selector: dict[str, str], ports: list[tuple[str, int, int | None]]) -> Obj:
    """A ClusterIP Service; a port's third field is its ``targetPort`` (None: the same number, left out)."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "type": "ClusterIP",
            "selector": selector,
            "ports": [
                {"name": pname, "port": port, "protocol": "TCP", **({"targetPort": target} if target else {})}
                for pname, port, target in ports
            ],
        },
    }


def slurmd_pod(node: str) -> Obj:
    """The NodeSet pod of ``node``: slurmd beside the nsscache sidecar that feeds its NSS from the outpost."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"slurmd-{node}",
            "namespace": "slurm-control",
            "labels": {
                "app": "slurmd",
                "app.kubernetes.io/component": "slurmd",
                "app.kubernetes.io/name": "slurm-nodeset",
            },
        },
        "spec": {
            "nodeName": node,
            "containers": [
                {
                    "name": "slurmd",
                    "image": "slurm",
                    "ports": [{"name": "slurmd", "containerPort": SLURMD_PORT, "protocol": "TCP"}],
                },
                {"name": "nsscache", "image": "nsscache"},
            ],
        },
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
    }


def platform_objects(ldap_bind_password: str) -> list[Obj]:
    slurm = {"app": "slurmctld"}
    outpost = {"app": "authentik-ldap-outpost"}
    return [
        *({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}} for ns in PLATFORM_NAMESPACES),
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": HELPER_NAMESPACE, "labels": {"pod-security.kubernetes.io/enforce": "baseline"}},
        },
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "Opaque",
            "metadata": {"name": "ldap-bind-creds", "namespace": "auth"},
            "data": {"password": base64.b64encode(ldap_bind_password.encode()).decode()},
        },
        _service(
            "authentik-ldap-outpost", "auth", outpost, [("ldap", 3389, None), ("ldaps", 636, OUTPOST_LDAPS_POD_PORT)]
        ),
        _pod(
            "authentik-ldap-outpost-default-0",
            "auth",
            outpost,
            "ghcr.io/goauthentik/ldap",
            [("ldap", 3389), ("ldaps", OUTPOST_LDAPS_POD_PORT)],
        ),
        CSI_DRIVER_OBJECT,
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "slurmctld", "namespace": "slurm-control"},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": slurm},
                "template": {
                    "metadata": {"labels": slurm},
                    "spec": {"containers": [{"name": "slurmctld", "image": "slurm"}]},
                },
            },
            "status": {"replicas": 1, "readyReplicas": 1, "availableReplicas": 1},
        },
        _pod("slurmctld-0", "slurm-control", slurm, "slurm", [("slurmctld", 6817)]),
        _service("slurmctld", "slurm-control", slurm, [("slurmctld", 6817, None)]),
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": "edit"},
            "rules": [
                {
                    "apiGroups": ["", "apps", "batch"],
                    "resources": ["*"],
                    "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"],
                }
            ],
        },
    ]


def seed_tenant_cluster(store: Store, *, ldap_bind_password: str = "", node_count: int = 16) -> None:
    """Seed ``store`` (the ``tenant-cluster`` context) with CRDs, platform objects and GPU nodes."""
    nodes = [
        gpu_node(f"gpu-{i:02d}", ready=f"gpu-{i:02d}" not in NOT_READY, cordoned=f"gpu-{i:02d}" in CORDONED)
        for i in range(1, node_count + 1)
    ]
    slurmd = [slurmd_pod(n["metadata"]["name"]) for n in nodes]
    store.seed([*crds(), *platform_objects(ldap_bind_password), *nodes, *slurmd])


def seed_cluster(store: Store, context: str, *, ldap_bind_password: str = "") -> None:
    """Seed one emulated cluster by context name: the tenant cluster, the Hub or the (greenfield) worker."""
    if context == "tenant-cluster":
        seed_tenant_cluster(store, ldap_bind_password=ldap_bind_password)
    elif context == "hub":
        seed_hub(store)
    else:
        seed_worker(store)
