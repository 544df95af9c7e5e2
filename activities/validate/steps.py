"""Validation, "what done looks like": the runbook's end-to-end checks and its "what could go wrong" list.

Each check is read-only and yields a :class:`Finding` with what was seen and the
fix. Layers are read through their own clients (Kubernetes objects, the
slurmctld pod, the login pod, Weka, Authentik).
"""

from __future__ import annotations

from collections.abc import Callable

from tenantflow.activities.common.authentik_client import AuthentikClient
from tenantflow.activities.common.kubeclient import ExecOutput, selector_query
from tenantflow.activities.common.kubeobjects import KubeObjects
from tenantflow.activities.common.loginpod import KEYS_DIR, login_exec, login_pods, passwd_entries, ready_login_pods
from tenantflow.activities.common.manifests import RESERVED_LABEL, login_pod_selector, login_release_name
from tenantflow.activities.common.polling import heartbeat
from tenantflow.activities.common.registered import defn
from tenantflow.activities.common.settings import settings
from tenantflow.activities.common.slurm_cli import SlurmCtl, batches, parse_partition, slurmd_pods
from tenantflow.activities.common.weka_client import WekaClient
from tenantflow.activities.slurm.qos import QOS_FORMAT, parse_qos
from tenantflow.activities.slurm.users import uidless
from tenantflow.activities.storage.layout import tenant_credentials
from tenantflow.models import runbook
from tenantflow.models.durations import duration_minutes
from tenantflow.models.hostlist import compress_hostlist
from tenantflow.models.onboarding import StepInput, StepResult
from tenantflow.models.results import Finding, Severity
from tenantflow.models.tenant import TenantContract

Check = Callable[[StepInput], Finding]


def partition_nodes(contract: TenantContract) -> list[str]:
    ctl = SlurmCtl.connect(contract.cluster)
    partition = parse_partition(ctl.run(["scontrol", "show", "partition", contract.slug]).stdout)
    return partition.nodes if partition else []


def reservation_matches_partition(inp: StepInput) -> Finding:
    contract = inp.contract
    labelled = sorted(
        n["metadata"]["name"]
        for n in KubeObjects(contract.cluster).list("Node", label_selector=f"{RESERVED_LABEL}={contract.slug}")
    )
    in_partition = sorted(partition_nodes(contract))
    ok = labelled == in_partition == sorted(inp.facts.nodes)
    return Finding.verdict(
        "reservation.partition_nodes",
        ok,
        f"Reservation nodes {compress_hostlist(labelled)}, "
        f"partition nodes {compress_hostlist(in_partition)}, "
        f"contract nodes {compress_hostlist(inp.facts.nodes)}",
        "re-run the partition step so the partition's Nodes equal the Reservation",
    )


def _getent(out: ExecOutput) -> str:
    return out.stdout.strip() if out.exit_code == 0 else ""


def _passwd_ids(out: ExecOutput) -> dict[str, str]:
    """``uid:gid`` by user from ``getent passwd`` output."""
    rows = [line.split(":") for line in _getent(out).split("\n")]
    return {r[0]: f"{r[2]}:{r[3]}" for r in rows if len(r) >= 4}


def identity_consistent(inp: StepInput) -> Finding:
    """Runbook: the same uid/gid for every user on the login pod and on the slurmd pods, where jobs write."""
    contract = inp.contract
    ctl = SlurmCtl.connect(contract.cluster)
    ready = ready_login_pods(KubeObjects(contract.cluster), contract)
    if not ready:
        return Finding.failed(
            "identity.uid_gid", f"no login pod is Ready ({login_pod_selector(contract)})", "re-run login.release"
        )
    login_pod = ready[0]
    login = {user: f"{fields[2]}:{fields[3]}" for user, fields in passwd_entries(contract, login_pod).items()}
    pods = slurmd_pods(contract.cluster, inp.facts.nodes)
    mismatched = (
        [f"no slurmd pod runs on {compress_hostlist(sorted(set(inp.facts.nodes) - set(pods)))}"]
        if (set(pods) != set(inp.facts.nodes))
        else []
    )
    for node, pod in pods.items():
        heartbeat({"slurmd": node})
        slurmd = {
            user: ids
            for batch in batches(contract.usernames)
            for user, ids in _passwd_ids(ctl.on_slurmd(pod["metadata"]["name"], ["getent", "passwd", *batch])).items()
        }
        mismatched += [
            f"{user} login={login.get(user, 'missing')} {pod['metadata']['name']}={slurmd.get(user, 'missing')}"
            for user in contract.usernames
            if user not in login or login[user] != slurmd.get(user) or ":0" in login[user]
        ]
    return Finding.verdict(
        "identity.uid_gid",
        not mismatched,
        "same uid/gid on the login pod and every slurmd pod for every user"
        if not mismatched
        else "gidNumber/uid mismatch between login pod and slurmd pods: " + "; ".join(mismatched[:10]),
        "ensure both pods read from the same LDAP outpost with the same property mapping; restart "
        f"nslcd on both sides (kubectl -n {contract.namespace} exec {login_pod} -- pkill -HUP nslcd; "
        f"kubectl -n {settings().slurm_namespace} exec <slurmd pod> -- pkill -HUP nslcd)",
    )


