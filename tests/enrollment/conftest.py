"""Fixtures: Hub and worker kube emulators (HTTPS) with the enrollment seeds and lab controllers on one thread.

Besides the org-admin (``hub``) and cluster-admin (``worker``) contexts the kubeconfig
has ``hub-viewer`` and ``worker-viewer`` (read-only tokens) for preflight refusals.
``start_lab(..., agent=False)`` runs no worker agent (a stopped agent);
the ``konduktor`` stand-in is the worker's ``KONDUKTOR_BIN``;
``kueue_versions`` picks the worker's Kueue flavour (``brownfield_v1beta1``: only v1beta1 served);
``pool=True`` seeds a second dispatch-ready WorkerCluster ``forecasting-eu`` with its
own worker store. :meth:`Lab.fault` sets ``/_lab/faults`` and :meth:`Lab.requests` reads ``/_lab/requests`` over
HTTP.
"""

from __future__ import annotations

import asyncio
import json
import os
import ssl
import tempfile
import threading
import urllib.request
import uuid
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from temporalio import activity
from temporalio.client import (
    Client,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowQueryFailedError,
    WorkflowUpdateFailedError,
)
from temporalio.service import RPCError
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import ActivityInboundInterceptor, ExecuteActivityInput, Interceptor, Worker

from tenantflow.activities.common.settings import settings
from tenantflow.activities.hub import konduktor
from tenantflow.activities.hub import steps as hub_activities
from tenantflow.activities.records import gate_notify
from tenantflow.activities.records import steps as records
from tenantflow.activities.workercluster import reset as worker_reset
from tenantflow.activities.workercluster import steps as workercluster
from tenantflow.lab.context import LabContext
from tenantflow.lab.controllers import hub, kueue, worker_agent
from tenantflow.lab.enrollment_seed import (
    KUEUE_BOTH,
    KUEUE_V1BETA1,
    ORG_ADMIN_TOKEN,
    hub_policies,
    seed_hub,
    seed_pool_member,
    seed_worker,
)
from tenantflow.lab.konduktor.wrapper import write_wrapper
from tenantflow.lab.kubeapi.auth import parse_policies
from tenantflow.lab.kubeapi.kubeconfig import KubeContext, write_kubeconfig
from tenantflow.lab.kubeapi.server import build_app, start_kube_api
from tenantflow.lab.kubeapi.store import Store
from tenantflow.lab.kubeapi.tls import self_signed
from tenantflow.models.enrollment_contract import WorkerEnrollment
from tenantflow.models.enrollment_workflows import BOOTSTRAP_PRINTED, EnrollmentInput, EnrollmentResult
from tenantflow.models.gates import ApprovePlan
from tenantflow.models.status import RunStatus
from tenantflow.models.targets import KubeTarget
from tenantflow.starter.client import TenantflowClient
from tenantflow.workflows import decommission, enrollment
from tenantflow.workflows.enrollment import application_error
from tenantflow.workflows.record_reads import WorkerClusterRecords
from tests.approvers import reviewer

VIEWER = {"rules": [{"verbs": ["get", "list", "watch"], "apiGroups": ["*"], "resources": ["*"]}]}
POLICIES = {
    "hub": {**hub_policies(), "hub-viewer-token": {"user": "forecasting-viewer", **VIEWER}},
    "worker": {"worker-viewer-token": {"user": "worker-viewer", **VIEWER}},
}
POOL_MEMBER, POOL_CONTEXT = "forecasting-eu", "worker-eu"


