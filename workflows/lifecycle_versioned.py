"""The lifecycle a versioned worker registers: ``TenantLifecycle`` declared auto-upgrade.

A lifecycle lives a whole term, and a pinned run would keep its build for all of it (pinned runs stay pinned across
continue-as-new), so on a versioned worker the type is declared ``AUTO_UPGRADE``: its next task runs on the current
build (workflows/README.md, "Pinned or auto-upgrade"). The declaration is made only there: Temporal refuses a
workflow task completion that names a versioning behaviour from a worker without versioned deployment options
("versioning behavior cannot be specified without deployment options being set with versioned mode"), so the
unversioned worker (the demo, the lab, a worker without ``TENANTFLOW_BUILD_ID``) registers the plain
:class:`TenantLifecycle`. Both are the same workflow type, with the same code and histories.
Source: https://docs.temporal.io/production-deployment/worker-deployments/worker-versioning (versioning behaviors)
and temporalio's ``workflow.defn(versioning_behavior=...)``.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.common import VersioningBehavior

with workflow.unsafe.imports_passed_through():
    from tenantflow.models.lifecycle import LifecycleInput, LifecycleResult
    from tenantflow.workflows.lifecycle import TenantLifecycle


@workflow.defn(name="TenantLifecycle", versioning_behavior=VersioningBehavior.AUTO_UPGRADE)
class AutoUpgradingLifecycle(TenantLifecycle):
    """:class:`TenantLifecycle`, moving to the current build at its next task."""

    @workflow.run
    async def run(self, params: LifecycleInput) -> LifecycleResult:
        return await super().run(params)


def for_versioned_worker(workflows: list[type]) -> list[type]:
    """``workflows`` with the lifecycle in its auto-upgrading declaration."""
    return [AutoUpgradingLifecycle if cls is TenantLifecycle else cls for cls in workflows]
