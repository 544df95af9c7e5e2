"""The SDK core's warnings go through Python logging (logger ``temporalio.core``), never to stdout, where they
would break a command's ``--output json``: a start whose input passes Temporal's 512 KB payload warning limit."""

from __future__ import annotations

import asyncio
import logging
import uuid

import pytest
from temporalio.testing import WorkflowEnvironment

from tenantflow.worker.config import TemporalSettings
from tenantflow.worker.temporal import CORE_LOGGER, connect


async def test_a_payload_size_warning_is_a_log_record_not_stdout(
    dev_env: WorkflowEnvironment, capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    address = dev_env.client.service_client.config.target_host
    client = await connect(TemporalSettings(TEMPORAL_ADDRESS=address, TENANTFLOW_TASK_QUEUE="core-logs"))
    caplog.set_level(logging.WARNING, logger=CORE_LOGGER)
    handle = await client.start_workflow(
        "NoWorkerServesThis", "x" * 600_000, id=f"core-logs-{uuid.uuid4().hex[:8]}", task_queue="core-logs"
    )
    await handle.terminate()
    for _ in range(50):
        if any("TMPRL1103" in r.getMessage() for r in caplog.records if r.name.startswith(CORE_LOGGER)):
            break
        await asyncio.sleep(0.1)
    assert any("TMPRL1103" in r.getMessage() for r in caplog.records if r.name.startswith(CORE_LOGGER)), [
        r.getMessage() for r in caplog.records
    ]
    assert "TMPRL1103" not in capfd.readouterr().out
