"""Where a tenant's storage lives: Weka filesystem names, directories and quotas, and the owning session.

Strict isolation (6a): organization ``<slug>`` with admin ``admin-<short>`` (password derived, see
:func:`activities.common.weka_client.org_admin_credentials`), filesystems ``<slug>-home`` and ``<slug>-scratch``.
Shared org (6b): directories in the shared ``home`` and ``scratch`` filesystems. Either way ``/home/<user>``
(``/<user>`` on the home filesystem) and ``/scratch/<slug>`` (``/<slug>`` on the scratch filesystem) get the
contract's hard/soft quotas (4e).
"""

from __future__ import annotations

from dataclasses import dataclass

from temporalio import activity
from temporalio.exceptions import ApplicationError

from tenantflow.activities.common.errors import transient
from tenantflow.activities.common.fanout import fan_out
from tenantflow.activities.common.weka_client import Credentials, WekaClient, org_admin_credentials
from tenantflow.models.plan import Action
from tenantflow.models.results import EnsureResult, Kept, NoUndoData, Outcome, UndoRecord, WekaObject
from tenantflow.models.tenant import StorageIsolation, TenantContract
from tenantflow.models.units import parse_size

LAYER = "storage"


@dataclass(frozen=True)
class QuotaTarget:
    role: str
    filesystem: str
    path: str
    label: str
    hard: int
    soft: int


def is_strict(contract: TenantContract) -> bool:
    return contract.storage.isolation is StorageIsolation.strict_org


def filesystem_names(contract: TenantContract) -> dict[str, str]:
    if is_strict(contract):
        return {"home": f"{contract.slug}-home", "scratch": f"{contract.slug}-scratch"}
    return {"home": "home", "scratch": "scratch"}


def filesystem_capacities(contract: TenantContract) -> dict[str, int]:
    return {
        "home": parse_size(contract.storage.home_filesystem_capacity),
        "scratch": parse_size(contract.storage.scratch.hard),
    }


def quota_targets(contract: TenantContract) -> list[QuotaTarget]:
    names, home, scratch = filesystem_names(contract), contract.storage.home_per_user, contract.storage.scratch
    targets = [
        QuotaTarget("home", names["home"], f"/{u}", f"/home/{u}", parse_size(home.hard), parse_size(home.soft))
        for u in contract.usernames
    ]
    targets.append(
        QuotaTarget(
            "scratch",
            names["scratch"],
            f"/{contract.slug}",
            f"/scratch/{contract.slug}",
            parse_size(scratch.hard),
            parse_size(scratch.soft),
        )
    )
    return targets


def resolve_targets(
    weka: WekaClient, targets: list[QuotaTarget], uids: dict[str, str], label: str
) -> dict[str, int | None]:
    """Each target's inode (``resolvePath``) by label, a few requests at a time; None when the directory or its
    filesystem (not in ``uids``, filesystem uids by name) does not exist."""

    def resolve(target: QuotaTarget) -> int | None:
        uid = uids.get(target.filesystem)
        return weka.resolve_path(uid, target.path) if uid is not None else None

    return dict(zip((t.label for t in targets), fan_out(resolve, targets, label), strict=True))


def tenant_credentials(contract: TenantContract) -> Credentials | None:
    """Who owns the tenant's filesystems: the org admin (strict) or the platform user (shared)."""
    return org_admin_credentials(contract.slug) if is_strict(contract) else None


def tenant_session(contract: TenantContract) -> WekaClient | None:
    """A logged-in session owning the tenant's filesystems; None when the tenant org is already gone."""
    weka = WekaClient.from_settings(tenant_credentials(contract))
    try:
        weka.login()
    except ApplicationError as err:
        weka.close()
        if err.type == "Forbidden":
            return None
        raise
    return weka


def storage_result(
    kind: str, name: str, outcome: Outcome, namespace: str | None = None, data: UndoRecord | None = None
) -> EnsureResult:
    return EnsureResult(
        layer=LAYER, kind=kind, name=name, namespace=namespace, outcome=outcome, data=data or NoUndoData()
    )


def org_is_ours(contract: TenantContract) -> bool:
    try:
        with WekaClient.from_settings(org_admin_credentials(contract.slug)) as org:
            org.login()
    except ApplicationError as err:
        if transient(err):
            raise
        return False
    return True


TEARDOWN_WORKFLOW = "TenantOffboarding"
"""The workflow type whose undo is an approved teardown of the tenant: there the tenant's own markers (labels,
quota owner, the org admin's login) prove an object is the tenant's; in a rollback only this run's record does."""


def is_teardown() -> bool:
    return activity.in_activity() and activity.info().workflow_type == TEARDOWN_WORKFLOW


def recorded_uid(result: EnsureResult) -> str | None:
    """The uid a create recorded (Weka object or Kubernetes object), None when nothing was recorded."""
    return (result.data.uid or None) if isinstance(result.data, WekaObject) else None


def left_alone(result: EnsureResult, why: str) -> EnsureResult:
    """An undo that did not touch the object, and why."""
    return result.model_copy(update={"outcome": Outcome.unchanged, "data": Kept(kept=why)})


def deleted(found: bool, result: EnsureResult) -> EnsureResult:
    return result.model_copy(update={"outcome": Outcome.deleted if found else Outcome.absent})


def plan_action(exists: bool, same: bool = True) -> Action:
    return Action.create if not exists else (Action.unchanged if same else Action.update)
