"""The pod ports the tenant's NetworkPolicy must open, read from the cluster as its CNI sees them.

A NetworkPolicy port is "a port on a pod" (API reference of ``NetworkPolicyPort``,
https://kubernetes.io/docs/reference/kubernetes-api/policy-resources/network-policy-v1/): the CNI filters the
packet after kube-proxy rewrote the Service's address and port to a pod's. So a path the login pod dials through a
Service is opened on the Service's ``targetPort``, resolved as the Service documentation says
(https://kubernetes.io/docs/concepts/services-networking/service/#defining-a-service and the ``ServicePort`` API
reference, https://kubernetes.io/docs/reference/kubernetes-api/service-resources/service-v1/#ServiceSpec): absent,
the same number as ``port``; a number, that number; a name, the ``containerPort`` of that name in the pods the
Service selects. Authentik's LDAP outpost Service maps 636 to its pods' 6636 (the outpost controller declares
``DeploymentPort(636, "ldaps", "tcp", 6636)``), so the runbook's literal ``636`` drops LDAPS: the real system wins.

Interactive ``srun``/``salloc`` on the login pod connect to slurmd pod to pod (no Service) on ``SlurmdPort`` and
slurmd connects back to srun on a port of ``SrunPortRange`` (slurm.conf(5),
https://slurm.schedmd.com/slurm.conf.html#OPT_SlurmdPort and #OPT_SrunPortRange). Both are read from
``scontrol show config`` in the slurmctld pod (https://slurm.schedmd.com/scontrol.html), as the Slurm layer's
preflight reads its settings; when that cannot be read, ``SlurmdPort`` is slurm.conf(5)'s default 6818 and the
range is unknown, and the plan says so. A transient failure of that read (a 5xx, a lost exec) fails the attempt
instead, to be retried: a plan read again before the first write (``reapprove_if_changed``) must not come out
different, and the gate reopen, because one read was unlucky.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from temporalio.exceptions import ApplicationError

from tenantflow.activities.common.errors import transient
from tenantflow.activities.common.kubeobjects import KubeObjects, Manifest
from tenantflow.activities.common.slurm_cli import SlurmCtl
from tenantflow.models.network_policy import (
    DNS,
    LDAP_OUTPOST,
    REQUIRED_PATHS,
    SLURMCTLD,
    SLURMD,
    NetworkPorts,
    Protocol,
    RequiredPath,
)
from tenantflow.models.targets import KubeTarget

DEFAULT_SLURMD_PORT = 6818
"""slurm.conf(5): "The default value is 6818"."""
SLURMD_PORT = "SlurmdPort"
SRUN_PORT_RANGE = "SrunPortRange"


class PortUnresolved(ValueError):
    """A Service port that leads to no pod port: the message names the Service and the fix."""


def target_port(service: Manifest, port: int, pods: Iterable[Manifest], protocol: str = "TCP") -> int:
    """The pod port behind ``port`` of ``service``: its ``targetPort`` (absent: ``port``; a name: the
    ``containerPort`` of that name in ``pods``, the pods the Service selects)."""
    meta = service.get("metadata") or {}
    where = f"Service {meta.get('namespace', '')}/{meta.get('name', '')}"
    spec = service.get("spec") or {}
    entry = next(
        (p for p in spec.get("ports") or [] if p.get("port") == port and p.get("protocol", "TCP") == protocol), None
    )
    if entry is None:
        listed = ", ".join(f"{p.get('port')}/{p.get('protocol', 'TCP')}" for p in spec.get("ports") or []) or "none"
        raise PortUnresolved(
            f"{where} has no port {port}/{protocol} (ports: {listed}); expose {port}/{protocol} on the Service "
            "or point tenantflow at the Service that serves it"
        )
    target = entry.get("targetPort", port)
    if isinstance(target, int):
        return target
    if str(target).isdigit():
        return int(target)
    for pod in pods:
        for container in (pod.get("spec") or {}).get("containers") or []:
            for declared in container.get("ports") or []:
                if declared.get("name") == target and declared.get("protocol", "TCP") == protocol:
                    return int(declared["containerPort"])
    raise PortUnresolved(
        f"{where} maps {port}/{protocol} to the port name {target!r}, which no pod it selects declares "
        f"({spec.get('selector') or 'no selector'}); name the containerPort {target!r} in those pods, or give the "
        "Service a numeric targetPort"
    )


@dataclass(frozen=True)
class Resolved:
    """One path through a Service: the port clients dial and the pod port a policy must open."""

    path: RequiredPath
    pod_port: int
    note: str


def _resolve(objs: KubeObjects, path: RequiredPath, required: bool) -> Resolved:
    namespace, name = str(path.peer_namespace), str(path.service)
    service = objs.get("Service", name, namespace)
    if service is None:
        if required:
            raise PortUnresolved(
                f"Service {namespace}/{name} does not exist, so the pod port behind {path.port}/"
                f"{path.protocol.value} ({path.why}) cannot be known; deploy it, or set its name in tenantflow"
            )
        return Resolved(path, path.port, f"{path.peer}: no Service {namespace}/{name}, port {path.port} as is")
    selector = (service.get("spec") or {}).get("selector") or {}
    query = ",".join(f"{k}={v}" for k, v in sorted(selector.items()))
    pods = objs.list("Pod", namespace, label_selector=query) if selector else []
    number = target_port(service, path.port, pods, path.protocol.value)
    note = f"{path.peer}: Service {namespace}/{name} {path.port}/{path.protocol.value} -> pod port {number}"
    return Resolved(path, number, note)


def srun_port_range(value: str) -> tuple[int, int] | None:
    """``SrunPortRange`` as ``scontrol show config`` prints it (``60001-63000``; ``0-0`` when unset): None unless a
    range."""
    low, sep, high = value.strip().partition("-")
    if not (sep and low.isdigit() and high.isdigit()) or int(low) == 0 or int(low) > int(high):
        return None
    return int(low), int(high)


def slurm_settings(target: KubeTarget) -> tuple[int, tuple[int, int] | None, str | None]:
    """``SlurmdPort``, ``SrunPortRange`` (None when unset: srun then listens on ephemeral ports), read with
    ``scontrol show config`` in the slurmctld pod, and why they could not be (None when they were)."""
    try:
        config = SlurmCtl.connect(target).config()
    except ApplicationError as exc:
        if transient(exc):
            raise
        return DEFAULT_SLURMD_PORT, None, str(exc).splitlines()[0][:200]
    port = config.get(SLURMD_PORT, "")
    slurmd = int(port) if port.isdigit() else DEFAULT_SLURMD_PORT
    return slurmd, srun_port_range(config.get(SRUN_PORT_RANGE, "")), None


def read(objs: KubeObjects, target: KubeTarget) -> NetworkPorts:
    """The pod ports of the login pod's paths in the cluster of ``target``; :class:`PortUnresolved` when the
    outpost or slurmctld Service leads to no pod port."""
    ldaps = _resolve(objs, _path(LDAP_OUTPOST.service), required=True)
    ctld = _resolve(objs, _path(SLURMCTLD.service), required=True)
    dns_udp = _resolve(objs, _path(DNS.service, "UDP"), required=False)
    dns_tcp = _resolve(objs, _path(DNS.service, "TCP"), required=False)
    slurmd, srun_range, unread = slurm_settings(target)
    source = (
        f"slurm.conf(5) default: slurmctld's configuration could not be read ({unread})"
        if unread
        else "scontrol show config"
    )
    range_note = (
        f"{SRUN_PORT_RANGE}={srun_range[0]}-{srun_range[1]} ({source})"
        if srun_range
        else f"{SRUN_PORT_RANGE} not set ({source}): srun listens on ephemeral ports, which only the ingress from "
        f"{SLURMCTLD.peer_namespace} on every port admits"
    )
    notes = (ldaps.note, ctld.note, dns_tcp.note, f"slurmd: {SLURMD_PORT}={slurmd} ({source})", range_note)
    return NetworkPorts(
        ldaps.pod_port,
        ctld.pod_port,
        dns_udp.pod_port,
        dns_tcp.pod_port,
        slurmd,
        srun_range,
        notes,
        slurm_config_read=unread is None,
    )


def _path(service: str | None, protocol: str = "TCP") -> RequiredPath:
    return next(p for p in REQUIRED_PATHS if p.service == service and p.protocol.value == protocol)


def required_paths(ports: NetworkPorts) -> list[RequiredPath]:
    """:data:`~models.network_policy.REQUIRED_PATHS` on the pod ports of ``ports`` (what a policy must allow),
    plus interactive jobs: the login pod to slurmd on ``SlurmdPort`` and, when ``SrunPortRange`` is known, slurmd
    back to srun on every port of it."""
    pod_port = {
        (LDAP_OUTPOST.service, "TCP"): ports.ldaps,
        (SLURMCTLD.service, "TCP"): ports.slurmctld,
        (DNS.service, "UDP"): ports.dns_udp,
        (DNS.service, "TCP"): ports.dns_tcp,
    }
    paths = [
        p.model_copy(update={"port": pod_port.get((p.service or "", p.protocol.value), p.port)}) for p in REQUIRED_PATHS
    ]
    paths.append(SLURMD.egress(ports.slurmd, Protocol.tcp, "srun/salloc on the login pod launch tasks through slurmd"))
    if ports.srun_range:
        low, high = ports.srun_range
        paths.append(SLURMD.ingress(low, high, Protocol.tcp, "slurmd connects back to srun on a port of SrunPortRange"))
    return paths
