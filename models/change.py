"""Changing an onboarded tenant (``TenantChange``, ``tenantflow apply``): the input and what cannot change.

A change takes the tenant's recorded contract (``previous``, from its tenant record) and the new one. Its plan is
the onboarding plan of the new contract against the world (creates and updates) plus what the recorded contract
has and the new one drops (users to remove, nodes to release). The slug names every object of the tenant (the
Authentik group, the namespace, the Slurm accounts and partition, the Weka organization, the Reservation), so it
cannot change in place: :func:`slug_refusal` says why and what to do instead.
"""

from __future__ import annotations

from pydantic import Field

from tenantflow.models.base import Strict
from tenantflow.models.tenant import TenantContract

CHANGE_WORKFLOW = "TenantChange"
DRAIN_REASON = "tenantflow: released from {slug} by {run}"
"""``scontrol update NodeName=... State=DRAIN Reason=...``: the reason marks the drain as tenantflow's."""
DRAIN_MARK = "tenantflow: released from "
"""What a drain reason of ours starts with: only such drains are resumed or undone."""


class ChangeInput(Strict):
    """Change the onboarded tenant ``previous.slug`` to ``contract``."""

    contract: TenantContract = Field(..., description="the new contract")
    previous: TenantContract = Field(..., description="the tenant's recorded contract (its latest tenant record)")
    approval_escalate_after_s: int = Field(3600, ge=1, description="after this a waiting gate escalates")
    approval_expire_after_s: int = Field(7 * 24 * 3600, ge=1, description="after this the run gives up")


def slug_refusal(previous_slug: str, contract: TenantContract) -> str | None:
    """Why ``contract`` cannot change the tenant ``previous_slug`` in place, or None when the slugs match."""
    if previous_slug == contract.slug:
        return None
    return (
        f"slug: the tenant {previous_slug} cannot become {contract.slug}; the slug names its Authentik group, "
        "namespace, Slurm accounts and partition, Weka organization and Reservation, which cannot be renamed in "
        f"place. Keep slug: {previous_slug} in the contract, or offboard {previous_slug} and onboard "
        f"{contract.slug}"
    )


def removed_users(previous: TenantContract, contract: TenantContract) -> list[str]:
    """The usernames ``previous`` lists and ``contract`` does not."""
    return sorted(set(previous.usernames) - set(contract.usernames))
