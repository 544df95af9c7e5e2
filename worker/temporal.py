"""One way to connect to Temporal, for the worker, the CLI and the Python API alike."""

from __future__ import annotations

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.runtime import PrometheusConfig, Runtime, TelemetryConfig

from worker.config import TemporalSettings


def runtime_with_metrics(port: int) -> Runtime:
    """A Temporal runtime exporting SDK metrics for Prometheus on ``port``."""
    return Runtime(telemetry=TelemetryConfig(metrics=PrometheusConfig(bind_address=f"0.0.0.0:{port}")))


async def connect(settings: TemporalSettings, runtime: Runtime | None = None) -> Client:
    return await Client.connect(settings.address, namespace=settings.namespace,
                                data_converter=pydantic_data_converter, runtime=runtime)
