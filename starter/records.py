"""Where the CLI finds what a finished run applied: the record in the cluster first, the run's history second.

A completed onboarding (enrollment) stores a record in the tenant's (worker's) cluster
(:mod:`models.records`); it outlives the Temporal history, which the namespace's retention
removes. The CLI reads it with the kubeconfig of ``--kubeconfig`` or ``TENANTFLOW_KUBECONFIG``
and the context of ``--context`` (default: that kubeconfig's current context), in the namespace
``TENANTFLOW_RECORDS_NAMESPACE`` (default ``tenantflow-system``). Without a kubeconfig, or
when the cluster holds no record, the contract comes from the latest run's history.

``tenantflow tenants``, ``handover`` and ``drift`` read no cluster themselves: the worker reads the records
(:func:`read_on_worker`, the read-only ``TenantRecords`` workflow) in the cluster its registry names
(:func:`records_cluster`: ``--context``, else the current context of ``--kubeconfig``/``TENANTFLOW_KUBECONFIG``,
which must be a cluster of the worker's registry of the same name), so they need only Temporal access.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Annotated

import typer
from kubernetes import config
from temporalio.exceptions import ApplicationError
from urllib3.exceptions import HTTPError

from tenantflow.activities.common import clusters
from tenantflow.activities.common.recordstore import read_latest
from tenantflow.models.enrollment_contract import WorkerEnrollment
from tenantflow.models.onboarding import OnboardingResult
from tenantflow.models.records import (
    RecordedTenant,
    RecordKey,
    RecordsQuery,
    TenantRecord,
    WorkerClusterRecord,
)
from tenantflow.models.run_ids import records_read_id
from tenantflow.models.status import RunOutcome
from tenantflow.models.targets import KubeTarget
from tenantflow.models.tenant import TenantContract
from tenantflow.starter.client import TenantflowClient
from tenantflow.starter.contracts import ContractError
from tenantflow.starter.output import errors
from tenantflow.worker.config import WorkerSettings, load_env_file
from tenantflow.workflows.record_reads import TenantRecords

READ_TIMEOUT = timedelta(minutes=2)
"""How long a read of records may take, a worker's pickup included: without a worker on the task queue it ends."""
KubeconfigOpt = Annotated[
    str | None,
    typer.Option(help="kubeconfig of the cluster holding the records (default: TENANTFLOW_KUBECONFIG)"),
]
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
ContextOpt = Annotated[
    str | None,
    typer.Option(
        help="kubeconfig context of the cluster holding the records (default: the kubeconfig's current context)"
    ),
]


def read_env_file() -> None:
    """Export ``TENANTFLOW_ENV_FILE`` (the worker's configuration file, e.g. the lab's ``lab.env``) into this
    process without overriding its environment, so the CLI reads the clusters the worker reads."""
    try:
        load_env_file(WorkerSettings())
    except FileNotFoundError as exc:
        raise ContractError(
            f"{exc} (set TENANTFLOW_ENV_FILE in this shell to the worker's configuration file)"
        ) from None


def records_target(kubeconfig: str | None, context: str | None) -> KubeTarget | None:
    """The cluster to read records from; None without a kubeconfig (``--kubeconfig``, ``TENANTFLOW_KUBECONFIG`` in
    the environment or in the file ``TENANTFLOW_ENV_FILE`` names).

    The operator chooses this kubeconfig for the CLI's own reads, as for kubectl; it joins this process's cluster
    registry (:func:`activities.common.clusters.use_operator_kubeconfig`), never the worker's.
    """
    read_env_file()
    path = kubeconfig or os.environ.get("TENANTFLOW_KUBECONFIG")
    if not path:
        return None
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
    clusters.use_operator_kubeconfig(Path(path).resolve())
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


async def read_on_worker(api: TenantflowClient, cluster: KubeTarget, slug: str | None = None) -> list[RecordedTenant]:
    """The current record of every tenant in ``cluster`` (only ``slug``'s when given), read by the worker."""
    report = await api.client.execute_workflow(
        TenantRecords.run,
        RecordsQuery(records=cluster, slug=slug),
        id=records_read_id(uuid.uuid4().hex[:12]),
        task_queue=api.task_queue,
        execution_timeout=READ_TIMEOUT,
        static_summary=f"read the tenant records of {cluster.describe()}" + (f" ({slug})" if slug else ""),
    )
    return report.tenants


async def read_record(
    key: RecordKey, model: type[TenantRecord] | type[WorkerClusterRecord]
) -> TenantRecord | WorkerClusterRecord | None:
    """The latest record of ``key``; None (with a warning on stderr) when the cluster cannot be read."""
    try:
        return await asyncio.to_thread(read_latest, key, model)
    except (ApplicationError, HTTPError, OSError) as exc:
        errors.print(
            f"cannot read the record {key.stem} from {key.target.describe()} ({exc}); trying the run's history",
            style="yellow",
            markup=False,
        )
        return None


async def tenant_record(target: KubeTarget | None, slug: str) -> TenantRecord | None:
    if target is None:
        return None
    found = await read_record(RecordKey.of_tenant(target, slug), TenantRecord)
    return found if isinstance(found, TenantRecord) else None


async def onboarded_contract(api: TenantflowClient, target: KubeTarget | None, slug: str) -> TenantContract:
    """The contract of ``slug``'s record in ``target``, else of its latest onboarding run."""
    record = await tenant_record(target, slug)
    return record.contract if record is not None else await api.onboarded_contract(slug)


async def enrolled_contract(
    api: TenantflowClient, target: KubeTarget | None, namespace: str, workercluster: str
) -> WorkerEnrollment:
    """The contract of ``namespace/workercluster``'s record in ``target`` (that cluster), else of its latest run."""
    record = (
        None
        if target is None
        else await read_record(RecordKey.of_workercluster(target, namespace, workercluster), WorkerClusterRecord)
    )
    if isinstance(record, WorkerClusterRecord):
        return record.contract
    return await api.enrolled_contract(namespace, workercluster)


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
