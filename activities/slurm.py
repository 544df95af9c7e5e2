"""Slurm layer of onboarding (runbook step 4a-4d): accounts, user associations, QoS, partition.

Every command runs in the slurmctld pod of ``contract.cluster`` (see
:class:`activities.slurm_cli.SlurmCtl`). Each ensure reads ``sacctmgr show ... -P
-n``, compares with the values the contract asks for and writes only what
differs (re-runs make zero sacctmgr writes). Partitions go through the Slurm
operator's ConfigMap ``slurm-partitions`` (one ``<slug>.conf`` key), never
``scontrol create``: the step waits for the operator's rendered-hash annotation,
runs ``scontrol reconfigure`` and checks the live partition. The partition's
``AllowAccounts`` lists the tenant account and its team sub-account, because
Slurm matches job accounts exactly and users submit under the sub-account.
A step that fails halfway removes what it created before raising, so a retry
or the saga never finds half-made debris.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client
from temporalio import activity
from temporalio.exceptions import ApplicationError

from tenantflow.activities import kubeclient
from tenantflow.activities.errors import TRANSIENT, fail
from tenantflow.activities.settings import settings
from tenantflow.activities.slurm_cli import (
    ACCOUNT_FORMAT,
    ASSOC_FORMAT,
    QOS_FORMAT,
    RENDER_ERROR_ANNOTATION,
    RENDERED_ANNOTATION,
    Assoc,
    SlurmCtl,
    parse_accounts,
    parse_assocs,
    parse_node_states,
    parse_partition,
    parse_qos,
    partitions_hash,
    sacctmgr_write,
    same_duration,
    text,
    word,
    words,
)
from tenantflow.activities.slurm_users import ensure_uids, wait_resolved
from tenantflow.models.hostlist import compress_hostlist, expand_hostlist
from tenantflow.models.onboarding import StepInput, StepResult, UndoInput
from tenantflow.models.plan import Action, PlanStep
from tenantflow.models.results import EnsureResult, Finding, Outcome, Severity
from tenantflow.models.tenant import Qos, TenantContract

LAYER = "slurm"
RENDER_TIMEOUT_S = 120.0
CLEARED = {"grptres": "gres/gpu=-1", "grpjobs": "-1", "maxjobs": "-1", "grptresmins": "gres/gpu=-1",
           "priority": "0", "maxwall": "-1", "flags": "-1", "defaultqos": "-1", "qos": ""}


# ---------------------------------------------------------------- desired state


@dataclass(frozen=True)
class Want:
    """One Slurm object as the contract wants it: ``values`` are sacctmgr keys -> values."""

    kind: str
    name: str
    values: dict[str, str]
    where: dict[str, str] = field(default_factory=dict)


def _tres(gpus: int) -> str:
    return f"gres/gpu={gpus}"


def want_accounts(c: TenantContract) -> list[Want]:
    s = c.slurm
    wants = [Want("account", c.slug, {"Description": c.display_name, "Organization": c.slug,
                                      "Parent": "root", "Fairshare": str(s.fairshare),
                                      "GrpTRES": _tres(c.capacity.gpus), "GrpJobs": str(s.grp_jobs)},
                  {"Cluster": s.cluster})]
    if c.team_account:
        wants.append(Want("account", c.team_account, {"Description": f"{c.display_name} ML Team",
                                                      "Parent": c.slug, "Fairshare": str(s.team_fairshare)},
                          {"Cluster": s.cluster}))
    return wants


def _qos_values(c: TenantContract, q: Qos) -> dict[str, str]:
    values = {"Priority": str(q.priority), "GrpTRES": _tres(q.grp_gpus or c.capacity.gpus), "MaxWall": q.max_wall,
              "Flags": "DenyOnLimit" if q.deny_on_limit else ""}
    if q.preempt_off:
        values["PreemptMode"] = "OFF"
    return values


def want_qos(c: TenantContract) -> list[Want]:
    return [Want("qos", c.normal_qos_name, _qos_values(c, c.slurm.normal_qos)),
            Want("qos", c.interactive_qos_name, _qos_values(c, c.slurm.interactive_qos))]


def qos_list(c: TenantContract) -> str:
    return ",".join(sorted((c.normal_qos_name, c.interactive_qos_name)))


def want_account_qos(c: TenantContract) -> Want:
    return Want("account-qos", c.slug, {"QOS": qos_list(c), "DefaultQOS": c.normal_qos_name},
                {"Cluster": c.slurm.cluster})


def want_users(c: TenantContract) -> list[Want]:
    return [Want("user", u, {"Account": c.user_account, "DefaultAccount": c.user_account, "Fairshare": "parent",
                             "MaxJobs": str(c.slurm.user_max_jobs),
                             "GrpTRESMins": _tres(c.user_budget_gpu_minutes), "QOS": qos_list(c),
                             "DefaultQOS": c.normal_qos_name},
                 {"Cluster": c.slurm.cluster, "Account": c.user_account}) for u in c.usernames]


def allow_accounts(c: TenantContract) -> list[str]:
    return [c.slug, *([c.team_account] if c.team_account else [])]


def partition_line(c: TenantContract, nodes: list[str]) -> str:
    s = c.slurm
    return (f"PartitionName={word(c.slug)} Nodes={compress_hostlist(word(n) for n in nodes)} "
            f"AllowAccounts={words(allow_accounts(c))} Default=NO State=UP MaxTime={word(s.partition_max_time)} "
            f"DefaultTime={word(s.partition_default_time)} PreemptMode=OFF OverSubscribe={s.oversubscribe.value}")


# ---------------------------------------------------------------- reading the world


@dataclass
class World:
    """What sacctmgr says about the tenant's objects."""

    assocs: list[Assoc]
    descriptions: dict[str, str]
    organizations: dict[str, str]
    qos: dict[str, dict[str, str]]

    def account(self, name: str) -> Assoc | None:
        return next((a for a in self.assocs if a.account == name and not a.user), None)

    def user(self, name: str, account: str) -> Assoc | None:
        return next((a for a in self.assocs if a.account == account and a.user == name), None)


