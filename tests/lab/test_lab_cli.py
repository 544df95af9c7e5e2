"""``tenantflow lab up`` / ``lab down`` as an operator runs them, checked with the real clients."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import yaml

from tenantflow.lab.daemons.process import is_running, recorded
from tenantflow.lab.endpoints import LabEndpoints
from tests.runbook_manifests import QUOTA_MANIFEST


def tenantflow(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tenantflow.starter", *args], capture_output=True, text=True, timeout=180, check=False
    )


def run(lab: LabEndpoints, *argv: str, stdin: str | None = None) -> str:
    done = subprocess.run(
        list(argv),
        input=stdin,
        env={**os.environ, **lab.to_env()},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, f"{argv}: {done.stderr}"
    return done.stdout


@pytest.mark.skipif(os.geteuid() != 0, reason="the lab's real slapd and Slurm need root")
def test_lab_up_serves_the_runbooks_commands_and_down_leaves_no_process(tmp_path: Path) -> None:
    state = tmp_path / "lab"
    started = time.monotonic()
    up = tenantflow("lab", "up", "--state-dir", str(state))
    assert up.returncode == 0, up.stderr
    assert time.monotonic() - started < 120
    daemons = recorded(state)
    try:
        lab = LabEndpoints.load(state)
        config = yaml.safe_load(lab.kubeconfig.read_text())
        assert {c["name"] for c in config["contexts"]} == {"hub", "worker", "tenant-cluster"}
        kubectl = ["kubectl", "--kubeconfig", str(lab.kubeconfig), "--context", "worker"]
        nodes = yaml.safe_load(
            run(lab, *kubectl, "get", "nodes", "-l", "node.kubernetes.io/instance-type=h100-8x", "-o", "json")
        )
        assert nodes["kind"] == "List" or nodes["kind"] == "NodeList"
        tenant = ["kubectl", "--kubeconfig", str(lab.kubeconfig), "--context", "tenant-cluster"]
        gpu_nodes = yaml.safe_load(
            run(lab, *tenant, "get", "nodes", "-l", "node.kubernetes.io/instance-type=h100-8x", "-o", "json")
        )["items"]
        assert len(gpu_nodes) == 16
        applied = run(lab, *tenant, "apply", "-f", "-", stdin=QUOTA_MANIFEST.format(ns="default"))
        assert "resourcequota/tenant-foo-quota created" in applied and "limitrange/tenant-foo-defaults" in applied
        cluster = run(
            lab,
            *tenant,
            "-n",
            "slurm-control",
            "exec",
            "deploy/slurmctld",
            "--",
            "sacctmgr",
            "show",
            "cluster",
            "-P",
            "-n",
            "format=cluster",
        )
        assert cluster.split() == ["production"]
        assert run(lab, "sacctmgr", "show", "cluster", "-P", "-n", "format=cluster").split() == ["production"]
        bind = run(lab, *lab.ldapsearch("(uid=ldap-bind)", "uid", "uidNumber"))
        assert "uid: ldap-bind" in bind and "uidNumber: 2001" in bind
        hook = lab.to_env()["TENANTFLOW_NOTIFY_WEBHOOK_URL"]
        assert httpx.post(hook, json={"event": "term.reminder"}).status_code == 200
        assert httpx.post(hook, content="not json").status_code == 415
        kept = httpx.get(f"{lab.notify_url}/_lab/snapshot").json()
        assert [(k["path"], k["body"]) for k in kept] == [("/hooks/tenantflow", {"event": "term.reminder"})]
    finally:
        down = tenantflow("lab", "down", "--state-dir", str(state))
    assert down.returncode == 0, down.stderr
    assert daemons and not [d.name for d in daemons if is_running(d)]
    assert not (state / "lab.env").exists()