@dataclass
class Lab:
    hub: Store
    worker: Store
    kubeconfig: Path
    urls: dict[str, str]
    ca_pem: bytes
    stores: dict[str, Store]
    tmp: Path
    """The worker's temporary directory (``tempfile.tempdir`` while the lab runs): where bootstrap's blob lives."""

    def konduktor_calls(self) -> list[str]:
        """``<context> <group> <command> [<flag>]`` of every konduktor call so far."""
        log = self.tmp.parent / "konduktor-calls"
        return [" ".join(line.split()) for line in log.read_text().splitlines()] if log.exists() else []

    def contract(self, hub: str = "hub", worker: str = "worker", **overrides: object) -> WorkerEnrollment:
        return WorkerEnrollment(
            hub=KubeTarget(context=hub),
            worker=KubeTarget(context=worker),
            tenant_namespace="forecasting",
            worker_name="forecasting-us",
            workload_namespaces=["forecasting"],
            **overrides,
        )

    def fault(self, context: str, rules: list[dict[str, object]]) -> None:
        """``PUT /_lab/faults`` on the ``context`` API server (over its HTTPS socket)."""
        self._control(context, "PUT", "faults", {"rules": rules})

    def requests(self, context: str, clear: bool = False) -> list[dict[str, Any]]:
        """The ``context`` API server's request journal (``GET /_lab/requests``); ``clear`` empties it instead."""
        if clear:
            self._control(context, "DELETE", "requests")
            return []
        entries: list[dict[str, Any]] = self._control(context, "GET", "requests")["requests"]
        return entries

    def _control(self, context: str, method: str, route: str, body: object = None) -> Any:
        request = urllib.request.Request(
            f"{self.urls[context]}/_lab/{route}",
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        tls = ssl.create_default_context(cadata=self.ca_pem.decode())
        with urllib.request.urlopen(request, context=tls) as response:
            assert response.status == 200
            return json.loads(response.read() or b"null")


def use_konduktor_stand_in(tmp: Path) -> Path:
    """Put the lab's ``konduktor`` stand-in where the worker settings look (``KONDUKTOR_BIN``), behind a wrapper
    that appends ``<context> <group> <command> [<flag>]`` of every call to ``tmp/konduktor-calls`` (never the
    blob: of bootstrap's arguments only ``--help`` and ``--blob-file`` are logged)."""
    real = write_wrapper(tmp / "bin")
    calls = tmp / "spy-bin" / "konduktor"
    calls.parent.mkdir(exist_ok=True)
    calls.write_text(f'''#!/bin/sh
flag=""
[ "$6" = reset ] && flag="$7"
[ "$6" = bootstrap ] && case "$7" in --help|--blob-file) flag="$7" ;; esac
echo "$4 $5 $6 $flag" >> "{tmp / "konduktor-calls"}"
exec "{real}" "$@"
''')
    calls.chmod(0o755)
    os.environ["KONDUKTOR_BIN"] = str(calls)
    settings.cache_clear()
    return calls


def start_lab(
    tmp: Path, brownfield: bool, agent: bool = True, pool: bool = False, kueue_versions: tuple[str, ...] = KUEUE_BOTH
) -> Iterator[Lab]:
    saved_bin = os.environ.get("KONDUKTOR_BIN")
    use_konduktor_stand_in(tmp)
    stores = {"hub": Store(), "worker": Store()}
    seed_hub(stores["hub"])
    seed_worker(stores["worker"], brownfield, kueue_versions)
    if pool:
        stores[POOL_CONTEXT] = Store()
        seed_pool_member(stores["hub"], stores[POOL_CONTEXT], POOL_MEMBER, POOL_CONTEXT)
    cert = self_signed()
    loop = asyncio.new_event_loop()
    urls: dict[str, str] = {}
    started = threading.Event()
    ctx = LabContext(state_dir=tmp, stores=stores)
    controllers = (hub, worker_agent, kueue) if agent else (hub, kueue)

    def run() -> None:
        asyncio.set_event_loop(loop)
        runners = []
        for name, store in stores.items():
            app = build_app(store, name=name, policies=parse_policies(POLICIES.get(name, {})))
            runner, url = loop.run_until_complete(start_kube_api(app, ssl_context=cert.server_context()))
            runners.append(runner)
            urls[name] = url
        tasks = [loop.create_task(m.run(ctx)) for m in controllers]
        started.set()
        loop.run_forever()
        for task in tasks:
            task.cancel()
        loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
        for runner in runners:
            loop.run_until_complete(runner.cleanup())

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert started.wait(10)
    path = write_kubeconfig(
        tmp / "kubeconfig",
        [
            KubeContext("hub", urls["hub"], ORG_ADMIN_TOKEN, ca_pem=cert.cert_pem),
            KubeContext("hub-viewer", urls["hub"], "hub-viewer-token", ca_pem=cert.cert_pem),
            KubeContext("worker", urls["worker"], "worker-admin-token", ca_pem=cert.cert_pem),
            KubeContext("worker-viewer", urls["worker"], "worker-viewer-token", ca_pem=cert.cert_pem),
        ],
    )
    registry = tmp / "clusters.yaml"
    contexts = ("hub", "hub-viewer", "worker", "worker-viewer")
    registry.write_text(yaml.safe_dump({name: {"kubeconfig": str(path)} for name in contexts}))
    worker_tmp = tmp / "worker-tmp"
    worker_tmp.mkdir()
    saved_tempdir, tempfile.tempdir = tempfile.tempdir, str(worker_tmp)
    try:
        with pytest.MonkeyPatch.context() as env:
            env.setenv("TENANTFLOW_CLUSTERS_FILE", str(registry))  # the worker's cluster registry
            yield Lab(stores["hub"], stores["worker"], path, urls, cert.cert_pem, stores, worker_tmp)
    finally:
        tempfile.tempdir = saved_tempdir
        # the stand-in leaves with its lab: a later test of this process must not find it configured
        if saved_bin is None:
            os.environ.pop("KONDUKTOR_BIN", None)
        else:
            os.environ["KONDUKTOR_BIN"] = saved_bin
        settings.cache_clear()
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)


