"""``tenantflow drift`` refuses what it cannot check before reading any service: no kubeconfig or neither a tenant
nor ``--all``, a schedule naming no cluster (exit 2), a tenant without a record (exit 5), one whose record says it
was offboarded (exit 4)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tenantflow.activities.common.clusters import KUBECONFIG_ENV
from tenantflow.activities.common.recordstore import store
from tenantflow.models.records import DEFAULT_NAMESPACE, RecordStatus
from tests.lab.kubeapi.conftest import Cluster
from tests.records.test_store import tenant_record

CLI = str(Path(sys.executable).parent / "tenantflow")


def drift(cluster: Cluster | None, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("TENANTFLOW_KUBECONFIG", "TENANTFLOW_ENV_FILE")}
    target = ("--kubeconfig", str(cluster.kubeconfig), "--context", "admin") if cluster else ()
    return subprocess.run([CLI, "drift", *args, *target], env=env, capture_output=True, text=True, timeout=60)


async def test_drift_refuses_what_it_cannot_check(cluster: Cluster, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KUBECONFIG_ENV, str(cluster.kubeconfig))  # this process's registry, to store a record
    no_kubeconfig = drift(None, "--all")
    assert no_kubeconfig.returncode == 2 and "pass --kubeconfig" in no_kubeconfig.stderr
    no_cluster = drift(None, "--schedule")
    assert no_cluster.returncode == 2 and "pass --context CLUSTER" in no_cluster.stderr
    neither = drift(cluster)
    assert neither.returncode == 2 and "drift SLUG" in neither.stderr
    both = drift(cluster, "tenant-x", "--all")
    assert both.returncode == 2 and "drift SLUG" in both.stderr

    unknown = drift(cluster, "tenant-unknown")
    assert unknown.returncode == 5 and "no record of tenant-unknown" in unknown.stderr

    gone = tenant_record(cluster).model_copy(update={"status": RecordStatus.offboarded})
    await asyncio.to_thread(store, gone, DEFAULT_NAMESPACE)
    offboarded = drift(cluster, gone.contract.slug)
    assert offboarded.returncode == 4 and "was offboarded" in offboarded.stderr