def quotas_live(inp: StepInput) -> Finding:
    contract = inp.contract
    with WekaClient.from_settings(tenant_credentials(contract)) as weka:
        paths = {
            q.path.rstrip("/")
            for uid in inp.facts.weka_filesystems.values()
            for q in weka.quotas(uid).values()
            if q.status == "ACTIVE"
        }
    wanted = {f"/{user}" for user in contract.usernames} | {f"/{contract.slug}"}
    found = {p for p in paths if p.rsplit("/", 1)[-1] in {w.lstrip("/") for w in wanted}}
    missing = sorted(w for w in wanted if not any(p.endswith(w) for p in found))
    return Finding.verdict(
        runbook.STORAGE_QUOTAS.name,
        not missing,
        "home and scratch quotas are ACTIVE" if not missing else f"no active quota for {missing}",
        "re-run the storage quotas step",
    )


def group_members(inp: StepInput) -> Finding:
    contract = inp.contract
    with AuthentikClient.from_settings() as authentik:
        group = authentik.groups.named(contract.slug)
    members = sorted(u.username for u in (group.users_obj or [])) if group else []
    ok = members == sorted(contract.usernames)
    return Finding.verdict(
        "identity.group_members",
        ok,
        f"Authentik group {contract.slug} members: {members}",
        "add the missing users to the group, remove the others",
    )


def binding_selects_tenant_pods(inp: StepInput) -> Finding:
    """The ReservationBinding selects the login pods and the slurmd (NodeSet) pods of the partition's nodes. Which pods
    its ``podSelector`` (a LabelSelector: ``matchLabels`` and ``matchExpressions``) selects is the API server's answer
    to the selector as a ``labelSelector`` query in each namespace concerned, not a comparison made here."""
    contract = inp.contract
    objs = KubeObjects(contract.cluster)
    binding = objs.get("ReservationBinding", f"{contract.slug}-binding", contract.namespace) or {}
    selector = (binding.get("spec") or {}).get("podSelector") or {}
    login = login_pods(objs, contract)
    slurmd = slurmd_pods(contract.cluster, inp.facts.nodes)
    pods = login + list(slurmd.values())
    query = selector_query(selector)
    selected = {
        (namespace, p["metadata"]["name"])
        for namespace in sorted({p["metadata"]["namespace"] for p in pods})
        for p in (objs.list("Pod", namespace, label_selector=query) if query else [])
    }
    unmatched = [
        p["metadata"]["name"] for p in pods if (p["metadata"]["namespace"], p["metadata"]["name"]) not in selected
    ]
    without = sorted(set(inp.facts.nodes) - set(slurmd))
    ok = bool(query) and not unmatched and len(login) >= contract.login.replicas and not without
    return Finding.verdict(
        "kube.binding_selector",
        ok,
        f"ReservationBinding selects {query or 'nothing (no podSelector)'}; pods not selected (jobs land on whatever "
        f"toleration matches): {unmatched or 'none'}"
        + (f"; no slurmd pod on {compress_hostlist(without)}" if without else ""),
        f"make the SUNK chart set app.kubernetes.io/managed-by: {contract.slug} on every pod template "
        "(login and the NodeSet), the label the ReservationBinding selects",
    )