def read_world(ctl: SlurmCtl, c: TenantContract) -> World:
    accounts = allow_accounts(c)
    assocs = parse_assocs(ctl.show("assoc", {"cluster": word(c.slurm.cluster), "accounts": words(accounts)},
                                   ASSOC_FORMAT))
    records = parse_accounts(ctl.show("account", {"names": words(accounts)}, ACCOUNT_FORMAT))
    qos_rows = parse_qos(ctl.show("qos", {"names": qos_list(c)}, QOS_FORMAT))
    return World(
        assocs=assocs,
        descriptions={r.account: r.description for r in records},
        organizations={r.account: r.organization for r in records},
        qos={q.name: {"Priority": q.priority, "GrpTRES": q.grptres, "MaxWall": q.maxwall,
                      "Flags": ",".join(q.flags), "PreemptMode": q.preemptmode} for q in qos_rows})


def current_values(world: World, want: Want) -> dict[str, str] | None:
    """The object's current values under the same keys as ``want.values``; None when it does not exist."""
    if want.kind == "qos":
        return world.qos.get(want.name)
    if want.kind == "user":
        assoc = world.user(want.name, want.where["Account"])
        if assoc is None:
            return None
        return {"Account": assoc.account, "DefaultAccount": want.values["DefaultAccount"],
                "Fairshare": assoc.fairshare, "MaxJobs": assoc.maxjobs, "GrpTRESMins": assoc.grptresmins,
                "QOS": ",".join(assoc.qos), "DefaultQOS": assoc.defaultqos}
    acc = world.account(want.name)
    if acc is None:
        return None
    if want.kind == "account-qos":
        return {"QOS": ",".join(acc.qos), "DefaultQOS": acc.defaultqos}
    return {"Description": world.descriptions.get(want.name, ""),
            "Organization": world.organizations.get(want.name, ""), "Parent": acc.parent,
            "Fairshare": acc.fairshare, "GrpTRES": acc.grptres, "GrpJobs": acc.grpjobs}


