"""One way to connect to Temporal, for the worker, the CLI, the HTTP API and the bench.

Where and how to connect comes from :mod:`temporalio.envconfig`, exactly as for the ``temporal`` CLI: the profile
named by ``TEMPORAL_PROFILE`` (default ``default``) of the TOML file ``TEMPORAL_CONFIG_FILE`` (default
``~/.config/temporalio/temporal.toml``; none is fine), overridden by the variables ``TEMPORAL_ADDRESS``,
``TEMPORAL_NAMESPACE``, ``TEMPORAL_API_KEY``, ``TEMPORAL_TLS``, ``TEMPORAL_TLS_CLIENT_CERT_PATH`` (or ``_DATA``),
``TEMPORAL_TLS_CLIENT_KEY_PATH`` (or ``_DATA``), ``TEMPORAL_TLS_SERVER_CA_CERT_PATH`` (or ``_DATA``),
``TEMPORAL_TLS_SERVER_NAME`` and ``TEMPORAL_GRPC_META_<NAME>``. An API key turns TLS on. An address or namespace
set on :class:`TemporalSettings` itself (``TemporalSettings(TEMPORAL_ADDRESS=...)``) wins over the profile;
without any, the address is ``localhost:7233`` and the namespace ``default``.

When ``TENANTFLOW_CODEC_KEY_FILE`` (or ``TENANTFLOW_CODEC_KEYS``) is set, every payload is encrypted with
:mod:`worker.codec` before it reaches the server; with ``TENANTFLOW_REQUIRE_ENCRYPTION=true`` and neither set,
:func:`connect` raises :class:`~tenantflow.worker.codec.EncryptionRequired` naming the setting. When the standard
``OTEL_*`` variables ask for traces, the client (and every worker built on it) carries the OpenTelemetry tracing
interceptor (:mod:`worker.tracing`).

The client's identity, which Temporal records on every start, signal and update and which tenantflow records as
the approver of a gate, is ``TEMPORAL_IDENTITY`` when set, else the subject of the mTLS client certificate, else
``user@host`` of the OS user (:func:`client_identity`).

A failed connection raises :class:`TemporalConnectError`, whose message names the setting to fix (and never holds
the API key or a certificate's contents).
"""

from __future__ import annotations

import functools
import getpass
import logging
import os
import socket
from pathlib import Path

from cryptography import x509
from temporalio.client import Client
from temporalio.envconfig import ClientConfigProfile, ClientConfigTLS, ClientConnectConfig
from temporalio.runtime import LogForwardingConfig, LoggingConfig, Runtime, TelemetryConfig
from temporalio.service import RPCError, RPCStatusCode, TLSConfig

from tenantflow.worker.codec import KeyRing, data_converter
from tenantflow.worker.config import TemporalSettings
from tenantflow.worker.connect_errors import diagnose
from tenantflow.worker.tracing import tracing_interceptors


class TemporalConnectError(RPCError):
    """Connecting to Temporal failed; the message names the setting to fix (the CLI prints it as is)."""

    def __init__(self, message: str, status: RPCStatusCode = RPCStatusCode.UNAVAILABLE) -> None:
        super().__init__(message, status, b"")


def _file_setting(tls: ClientConfigTLS | None, filename: object) -> str:
    """The variable that names the certificate or key file ``filename``."""
    if tls is not None:
        for setting, source in (
            ("TEMPORAL_TLS_CLIENT_CERT_PATH", tls.client_cert),
            ("TEMPORAL_TLS_CLIENT_KEY_PATH", tls.client_private_key),
            ("TEMPORAL_TLS_SERVER_CA_CERT_PATH", tls.server_root_ca_cert),
        ):
            if isinstance(source, Path) and str(source) == str(filename):
                return setting
    return "TEMPORAL_TLS_*_PATH"


def connect_config(settings: TemporalSettings) -> ClientConnectConfig:
    """``Client.connect`` arguments from the environment and the temporal CLI's config file, for ``settings``."""
    try:
        profile = ClientConfigProfile.load()
    except RuntimeError as exc:
        raise TemporalConnectError(f"TEMPORAL_CONFIG_FILE / TEMPORAL_PROFILE: {exc}") from None
    try:
        config = profile.to_client_connect_config()
    except OSError as exc:
        raise TemporalConnectError(
            f"{_file_setting(profile.tls, exc.filename)}: cannot read {exc.filename}: {exc.strerror}"
        ) from None
    explicit = settings.model_fields_set
    if "address" in explicit or "target_host" not in config:
        config["target_host"] = settings.address
    if "namespace" in explicit or "namespace" not in config:
        config["namespace"] = settings.namespace
    return config


def client_identity(tls: bool | TLSConfig) -> str:
    """``TEMPORAL_IDENTITY``, else the mTLS client certificate's subject, else ``user@host``."""
    explicit = os.environ.get("TEMPORAL_IDENTITY", "").strip()
    if explicit:
        return explicit
    if isinstance(tls, TLSConfig) and tls.client_cert:
        return x509.load_pem_x509_certificate(tls.client_cert).subject.rfc4514_string()
    return f"{getpass.getuser()}@{socket.gethostname()}"


CORE_LOGGER = "temporalio.core"


def core_logging() -> LoggingConfig:
    """The SDK core's warnings and errors (a payload over the size warning limit, ...) through Python logging, as
    records of the ``temporalio.core`` logger: the core's own logger prints to stdout, which would break
    ``--output json`` (https://python.temporal.io/temporalio.runtime.LogForwardingConfig.html)."""
    return LoggingConfig(
        filter=LoggingConfig.default.filter, forwarding=LogForwardingConfig(logger=logging.getLogger(CORE_LOGGER))
    )


@functools.cache
def default_runtime() -> Runtime:
    """The runtime of every client made here without one of its own (the worker's metrics bring theirs)."""
    return Runtime(telemetry=TelemetryConfig(logging=core_logging()))


async def connect(settings: TemporalSettings, runtime: Runtime | None = None) -> Client:
    """A client for ``settings``; raises :class:`TemporalConnectError` naming the setting when the server refuses."""
    config = connect_config(settings)
    address, namespace, tls = config["target_host"], config["namespace"], config.get("tls", False)
    client_cert = isinstance(tls, TLSConfig) and tls.client_cert is not None
    api_key = "api_key" in config
    converter = data_converter(
        KeyRing.from_env(settings.codec_key_file), settings.codec_allow_plaintext, settings.require_encryption
    )
    interceptors = tracing_interceptors()
    try:
        return await Client.connect(
            **config,
            data_converter=converter,
            interceptors=interceptors,
            runtime=runtime or default_runtime(),
            identity=client_identity(tls),
        )
    except RuntimeError as exc:
        setting, status = diagnose(str(exc), tls=tls is not False, api_key=api_key, client_cert=client_cert)
        raise TemporalConnectError(
            f"{setting} (connecting to {address}, namespace {namespace}); the client said: {exc}", status
        ) from None
