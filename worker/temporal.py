"""One way to connect to Temporal, for the worker, the CLI and the Python API alike.

When ``TENANTFLOW_CODEC_KEY_FILE`` (or ``TENANTFLOW_CODEC_KEYS``) is set, every
payload is encrypted with :mod:`worker.codec` before it reaches the server.
"""

from __future__ import annotations

from temporalio.client import Client
from temporalio.runtime import Runtime

from tenantflow.worker.codec import KeyRing, data_converter
from tenantflow.worker.config import TemporalSettings


async def connect(settings: TemporalSettings, runtime: Runtime | None = None) -> Client:
    converter = data_converter(KeyRing.from_env(settings.codec_key_file))
    return await Client.connect(settings.address, namespace=settings.namespace,
                                data_converter=converter, runtime=runtime)