def _same(key: str, want: str, have: str) -> bool:
    if key in ("Description", "Organization", "Flags"):
        return sorted(want.lower().split(",")) == sorted(have.lower().split(","))
    if key == "MaxWall":
        return bool(have) and same_duration(want, have)
    if key == "PreemptMode":
        # Slurm 22.05 stores a QoS PreemptMode=OFF as 0 and prints it as "cluster" (the cluster's mode is OFF).
        return want.lower() == have.lower() or (want.upper() == "OFF" and have.lower() in ("cluster", "off"))
    if key == "GrpTRES":
        return want in have.split(",")
    return want == have


def differences(want: Want, have: dict[str, str]) -> dict[str, str]:
    """Keys whose current value differs, mapped to their current value."""
    return {k: have.get(k, "") for k, v in want.values.items() if not _same(k, v, have.get(k, ""))}


# ---------------------------------------------------------------- writing


def _kv(values: dict[str, str]) -> list[str]:
    out = []
    for key, value in values.items():
        if key == "Flags" and not value:
            out.append("Flags-=DenyOnLimit")
        else:
            out.append(f"{key}={text(value) if key == 'Description' else value}")
    return out


def add_argv(want: Want) -> list[str]:
    values = dict(want.values)
    entity = "account" if want.kind == "account" else want.kind
    if want.kind == "account" and values.get("Parent") == "root":
        values.pop("Parent")
    if want.kind == "qos" and not values.get("Flags"):
        values.pop("Flags")
    return sacctmgr_write("add", entity, want.name, *_kv(values), *_kv(want.where))


ACCOUNT_LEVEL = ("Description", "Organization")


def modify_argvs(want: Want, keys: list[str], values: dict[str, str]) -> list[list[str]]:
    """``modify ... where ... set ...`` commands: account-level fields without, limits with the cluster."""
    entity = "account" if want.kind in ("account", "account-qos") else want.kind
    where = {"name": word(want.name), **{k.lower(): word(v) for k, v in want.where.items()}}
    groups = [[k for k in keys if k not in ACCOUNT_LEVEL]]
    if entity == "account":
        groups.append([k for k in keys if k in ACCOUNT_LEVEL])
    argvs = []
    for group in groups:
        if group:
            scope = {k: v for k, v in where.items() if k != "cluster"} if group[0] in ACCOUNT_LEVEL else where
            argvs.append(sacctmgr_write("modify", entity, "", *_kv({k: values[k] for k in group}), where=scope,
                                        set_mode=True))
    return argvs


def delete_argv(kind: str, name: str, data: dict[str, Any]) -> list[str]:
    if kind == "user":
        return sacctmgr_write("delete", "user", "", where={"name": word(name), "account": word(data["account"]),
                                                           "cluster": word(data["cluster"])})
    return sacctmgr_write("delete", "qos" if kind == "qos" else "account", name)


@dataclass
class Ensurer:
    """Applies wants one by one; on an error removes what it created in this attempt, then re-raises."""

    ctl: SlurmCtl
    contract: TenantContract
    results: list[EnsureResult] = field(default_factory=list)

    def ensure(self, want: Want, world: World) -> None:
        have = current_values(world, want)
        data: dict[str, Any] = {"values": want.values, "cluster": self.contract.slurm.cluster,
                                "account": want.where.get("Account", "")}
        if have is None:
            if want.kind == "account-qos":
                raise fail("NotFound", f"Slurm account {want.name} does not exist; run slurm.accounts first")
            self.ctl.run(add_argv(want))
            outcome = Outcome.created
        else:
            changed = differences(want, have)
            if changed and want.kind == "user" and "Account" in changed:
                raise fail("Conflict", f"user {want.name} has no association with account {want.where['Account']}")
            if changed:
                for argv in modify_argvs(want, list(changed), want.values):
                    self.ctl.run(argv)
                data["previous"] = changed
            outcome = Outcome.updated if changed else Outcome.unchanged
        self.results.append(EnsureResult(layer=LAYER, kind=want.kind, name=want.name, outcome=outcome, data=data))

    def run(self, wants: list[Want]) -> list[EnsureResult]:
        world = read_world(self.ctl, self.contract)
        try:
            for want in wants:
                self.ensure(want, world)
        except Exception:
            undo_results(self.ctl, list(reversed(self.results)))
            raise
        return self.results


