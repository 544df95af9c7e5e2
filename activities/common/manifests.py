"""The runbook's Kubernetes objects for one tenant, rendered as plain dicts (pure functions, no I/O).

Plan and apply both render from here, so the plan shows exactly what apply writes.
Every object carries the labels that identify tenantflow and the tenant
(:func:`owner_labels`); the run that created it is stamped by the ensure helper.
"""

from __future__ import annotations

import base64
from typing import Any

from tenantflow.models.network_policy import NetworkPolicy, NetworkPorts
from tenantflow.models.tenant import StorageIsolation, TenantContract

Manifest = dict[str, Any]

MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGER = "tenantflow"
TENANT_LABEL = "tenantflow.io/tenant"
RUN_ANNOTATION = "tenantflow.io/run"
CREATED_ANNOTATION = "tenantflow.io/created-by"
"""The workflow that created a Kubernetes object (written at create only, never by an adoption)."""
ADOPTED_ANNOTATION = "tenantflow.io/adopted-by"
"""The workflow that adopted a Kubernetes object someone else made (written by the adoption, put back by its undo)."""
RESERVED_LABEL = "reserved.tenant"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
HARDWARE_POOL_LABEL = "hardware-pool"
GPU_RESOURCE = "nvidia.com/gpu"
POD_SECURITY_LABEL = "pod-security.kubernetes.io/"
POD_SECURITY_ENFORCE = "baseline"
"""The Pod Security Standard a tenant namespace enforces by default (setting ``TENANT_POD_SECURITY_ENFORCE``): the
login pod's sshd runs as root and needs SETUID, SETGID and SYS_CHROOT, which ``baseline`` admits and ``restricted``
refuses (:data:`LOGIN_POD_SECURITY_WHY`)."""
POD_SECURITY_REPORT = "restricted"
"""The standard a tenant namespace warns and audits at (runbook step 3a): every pod that would fail ``restricted``
is still reported to whoever creates it and in the audit log."""
LOGIN_POD_SECURITY_WHY = (
    "the login pod's sshd runs as root and switches to each user (capabilities SETUID, SETGID, SYS_CHROOT), which "
    "Pod Security 'restricted' refuses and 'baseline' admits; baseline still refuses privileged containers, host "
    "namespaces, hostPath volumes, host ports and any other added capability, and 'restricted' stays on as "
    "warn and audit, so every other pod that would fail it is reported"
)
HELM_API = "helm.toolkit.fluxcd.io/v2"
"""Flux's HelmRelease (fluxcd/helm-controller ``api/v2/helmrelease_types.go``, the CRD
``config/crd/bases/helm.toolkit.fluxcd.io_helmreleases.yaml``; https://fluxcd.io/flux/components/helm/helmreleases/)."""
HELM_INTERVAL = "10m"
"""``spec.interval``: how often helm-controller reconciles the release (and re-applies it after drift)."""
NETWORKING_API = "networking.k8s.io/v1"
RBAC_GROUP = "rbac.authorization.k8s.io"
RBAC_API = f"{RBAC_GROUP}/v1"
LOGIN_CHART = "sunk-login"
WORKLOAD_LABEL = MANAGED_BY
"""The label every tenant workload carries (value: the slug), selected by the ReservationBinding."""
ALLOWED_PEER_NAMESPACES = ("slurm-control",)
EGRESS_NAMESPACES = ("slurm-control", "auth", "kube-system")
EGRESS_PORTS = ((53, "UDP"), (636, "TCP"), (443, "TCP"))
"""The runbook's egress ports, verbatim; :func:`allow_policy` adds what they miss."""
SLURM_NAMESPACE = "slurm-control"
DNS_NAMESPACE = "kube-system"
AUTH_NAMESPACE = "auth"
LDAPS_PORT = 636


def owner_labels(slug: str) -> dict[str, str]:
    return {MANAGED_BY: MANAGER, TENANT_LABEL: slug}


def _meta(
    name: str,
    slug: str,
    namespace: str | None = None,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": {**(labels or {}), **owner_labels(slug)}}
    if namespace is not None:
        meta["namespace"] = namespace
    if annotations:
        meta["annotations"] = annotations
    return meta


def _namespaced(contract: TenantContract, api_version: str, kind: str, name: str, **fields: Any) -> Manifest:
    """The object ``kind`` ``name`` in the tenant's namespace, with the owner labels and ``fields``."""
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": _meta(name, contract.slug, contract.namespace),
        **fields,
    }


