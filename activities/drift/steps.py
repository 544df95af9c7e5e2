"""The drift check (``drift.tenants``, ``drift.tenant``): an onboarded tenant's world against its recorded contract.

``drift.tenant`` computes the onboarding plan of the recorded contract exactly as ``tenantflow plan`` and the
onboarding workflow do (the capacity preflight to find the tenant's nodes, then every layer's read-only plan
activity, in the catalogue's order) and reports every object the plan would create (missing) or update
(changed), then adds what is there but not wanted (:mod:`activities.drift.extras`). Nothing is written.
``drift.tenants`` reads which tenants to check from the tenant records (:mod:`activities.common.recordstore`).
"""

from __future__ import annotations

from collections.abc import Callable

from temporalio.exceptions import ApplicationError

from tenantflow.activities.capacity import steps as capacity
from tenantflow.activities.common.errors import transient
from tenantflow.activities.common.polling import heartbeat
from tenantflow.activities.common.recordstore import list_records, read_latest
from tenantflow.activities.common.registered import defn
from tenantflow.activities.drift import extras as drift_extras
from tenantflow.activities.identity import steps as identity
from tenantflow.activities.kube import steps as kube
from tenantflow.activities.login import steps as login
from tenantflow.activities.slurm import steps as slurm
from tenantflow.activities.storage import steps as storage
from tenantflow.models import runbook
from tenantflow.models.drift import DriftItem, DriftKind, DriftReport, DriftTarget, FleetDriftInput
from tenantflow.models.onboarding import StepInput
from tenantflow.models.plan import PlanStep
from tenantflow.models.records import RecordKey, RecordKind, RecordStatus, TenantRecord
from tenantflow.models.tenant import TenantContract

PLANS: tuple[Callable[[StepInput], list[PlanStep]], ...] = (
    capacity.plan,
    identity.plan,
    kube.plan,
    slurm.plan,
    storage.plan,
    login.plan,
)
"""The plan activities in the order of the catalogue's ``PLAN`` (``tests/unit/activities/test_drift.py`` checks it)."""

EXTRAS: tuple[Callable[[TenantContract], list[DriftItem]], ...] = (
    drift_extras.identity_extras,
    drift_extras.kube_extras,
    drift_extras.slurm_extras,
)


@defn(runbook.DRIFT_TENANTS)
def tenants(inp: FleetDriftInput) -> list[str]:
    """The slug of every onboarded tenant recorded in ``inp.records`` (of ``inp.slugs`` when given)."""
    found = [
        record.contract.slug
        for _, record in list_records(inp.records, RecordKind.tenant)
        if isinstance(record, TenantRecord) and record.status is RecordStatus.onboarded
    ]
    return [slug for slug in found if not inp.slugs or slug in inp.slugs]


def plan_drift(contract: TenantContract) -> list[DriftItem]:
    """What the onboarding plan of ``contract`` would change in the world now, as drift."""
    step_input = StepInput(contract=contract, run_id=f"drift/{contract.slug}")
    found = capacity.preflight(step_input)
    errors = [f.message for f in found.findings if f.blocks]
    if not found.facts.nodes:
        raise ApplicationError(f"capacity: no nodes found for the tenant ({'; '.join(errors) or 'none chosen'})")
    step_input = step_input.model_copy(update={"facts": found.facts})
    items: list[DriftItem] = []
    for plan in PLANS:
        heartbeat(contract.slug, plan.__module__)
        items.extend(item for step in plan(step_input) if (item := DriftItem.of_step(step)) is not None)
    return drift_extras.slurm_changes(
        contract,
        [
            item.model_copy(update={"detail": drift_extras.kube_changes(contract, item)})
            if item.layer == "kube" and item.drift is DriftKind.changed
            else item
            for item in items
        ],
    )


def check(contract: TenantContract) -> DriftReport:
    """One tenant's drift; a layer that cannot be read (a non-retryable failure) is reported, not raised."""
    try:
        items = plan_drift(contract)
        for extras in EXTRAS:
            heartbeat(contract.slug, extras.__name__)
            items.extend(extras(contract))
    except ApplicationError as err:
        if transient(err):
            raise
        return DriftReport(slug=contract.slug, error=str(err))
    return DriftReport(slug=contract.slug, items=items)


@defn(runbook.DRIFT_TENANT)
def tenant(target: DriftTarget) -> DriftReport:
    """The drift of the tenant ``target.slug``, against the contract of its latest record."""
    record = read_latest(RecordKey.of_tenant(target.records, target.slug), TenantRecord)
    if record is None or record.status is not RecordStatus.onboarded:
        state = "no record" if record is None else f"its record says {record.status.value}"
        return DriftReport(slug=target.slug, error=f"not an onboarded tenant of {target.records.describe()}: {state}")
    return check(record.contract)


ACTIVITIES = [tenants, tenant]