def undo_results(ctl: SlurmCtl, results: list[EnsureResult],
                 before_delete: Callable[[EnsureResult], None] | None = None) -> list[EnsureResult]:
    """Delete what was created and put back what was updated, newest first."""
    done: list[EnsureResult] = []
    for res in results:
        kind, data = res.kind, res.data
        if kind == "partition":
            continue
        if res.outcome == Outcome.created:
            if before_delete is not None:
                before_delete(res)
            out = ctl.run(delete_argv(kind, res.name, data), check=False)
            gone = out.exit_code == 0 and "Nothing deleted" not in out.stdout + out.stderr
            if out.exit_code != 0 and "Nothing deleted" not in out.stdout + out.stderr:
                raise _undo_error(kind, res.name, out.stderr or out.stdout)
            done.append(res.model_copy(update={"outcome": Outcome.deleted if gone else Outcome.absent}))
        elif res.outcome == Outcome.updated and data.get("previous"):
            previous = {k: v or CLEARED.get(k.lower(), v) for k, v in data["previous"].items()}
            want = Want(kind, res.name, data["values"], {"Cluster": data["cluster"]} | (
                {"Account": data["account"]} if kind == "user" else {}))
            outcome = Outcome.absent
            for argv in modify_argvs(want, [k for k in previous if k.lower() in CLEARED or previous[k]], previous):
                out = ctl.run(argv, check=False)
                if out.exit_code == 0:
                    outcome = Outcome.updated
                elif "Nothing modified" not in out.stdout + out.stderr:
                    raise _undo_error(kind, res.name, out.stderr or out.stdout)
            done.append(res.model_copy(update={"outcome": outcome}))
        else:
            done.append(res.model_copy(update={"outcome": Outcome.absent}))
    return done


def release_qos(ctl: SlurmCtl, c: TenantContract, res: EnsureResult) -> None:
    """Before deleting a QoS this run created, drop it from the tenant account's QOS and DefaultQOS.

    Only this run can have referenced a QoS it created; when ``slurm.qos`` failed before returning,
    the saga does not know the account-qos change, and sacctmgr refuses to delete a default QoS.
    """
    acc = read_world(ctl, c).account(c.slug) if res.kind == "qos" else None
    if acc is None:
        return
    values = {"QOS": ",".join(q for q in acc.qos if q != res.name)} if res.name in acc.qos else {}
    if acc.defaultqos == res.name:
        values["DefaultQOS"] = "-1"
    for argv in modify_argvs(want_account_qos(c), list(values), values):
        ctl.run(argv)


def _undo_error(kind: str, name: str, detail: str) -> Exception:
    return fail("SlurmCommandFailed", f"could not undo Slurm {kind} {name}: {detail.strip()[-300:]}")


# ---------------------------------------------------------------- partition via the operator's ConfigMap


def _core(c: TenantContract) -> client.CoreV1Api:
    return client.CoreV1Api(kubeclient.api_client(c.cluster))


def read_partition_key(c: TenantContract) -> tuple[dict[str, str], str | None]:
    cfg = settings()
    cm = kubeclient.get_or_none(c.cluster, _core(c).read_namespaced_config_map, cfg.slurm_partitions_configmap,
                                cfg.slurm_namespace)
    data = dict((cm.data or {}) if cm is not None else {})
    return data, data.get(f"{c.slug}.conf")


def write_partition_key(c: TenantContract, line: str | None) -> None:
    """Set (or with None remove) the tenant's key in the partitions ConfigMap."""
    cfg = settings()
    core = _core(c)
    key = f"{c.slug}.conf"
    cm = kubeclient.get_or_none(c.cluster, core.read_namespaced_config_map, cfg.slurm_partitions_configmap,
                                cfg.slurm_namespace)
    if cm is None:
        if line is None:
            return
        body = {"metadata": {"name": cfg.slurm_partitions_configmap, "namespace": cfg.slurm_namespace},
                "data": {key: line}}
        kubeclient.call(c.cluster, core.create_namespaced_config_map, cfg.slurm_namespace, body)
        return
    kubeclient.call(c.cluster, core.patch_namespaced_config_map, cfg.slurm_partitions_configmap,
                    cfg.slurm_namespace, {"data": {key: line}})


