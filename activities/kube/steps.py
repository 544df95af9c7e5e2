"""Kubernetes layer (runbook step 3): namespace, quota and limits, ReservationBinding, NetworkPolicy, RBAC.

Each apply step ensures the objects of :mod:`activities.common.manifests` for its runbook
sub-step; ``kube.undo`` removes what a step created (deleting the namespace deletes
its contents, and the saga undoes the namespace step last) and puts back what it
changed or adopted.
"""

from __future__ import annotations

from collections.abc import Callable

from tenantflow.activities.common import kubeensure, manifests
from tenantflow.activities.common.errors import fail
from tenantflow.activities.common.kubeensure import describe
from tenantflow.activities.common.kubeobjects import KubeObjects
from tenantflow.activities.common.loginpod import login_pod_refusals
from tenantflow.activities.common.manifests import Manifest
from tenantflow.activities.common.registered import defn
from tenantflow.activities.common.settings import settings
from tenantflow.activities.kube import netpol, ports
from tenantflow.models import runbook
from tenantflow.models.network_policy import NetworkPolicy, NetworkPorts
from tenantflow.models.onboarding import StepInput, StepResult, UndoInput
from tenantflow.models.plan import PlanStep
from tenantflow.models.results import EnsureResult, Finding, Severity
from tenantflow.models.step import Step
from tenantflow.models.tenant import TenantContract

LAYER = "kube"


APPLY_ORDER = (
    runbook.KUBE_NAMESPACE,
    runbook.KUBE_QUOTA,
    runbook.KUBE_BINDING,
    runbook.KUBE_NETWORK_POLICY,
    runbook.KUBE_RBAC,
)


def _fixed_manifests(contract: TenantContract) -> dict[Step[StepInput, StepResult], list[Manifest]]:
    """The objects of the apply steps that depend on the contract alone (all but the NetworkPolicy step)."""
    return {
        runbook.KUBE_NAMESPACE: [manifests.namespace(contract, settings().tenant_pod_security_enforce)],
        runbook.KUBE_QUOTA: [manifests.resource_quota(contract), manifests.limit_range(contract)],
        runbook.KUBE_BINDING: [manifests.reservation_binding(contract, settings().reservation_api_version)],
        runbook.KUBE_RBAC: [manifests.admins_role_binding(contract)] if contract.admins_group else [],
    }


def step_manifests(
    contract: TenantContract, network: NetworkPorts
) -> dict[Step[StepInput, StepResult], list[Manifest]]:
    """The objects of each apply step, in the order they are written; the allow policy on ``network``'s pod ports."""
    fixed = _fixed_manifests(contract)
    return {
        step: manifests.network_policies(contract, network) if step is runbook.KUBE_NETWORK_POLICY else fixed[step]
        for step in APPLY_ORDER
    }


def _step_objects(objs: KubeObjects, contract: TenantContract, step: Step[StepInput, StepResult]) -> list[Manifest]:
    """The objects of one apply step; only the NetworkPolicy step reads the cluster's ports."""
    if step is runbook.KUBE_NETWORK_POLICY:
        return manifests.network_policies(contract, network_ports(objs, contract))
    return _fixed_manifests(contract)[step]


def network_ports(objs: KubeObjects, contract: TenantContract) -> NetworkPorts:
    """The pod ports of the cluster (:func:`activities.kube.ports.read`); a Service that leads to no pod port is a
    non-retryable failure naming the Service and the fix (preflight refuses it first)."""
    try:
        return ports.read(objs, contract.cluster)
    except ports.PortUnresolved as exc:
        raise fail("PreflightFailed", f"the tenant NetworkPolicy cannot be computed: {exc}") from None


def current_manifests(contract: TenantContract) -> dict[Step[StepInput, StepResult], list[Manifest]]:
    """:func:`step_manifests` on the pod ports the cluster serves now."""
    objs = KubeObjects(contract.cluster)
    return step_manifests(contract, network_ports(objs, contract))


def _detail(contract: TenantContract, obj: Manifest, network: NetworkPorts) -> dict[str, object]:
    kind = obj["kind"]
    if kind == "Namespace":
        return {"labels": obj["metadata"]["labels"]}
    if kind == "ResourceQuota":
        return {"hard": obj["spec"]["hard"]}
    if kind == "LimitRange":
        return {"limits": obj["spec"]["limits"]}
    if kind == "RoleBinding":
        return {"group": obj["subjects"][0]["name"], "clusterRole": obj["roleRef"]["name"]}
    if kind == "NetworkPolicy" and obj["metadata"]["name"] == f"{contract.slug}-allow":
        return {**obj["spec"], "why": manifests.policy_additions(network)}
    return dict(obj.get("spec") or {})


