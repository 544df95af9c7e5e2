"""``tenantflow setup``: prepare a Temporal namespace for tenantflow (its search attributes), once per namespace."""

from __future__ import annotations

import typer

from tenantflow.starter.namespace import NamespaceSetupError, ensure_search_attributes
from tenantflow.starter.output import EXIT_REFUSED, console, errors, run
from tenantflow.worker.config import TemporalSettings
from tenantflow.worker.temporal import connect
from tenantflow.workflows.search import ALL


def setup() -> None:
    """Create the search attributes tenantflow's runs set (TenantSlug, WorkerCluster, Stage) in the namespace of
    TEMPORAL_ADDRESS/TEMPORAL_NAMESPACE; idempotent. Needs a client allowed to administer the namespace."""

    async def go() -> list[str]:
        settings = TemporalSettings()
        client = await connect(settings)
        return await ensure_search_attributes(client, settings.namespace)

    try:
        created = run(go())
    except NamespaceSetupError as exc:
        errors.print(str(exc), style="red", markup=False, highlight=False)
        raise typer.Exit(EXIT_REFUSED) from None
    names = ", ".join(key.name for key in ALL)
    if created:
        console.print(f"created search attributes {', '.join(created)}; the namespace has {names}", highlight=False)
    else:
        console.print(f"nothing to do: the namespace has {names}", highlight=False)
