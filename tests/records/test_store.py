"""Records as versioned Secrets in a real (emulated) Kubernetes API: Helm's layout, idempotent per run, listable."""

from __future__ import annotations

import base64
import gzip
import json
import uuid
from datetime import UTC, datetime

import pytest
from kubernetes import client
from temporalio.exceptions import ApplicationError

from tenantflow.activities.common import clusters
from tenantflow.activities.common.recordstore import list_records, read_latest, store
from tenantflow.activities.records.steps import latest_tenant
from tenantflow.models.records import (
    DEFAULT_NAMESPACE,
    SECRET_TYPE,
    LatestContract,
    RecordKey,
    RecordKind,
    RecordStatus,
    RunStamp,
    TenantRecord,
    WorkerClusterRecord,
)
from tenantflow.models.targets import KubeTarget
from tenantflow.starter.contracts import ContractError, load_enrollment
from tenantflow.starter.records import records_target
from tests.lab.kubeapi.conftest import Cluster
from tests.workflows.contract import EXAMPLES, example_tenant
from tests.workflows.lifecycle_harness import with_dave


@pytest.fixture(autouse=True)
def registered(cluster: Cluster, monkeypatch: pytest.MonkeyPatch) -> None:
    """The emulated cluster's contexts are the worker's cluster registry."""
    monkeypatch.setenv(clusters.KUBECONFIG_ENV, str(cluster.kubeconfig))


def stamp(run_id: str | None = None) -> RunStamp:
    return RunStamp(
        workflow_id="tenant/x",
        run_id=run_id or uuid.uuid4().hex,
        plan_hash="abc123",
        approver="dana",
        recorded_at=datetime(2026, 12, 3, 9, 30, tzinfo=UTC),
    )


def tenant_record(cluster: Cluster, context: str = "admin", run_id: str | None = None) -> TenantRecord:
    contract = example_tenant(f"tenant-r{uuid.uuid4().hex[:6]}")
    contract = contract.model_copy(update={"cluster": KubeTarget(context=context)})
    return TenantRecord(contract=contract, run=stamp(run_id))


def secrets(cluster: Cluster, selector: str) -> list[client.V1Secret]:
    found = client.CoreV1Api(cluster.api()).list_namespaced_secret(DEFAULT_NAMESPACE, label_selector=selector)
    return sorted(found.items, key=lambda s: s.metadata.name)


def test_a_record_is_stored_as_helm_stores_a_release(cluster: Cluster) -> None:
    record = tenant_record(cluster)
    slug = record.contract.slug
    stored = store(record, DEFAULT_NAMESPACE)
    assert (stored.name, stored.version, stored.created) == (f"tenantflow.tenant.{slug}.v1", 1, True)

    [secret] = secrets(cluster, f"tenantflow.io/record=tenant,tenantflow.io/tenant={slug}")
    assert secret.type == SECRET_TYPE and secret.immutable
    assert secret.metadata.labels["tenantflow.io/version"] == "1"
    assert secret.metadata.labels["tenantflow.io/status"] == "onboarded"
    assert secret.metadata.annotations["tenantflow.io/run-id"] == record.run.run_id
    helm_encoded = base64.b64decode(secret.data["record"])
    payload = json.loads(gzip.decompress(base64.b64decode(helm_encoded)))
    assert payload["contract"]["slug"] == slug and payload["run"]["approver"] == "dana"


def test_a_retried_run_finds_its_version_and_a_run_that_changed_the_record_writes_the_next(cluster: Cluster) -> None:
    first = tenant_record(cluster)
    store(first, DEFAULT_NAMESPACE)
    again = store(first, DEFAULT_NAMESPACE)
    assert (again.version, again.created) == (1, False)
    rerun = store(first.model_copy(update={"run": stamp()}), DEFAULT_NAMESPACE)
    assert (rerun.version, rerun.created, rerun.run) == (1, False, first.run), "a re-run that changed nothing"

    second = first.model_copy(update={"run": stamp(), "status": RecordStatus.offboarded})
    stored = store(second, DEFAULT_NAMESPACE)
    assert (stored.version, stored.status, stored.created) == (2, RecordStatus.offboarded, True)
    key = RecordKey.of(first)
    assert [s.metadata.name for s in secrets(cluster, key.selector)] == [key.secret_name(1), key.secret_name(2)]
    assert read_latest(key, TenantRecord, DEFAULT_NAMESPACE) == second


