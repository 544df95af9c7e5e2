"""Temporal over mTLS and an API key: the worker and the CLI through a TLS-terminating gRPC proxy on loopback.

Debian's nginx terminates TLS in front of the dev server, requires a client certificate of a test CA
(``ssl_verify_client on``) and answers 401 unless ``authorization`` is ``Bearer <key>``. The worker and the CLI get
the connection from the ``temporal`` CLI's variables or a profile of its config file; each misconfiguration fails
at start with a message naming the setting to fix.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import shutil
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from tenantflow.starter.client import TenantflowClient
from tenantflow.worker.config import WorkerSettings
from tenantflow.worker.run import run_worker
from tenantflow.worker.temporal import TemporalConnectError
from tenantflow.workflows.offboarding import TenantOffboarding
from tenantflow.workflows.onboarding import TenantOnboarding
from tests.deploy.grpc_proxy import GrpcProxy, grpc_proxy
from tests.deploy.pki import CertificateAuthority, Issued
from tests.workflow.contract import example_tenant
from tests.workflow.fakes import FakeWorld
from tests.workflow.harness import wait_for_stage

pytestmark = pytest.mark.skipif(shutil.which("nginx") is None and not Path("/usr/sbin/nginx").exists(),
                                reason="nginx not installed (scripts/install-system-packages.sh installs it)")

CLI = str(Path(sys.executable).parent / "tenantflow")
TEMPORAL_VARIABLES = ("TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "TEMPORAL_API_KEY", "TEMPORAL_TLS",
                      "TEMPORAL_TLS_CLIENT_CERT_PATH", "TEMPORAL_TLS_CLIENT_KEY_PATH",
                      "TEMPORAL_TLS_SERVER_CA_CERT_PATH", "TEMPORAL_TLS_SERVER_NAME", "TEMPORAL_PROFILE",
                      "TEMPORAL_CONFIG_FILE")


@dataclass(frozen=True)
class Stand:
    proxy: GrpcProxy
    api_key: str
    ca: Path
    client: Issued
    foreign_ca: Path
    foreign_client: Issued
    access_log: Path

    def variables(self) -> dict[str, str]:
        """The temporal CLI's variables that reach the dev server through the proxy."""
        return {"TEMPORAL_ADDRESS": self.proxy.address, "TEMPORAL_API_KEY": self.api_key,
                "TEMPORAL_TLS_SERVER_CA_CERT_PATH": str(self.ca),
                "TEMPORAL_TLS_CLIENT_CERT_PATH": str(self.client.cert),
                "TEMPORAL_TLS_CLIENT_KEY_PATH": str(self.client.key)}


@pytest.fixture(scope="module")
def stand(dev_env: WorkflowEnvironment, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stand]:
    root = tmp_path_factory.mktemp("temporal-tls")
    ca = CertificateAuthority(root / "pki", "tenantflow-test-ca")
    foreign = CertificateAuthority(root / "foreign", "foreign-ca")
    server = ca.issue("proxy", server=True)
    api_key = secrets.token_urlsafe(24)
    with grpc_proxy(root / "nginx", upstream=dev_env.client.service_client.config.target_host,
                    server_cert=server.cert, server_key=server.key, client_ca=ca.files.cert,
                    api_key=api_key) as proxy:
        yield Stand(proxy, api_key, ca.files.cert, ca.issue("worker", server=False), foreign.files.cert,
                    foreign.issue("intruder", server=False), root / "nginx" / "access.log")


def configure(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, variables: dict[str, str]) -> None:
    """Exactly ``variables`` among the temporal CLI's; no config file (a developer's own stays out)."""
    for name in TEMPORAL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TEMPORAL_CONFIG_FILE", str(tmp_path / "absent.toml"))
    for name, value in variables.items():
        monkeypatch.setenv(name, value)


