"""No secret leaks: an onboarding (then its offboarding) and a greenfield enrollment are run by a real worker
process with JSON logs, and everything they leave readable is scanned for the lab's secrets.

Scanned: the full history of each run (every payload, decoded with the client's data converter, and the raw
history JSON), every distinct status query result seen while the runs went, the worker's log, and the CLI's
output (``tenantflow status <id> -o json``, ``tenantflow result <id>`` as text and JSON). Secrets: the Authentik
token, the LDAP bind password, the Weka password, the CSI user's password (read back from Secret ``weka-<slug>-creds``
before offboarding), every bearer token of both kubeconfigs, and the one-shot bootstrap blob and its private
key (captured by a spy ``konduktor`` wrapper that copies what ``cluster enroll`` prints to a file outside the
worker's reach). Each is looked for as is and base64-encoded, also in every file left under the worker's
``TMPDIR``, on the worker cluster (its ``trainy-bootstrap`` Secret keeps no data) and in every process's
arguments (``/proc/*/cmdline``) taken as ``worker bootstrap`` starts (the blob goes as a file, never in argv).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import subprocess
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from google.protobuf.message import Message
from temporalio.api.common.v1 import Payload
from temporalio.client import WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from tenantflow.lab.endpoints import LabEndpoints
from tenantflow.lab.konduktor.wrapper import write_wrapper
from tenantflow.models.enrollment_workflows import EnrollmentInput, EnrollmentResult
from tenantflow.models.run_ids import offboarding_id, onboarding_id
from tenantflow.models.tenant import TenantContract
from tenantflow.starter.client import TenantflowClient
from tenantflow.starter.contracts import load_tenant
from tests.approvers import reviewer
from tests.chaos.kit import ROOT, WorkerProcess, settings
from tests.enrollment.conftest import Lab, approve_printed_plan, start_lab
from tests.integration.runs import offboard, onboard
from tests.workflows.contract import EXAMPLES

SLUG, USERS = "tenant-sec", ("sia", "sec-sam")
"""Usernames no other test of the session's lab takes: one left inactive by another tenant is, rightly, refused."""


def sec_tenant(lab: LabEndpoints) -> TenantContract:
    foo = load_tenant(EXAMPLES / "tenant-foo.yaml")
    users = [
        u.model_copy(update={"username": name, "email": f"{name}@{SLUG}.example"})
        for u, name in zip(foo.users, USERS, strict=False)
    ]
    return foo.model_copy(
        update={
            "slug": SLUG,
            "display_name": "Tenant Sec",
            "users": users,
            "capacity": foo.capacity.model_copy(update={"gpus": 16}),
            "slurm": foo.slurm.model_copy(update={"team_account": "ml-team-sec"}),
            "login": foo.login.model_copy(update={"hostname": None}),
        }
    )


def kube_tokens(kubeconfig: Path) -> list[str]:
    users = yaml.safe_load(kubeconfig.read_text())["users"]
    return [u["user"]["token"] for u in users if u["user"].get("token")]


