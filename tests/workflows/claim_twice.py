"""A workflow that claims its tenant's hold twice in one run, so that the second claim finds the hold started by
this very run (tests/workflows/test_tenant_hold.py)."""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from tenantflow.workflows.run_state import RunState
    from tenantflow.workflows.tenant_hold import claim


@workflow.defn(name="TestClaimTwice")
class ClaimTwice:
    """Claims the tenant ``slug``, then claims it again; its stage at the end."""

    @workflow.run
    async def run(self, slug: str) -> str:
        state = RunState("TestClaimTwice")
        await claim(state, slug)
        await claim(state, slug)
        return state.gates.stage