def reservation(contract: TenantContract, nodes: list[str], api_version: str) -> Manifest:
    """Runbook step 1: the cluster-scoped Reservation of the chosen nodes, at the reservation operator's
    ``api_version`` (``RESERVATION_API_VERSION``)."""
    return {
        "apiVersion": api_version,
        "kind": "Reservation",
        "metadata": _meta(contract.reservation_name, contract.slug),
        "spec": {
            "tenant": contract.slug,
            "nodeSelector": {"matchLabels": {HARDWARE_POOL_LABEL: contract.capacity.hardware_pool}},
            "reservedNodes": sorted(nodes),
            "applyTaint": True,
            "taintEffect": "NoSchedule",
            "evictOnRelease": contract.capacity.evict_on_release,
        },
    }


def pod_security_labels(enforce: str = POD_SECURITY_ENFORCE) -> dict[str, str]:
    """Pod Security Admission's namespace labels (https://kubernetes.io/docs/concepts/security/pod-security-admission/):
    ``enforce`` at ``enforce``, ``audit`` and ``warn`` at :data:`POD_SECURITY_REPORT`."""
    return {
        f"{POD_SECURITY_LABEL}enforce": enforce,
        f"{POD_SECURITY_LABEL}audit": POD_SECURITY_REPORT,
        f"{POD_SECURITY_LABEL}warn": POD_SECURITY_REPORT,
    }


def namespace(contract: TenantContract, pod_security: str = POD_SECURITY_ENFORCE) -> Manifest:
    """Runbook step 3a: the namespace with the tenant label and the pod-security labels (enforce ``pod_security``,
    warn and audit ``restricted``)."""
    labels = {"tenant": contract.slug, **pod_security_labels(pod_security)}
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": _meta(contract.namespace, contract.slug, labels=labels),
    }


def resource_quota(contract: TenantContract) -> Manifest:
    """Runbook step 3b: the ResourceQuota (GPUs from the contract's capacity)."""
    quota = contract.kube_quota
    hard = {
        f"requests.{GPU_RESOURCE}": str(contract.capacity.gpus),
        "requests.cpu": quota.requests_cpu,
        "requests.memory": quota.requests_memory,
        "limits.memory": quota.limits_memory,
        "persistentvolumeclaims": str(quota.persistentvolumeclaims),
        "requests.storage": quota.requests_storage,
    }
    return _namespaced(contract, "v1", "ResourceQuota", f"{contract.slug}-quota", spec={"hard": hard})


def limit_range(contract: TenantContract) -> Manifest:
    """Runbook step 3b: the container defaults."""
    quota = contract.kube_quota
    container = {
        "type": "Container",
        "default": {"cpu": quota.default_cpu, "memory": quota.default_memory},
        "defaultRequest": {"cpu": quota.default_request_cpu, "memory": quota.default_request_memory},
    }
    return _namespaced(contract, "v1", "LimitRange", f"{contract.slug}-defaults", spec={"limits": [container]})


def reservation_binding(contract: TenantContract, api_version: str) -> Manifest:
    """Runbook step 3c: tenant pods (``app.kubernetes.io/managed-by: <slug>``) go to the Reservation, at the
    reservation operator's ``api_version``."""
    spec = {
        "reservationName": contract.reservation_name,
        "podSelector": {"matchLabels": {WORKLOAD_LABEL: contract.slug}},
        "injectAffinity": True,
        "injectToleration": True,
    }
    return _namespaced(contract, api_version, "ReservationBinding", f"{contract.slug}-binding", spec=spec)


def _namespace_peer(name: str) -> dict[str, Any]:
    return {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": name}}}


def _policy(contract: TenantContract, suffix: str, spec: dict[str, Any]) -> Manifest:
    return _namespaced(contract, NETWORKING_API, "NetworkPolicy", f"{contract.slug}-{suffix}", spec=spec)


def deny_all_policy(contract: TenantContract) -> Manifest:
    """Runbook step 3d: deny every ingress and egress by default."""
    return _policy(contract, "deny-all", {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]})


def _port(port: int, protocol: str) -> dict[str, Any]:
    return {"port": port, "protocol": protocol}