async def test_worker_and_cli_through_the_proxy_run_an_onboarding(
        stand: Stand, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    configure(monkeypatch, tmp_path, stand.variables())
    queue = f"tls-{uuid.uuid4().hex[:8]}"
    settings = WorkerSettings(TENANTFLOW_TASK_QUEUE=queue)
    stop = asyncio.Event()
    worker = asyncio.create_task(run_worker(settings, stop, workflows=[TenantOnboarding, TenantOffboarding],
                                            activities=FakeWorld().activities()))
    try:
        api = await TenantflowClient.connect(settings)
        assert api.client.service_client.config.target_host == stand.proxy.address
        handle = await api.start_onboarding(example_tenant("tenant-tls"))
        status = await wait_for_stage(api, handle, "gate:approve_plan")
        assert status.plan_hash
        await api.approve(handle.id, status.plan_hash)
        result = await handle.result()
    finally:
        stop.set()
        await worker
    assert result.status == "completed"
    calls = stand.access_log.read_text()
    assert "WorkflowService/PollWorkflowTaskQueue" in calls, "the worker polled through the proxy"
    assert "WorkflowService/RespondActivityTaskCompleted" in calls, "the activities completed through the proxy"

    profile = tmp_path / "temporal.toml"
    profile.write_text(f'[profile.tls-proxy]\naddress = "{stand.proxy.address}"\napi_key = "{stand.api_key}"\n'
                       f'[profile.tls-proxy.tls]\nserver_ca_cert_path = "{stand.ca}"\n'
                       f'client_cert_path = "{stand.client.cert}"\nclient_key_path = "{stand.client.key}"\n')
    env = {name: value for name, value in os.environ.items() if name not in TEMPORAL_VARIABLES}
    env |= {"TEMPORAL_CONFIG_FILE": str(profile), "TEMPORAL_PROFILE": "tls-proxy", "TENANTFLOW_TASK_QUEUE": queue}
    proc = await asyncio.create_subprocess_exec(CLI, "result", handle.id, "--output", "json", env=env,
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await proc.communicate()
    assert proc.returncode == 0, err.decode()
    assert json.loads(out)["status"] == "completed"


FAILURES = {
    "no client certificate": ({"TEMPORAL_TLS_CLIENT_CERT_PATH": None, "TEMPORAL_TLS_CLIENT_KEY_PATH": None},
                              "TEMPORAL_TLS_CLIENT_CERT_PATH: the server requires a client certificate"),
    "a wrong server CA": ({"TEMPORAL_TLS_SERVER_CA_CERT_PATH": "foreign_ca"},
                          "TEMPORAL_TLS_SERVER_CA_CERT_PATH: the server's certificate is not signed by a CA"),
    "a client certificate of another CA": ({"TEMPORAL_TLS_CLIENT_CERT_PATH": "foreign_cert",
                                            "TEMPORAL_TLS_CLIENT_KEY_PATH": "foreign_key"},
                                           "TEMPORAL_TLS_CLIENT_CERT_PATH: the server refused the client certificate"),
    "a wrong API key": ({"TEMPORAL_API_KEY": "wrong-key"}, "TEMPORAL_API_KEY: the server refused the API key"),
    "no API key": ({"TEMPORAL_API_KEY": None, "TEMPORAL_TLS": "true"},
                   "TEMPORAL_API_KEY: the server requires an API key"),
    "no TLS": ({"TEMPORAL_API_KEY": None, "TEMPORAL_TLS_SERVER_CA_CERT_PATH": None,
                "TEMPORAL_TLS_CLIENT_CERT_PATH": None, "TEMPORAL_TLS_CLIENT_KEY_PATH": None},
               "TEMPORAL_TLS: the server expects TLS"),
}


@pytest.mark.parametrize("case", list(FAILURES))
async def test_a_misconfigured_worker_fails_at_start_naming_the_setting(
        case: str, stand: Stand, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    changes, expected = FAILURES[case]
    named = {"foreign_ca": str(stand.foreign_ca), "foreign_cert": str(stand.foreign_client.cert),
             "foreign_key": str(stand.foreign_client.key)}
    variables = stand.variables()
    for name, value in changes.items():
        if value is None:
            variables.pop(name)
        else:
            variables[name] = named.get(value, value)
    configure(monkeypatch, tmp_path, variables)
    with pytest.raises(TemporalConnectError) as failed:
        await asyncio.wait_for(run_worker(WorkerSettings(), asyncio.Event()), 60)
    assert failed.value.message.startswith(expected), failed.value.message
    assert stand.api_key not in failed.value.message


async def test_the_cli_names_the_setting_when_the_api_key_is_wrong(stand: Stand, tmp_path: Path) -> None:
    env = {name: value for name, value in os.environ.items() if name not in TEMPORAL_VARIABLES}
    env |= stand.variables() | {"TEMPORAL_API_KEY": "wrong-key", "TEMPORAL_CONFIG_FILE": str(tmp_path / "absent")}
    proc = await asyncio.create_subprocess_exec(CLI, "status", "onboard/tenant-tls", env=env,
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    _, err = await proc.communicate()
    assert proc.returncode == 1
    assert "TEMPORAL_API_KEY: the server refused the API key" in " ".join(err.decode().split())