def network_findings(objs: KubeObjects, contract: TenantContract, network: NetworkPorts) -> list[Finding]:
    """Refuse a set of NetworkPolicies (ours, plus any already in the namespace) that cuts the login pod off, on
    the pod ports the cluster serves (``network``)."""
    ours = manifests.network_policies(contract, network)
    names = {p["metadata"]["name"] for p in ours}
    present = objs.list("NetworkPolicy", contract.namespace) if objs.get("Namespace", contract.namespace) else []
    policies = [
        NetworkPolicy.model_validate(p) for p in [*ours, *(p for p in present if p["metadata"]["name"] not in names)]
    ]
    namespaces = {contract.namespace: manifests.namespace(contract)["metadata"]["labels"]}
    peers: dict[str, dict[str, str]] = {}
    paths = ports.required_paths(network)
    for path in paths:
        if path.peer_namespace is None:
            continue
        ns = objs.get("Namespace", path.peer_namespace)
        namespaces[path.peer_namespace] = dict(((ns or {}).get("metadata") or {}).get("labels") or {})
        service = objs.get("Service", path.service, path.peer_namespace) if path.service else None
        if service and (service.get("spec") or {}).get("selector"):
            peers[str(path.service)] = dict(service["spec"]["selector"])
    login = netpol.Endpoint(
        contract.namespace,
        {manifests.WORKLOAD_LABEL: contract.slug, "app": "login", **manifests.login_selector(contract)},
    )
    blocked = netpol.unreachable(policies, login, netpol.Cluster(namespaces), peers, paths)
    if not blocked:
        return [
            Finding.passed(
                check=runbook.KUBE_NETWORK_POLICY.name,
                message="under the tenant NetworkPolicies the login pod reaches (pod ports) "
                + ", ".join(p.label.removeprefix("login pod ") for p in paths),
            )
        ]
    return [
        Finding.failed(
            runbook.KUBE_NETWORK_POLICY.name,
            f"under the tenant's NetworkPolicies the {path.label} is blocked ({path.why})",
            f"add an {path.direction} rule allowing {path.port_text}/{path.protocol.value} "
            f"{'to' if path.direction == 'egress' else 'from'} {path.peer} "
            f"({path.peer_namespace or 'outside the cluster'}), or drop network.policies to use the "
            "generated policy",
        )
        for path in blocked
    ]


def login_admission_findings() -> list[Finding]:
    """Refused before any write: a tenant namespace enforcing ``TENANT_POD_SECURITY_ENFORCE`` that refuses the login
    container tenantflow's release asks the chart for (:func:`activities.common.loginpod.login_pod_refusals`)."""
    level = settings().tenant_pod_security_enforce
    refused = login_pod_refusals(level)
    if not refused:
        return []
    return [
        Finding.failed(
            "kube.pod_security",
            f"tenant namespaces would enforce pod-security {level!r} (TENANT_POD_SECURITY_ENFORCE), which refuses the "
            f"login pod's sshd container: {', '.join(refused)}",
            "set TENANT_POD_SECURITY_ENFORCE=baseline (the login pod's root sshd needs SETUID, SETGID and "
            "SYS_CHROOT), or use a login chart whose sshd runs without root and set the level it admits",
        )
    ]