def csi_password(lab: LabEndpoints, contract: TenantContract) -> str:
    done = subprocess.run(
        [
            "kubectl",
            "--kubeconfig",
            str(lab.kubeconfig),
            "--context",
            "tenant-cluster",
            "-n",
            contract.namespace,
            "get",
            "secret",
            f"weka-{contract.slug}-creds",
            "-o",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return base64.b64decode(json.loads(done.stdout)["data"]["password"]).decode()


def forms(secret: str) -> set[str]:
    """The secret and its base64 (padded and not)."""
    encoded = base64.b64encode(secret.encode()).decode()
    return {secret, encoded, encoded.rstrip("=")}


def payloads(message: Message) -> Iterator[Payload]:
    """Every Payload anywhere in a protobuf message (repeated and map fields included)."""
    for field, value in message.ListFields():
        if field.message_type is None:
            continue
        if field.message_type.GetOptions().map_entry:
            if field.message_type.fields_by_name["value"].message_type is None:
                continue
            items = list(value.values())
        else:
            items = [value] if isinstance(value, Message) else list(value)
        for item in items:
            if isinstance(item, Payload):
                yield item
            else:
                yield from payloads(item)


async def history_text(api: TenantflowClient, handle: WorkflowHandle[Any, Any]) -> str:
    """The raw history JSON and every payload in it, decoded by the client's data converter."""
    history = await handle.fetch_history()
    found = [p for event in history.events for p in payloads(event)]
    codec = api.client.data_converter.payload_codec
    decoded = await codec.decode(found) if codec else found
    texts = [
        p.data.decode(errors="replace") + json.dumps({k: v.decode(errors="replace") for k, v in p.metadata.items()})
        for p in decoded
    ]
    return "\n".join([history.to_json(), *texts])


class StatusRecorder:
    """Every distinct status query result of a run, polled while it goes."""

    def __init__(self, api: TenantflowClient) -> None:
        self.api = api
        self.seen: set[str] = set()

    @contextlib.asynccontextmanager
    async def watching(self, workflow_id: str) -> AsyncIterator[None]:
        async def poll() -> None:
            while True:
                with contextlib.suppress(Exception):
                    self.seen.add((await self.api.status(workflow_id)).model_dump_json())
                await asyncio.sleep(0.2)

        task = asyncio.create_task(poll())
        try:
            yield
        finally:
            task.cancel()
            self.seen.add((await self.api.status(workflow_id)).model_dump_json())


def cli(env: dict[str, str], *argv: str) -> str:
    done = subprocess.run(
        [str(ROOT / ".venv/bin/tenantflow"), *argv], env=env, capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    return f"$ tenantflow {' '.join(argv)} -> {done.returncode}\n{done.stdout}\n{done.stderr}"


async def enroll_greenfield(
    api: TenantflowClient, greenfield: Lab, recorder: StatusRecorder
) -> WorkflowHandle[Any, Any]:
    workflow_id = f"enroll/forecasting/secrets-{uuid.uuid4().hex[:6]}"
    arg = EnrollmentInput(contract=greenfield.contract(), condition_budget_s=30)
    handle: WorkflowHandle[Any, Any] = await api.client.start_workflow(
        "WorkerEnrollment",
        arg,
        id=workflow_id,
        task_queue=api.task_queue,
        result_type=EnrollmentResult,
        memo=await api.start_memo(workflow_id, "WorkerEnrollment", api.identity, arg),
    )
    async with recorder.watching(handle.id):
        plan = await api.wait_for_plan(handle.id, timeout_s=120)
        await reviewer(api).approve(handle.id, plan.plan_hash or "")
        await approve_printed_plan(api, handle)
        result: EnrollmentResult = await handle.result()
    assert result.status == "completed", result
    return handle


def spy_konduktor(tmp: Path, capture: Path, cmdlines: Path) -> Path:
    """A ``konduktor`` wrapper that also copies the blob ``cluster enroll`` prints to ``capture`` and, when
    ``worker bootstrap`` starts, every process's arguments (``/proc/*/cmdline``) to ``cmdlines``: the wrapper's
    own arguments are the ones the bootstrap process then runs with, so the copy holds them."""
    real = write_wrapper(tmp / "real-bin")
    spy = tmp / "spy-bin" / "konduktor"
    spy.parent.mkdir()
    spy.write_text(f"""#!/bin/bash
if [[ " $* " == *" cluster enroll "* ]]; then
  "{real}" "$@" | tee -a "{capture}"; exit "${{PIPESTATUS[0]}}"
fi
if [[ " $* " == *" worker bootstrap "* ]]; then
  for f in /proc/[0-9]*/cmdline; do {{ tr '\\0' ' ' < "$f"; }} 2>/dev/null; echo; done >> "{cmdlines}"
fi
exec "{real}" "$@"
""")
    spy.chmod(0o755)
    return spy


def blob_secrets(capture: Path) -> dict[str, str]:
    """Each captured blob and the private key inside it."""
    found = {}
    for i, blob in enumerate(capture.read_text().split()):
        body = json.loads(base64.urlsafe_b64decode(blob.removeprefix("kdk1.")))
        found |= {
            f"bootstrap blob {i}": blob,
            f"bootstrap private key {i}": body["key"],
            f"bootstrap private key {i} (hex)": base64.b64decode(body["key"]).hex(),
        }
    return found


def files_text(root: Path) -> str:
    return "\n".join(p.read_text(errors="replace") for p in root.rglob("*") if p.is_file())


@pytest.fixture
def greenfield(tmp_path: Path) -> Iterator[Lab]:
    (tmp_path / "greenfield").mkdir()
    yield from start_lab(tmp_path / "greenfield", brownfield=False)


async def test_no_secret_in_history_status_logs_or_cli(
    dev_env: WorkflowEnvironment, lab: LabEndpoints, greenfield: Lab, tmp_path: Path
) -> None:
    address = dev_env.client.service_client.config.target_host
    queue = f"secrets-{uuid.uuid4().hex[:8]}"
    capture, cmdlines, worker_tmp = tmp_path / "captured-blobs", tmp_path / "cmdlines", tmp_path / "worker-tmp"
    worker_tmp.mkdir()
    worker = WorkerProcess(
        address,
        queue,
        lab,
        tmp_path / "worker.log",
        TMPDIR=str(worker_tmp),
        KONDUKTOR_BIN=str(spy_konduktor(tmp_path, capture, cmdlines)),
    )
    api = await TenantflowClient.connect(settings(address, queue))
    recorder = StatusRecorder(api)
    contract = sec_tenant(lab)
    worker.start()
    try:
        async with recorder.watching(onboarding_id(SLUG)):
            onboarded = await onboard(api, contract)
        assert onboarded.status == "completed", onboarded.message
        csi = csi_password(lab, contract)
        async with recorder.watching(offboarding_id(SLUG)):
            purged = await offboard(api, contract, purge=True)
        assert purged.status == "completed", purged.message
        enrollment = await enroll_greenfield(api, greenfield, recorder)
        runs = [api.handle(onboarding_id(SLUG)), api.handle(offboarding_id(SLUG)), enrollment]
        env = {**os.environ, "TEMPORAL_ADDRESS": address, "TENANTFLOW_TASK_QUEUE": queue, "PYTHONPATH": str(ROOT)}
        sources = {
            f"cli {h.id}": "\n".join(
                [
                    cli(env, "status", h.id, "-o", "json"),
                    cli(env, "result", h.id),
                    cli(env, "result", h.id, "-o", "json"),
                ]
            )
            for h in runs
        }
    finally:
        worker.stop()
    sources |= {f"history {h.id}": await history_text(api, h) for h in runs}
    sources["status queries"] = "\n".join(sorted(recorder.seen))
    sources["worker log"] = (tmp_path / "worker.log").read_text()
    sources["files left in the worker's TMPDIR"] = files_text(worker_tmp)
    sources["worker cluster"] = json.dumps(greenfield.worker.snapshot(include_volatile=True))
    sources["hub cluster"] = json.dumps(greenfield.hub.snapshot(include_volatile=True))
    sources["process arguments while worker bootstrap ran"] = cmdlines.read_text()

    blobs = blob_secrets(capture)
    assert csi and blobs, "the CSI password and the bootstrap blob must have been seen to be looked for"
    secrets = {
        "Authentik token": lab.authentik_token,
        "LDAP bind password": lab.ldap_bind_password,
        "Weka password": lab.weka_password,
        "CSI password": csi,
        **blobs,
        **{
            f"kube token {i}": token
            for i, token in enumerate(kube_tokens(lab.kubeconfig) + kube_tokens(greenfield.kubeconfig))
        },
    }
    leaks = [
        f"{what} in {where}"
        for what, secret in secrets.items()
        for where, text in sources.items()
        if any(form in text for form in forms(secret))
    ]
    assert not leaks, leaks

    bootstraps = [
        c
        for c in sources["process arguments while worker bootstrap ran"].splitlines()
        if " worker bootstrap " in c and " worker bootstrap --help" not in c
    ]
    assert bootstraps and all("--blob-file" in c for c in bootstraps), "the bootstrap's own arguments were not seen"
    assert "konduktor.bootstrap" in sources[f"history {enrollment.id}"]
    assert '"worker_name":"forecasting-us"' in sources[f"history {enrollment.id}"], "payloads were not decoded"
    assert not list(worker_tmp.glob("konduktor-bootstrap.*")), "bootstrap left its private directory"
    assert all('"stage": "completed"' in sources[f"cli {h.id}"] for h in runs), "the CLI printed no status"
    failed = [h.id for h in runs if sources[f"cli {h.id}"].count(" -> 0\n") != 3]
    assert not failed, [sources[f"cli {w}"] for w in failed]
    assert SLUG in sources["worker log"] and SLUG in sources["status queries"]