def wait_rendered(c: TenantContract, timeout_s: float = RENDER_TIMEOUT_S) -> None:
    """Poll (with backoff, heartbeating) until the operator annotated the hash of the current data."""
    cfg = settings()
    core = _core(c)
    deadline = time.monotonic() + timeout_s
    delay = cfg.poll_interval_s
    while True:
        cm = kubeclient.call(c.cluster, core.read_namespaced_config_map, cfg.slurm_partitions_configmap,
                             cfg.slurm_namespace)
        annotations = (cm.metadata.annotations if cm.metadata else None) or {}
        if annotations.get(RENDER_ERROR_ANNOTATION):
            raise fail("Invalid", f"the Slurm operator refused ConfigMap {cfg.slurm_partitions_configmap}: "
                                  f"{annotations[RENDER_ERROR_ANNOTATION]}")
        if annotations.get(RENDERED_ANNOTATION) == partitions_hash(cm.data):
            return
        if time.monotonic() > deadline:
            raise fail("Timeout", f"the Slurm operator did not render ConfigMap {cfg.slurm_partitions_configmap} "
                                  f"within {timeout_s:.0f} s; check the operator's logs")
        _heartbeat(f"waiting for the Slurm operator to render {c.slug}.conf")
        time.sleep(delay)
        delay = min(delay * 1.5, 5.0)


def _heartbeat(detail: str) -> None:
    if activity.in_activity():
        activity.heartbeat(detail)


def partition_problems(ctl: SlurmCtl, c: TenantContract, nodes: list[str]) -> list[str]:
    """How the live partition differs from the contract (empty when it matches)."""
    out = ctl.run(["scontrol", "show", "partition", word(c.slug)], check=False)
    part = parse_partition(out.stdout) if out.exit_code == 0 else None
    if part is None:
        return [f"partition {c.slug} is not known to slurmctld"]
    problems = []
    if sorted(part.nodes) != sorted(nodes):
        problems.append(f"Nodes={part.get('Nodes')} but the Reservation holds {compress_hostlist(nodes)}")
    checks = {"AllowAccounts": ",".join(allow_accounts(c)), "Default": "NO", "State": "UP",
              "PreemptMode": "OFF", "OverSubscribe": c.slurm.oversubscribe.value}
    problems += [f"{k}={part.get(k)}, want {v}" for k, v in checks.items()
                 if sorted(part.get(k).split(",")) != sorted(v.split(","))]
    for key, want in (("MaxTime", c.slurm.partition_max_time), ("DefaultTime", c.slurm.partition_default_time)):
        if not same_duration(want, part.get(key)):
            problems.append(f"{key}={part.get(key)}, want {want}")
    return problems


def _nodes(inp: StepInput) -> list[str]:
    nodes = inp.facts.nodes or list(inp.contract.capacity.nodes or [])
    if not nodes:
        raise fail("Invalid", "no nodes in facts: capacity.preflight must choose the nodes first")
    return nodes


# ---------------------------------------------------------------- activities


def _ctl(c: TenantContract) -> SlurmCtl:
    return SlurmCtl.connect(c.cluster)


