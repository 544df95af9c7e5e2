"""Search attributes that make runs findable in the Temporal UI and the CLI."""

from __future__ import annotations

from temporalio.common import SearchAttributeKey

TENANT_SLUG = SearchAttributeKey.for_keyword("TenantSlug")
WORKER_CLUSTER = SearchAttributeKey.for_keyword("WorkerCluster")
STAGE = SearchAttributeKey.for_keyword("Stage")

ALL = (TENANT_SLUG, WORKER_CLUSTER, STAGE)