def partition_max_time(inp: StepInput) -> Finding:
    """The wall limit a job gets, the shorter of the partition's MaxTime and the default QoS's MaxWall, is at
    least the contract's."""
    contract = inp.contract
    ctl = SlurmCtl.connect(contract.cluster)
    partition = parse_partition(ctl.run(["scontrol", "show", "partition", contract.slug]).stdout)
    max_time = partition.get("MaxTime") if partition else ""
    qos = parse_qos(ctl.show("qos", {"names": contract.normal_qos_name}, QOS_FORMAT))
    max_wall = qos[0].limits["MaxWall"] if qos else ""
    limits = [m for m in (duration_minutes(max_time), duration_minutes(max_wall)) if m is not None]
    have, want = min(limits, default=None), duration_minutes(contract.slurm.contract_wall_limit)
    ok = bool(max_time) and bool(qos) and (have is None or (want is not None and have >= want))
    return Finding.verdict(
        "slurm.max_time",
        ok,
        f"partition MaxTime={max_time or 'unset'}, QoS {contract.normal_qos_name} "
        f"MaxWall={max_wall or 'unset'}, contract wall limit {contract.slurm.contract_wall_limit}",
        "set MaxTime=UNLIMITED (or longer) in the partition definition and the QoS MaxWall to at least "
        "the contract's wall limit; tell the tenant the wall limit at handover",
    )


def evict_on_release_off(inp: StepInput) -> Finding:
    """evictOnRelease is false, unless the contract asked for true (then a warning the plan showed)."""
    contract = inp.contract
    reservation = KubeObjects(contract.cluster).get("Reservation", contract.reservation_name) or {}
    evict = (reservation.get("spec") or {}).get("evictOnRelease")
    if evict is True and contract.capacity.evict_on_release:
        return Finding.failed(
            check="capacity.evict_on_release",
            severity=Severity.warning,
            message="Reservation evictOnRelease=True, as the contract asks (warned in the plan)",
            fix="tell the tenant that removing a node kills its running jobs",
        )
    return Finding.verdict(
        "capacity.evict_on_release",
        evict is False,
        f"Reservation evictOnRelease={evict}",
        "set evictOnRelease=false so the operator drains gracefully; communicate before any reservation change",
    )


def bind_secret_in_namespace(inp: StepInput) -> Finding:
    contract = inp.contract
    objs = KubeObjects(contract.cluster)
    release = objs.get("HelmRelease", login_release_name(contract), contract.namespace) or {}
    name = (((release.get("spec") or {}).get("values") or {}).get("ldap") or {}).get("bindPasswordSecret")
    present = bool(name) and objs.get("Secret", str(name), contract.namespace) is not None
    return Finding.verdict(
        "login.bind_secret",
        present,
        f"bindPasswordSecret {name!r} {'exists' if present else 'is missing'} in {contract.namespace}",
        f"copy the LDAP bind Secret from {settings().ldap_bind_secret_namespace} into "
        f"{contract.namespace}; never put the password in chart values",
    )


def authorized_keys_present(inp: StepInput) -> Finding:
    """Every user's key in ``authorized_keys.d`` on every Ready login pod."""
    contract = inp.contract
    pods = ready_login_pods(KubeObjects(contract.cluster), contract)
    seen, ok = [], len(pods) >= contract.login.replicas
    for pod in pods:
        out = login_exec(contract, pod, ["ls", KEYS_DIR])
        listed = set(out.stdout.split())
        missing = sorted(set(contract.usernames) - listed)
        ok = ok and out.exit_code == 0 and not missing
        seen.append(f"{pod}: authorized_keys.d lists {sorted(listed)}" + (f"; missing {missing}" if missing else ""))
    return Finding.verdict(
        "login.authorized_keys",
        ok,
        "; ".join(seen) or f"no login pod is Ready ({login_pod_selector(contract)})",
        "trigger the ssh_keys sync, check the Secret, restart the login pod",
    )


def associations_have_uids(inp: StepInput) -> Finding:
    contract = inp.contract
    missing = uidless(SlurmCtl.connect(contract.cluster), contract.usernames)
    return Finding.verdict(
        "slurm.user_uids",
        not missing,
        "slurmctld holds every user's association with a uid"
        if not missing
        else f"slurmctld holds the associations of {', '.join(missing)} without a uid: their jobs are "
        "refused with 'Invalid account or account/partition combination'",
        "make the slurmctld pod resolve the users (nsscache/nslcd), then run scontrol reconfigure",
    )


CHECKS: tuple[Check, ...] = (
    reservation_matches_partition,
    identity_consistent,
    quotas_live,
    group_members,
    binding_selects_tenant_pods,
    partition_max_time,
    evict_on_release_off,
    bind_secret_in_namespace,
    authorized_keys_present,
    associations_have_uids,
)


@defn(runbook.VALIDATE)
def validate_all(inp: StepInput) -> StepResult:
    return StepResult(facts=inp.facts, findings=[check(inp) for check in CHECKS])


ACTIVITIES = [validate_all]
