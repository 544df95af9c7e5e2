"""The bench's report: the durability tax is the total time through Temporal over the total time direct, printed
with both totals' runs, and named as missing when a run failed; the drift figures with their goals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tenantflow.bench.drift import FleetDrift, LabDrift
from tenantflow.bench.figures import Batch, Figures
from tenantflow.bench.history import ActivitySpan
from tenantflow.bench.lab import DurableRun, LabFigures
from tenantflow.bench.report import ROW_KEYS, machine, markdown, report_rows, summary
from tenantflow.bench.runs import RunTiming
from tenantflow.bench.users import UsersCurve, UsersPoint

RUN = RunTiming(workflow_id="tenant/tenant-x", seconds=3.0, ok=True)
BATCH = Batch(runs=[RUN], wall_s=3.0, events=[250], gate_latencies_s=[0.01])
PAIRS = "(c) durability tax, mean of A-B-B-A pairs"
FLEET = FleetDrift(tenants=1000, concurrency=64, seconds=41.5, checked=1000, failed=0)


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
        latencies="every activity 1 ms",
        activity_slots=32,
        logs=Path("/tmp"),
        solo=RUN,
        gate=BATCH,
        load=BATCH,
        fleet_drift=FLEET,
        lab=lab.model_copy(update={"drift": LabDrift(slug="tenant-b1t0", seconds=1.5, clean=True)}),
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


def test_the_drift_figures_are_printed_with_their_goals_and_a_failed_check_is_not_ok() -> None:
    f = figures(durable_s=[3.0], direct_s=[2.0], failures=[])
    rows = {row[0]: row[1:] for row in report_rows(f)}
    assert rows["(f) drift check, one lab tenant"] == ("1.50 s (clean)", "<= 2 s")
    assert rows["(f) drift check, 1000 simulated tenants, 64 at a time"] == (
        "41.5 s (1000 checked, 0 failed)",
        "<= 60 s",
    )
    assert summary(f)["ok"] and summary(f)["fleet_drift"]["checked"] == 1000
    failed = f.model_copy(update={"fleet_drift": FLEET.model_copy(update={"checked": 999, "failed": 1})})
    assert summary(failed)["ok"] is False


def test_the_tax_is_within_noise_unless_the_pairs_interval_excludes_one() -> None:
    one_pair = figures(durable_s=[3.0], direct_s=[2.0], failures=[])
    assert "within noise (no interval from one pair)" in dict((r[0], r[1]) for r in report_rows(one_pair))[PAIRS]
    noisy = figures(durable_s=[2.2, 1.7, 2.1], direct_s=[2.0, 2.0, 2.0], failures=[])
    assert summary(noisy)["durability_tax_interval"]["within_noise"] is True
    steady = figures(durable_s=[3.0, 3.1, 2.9, 3.0], direct_s=[2.0, 2.0, 2.0, 2.0], failures=[])
    interval = summary(steady)["durability_tax_interval"]
    assert interval["within_noise"] is False and 1.0 < interval["low"] < 1.5 < interval["high"] < 1.6
    assert dict((r[0], r[1]) for r in report_rows(steady))[PAIRS].endswith("over 4 pairs: above noise")
    failed = figures(durable_s=[3.0], direct_s=[2.0], failures=["direct run 1: boom"])
    assert summary(failed)["durability_tax_interval"] is None


def test_the_floor_ratio_is_printed_or_named_as_unavailable() -> None:
    f = figures(durable_s=[3.0], direct_s=[2.0], failures=[])
    measured = f.model_copy(update={"load": BATCH.model_copy(update={"cpu_s": 1.2}), "floor_cpu_s": 0.8})
    rows = {row[0]: row[1] for row in report_rows(measured)}
    assert rows["(b) CPU per onboarding (worker + server) / floor"].startswith("1.20 s / 0.80 s = 1.50 ")
    assert summary(measured)["floor_ratio"] == pytest.approx(1.5)
    assert "n/a" in {row[0]: row[1] for row in report_rows(f)}["(b) CPU per onboarding (worker + server) / floor"]


def point(users: int, slurm_s: float, retried: list[str] | None = None) -> UsersPoint:
    return UsersPoint(
        users=users,
        slug=f"tenant-c1n{users}",
        workflow_id=f"tenant/tenant-c1n{users}",
        ok=True,
        wall_s=10.0 + slurm_s + 6.0,
        smoke_s=6.0,
        layer_s={"identity": 1.0 + users / 100, "slurm": slurm_s},
        retried=retried or [],
        cleaned_up=True,
    )


def test_the_users_curve_prints_seconds_per_additional_user_by_layer_and_the_attempts() -> None:
    curve = UsersCurve(points=[point(3, 0.5), point(30, 0.8), point(300, 3.5)])
    f = figures(durable_s=[3.0], direct_s=[2.0], failures=[]).model_copy(update={"users": curve})
    rows = {name: value for name, value, _ in report_rows(f)}
    assert rows["(g) seconds per additional user, by layer"] == "identity 10.0 ms, slurm 10.1 ms"
    assert rows["(g) largest / smallest tenant, wall time without smoke jobs"] == "1.29"
    assert rows["(g) every activity on its first attempt"] == "yes"
    facts = summary(f)
    assert facts["users_curve"]["first_attempt"] and facts["ok"]
    assert facts["users_curve"]["per_user_s"]["slurm"] == pytest.approx(3.0 / 297)

    retried = UsersCurve(points=[point(3, 0.5), point(300, 3.5, ["slurm.users (attempt 2)"])])
    rows = {name: value for name, value, _ in report_rows(f.model_copy(update={"users": retried}))}
    assert rows["(g) every activity on its first attempt"] == "NO: slurm.users (attempt 2)"
    no_lab = {name: value for name, value, _ in report_rows(f.model_copy(update={"users": None}))}
    assert no_lab["(g) users curve"].startswith("n/a: needs a lab")


def test_the_readme_table_is_the_json_rows_with_the_machines_load() -> None:
    rows = [dict(zip(ROW_KEYS, row, strict=True)) for row in report_rows(figures([3.0], [2.5], []))]
    facts = {"rows": rows, "machine": {"before": {"cpus": 2, "load": [0.5, 1, 2]}, "after": machine()}}
    table = markdown(json.loads(json.dumps(facts))).splitlines()
    assert table[:2] == ["| figure | measured | target |", "|---|---|---|"]
    assert table[2] == f"| {rows[0]['figure']} | {rows[0]['value']} | {rows[0]['target']} |"
    assert table.index("") == 2 + len(rows)
    assert table[-1].startswith("Measured on 2 cores; load average (1/5/15 min) 0.5/1/2 before the bench")


def test_time_in_activities_counts_a_window_shared_by_concurrent_local_reads_once() -> None:
    spans = [
        ActivitySpan(name="capacity.plan", started=10.0, ended=11.0, local=True),
        ActivitySpan(name="identity.plan", started=10.0, ended=11.0, local=True),
        ActivitySpan(name="kube.namespace", started=11.5, ended=12.0),
        ActivitySpan(name="kube.quota", started=11.8, ended=12.5),
    ]
    run = DurableRun(run=RUN, spans=spans, events=10)
    assert run.activity_s == pytest.approx(1.0 + 1.0)