@activity.defn(name="slurm.preflight")
def preflight(inp: StepInput) -> StepResult:
    c = inp.contract
    findings: list[Finding] = []

    def check(name: str, ok: bool, message: str, fix: str = "", severity: str = "error") -> None:
        findings.append(Finding(check=f"slurm.{name}", ok=ok, message=message, fix=fix, severity=severity))

    try:
        ctl = _ctl(c)
    except ApplicationError as err:
        if err.type == TRANSIENT:
            raise
        cfg = settings()
        check("controller", False, f"the slurmctld deployment {cfg.slurm_namespace}/{cfg.slurm_controller} has no "
              f"pod to run commands in: {err.message}", "check that slurmctld runs there, or set "
              "SLURM_NAMESPACE / SLURM_CONTROLLER_DEPLOYMENT to where it runs")
        return StepResult(facts=inp.facts, findings=findings)
    ping = ctl.run(["scontrol", "ping"], check=False)
    check("controller", ping.exit_code == 0 and "UP" in ping.stdout,
          "slurmctld answers" if ping.exit_code == 0 else f"slurmctld is not reachable: {ping.stderr.strip()}",
          "start slurmctld in slurm-control and check its logs")
    clusters = ctl.run(["sacctmgr", "-P", "-n", "show", "cluster", "format=cluster"], check=False)
    listed = clusters.stdout.split()
    check("slurmdbd", clusters.exit_code == 0 and c.slurm.cluster in listed,
          f"slurmdbd lists cluster {c.slurm.cluster}" if clusters.exit_code == 0 and c.slurm.cluster in listed
          else f"slurmdbd does not list cluster {c.slurm.cluster}: {(clusters.stderr or clusters.stdout).strip()}",
          "check slurmdbd and that slurm.cluster names the registered cluster")
    if findings and not all(f.ok for f in findings):
        return StepResult(facts=inp.facts, findings=findings)
    world = read_world(ctl, c)
    org = world.organizations.get(c.slug)
    check("account", org in (None, c.slug),
          f"account {c.slug} is free" if org is None else f"account {c.slug} belongs to organization {org}",
          f"pick another slug or remove the foreign account {c.slug}")
    if c.team_account and (team := world.account(c.team_account)) is not None:
        check("team_account", team.parent == c.slug, f"account {c.team_account} has parent {team.parent}",
              "choose slurm.team_account that no other tenant uses")
    foreign_qos = sorted(world.qos) if org is None else []
    check("qos", not foreign_qos, "QoS names are free" if not foreign_qos
          else f"QoS {', '.join(foreign_qos)} already exist but account {c.slug} does not",
          "remove the stale QoS or choose another slug")
    _partition_checks(ctl, c, inp.facts.nodes, check)
    return StepResult(facts=inp.facts, findings=findings)


def _partition_checks(ctl: SlurmCtl, c: TenantContract, nodes: list[str],
                      check: Callable[..., None]) -> None:
    data, ours = read_partition_key(c)
    live = ctl.run(["scontrol", "show", "partition", word(c.slug)], check=False)
    foreign = live.exit_code == 0 and ours is None
    check("partition", not foreign, f"partition {c.slug} is free" if not foreign
          else f"partition {c.slug} exists in slurmctld but not in ConfigMap {settings().slurm_partitions_configmap}",
          "remove the partition from slurm.conf or choose another slug")
    taken = {n: key for key, line in data.items() if key != f"{c.slug}.conf"
             for n in expand_hostlist(_field(line, "Nodes"))}
    clash = sorted(n for n in nodes if n in taken)
    check("nodes_free", not clash, "no chosen node is in another partition" if not clash
          else "nodes already in other tenant partitions: " + ", ".join(f"{n} ({taken[n]})" for n in clash),
          "choose other nodes")
    states = parse_node_states(ctl.run(["sinfo", "-h", "-N", "-o", "%N|%t"]).stdout)
    known = {s.node for s in states}
    missing = sorted(set(nodes) - known)
    check("nodes_known", not missing, "Slurm knows every chosen node" if not missing
          else f"Slurm does not know nodes {compress_hostlist(missing)}",
          "add the nodes to slurm.conf (NodeName=...) before onboarding")


def _field(line: str, key: str) -> str:
    return next((t.split("=", 1)[1] for t in line.split() if t.startswith(f"{key}=")), "")


@activity.defn(name="slurm.plan")
def plan(inp: StepInput) -> list[PlanStep]:
    c = inp.contract
    ctl = _ctl(c)
    world = read_world(ctl, c)
    steps = []
    for want in [*want_accounts(c), *want_qos(c), want_account_qos(c), *want_users(c)]:
        have = current_values(world, want)
        action = Action.create if have is None else Action.update if differences(want, have) else Action.unchanged
        if want.kind == "account-qos":
            action = Action.update if have is None or differences(want, have) else Action.unchanged
        steps.append(PlanStep(layer=LAYER, kind=want.kind, name=want.name, action=action,
                              detail=dict(want.values)))
    line = partition_line(c, inp.facts.nodes) if inp.facts.nodes else ""
    _, current = read_partition_key(c)
    action = Action.create if current is None else Action.unchanged if current == line else Action.update
    steps.append(PlanStep(layer=LAYER, kind="partition", name=c.slug, action=action,
                          namespace=settings().slurm_namespace, detail={"line": line}))
    return steps