def test_listing_gives_the_current_version_of_every_tenant(cluster: Cluster) -> None:
    one, two = tenant_record(cluster), tenant_record(cluster)
    store(one, DEFAULT_NAMESPACE)
    store(two, DEFAULT_NAMESPACE)
    newer = two.model_copy(update={"run": stamp(), "status": RecordStatus.offboarded})
    store(newer, DEFAULT_NAMESPACE)
    listed = {
        r.contract.slug: (version, r)
        for version, r in list_records(one.contract.cluster, RecordKind.tenant, DEFAULT_NAMESPACE)
    }
    assert listed[one.contract.slug] == (1, one)
    assert listed[two.contract.slug] == (2, newer)


def test_an_expiring_lifecycle_reads_the_contract_an_apply_left(cluster: Cluster) -> None:
    """``records.latest_tenant`` (the lifecycle's read at expiry) gives the contract of the highest version: a
    change that added ``dave`` wrote it after the onboarding."""
    first = tenant_record(cluster)
    store(first, DEFAULT_NAMESPACE)
    store(first.model_copy(update={"contract": with_dave(first.contract), "run": stamp()}), DEFAULT_NAMESPACE)
    key = RecordKey.of(first)
    latest = latest_tenant(key)
    assert latest.contract is not None
    assert [user.username for user in latest.contract.users] == ["alice", "bob", "carol", "dave"]
    assert (latest.recorded_by, latest.status) == ("tenant/x", RecordStatus.onboarded)
    assert latest_tenant(key.model_copy(update={"tenant": "tenant-nobody"})) == LatestContract()
    with pytest.raises(ApplicationError) as refused:
        latest_tenant(key.model_copy(update={"target": KubeTarget(context="restricted")}))
    assert refused.value.type == "Forbidden"


def test_a_worker_record_is_named_by_hub_namespace_and_worker(cluster: Cluster) -> None:
    contract = load_enrollment(EXAMPLES / "worker-forecasting-us.yaml")
    worker = f"w{uuid.uuid4().hex[:6]}"
    contract = contract.model_copy(update={"worker_name": worker, "worker": KubeTarget(context="admin")})
    record = WorkerClusterRecord(contract=contract, run=stamp())
    stored = store(record, DEFAULT_NAMESPACE)
    assert stored.name == f"tenantflow.worker.forecasting.{worker}.v1"
    key = RecordKey.of_workercluster(contract.worker, "forecasting", worker)
    assert read_latest(key, WorkerClusterRecord, DEFAULT_NAMESPACE) == record
    assert (
        read_latest(
            RecordKey.of_workercluster(contract.worker, "forecasting", "nobody"), WorkerClusterRecord, DEFAULT_NAMESPACE
        )
        is None
    )


def test_a_user_without_rights_in_the_platform_namespace_is_refused(cluster: Cluster) -> None:
    with pytest.raises(ApplicationError) as refused:
        store(tenant_record(cluster, context="restricted"), DEFAULT_NAMESPACE)
    assert refused.value.type == "Forbidden" and refused.value.non_retryable


def test_the_cli_reads_records_with_the_kubeconfigs_current_or_named_context(cluster: Cluster) -> None:
    current = records_target(str(cluster.kubeconfig), None)
    assert current is not None and current.context == "admin"
    assert records_target(str(cluster.kubeconfig), "restricted") == KubeTarget(
        kubeconfig=str(cluster.kubeconfig), context="restricted"
    )
    with pytest.raises(ContractError, match="no context 'nope'"):
        records_target(str(cluster.kubeconfig), "nope")
