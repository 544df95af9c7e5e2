"""``tenantflow worker`` as a process: the address it logs is the one it connected to (a profile's too), and a
failed connection, or encryption required without keys, ends it with exit code 1 and the message naming the
setting, no traceback."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import sys
import uuid
from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from tests.worker.harness import TEMPORAL_VARIABLES

CLI = str(Path(sys.executable).parent / "tenantflow")


def worker_env(tmp_path: Path, **variables: str) -> dict[str, str]:
    """The environment without any temporal CLI variable of the developer's, plus ``variables``."""
    env = {k: v for k, v in os.environ.items() if k not in TEMPORAL_VARIABLES and not k.startswith("TENANTFLOW_")}
    return {**env, "TEMPORAL_CONFIG_FILE": str(tmp_path / "absent.toml"), "TENANTFLOW_LOG_FORMAT": "json", **variables}


def refused_address() -> str:
    """A loopback address where nothing listens."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{sock.getsockname()[1]}"


async def test_a_failed_connection_exits_1_with_the_message_alone(tmp_path: Path) -> None:
    env = worker_env(tmp_path, TEMPORAL_ADDRESS=refused_address())
    proc = await asyncio.create_subprocess_exec(
        CLI, "worker", env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    _, err = await proc.communicate()
    text = err.decode()
    assert proc.returncode == 1, text
    assert "TEMPORAL_ADDRESS: no Temporal server answers there" in text
    assert "Traceback" not in text


async def test_a_worker_requiring_encryption_without_keys_exits_1_naming_the_setting(tmp_path: Path) -> None:
    env = worker_env(tmp_path, TEMPORAL_ADDRESS=refused_address(), TENANTFLOW_REQUIRE_ENCRYPTION="true")
    env.pop("TENANTFLOW_CODEC_KEYS", None)
    proc = await asyncio.create_subprocess_exec(
        CLI, "worker", env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    _, err = await proc.communicate()
    text = err.decode()
    assert proc.returncode == 1, text
    assert "TENANTFLOW_REQUIRE_ENCRYPTION=true but no codec key is configured" in text
    assert "TENANTFLOW_CODEC_KEY_FILE" in text and "Traceback" not in text


async def test_an_unreadable_identity_map_or_signers_file_exits_1_naming_the_setting(tmp_path: Path) -> None:
    bad_signers = tmp_path / "allowed_signers"
    bad_signers.write_text("alice ssh-rsa AAAAB3NzaC1yc2E= alice\n")
    for variables, message in (
        ({"TENANTFLOW_PRINCIPALS": str(tmp_path / "absent.toml")}, "TENANTFLOW_PRINCIPALS="),
        ({"TENANTFLOW_ALLOWED_SIGNERS": str(bad_signers)}, "line 1: only ssh-ed25519 keys sign approvals"),
    ):
        env = worker_env(tmp_path, TEMPORAL_ADDRESS=refused_address(), **variables)
        proc = await asyncio.create_subprocess_exec(
            CLI, "worker", env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )
        _, err = await proc.communicate()
        text = err.decode()
        assert proc.returncode == 1 and message in text and "Traceback" not in text, text


async def test_the_started_line_names_the_address_of_the_profile(dev_env: WorkflowEnvironment, tmp_path: Path) -> None:
    target = dev_env.client.service_client.config.target_host
    profile = tmp_path / "temporal.toml"
    profile.write_text(f'[profile.lab]\naddress = "{target}"\n')
    env = worker_env(
        tmp_path,
        TEMPORAL_CONFIG_FILE=str(profile),
        TEMPORAL_PROFILE="lab",
        TENANTFLOW_TASK_QUEUE=f"main-{uuid.uuid4().hex[:8]}",
    )
    proc = await asyncio.create_subprocess_exec(
        CLI, "worker", env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    assert proc.stderr is not None
    try:
        started, said = None, []
        while started is None:
            line = await asyncio.wait_for(proc.stderr.readline(), 60)
            assert line, "the worker ended before it started"
            event = json.loads(line)
            said.append(event.get("event", ""))
            if event.get("event") == "worker started":
                started = event
        assert (started["address"], started["namespace"]) == (target, "default")
        assert any(text.startswith("payloads are not encrypted: no TENANTFLOW_CODEC_KEY_FILE") for text in said), (
            "a worker without codec keys says so"
        )
        assert started["deployment"] is None and started["build_id"] is None, "unversioned unless configured"
    finally:
        proc.send_signal(signal.SIGTERM)
        await proc.communicate()
    assert proc.returncode == 0
