"""``tenantflow bench`` prints every figure, every onboarding it drives completes, and it cleans the lab up."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from tenantflow.lab.endpoints import LabEndpoints
from tests.integration.world import diff, world_snapshot

TENANTFLOW = Path(sys.executable).parent / "tenantflow"

FIGURES = (
    "(a) one onboarding",
    "(b) 3 concurrent onboardings, one worker: throughput",
    "(b) time to complete p50 / p95",
    "(b) failures",
    "(c) durability tax",
    "(d) history events",
    "(e) gate latency p50 (update -> next activity start), 2 runs",
    "(f) drift check, one lab tenant",
    "(f) drift check, 20 simulated tenants, 64 at a time",
)


def run_bench(env: WorkflowEnvironment, *args: str) -> subprocess.CompletedProcess[str]:
    """``tenantflow bench ARGS`` against ``env``'s Temporal server, wide enough that no table row wraps."""
    environ = {**os.environ, "TEMPORAL_ADDRESS": env.client.service_client.config.target_host, "COLUMNS": "250"}
    return subprocess.run([str(TENANTFLOW), "bench", *args], env=environ, capture_output=True, text=True, timeout=600)


def row(stdout: str, figure: str) -> str:
    """The value cell of the table row whose figure cell contains ``figure``."""
    line = next(line for line in stdout.splitlines() if figure in line)
    return line.split("│")[2].strip()


async def test_bench_prints_every_figure(dev_env: WorkflowEnvironment, tmp_path: Path) -> None:
    done = run_bench(
        dev_env,
        *("--tenants", "3", "--gate-runs", "2", "--latency-ms", "1", "--drift-tenants", "20"),
        *("--log-dir", str(tmp_path)),
    )
    assert done.returncode == 0, done.stderr + done.stdout
    for figure in FIGURES:
        assert figure in done.stdout, done.stdout
    assert row(done.stdout, "(b) failures") == "0"
    assert re.fullmatch(r"\d+ \(simulated run\)", row(done.stdout, "(d) history events"))
    assert "needs a lab" in row(done.stdout, "(c) durability tax")
    assert "(20 checked, 0 failed)" in row(done.stdout, "(f) drift check, 20 simulated")
    assert re.match(r"[\d.]+ s / [\d.]+ s = [\d.]+ ", row(done.stdout, "(b) CPU per onboarding")), done.stdout
    assert "cores; load average" in done.stdout, "the machine's load is printed with the figures"
    worker_log = next(tmp_path.glob("simworker-*.log")).read_text().splitlines()
    finished = [entry for entry in map(json.loads, worker_log) if entry.get("event") == "activity attempt finished"]
    assert {entry["layer"] for entry in finished} >= {"capacity", "identity", "kube", "slurm", "storage", "smoke"}


async def test_bench_against_the_lab_counts_calls_per_layer_and_leaves_the_lab_clean(
    dev_env: WorkflowEnvironment, bench_lab: LabEndpoints, tmp_path: Path
) -> None:
    lab = bench_lab
    before = world_snapshot(lab)
    done = run_bench(
        dev_env,
        "--tenants",
        "2",
        "--gate-runs",
        "1",
        "--latency-ms",
        "1",
        "--tax-pairs",
        "1",
        "--users-curve",
        "2,5",
        "--lab-dir",
        str(lab.state_dir),
        "--log-dir",
        str(tmp_path),
        "--output",
        "json",
    )
    assert done.returncode == 0, done.stderr + done.stdout
    figures = json.loads(done.stdout)
    assert figures["lab_run"]["ok"] and figures["lab_cleaned_up"] and figures["failures"] == []
    calls = figures["api_calls"]
    assert calls["slurm"]["slurm"] > 0 and calls["identity"]["authentik"] > 0 and calls["storage"]["weka"] > 0
    assert calls["kube"]["kube-tenant-cluster"] > 0 and set(calls["kube"]) <= {"kube-tenant-cluster", "slurm"}
    # the kube layer's one Slurm call: `scontrol show config` for slurmd's port and SrunPortRange, which the
    # tenant's NetworkPolicy opens (activities/kube/ports.py)
    assert calls["kube"].get("slurm", 0) <= len(figures["lab_tenants"]), calls["kube"]
    durable, direct = figures["durable_s"], figures["direct_s"]
    assert len(durable) == len(direct) == 1 and min(durable + direct) > 0
    assert figures["durability_tax"] == pytest.approx(sum(durable) / sum(direct))
    assert figures["history_events"] > 100
    assert figures["lab_drift"]["clean"], figures["lab_drift"]
    curve = figures["users_curve"]
    assert [(p["users"], p["ok"], p["cleaned_up"], p["retried"]) for p in curve["points"]] == [
        (2, True, True, []),
        (5, True, True, []),
    ]
    assert curve["first_attempt"] and {"identity", "slurm", "storage"} <= set(curve["per_user_s"])
    slugs = figures["lab_tenants"] + [p["slug"] for p in curve["points"]]
    tags = [slug.removeprefix("tenant-") for slug in slugs]
    residue = diff(before, world_snapshot(lab))
    assert all(line.startswith("+ ") and any(tag in line for tag in tags) for line in residue), "\n".join(residue)