@pytest.fixture
def greenfield(tmp_path: Path) -> Iterator[Lab]:
    yield from start_lab(tmp_path, brownfield=False)


@pytest.fixture
def brownfield(tmp_path: Path) -> Iterator[Lab]:
    yield from start_lab(tmp_path, brownfield=True)


@pytest.fixture
def brownfield_v1beta1(tmp_path: Path) -> Iterator[Lab]:
    """A brownfield worker whose Kueue (<= 0.14) serves only ``kueue.x-k8s.io/v1beta1``."""
    yield from start_lab(tmp_path, brownfield=True, kueue_versions=KUEUE_V1BETA1)


@pytest.fixture
def no_agent(tmp_path: Path) -> Iterator[Lab]:
    yield from start_lab(tmp_path, brownfield=False, agent=False)


@pytest.fixture
def pool(tmp_path: Path) -> Iterator[Lab]:
    yield from start_lab(tmp_path, brownfield=True, pool=True)


World = dict[str, dict[tuple[str, str, str, str], dict[str, object]]]


def world(lab: Lab) -> World:
    """Every object of every store (uid and resourceVersion included), keyed by group/resource/ns/name."""
    return {
        name: {
            (o["group"], o["resource"], o["namespace"], o["name"]): o["object"]
            for o in store.snapshot(include_volatile=True)["objects"]
        }
        for name, store in lab.stores.items()
    }


@asynccontextmanager
async def enrollment_worker(
    env: WorkflowEnvironment, approve_bootstrap: bool = True
) -> AsyncIterator[tuple[Client, str]]:
    """A worker of the enrollment workflows and activities on a queue of its own; with ``approve_bootstrap`` each
    bootstrap plan the CLI prints is approved as shown (:func:`approve_bootstrap_plans`)."""
    queue = f"enroll-{uuid.uuid4().hex[:8]}"
    activities: list[Any] = [
        *hub_activities.ACTIVITIES,
        *konduktor.ACTIVITIES,
        *workercluster.ACTIVITIES,
        *worker_reset.ACTIVITIES,
        *records.ACTIVITIES,
        *gate_notify.ACTIVITIES,
    ]
    workflows: list[type] = [*enrollment.WORKFLOWS, *decommission.WORKFLOWS, WorkerClusterRecords]
    seen = BootstrapRuns()
    async with Worker(
        env.client,
        task_queue=queue,
        workflows=workflows,
        activities=activities,
        activity_executor=ThreadPoolExecutor(8),
        interceptors=[seen],
    ):
        approver = asyncio.ensure_future(approve_bootstrap_plans(env.client, seen)) if approve_bootstrap else None
        try:
            yield env.client, queue
        finally:
            if approver is not None:
                approver.cancel()
                with suppress(asyncio.CancelledError):
                    await approver


def printed_plan(status: RunStatus) -> dict[str, str] | None:
    """The detail (``printed``, ``sha256``, ``form``) of the plan step holding what ``konduktor worker bootstrap``
    printed, when the run waits at ``approve_plan`` with it; else None."""
    if not status.stage.startswith("gate:approve_plan") or status.plan is None:
        return None
    return next((s.detail for s in status.plan.steps if s.kind == BOOTSTRAP_PRINTED), None)


