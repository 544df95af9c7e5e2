"""``tenantflow drift`` refuses what it cannot check before reading any service: no cluster named or neither a
tenant nor ``--all``, a schedule naming no cluster (exit 2); and, once a worker (``TenantRecords`` over the
emulated cluster, on the dev server) read the tenant's record, a tenant without a record (exit 5), one whose
record says it was offboarded (exit 4)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from tenantflow.activities.common.clusters import KUBECONFIG_ENV
from tenantflow.activities.common.recordstore import store
from tenantflow.activities.records.steps import read_tenants
from tenantflow.models.records import DEFAULT_NAMESPACE, RecordStatus
from tenantflow.workflows.record_reads import TenantRecords
from tests.lab.kubeapi.conftest import Cluster
from tests.records.test_store import tenant_record

CLI = str(Path(sys.executable).parent / "tenantflow")


async def drift(cluster: Cluster | None, *args: str, queue: str = "no-worker") -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("TENANTFLOW_KUBECONFIG", "TENANTFLOW_ENV_FILE")}
    env["TENANTFLOW_TASK_QUEUE"] = queue
    target = ("--kubeconfig", str(cluster.kubeconfig), "--context", "admin") if cluster else ()
    command = [CLI, "drift", *args, *target]
    return await asyncio.to_thread(subprocess.run, command, env=env, capture_output=True, text=True, timeout=60)


@asynccontextmanager
async def records_worker(env: WorkflowEnvironment) -> AsyncIterator[str]:
    """A worker that reads tenant records (``TenantRecords``) with this process's cluster registry; its queue."""
    queue = f"records-{uuid.uuid4().hex[:8]}"
    with ThreadPoolExecutor(max_workers=2) as pool:
        async with Worker(
            env.client, task_queue=queue, workflows=[TenantRecords], activities=[read_tenants], activity_executor=pool
        ):
            yield queue


async def test_drift_refuses_what_it_cannot_check(
    cluster: Cluster, dev_env: WorkflowEnvironment, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KUBECONFIG_ENV, str(cluster.kubeconfig))  # this process's registry: the worker's
    monkeypatch.setenv("TEMPORAL_ADDRESS", dev_env.client.service_client.config.target_host)
    no_cluster_named = await drift(None, "--all")
    assert no_cluster_named.returncode == 2 and "pass --context" in no_cluster_named.stderr
    no_cluster = await drift(None, "--schedule")
    assert no_cluster.returncode == 2 and "pass --context CLUSTER" in no_cluster.stderr
    neither = await drift(cluster)
    assert neither.returncode == 2 and "drift SLUG" in neither.stderr
    both = await drift(cluster, "tenant-x", "--all")
    assert both.returncode == 2 and "drift SLUG" in both.stderr

    async with records_worker(dev_env) as queue:
        unknown = await drift(cluster, "tenant-unknown", queue=queue)
        assert unknown.returncode == 5 and "no record of tenant-unknown" in unknown.stderr

        gone = tenant_record(cluster).model_copy(update={"status": RecordStatus.offboarded})
        await asyncio.to_thread(store, gone, DEFAULT_NAMESPACE)
        offboarded = await drift(cluster, gone.contract.slug, queue=queue)
        assert offboarded.returncode == 4 and "was offboarded" in offboarded.stderr
