"""Where the CLI and the HTTP API find what a finished run applied: the record in the cluster, read by the worker,
first; the run's history second.

A completed onboarding (enrollment) stores a record in the tenant's (worker's) cluster (:mod:`models.records`); it
outlives the Temporal history, which the namespace's retention removes. Neither the CLI nor the API reads a cluster
itself: the worker reads the records with its own credentials (the read-only ``TenantRecords`` and
``WorkerClusterRecords`` workflows: :func:`read_on_worker`, :func:`tenant_on_worker`, :func:`worker_on_worker`), in
the cluster its registry names, so they need only Temporal access. The CLI names that cluster with ``--context``,
else the current context of ``--kubeconfig``/``TENANTFLOW_KUBECONFIG`` (:func:`named_cluster`; a context of the
worker's registry of the same name): ``tenants``, ``handover``, ``drift``, ``offboard`` and ``decommission``;
``apply`` reads in its contract's cluster. ``offboard`` and ``decommission`` without a cluster read in the cluster
of the latest run's contract, and take that contract when the cluster holds no record.

A mistake of the CLI's own settings (a kubeconfig it cannot read, a ``TENANTFLOW_ENV_FILE`` that is gone) is a
:class:`ContractError` naming that setting; a read the worker cannot do is a :class:`WorkerError` naming the
worker's error and what named the cluster (:func:`read_by_worker`).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Awaitable
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from temporalio.client import WorkflowFailureError
from temporalio.types import MethodAsyncSingleParam

from tenantflow.models.enrollment_contract import WorkerEnrollment
from tenantflow.models.onboarding import OnboardingResult
from tenantflow.models.records import (
    RecordedTenant,
    RecordsQuery,
    TenantRecord,
    WorkerClusterRecord,
    WorkerRecordQuery,
)
from tenantflow.models.run_ids import enrollment_id, onboarding_id, records_read_id
from tenantflow.models.status import RunOutcome
from tenantflow.models.targets import KubeTarget
from tenantflow.models.tenant import TenantContract
from tenantflow.starter.client import TenantflowClient
from tenantflow.starter.contracts import ContractError
from tenantflow.starter.failures import explain
from tenantflow.starter.output import WorkerError
from tenantflow.worker.config import WorkerSettings, load_env_file
from tenantflow.workflows.record_reads import TenantRecords, WorkerClusterRecords

Q = TypeVar("Q")
R = TypeVar("R")
T = TypeVar("T")

READ_TIMEOUT = timedelta(minutes=2)
"""How long a read of records may take, a worker's pickup included: without a worker on the task queue it ends."""
WorkerClusterOpt = Annotated[
    str | None,
    typer.Option(
        "--context",
        help="the cluster holding the records, as the worker's cluster registry names it (default: the current "
        "context of --kubeconfig)",
    ),
]
CurrentContextOpt = Annotated[
    str | None,
    typer.Option(
        "--kubeconfig",
        help="a kubeconfig whose current context names the records' cluster, when --context is not given (default: "
        "TENANTFLOW_KUBECONFIG); the worker reads the records, with its own credentials",
    ),
]


def read_env_file() -> None:
    """Export ``TENANTFLOW_ENV_FILE`` (the worker's configuration file, e.g. the lab's ``lab.env``) into this
    process without overriding its environment, so the CLI names the clusters the worker reads."""
    try:
        load_env_file(WorkerSettings())
    except FileNotFoundError as exc:
        raise ContractError(
            f"{exc} (set TENANTFLOW_ENV_FILE in this shell to the worker's configuration file)"
        ) from None


def records_target(kubeconfig: str | None, context: str | None) -> KubeTarget | None:
    """The context of the kubeconfig (``--kubeconfig``, ``TENANTFLOW_KUBECONFIG`` in the environment or in the file
    ``TENANTFLOW_ENV_FILE`` names) that names the records' cluster: ``context``, else its current context; None
    without a kubeconfig. This process only reads the kubeconfig's context names, never the cluster."""
    read_env_file()
    path = kubeconfig or os.environ.get("TENANTFLOW_KUBECONFIG")
    if not path:
        return None
    from kubernetes import config  # on first use: the whole client loads with it, which other commands need not pay

    try:
        contexts, active = config.list_kube_config_contexts(config_file=path)
    except (config.ConfigException, OSError) as exc:
        raise ContractError(f"{path}: cannot read the kubeconfig to read records with: {exc}") from None
    names = [str(c["name"]) for c in contexts]
    context = context or (str(active["name"]) if active else None)
    if context not in names:
        raise ContractError(
            f"{path}: no context {context!r} to read records with (contexts: {', '.join(names)}); pass --context"
        )
    return KubeTarget(kubeconfig=str(Path(path).resolve()), context=context)


def named_cluster(kubeconfig: str | None, context: str | None) -> KubeTarget | None:
    """The cluster holding the records as the worker's registry names it: ``--context``, else the current context of
    the kubeconfig (``--kubeconfig``, ``TENANTFLOW_KUBECONFIG``); None when neither is given. Never a kubeconfig
    path, which the worker refuses."""
    if context:
        return KubeTarget(context=context)
    target = records_target(kubeconfig, context)
    return None if target is None else KubeTarget(context=target.context)


def records_cluster(kubeconfig: str | None, context: str | None) -> KubeTarget:
    """:func:`named_cluster`, required."""
    cluster = named_cluster(kubeconfig, context)
    if cluster is None:
        raise ContractError(
            "pass --context CLUSTER: the name, in the worker's cluster registry, of the cluster holding the records"
        )
    return cluster