async def approve_printed(handle: WorkflowHandle[Any, Any], status: RunStatus) -> None:
    """Approve the bootstrap plan ``status`` shows (its hash), as an operator who read it; a gate another helper
    answered meanwhile is no error."""
    with suppress(WorkflowUpdateFailedError):
        await handle.execute_update("approve_plan", ApprovePlan(plan_hash=status.plan_hash or ""))


async def wait_stage(handle: WorkflowHandle[Any, Any], prefix: str, timeout_s: float = 90) -> RunStatus:
    """The run's status once its stage starts with ``prefix``; fails naming the stage it is stuck at after
    ``timeout_s`` (a stuck run, not a slow one: a canary under a loaded machine took over 20 s)."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while True:
        status = await handle.query("status", result_type=RunStatus)
        if status.stage.startswith(prefix):
            return status
        assert asyncio.get_running_loop().time() < deadline, f"stuck at {status.stage}"
        await asyncio.sleep(0.1)


async def approve_printed_plan(
    api: TenantflowClient, handle: WorkflowHandle[Any, Any], timeout_s: float = 120
) -> RunStatus:
    """Wait until the run shows the bootstrap plan the CLI printed at ``approve_plan``, then approve it as the
    reviewer (with proof, for a worker with the shipped approval rules); the status that showed it."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while printed_plan(status := await handle.query("status", result_type=RunStatus)) is None:
        assert asyncio.get_running_loop().time() < deadline, f"no printed bootstrap plan; stuck at {status.stage}"
        await asyncio.sleep(0.2)
    await reviewer(api).approve(handle.id, status.plan_hash or "")
    return status


class BootstrapRuns(Interceptor):
    """A worker interceptor (Temporal's ``temporalio.worker.Interceptor``) that notes the run of every
    ``konduktor.bootstrap`` the worker starts: the runs :func:`approve_bootstrap_plans` watches (the time-skipping
    server has no visibility to list them)."""

    def __init__(self) -> None:
        self.runs: set[tuple[str, str]] = set()

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        runs = self.runs

        class Noting(ActivityInboundInterceptor):
            async def execute_activity(self, input: ExecuteActivityInput) -> Any:
                info = activity.info()
                if info.activity_type == "konduktor.bootstrap" and info.workflow_id and info.workflow_run_id:
                    runs.add((info.workflow_id, info.workflow_run_id))
                return await super().execute_activity(input)

        return Noting(next)


async def approve_bootstrap_plans(client: Client, seen: BootstrapRuns) -> None:
    """Approve, as shown, each bootstrap plan a run that ``seen`` noted prints: what an operator does at that gate,
    for the tests that are about something else."""
    while True:
        for workflow_id, run_id in sorted(seen.runs):
            handle = client.get_workflow_handle(workflow_id, run_id=run_id)
            with suppress(RPCError, WorkflowQueryFailedError):
                status = await handle.query("status", result_type=RunStatus)
                if printed_plan(status) is not None:
                    await approve_printed(handle, status)
        await asyncio.sleep(0.2)


async def start_approved(
    client: Client, queue: str, contract: WorkerEnrollment, **options: object
) -> WorkflowHandle[Any, EnrollmentResult]:
    """Start a WorkerEnrollment (unique id) and approve its plan."""
    handle = await client.start_workflow(
        "WorkerEnrollment",
        EnrollmentInput(contract=contract, **options),
        id=f"enroll/forecasting/{contract.worker_name}-{uuid.uuid4().hex[:6]}",
        task_queue=queue,
        result_type=EnrollmentResult,
    )
    status = await wait_stage(handle, "gate:approve_plan")
    await handle.execute_update("approve_plan", ApprovePlan(plan_hash=status.plan_hash or ""))
    return handle


async def failure(handle: WorkflowHandle[Any, Any]) -> tuple[str, RunStatus]:
    """Wait for the run to fail; return the type of its ApplicationError and the final status."""
    with pytest.raises(WorkflowFailureError) as info:
        await handle.result()
    cause = application_error(info.value)
    return (cause.type or "" if cause else ""), await handle.query("status", result_type=RunStatus)
