"""Enrollment through the ``konduktor`` CLI: the one-shot blob is created and consumed inside one activity.

``konduktor.bootstrap`` follows the runbook's "Create the one-shot bootstrap blob" and "Bootstrap the worker" steps
on this worker host: a private ``0700`` directory (``mkdtemp``), the blob written by ``konduktor cluster enroll``
straight into a ``0600`` file in it, then ``konduktor worker bootstrap`` in the form the CLI documents: it reads
``konduktor worker bootstrap --help`` once, and when that names a file option for the blob (an option ending in
``file`` on a line about the blob) passes the file's path with it, so the key stays out of the process list;
otherwise the runbook's positional blob (``"$(cat "$BOOTSTRAP_BLOB")"``, which shows the key in the process list
while bootstrap runs, as the runbook warns). The form used goes to the run with the plan.

The CLI runs on a pseudo-terminal (:mod:`activities.common.cli_prompt`); what it prints up to its prompt is opaque
text. With ``plan_gate`` (runs with the ``konduktor-bootstrap-plan-gate`` patch) the activity signals it verbatim
(the blob redacted), with its SHA-256 and the blob's form, to its own run (``bootstrap_plan_printed``, through the
worker's client: ``activity.client()``, Temporal's "Interacting with Workflows" guide), which shows it at its
``approve_plan`` gate, then heartbeats while it polls the run (query ``bootstrap_plan_answer``) with a growing
interval; only when the run answers that this exact text is approved does it write ``y`` to the prompt; a rejection
writes ``n`` and fails ``BootstrapPlanRejected``. Output that arrives after the text was read (a prompt-like line in
the middle of the plan) is never answered: the whole text so far is decided on again. A retried attempt whose fresh
text hashes to an approved one proceeds at once; other text reopens the gate. Runs recorded before the patch approve
as they did: ``y`` only when the plan's ``create``/``exists`` lines list exactly :data:`BOOTSTRAP_COMPONENTS`.

In a ``finally`` the runbook's cleanup (``shred -u``, else ``rm``), whose result is verified: a file still there
fails the step naming its path. The blob never leaves the activity: not in its result, a signal, a heartbeat, a log
line or an error message (redacted wherever the CLI's output or an argument would show it). A worker killed mid-step
(no ``finally``) leaves its directory; the next attempt for the same worker removes it first (the workflow id is the
per-worker lock, so no other run uses it).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from temporalio import activity

from tenantflow.activities.common import konduktor_cli
from tenantflow.activities.common.cli_prompt import PromptFailed, PromptSession
from tenantflow.activities.common.errors import fail
from tenantflow.activities.common.registered import defn
from tenantflow.activities.hub import enrollment_ownership
from tenantflow.models import enrollment_steps
from tenantflow.models.enrollment_workflows import (
    BOOTSTRAP_COMPONENTS,
    BootstrapAnswer,
    BootstrapPlanPrinted,
    EnrollmentStep,
)
from tenantflow.models.results import EnsureResult, Outcome

T = TypeVar("T")
BEAT_S = 10.0
"""How often the activity heartbeats while a CLI call runs in its thread (far below the 30 s heartbeat timeout)."""
POLL_S = (0.2, 2.0)
"""The first and the longest interval between two polls of the run for the plan's answer (doubling)."""


def component_ref(kind: str, namespace: str | None, name: str) -> str:
    return f"{kind} {namespace + '/' if namespace else ''}{name}"


def planned_components(plan: list[str]) -> set[str]:
    """``Kind ns/name`` of the plan lines that bootstrap creates or finds (``create``/``exists``)."""
    found = set()
    for line in plan:
        words = line.split("#", 1)[0].split()
        if len(words) == 3 and words[0] in ("create", "exists"):
            found.add(f"{words[1]} {words[2]}")
    return found


EXPECTED = {component_ref(*c) for c in BOOTSTRAP_COMPONENTS}


def remove_blob(path: Path) -> None:
    """The runbook's cleanup: ``shred -u`` where available (else unlink), verified; then the private directory."""
    if path.exists():
        shred = shutil.which("shred")
        if (
            shred is None
            or subprocess.run([shred, "-u", "--", str(path)], capture_output=True, check=False).returncode != 0
        ):
            path.unlink(missing_ok=True)
    if path.exists():
        raise fail(
            "BlobNotRemoved",
            f"bootstrap secret still exists at {path}; remove it with your organization's secret-deletion procedure",
        )
    with contextlib.suppress(OSError):
        path.parent.rmdir()


def _created(lines: list[str]) -> list[EnsureResult]:
    results = []
    for line in lines:
        words = line.split()
        if len(words) == 3 and words[0] == "created":
            namespace, _, name = words[2].rpartition("/")
            results.append(
                EnsureResult(
                    layer="worker", kind=words[1], name=name, namespace=namespace or None, outcome=Outcome.created
                )
            )
    return results


async def in_thread(fn: Callable[[], T], doing: str) -> T:
    """``fn()`` in a worker thread (without the activity's context: it never heartbeats itself), heartbeating
    ``doing`` every :data:`BEAT_S` meanwhile."""
    job = asyncio.get_running_loop().run_in_executor(None, fn)
    while True:
        done, _ = await asyncio.wait([job], timeout=BEAT_S)
        if done:
            return job.result()
        activity.heartbeat(doing)