def allow_policy(contract: TenantContract, ports: NetworkPorts) -> Manifest:
    """Runbook step 3d (tenant-internal traffic, Slurm, LDAP 636, DNS 53/UDP, HTTPS 443) verbatim, then one rule per
    path the login pod needs, on the pod ports the cluster really serves (``ports``, read by
    ``activities/kube/ports.py``); :func:`policy_additions` says why each is there."""
    slug = contract.namespace
    egress: list[dict[str, Any]] = [
        {
            "to": [_namespace_peer(ns) for ns in (slug, *EGRESS_NAMESPACES)],
            "ports": [_port(port, protocol) for port, protocol in EGRESS_PORTS],
        },
        {"to": [_namespace_peer(slug)]},
        {"to": [_namespace_peer(AUTH_NAMESPACE)], "ports": [_port(ports.ldaps, "TCP")]},
        {
            "to": [_namespace_peer(SLURM_NAMESPACE)],
            "ports": [_port(ports.slurmctld, "TCP"), _port(ports.slurmd, "TCP")],
        },
        {"to": [_namespace_peer(DNS_NAMESPACE)], "ports": [_port(ports.dns_udp, "UDP"), _port(ports.dns_tcp, "TCP")]},
    ]
    ingress: list[dict[str, Any]] = [{"from": [_namespace_peer(ns) for ns in (slug, *ALLOWED_PEER_NAMESPACES)]}]
    if ports.srun_range:
        low, high = ports.srun_range
        srun = {"port": low, "endPort": high, "protocol": "TCP"}
        ingress.append({"from": [_namespace_peer(SLURM_NAMESPACE)], "ports": [srun]})
    return _policy(
        contract,
        "allow",
        {"podSelector": {}, "policyTypes": ["Ingress", "Egress"], "ingress": ingress, "egress": egress},
    )


def login_selector(contract: TenantContract) -> dict[str, str]:
    """The labels the login chart puts on its pods (and its Service selects)."""
    return {"app.kubernetes.io/instance": login_release_name(contract)}


def login_ssh_policy(contract: TenantContract) -> Manifest:
    """SSH (22/TCP) into the login pods only, from any address: the LoadBalancer Service's clients."""
    anywhere = [{"ipBlock": {"cidr": "0.0.0.0/0"}}, {"ipBlock": {"cidr": "::/0"}}]
    return _policy(
        contract,
        "login-ssh",
        {
            "podSelector": {"matchLabels": login_selector(contract)},
            "policyTypes": ["Ingress"],
            "ingress": [{"from": anywhere, "ports": [_port(22, "TCP")]}],
        },
    )


def contract_policy(contract: TenantContract, policy: NetworkPolicy) -> Manifest:
    """A policy the contract gives, written as given into the tenant namespace with our labels."""
    body = policy.manifest()
    labels = {**(body["metadata"].get("labels") or {}), **owner_labels(contract.slug)}
    body["metadata"] = {"name": policy.metadata.name, "namespace": contract.namespace, "labels": labels}
    return body


def network_policies(contract: TenantContract, ports: NetworkPorts) -> list[Manifest]:
    """The deny-all, then the contract's own policies when it gives some, else the generated ones."""
    if contract.network.policies is not None:
        return [deny_all_policy(contract), *(contract_policy(contract, p) for p in contract.network.policies)]
    return [deny_all_policy(contract), allow_policy(contract, ports), login_ssh_policy(contract)]


def policy_additions(ports: NetworkPorts) -> list[str]:
    """Why the allow policy has more than the runbook's: one line per rule it adds, then where each port came from
    (the plan shows them)."""
    ldaps = (
        f"the LDAP outpost Service maps 636 to pod port {ports.ldaps} and a NetworkPolicy port is a pod port, so the "
        "runbook's literal 636 would drop LDAPS (the real system wins)"
        if ports.ldaps != LDAPS_PORT
        else "the LDAP outpost Service's 636 reaches pod port 636"
    )
    lines = [
        "egress to the tenant's namespace on every port: the tenant's pods talk to each other (the runbook's rule "
        "limits that to 53, 636 and 443)",
        f"egress to {AUTH_NAMESPACE} on {ports.ldaps}/TCP: {ldaps}",
        f"egress to {SLURM_NAMESPACE} on {ports.slurmctld}/TCP and {ports.slurmd}/TCP: srun/sbatch reach slurmctld "
        "and interactive srun/salloc reach slurmd (SlurmdPort), which the runbook's policy does not allow",
        f"egress to {DNS_NAMESPACE} on {ports.dns_udp}/UDP and {ports.dns_tcp}/TCP: the DNS pods' ports; DNS falls "
        "back to TCP for large answers (RFC 7766)",
        "ingress on 22/TCP to the login pods: the runbook's policy admits only tenant and slurm-control pods, so no "
        "SSH client could log in",
    ]
    if ports.srun_range:
        low, high = ports.srun_range
        lines.append(
            f"ingress from {SLURM_NAMESPACE} on {low}-{high}/TCP (SrunPortRange): slurmd connects back to an "
            "interactive srun there"
        )
    return [*lines, *ports.notes]


def admins_role_binding(contract: TenantContract) -> Manifest:
    """Runbook step 3e: the ``<slug>-admins`` group gets ClusterRole ``edit`` in the namespace only."""
    group = f"{contract.slug}-admins"
    return _namespaced(
        contract,
        RBAC_API,
        "RoleBinding",
        group,
        subjects=[{"kind": "Group", "name": group, "apiGroup": RBAC_GROUP}],
        roleRef={"kind": "ClusterRole", "name": "edit", "apiGroup": RBAC_GROUP},
    )


