"""Enrollment through the ``konduktor`` CLI: the one-shot blob is created and consumed inside one activity.

``konduktor.bootstrap`` follows the runbook's "Create the one-shot bootstrap blob" and "Bootstrap the worker"
steps on this worker host: a private ``0700`` directory (``mkdtemp``), the blob written by
``konduktor cluster enroll`` straight into a ``0600`` file in it, then ``konduktor worker bootstrap
--blob-file PATH``: the file's path, never the blob, because secrets stay out of the process arguments of
our processes (the runbook's ``"$(cat "$BOOTSTRAP_BLOB")"`` form puts the key in the process list, as its own
warning says; the runbook is silent on a file form, so ``--blob-file`` is the one documented by the lab's
stand-in). The plan it prints is answered ``y`` only when it lists exactly the components the approved plan
listed (:data:`BOOTSTRAP_COMPONENTS`); in a ``finally`` the runbook's cleanup (``shred -u``, else ``rm``), whose
result is verified: a file still there fails the step naming its path. The blob never leaves the activity: not
in its result, a heartbeat, a log line or an error message (:mod:`activities.common.konduktor_cli` redacts it). A
worker killed mid-step (no ``finally``) leaves its directory; the next attempt for the same worker removes it
first (the workflow id is the per-worker lock, so no other run uses it).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from temporalio import activity

from tenantflow.activities.common import konduktor_cli
from tenantflow.activities.common.errors import fail
from tenantflow.activities.common.registered import defn
from tenantflow.models import enrollment_steps
from tenantflow.models.enrollment_workflows import BOOTSTRAP_COMPONENTS, EnrollmentStep
from tenantflow.models.results import EnsureResult, Outcome


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


@defn(enrollment_steps.KONDUKTOR_BOOTSTRAP)
def bootstrap(step: EnrollmentStep) -> list[EnsureResult]:
    """``cluster enroll`` into a private file, ``worker bootstrap`` with it, the file removed whatever happens."""
    c = step.contract
    prefix = f"konduktor-bootstrap.{c.tenant_namespace}.{c.worker_name}."
    for stale in Path(tempfile.gettempdir()).glob(f"{prefix}*/bootstrap.*"):
        remove_blob(stale)
    directory = Path(tempfile.mkdtemp(prefix=prefix))
    directory.chmod(0o700)
    fd, name = tempfile.mkstemp(prefix="bootstrap.", suffix=".txt", dir=directory)
    path = Path(name)
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w") as out:
            konduktor_cli.run(c.hub, "cluster", "enroll", c.worker_name, "--ns", c.tenant_namespace, stdout=out)
        blob = path.read_text().strip()
        if not blob:
            raise fail("KonduktorFailed", "konduktor cluster enroll printed no blob")
        activity.heartbeat("bootstrap")
        plan_ok: list[bool] = []

        def approve(plan: list[str]) -> bool:
            plan_ok.append(planned_components(plan) == EXPECTED)
            return plan_ok[-1]

        lines = konduktor_cli.answer_plan(
            c.worker, "worker", "bootstrap", "--blob-file", str(path), approve=approve, secrets=(blob,)
        )
        if not plan_ok or not plan_ok[-1]:
            got = planned_components(lines)
            raise fail(
                "BootstrapPlanDiffers",
                "konduktor worker bootstrap planned something else than the "
                f"approved plan; answered no. Missing: {', '.join(sorted(EXPECTED - got)) or 'none'}; "
                f"extra: {', '.join(sorted(got - EXPECTED)) or 'none'}",
            )
        return _created(lines)
    finally:
        remove_blob(path)


ACTIVITIES = [bootstrap]
