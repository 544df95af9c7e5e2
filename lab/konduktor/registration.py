"""The stand-in's ``worker bootstrap`` waiting for registration, as the runbook's bootstrap does.

The runbook starts ``konduktor worker bootstrap`` and cordons "as soon as the WorkerCluster appears" from
another terminal ("Bootstrap, then immediately cordon Hub dispatch"): the command is still running when
registration creates the WorkerCluster. With ``KONDUKTOR_LAB_REGISTRATION_WAIT_S`` set to a number of seconds
(:data:`WAIT_ENV`), the stand-in does the same: after installing, it watches the ``trainy-bootstrap`` Secret
until the worker agent has marked it redeemed or refused (the agent redeems the token on the Hub, which creates
the WorkerCluster), and prints the outcome; after that many seconds it stops waiting and says so. Unset or
``0``: it returns right after installing (the lab's default, which the runbook does not contradict either).

Each wait is a list request with a ``fieldSelector`` (``metadata.name=trainy-bootstrap``), so the API server's
request journal shows the command still running, and a lab fault rule (``query: fieldSelector``) can make the
command take longer, as a real bootstrap on a slow link does.
"""

from __future__ import annotations

import os
import time

from tenantflow.lab.konduktor.facts import AGENT_NAMESPACE, BOOTSTRAP_SECRET, REDEEMED, REFUSED
from tenantflow.lab.konduktor.rest import Rest, path

WAIT_ENV = "KONDUKTOR_LAB_REGISTRATION_WAIT_S"
POLL_S = 0.2


def outcome(worker: Rest) -> str:
    """``registered as WorkerCluster NS/NAME``, ``registration refused: ...`` or empty while neither is known."""
    status, answer = worker.call(
        "GET",
        path("v1", "secrets", namespace=AGENT_NAMESPACE),
        query=[("fieldSelector", f"metadata.name={BOOTSTRAP_SECRET}")],
    )
    items = (answer.get("items") or []) if status == 200 else []
    annotations = (items[0]["metadata"].get("annotations") or {}) if items else {}
    if REDEEMED in annotations:
        return f"registered as WorkerCluster {annotations[REDEEMED]}"
    if REFUSED in annotations:
        return f"registration refused: {annotations[REFUSED]}"
    return ""


def await_registration(worker: Rest) -> list[str]:
    """The line saying how registration ended, after waiting at most :data:`WAIT_ENV` seconds (none when unset)."""
    budget = float(os.environ.get(WAIT_ENV) or 0)
    if budget <= 0:
        return []
    deadline = time.monotonic() + budget
    while not (said := outcome(worker)):
        if time.monotonic() >= deadline:
            return [f"registration not seen within {budget:.0f} s; check konduktor cluster status on the Hub"]
        time.sleep(POLL_S)
    return [said]
