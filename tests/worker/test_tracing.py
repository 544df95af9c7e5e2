"""OpenTelemetry tracing: the standard OTEL_* variables switch it on; workflows and activities then produce spans."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from aiohttp import web
from aiohttp.test_utils import TestServer
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from tenantflow.worker.tracing import exporter_names, shutdown_tracing, tracing_interceptors
from tests.worker.harness import onboard_with_worker
from tests.workflows.contract import example_tenant
from tests.workflows.fakes import FakeWorld
from tests.workflows.harness import fake_worker, wait_for_stage


@pytest.mark.parametrize(
    ("environ", "names"),
    [
        ({}, []),
        ({"OTEL_SERVICE_NAME": "tenantflow"}, []),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, ["otlp"]),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, ["otlp"]),
        ({"OTEL_TRACES_EXPORTER": "console,otlp"}, ["console", "otlp"]),
        ({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, []),
        ({"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"}, []),
    ],
)
def test_the_otel_variables_decide(environ: dict[str, str], names: list[str]) -> None:
    assert exporter_names(environ) == names


def test_an_exporter_that_is_not_installed_is_named() -> None:
    with pytest.raises(RuntimeError, match="OTEL_TRACES_EXPORTER: no trace exporter 'zipkin'"):
        tracing_interceptors({"OTEL_TRACES_EXPORTER": "zipkin"})


@pytest.mark.parametrize("environ", [{"OTEL_TRACES_EXPORTER": "otlp"}, {}])
async def test_activities_produce_spans_only_when_tracing_is_on(
    dev_env: WorkflowEnvironment, environ: dict[str, str]
) -> None:
    exported = InMemorySpanExporter()
    client = Client(**dev_env.client.config() | {"interceptors": tracing_interceptors(environ, exporter=exported)})
    async with fake_worker(WorkflowEnvironment.from_client(client), FakeWorld()) as api:
        handle = await api.start_onboarding(example_tenant("tenant-traced"))
        status = await wait_for_stage(api, handle, "gate:approve_plan")
        assert status.plan_hash
        await api.approve(handle.id, status.plan_hash)
        assert (await handle.result()).status == "completed"
    names = {span.name for span in exported.get_finished_spans()}
    if environ:
        assert {"StartWorkflow:TenantOnboarding", "RunWorkflow:TenantOnboarding"} <= names
        assert {"RunActivity:capacity.preflight", "RunActivity:handover.render"} <= names
    else:
        assert names == set()


@pytest_asyncio.fixture
async def collector() -> AsyncIterator[tuple[str, list[ExportTraceServiceRequest]]]:
    """An OTLP/HTTP trace receiver on loopback that keeps every export request."""
    received: list[ExportTraceServiceRequest] = []

    async def traces(request: web.Request) -> web.Response:
        received.append(ExportTraceServiceRequest.FromString(await request.read()))
        return web.Response(body=b"", content_type="application/x-protobuf")

    app = web.Application()
    app.router.add_post("/v1/traces", traces)
    async with TestServer(app, host="127.0.0.1") as server:
        yield f"http://127.0.0.1:{server.port}", received


async def test_the_worker_exports_spans_over_otlp_when_the_endpoint_is_set(
    dev_env: WorkflowEnvironment,
    collector: tuple[str, list[ExportTraceServiceRequest]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    endpoint, received = collector
    monkeypatch.setenv("TEMPORAL_ADDRESS", dev_env.client.service_client.config.target_host)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
    try:
        run = await onboard_with_worker("tenant-otlp")
    finally:
        await asyncio.to_thread(shutdown_tracing)
    assert run.result.status == "completed"
    names = {
        span.name
        for request in received
        for spans in request.resource_spans
        for scope in spans.scope_spans
        for span in scope.spans
    }
    assert {"StartWorkflow:TenantOnboarding", "RunWorkflow:TenantOnboarding"} <= names
    assert {"RunActivity:capacity.preflight", "RunActivity:handover.render"} <= names
    services = {
        attribute.value.string_value
        for request in received
        for spans in request.resource_spans
        for attribute in spans.resource.attributes
        if attribute.key == "service.name"
    }
    assert services == {"tenantflow"}
