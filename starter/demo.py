"""The main job, from nothing: lab and Temporal up, onboard the example tenant, print the handover.

This is what the README's first command runs. The plan is shown before it is
approved; afterwards the runbook's own checks (`kubectl`, `ldapsearch`,
`sacctmgr show assoc`) are run against the lab. The demo plays two operators, as
the worker's defaults (four-eyes, verified approvers) require: ``demo-requester``
starts the onboarding and ``demo-approver``, a second principal with a key of its
own, approves the plan with a signed proof (:class:`StandInOperators`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import subprocess
from pathlib import Path

from rich.console import Console
from rich.rule import Rule

from tenantflow.lab.endpoints import LabEndpoints
from tenantflow.lab.supervisor import up
from tenantflow.models.onboarding import OnboardingResult
from tenantflow.starter.approvers import StandInOperators
from tenantflow.starter.contracts import load_tenant
from tenantflow.starter.devserver import DevServer
from tenantflow.starter.render import print_plan, status_view
from tenantflow.worker.config import WorkerSettings
from tenantflow.worker.run import run_worker
from tenantflow.worker.temporal import connect

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "tenant-foo.yaml"
REQUESTER, APPROVER = "demo-requester", "demo-approver"


def runbook_checks(lab: LabEndpoints, slug: str, user: str) -> list[list[str]]:
    kubectl = ["kubectl", "--kubeconfig", str(lab.kubeconfig), "--context", "tenant-cluster"]
    return [
        [*kubectl, "get", "nodes", "-l", f"reserved.tenant={slug}"],
        [*kubectl, "get", "namespace", slug, "--show-labels"],
        [*kubectl, "-n", slug, "get", "resourcequota,limitrange,networkpolicy,rolebinding,pvc"],
        lab.ldapsearch(f"(uid={user})", "uid", "uidNumber", "gidNumber", "memberOf", password="$LDAP_BIND_PASSWORD"),
        [
            "sacctmgr",
            "show",
            "assoc",
            f"account={slug}",
            "format=account,user,fairshare,grptres,grpjobs,maxjobs,grptresmins,qos,defaultqos",
            "-P",
            "-n",
        ],
        ["sinfo", "-p", slug],
    ]


def show_checks(console: Console, lab: LabEndpoints, slug: str, user: str) -> None:
    env = {**os.environ, **lab.to_env()}
    for argv in runbook_checks(lab, slug, user):
        console.print(f"$ {shlex.join(argv)}", style="bold", markup=False, highlight=False)
        real = [lab.ldap_bind_password if a == "$LDAP_BIND_PASSWORD" else a for a in argv]
        done = subprocess.run(real, env=env, capture_output=True, text=True, timeout=60, check=False)
        console.print((done.stdout or done.stderr).rstrip(), markup=False, highlight=False)


async def demo(state_dir: Path, console: Console) -> OnboardingResult:
    console.print(Rule("lab"))
    lab = await asyncio.to_thread(up, state_dir / "lab")
    os.environ.update(lab.to_env())
    server = DevServer(state_dir=state_dir / "temporal")
    server.start()
    console.print(f"lab up in {lab.state_dir}; Temporal {server.address}, UI http://127.0.0.1:{server.ui_port}")
    operators = StandInOperators.make(state_dir / "approvals", REQUESTER, APPROVER)
    os.environ.update(operators.trust.env())
    settings = WorkerSettings(TEMPORAL_ADDRESS=server.address)
    stop = asyncio.Event()
    worker = asyncio.create_task(run_worker(settings, stop))
    try:
        client = await connect(settings)
        api = operators.client(client, settings.task_queue, REQUESTER)
        contract = load_tenant(EXAMPLE)
        handle = await api.start_onboarding(contract)
        console.print(Rule(f"plan of {handle.id}, started by {REQUESTER}"))
        status = await api.wait_for_plan(handle.id)
        assert status.plan is not None and status.plan_hash is not None
        print_plan(console, status.plan)
        console.print(status_view(handle.id, status))
        approver = operators.client(client, settings.task_queue, APPROVER)
        console.print(
            f"approving plan {status.plan_hash} as {APPROVER}, a second principal: four-eyes keeps {REQUESTER} "
            f"from approving the run it started, and the approval carries a proof signed with {APPROVER}'s key "
            f"({approver.signer.fingerprint if approver.signer else '-'})",
            style="bold",
            markup=False,
            highlight=False,
        )
        await approver.approve(handle.id, status.plan_hash)
        result: OnboardingResult = await handle.result()
        console.print(Rule("handover sheet"))
        if result.handover is not None:
            console.print(result.handover.markdown, markup=False, highlight=False)
        console.print(Rule("the runbook's checks"))
        await asyncio.to_thread(show_checks, console, lab, contract.slug, contract.usernames[0])
        console.print(Rule())
        console.print(
            f"The lab and Temporal keep running (UI http://127.0.0.1:{server.ui_port}). Stop them "
            f"with: tenantflow lab down --state-dir {state_dir / 'lab'} && "
            f"tenantflow dev-server --stop --state-dir {state_dir / 'temporal'}"
        )
        return result
    finally:
        stop.set()
        with contextlib.suppress(Exception):
            await worker
