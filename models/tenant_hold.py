"""What ``records.tenant_holder`` says about a tenant's hold (``hold/<slug>``) and the run that holds it.

A tenant's onboarding, change and offboarding each start the tenant's hold as their child before any write
(``workflows/tenant_hold.py``); a run that finds the hold taken asks who holds it, and whether that run still runs:
the server terminates a hold after its parent closed (its parent-close policy), but not at the same instant.
"""

from __future__ import annotations

from pydantic import Field

from tenantflow.models.base import Strict


class TenantHolder(Strict):
    """The tenant's hold as described right now, and its parent (the run holding the tenant)."""

    hold_id: str = Field(..., description="the hold's workflow id, hold/<slug>")
    held: bool = Field(False, description="the hold runs; false: it closed (or never ran) since the claim failed")
    holder: str = Field("", description="the workflow id of the run holding the tenant: the hold's parent")
    holder_run_id: str = Field("", description="the run id of the run holding the tenant; empty: unknown")
    holder_type: str = Field("", description="TenantOnboarding, TenantChange or TenantOffboarding; empty: unknown")
    holder_running: bool = Field(
        False, description="the holding run still runs; false: it closed and its hold is about to be terminated"
    )