def _enroll_into(step: EnrollmentStep, path: Path, fd: int, marks: dict[str, str]) -> str:
    """``konduktor cluster enroll`` straight into the ``0600`` file ``path`` (open as ``fd``); the blob. Refused
    (:func:`enrollment_ownership.refuse_unless_ours`) while a Hub enrollment of that name that this workflow did not
    make is there; the BootstrapEnrollment it makes is marked as this run's (:func:`enrollment_ownership.mark`)."""
    c = step.contract
    os.fchmod(fd, 0o600)
    enrollment_ownership.refuse_unless_ours(c, marks)
    with os.fdopen(fd, "w") as out:
        konduktor_cli.run(c.hub, "cluster", "enroll", c.worker_name, "--ns", c.tenant_namespace, stdout=out)
    enrollment_ownership.mark(c, marks)
    blob = path.read_text().strip()
    if not blob:
        raise fail("KonduktorFailed", "konduktor cluster enroll printed no blob")
    return blob


async def _answer_of_run(printed: BootstrapPlanPrinted) -> BootstrapAnswer:
    """Signal ``printed`` to this activity's run, then poll it until it answers for that exact text."""
    info = activity.info()
    assert info.workflow_id is not None, "konduktor.bootstrap runs in a workflow"
    run = activity.client().get_workflow_handle(info.workflow_id, run_id=info.workflow_run_id)
    await run.signal("bootstrap_plan_printed", printed)
    every = POLL_S[0]
    while True:
        answer: BootstrapAnswer = await run.query("bootstrap_plan_answer", printed.sha256, result_type=str)
        if answer != "waiting":
            return answer
        activity.heartbeat(f"bootstrap plan {printed.sha256[:16]} waits at approve_plan")
        await asyncio.sleep(every)
        every = min(every * 2, POLL_S[1])


@defn(enrollment_steps.KONDUKTOR_BOOTSTRAP)
async def bootstrap(step: EnrollmentStep) -> list[EnsureResult]:
    """``cluster enroll`` into a private file, ``worker bootstrap`` with it in the documented form, its plan
    answered ``y`` only once approved; the file removed whatever happens."""
    c = step.contract
    prefix = f"konduktor-bootstrap.{c.tenant_namespace}.{c.worker_name}."
    for stale in Path(tempfile.gettempdir()).glob(f"{prefix}*/bootstrap.*"):
        remove_blob(stale)
    directory = Path(tempfile.mkdtemp(prefix=prefix))
    directory.chmod(0o700)
    fd, name = tempfile.mkstemp(prefix="bootstrap.", suffix=".txt", dir=directory)
    path = Path(name)
    try:
        marks = enrollment_ownership.run_marks()
        blob = await in_thread(lambda: _enroll_into(step, path, fd, marks), "konduktor cluster enroll")
        option = await in_thread(lambda: konduktor_cli.blob_file_option(c.worker), "konduktor worker bootstrap --help")
        form = (
            f"{option} PATH (documented by `worker bootstrap --help`)"
            if option
            else "the positional blob (the runbook's form)"
        )
        args = ["worker", "bootstrap", *([option, str(path)] if option else [blob])]
        command = konduktor_cli.argv(c.worker, *args)
        activity.logger.info("konduktor worker bootstrap: blob passed as %s", form)
        return await _bootstrap(step, command, form, blob)
    finally:
        remove_blob(path)


async def _bootstrap(step: EnrollmentStep, command: list[str], form: str, blob: str) -> list[EnsureResult]:
    shown = konduktor_cli.redact(" ".join(command[5:7]), [blob])
    session = PromptSession(command, secrets=[blob])
    try:
        try:
            text = await in_thread(lambda: session.read_to_prompt(konduktor_cli.CLI_TIMEOUT_S), f"konduktor {shown}")
        except PromptFailed as exc:
            raise fail("KonduktorFailed", f"konduktor {shown} {exc}: {session.stderr().strip()}") from None
        while True:
            if step.plan_gate:
                sha256 = hashlib.sha256(text.encode()).hexdigest()
                approved = await _answer_of_run(BootstrapPlanPrinted(text=text, sha256=sha256, form=form)) == "approved"
            else:
                approved = planned_components(text.splitlines()) == EXPECTED
            if not approved or not await in_thread(session.printed_more, f"konduktor {shown}"):
                break
            text = session.text
        code, rest = await in_thread(
            lambda: session.answer("y" if approved else "n", konduktor_cli.CLI_TIMEOUT_S), f"konduktor {shown}"
        )
        err = session.stderr().strip()
    except PromptFailed as exc:
        raise fail("KonduktorFailed", f"konduktor {shown} {exc}") from None
    finally:
        session.close()
    if not approved and step.plan_gate:
        raise fail("BootstrapPlanRejected", "the bootstrap plan konduktor printed was rejected; answered no")
    if not approved:
        got = planned_components(text.splitlines())
        raise fail(
            "BootstrapPlanDiffers",
            "konduktor worker bootstrap planned something else than the "
            f"approved plan; answered no. Missing: {', '.join(sorted(EXPECTED - got)) or 'none'}; "
            f"extra: {', '.join(sorted(got - EXPECTED)) or 'none'}",
        )
    if code != 0:
        raise fail("KonduktorFailed", f"konduktor {shown} exited {code} after the approved plan: {err}")
    return _created(rest.splitlines())


ACTIVITIES = [bootstrap]
