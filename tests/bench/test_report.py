"""The bench's report: the durability tax is the total time through Temporal over the total time direct, printed
with both totals' runs, and named as missing when a run failed."""

from __future__ import annotations

from pathlib import Path

import pytest

from tenantflow.bench.figures import Batch, Figures
from tenantflow.bench.lab import LabFigures
from tenantflow.bench.report import report_rows, summary
from tenantflow.bench.runs import RunTiming

RUN = RunTiming(workflow_id="tenant/tenant-x", seconds=3.0, ok=True)
BATCH = Batch(runs=[RUN], wall_s=3.0, events=[250], gate_latencies_s=[0.01])


def figures(durable_s: list[float], direct_s: list[float], failures: list[str]) -> Figures:
    lab = LabFigures(
        run=RUN,
        api_calls={"kube": {"kube-tenant-cluster": 3}},
        history_events=250,
        activity_seconds={"kube.namespace": 0.5},
        durable_s=durable_s,
        durable_activity_s=[s - 0.5 for s in durable_s],
        direct_s=direct_s,
        direct_activity_seconds=[{"kube.namespace": 0.4} for _ in direct_s],
        failures=failures,
        tenants=["tenant-b1t0", "tenant-b1d1"],
        cleaned_up=True,
    )
    return Figures(
        latencies="every activity 1 ms", activity_slots=32, logs=Path("/tmp"), solo=RUN, gate=BATCH, load=BATCH, lab=lab
    )


def tax_row(f: Figures) -> tuple[str, str, str]:
    return next(row for row in report_rows(f) if row[0].startswith("(c) durability tax"))


def test_the_durability_tax_is_temporal_total_over_direct_total_and_is_printed() -> None:
    f = figures(durable_s=[3.0, 5.0], direct_s=[2.0, 2.0], failures=[])
    assert summary(f)["durability_tax"] == pytest.approx(2.0)
    assert tax_row(f)[1].startswith("2.00 (through Temporal 3.0, 5.0 s, direct 2.0, 2.0 s; 0.5 s per run")
    faster = figures(durable_s=[1.5], direct_s=[2.0], failures=[])
    assert summary(faster)["durability_tax"] == pytest.approx(0.75)


def test_no_durability_tax_when_a_run_failed() -> None:
    f = figures(durable_s=[3.0], direct_s=[2.0], failures=["direct run 1: boom"])
    assert summary(f)["durability_tax"] is None and summary(f)["ok"] is False
    assert tax_row(f)[1] == "n/a: a run failed: direct run 1: boom"
