"""Fixtures: one emulated cluster (HTTPS, with a restricted user) in a background thread."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from kubernetes import client, config

from tenantflow.lab.kubeapi.auth import parse_policies
from tenantflow.lab.kubeapi.kubeconfig import KubeContext, write_kubeconfig
from tenantflow.lab.kubeapi.podexec import ExecResult
from tenantflow.lab.kubeapi.server import build_app, start_kube_api
from tenantflow.lab.kubeapi.store import Store
from tenantflow.lab.kubeapi.tls import self_signed

RESTRICTED = {
    "restricted-token": {
        "user": "alice",
        "rules": [
            {
                "verbs": ["*"],
                "apiGroups": ["trainy.ai"],
                "resources": ["bootstrapenrollments"],
                "namespaces": ["forecasting"],
            }
        ],
    }
}


async def fake_exec(namespace: str, pod: str, container: str, argv: list[str], stdin: bytes) -> ExecResult:
    if argv[:1] == ["false"]:
        return ExecResult(stderr="boom\n", exit_code=3)
    return ExecResult(stdout=f"{namespace}/{pod}/{container}: {' '.join(argv)} stdin={stdin.decode()}\n")


SEED = [
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}},
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "slurm-control"}},
    {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "slurmctld", "namespace": "slurm-control"},
        "spec": {
            "selector": {"matchLabels": {"app": "slurmctld"}},
            "template": {
                "metadata": {"labels": {"app": "slurmctld"}},
                "spec": {"containers": [{"name": "slurmctld", "image": "slurm"}]},
            },
        },
    },
    {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "slurmctld-0", "namespace": "slurm-control", "labels": {"app": "slurmctld"}},
        "spec": {"containers": [{"name": "slurmctld", "image": "slurm"}], "nodeName": "gpu-01"},
        "status": {"phase": "Running"},
    },
    *(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": f"gpu-{i:02d}",
                "labels": {"node.kubernetes.io/instance-type": "h100-8x" if i <= 3 else "a100-8x"},
            },
        }
        for i in range(1, 6)
    ),
]


@dataclass
class Cluster:
    store: Store
    url: str
    kubeconfig: Path
    loop: asyncio.AbstractEventLoop

    def api(self, context: str = "admin") -> client.ApiClient:
        return config.new_client_from_config(str(self.kubeconfig), context=context)

    def kubectl(
        self, *args: str, context: str = "admin", check: bool = True, stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "KUBECONFIG": str(self.kubeconfig), "KUBECACHEDIR": str(self.kubeconfig.parent / "cache")}
        done = subprocess.run(
            ["kubectl", "--context", context, *args],
            capture_output=True,
            text=True,
            env=env,
            input=stdin,
            timeout=30,
        )
        assert not check or done.returncode == 0, f"kubectl {' '.join(args)}: exit {done.returncode}: {done.stderr}"
        return done

    def raw(
        self, method: str, path: str, body: object = None, content_type: str | None = None, context: str = "admin"
    ) -> tuple[int, dict]:
        """One request through the client's own transport, without its body models."""
        api = self.api(context)
        headers = {"Content-Type": content_type or "application/json", "Accept": "application/json"}
        _, url, headers, body, _ = api.param_serialize(
            method, path, header_params=headers, body=body, auth_settings=["BearerToken"]
        )
        response = api.call_api(method, url, headers, body)
        response.read()
        return response.status, json.loads(response.data or b"{}")

    def namespace(self) -> str:
        name = f"t-{uuid.uuid4().hex[:8]}"
        self.store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        return name


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    store = Store()
    store.seed(SEED)
    cert = self_signed()
    loop = asyncio.new_event_loop()
    ready: dict[str, object] = {}
    started = threading.Event()

    def run() -> None:
        asyncio.set_event_loop(loop)
        app = build_app(store, name="test", exec_handler=fake_exec, policies=parse_policies(RESTRICTED))
        runner, url = loop.run_until_complete(start_kube_api(app, ssl_context=cert.server_context()))
        ready.update(runner=runner, url=url)
        started.set()
        loop.run_forever()
        loop.run_until_complete(runner.cleanup())

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert started.wait(10)
    url = str(ready["url"])
    path = write_kubeconfig(
        tmp_path_factory.mktemp("kube") / "kubeconfig",
        [
            KubeContext("admin", url, "admin-token", ca_pem=cert.cert_pem),
            KubeContext("restricted", url, "restricted-token", ca_pem=cert.cert_pem),
        ],
    )
    yield Cluster(store, url, path, loop)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)
