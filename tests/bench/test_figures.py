"""``bench.figures`` measures what it says: every run completes, histories and gate latencies are read back."""

from __future__ import annotations

from temporalio.testing import WorkflowEnvironment

from bench.figures import simulated_figures
from tests.workflow.contract import example_tenant


async def test_simulated_figures_complete_every_run(dev_env: WorkflowEnvironment) -> None:
    figures = await simulated_figures(dev_env.client, example_tenant(), tenants=3, latency_s=0.001)
    assert figures.failures == 0 and figures.concurrent == 3
    assert figures.history_events > 100
    assert 0 < figures.p50_s <= figures.p95_s
    assert figures.gate_latency_p50_ms > 0 and figures.direct_s > 0