@activity.defn(name="slurm.accounts")
def accounts(inp: StepInput) -> StepResult:
    ens = Ensurer(_ctl(inp.contract), inp.contract)
    return StepResult(results=ens.run(want_accounts(inp.contract)), facts=inp.facts)


@activity.defn(name="slurm.qos")
def qos(inp: StepInput) -> StepResult:
    c = inp.contract
    ens = Ensurer(_ctl(c), c)
    return StepResult(results=ens.run([*want_qos(c), want_account_qos(c)]), facts=inp.facts)


@activity.defn(name="slurm.users")
def users(inp: StepInput) -> StepResult:
    c = inp.contract
    ctl = _ctl(c)
    known = {q.name for q in parse_qos(ctl.show("qos", {"names": qos_list(c)}, QOS_FORMAT))}
    missing = sorted({c.normal_qos_name, c.interactive_qos_name} - known)
    if missing:
        raise fail("NotFound", f"QoS {', '.join(missing)} do not exist yet: slurm.qos must run before slurm.users")
    wait_resolved(ctl, c.usernames)
    results = Ensurer(ctl, c).run(want_users(c))
    try:
        reconfigured = ensure_uids(ctl, c.usernames)
    except Exception:
        undo_results(ctl, list(reversed(results)))
        raise
    findings = [Finding(check="slurm.user_uids", ok=True, severity=Severity.info,
                        message="slurmctld had recorded new users without a uid (its NSS had not synced them "
                                "yet); scontrol reconfigure looked them up again")] if reconfigured else []
    return StepResult(results=results, facts=inp.facts, findings=findings)


@activity.defn(name="slurm.partition")
def partition(inp: StepInput) -> StepResult:
    c = inp.contract
    nodes = _nodes(inp)
    ctl = _ctl(c)
    line = partition_line(c, nodes)
    _, current = read_partition_key(c)
    outcome = Outcome.created if current is None else Outcome.unchanged if current == line else Outcome.updated
    if outcome != Outcome.unchanged:
        write_partition_key(c, line)
    try:
        if outcome != Outcome.unchanged or partition_problems(ctl, c, nodes):
            wait_rendered(c)
            ctl.run(["scontrol", "reconfigure"])
        problems = partition_problems(ctl, c, nodes)
        if problems:
            raise fail("Invalid", f"partition {c.slug} after reconfigure: " + "; ".join(problems))
    except Exception:
        if outcome != Outcome.unchanged:
            _restore_partition(ctl, c, current)
        raise
    result = EnsureResult(layer=LAYER, kind="partition", name=c.slug, namespace=settings().slurm_namespace,
                          outcome=outcome, data={"line": line, "previous": current, "nodes": compress_hostlist(nodes)})
    return StepResult(results=[result], facts=inp.facts)


def _restore_partition(ctl: SlurmCtl, c: TenantContract, previous: str | None) -> None:
    write_partition_key(c, previous)
    wait_rendered(c)
    ctl.run(["scontrol", "reconfigure"])


@activity.defn(name="slurm.undo")
def undo(inp: UndoInput) -> list[EnsureResult]:
    c = inp.contract
    ctl = _ctl(c)
    where = {"cluster": c.slurm.cluster, "account": c.user_account}
    done = undo_results(ctl, [r.model_copy(update={"data": where | r.data}) for r in reversed(inp.results)],
                        before_delete=lambda res: release_qos(ctl, c, res))
    for res in inp.results:
        if res.kind != "partition" or res.outcome not in (Outcome.created, Outcome.updated):
            continue
        _, current = read_partition_key(c)
        previous = res.data.get("previous")
        if current == previous:
            done.append(res.model_copy(update={"outcome": Outcome.absent}))
            continue
        _restore_partition(ctl, c, previous)
        done.append(res.model_copy(update={"outcome": Outcome.deleted if previous is None else Outcome.updated}))
    return done


ACTIVITIES = [preflight, plan, accounts, users, qos, partition, undo]
