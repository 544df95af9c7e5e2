"""The worker's RBAC of deploy/base/rbac.yaml is enough to store and read records by name, and to list them in the
records namespace (the nightly drift check), on the emulator enforcing exactly those rules."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tenantflow.activities.common.clusters import KUBECONFIG_ENV
from tenantflow.activities.common.recordstore import list_records, read_latest, store
from tenantflow.models.records import DEFAULT_NAMESPACE, RecordKey, RecordKind, RunStamp, TenantRecord
from tenantflow.models.targets import KubeTarget
from tests.manifests.test_rbac_in_the_emulator import kubeconfig
from tests.workflows.contract import example_tenant

__all__ = ["kubeconfig"]


async def test_the_worker_role_stores_and_reads_records(kubeconfig: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KUBECONFIG_ENV, str(kubeconfig))  # the worker's cluster registry
    target = KubeTarget(context="worker")
    contract = example_tenant(f"tenant-r{uuid.uuid4().hex[:6]}").model_copy(update={"cluster": target})
    record = TenantRecord(
        contract=contract,
        run=RunStamp(
            workflow_id=f"tenant/{contract.slug}",
            run_id=uuid.uuid4().hex,
            plan_hash="abc",
            approver="ida",
            recorded_at=datetime(2026, 12, 3, tzinfo=UTC),
        ),
    )
    stored = await asyncio.to_thread(store, record, DEFAULT_NAMESPACE)
    assert (stored.version, stored.created) == (1, True)
    again = await asyncio.to_thread(store, record, DEFAULT_NAMESPACE)
    assert (again.version, again.created) == (1, False)
    key = RecordKey.of_tenant(target, contract.slug)
    assert await asyncio.to_thread(read_latest, key, TenantRecord, DEFAULT_NAMESPACE) == record
    listed = await asyncio.to_thread(list_records, target, RecordKind.tenant, DEFAULT_NAMESPACE)
    assert (1, record) in listed, "the drift check lists the records in the records namespace"
