"""Temporal test environments from the pip-installed binaries (no download at run time)."""

from __future__ import annotations

from collections.abc import Sequence

from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import AddSearchAttributesRequest
from temporalio.common import SearchAttributeKey
from temporalio.testing import WorkflowEnvironment

from tenantflow.starter.devserver import binary, free_port
from tenantflow.worker.codec import PLAIN
from tenantflow.workflows.search import ALL


async def start_dev_server(database: str | None = None, port: int | None = None) -> WorkflowEnvironment:
    return await WorkflowEnvironment.start_local(
        dev_server_existing_path=binary("temporal"),
        port=port or free_port(),
        ui=False,
        search_attributes=ALL,
        data_converter=PLAIN,
        dev_server_database_filename=database,
    )


async def start_time_skipping(attributes: Sequence[SearchAttributeKey] = ALL) -> WorkflowEnvironment:
    env = await WorkflowEnvironment.start_time_skipping(
        test_server_existing_path=binary("temporal-test-server"), data_converter=PLAIN
    )
    await env.client.operator_service.add_search_attributes(
        AddSearchAttributesRequest(
            namespace=env.client.namespace,
            search_attributes={key.name: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD for key in attributes},
        )
    )
    return env