@defn(runbook.KUBE.preflight)
def preflight(inp: StepInput) -> StepResult:
    """Objects we would create that belong to someone else; platform namespaces; the LDAP bind Secret."""
    contract = inp.contract
    objs = KubeObjects(contract.cluster)
    findings: list[Finding] = []
    try:
        network = ports.read(objs, contract.cluster)
    except ports.PortUnresolved as exc:
        return StepResult(facts=inp.facts, findings=[Finding.failed(runbook.KUBE_NETWORK_POLICY.name, str(exc))])
    namespace_exists = objs.get("Namespace", contract.namespace) is not None
    for step, objects in step_manifests(contract, network).items():
        for obj in objects:
            if step is runbook.KUBE_NAMESPACE or not namespace_exists:
                continue
            meta = obj["metadata"]
            existing = objs.get(obj["kind"], meta["name"], meta.get("namespace"))
            other = kubeensure.foreign_owner(existing, contract.slug) if existing else None
            if other:
                findings.append(
                    Finding.failed(
                        step.name,
                        f"{describe(obj['kind'], meta['name'], meta.get('namespace'))} "
                        f"already exists and belongs to {other}",
                        "remove it or choose another slug",
                    )
                )
    for ns in sorted({*manifests.EGRESS_NAMESPACES, *manifests.ALLOWED_PEER_NAMESPACES}):
        if objs.get("Namespace", ns) is None:
            findings.append(
                Finding.failed(
                    "kube.namespaces",
                    f"namespace {ns} does not exist, so the tenant NetworkPolicy would allow traffic to nothing there",
                    f"create the platform namespace {ns}",
                )
            )
    findings.extend(network_findings(objs, contract, network))
    if network.slurm_config_read and network.srun_range is None:
        findings.append(
            Finding.failed(
                "kube.srun_port_range",
                f"slurmctld runs without {ports.SRUN_PORT_RANGE}: an interactive srun on the login pod listens on an "
                "ephemeral port, so only a policy admitting slurmd on every port lets slurmd connect back to it",
                f"set {ports.SRUN_PORT_RANGE}=60001-63000 (or another range) in slurm.conf so the NetworkPolicy can "
                "name the ports slurmd connects back to",
                severity=Severity.warning,
            )
        )
    findings.extend(login_admission_findings())
    cfg = settings()
    if objs.get("Secret", cfg.ldap_bind_secret, cfg.ldap_bind_secret_namespace) is None:
        findings.append(
            Finding.failed(
                "kube.ldap_bind_secret",
                f"the LDAP bind Secret {cfg.ldap_bind_secret} is not in "
                f"namespace {cfg.ldap_bind_secret_namespace}; login pods would fail with "
                "'ldap_simple_bind: Invalid credentials'",
                "create it in the auth namespace or set LDAP_BIND_SECRET[_NAMESPACE]; never put the "
                "password in chart values",
            )
        )
    if contract.admins_group and objs.get("ClusterRole", "edit") is None:
        findings.append(
            Finding.failed(
                runbook.KUBE_RBAC.name, "ClusterRole edit does not exist", "install the default ClusterRoles"
            )
        )
    return StepResult(facts=inp.facts, findings=findings)


@defn(runbook.KUBE.plan)
def plan(inp: StepInput) -> list[PlanStep]:
    contract = inp.contract
    objs = KubeObjects(contract.cluster)
    network = network_ports(objs, contract)
    return [
        kubeensure.plan_step(objs, LAYER, obj, contract.slug, _detail(contract, obj, network))
        for objects in step_manifests(contract, network).values()
        for obj in objects
    ]


def _apply_step(step: Step[StepInput, StepResult]) -> Callable[[StepInput], StepResult]:
    """The activity of one apply step: ensure its objects (see :func:`step_manifests`); named ``step.short``."""

    def ensure_step(inp: StepInput) -> StepResult:
        contract = inp.contract
        objs = KubeObjects(contract.cluster)
        wanted = _step_objects(objs, contract, step)
        results = [kubeensure.ensure(objs, LAYER, obj, contract.slug, inp.run_id) for obj in wanted]
        return StepResult(results=results, facts=inp.facts)

    ensure_step.__name__ = ensure_step.__qualname__ = step.short
    ensure_step.__doc__ = f"{step.summary} (the objects of ``{step.name}`` in :func:`step_manifests`)."
    return defn(step)(ensure_step)


namespace = _apply_step(runbook.KUBE_NAMESPACE)
quota = _apply_step(runbook.KUBE_QUOTA)
binding = _apply_step(runbook.KUBE_BINDING)
network_policy = _apply_step(runbook.KUBE_NETWORK_POLICY)
rbac = _apply_step(runbook.KUBE_RBAC)


@defn(runbook.KUBE.undo)
def undo(inp: UndoInput) -> list[EnsureResult]:
    return kubeensure.undo(KubeObjects(inp.contract.cluster), LAYER, inp.results, inp.contract.slug)


ACTIVITIES = [preflight, plan, namespace, quota, binding, network_policy, rbac, undo]
