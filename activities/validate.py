"""Validation, "what done looks like": the runbook's end-to-end checks and its "what could go wrong" list.

Each check is read-only and yields a :class:`Finding` with what was seen and the
fix. Layers are read through their own clients (Kubernetes objects, the
slurmctld pod, the login pod, Weka, Authentik).
"""

from __future__ import annotations

from collections.abc import Callable

from temporalio import activity

from tenantflow.activities.authentik_client import AuthentikClient
from tenantflow.activities.kubeclient import ExecOutput
from tenantflow.activities.kubeobjects import KubeObjects
from tenantflow.activities.login import login_exec
from tenantflow.activities.manifests import RESERVED_LABEL, login_pod_names
from tenantflow.activities.settings import settings
from tenantflow.activities.slurm_cli import SlurmCtl, duration_minutes, parse_partition
from tenantflow.activities.slurm_users import uidless
from tenantflow.activities.storage_layout import tenant_credentials
from tenantflow.activities.weka_client import WekaClient
from tenantflow.models.hostlist import compress_hostlist
from tenantflow.models.onboarding import StepInput, StepResult
from tenantflow.models.results import Finding, Severity
from tenantflow.models.tenant import TenantContract

Check = Callable[[StepInput], Finding]


def finding(check: str, ok: bool, message: str, fix: str = "") -> Finding:
    return Finding(
        check=check, ok=ok, severity=Severity.info if ok else Severity.error, message=message, fix="" if ok else fix
    )


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
    return finding(
        "reservation.partition_nodes",
        ok,
        f"Reservation nodes {compress_hostlist(labelled)}, "
        f"partition nodes {compress_hostlist(in_partition)}, "
        f"contract nodes {compress_hostlist(inp.facts.nodes)}",
        "re-run the partition step so the partition's Nodes equal the Reservation",
    )


def _getent(out: ExecOutput) -> str:
    return out.stdout.strip() if out.exit_code == 0 else ""


def identity_consistent(inp: StepInput) -> Finding:
    contract = inp.contract
    ctl = SlurmCtl.connect(contract.cluster)
    login_pod = login_pod_names(contract)[0]
    mismatched = []
    for user in contract.usernames:
        login = _getent(login_exec(contract, login_pod, ["getent", "passwd", user])).split(":")[2:4]
        slurmd = _getent(ctl.run(["getent", "passwd", user], check=False)).split(":")[2:4]
        if not login or login != slurmd or "0" in login:
            mismatched.append(f"{user} login={':'.join(login) or 'missing'} slurm={':'.join(slurmd) or 'missing'}")
    return finding(
        "identity.uid_gid",
        not mismatched,
        "same uid/gid on the login pod and the Slurm side for every user"
        if not mismatched
        else "uid/gid differ: " + "; ".join(mismatched),
        "point nslcd on both pods at the same LDAP outpost and property mapping; pkill -HUP nslcd",
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
    return finding(
        "storage.quotas",
        not missing,
        "home and scratch quotas are ACTIVE" if not missing else f"no active quota for {missing}",
        "re-run the storage quotas step",
    )


def group_members(inp: StepInput) -> Finding:
    contract = inp.contract
    with AuthentikClient.from_settings() as authentik:
        group = authentik.group_by_name(contract.slug)
    members = sorted(u.username for u in (group.users_obj or [])) if group else []
    ok = members == sorted(contract.usernames)
    return finding(
        "identity.group_members",
        ok,
        f"Authentik group {contract.slug} members: {members}",
        "add the missing users to the group, remove the others",
    )


def binding_selects_tenant_pods(inp: StepInput) -> Finding:
    contract = inp.contract
    objs = KubeObjects(contract.cluster)
    binding = objs.get("ReservationBinding", f"{contract.slug}-binding", contract.namespace) or {}
    selector = ((binding.get("spec") or {}).get("podSelector") or {}).get("matchLabels") or {}
    pods = [objs.get("Pod", name, contract.namespace) for name in login_pod_names(contract)]
    unmatched = [
        p["metadata"]["name"]
        for p in pods
        if p is not None and not selector.items() <= (p["metadata"].get("labels") or {}).items()
    ]
    ok = bool(selector) and not unmatched and all(p is not None for p in pods)
    return finding(
        "kube.binding_selector",
        ok,
        f"ReservationBinding selects {selector}; pods not selected: {unmatched or 'none'}",
        f"label every tenant pod template app.kubernetes.io/managed-by: {contract.slug}",
    )


def partition_max_time(inp: StepInput) -> Finding:
    contract = inp.contract
    ctl = SlurmCtl.connect(contract.cluster)
    partition = parse_partition(ctl.run(["scontrol", "show", "partition", contract.slug]).stdout)
    max_time = partition.get("MaxTime") if partition else ""
    have, want = duration_minutes(max_time), duration_minutes(contract.slurm.contract_wall_limit)
    ok = (want is None and have is None) or (have is None or (want is not None and have >= want))
    return finding(
        "slurm.max_time",
        bool(ok) and bool(max_time),
        f"partition MaxTime={max_time or 'unset'}, contract wall limit {contract.slurm.contract_wall_limit}",
        "set MaxTime to the contract's wall limit (UNLIMITED for none) and tell the tenant",
    )


def evict_on_release_off(inp: StepInput) -> Finding:
    contract = inp.contract
    reservation = KubeObjects(contract.cluster).get("Reservation", contract.reservation_name) or {}
    evict = (reservation.get("spec") or {}).get("evictOnRelease")
    return finding(
        "capacity.evict_on_release",
        evict is False,
        f"Reservation evictOnRelease={evict}",
        "set evictOnRelease: false so the operator drains gracefully",
    )


def bind_secret_in_namespace(inp: StepInput) -> Finding:
    contract = inp.contract
    objs = KubeObjects(contract.cluster)
    release = objs.get("HelmRelease", f"login-{contract.slug}", contract.namespace) or {}
    name = (((release.get("spec") or {}).get("values") or {}).get("ldap") or {}).get("bindPasswordSecret")
    present = bool(name) and objs.get("Secret", str(name), contract.namespace) is not None
    return finding(
        "login.bind_secret",
        present,
        f"bindPasswordSecret {name!r} {'exists' if present else 'is missing'} in {contract.namespace}",
        f"copy the LDAP bind Secret from {settings().ldap_bind_secret_namespace} into "
        f"{contract.namespace}; never put the password in chart values",
    )


def authorized_keys_present(inp: StepInput) -> Finding:
    contract = inp.contract
    out = login_exec(contract, login_pod_names(contract)[0], ["ls", "/etc/ssh/authorized_keys.d/"])
    listed = set(out.stdout.split())
    missing = sorted(set(contract.usernames) - listed)
    return finding(
        "login.authorized_keys",
        out.exit_code == 0 and not missing,
        f"authorized_keys.d lists {sorted(listed)}" + (f"; missing {missing}" if missing else ""),
        "trigger the ssh_keys sync, check the Secret, restart the login pod",
    )


def associations_have_uids(inp: StepInput) -> Finding:
    contract = inp.contract
    missing = uidless(SlurmCtl.connect(contract.cluster), contract.usernames)
    return finding(
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


@activity.defn(name="validate.all")
def validate_all(inp: StepInput) -> StepResult:
    return StepResult(facts=inp.facts, findings=[check(inp) for check in CHECKS])


ACTIVITIES = [validate_all]
