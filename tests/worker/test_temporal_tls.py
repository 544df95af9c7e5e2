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
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from tenantflow.worker.config import WorkerSettings
from tenantflow.worker.run import run_worker
from tenantflow.worker.temporal import TemporalConnectError
from tests.worker.grpc_proxy import GrpcProxy, grpc_proxy
from tests.worker.harness import TEMPORAL_VARIABLES, configure, onboard_with_worker
from tests.worker.pki import CertificateAuthority, Issued

CLI = str(Path(sys.executable).parent / "tenantflow")


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
        return {
            "TEMPORAL_ADDRESS": self.proxy.address,
            "TEMPORAL_API_KEY": self.api_key,
            "TEMPORAL_TLS_SERVER_CA_CERT_PATH": str(self.ca),
            "TEMPORAL_TLS_CLIENT_CERT_PATH": str(self.client.cert),
            "TEMPORAL_TLS_CLIENT_KEY_PATH": str(self.client.key),
        }


@pytest.fixture(scope="module")
def stand(dev_env: WorkflowEnvironment, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stand]:
    root = tmp_path_factory.mktemp("temporal-tls")
    ca = CertificateAuthority(root / "pki", "tenantflow-test-ca")
    foreign = CertificateAuthority(root / "foreign", "foreign-ca")
    server = ca.issue("proxy", server=True)
    api_key = secrets.token_urlsafe(24)
    with grpc_proxy(
        root / "nginx",
        upstream=dev_env.client.service_client.config.target_host,
        server_cert=server.cert,
        server_key=server.key,
        client_ca=ca.files.cert,
        api_key=api_key,
    ) as proxy:
        yield Stand(
            proxy,
            api_key,
            ca.files.cert,
            ca.issue("worker", server=False),
            foreign.files.cert,
            foreign.issue("intruder", server=False),
            root / "nginx" / "access.log",
        )


async def tenantflow(variables: dict[str, str], *args: str) -> tuple[int | None, str, str]:
    """The CLI as a subprocess with exactly ``variables`` among the temporal CLI's."""
    env = {name: value for name, value in os.environ.items() if name not in TEMPORAL_VARIABLES} | variables
    proc = await asyncio.create_subprocess_exec(
        CLI, *args, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await proc.communicate()
    return proc.returncode, out.decode(), err.decode()


async def test_worker_and_cli_through_the_proxy_run_an_onboarding(
    stand: Stand, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    configure(monkeypatch, tmp_path, stand.variables())
    run = await onboard_with_worker("tenant-tls")
    assert run.address == stand.proxy.address
    assert run.result.status == "completed"
    calls = stand.access_log.read_text()
    assert "WorkflowService/PollWorkflowTaskQueue" in calls, "the worker polled through the proxy"
    assert "WorkflowService/RespondActivityTaskCompleted" in calls, "the activities completed through the proxy"

    profile = tmp_path / "temporal.toml"
    profile.write_text(
        f'[profile.tls-proxy]\naddress = "{stand.proxy.address}"\napi_key = "{stand.api_key}"\n'
        f'[profile.tls-proxy.tls]\nserver_ca_cert_path = "{stand.ca}"\n'
        f'client_cert_path = "{stand.client.cert}"\nclient_key_path = "{stand.client.key}"\n'
    )
    code, out, err = await tenantflow(
        {
            "TEMPORAL_CONFIG_FILE": str(profile),
            "TEMPORAL_PROFILE": "tls-proxy",
            "TENANTFLOW_TASK_QUEUE": run.task_queue,
        },
        "result",
        run.workflow_id,
        "--output",
        "json",
    )
    assert code == 0, err
    assert json.loads(out)["status"] == "completed"


FAILURES = {
    "no client certificate": (
        {"TEMPORAL_TLS_CLIENT_CERT_PATH": None, "TEMPORAL_TLS_CLIENT_KEY_PATH": None},
        "TEMPORAL_TLS_CLIENT_CERT_PATH: the server requires a client certificate",
    ),
    "a wrong server CA": (
        {"TEMPORAL_TLS_SERVER_CA_CERT_PATH": "foreign_ca"},
        "TEMPORAL_TLS_SERVER_CA_CERT_PATH: the server's certificate is not signed by a CA",
    ),
    "a client certificate of another CA": (
        {"TEMPORAL_TLS_CLIENT_CERT_PATH": "foreign_cert", "TEMPORAL_TLS_CLIENT_KEY_PATH": "foreign_key"},
        "TEMPORAL_TLS_CLIENT_CERT_PATH: the server refused the client certificate",
    ),
    "a wrong API key": ({"TEMPORAL_API_KEY": "wrong-key"}, "TEMPORAL_API_KEY: the server refused the API key"),
    "no API key": (
        {"TEMPORAL_API_KEY": None, "TEMPORAL_TLS": "true"},
        "TEMPORAL_API_KEY: the server requires an API key",
    ),
    "no TLS": (
        {
            "TEMPORAL_API_KEY": None,
            "TEMPORAL_TLS_SERVER_CA_CERT_PATH": None,
            "TEMPORAL_TLS_CLIENT_CERT_PATH": None,
            "TEMPORAL_TLS_CLIENT_KEY_PATH": None,
        },
        "TEMPORAL_TLS: the server did not answer plaintext gRPC",
    ),
}


@pytest.mark.parametrize("case", list(FAILURES))
async def test_a_misconfigured_worker_fails_at_start_naming_the_setting(
    case: str, stand: Stand, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    changes, expected = FAILURES[case]
    named = {
        "foreign_ca": str(stand.foreign_ca),
        "foreign_cert": str(stand.foreign_client.cert),
        "foreign_key": str(stand.foreign_client.key),
    }
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
    code, _, err = await tenantflow(
        stand.variables() | {"TEMPORAL_API_KEY": "wrong-key", "TEMPORAL_CONFIG_FILE": str(tmp_path / "absent.toml")},
        "status",
        "tenant/tenant-tls",
    )
    assert code == 1
    assert "TEMPORAL_API_KEY: the server refused the API key" in " ".join(err.split())