def _secret(contract: TenantContract, name: str, data: dict[str, str]) -> Manifest:
    return _namespaced(contract, "v1", "Secret", name, type="Opaque", data=data)


def authorized_keys_secret_name(contract: TenantContract) -> str:
    return f"{contract.slug}-authorized-keys"


def authorized_keys_secret(contract: TenantContract) -> Manifest:
    """The Secret projected to ``/etc/ssh/authorized_keys.d/``: one key per username (public keys only)."""
    data = {
        user.username: base64.b64encode(("\n".join(user.ssh_keys) + "\n").encode()).decode() for user in contract.users
    }
    return _secret(contract, authorized_keys_secret_name(contract), data)


def bind_secret_copy(contract: TenantContract, name: str, data: dict[str, str]) -> Manifest:
    """The LDAP bind Secret copied into the tenant namespace, where the login chart looks it up
    (runbook: "LDAP bind credentials in the wrong namespace"); ``data`` is copied as it is, never logged."""
    return _secret(contract, name, dict(data))


def login_release_name(contract: TenantContract) -> str:
    return f"login-{contract.slug}"


def login_pod_selector(contract: TenantContract) -> str:
    """:func:`login_selector` as a label selector (``GET pods?labelSelector=``): the chart's pods, whatever their
    names (a StatefulSet's ordinals, a Deployment's hashes)."""
    return ",".join(f"{key}={value}" for key, value in login_selector(contract).items())


LOGIN_CAPABILITIES = ("AUDIT_WRITE", "CHOWN", "NET_BIND_SERVICE", "SETGID", "SETUID", "SYS_CHROOT")
"""What sshd needs once every capability is dropped: bind port 22 (NET_BIND_SERVICE), switch to the user
(SETUID, SETGID), its privilege-separation chroot (SYS_CHROOT), the session's tty owner (CHOWN) and login records
(AUDIT_WRITE); all in the baseline standard's allowed list."""


def login_security_context() -> Manifest:
    """The sshd container's securityContext the release asks the chart for: root (sshd), no privilege, no
    escalation, every capability dropped but :data:`LOGIN_CAPABILITIES`, the runtime's default seccomp profile."""
    return {
        "privileged": False,
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"], "add": list(LOGIN_CAPABILITIES)},
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def weka_mount_filesystem(contract: TenantContract, role: str) -> str:
    """The Weka path a login mount uses: the tenant's own filesystem, or its directory in the shared one."""
    if contract.storage.isolation is StorageIsolation.strict_org:
        return f"{contract.slug}-{role}"
    return f"{role}/{contract.slug}"


def login_release(
    contract: TenantContract,
    *,
    ldap_uri: str,
    ldap_base_dn: str,
    ldap_bind_dn: str,
    bind_password_secret: str,
    slurm_controller_host: str,
    chart_source: tuple[str, str],
) -> Manifest:
    """Runbook step 5a: the login pod chart release, a Flux HelmRelease (:data:`HELM_API`) of chart
    :data:`LOGIN_CHART` from the HelmRepository ``chart_source`` (namespace, name); the bind password only by
    Secret name; the sshd container's securityContext (:func:`login_security_context`) in ``securityContext``."""
    source_namespace, source_name = chart_source
    chart = {
        "chart": LOGIN_CHART,
        "version": contract.login.chart_version,
        "sourceRef": {"kind": "HelmRepository", "name": source_name, "namespace": source_namespace},
    }
    return _namespaced(
        contract,
        HELM_API,
        "HelmRelease",
        login_release_name(contract),
        spec={
            "interval": HELM_INTERVAL,
            "chart": {"spec": chart},
            "values": {
                "tenant": contract.slug,
                "replicas": contract.login.replicas,
                "ldap": {
                    "uri": ldap_uri,
                    "baseDN": ldap_base_dn,
                    "bindDN": ldap_bind_dn,
                    "bindPasswordSecret": bind_password_secret,
                },
                "slurm": {"controllerHost": slurm_controller_host},
                "sshKeysSecret": authorized_keys_secret_name(contract),
                "securityContext": login_security_context(),
                "homeMount": {"type": "weka", "path": "/home", "filesystem": weka_mount_filesystem(contract, "home")},
                "scratchMount": {
                    "type": "weka",
                    "path": "/scratch",
                    "filesystem": weka_mount_filesystem(contract, "scratch"),
                },
                "service": {
                    "type": "LoadBalancer",
                    "annotations": {"external-dns.alpha.kubernetes.io/hostname": contract.login_hostname},
                },
            },
        },
    )
