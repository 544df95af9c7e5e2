"""Fixtures: Hub and worker kube emulators (HTTPS) with the enrollment seeds and lab controllers on one thread."""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from activities import hub as hub_activities
from activities import workercluster
from lab.context import LabContext
from lab.controllers import hub, kueue, worker_agent
from lab.enrollment_seed import ORG_ADMIN_TOKEN, hub_policies, seed_hub, seed_worker
from lab.kubeapi import KubeContext, Store, build_app, parse_policies, start_kube_api, write_kubeconfig
from lab.kubeapi.tls import self_signed
from models.enrollment import WorkerEnrollment
from models.targets import KubeTarget
from workflows import decommission, enrollment


@dataclass
class Lab:
    hub: Store
    worker: Store
    kubeconfig: Path

    def contract(self, **overrides: object) -> WorkerEnrollment:
        return WorkerEnrollment(hub=KubeTarget(kubeconfig=str(self.kubeconfig), context="hub"),
                                worker=KubeTarget(kubeconfig=str(self.kubeconfig), context="worker"),
                                tenant_namespace="forecasting", worker_name="forecasting-us",
                                workload_namespaces=["forecasting"], **overrides)


def start_lab(tmp: Path, brownfield: bool) -> Iterator[Lab]:
    stores = {"hub": Store(), "worker": Store()}
    seed_hub(stores["hub"])
    seed_worker(stores["worker"], brownfield)
    cert = self_signed()
    loop = asyncio.new_event_loop()
    urls: dict[str, str] = {}
    started = threading.Event()
    ctx = LabContext(state_dir=tmp, stores=stores)

    def run() -> None:
        asyncio.set_event_loop(loop)
        runners = []
        for name, store in stores.items():
            policies = parse_policies(hub_policies()) if name == "hub" else {}
            app = build_app(store, name=name, policies=policies)
            runner, url = loop.run_until_complete(start_kube_api(app, ssl_context=cert.server_context()))
            runners.append(runner)
            urls[name] = url
        tasks = [loop.create_task(m.run(ctx)) for m in (hub, worker_agent, kueue)]
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
    path = write_kubeconfig(tmp / "kubeconfig", [
        KubeContext("hub", urls["hub"], ORG_ADMIN_TOKEN, ca_pem=cert.cert_pem),
        KubeContext("worker", urls["worker"], "worker-admin-token", ca_pem=cert.cert_pem)])
    yield Lab(stores["hub"], stores["worker"], path)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)


@pytest.fixture
def greenfield(tmp_path: Path) -> Iterator[Lab]:
    yield from start_lab(tmp_path, brownfield=False)


@pytest.fixture
def brownfield(tmp_path: Path) -> Iterator[Lab]:
    yield from start_lab(tmp_path, brownfield=True)


@asynccontextmanager
async def enrollment_worker(env: WorkflowEnvironment) -> AsyncIterator[tuple[Client, str]]:
    queue = f"enroll-{uuid.uuid4().hex[:8]}"
    async with Worker(env.client, task_queue=queue, workflows=enrollment.WORKFLOWS + decommission.WORKFLOWS,
                      activities=hub_activities.ACTIVITIES + workercluster.ACTIVITIES,
                      activity_executor=ThreadPoolExecutor(8)):
        yield env.client, queue
