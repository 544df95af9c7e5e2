"""OpenTelemetry tracing of clients, workflows and activities (``temporalio.contrib.opentelemetry``); off by default.

The standard ``OTEL_*`` variables switch it on: ``OTEL_TRACES_EXPORTER`` naming exporters other than ``none``
(comma-separated), or ``OTEL_EXPORTER_OTLP_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` set (the exporter is
then ``otlp``). ``OTEL_SDK_DISABLED=true`` or ``OTEL_TRACES_EXPORTER=none`` keeps it off. ``otlp`` is OTLP over
HTTP/protobuf (or gRPC when ``OTEL_EXPORTER_OTLP_PROTOCOL=grpc`` and that exporter is installed); any other name is
the exporter registered under it in the ``opentelemetry_traces_exporter`` entry points (``console``, ...). Exporters
read their own variables (``OTEL_EXPORTER_OTLP_HEADERS``, ``OTEL_BSP_*`` ...); the resource comes from
``OTEL_SERVICE_NAME`` (default ``tenantflow``) and ``OTEL_RESOURCE_ATTRIBUTES``.

The OpenTelemetry packages come with the ``[otel]`` extra; they are imported only when tracing is on.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from importlib.metadata import entry_points
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter
    from temporalio.contrib.opentelemetry import TracingInterceptor

SERVICE_NAME = "tenantflow"
EXPORTER_GROUP = "opentelemetry_traces_exporter"
ENDPOINTS = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")


def exporter_names(environ: Mapping[str, str]) -> list[str]:
    """The trace exporters the environment asks for; empty when tracing is off."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return []
    listed = [name.strip() for name in environ.get("OTEL_TRACES_EXPORTER", "").split(",") if name.strip()]
    if not listed:
        return ["otlp"] if any(environ.get(var) for var in ENDPOINTS) else []
    return [] if listed == ["none"] else [name for name in listed if name != "none"]


def _entry_point_name(name: str, environ: Mapping[str, str]) -> str:
    if name != "otlp":
        return name
    protocol = environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
    return "otlp_proto_grpc" if protocol == "grpc" else "otlp_proto_http"


def _exporter(name: str, environ: Mapping[str, str]) -> SpanExporter:
    registered = entry_points(group=EXPORTER_GROUP, name=_entry_point_name(name, environ))
    if not registered:
        raise RuntimeError(
            f"OTEL_TRACES_EXPORTER: no trace exporter {name!r} is installed (pip install 'tenantflow[otel]' for otlp)"
        )
    exporter: SpanExporter = next(iter(registered)).load()()
    return exporter


def _traced(exporters: Sequence[SpanExporter], *, batch: bool) -> tuple[TracerProvider, TracingInterceptor]:
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
        from temporalio.contrib.opentelemetry import TracingInterceptor
    except ImportError as exc:
        raise RuntimeError("OTEL_*: tracing needs the OpenTelemetry SDK (pip install 'tenantflow[otel]')") from exc
    resource = Resource.create()
    if str(resource.attributes.get("service.name", "")).startswith("unknown_service"):
        resource = resource.merge(Resource({"service.name": SERVICE_NAME}))
    provider = TracerProvider(resource=resource)
    for exporter in exporters:
        provider.add_span_processor(BatchSpanProcessor(exporter) if batch else SimpleSpanProcessor(exporter))
    return provider, TracingInterceptor(provider.get_tracer("tenantflow"))


_FROM_ENVIRONMENT: dict[tuple[tuple[str, str], ...], tuple[TracerProvider, TracingInterceptor]] = {}


def shutdown_tracing() -> None:
    """Export the spans still buffered and stop every tracer provider made from the environment (done at exit too)."""
    while _FROM_ENVIRONMENT:
        provider, _ = _FROM_ENVIRONMENT.popitem()[1]
        provider.shutdown()


def tracing_interceptors(
    environ: Mapping[str, str] | None = None, *, exporter: SpanExporter | None = None
) -> list[TracingInterceptor]:
    """The tracing interceptor for ``Client.connect`` when the environment asks for traces, else nothing.

    One tracer provider per distinct ``OTEL_*`` environment per process, exporting in batches (flushed at exit).
    ``exporter`` replaces the exporters the environment names (spans exported as they end), not the decision.
    """
    env = os.environ if environ is None else environ
    if not exporter_names(env):
        return []
    if exporter is not None:
        return [_traced([exporter], batch=False)[1]]
    otel = tuple(sorted((k, v) for k, v in env.items() if k.startswith("OTEL_")))
    if otel not in _FROM_ENVIRONMENT:
        _FROM_ENVIRONMENT[otel] = _traced([_exporter(name, env) for name in exporter_names(env)], batch=True)
    return [_FROM_ENVIRONMENT[otel][1]]
