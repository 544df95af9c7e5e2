"""The lab's ``konduktor`` stand-in through its wrapper: the runbook's commands against the enrollment lab."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from tenantflow.lab.konduktor.wrapper import write_wrapper
from tests.enrollment.conftest import Lab


def konduktor(lab: Lab, tmp: Path, context: str, *argv: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    binary = write_wrapper(tmp / "bin")
    return subprocess.run(
        [str(binary), "--kubeconfig", str(lab.kubeconfig), "--context", context, *argv],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def conditions(lab: Lab) -> dict[str, str]:
    wc = lab.hub.get("trainy.ai", "workerclusters", "forecasting-us", "forecasting")
    return {c["type"]: c["status"] for c in (wc.get("status") or {}).get("conditions") or []}


def wait_for(check: object, timeout_s: float = 20) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def test_enroll_bootstrap_status_cordon_decommission_reset(greenfield: Lab, tmp_path: Path) -> None:
    enroll = konduktor(greenfield, tmp_path, "hub", "cluster", "enroll", "forecasting-us", "--ns", "forecasting")
    assert enroll.returncode == 0, enroll.stderr
    blob = enroll.stdout.strip()
    assert blob.startswith("kdk1.")
    enrollment = greenfield.hub.get("trainy.ai", "bootstrapenrollments", "forecasting-us", "forecasting")
    assert enrollment["spec"]["publicKey"] and blob not in str(enrollment)

    refused = konduktor(greenfield, tmp_path, "worker", "worker", "bootstrap", blob, stdin="n\n")
    assert refused.returncode == 1 and "Apply this plan? [y/N]" in refused.stdout
    assert "create Deployment trainy-system/trainy-worker-agent" in refused.stdout
    assert "leave Deployment victoria-metrics/victoria-metrics-operator" in refused.stdout
    assert greenfield.worker.list("apps", "deployments", "trainy-system") == []

    blob_file = tmp_path / "bootstrap.txt"
    blob_file.write_text(blob + "\n")
    blob_file.chmod(0o644)
    loose = konduktor(greenfield, tmp_path, "worker", "worker", "bootstrap", "--blob-file", str(blob_file))
    assert loose.returncode == 1 and "mode 644 lets others read it; chmod 600 it" in loose.stderr
    blob_file.chmod(0o600)
    applied = konduktor(
        greenfield, tmp_path, "worker", "worker", "bootstrap", "--blob-file", str(blob_file), stdin="y\n"
    )
    assert applied.returncode == 0, applied.stderr
    assert blob not in applied.stdout + applied.stderr
    wait_for(lambda: conditions(greenfield).get("DispatchReady") == "True")
    secret = greenfield.worker.get("", "secrets", "trainy-bootstrap", "trainy-system")
    assert not secret.get("data")
    assert {d["metadata"]["name"] for d in greenfield.worker.list("apps", "deployments", "trainy-byoc-system")} == {
        "trainy-log-collector",
        "trainy-metrics-agent",
    }

    status = konduktor(greenfield, tmp_path, "hub", "cluster", "status", "forecasting-us", "-n", "forecasting")
    assert status.stdout.startswith("WorkerCluster forecasting/forecasting-us generation=")
    again = konduktor(greenfield, tmp_path, "hub", "cluster", "enroll", "forecasting-us", "--ns", "forecasting")
    assert again.returncode == 1 and "redeemed" in again.stderr

    cordon = konduktor(greenfield, tmp_path, "hub", "cluster", "cordon", "forecasting-us", "-n", "forecasting")
    assert cordon.stdout.strip() == "workercluster forecasting/forecasting-us cordoned"
    wait_for(lambda: conditions(greenfield).get("DispatchReady") == "False")
    assert (
        konduktor(
            greenfield, tmp_path, "hub", "cluster", "decommission", "forecasting-us", "-n", "forecasting"
        ).returncode
        == 2
    )
    gone = konduktor(
        greenfield, tmp_path, "hub", "cluster", "decommission", "forecasting-us", "-n", "forecasting", "--yes"
    )
    assert gone.stdout.split("\n")[:2] == [
        "deleted workercluster forecasting/forecasting-us",
        "deleted bootstrapenrollment forecasting/forecasting-us",
    ]

    plan = konduktor(greenfield, tmp_path, "worker", "worker", "reset", "--dry-run")
    assert "delete Deployment trainy-system/trainy-worker-agent" in plan.stdout
    assert "release LocalQueue forecasting/user-queue" in plan.stdout
    assert plan.stdout.strip().endswith("dry run: nothing was changed")
    assert greenfield.worker.list("apps", "deployments", "trainy-system")
    reset = konduktor(greenfield, tmp_path, "worker", "worker", "reset")
    assert reset.returncode == 0, reset.stderr
    assert greenfield.worker.list("", "namespaces", label_selector="trainy.ai/installed-by") == []
    assert greenfield.worker.get("apps", "deployments", "victoria-metrics-operator", "victoria-metrics")
    assert greenfield.worker.get("apps", "deployments", "cert-manager", "cert-manager")
    queue = greenfield.worker.get("kueue.x-k8s.io", "localqueues", "user-queue", "forecasting")
    assert "trainy.ai/managed-by" not in (queue["metadata"].get("labels") or {})
