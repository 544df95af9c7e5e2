"""Slurm layer of onboarding (runbook step 4a-4d): the activities for accounts, user associations, QoS, partition.

Every command runs in the slurmctld pod of ``contract.cluster`` (see
:class:`activities.common.slurm_cli.SlurmCtl`). The desired objects come from
:mod:`activities.slurm.wants`, the preflight's enforcement check from
:mod:`activities.slurm.enforcement`, sacctmgr reads, writes and undo from
:mod:`activities.slurm.accounting`, the partition from :mod:`activities.slurm.partition`.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext

from temporalio.exceptions import ApplicationError

from tenantflow.activities.common.errors import fail, transient
from tenantflow.activities.common.kubelease import SLURM_ACCOUNTING, Lease
from tenantflow.activities.common.registered import defn
from tenantflow.activities.common.settings import settings
from tenantflow.activities.common.slurm_cli import SlurmCtl, parse_node_states, word
from tenantflow.activities.slurm.accounting import (
    Ensurer,
    current_values,
    differences,
    modify_argvs,
    read_world,
    undo_results,
)
from tenantflow.activities.slurm.enforcement import enforcement_problems
from tenantflow.activities.slurm.partition import (
    confirm_partition,
    line_nodes,
    partition_problems,
    restore_partition,
)
from tenantflow.activities.slurm.partition_backends import chosen, read
from tenantflow.activities.slurm.qos import QOS_FORMAT, parse_qos
from tenantflow.activities.slurm.user_batch import UserBatchEnsurer
from tenantflow.activities.slurm.users import ensure_uids, wait_resolved
from tenantflow.activities.slurm.wants import (
    partition_line,
    qos_list,
    want_account_qos,
    want_accounts,
    want_qos,
    want_users,
)
from tenantflow.models import runbook
from tenantflow.models.hostlist import compress_hostlist
from tenantflow.models.onboarding import StepInput, StepResult, UndoInput
from tenantflow.models.plan import Action, PlanStep
from tenantflow.models.results import EnsureResult, Finding, Outcome, SlurmObject, SlurmPartition
from tenantflow.models.tenant import TenantContract

LAYER = "slurm"


def _nodes(inp: StepInput) -> list[str]:
    nodes = inp.facts.nodes or list(inp.contract.capacity.nodes or [])
    if not nodes:
        raise fail("Invalid", "no nodes in facts: capacity.preflight must choose the nodes first")
    return nodes


def _ctl(c: TenantContract) -> SlurmCtl:
    return SlurmCtl.connect(c.cluster)


def _turn(c: TenantContract) -> Lease:
    """The Lease every run holds while it reads, checks and writes Slurm accounting (see
    :mod:`activities.common.kubelease`: slurmdbd keeps the last of two concurrent adds of one name)."""
    return Lease(c.cluster, settings().slurm_namespace, SLURM_ACCOUNTING)


@defn(runbook.SLURM.preflight)
def preflight(inp: StepInput) -> StepResult:
    c = inp.contract
    findings: list[Finding] = []

    def check(name: str, ok: bool, message: str, fix: str = "", severity: str = "error") -> None:
        findings.append(Finding(check=f"slurm.{name}", ok=ok, message=message, fix=fix, severity=severity))

    try:
        ctl = _ctl(c)
    except ApplicationError as err:
        if transient(err):
            raise
        cfg = settings()
        check(
            "controller",
            False,
            f"the slurmctld deployment {cfg.slurm_namespace}/{cfg.slurm_controller} has no "
            f"pod to run commands in: {err.message}",
            "check that slurmctld runs there, or set SLURM_NAMESPACE / SLURM_CONTROLLER_DEPLOYMENT to where it runs",
        )
        return StepResult(facts=inp.facts, findings=findings)
    ping = ctl.run(["scontrol", "ping"], check=False)
    check(
        "controller",
        ping.exit_code == 0 and "UP" in ping.stdout,
        "slurmctld answers" if ping.exit_code == 0 else f"slurmctld is not reachable: {ping.stderr.strip()}",
        "start slurmctld in slurm-control and check its logs",
    )
    clusters = ctl.run(["sacctmgr", "-P", "-n", "show", "cluster", "format=cluster"], check=False)
    listed = clusters.stdout.split()
    check(
        "slurmdbd",
        clusters.exit_code == 0 and c.slurm.cluster in listed,
        f"slurmdbd lists cluster {c.slurm.cluster}"
        if clusters.exit_code == 0 and c.slurm.cluster in listed
        else f"slurmdbd does not list cluster {c.slurm.cluster}: {(clusters.stderr or clusters.stdout).strip()}",
        "check slurmdbd and that slurm.cluster names the registered cluster",
    )
    if findings and not all(f.ok for f in findings):
        return StepResult(facts=inp.facts, findings=findings)
    problems = enforcement_problems(ctl.config())
    for problem in problems:
        check("enforcement", False, problem.message, problem.fix)
    if not problems:
        check("enforcement", True, "slurmctld enforces association and QoS limits and tracks gres/gpu")
    world = read_world(ctl, c)
    org = world.organizations.get(c.slug)
    check(
        "account",
        org in (None, c.slug),
        f"account {c.slug} is free" if org is None else f"account {c.slug} belongs to organization {org}",
        f"pick another slug or remove the foreign account {c.slug}",
    )
    if c.team_account and (team := world.account(c.team_account)) is not None:
        check(
            "team_account",
            team.parent == c.slug,
            f"account {c.team_account} has parent {team.parent}",
            "choose slurm.team_account that no other tenant uses",
        )
    foreign_qos = sorted(world.qos) if org is None else []
    check(
        "qos",
        not foreign_qos,
        "QoS names are free"
        if not foreign_qos
        else f"QoS {', '.join(foreign_qos)} already exist but account {c.slug} does not",
        "remove the stale QoS or choose another slug",
    )
    _partition_checks(ctl, c, inp.facts.nodes, check)
    return StepResult(facts=inp.facts, findings=findings)


def _partition_checks(ctl: SlurmCtl, c: TenantContract, nodes: list[str], check: Callable[..., None]) -> None:
    try:
        backend = chosen()
    except ApplicationError as err:
        check("partition_backend", False, err.message, "set SLURM_PARTITION_BACKEND in the worker's environment")
        return
    held = backend.lines(c)
    ours = held.get(c.slug)
    live = ctl.run(["scontrol", "show", "partition", word(c.slug)], check=False)
    foreign = live.exit_code == 0 and ours is None
    check(
        "partition",
        not foreign,
        f"partition {c.slug} is free"
        if not foreign
        else f"partition {c.slug} exists in slurmctld but not in {backend.where(c)}",
        "remove the partition from slurm.conf or choose another slug",
    )
    taken = {n: name for name, line in held.items() if name != c.slug for n in line_nodes(line) or []}
    clash = sorted(n for n in nodes if n in taken)
    check(
        "nodes_free",
        not clash,
        "no chosen node is in another partition"
        if not clash
        else "nodes already in other tenant partitions: " + ", ".join(f"{n} ({taken[n]})" for n in clash),
        "choose other nodes",
    )
    states = parse_node_states(ctl.run(["sinfo", "-h", "-N", "-o", "%N|%t"]).stdout)
    known = {s.node for s in states}
    missing = sorted(set(nodes) - known)
    check(
        "nodes_known",
        not missing,
        "Slurm knows every chosen node" if not missing else f"Slurm does not know nodes {compress_hostlist(missing)}",
        "add the nodes to slurm.conf (NodeName=...) before onboarding",
    )


@defn(runbook.SLURM.plan)
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
        steps.append(PlanStep(layer=LAYER, kind=want.kind, name=want.name, action=action, detail=dict(want.values)))
    line = partition_line(c, inp.facts.nodes) if inp.facts.nodes else ""
    backend = chosen()
    current = read(backend, c)
    action = Action.create if current is None else Action.unchanged if current == line else Action.update
    steps.append(
        PlanStep(
            layer=LAYER,
            kind="partition",
            name=c.slug,
            action=action,
            namespace=settings().slurm_namespace,
            detail={"line": line, "backend": backend.name, "writes": backend.where(c)},
        )
    )
    return steps


@defn(runbook.SLURM_ACCOUNTS)
def accounts(inp: StepInput) -> StepResult:
    ens = Ensurer(_ctl(inp.contract), inp.contract, _turn(inp.contract).held)
    return StepResult(results=ens.run(want_accounts(inp.contract)), facts=inp.facts)


@defn(runbook.SLURM_QOS)
def qos(inp: StepInput) -> StepResult:
    c = inp.contract
    ens = Ensurer(_ctl(c), c, _turn(c).held)
    return StepResult(results=ens.run([*want_qos(c), want_account_qos(c)]), facts=inp.facts)


@defn(runbook.SLURM_USERS)
def users(inp: StepInput) -> StepResult:
    c = inp.contract
    ctl = _ctl(c)
    known = {q.name for q in parse_qos(ctl.show("qos", {"names": qos_list(c)}, QOS_FORMAT))}
    missing = sorted({c.normal_qos_name, c.interactive_qos_name} - known)
    if missing:
        raise fail("NotFound", f"QoS {', '.join(missing)} do not exist yet: slurm.qos must run before slurm.users")
    wait_resolved(ctl, c.usernames)
    results = UserBatchEnsurer(ctl, c, _turn(c).held).run(want_users(c))
    try:
        reconfigured = ensure_uids(ctl, c.usernames)
    except Exception:
        with _turn(c).held():
            undo_results(ctl, c.slug, list(reversed(results)))
        raise
    findings = (
        [
            Finding.passed(
                check="slurm.user_uids",
                message="slurmctld had recorded new users without a uid (its NSS had not synced them "
                "yet); scontrol reconfigure looked them up again",
            )
        ]
        if reconfigured
        else []
    )
    return StepResult(results=results, facts=inp.facts, findings=findings)


@defn(runbook.SLURM_PARTITION)
def partition(inp: StepInput) -> StepResult:
    c = inp.contract
    backend = chosen()
    nodes = _nodes(inp)
    ctl = _ctl(c)
    line = partition_line(c, nodes)
    current = read(backend, c)
    outcome = Outcome.created if current is None else Outcome.unchanged if current == line else Outcome.updated
    if outcome != Outcome.unchanged:
        backend.write(c, line)
    try:
        if outcome != Outcome.unchanged or partition_problems(ctl, c, nodes):
            confirm_partition(ctl, c, nodes, backend)
        problems = partition_problems(ctl, c, nodes)
        if problems:
            raise fail("Invalid", f"partition {c.slug} after reconfigure: " + "; ".join(problems))
    except Exception:
        if outcome != Outcome.unchanged:
            restore_partition(ctl, c, current, backend)
        raise
    result = EnsureResult(
        layer=LAYER,
        kind="partition",
        name=c.slug,
        namespace=settings().slurm_namespace,
        outcome=outcome,
        data=SlurmPartition(line=line, previous=current, nodes=compress_hostlist(nodes), backend=backend.name),
    )
    return StepResult(results=[result], facts=inp.facts)


@defn(runbook.SLURM.undo)
def undo(inp: UndoInput) -> list[EnsureResult]:
    c = inp.contract
    ctl = _ctl(c)
    where = {"cluster": c.slurm.cluster, "account": c.user_account}
    accounting = [
        r.model_copy(update={"data": SlurmObject.model_validate(where | r.data_as(SlurmObject).model_dump())})
        for r in reversed(inp.results)
        if r.kind != "partition"
    ]
    made = any(r.outcome in (Outcome.created, Outcome.updated) for r in accounting)
    with _turn(c).held() if made else nullcontext():
        done = undo_results(ctl, c.slug, accounting, before_delete=lambda res: release_qos(ctl, c, res))
    for res in inp.results:
        if res.kind != "partition" or res.outcome not in (Outcome.created, Outcome.updated):
            continue
        record = res.data_as(SlurmPartition)
        previous = record.previous
        if not restore_partition(ctl, c, previous, chosen(record.backend)):
            done.append(res.model_copy(update={"outcome": Outcome.absent}))
            continue
        done.append(res.model_copy(update={"outcome": Outcome.deleted if previous is None else Outcome.updated}))
    return done


ACTIVITIES = [preflight, plan, accounts, users, qos, partition, undo]


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
