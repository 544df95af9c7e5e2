"""``tenantflow setup``: make a Temporal namespace ready for tenantflow's runs by creating the search attributes
every start sets (``TenantSlug``, ``WorkerCluster``, ``Stage``; :mod:`workflows.search`). Idempotent: an attribute
that exists with the wanted type is left; one that exists with another type is refused, naming it.

Through the Operator service (``ListSearchAttributes``, ``AddSearchAttributes``: https://docs.temporal.io/search-
attribute#custom-search-attribute, the calls ``temporal operator search-attribute create`` makes), which any
self-hosted server (and ``temporal server start-dev``) offers to a client allowed to administer the namespace.
Temporal Cloud creates search attributes through its own control plane (``tcld namespace search-attributes add``,
https://docs.temporal.io/cloud/tcld/namespace#search-attributes), not through this API: there the command says so.
"""

from __future__ import annotations

from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import AddSearchAttributesRequest, ListSearchAttributesRequest
from temporalio.client import Client
from temporalio.common import SearchAttributeKey

from tenantflow.workflows.search import ALL

KEYWORD = IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD


class NamespaceSetupError(RuntimeError):
    """The namespace cannot be set up as asked (an attribute of another type)."""


async def ensure_search_attributes(
    client: Client, namespace: str, keys: tuple[SearchAttributeKey[str], ...] = ALL
) -> list[str]:
    """Create every one of ``keys`` (Keyword) that ``namespace`` lacks; the names created (empty: all there)."""
    listed = await client.operator_service.list_search_attributes(ListSearchAttributesRequest(namespace=namespace))
    existing = dict(listed.custom_attributes)
    wrong = [k.name for k in keys if k.name in existing and existing[k.name] != KEYWORD]
    if wrong:
        names = ", ".join(f"{name} ({IndexedValueType.Name(existing[name])})" for name in wrong)
        raise NamespaceSetupError(
            f"namespace {namespace}: search attribute(s) {names} exist with another type than Keyword; "
            "tenantflow needs them as Keyword: remove them (temporal operator search-attribute remove) and run "
            "tenantflow setup again"
        )
    missing = [k.name for k in keys if k.name not in existing]
    if missing:
        await client.operator_service.add_search_attributes(
            AddSearchAttributesRequest(namespace=namespace, search_attributes=dict.fromkeys(missing, KEYWORD))
        )
    return missing