async def on_worker(api: TenantflowClient, read: MethodAsyncSingleParam[Any, Q, R], query: Q, summary: str) -> R:
    """One read-only records workflow (``read``) run by the worker on ``query``, awaited."""
    return await api.client.execute_workflow(
        read,
        query,
        id=records_read_id(uuid.uuid4().hex[:12]),
        task_queue=api.task_queue,
        execution_timeout=READ_TIMEOUT,
        static_summary=summary,
    )


async def read_on_worker(api: TenantflowClient, cluster: KubeTarget, slug: str | None = None) -> list[RecordedTenant]:
    """The current record of every tenant in ``cluster`` (only ``slug``'s when given), read by the worker."""
    summary = f"read the tenant records of {cluster.describe()}" + (f" ({slug})" if slug else "")
    report = await on_worker(api, TenantRecords.run, RecordsQuery(records=cluster, slug=slug), summary)
    return report.tenants


async def tenant_on_worker(api: TenantflowClient, cluster: KubeTarget, slug: str) -> TenantRecord | None:
    """``slug``'s current record in ``cluster``, read by the worker; None when the cluster holds none."""
    found = await read_on_worker(api, cluster, slug)
    return found[0].record if found else None


async def worker_on_worker(
    api: TenantflowClient, cluster: KubeTarget, namespace: str, worker: str
) -> WorkerClusterRecord | None:
    """The current record of the enrolled worker ``namespace/worker`` in the worker cluster ``cluster``, read by the
    worker (``WorkerClusterRecords``); None when the cluster holds none."""
    query = WorkerRecordQuery(records=cluster, hub_namespace=namespace, worker=worker)
    summary = f"read the record of the worker {namespace}/{worker} in {cluster.describe()}"
    return (await on_worker(api, WorkerClusterRecords.run, query, summary)).record


async def read_by_worker(pending: Awaitable[T], what: str, cluster: KubeTarget, named_by: str) -> T:
    """A read the worker runs for the CLI; its failure a :class:`WorkerError` naming the cluster, what named it
    (an option of this command, or a run's contract) and the worker's error with its fix."""
    try:
        return await pending
    except WorkflowFailureError as exc:
        failure = explain(exc)
        fix = (
            f"name a cluster of the worker's registry ({named_by}), or add {cluster.describe()} to it on the worker"
            if failure.error_type == "UnknownCluster"
            else "the worker reads with its own credentials: see its log"
        )
        raise WorkerError(
            f"the worker cannot read {what} in {cluster.describe()} (named by {named_by}): "
            f"{failure.error_type}: {failure.message}; {fix}"
        ) from None


CLUSTER_OPTIONS = "--context, else the current context of --kubeconfig or TENANTFLOW_KUBECONFIG"
"""What names the records' cluster to ``offboard`` and ``decommission``, for their messages."""


def same_cluster(contract: T, contracts_cluster: KubeTarget, named: KubeTarget, run: str) -> T:
    """``contract`` (a run's, taken when the named cluster holds no record) only when it is of the cluster the
    operator named: a run of another cluster is never offboarded or decommissioned in its place."""
    if contracts_cluster.context != named.context:
        raise ContractError(
            f"{named.describe()} holds no record of it, and {run} is of {contracts_cluster.describe()}: name that "
            "cluster with --context, or pass the contract with --contract"
        )
    return contract


async def onboarded_contract(api: TenantflowClient, cluster: KubeTarget | None, slug: str) -> TenantContract:
    """The contract of ``slug``'s record, read by the worker in ``cluster`` (default: the cluster of the tenant's
    latest onboarding or change run), else that run's own contract."""
    latest = None
    named_by = CLUSTER_OPTIONS
    if cluster is None:
        latest = await api.onboarded_contract(slug)
        cluster, named_by = latest.cluster, f"the contract of {onboarding_id(slug)}"
    record = await read_by_worker(tenant_on_worker(api, cluster, slug), f"the record of {slug}", cluster, named_by)
    if record is not None:
        return record.contract
    latest = latest or await api.onboarded_contract(slug)
    return same_cluster(latest, latest.cluster, cluster, f"{slug}'s latest run {onboarding_id(slug)}")


async def enrolled_contract(
    api: TenantflowClient, cluster: KubeTarget | None, namespace: str, worker: str
) -> WorkerEnrollment:
    """The contract of ``namespace/worker``'s record, read by the worker in the worker cluster ``cluster`` (default:
    that of the worker's latest enrollment run), else that run's own contract."""
    latest = None
    named_by = CLUSTER_OPTIONS
    if cluster is None:
        latest = await api.enrolled_contract(namespace, worker)
        cluster, named_by = latest.worker, f"the contract of {enrollment_id(namespace, worker)}"
    pending = worker_on_worker(api, cluster, namespace, worker)
    record = await read_by_worker(pending, f"the record of the worker {namespace}/{worker}", cluster, named_by)
    if record is not None:
        return record.contract
    latest = latest or await api.enrolled_contract(namespace, worker)
    return same_cluster(latest, latest.worker, cluster, f"the latest run {enrollment_id(namespace, worker)}")


def recorded_result(record: TenantRecord) -> OnboardingResult:
    """The handover an onboarded tenant's record keeps, as its completed onboarding run reported it (what
    ``tenantflow handover`` and ``GET /tenants/{slug}/handover`` show once the run's history is gone)."""
    return OnboardingResult(
        slug=record.contract.slug,
        status=RunOutcome.completed,
        plan_hash=record.run.plan_hash,
        applied=record.applied,
        handover=record.handover,
        approvals=record.run.approvals,
    )
