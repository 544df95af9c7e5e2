"""API calls per layer during one run: the lab's request journals attributed to the activity that made them.

Every HTTP stand-in journals each request with its time. The onboarding runs one
activity at a time, so a request belongs to the activity whose span (start to
close, from the history) contains it, and to that activity's layer
(``identity.users`` -> identity); a stand-in journals a request when its
response ends, which for an exec stream can be just after the activity closed,
so a request belongs to the last activity started before it. Read-only steps that ran as local activities share
their workflow task's span (:mod:`bench.history`): their requests count for ``reads`` (every layer's preflight and
plan), not for one layer. Slurm commands run through an exec into the
slurmctld pod (``kubectl exec``): those requests count as system ``slurm``, not
as Kubernetes API calls. LDAP binds (slapd) are not journalled and not counted.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import httpx

from tenantflow.bench.history import ActivitySpan
from tenantflow.lab.endpoints import LabEndpoints

OUTSIDE = "(before the first activity)"
LOCAL_READS = "reads"


def journals(lab: LabEndpoints) -> dict[str, list[dict[str, Any]]]:
    """Every request each HTTP stand-in of the lab has journalled, by stand-in name."""
    urls = {f"kube-{context}": url for context, url in lab.kube_urls.items()}
    urls |= {"authentik": lab.authentik_url, "weka": lab.weka_url}
    entries = {}
    for name, url in urls.items():
        with httpx.Client(base_url=url, verify=False, timeout=30) as http:
            entries[name] = http.get("/_lab/requests").json()["requests"]
    return entries


def system_of(service: str, path: str, slurm_namespace: str) -> str:
    """``slurm`` for a command exec'd in the Slurm control namespace, else the stand-in's name."""
    if re.fullmatch(rf"/api/v1/namespaces/{re.escape(slurm_namespace)}/pods/[^/]+/exec", path):
        return "slurm"
    return service


def calls_per_layer(
    entries: dict[str, list[dict[str, Any]]],
    spans: list[ActivitySpan],
    since: float,
    until: float,
    slurm_namespace: str,
) -> dict[str, dict[str, int]]:
    """``{layer: {system: calls}}`` for the requests journalled between ``since`` and ``until``."""
    counts: dict[str, Counter[str]] = {}
    for service, requests in entries.items():
        for request in requests:
            at = float(request["at"])
            if not since <= at <= until:
                continue
            owners = [s for s in spans if s.started <= at]
            layer = (LOCAL_READS if owners[-1].local else owners[-1].name.partition(".")[0]) if owners else OUTSIDE
            counts.setdefault(layer, Counter())[system_of(service, request["path"], slurm_namespace)] += 1
    return {layer: dict(sorted(systems.items())) for layer, systems in counts.items()}
